//! The last pass over what leaves the server: every text an answer holds goes through the
//! redactor's built-in patterns and the secret values this process knows (the API keys it
//! read, the server's own token), as events and transcripts already did.

use std::sync::OnceLock;

use serde_json::Value;

use crate::secrets::TextRedactor;

fn redactor() -> &'static TextRedactor {
    static REDACTOR: OnceLock<TextRedactor> = OnceLock::new();
    REDACTOR.get_or_init(TextRedactor::default)
}

/// `text` with every secret replaced.
pub fn clean_text(text: &str) -> String {
    redactor()
        .redact_text(text)
        .unwrap_or_else(|| text.to_string())
}

/// `value` with every string in it cleaned.
pub fn clean_value(mut value: Value) -> Value {
    redactor().redact_value(&mut value);
    value
}
