//! Keeps the API key out of everything a server's answer can make us print or store.
//!
//! A server knows the key (it was sent one) and may echo it anywhere: in an HTTP error
//! body, in an in-stream error event of either wire, in a chunk so malformed that the
//! error quotes it. So the HTTP client passes every [`ProviderError`] it returns through
//! [`ProviderError::redact`], and the cassette recorder passes every line it writes
//! through [`redact_json`]. Both end in [`redact`].
//!
//! Redaction comes before any cut: server text is quoted whole while an error is built
//! and the message is shortened only here, once the key is gone, so a key that
//! straddles the cut cannot leave its first part behind.

use std::borrow::Cow;

use super::error::{ProviderError, shorten};
use super::http::Secret;

/// What the key is replaced by.
pub const REDACTED: &str = "[REDACTED]";

/// Longest message (in bytes) of an error from a server, applied after redaction.
pub const MAX_MESSAGE: usize = 500;

/// `text` with every occurrence of the key replaced by [`REDACTED`].
pub fn redact<'t>(text: &'t str, key: Option<&Secret>) -> Cow<'t, str> {
    match key.map(Secret::expose).filter(|k| !k.is_empty()) {
        Some(key) if text.contains(key) => Cow::Owned(text.replace(key, REDACTED)),
        _ => Cow::Borrowed(text),
    }
}

/// [`redact`] for JSON text, where the key may also appear escaped (`\"`, `\\`).
pub fn redact_json<'t>(json: &'t str, key: Option<&Secret>) -> Cow<'t, str> {
    let plain = redact(json, key);
    let escaped = key
        .and_then(|k| serde_json::to_string(k.expose()).ok())
        .map(|quoted| Secret::new(quoted[1..quoted.len() - 1].to_string()));
    match escaped {
        Some(escaped) if Some(&escaped) != key => {
            Cow::Owned(redact(&plain, Some(&escaped)).into_owned())
        }
        _ => plain,
    }
}

impl ProviderError {
    /// Replaces the key in the message and hint, then cuts the message to
    /// [`MAX_MESSAGE`] bytes.
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
        Secret::new("sk-abc".into())
    }

    #[test]
    fn every_occurrence_goes() {
        assert_eq!(
            redact("sk-abc and sk-abc", Some(&key())),
            "[REDACTED] and [REDACTED]"
        );
        assert!(matches!(redact("nothing", Some(&key())), Cow::Borrowed(_)));
        assert_eq!(redact("sk-abc", None), "sk-abc");
        assert_eq!(redact("x", Some(&Secret::new(String::new()))), "x");
    }

    #[test]
    fn escaped_keys_go_from_json() {
        let key = Secret::new(r#"k"e\y"#.into());
        let json = serde_json::json!({"m": key.expose()}).to_string();
        assert_eq!(redact_json(&json, Some(&key)), r#"{"m":"[REDACTED]"}"#);
    }

    #[test]
    fn a_key_across_the_cut_goes_whole() {
        let message = format!("{}sk-abc tail", "x".repeat(MAX_MESSAGE - 3));
        let e = ProviderError::new(ErrorKind::Server, "openai", message).redact(Some(&key()));
        assert!(!e.message.contains("sk-"), "{}", e.message);
        assert!(e.message.len() <= MAX_MESSAGE + 3, "{}", e.message.len());
    }
}
