//! Input values: `--var K=V` and `--vars FILE` turned into typed values by the inputs'
//! declarations, with defaults applied and required inputs enforced.

use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::agent::{InputSpec, InputType};
use super::diagnostic::did_you_mean;

/// Why the given inputs cannot be used (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("missing required input `{name}`{}", describe(.description))]
    Missing {
        name: String,
        description: Option<String>,
    },
    #[error("unknown input `{name}`{}", hint(.suggestion, .known))]
    Unknown {
        name: String,
        suggestion: Option<String>,
        known: Vec<String>,
    },
    #[error("input `{name}` is {expected}, but `{given}` is not")]
    WrongType {
        name: String,
        expected: String,
        given: String,
    },
    #[error("input `{name}` must be one of {allowed}, not `{given}`")]
    NotAllowed {
        name: String,
        allowed: String,
        given: String,
    },
    #[error("`--var {given}` is not NAME=VALUE")]
    Malformed { given: String },
    #[error("{0}")]
    File(String),
    /// A value of a `--vars` file, at `place` (`path:line:col`).
    #[error("{place}: {error}")]
    At {
        place: String,
        error: Box<InputError>,
    },
}

/// The values of a `--vars` file, and where each is written.
#[derive(Debug, Default)]
pub struct Vars {
    pub values: Map<String, Value>,
    /// `path:line:col` of each name and of its value, by input name.
    places: std::collections::HashMap<String, (String, String)>,
}

impl From<Map<String, Value>> for Vars {
    fn from(values: Map<String, Value>) -> Self {
        Vars {
            values,
            places: Default::default(),
        }
    }
}

fn describe(description: &Option<String>) -> String {
    description
        .as_ref()
        .map(|d| format!(" ({d}); pass it with --var NAME=VALUE"))
        .unwrap_or_else(|| "; pass it with --var NAME=VALUE".into())
}

fn hint(suggestion: &Option<String>, known: &[String]) -> String {
    match suggestion {
        Some(close) => format!("; did you mean `{close}`?"),
        None if known.is_empty() => "; this agent declares no inputs".into(),
        None => format!("; declared inputs: {}", known.join(", ")),
    }
}

/// Splits `NAME=VALUE` (the value may contain `=`).
pub fn parse_var(text: &str) -> Result<(String, String), InputError> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.to_string()))
        }
        _ => Err(InputError::Malformed {
            given: text.to_string(),
        }),
    }
}

/// Reads a `--vars` file: a YAML (or JSON) mapping of input names to values.
pub fn read_vars_file(path: &std::path::Path) -> Result<Vars, InputError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::File(format!("cannot read {}: {e}", path.display())))?;
    let document = super::yaml::load_yaml(&text).map_err(|errors| {
        let first = &errors[0];
        InputError::File(format!(
            "{}:{}:{}: {}",
            path.display(),
            first.position.line,
            first.position.column,
            first.message
        ))
    })?;
    let Value::Object(values) = &document.value else {
        return Err(InputError::File(format!(
            "{}: expected a mapping of input names to values",
            path.display()
        )));
    };
    let places = values
        .keys()
        .map(|name| {
            let pointer = super::yaml::pointer_push("", name);
            let place =
                |at: super::yaml::Position| format!("{}:{}:{}", path.display(), at.line, at.column);
            let key = place(document.key_position(&pointer));
            (
                name.clone(),
                (key, place(document.value_position(&pointer))),
            )
        })
        .collect();
    Ok(Vars {
        values: values.clone(),
        places,
    })
}

/// The typed input values: `--vars` first, `--var` over them, then defaults; every value is
/// checked against its declaration.
pub fn resolve_inputs(
    declared: &IndexMap<String, InputSpec>,
    file: impl Into<Vars>,
    vars: &[(String, String)],
) -> Result<Map<String, Value>, InputError> {
    let Vars {
        values: file_values,
        places,
    } = file.into();
    // An error about a value of the file says where in the file it is (an unknown name,
    // where the name is).
    let in_file = |name: &str, error: InputError| match places.get(name) {
        Some((key, value)) => InputError::At {
            place: match error {
                InputError::Unknown { .. } => key.clone(),
                _ => value.clone(),
            },
            error: Box::new(error),
        },
        None => error,
    };
    let known: Vec<String> = declared.keys().cloned().collect();
    let unknown = |name: &str| InputError::Unknown {
        name: name.to_string(),
        suggestion: did_you_mean(name, known.iter().map(String::as_str)).map(String::from),
        known: known.clone(),
    };
    let mut values = Map::new();
    for (name, value) in file_values {
        let spec = declared
            .get(&name)
            .ok_or_else(|| in_file(&name, unknown(&name)))?;
        let value = check_value(&name, spec, value).map_err(|e| in_file(&name, e))?;
        values.insert(name, value);
    }
    for (name, text) in vars {
        let spec = declared.get(name).ok_or_else(|| unknown(name))?;
        let value = convert_text(name, spec.kind, text)?;
        values.insert(name.clone(), check_value(name, spec, value)?);
    }
    for (name, spec) in declared {
        if values.contains_key(name) {
            continue;
        }
        match (&spec.default, spec.required) {
            (Some(default), _) => {
                values.insert(name.clone(), default.clone());
            }
            (None, true) => {
                return Err(InputError::Missing {
                    name: name.clone(),
                    description: spec.description.clone(),
                });
            }
            // An optional input without a default is absent; templates test it with
            // `is defined`.
            (None, false) => {}
        }
    }
    Ok(values)
}

