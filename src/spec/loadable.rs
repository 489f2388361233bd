//! Numbers and durations the loader can read: `runner validate` accepts exactly what
//! `runner exec` can load.
//!
//! Every integer key is read into a Rust integer (`max_llm_calls` into a `u64`,
//! `max_depth` into a `u32`) and every duration into a `Duration`. JSON Schema alone lets
//! three kinds of value through that serde then refuses:
//!
//! * an integer beyond its type: `99999999999999999999` is `1e20` in JSON, still an
//!   "integer". The published schema gets each type's `minimum` and `maximum`
//!   ([`IntegerBounds`]), so editors flag it too.
//! * a whole number written as a float, `1e6` or `3.0`: JSON Schema calls it an integer,
//!   serde reads only integers into a `u64`.
//! * a duration longer than [`MAX_DURATION`](super::duration::MAX_DURATION): the pattern
//!   only checks its shape.
//!
//! The last two cannot be said in JSON Schema, so the schema `runner validate` checks
//! against marks those nodes with a private keyword, [`LOADS_AS`] ([`MarkLoadedTypes`]),
//! whose check ([`loads_as`]) asks what the loader would ask. Both report through the
//! schema machinery, so each error is located like any other.

use jsonschema::paths::Location;
use jsonschema::{Keyword, ValidationError};
use schemars::Schema;
use schemars::transform::{Transform, transform_subschemas};
use serde_json::{Map, Value};

use super::duration::{DURATION_PATTERN, DurationError, parse_duration};

/// The private keyword of the checked schema: what the loader reads a node into, an
/// integer `format` (`uint64`) or `duration`.
pub const LOADS_AS: &str = "x-runner-loads-as";

const DURATION: &str = "duration";

/// The range of an integer type, by the `format` schemars gives it.
pub fn integer_range(format: &str) -> Option<(i128, i128)> {
    let range = match format {
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        "uint64" => (0, u64::MAX.into()),
        "uint" => (0, usize::MAX as i128),
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int64" => (i64::MIN.into(), i64::MAX.into()),
        "int" => (isize::MIN as i128, isize::MAX as i128),
        _ => return None,
    };
    Some(range)
}

/// The integer format of a schema node (`None` when it is not an integer node).
fn integer_format(object: &Map<String, Value>) -> Option<&str> {
    if object.get("type").and_then(Value::as_str) != Some("integer") {
        return None;
    }
    let format = object.get("format").and_then(Value::as_str)?;
    integer_range(format).map(|_| format)
}

/// Gives every integer node the `minimum` and `maximum` of the Rust type it is read into,
/// keeping a tighter bound of its own (`range(min = 1)`).
#[derive(Clone)]
pub struct IntegerBounds;

impl Transform for IntegerBounds {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else {
            return;
        };
        let Some((min, max)) = integer_format(object).and_then(integer_range) else {
            return;
        };
        object.entry("minimum").or_insert_with(|| number(min));
        object.entry("maximum").or_insert_with(|| number(max));
    }
}

/// A bound as a JSON number (every integer type's bounds fit an `i64` or a `u64`).
fn number(bound: i128) -> Value {
    match u64::try_from(bound) {
        Ok(unsigned) => Value::from(unsigned),
        Err(_) => Value::from(bound as i64),
    }
}

/// Marks the nodes whose values serde may refuse after the schema passed them: integers
/// (by their format) and durations (by their pattern).
#[derive(Clone)]
pub struct MarkLoadedTypes;

impl Transform for MarkLoadedTypes {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else {
            return;
        };
        let target = match integer_format(object) {
            Some(format) => format.to_string(),
            None if object.get("pattern").and_then(Value::as_str) == Some(DURATION_PATTERN) => {
                DURATION.to_string()
            }
            None => return,
        };
        object.insert(LOADS_AS.into(), target.into());
    }
}

/// What the loader reads a marked node into.
#[derive(Debug, Clone, Copy)]
enum Target {
    Integer { min: i128, max: i128 },
    Duration,
}

/// The factory of the [`LOADS_AS`] keyword, for `jsonschema::options().with_keyword`.
pub fn loads_as<'a>(
    _parent: &'a Map<String, Value>,
    value: &'a Value,
    _location: Location,
) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
    let target = match value.as_str() {
        Some(DURATION) => Target::Duration,
        Some(format) => match integer_range(format) {
            Some((min, max)) => Target::Integer { min, max },
            None => {
                return Err(ValidationError::schema(format!(
                    "unknown {LOADS_AS} `{format}`"
                )));
            }
        },
        None => return Err(ValidationError::schema(format!("{LOADS_AS} must be text"))),
    };
    Ok(Box::new(target))
}

impl<'i> Keyword<'i> for Target {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        match self.problem(instance) {
            Some(message) => Err(ValidationError::custom(message)),
            None => Ok(()),
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.problem(instance).is_none()
    }
}

impl Target {
    /// Why the loader would refuse `instance`, for what only this keyword can see. A value
    /// of the wrong type, an integer out of range and a malformed duration are left to
    /// `type`, `minimum`/`maximum` and `pattern`, so each mistake is reported once.
    fn problem(self, instance: &Value) -> Option<String> {
        match self {
            Target::Integer { min, max } => {
                let float = instance.as_f64().filter(|_| instance.is_f64())?;
                let in_range = float.fract() == 0.0 && (min..=max).contains(&(float as i128));
                in_range.then(|| "a whole number written as a float".to_string())
            }
            Target::Duration => match parse_duration(instance.as_str()?) {
                Err(error @ DurationError::TooLong(_)) => Some(error.to_string()),
                Ok(_) | Err(DurationError::Malformed(_)) => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integer_problems_are_only_floats_the_type_would_hold() {
        let u32_key = Target::Integer {
            min: 0,
            max: u32::MAX.into(),
        };
        assert!(u32_key.problem(&json!(1e6)).is_some());
        assert!(u32_key.problem(&json!(3.0)).is_some());
        for left_to_other_keywords in [json!(3), json!(3.5), json!(1e10), json!(-1.0), json!("x")] {
            assert_eq!(u32_key.problem(&left_to_other_keywords), None);
        }
        let u64_key = Target::Integer {
            min: 0,
            max: u64::MAX.into(),
        };
        // 2^64 as a float: `maximum` refuses it.
        assert_eq!(u64_key.problem(&json!(18446744073709551616.0)), None);
    }

    #[test]
    fn duration_problems_are_only_lengths() {
        assert!(
            Target::Duration
                .problem(&json!("99999999999999999999h"))
                .is_some()
        );
        assert_eq!(Target::Duration.problem(&json!("30s")), None);
        assert_eq!(Target::Duration.problem(&json!("30 s")), None);
    }
}
