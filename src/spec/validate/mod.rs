//! `runner validate`: every check of an agent file, reporting all problems at once.
//!
//! Order: YAML, then the JSON Schema, then the checks a schema cannot express (templates,
//! user schemas, references, cycles, duplicate names). The later checks read the raw JSON
//! value, so a schema error in one key never hides a template error in another.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::diagnostic::{Code, Diagnostic};
use super::execution::STRATEGY_OPTIONS;
use super::limits::STOP_WHEN_VARIABLES;
pub use super::paths::{canonical, expand_paths, normalize, resolved};
use super::project::Project;
use super::schema_check::schema_diagnostics;
use super::template::{
    TemplateIssue, TemplateScope, check_expression, check_template, used_variables,
};
use super::user_schema::check_user_schema;
use super::yaml::{YamlDocument, YamlError, load_yaml, pointer_push};

mod bounds_check;
mod mcp_import_check;
mod model_check;
mod permissions_check;
mod tools_check;

/// Validates agent files, following their references once each.
#[derive(Default)]
pub struct Validator {
    /// Canonical path → whether the file declares `limits.max_depth` (for cycle checks).
    done: HashMap<PathBuf, bool>,
    /// Canonical paths of the files being checked, outermost first, with their max_depth flag.
    stack: Vec<(PathBuf, bool)>,
    diagnostics: Vec<Diagnostic>,
    /// Warn about root agents nothing bounds (`runner validate`, not the loader).
    advise_bounds: bool,
    /// Each project file met, read once (`None` when it is invalid: its problems are
    /// reported once, at its own lines).
    projects: HashMap<PathBuf, Option<Arc<Project>>>,
}

pub use super::read::read_bounded;

/// The text of the file at `path`, or the diagnostic that says why it cannot be read: it
/// cannot be opened or read, it is larger than the bound, or it is not UTF-8 (at the
/// first byte that is not).
pub(crate) fn read_source(path: &Path) -> Result<String, Diagnostic> {
    let bytes = read_bounded(path).map_err(|error| {
        Diagnostic::error(
            path,
            Default::default(),
            Code::Io,
            "",
            format!("cannot read the file: {error}"),
        )
    })?;
    if bytes.len() > super::yaml::MAX_INPUT_BYTES {
        let text = String::from_utf8_lossy(&bytes);
        let error = super::yaml::too_large(&text);
        return Err(Diagnostic::error(
            path,
            error.position,
            Code::Yaml,
            "",
            error.message,
        ));
    }
    String::from_utf8(bytes).map_err(|error| {
        let offset = error.utf8_error().valid_up_to();
        let text = String::from_utf8_lossy(&error.into_bytes()[..offset]).to_string();
        let (line, column) = super::template::line_column(&text, offset);
        Diagnostic::error(
            path,
            super::yaml::Position { line, column },
            Code::Io,
            "",
            "the file is not valid UTF-8".into(),
        )
    })
}

