//! What the schema cannot say about a test file: one model source per case, unique names,
//! patterns and schemas that compile, files that stay in the workspace, a model for every
//! judge. Each problem points at the key it is about.

use std::collections::HashSet;
use std::path::{Component, Path};

use serde_json::Value;

use super::spec::{Assertion, Case, NameOr, TestFile};
use crate::spec::yaml::{YamlDocument, pointer_push};
use crate::spec::{Code, Diagnostic};

/// Every problem of a test file that passed its schema.
pub fn check_test_file(
    spec: &TestFile,
    doc: &YamlDocument,
    path: &Path,
    dir: &Path,
) -> Vec<Diagnostic> {
    let mut checks = Checks {
        doc,
        path,
        found: Vec::new(),
    };
    if !dir.join(&spec.agent).is_file() {
        let message = format!("no such agent file: {} (relative to this file)", spec.agent);
        checks.error("/agent", Code::MissingFile, message);
    }
    let mut names = HashSet::new();
    for (index, case) in spec.cases.iter().enumerate() {
        let at = format!("/cases/{index}");
        if !names.insert(case.name.as_str()) {
            let message = format!("a second case named `{}`", case.name);
            checks.error(&pointer_push(&at, "name"), Code::InvalidValue, message);
        }
        checks.model_source(case, &at);
        checks.files(case, &at);
        for (number, assertion) in case.expect.iter().enumerate() {
            let at = format!("{at}/expect/{number}/{}", assertion.kind());
            checks.assertion(assertion, &at, spec.judge_model.is_some());
        }
    }
    checks.found
}

struct Checks<'a> {
    doc: &'a YamlDocument,
    path: &'a Path,
    found: Vec<Diagnostic>,
}

impl Checks<'_> {
    fn error(&mut self, pointer: &str, code: Code, message: String) {
        let at = self.doc.value_position(pointer);
        self.found
            .push(Diagnostic::error(self.path, at, code, pointer, message));
    }

    /// Exactly one of `cassette`, `script`, `live: true` (a skipped case may have none).
    fn model_source(&mut self, case: &Case, at: &str) {
        let given: Vec<&str> = [
            ("cassette", case.cassette.is_some()),
            ("script", case.script.is_some()),
            ("live", case.live),
        ]
        .into_iter()
        .filter_map(|(key, present)| present.then_some(key))
        .collect();
        match given.as_slice() {
            ["script"] if case.model.is_some() => self.error(
                &pointer_push(at, "model"),
                Code::InvalidValue,
                "`model` and `script` cannot go together: the script is the model".into(),
            ),
            [_] => {}
            [] if case.skip.is_some() => {}
            [] => self.error(
                at,
                Code::MissingKey,
                "a case needs a model: `cassette: FILE`, `script: [...]` or `live: true`".into(),
            ),
            [first, second, ..] => self.error(
                &pointer_push(at, second),
                Code::InvalidValue,
                format!("`{first}` and `{second}` cannot go together: a case has one model"),
            ),
        }
    }

    /// Workspace files are relative paths that stay inside the workspace.
    fn files(&mut self, case: &Case, at: &str) {
        for name in case.files.keys() {
            if !stays_inside(name) {
                let pointer = pointer_push(&pointer_push(at, "files"), name);
                self.error(
                    &pointer,
                    Code::InvalidValue,
                    format!("`{name}` is not a relative path inside the workspace"),
                );
            }
        }
    }

    fn assertion(&mut self, assertion: &Assertion, at: &str, judge_model: bool) {
        match assertion {
            Assertion::OutputMatches(pattern) => self.pattern(at, pattern),
            Assertion::Structured(check) => {
                let given = [
                    check.equals.is_some(),
                    check.contains.is_some(),
                    check.matches.is_some(),
                ];
                self.one_of(at, &given, "`equals`, `contains` or `matches`");
                if !check.pointer.is_empty() && !check.pointer.starts_with('/') {
                    let message = format!(
                        "`{}` is not a JSON pointer: it starts with `/`",
                        check.pointer
                    );
                    self.error(&pointer_push(at, "pointer"), Code::InvalidValue, message);
                }
                if let Some(pattern) = &check.matches {
                    self.pattern(&pointer_push(at, "matches"), pattern);
                }
            }
            Assertion::StructuredSchema(schema) => {
                let schema = Value::Object(schema.clone());
                if let Err(error) = jsonschema::validator_for(&schema) {
                    self.error(
                        at,
                        Code::OutputSchema,
                        format!("not a valid JSON Schema: {error}"),
                    );
                }
            }
            Assertion::ToolCalled(NameOr::Full(check)) => {
                for (name, pattern) in &check.args {
                    self.pattern(&pointer_push(&pointer_push(at, "args"), name), pattern);
                }
            }
            Assertion::ToolCalls(sequence) => {
                let given = [
                    sequence.in_order.is_some(),
                    sequence.exactly.is_some(),
                    sequence.set.is_some(),
                ];
                self.one_of(at, &given, "`in_order`, `exactly` or `set`");
            }
            Assertion::FileContains(check) => {
                self.one_of(
                    at,
                    &[check.text.is_some(), check.matches.is_some()],
                    "`text` or `matches`",
                );
                if let Some(pattern) = &check.matches {
                    self.pattern(&pointer_push(at, "matches"), pattern);
                }
            }
            Assertion::Judge(judge) if judge.model.is_none() && !judge_model => self.error(
                at,
                Code::MissingKey,
                "a judge needs a model: give it `model:`, or the file a `judge_model:`".into(),
            ),
            _ => {}
        }
    }

    fn one_of(&mut self, at: &str, given: &[bool], keys: &str) {
        if given.iter().filter(|present| **present).count() != 1 {
            self.error(at, Code::MissingKey, format!("give exactly one of {keys}"));
        }
    }

    fn pattern(&mut self, at: &str, pattern: &str) {
        if let Err(error) = regex::Regex::new(pattern) {
            let message = format!("not a valid regular expression: {error}");
            self.error(at, Code::InvalidValue, message);
        }
    }
}

/// A relative path with no `..`, so a file laid out for a case stays in its workspace.
pub fn stays_inside(path: &str) -> bool {
    let path = Path::new(path);
    !path.as_os_str().is_empty()
        && path
            .components()
            .all(|part| matches!(part, Component::Normal(_) | Component::CurDir))
}
