//! Human-friendly durations: `250ms`, `30s`, `15m`, `1h`, and sums such as `1m30s`.
//!
//! The agent file keeps durations as strings so that the schema can check their shape
//! (an editor flags `30 sec` as you type) and error messages can quote what the user wrote.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The regular expression the schema uses for durations; `parse_duration` accepts exactly this.
pub const DURATION_PATTERN: &str = r"^([0-9]+(\.[0-9]+)?(ms|h|m|s))+$";

/// A duration written as a number and a unit (`ms`, `s`, `m`, `h`), e.g. `30s` or `1m30s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HumanDuration(pub Duration);

impl HumanDuration {
    pub fn as_duration(self) -> Duration {
        self.0
    }
}

/// Parses `250ms`, `30s`, `15m`, `1h`, `1.5s` or a sum like `1h30m`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || {
        format!("`{text}` is not a duration: write a number followed by ms, s, m or h (e.g. 30s)")
    };
    let bytes = text.as_bytes();
    if bytes.is_empty() {
        return Err(bad());
    }
    let mut total = Duration::ZERO;
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        let number = &text[start..i];
        if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
            return Err(bad());
        }
        let value: f64 = number.parse().map_err(|_| bad())?;
        let unit_seconds = if text[i..].starts_with("ms") {
            i += 2;
            0.001
        } else if let Some(unit) = bytes.get(i) {
            i += 1;
            match unit {
                b's' => 1.0,
                b'm' => 60.0,
                b'h' => 3600.0,
                _ => return Err(bad()),
            }
        } else {
            return Err(bad());
        };
        let seconds = value * unit_seconds;
        if !seconds.is_finite() || seconds > 1e12 {
            return Err(bad());
        }
        total += Duration::from_secs_f64(seconds);
    }
    Ok(total)
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        if ms.is_multiple_of(3_600_000) && ms > 0 {
            write!(f, "{}h", ms / 3_600_000)
        } else if ms.is_multiple_of(60_000) && ms > 0 {
            write!(f, "{}m", ms / 60_000)
        } else if ms.is_multiple_of(1000) {
            write!(f, "{}s", ms / 1000)
        } else {
            write!(f, "{ms}ms")
        }
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_duration(&text)
            .map(HumanDuration)
            .map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for HumanDuration {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": DURATION_PATTERN,
            "description": "A duration: a number followed by ms, s, m or h, e.g. `250ms`, `30s`, `15m`, `1h`, `1m30s`.",
            "examples": ["30s", "250ms", "15m", "1h"]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_unit_and_sums() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
    }

    #[test]
    fn rejects_what_the_pattern_rejects() {
        for bad in [
            "", "30", "s", "30 s", "30sec", "1.s", ".5s", "-1s", "1d", "1e3s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn displays_in_the_largest_whole_unit() {
        assert_eq!(HumanDuration(Duration::from_secs(3600)).to_string(), "1h");
        assert_eq!(HumanDuration(Duration::from_secs(90)).to_string(), "90s");
        assert_eq!(
            HumanDuration(Duration::from_millis(250)).to_string(),
            "250ms"
        );
    }
}