impl Validator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Validates one file (and the files it refers to).
    pub fn validate_file(&mut self, path: &Path) {
        let key = canonical(path);
        if self.done.contains_key(&key) {
            return;
        }
        match read_source(path) {
            Ok(source) => self.validate_source(path, &source),
            Err(diagnostic) => {
                self.diagnostics.push(diagnostic);
                self.done.insert(key, false);
            }
        }
    }

    /// Validates `source` as if it were the file at `path`.
    pub fn validate_source(&mut self, path: &Path, source: &str) {
        match load_yaml(source) {
            Ok(doc) => self.validate_document(path, &doc),
            Err(errors) => self.not_yaml(path, errors),
        }
    }

    /// Reports the file at `path` as YAML that does not parse.
    pub(crate) fn not_yaml(&mut self, path: &Path, errors: Vec<YamlError>) {
        for error in errors {
            self.diagnostics.push(Diagnostic::error(
                path,
                error.position,
                Code::Yaml,
                &error.pointer,
                error.message,
            ));
        }
        self.done.insert(canonical(path), false);
    }

    /// Validates `doc`, parsed from the file at `path`.
    pub(crate) fn validate_document(&mut self, path: &Path, doc: &YamlDocument) {
        let key = canonical(path);
        if !doc.value.is_object() {
            self.diagnostics.push(not_an_agent_file(path, &doc.value));
            self.done.insert(key, false);
            return;
        }
        let bounded = has_max_depth(&doc.value);
        self.done.insert(key.clone(), bounded);
        self.stack.push((key, bounded));
        let first_problem = self.diagnostics.len();
        self.diagnostics.extend(schema_diagnostics(doc, path));
        let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let file = FileContext {
            path,
            doc,
            base_dir: &base_dir,
        };
        self.check_agent(&file, &doc.value, "");
        self.check_model_names(&file);
        // Advice for a file that runs: one with errors has those to fix first.
        let runs = !self.diagnostics[first_problem..]
            .iter()
            .any(Diagnostic::is_error);
        if self.advise_bounds
            && runs
            && self.stack.len() == 1
            && let Some(agent) = doc.value.as_object()
        {
            self.check_bounded(&file, agent);
        }
        self.stack.pop();
    }

    /// All diagnostics so far, grouped by file (in the order files were met), then by position.
    pub fn finish(self) -> Vec<Diagnostic> {
        let mut order: Vec<PathBuf> = Vec::new();
        for diagnostic in &self.diagnostics {
            if !order.contains(&diagnostic.file) {
                order.push(diagnostic.file.clone());
            }
        }
        let mut diagnostics = self.diagnostics;
        diagnostics.sort_by_key(|d| {
            let file_rank = order
                .iter()
                .position(|f| f == &d.file)
                .unwrap_or(usize::MAX);
            (file_rank, d.line, d.column)
        });
        diagnostics.dedup();
        super::diagnostic::redacted(diagnostics)
    }

    fn check_agent(&mut self, file: &FileContext<'_>, agent: &Value, at: &str) {
        let Some(agent) = agent.as_object() else {
            return;
        };
        let inputs = agent.get("inputs").and_then(Value::as_object);
        let env: BTreeSet<String> = agent
            .get("env")
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        let input_scope = TemplateScope {
            variables: inputs
                .map(|i| i.keys().cloned().collect())
                .unwrap_or_default(),
            env: env.clone(),
            declare_hint: "declare it under `inputs:`",
        };

        let execution = agent.get("execution").and_then(Value::as_object);
        let mut prompt_fields = vec![
            (pointer_push(at, "system"), agent.get("system")),
            (pointer_push(at, "prompt"), agent.get("prompt")),
        ];
        let execution_at = pointer_push(at, "execution");
        prompt_fields.push((
            pointer_push(&execution_at, "reasoning_prompt"),
            execution.and_then(|e| e.get("reasoning_prompt")),
        ));
        let mut used = BTreeSet::new();
        for (pointer, value) in &prompt_fields {
            if let Some(Value::String(source)) = value {
                self.template(file, pointer, source, &input_scope);
                used.extend(used_variables(source, file.base_dir));
            }
        }
        self.check_inputs(file, at, inputs, &used);

        if let Some(Value::String(expression)) = agent.get("stop_when") {
            let pointer = pointer_push(at, "stop_when");
            for issue in check_expression(expression, STOP_WHEN_VARIABLES) {
                self.template_issue(file, &pointer, issue);
            }
        }
        if let Some(schema) = agent.get("output").and_then(|o| o.get("schema")) {
            let pointer = pointer_push(&pointer_push(at, "output"), "schema");
            self.user_schema(file, &pointer, schema, false, Code::OutputSchema);
        }
        if let Some(execution) = execution {
            self.check_execution(file, &execution_at, execution);
        }
        self.check_model(file, at, agent);
        self.check_tools(file, at, agent, &env);
        self.check_permissions(file, at, agent);
    }

    fn check_inputs(
        &mut self,
        file: &FileContext<'_>,
        at: &str,
        inputs: Option<&Map<String, Value>>,
        used: &BTreeSet<String>,
    ) {
        let Some(inputs) = inputs else { return };
        let inputs_at = pointer_push(at, "inputs");
        for (name, spec) in inputs {
            let pointer = pointer_push(&inputs_at, name);
            let kind = spec.get("type").and_then(Value::as_str).unwrap_or("string");
            if let Some(default) = spec.get("default")
                && !fits_type(default, kind)
            {
                let default_at = pointer_push(&pointer, "default");
                self.diagnostics.push(Diagnostic::error(
                    file.path,
                    file.doc.value_position(&default_at),
                    Code::InputDefault,
                    &default_at,
                    format!("the default of input `{name}` is not of its type `{kind}`"),
                ));
            }
            if let Some(Value::Array(allowed)) = spec.get("enum") {
                for (index, value) in allowed.iter().enumerate() {
                    if !fits_type(value, kind) {
                        let value_at =
                            pointer_push(&pointer_push(&pointer, "enum"), &index.to_string());
                        self.diagnostics.push(Diagnostic::error(
                            file.path,
                            file.doc.value_position(&value_at),
                            Code::InputDefault,
                            &value_at,
                            format!(
                                "this allowed value of input `{name}` is not of its type `{kind}`"
                            ),
                        ));
                    }
                }
            }
            let required = spec
                .get("required")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if required && !used.contains(name) {
                self.diagnostics.push(
                    Diagnostic::warning(
                        file.path,
                        file.doc.key_position(&pointer),
                        Code::UnusedInput,
                        &pointer,
                        format!("required input `{name}` is not used by any template"),
                    )
                    .with_hint(format!(
                        "use it as {{{{ {name} }}}} in `system` or `prompt`, or remove it"
                    )),
                );
            }
        }
    }

    fn check_execution(
        &mut self,
        file: &FileContext<'_>,
        at: &str,
        execution: &Map<String, Value>,
    ) {
        let strategy = execution
            .get("strategy")
            .and_then(Value::as_str)
            .unwrap_or("loop");
        for (option, owner) in STRATEGY_OPTIONS {
            if execution.contains_key(*option) && owner.as_str() != strategy {
                let pointer = pointer_push(at, option);
                self.diagnostics.push(
                    Diagnostic::error(
                        file.path,
                        file.doc.key_position(&pointer),
                        Code::StrategyOption,
                        &pointer,
                        format!(
                            "`{option}` belongs to strategy `{}`, but this agent uses `{strategy}`",
                            owner.as_str()
                        ),
                    )
                    .with_hint(format!(
                        "set `strategy: {}` or remove `{option}`",
                        owner.as_str()
                    )),
                );
            }
        }
        if let Some(schema) = execution.get("plan_schema") {
            self.user_schema(
                file,
                &pointer_push(at, "plan_schema"),
                schema,
                false,
                Code::OutputSchema,
            );
        }
    }

    fn template(
        &mut self,
        file: &FileContext<'_>,
        pointer: &str,
        source: &str,
        scope: &TemplateScope,
    ) {
        for issue in check_template(source, file.base_dir, scope) {
            self.template_issue(file, pointer, issue);
        }
    }

    fn template_issue(&mut self, file: &FileContext<'_>, pointer: &str, issue: TemplateIssue) {
        let diagnostic = match &issue.include {
            Some(included) => Diagnostic::error(
                &included.path,
                super::yaml::Position {
                    line: included.line,
                    column: included.column,
                },
                issue.code,
                "",
                format!(
                    "{} (included from {}{pointer})",
                    issue.message,
                    file.path.display()
                ),
            ),
            None => Diagnostic::error(
                file.path,
                file.doc.position_in_string(pointer, issue.offset),
                issue.code,
                pointer,
                issue.message,
            ),
        };
        self.diagnostics
            .push(diagnostic.with_optional_hint(issue.hint));
    }

    fn user_schema(
        &mut self,
        file: &FileContext<'_>,
        pointer: &str,
        schema: &Value,
        require_object: bool,
        code: Code,
    ) {
        if !schema.is_object() {
            return; // the agent schema already reported the wrong type
        }
        for problem in check_user_schema(schema, require_object) {
            let at = format!("{pointer}{}", problem.pointer);
            self.diagnostics.push(Diagnostic::error(
                file.path,
                file.doc.value_position(&at),
                code,
                &at,
                problem.message,
            ));
        }
    }
}

