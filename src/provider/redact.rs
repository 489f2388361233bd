//! Keeps the API key out of everything a server's answer can make us print or store.
//!
//! A server knows the key (it was sent one) and may echo it anywhere: in an HTTP error
//! body, in an in-stream error event of either wire, in a chunk so malformed that the
//! error quotes it. So the HTTP client passes every [`ProviderError`] it returns through
//! [`ProviderError::redact`], and the cassette recorder passes every value it writes
//! through [`redact_value`]. Both end in [`redact`].
//!
//! A key shorter than [`MIN_SECRET_LEN`] is not redacted anywhere: local servers take
//! dummy keys (`x`, `none`, `EMPTY`), and replacing such a word wherever it occurs would
//! rewrite prompts, answers and error messages. Only string values are looked at, never
//! the keys of a JSON object: a server cannot put the key there, and a changed field name
//! would make a cassette unreadable.
//!
//! Redaction comes before any cut: server text is quoted whole while an error is built
//! and the message is shortened only here, once the key is gone, so a key that
//! straddles the cut cannot leave its first part behind.

use std::borrow::Cow;

use serde_json::Value;

use super::error::{ProviderError, shorten};
use super::http::Secret;

/// Longest message (in bytes) of an error from a server, applied after redaction.
pub const MAX_MESSAGE: usize = 500;

pub use crate::secrets::{MIN_SECRET_LEN, REDACTED, is_redactable};

/// `text` with every occurrence of the key replaced by [`REDACTED`] (a key shorter than
/// [`MIN_SECRET_LEN`] is left alone).
pub fn redact<'t>(text: &'t str, key: Option<&Secret>) -> Cow<'t, str> {
    match key.map(Secret::expose).filter(|k| is_redactable(k)) {
        Some(key) if text.contains(key) => Cow::Owned(text.replace(key, REDACTED)),
        _ => Cow::Borrowed(text),
    }
}

/// Redacts the key from every string value in `value`, at any depth; object keys stay as
/// they are.
pub fn redact_value(value: &mut Value, key: &Secret) {
    if !is_redactable(key.expose()) {
        return;
    }
    match value {
        Value::String(text) => {
            if let Cow::Owned(clean) = redact(text, Some(key)) {
                *text = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| redact_value(item, key)),
        Value::Object(fields) => fields
            .values_mut()
            .for_each(|field| redact_value(field, key)),
        _ => {}
    }
}

impl ProviderError {
    /// Replaces the key in the message and hint, then cuts the message to
    /// `MAX_MESSAGE` bytes.
    pub fn redact(mut self, key: Option<&Secret>) -> Self {
        self.message = shorten(&redact(&self.message, key), MAX_MESSAGE);
        if let Some(hint) = &mut self.hint {
            *hint = redact(hint, key).into_owned();
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ErrorKind;

    fn key() -> Secret {
        Secret::new("sk-abc-123".into())
    }

    #[test]
    fn every_occurrence_goes() {
        assert_eq!(
            redact("sk-abc-123 and sk-abc-123", Some(&key())),
            "[REDACTED] and [REDACTED]"
        );
        assert!(matches!(redact("nothing", Some(&key())), Cow::Borrowed(_)));
        assert_eq!(redact("sk-abc", None), "sk-abc");
        assert_eq!(redact("x", Some(&Secret::new(String::new()))), "x");
    }

    #[test]
    fn keys_go_from_string_values_never_from_field_names() {
        let key = Secret::new(r#"k"e\y-0123456789"#.into());
        let mut value = serde_json::json!({key.expose(): [format!("a {} b", key.expose())]});
        redact_value(&mut value, &key);
        let expected = serde_json::json!({key.expose(): ["a [REDACTED] b"]});
        assert_eq!(value, expected);
    }

    #[test]
    fn short_keys_are_not_redacted() {
        let key = Secret::new("none".into());
        assert_eq!(redact("Reply with none.", Some(&key)), "Reply with none.");
        let mut value = serde_json::json!({"text": "none"});
        redact_value(&mut value, &key);
        assert_eq!(value, serde_json::json!({"text": "none"}));
    }

    #[test]
    fn a_key_across_the_cut_goes_whole() {
        let message = format!("{}sk-abc-123 tail", "x".repeat(MAX_MESSAGE - 3));
        let e = ProviderError::new(ErrorKind::Server, "openai", message).redact(Some(&key()));
        assert!(!e.message.contains("sk-"), "{}", e.message);
        assert!(e.message.len() <= MAX_MESSAGE + 3, "{}", e.message.len());
    }
}
