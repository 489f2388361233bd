//! Plain YAML scalars to JSON values with the YAML 1.2 core schema: `true`/`false`, `null`
//! and `~`, integers and floats (`.inf`, `.nan`), and strings for everything else (`yes`
//! and `on` stay strings). Quoted and block scalars are always strings; a `!!str`, `!!int`,
//! `!!float`, `!!bool` or `!!null` tag forces its type.

use saphyr_parser::ScalarStyle;
use serde_json::{Number, Value};

/// Resolves a scalar to a JSON value (YAML 1.2 core schema; quoted and block scalars are
/// always strings).
pub(super) fn resolve_scalar(
    text: &str,
    style: ScalarStyle,
    tag: Option<&str>,
) -> Result<Value, String> {
    match tag {
        Some("str") => return Ok(Value::String(text.to_string())),
        Some("null") => return Ok(Value::Null),
        Some("bool") => {
            return resolve_bool(text)
                .map(Value::Bool)
                .ok_or_else(|| format!("`{text}` is not a boolean"));
        }
        Some("int") | Some("float") => {
            return resolve_number(text).ok_or_else(|| format!("`{text}` is not a number"));
        }
        Some(other) if !other.is_empty() => {
            return Err(format!(
                "unsupported YAML tag `!{other}`: agent files use plain values"
            ));
        }
        _ => {}
    }
    if style != ScalarStyle::Plain {
        return Ok(Value::String(text.to_string()));
    }
    if matches!(text, "" | "~" | "null" | "Null" | "NULL") {
        return Ok(Value::Null);
    }
    if let Some(flag) = resolve_bool(text) {
        return Ok(Value::Bool(flag));
    }
    if let Some(number) = resolve_number(text) {
        return Ok(number);
    }
    if is_special_float(text) {
        return Err(format!(
            "`{text}` is a YAML float that JSON cannot hold; quote it if you meant text"
        ));
    }
    Ok(Value::String(text.to_string()))
}

fn resolve_bool(text: &str) -> Option<bool> {
    match text {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

fn is_special_float(text: &str) -> bool {
    let body = text.trim_start_matches(['+', '-']);
    matches!(body, ".inf" | ".Inf" | ".INF") || matches!(text, ".nan" | ".NaN" | ".NAN")
}

fn resolve_number(text: &str) -> Option<Value> {
    if let Some(hex) = text.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).ok().map(Value::from);
    }
    if let Some(octal) = text.strip_prefix("0o") {
        return u64::from_str_radix(octal, 8).ok().map(Value::from);
    }
    let body = text.strip_prefix(['+', '-']).unwrap_or(text);
    if body.is_empty() {
        return None;
    }
    if body.bytes().all(|b| b.is_ascii_digit()) {
        let cleaned = text.strip_prefix('+').unwrap_or(text);
        if let Ok(int) = cleaned.parse::<i64>() {
            return Some(Value::from(int));
        }
        if let Ok(int) = cleaned.parse::<u64>() {
            return Some(Value::from(int));
        }
    }
    if is_yaml_float(body) {
        let float: f64 = text.parse().ok()?;
        return Number::from_f64(float).map(Value::Number);
    }
    None
}

/// `[0-9]*(\.[0-9]*)?([eE][-+]?[0-9]+)?` with at least one digit before the exponent.
fn is_yaml_float(body: &str) -> bool {
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(cut) => (&body[..cut], Some(&body[cut + 1..])),
        None => (body, None),
    };
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (mantissa, ""),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok =
        digits(whole) && digits(fraction) && !(whole.is_empty() && fraction.is_empty());
    let exponent_ok = exponent.is_none_or(|exp| {
        let exp = exp.strip_prefix(['+', '-']).unwrap_or(exp);
        !exp.is_empty() && digits(exp)
    });
    mantissa_ok && exponent_ok
}