struct FileContext<'a> {
    path: &'a Path,
    doc: &'a YamlDocument,
    base_dir: &'a Path,
}

/// A file whose top level is not a mapping is not an agent file: what it holds is not
/// quoted, since a reference can name any file (`agent: /etc/passwd`, `agent: .env`).
fn not_an_agent_file(path: &Path, value: &Value) -> Diagnostic {
    let kind = match value {
        Value::Null => "empty",
        Value::Bool(_) | Value::Number(_) => "a single value",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    };
    Diagnostic::error(
        path,
        super::yaml::Position { line: 1, column: 1 },
        Code::Type,
        "",
        format!("this is not an agent file: its top level is {kind}, not a mapping"),
    )
    .with_hint("an agent file is a YAML mapping with keys such as `name`, `model` and `prompt`")
}

fn has_max_depth(value: &Value) -> bool {
    value
        .get("limits")
        .and_then(|l| l.get("max_depth"))
        .is_some()
}

fn fits_type(value: &Value, kind: &str) -> bool {
    match kind {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().to_string(),
    )
}

/// Validates these files (as [`expand_paths`] lists them).
pub fn validate_files(files: &[PathBuf]) -> Vec<Diagnostic> {
    let mut validator = Validator::new();
    validator.advise_bounds = true;
    for file in files {
        let name = file.file_name().and_then(|name| name.to_str());
        if name.is_some_and(super::paths::is_project_file) {
            validator.validate_project(file);
        } else {
            validator.validate_file(file);
        }
    }
    validator.finish()
}
