//! What a session id may be. The id names the session's directory, so the rule keeps it one
//! plain path component: no `/` and no `.` (so no `..` pointing outside the sessions
//! directory, and no hidden names), no control characters to garble a terminal, and a
//! length every file system takes.

use super::error::CheckpointError;

/// The longest session id: well under any file system's limit on a name.
pub const MAX_SESSION_ID_LEN: usize = 128;

/// Checks `id` against the rule: 1 to 128 ASCII letters, digits, `-` and `_`.
pub fn check_session_id(id: &str) -> Result<(), CheckpointError> {
    let valid = !id.is_empty()
        && id.len() <= MAX_SESSION_ID_LEN
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    match valid {
        true => Ok(()),
        false => Err(CheckpointError::InvalidSessionId(id.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_one_plain_path_component() {
        let long = "x".repeat(MAX_SESSION_ID_LEN);
        for id in [
            "s1",
            "a-b_C9",
            "0194d1c2-7b9e-7f3a-9c1d-2e3f4a5b6c7d",
            &long,
        ] {
            assert!(check_session_id(id).is_ok(), "{id:?}");
        }
        let too_long = "x".repeat(MAX_SESSION_ID_LEN + 1);
        for id in [
            "", ".", "..", "../x", "a/b", ".hidden", "a.b", "tab\t", "é", &too_long,
        ] {
            assert!(check_session_id(id).is_err(), "{id:?}");
        }
    }
}
