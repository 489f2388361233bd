//! One schema violation as a diagnostic at the user's YAML: the kind of violation says
//! which message, and the document says where (the key, or its value).

use std::path::Path;

use jsonschema::error::{ValidationError, ValidationErrorKind};
use serde_json::Value;

use super::describe::{
    Bound, describe_range, describe_types, describe_value, key_name, range_hint, required_hint,
    show_value, tool_shorthand_hint, type_names,
};
use super::lazy_pattern::PATTERN;
use crate::spec::diagnostic::{Code, Diagnostic, did_you_mean};
use crate::spec::duration::DURATION_PATTERN;
use crate::spec::loadable::LOADS_AS;
use crate::spec::model::{ModelShorthand, model_shorthand_pattern};
use crate::spec::schema_alternatives::{
    branch_score, constants_at_node, discriminator_mismatch, is_type_error_at,
    required_key_per_branch,
};
use crate::spec::yaml::{YamlDocument, pointer_get, pointer_push};

/// How a duration is written, for every message about one.
const DURATION_HINT: &str = "write a number followed by ms, s, m or h, e.g. 250ms, 30s, 15m, 1h";

/// Translates the violations of one document (found at `base` inside `doc`) against
/// `schema`.
pub(super) struct Translator<'a> {
    pub doc: &'a YamlDocument,
    pub file: &'a Path,
    pub base: &'a str,
    pub schema: &'a Value,
}

