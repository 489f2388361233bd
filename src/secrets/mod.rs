//! The secret values this process holds, so that none of them leaves in a tool's result:
//! a program the agent may run can find them where the runner cannot hide them (the
//! environment of the process that started `runner`, of an MCP server, a `.env` file), and
//! whatever a result holds reaches the model, the events and the transcript.
//!
//! Known from the start: the values of the environment variables the children never get
//! (`*_API_KEY`, `*_TOKEN`, `API_KEY`, `NATS_PASSWORD`, see
//! [`is_secret_name`]). Added as they are read: each model's key (whatever
//! its variable is called), the environment values an MCP server's `headers` take, and
//! those its `env` takes under a name that looks secret ([`looks_secret`]) or from a
//! variable that does. The redactor ([`crate::policy::Redactor`]) replaces every one of them, wherever
//! it appears, before its patterns run.

mod redactor;

use std::sync::{Arc, OnceLock, RwLock};

use regex::Regex;

use crate::sync;
pub use redactor::TextRedactor;

/// The shortest secret (in characters) that is redacted anywhere, in tool results, logs,
/// errors and cassettes alike: a real key is far longer, and a shorter value is a dummy key
/// a local server takes (`x`, `none`, `EMPTY`) or an ordinary word, which replacing
/// everywhere would rewrite prompts and answers.
pub const MIN_SECRET_LEN: usize = 8;

/// What a secret is replaced by, wherever it is found.
pub const REDACTED: &str = "[REDACTED]";

/// Whether `value` is long enough to be redacted (see [`MIN_SECRET_LEN`]).
pub fn is_redactable(value: &str) -> bool {
    value.chars().count() >= MIN_SECRET_LEN
}

/// The environment variables that hold NATS credentials (`nats::connect` reads them): kept
/// from the tools and hooks a run starts, like model keys.
pub const NATS_CREDENTIAL_VARS: [&str; 4] =
    ["NATS_CREDS", "NATS_USER", "NATS_PASSWORD", "NATS_TOKEN"];

/// Whether the variable `name` holds a secret: the names `tools::scrub_env` drops.
pub fn is_secret_name(name: &str, deny: &[String]) -> bool {
    let upper = name.to_ascii_uppercase();
    upper == "OPENAI_API_KEY"
        || upper == "ANTHROPIC_API_KEY"
        || upper == "API_KEY"
        || upper.ends_with("_API_KEY")
        || upper.ends_with("_TOKEN")
        || NATS_CREDENTIAL_VARS.contains(&upper.as_str())
        || deny.iter().any(|d| d == name)
}

/// The values known, and one expression matching any of them (longest first, so a value
/// that contains another is replaced whole).
#[derive(Default)]
struct Known {
    values: Vec<String>,
    matcher: Option<Arc<Regex>>,
}

fn known() -> &'static RwLock<Known> {
    static KNOWN: OnceLock<RwLock<Known>> = OnceLock::new();
    KNOWN.get_or_init(|| {
        let from_env = std::env::vars_os()
            .filter(|(name, _)| is_secret_value(&name.to_string_lossy()))
            .filter_map(|(_, value)| value.into_string().ok());
        let mut known = Known::default();
        add(&mut known, from_env);
        RwLock::new(known)
    })
}

/// Whether the variable `name` holds a secret value: a name the children never get,
/// except `NATS_USER` (a name) and `NATS_CREDS` (a path; the file's seed and token are
/// redacted by pattern).
fn is_secret_value(name: &str) -> bool {
    is_secret_name(name, &[]) && !matches!(name, "NATS_USER" | "NATS_CREDS")
}

/// Whether a variable called `name` looks like it holds a credential: a name the children
/// never get, or one that says so (`KEY`, `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD`, `AUTH`,
/// `CREDENTIAL` in it, in any case).
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    is_secret_name(name, &[])
        || [
            "KEY",
            "TOKEN",
            "SECRET",
            "PASSWORD",
            "PASSWD",
            "AUTH",
            "CREDENTIAL",
        ]
        .iter()
        .any(|word| upper.contains(word))
}

/// Remembers `value` as a secret (trimmed; ignored when shorter than [`MIN_SECRET_LEN`]).
pub fn remember(value: &str) {
    remember_all([value.to_string()]);
}

/// Remembers each of `values`.
pub fn remember_all(values: impl IntoIterator<Item = String>) {
    let mut known = sync::write(known());
    add(&mut known, values.into_iter());
}

fn add(known: &mut Known, values: impl Iterator<Item = String>) {
    let before = known.values.len();
    for value in values {
        let value = value.trim();
        if value.chars().count() >= MIN_SECRET_LEN && !known.values.iter().any(|v| v == value) {
            known.values.push(value.to_string());
        }
    }
    if known.values.len() == before {
        return;
    }
    known.values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    let alternatives: Vec<String> = known.values.iter().map(|v| regex::escape(v)).collect();
    // Literal alternatives always compile; a value too large for the regex engine's
    // limits would be the only way to fail, and then the values known before stay.
    if let Ok(matcher) = Regex::new(&alternatives.join("|")) {
        known.matcher = Some(Arc::new(matcher));
    }
}

/// `text` with every known secret replaced by `mark`; `None` when it holds none.
pub fn replace(text: &str, mark: &str) -> Option<String> {
    let matcher = sync::read(known()).matcher.clone()?;
    match matcher.replace_all(text, mark) {
        std::borrow::Cow::Borrowed(_) => None,
        std::borrow::Cow::Owned(replaced) => Some(replaced),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_value_is_replaced_wherever_it_is_and_short_ones_are_not_taken() {
        remember("  corp-9f8e7d6c5b4a  ");
        remember("abc");
        remember("corp-9f8e7d6c5b4a-longer");
        assert_eq!(
            replace("a=corp-9f8e7d6c5b4a-longer b=corp-9f8e7d6c5b4a.", "[X]").unwrap(),
            "a=[X] b=[X]."
        );
        assert_eq!(replace("abc abc", "[X]"), None);
    }
}
