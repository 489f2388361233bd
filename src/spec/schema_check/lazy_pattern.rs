//! `pattern`, compiled at its first use. The schemas runner checks its own files against
//! hold a dozen patterns, and a file meets a few of them: compiling every one when the
//! schema was compiled was a third of that compile, paid by every command, because a
//! Unicode class such as `\S` builds a large automaton. Registered under the keyword's own
//! name, this replaces the built-in check for those schemas only (user-written schemas keep
//! the built-in one).
//!
//! The pattern is read as ECMA-262, as the built-in reads it. A failure is reported as a
//! custom error of the `pattern` keyword, worded as the built-in words it.

use std::sync::OnceLock;

use jsonschema::paths::Location;
use jsonschema::{Keyword, ValidationError};
use serde_json::{Map, Value};

/// The keyword's name.
pub const PATTERN: &str = "pattern";

/// A pattern, compiled when first matched.
struct LazyPattern {
    source: String,
    /// `Err`: the pattern does not compile, which every value is then reported against.
    regex: OnceLock<Result<regex::Regex, String>>,
}

/// The factory of `pattern`, for `jsonschema::options().with_keyword`.
pub fn lazy_pattern<'a>(
    _parent: &'a Map<String, Value>,
    value: &'a Value,
    _location: Location,
) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
    let Some(source) = value.as_str() else {
        return Err(ValidationError::schema("`pattern` must be text"));
    };
    Ok(Box::new(LazyPattern {
        source: source.to_string(),
        regex: OnceLock::new(),
    }))
}

impl LazyPattern {
    fn regex(&self) -> &Result<regex::Regex, String> {
        self.regex.get_or_init(|| compile(&self.source))
    }
}

/// An ECMA-262 pattern as a Rust regex.
pub fn compile(source: &str) -> Result<regex::Regex, String> {
    let translated = jsonschema_regex::to_rust_regex(source).map_err(|()| {
        format!("the pattern \"{source}\" is not a regular expression runner reads")
    })?;
    regex::Regex::new(&translated).map_err(|error| format!("the pattern \"{source}\": {error}"))
}

/// Compiles every pattern in `schema`: what a test does, so none fails at its first use.
#[cfg(test)]
pub fn compile_every_pattern(schema: &Value) {
    match schema {
        Value::Object(object) => {
            if let Some(Value::String(pattern)) = object.get(PATTERN) {
                compile(pattern).unwrap_or_else(|problem| panic!("{problem}"));
            }
            object.values().for_each(compile_every_pattern);
        }
        Value::Array(items) => items.iter().for_each(compile_every_pattern),
        _ => {}
    }
}

impl<'i> Keyword<'i> for LazyPattern {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        let Some(text) = instance.as_str() else {
            return Ok(());
        };
        match self.regex() {
            Ok(regex) if regex.is_match(text) => Ok(()),
            Ok(_) => Err(ValidationError::custom(format!(
                "{instance} does not match \"{}\"",
                self.source
            ))),
            Err(problem) => Err(ValidationError::custom(problem.clone())),
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        match instance.as_str() {
            Some(text) => self
                .regex()
                .as_ref()
                .is_ok_and(|regex| regex.is_match(text)),
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_patterns_as_ecma_262_does() {
        // `\d` is an ASCII digit in ECMA-262, any Unicode digit in Rust's own syntax.
        let digits = compile(r"^\d+$").unwrap();
        assert!(digits.is_match("42") && !digits.is_match("٤٢"));
        let word = compile(r"^\S+$").unwrap();
        assert!(word.is_match("gpt-4o") && !word.is_match("gpt 4o"));
    }
}
