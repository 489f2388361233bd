//! Ids in paths are checked as `runner resume` checks a session id (1 to 128 ASCII
//! letters, digits, `-`, `_`): one plain name, never a path.

use super::error::ApiError;
use crate::checkpoint::check_session_id;

pub fn checked(id: &str) -> Result<&str, ApiError> {
    check_session_id(id)?;
    Ok(id)
}
