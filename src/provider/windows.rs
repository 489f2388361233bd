//! The context windows of well-known models, for a `model` without `context_window`.
//!
//! Matched on the model name's start (after any `vendor/` prefix, as OpenRouter and vLLM
//! spell names), longest prefix first; the values are the providers' published windows,
//! in tokens. A name not in the table has no known window: only a provider's
//! context-length error compacts its history. `docs/providers.md` lists the same table.

/// `(name prefix, window)`, longer prefixes before the shorter ones they start with.
pub const KNOWN_WINDOWS: [(&str, u64); 22] = [
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude-", 200_000),
    ("gemini-1.5", 1_048_576),
    ("gemini-2", 1_048_576),
    ("llama-3.1", 131_072),
    ("llama-3.2", 131_072),
    ("llama-3.3", 131_072),
    ("llama3.1", 131_072),
    ("llama3.2", 131_072),
    ("llama3.3", 131_072),
    ("mistral-large", 131_072),
    ("mistral-small", 131_072),
    ("deepseek-chat", 65_536),
    ("deepseek-reasoner", 65_536),
    ("qwen2.5", 32_768),
    ("qwen3", 40_960),
];

/// The window of a model named `name`, when the table knows it.
pub fn known_window(name: &str) -> Option<u64> {
    let name = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
    KNOWN_WINDOWS
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, window)| *window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_matched_on_their_start_after_a_vendor() {
        assert_eq!(known_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(known_window("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(known_window("anthropic/claude-sonnet-4-5"), Some(200_000));
        assert_eq!(known_window("Qwen/Qwen2.5-7B-Instruct"), Some(32_768));
        assert_eq!(known_window("my-finetune"), None);
    }
}