impl Translator<'_> {
    pub fn translate(&self, error: &ValidationError<'_>, out: &mut Vec<Diagnostic>) {
        let path = format!("{}{}", self.base, error.instance_path().as_str());
        let instance = error.instance().as_ref();
        let schema_path = error.schema_path().as_str();
        let diagnostic = match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let allowed = self.allowed_keys(schema_path);
                for key in unexpected {
                    let hint = match did_you_mean(key, allowed.iter().map(String::as_str)) {
                        Some(close) => Some(format!("did you mean `{close}`?")),
                        None if !allowed.is_empty() => {
                            Some(format!("allowed keys here: {}", allowed.join(", ")))
                        }
                        None => None,
                    };
                    out.push(self.unknown_key(&path, key, hint));
                }
                return;
            }
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                let message = format!("missing required key `{name}`");
                self.at_key(&path, Code::MissingKey, message)
                    .with_optional_hint(required_hint(name))
            }
            ValidationErrorKind::Type { .. }
                if self.owner_pattern(schema_path) == Some(DURATION_PATTERN) =>
            {
                let message = format!(
                    "{} is not a duration: it needs a unit",
                    show_value(instance)
                );
                self.at_value(&path, Code::Duration, message)
                    .with_hint(DURATION_HINT)
            }
            ValidationErrorKind::Type { .. } => {
                let expected = self.schema_at(schema_path).cloned().unwrap_or(Value::Null);
                let expected = describe_types(&type_names(&expected));
                self.type_error(&path, instance, &expected)
            }
            ValidationErrorKind::AnyOf { context }
            | ValidationErrorKind::OneOfNotValid { context } => {
                self.translate_alternatives(error, &path, instance, context, out);
                return;
            }
            ValidationErrorKind::Enum { options } => {
                let allowed: Vec<String> = options
                    .as_array()
                    .map(|items| {
                        items
                            .iter()
                            .map(|item| match item {
                                Value::String(text) => text.clone(),
                                other => other.to_string(),
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                self.not_one_of(&path, instance, &allowed)
            }
            ValidationErrorKind::Constant { expected_value } => {
                self.constant_error(&path, instance, expected_value)
            }
            ValidationErrorKind::Pattern { pattern } => {
                self.pattern_error(&path, instance, pattern)
            }
            ValidationErrorKind::Minimum { .. } => {
                self.range_error(&path, instance, schema_path, Bound::Below)
            }
            ValidationErrorKind::Maximum { .. } => {
                self.range_error(&path, instance, schema_path, Bound::Above)
            }
            // A mapping whose names are constrained (`inputs`, `telemetry.resource`): the
            // error is at the key that breaks it, not at the mapping's first.
            ValidationErrorKind::PropertyNames { error } => {
                let key = error.instance().as_str().unwrap_or_default();
                let at = format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"));
                self.at_key(&at, Code::InvalidValue, format!("the key {error}"))
            }
            ValidationErrorKind::Custom { keyword, .. } if keyword == PATTERN => {
                let pattern = self.schema_at(schema_path).and_then(Value::as_str);
                self.pattern_error(&path, instance, pattern.unwrap_or_default())
            }
            ValidationErrorKind::Custom { keyword, message } if keyword == LOADS_AS => {
                self.unloadable(&path, instance, message)
            }
            _ => self.at_value(&path, Code::InvalidValue, error.to_string()),
        };
        out.push(diagnostic);
    }

    /// Reports an `anyOf`/`oneOf` failure through its most plausible branch: a value of
    /// the wrong type for every branch, a tag none takes, a mapping with none of the keys
    /// that pick a branch; else the errors of the branch that came closest.
    fn translate_alternatives(
        &self,
        error: &ValidationError<'_>,
        path: &str,
        instance: &Value,
        branches: &[Vec<ValidationError<'static>>],
        out: &mut Vec<Diagnostic>,
    ) {
        let node = error.instance_path().as_str();
        let wrong_type_everywhere = branches
            .iter()
            .all(|branch| branch.iter().any(|e| is_type_error_at(e, node)));
        if wrong_type_everywhere || branches.is_empty() {
            let names = self.types_wanted(branches, node);
            out.push(self.type_error(path, instance, &describe_types(&names)));
        } else if let Some(allowed) = constants_at_node(branches, node) {
            out.push(self.not_one_of(path, instance, &allowed));
        } else if let Some(keys) = required_key_per_branch(branches, node) {
            self.none_of_the_keys(path, instance, &keys, out);
        } else if let Some((tag_path, allowed)) = discriminator_mismatch(branches, node) {
            let tag_path = format!("{}{tag_path}", self.base);
            let value = pointer_get(self.doc_value(), &tag_path)
                .cloned()
                .unwrap_or(Value::Null);
            out.push(self.not_one_of(&tag_path, &value, &allowed));
        } else {
            let best = branches
                .iter()
                .min_by_key(|branch| branch_score(branch, node))
                .map(Vec::as_slice)
                .unwrap_or_default();
            for inner in best {
                self.translate(inner, out);
            }
        }
    }

    /// The types the branches would have taken at `node`, each once, in order.
    fn types_wanted(&self, branches: &[Vec<ValidationError<'static>>], node: &str) -> Vec<String> {
        let mut names = Vec::new();
        let type_errors = branches
            .iter()
            .flatten()
            .filter(|e| is_type_error_at(e, node));
        for e in type_errors {
            let expected = self.schema_at(e.schema_path().as_str());
            for name in expected.map(type_names).unwrap_or_default() {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        names
    }

    /// A mapping that has none of the keys that would pick a branch: its other keys are
    /// unknown, or it is missing one.
    fn none_of_the_keys(
        &self,
        path: &str,
        instance: &Value,
        keys: &[String],
        out: &mut Vec<Diagnostic>,
    ) {
        let present: Vec<&String> = instance
            .as_object()
            .map(|map| map.keys().filter(|k| !keys.contains(k)).collect())
            .unwrap_or_default();
        if present.is_empty() {
            let message = format!("expected one of the keys: {}", keys.join(", "));
            out.push(self.at_key(path, Code::MissingKey, message));
        }
        for key in present {
            let hint = match did_you_mean(key, keys.iter().map(String::as_str)) {
                Some(close) => format!("did you mean `{close}`?"),
                None => format!("expected one of: {}", keys.join(", ")),
            };
            out.push(self.unknown_key(path, key, Some(hint)));
        }
    }

    /// `version: 2`, or a value other than the one a key takes.
    fn constant_error(&self, path: &str, instance: &Value, expected: &Value) -> Diagnostic {
        if path.ends_with("/version") {
            let message = format!("version {} is not supported", show_value(instance));
            return self
                .at_value(path, Code::InvalidValue, message)
                .with_hint("only `version: 1` exists; or leave `version` out");
        }
        let message = format!(
            "expected {}, found {}",
            show_value(expected),
            show_value(instance)
        );
        self.at_value(path, Code::InvalidValue, message)
    }

    /// A value that is none of those `allowed`, with the closest one as a hint.
    fn not_one_of(&self, path: &str, instance: &Value, allowed: &[String]) -> Diagnostic {
        let hint = instance
            .as_str()
            .and_then(|text| did_you_mean(text, allowed.iter().map(String::as_str)))
            .map(|close| format!("did you mean `{close}`?"));
        let shown: Vec<String> = allowed.iter().map(|a| format!("`{a}`")).collect();
        let message = format!(
            "{} is not one of: {}",
            show_value(instance),
            shown.join(", ")
        );
        self.at_value(path, Code::InvalidValue, message)
            .with_optional_hint(hint)
    }

    /// Key `key` of the mapping at `path`, which the schema does not take there.
    fn unknown_key(&self, path: &str, key: &str, hint: Option<String>) -> Diagnostic {
        let key_path = pointer_push(path, key);
        let message = format!("unknown key `{key}`");
        self.at_key(&key_path, Code::UnknownKey, message)
            .with_optional_hint(hint)
    }

    /// An error located at the key of `path`.
    fn at_key(&self, path: &str, code: Code, message: String) -> Diagnostic {
        Diagnostic::error(self.file, self.doc.key_position(path), code, path, message)
    }

    /// An error located at the value of `path`.
    fn at_value(&self, path: &str, code: Code, message: String) -> Diagnostic {
        Diagnostic::error(
            self.file,
            self.doc.value_position(path),
            code,
            path,
            message,
        )
    }

    fn doc_value(&self) -> &Value {
        &self.doc.value
    }

    fn type_error(&self, path: &str, instance: &Value, expected: &str) -> Diagnostic {
        let hint = tool_shorthand_hint(path, instance);
        Diagnostic::error(
            self.file,
            self.doc.value_position(path),
            Code::Type,
            path,
            format!("expected {expected}, found {}", describe_value(instance)),
        )
        .with_optional_hint(hint)
    }

    fn pattern_error(&self, path: &str, instance: &Value, pattern: &str) -> Diagnostic {
        let text = instance.as_str().unwrap_or_default();
        let at = self.doc.value_position(path);
        if pattern == DURATION_PATTERN {
            return Diagnostic::error(
                self.file,
                at,
                Code::Duration,
                path,
                format!("`{text}` is not a duration"),
            )
            .with_hint(DURATION_HINT);
        }
        if pattern == model_shorthand_pattern() {
            let message = ModelShorthand::parse(text)
                .err()
                .unwrap_or_else(|| format!("`{text}` is not `provider/name`"));
            return Diagnostic::error(self.file, at, Code::Model, path, message)
                .with_hint("write `provider/name` (e.g. openai/gpt-4o-mini) or a mapping with `provider:` and `name:`");
        }
        let what = if path.ends_with("/name") && pattern.starts_with("^[a-z0-9]") {
            "an agent name: lowercase letters, digits, `-` and `_`, starting with a letter or digit"
        } else if pattern.starts_with("^[A-Za-z_]") {
            "a name: letters, digits and `_`, not starting with a digit"
        } else {
            "the expected pattern"
        };
        Diagnostic::error(
            self.file,
            at,
            Code::InvalidValue,
            path,
            format!("`{text}` is not {what}"),
        )
        .with_hint(format!("it must match `{pattern}`"))
    }

    /// A number outside what its key takes: the range of the Rust type it is read into,
    /// or the key's own tighter bound.
    fn range_error(
        &self,
        path: &str,
        instance: &Value,
        schema_path: &str,
        bound: Bound,
    ) -> Diagnostic {
        let key = key_name(path);
        let owner = schema_path.rsplit_once('/').map_or("", |(owner, _)| owner);
        let range = self
            .schema_at(owner)
            .map_or_else(|| "another number".into(), describe_range);
        let (size, advice) = match bound {
            Bound::Below => ("small", "a larger number"),
            Bound::Above => ("large", "a smaller number"),
        };
        Diagnostic::error(
            self.file,
            self.doc.value_position(path),
            Code::InvalidValue,
            path,
            format!(
                "{} is too {size}: `{key}` takes {range}",
                self.show_number(path, instance)
            ),
        )
        .with_hint(range_hint(path, bound, advice))
    }

    /// A value the schema allows but the loader cannot read (see `spec::loadable`): a
    /// duration too long (the keyword's `message` says how long is allowed), or a whole
    /// number written as a float (quoted as written, which only the document knows).
    fn unloadable(&self, path: &str, instance: &Value, message: &str) -> Diagnostic {
        let at = self.doc.value_position(path);
        if instance.is_string() {
            let hint = range_hint(path, Bound::Above, "a shorter duration");
            return Diagnostic::error(self.file, at, Code::Duration, path, message.to_string())
                .with_hint(hint);
        }
        let digits = instance.as_f64().map_or(0, |float| float as i128);
        Diagnostic::error(
            self.file,
            at,
            Code::Type,
            path,
            format!(
                "expected a whole number written with digits only, found {}",
                self.show_number(path, instance)
            ),
        )
        .with_hint(format!("write `{digits}`"))
    }

    /// A number as the user wrote it (`99999999999999999999`, not `1e20`).
    fn show_number(&self, path: &str, instance: &Value) -> String {
        match self.doc.written_number(path) {
            Some(written) => format!("`{written}`"),
            None => show_value(instance),
        }
    }

    /// The schema node at a schema path, following `$ref`s on the way.
    fn schema_at(&self, schema_path: &str) -> Option<&Value> {
        let mut node = self.schema;
        for raw in schema_path.split('/').skip(1) {
            let segment = raw.replace("~1", "/").replace("~0", "~");
            node = loop {
                let next = match node {
                    Value::Object(map) => map.get(&segment),
                    Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
                    _ => None,
                };
                if let Some(next) = next {
                    break next;
                }
                node = self.resolve_ref(node)?;
            };
        }
        Some(node)
    }

    fn resolve_ref(&self, node: &Value) -> Option<&Value> {
        let reference = node.get("$ref")?.as_str()?;
        pointer_get(self.schema, reference.strip_prefix('#')?)
    }

    /// The `pattern` of the schema owning the keyword at `schema_path`.
    fn owner_pattern(&self, schema_path: &str) -> Option<&str> {
        let owner = schema_path.rsplit_once('/').map_or("", |(owner, _)| owner);
        let mut node = self.schema_at(owner);
        while let Some(candidate) = node {
            if let Some(pattern) = candidate.get("pattern") {
                return pattern.as_str();
            }
            node = self.resolve_ref(candidate);
        }
        None
    }

    /// The keys allowed by the object schema that owns an `additionalProperties` keyword.
    fn allowed_keys(&self, schema_path: &str) -> Vec<String> {
        let owner = schema_path.rsplit_once('/').map_or("", |(owner, _)| owner);
        let mut node = self.schema_at(owner);
        while let Some(candidate) = node {
            if candidate.get("properties").is_some() {
                break;
            }
            node = self.resolve_ref(candidate);
        }
        node.and_then(|schema| schema.get("properties"))
            .and_then(Value::as_object)
            .map(|properties| properties.keys().cloned().collect())
            .unwrap_or_default()
    }
}