/// Converts command-line text to the declared type.
fn convert_text(name: &str, kind: InputType, text: &str) -> Result<Value, InputError> {
    let wrong = || InputError::WrongType {
        name: name.to_string(),
        expected: article(kind),
        given: text.to_string(),
    };
    match kind {
        InputType::String => Ok(Value::String(text.to_string())),
        InputType::Integer => text
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| wrong()),
        InputType::Number => {
            let number: f64 = text.trim().parse().map_err(|_| wrong())?;
            if number.fract() == 0.0 && number.abs() < 9e15 {
                Ok(Value::from(number as i64))
            } else {
                serde_json::Number::from_f64(number)
                    .map(Value::Number)
                    .ok_or_else(wrong)
            }
        }
        InputType::Boolean => match text.trim() {
            "true" | "yes" | "1" => Ok(Value::Bool(true)),
            "false" | "no" | "0" => Ok(Value::Bool(false)),
            _ => Err(wrong()),
        },
        InputType::Array | InputType::Object => {
            let value: Value = serde_json::from_str(text).map_err(|_| wrong())?;
            let fits = if kind == InputType::Array {
                value.is_array()
            } else {
                value.is_object()
            };
            if fits { Ok(value) } else { Err(wrong()) }
        }
    }
}

/// Checks a value's type and allowed values.
fn check_value(name: &str, spec: &InputSpec, value: Value) -> Result<Value, InputError> {
    let fits = match spec.kind {
        InputType::String => value.is_string(),
        InputType::Number => value.is_number(),
        InputType::Integer => value.is_i64() || value.is_u64(),
        InputType::Boolean => value.is_boolean(),
        InputType::Array => value.is_array(),
        InputType::Object => value.is_object(),
    };
    if !fits {
        return Err(InputError::WrongType {
            name: name.to_string(),
            expected: article(spec.kind),
            given: value.to_string(),
        });
    }
    if let Some(allowed) = &spec.allowed
        && !allowed.contains(&value)
    {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        return Err(InputError::NotAllowed {
            name: name.to_string(),
            allowed: list.join(", "),
            given: value.to_string(),
        });
    }
    Ok(value)
}

fn article(kind: InputType) -> String {
    match kind {
        InputType::Integer | InputType::Array | InputType::Object => {
            format!("an {}", kind.as_str())
        }
        _ => format!("a {}", kind.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn declared() -> IndexMap<String, InputSpec> {
        let yaml = json!({
            "n": {"type": "number", "required": true},
            "count": {"type": "integer", "default": 2},
            "strict": {"type": "boolean", "default": false},
            "name": {"type": "string", "enum": ["a", "b"]},
            "tags": {"type": "array"}
        });
        serde_json::from_value(yaml).unwrap()
    }

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn values_are_typed_by_their_declaration() {
        let values = resolve_inputs(
            &declared(),
            Map::new(),
            &vars(&[
                ("n", "3"),
                ("strict", "true"),
                ("tags", "[\"x\"]"),
                ("name", "a"),
            ]),
        )
        .unwrap();
        assert_eq!(values["n"], json!(3));
        assert_eq!(values["count"], json!(2));
        assert_eq!(values["strict"], json!(true));
        assert_eq!(values["tags"], json!(["x"]));
        let values = resolve_inputs(&declared(), Map::new(), &vars(&[("n", "2.5")])).unwrap();
        assert_eq!(values["n"], json!(2.5));
    }

    #[test]
    fn a_missing_required_input_is_named() {
        let error = resolve_inputs(&declared(), Map::new(), &[]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "missing required input `n`; pass it with --var NAME=VALUE"
        );
    }

    #[test]
    fn wrong_types_unknown_names_and_disallowed_values_are_errors() {
        let error = resolve_inputs(&declared(), Map::new(), &vars(&[("n", "three")])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "input `n` is a number, but `three` is not"
        );
        let error = resolve_inputs(
            &declared(),
            Map::new(),
            &vars(&[("n", "1"), ("cuont", "1")]),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown input `cuont`; did you mean `count`?"
        );
        let error = resolve_inputs(&declared(), Map::new(), &vars(&[("n", "1"), ("name", "c")]))
            .unwrap_err();
        assert!(error.to_string().contains("must be one of"));
    }

    #[test]
    fn var_flags_override_the_vars_file() {
        let mut file = Map::new();
        file.insert("n".into(), json!(1));
        file.insert("count".into(), json!(7));
        let values = resolve_inputs(&declared(), file, &vars(&[("n", "5")])).unwrap();
        assert_eq!(
            (values["n"].clone(), values["count"].clone()),
            (json!(5), json!(7))
        );
    }

    #[test]
    fn parse_var_keeps_equals_in_values() {
        assert_eq!(parse_var("q=a=b").unwrap(), ("q".into(), "a=b".into()));
        assert!(parse_var("novalue").is_err());
    }
}
