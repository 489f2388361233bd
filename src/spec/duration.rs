//! Human-friendly durations: `250ms`, `30s`, `15m`, `1h`, and sums such as `1m30s`.
//!
//! The agent file keeps durations as strings so that the schema can check their shape
//! (an editor flags `30 sec` as you type) and error messages can quote what the user wrote.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The regular expression the schema uses for durations; `parse_duration` accepts exactly
/// this shape (and refuses only durations longer than [`MAX_DURATION`]).
pub const DURATION_PATTERN: &str = r"^([0-9]+(\.[0-9]+)?(ms|h|m|s))+$";

/// The longest duration: the runner counts time in whole milliseconds in a `u64`
/// (`elapsed_ms`, `duration_ms`), so a longer timeout could never be reached, and adding it
/// to a clock could overflow.
pub const MAX_DURATION: Duration = Duration::from_millis(u64::MAX);

/// A duration written as a number and a unit (`ms`, `s`, `m`, `h`), e.g. `30s` or `1m30s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HumanDuration(pub Duration);

impl HumanDuration {
    pub fn as_duration(self) -> Duration {
        self.0
    }
}

/// Why a text is not a duration the runner can use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurationError {
    /// Not numbers with units: what the pattern refuses.
    Malformed(String),
    /// Well formed, but longer than [`MAX_DURATION`].
    TooLong(String),
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::Malformed(text) => write!(
                f,
                "`{text}` is not a duration: write a number followed by ms, s, m or h (e.g. 30s)"
            ),
            DurationError::TooLong(text) => write!(
                f,
                "`{text}` is too long: the longest duration is {}ms (about 584 million years)",
                u64::MAX
            ),
        }
    }
}

/// Parses `250ms`, `30s`, `15m`, `1h`, `1.5s` or a sum like `1h30m`.
///
/// Whole numbers are counted exactly in nanoseconds (a float would round
/// `18446744073709551615ms` past the limit); only a fraction goes through `f64`, which is
/// exact to well under a nanosecond.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let malformed = || DurationError::Malformed(text.to_string());
    if text.is_empty() {
        return Err(malformed());
    }
    let mut nanos: u128 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(end);
        let (unit_nanos, after) = split_unit(after).ok_or_else(malformed)?;
        let term = term_nanos(number, unit_nanos).ok_or_else(malformed)?;
        nanos = nanos.saturating_add(term);
        rest = after;
    }
    if nanos > MAX_DURATION.as_nanos() {
        return Err(DurationError::TooLong(text.to_string()));
    }
    // Both fit: at most MAX_DURATION.
    let (secs, subsec) = (nanos / 1_000_000_000, nanos % 1_000_000_000);
    Ok(Duration::new(secs as u64, subsec as u32))
}

/// The unit at the start of `text`, in nanoseconds, and what follows it.
fn split_unit(text: &str) -> Option<(u128, &str)> {
    const UNITS: [(&str, u128); 4] = [
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
        ("m", 60_000_000_000),
        ("h", 3_600_000_000_000),
    ];
    UNITS
        .iter()
        .find_map(|(unit, nanos)| text.strip_prefix(unit).map(|rest| (*nanos, rest)))
}

/// `number` (`12` or `1.5`) of a unit, in nanoseconds; saturating, since a number that
/// large is refused as too long anyway. `None`: not digits with an optional `.digits`.
fn term_nanos(number: &str, unit_nanos: u128) -> Option<u128> {
    let (whole, fraction) = match number.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (number, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || fraction.is_some_and(|f| !digits(f)) {
        return None;
    }
    let whole = whole.bytes().fold(0u128, |n, digit| {
        n.saturating_mul(10)
            .saturating_add(u128::from(digit - b'0'))
    });
    let part = match fraction {
        Some(fraction) => {
            let fraction: f64 = format!("0.{fraction}").parse().ok()?;
            (fraction * unit_nanos as f64).round() as u128
        }
        None => 0,
    };
    Some(whole.saturating_mul(unit_nanos).saturating_add(part))
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
            assert_eq!(
                parse_duration(bad),
                Err(DurationError::Malformed(bad.into())),
                "{bad} should be rejected"
            );
        }
    }

    #[test]
    fn counts_exactly_up_to_the_longest_duration() {
        assert_eq!(parse_duration("1.5ms"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_duration("18446744073709551615ms"), Ok(MAX_DURATION));
        assert_eq!(
            parse_duration("5124095576030h25m51s615ms"),
            Ok(MAX_DURATION)
        );
        for long in [
            "18446744073709551616ms",
            "18446744073709551615ms1ms",
            "99999999999999999999h",
            "999999999999999999999999999999999999999999999999s",
        ] {
            assert_eq!(
                parse_duration(long),
                Err(DurationError::TooLong(long.into())),
                "{long}"
            );
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
