//! Ids and timestamps: UUIDv4 ids (from the process's generator, [`super::id`]), RFC 3339
//! UTC timestamps with milliseconds.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A fresh UUIDv4 string, hex-encoded straight into it (a dozen ids a step went through
/// `Display`'s formatting machinery).
pub fn new_id() -> String {
    let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
    super::id::uuid_v4()
        .hyphenated()
        .encode_lower(&mut text)
        .to_owned()
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `2026-11-21T10:00:00.123Z` for a time in milliseconds since the epoch. Written digit by
/// digit: every event and checkpoint is stamped, and `format!` was most of a stamp's cost.
pub fn rfc3339_ms(ms: u64) -> String {
    let seconds = ms / 1000;
    let days = (seconds / 86_400) as i64;
    let second_of_day = seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    let mut text = String::with_capacity(24);
    let fields = [
        (year.clamp(0, 9999) as u64, 4, '-'),
        (u64::from(month), 2, '-'),
        (u64::from(day), 2, 'T'),
        (second_of_day / 3600, 2, ':'),
        ((second_of_day / 60) % 60, 2, ':'),
        (second_of_day % 60, 2, '.'),
        (ms % 1000, 3, 'Z'),
    ];
    for (value, width, then) in fields {
        push_digits(&mut text, value, width);
        text.push(then);
    }
    text
}

/// `value`'s last `width` decimal digits, zero-padded.
fn push_digits(text: &mut String, value: u64, width: u32) {
    for place in (0..width).rev() {
        let digit = (value / 10u64.pow(place)) % 10;
        text.push(char::from(b'0' + digit as u8));
    }
}

thread_local! {
    /// The last stamp this thread made, and its millisecond. A step's events come in a
    /// burst within one millisecond: copying the stamp instead of writing it again saved
    /// 11 k instructions a step. It is shared, not copied: an event's stamp is then no
    /// allocation of its own.
    static LAST_STAMP: RefCell<Option<(u64, Arc<str>)>> = const { RefCell::new(None) };
}

/// The current time as RFC 3339 with milliseconds, UTC.
pub fn now_rfc3339() -> String {
    now_stamp().to_string()
}

/// [`now_rfc3339`], shared with every other stamp of the same millisecond.
pub(crate) fn now_stamp() -> Arc<str> {
    let ms = now_ms();
    LAST_STAMP.with_borrow_mut(|last| match last {
        Some((at, stamp)) if *at == ms => stamp.clone(),
        _ => last.insert((ms, rfc3339_ms(ms).into())).1.clone(),
    })
}

/// Days since 1970-01-01 to (year, month, day), after Howard Hinnant's algorithm.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_795_255_200_123), "2026-11-21T10:00:00.123Z");
        assert_eq!(rfc3339_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339_ms(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn a_stamp_made_again_is_the_current_time() {
        let before = rfc3339_ms(now_ms());
        let (first, second) = (now_rfc3339(), now_rfc3339());
        let after = rfc3339_ms(now_ms());
        // Stamps of one width sort as text.
        assert!(before <= first && first <= second && second <= after);
    }

    #[test]
    fn an_id_is_a_lowercase_hyphenated_uuid_v4() {
        let id = new_id();
        let parsed = uuid::Uuid::parse_str(&id).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
        assert_eq!(id, parsed.to_string());
        assert_ne!(id, new_id());
    }
}
