//! Serde helpers for the protobuf JSON mapping: a string field that is empty means unset.

use serde::{Deserialize, Deserializer};

/// Reads an optional string, `""` and `null` as `None` (protobuf JSON writes neither, but
/// clients built on protobuf may send an empty string for an unset field).
pub(super) fn empty_as_none<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let value = Option::<String>::deserialize(d)?;
    Ok(value.filter(|s| !s.is_empty()))
}

/// `skip_serializing_if` for booleans that default to false.
pub(super) fn is_false(value: &bool) -> bool {
    !*value
}
