//! Text cleaned of secrets: the values this process holds ([`super::replace`]), the
//! built-in patterns of common token formats, and an agent's own `redact:` patterns. The
//! tool-output redactor (`policy::Redactor`) and the diagnostics of an agent file
//! (`spec::diagnostic::redacted`) both use it.

use std::sync::{Arc, LazyLock, OnceLock};

use memchr::memmem;
use regex::Regex;
use serde_json::Value;

use super::REDACTED;

/// Token formats that are secrets wherever they appear.
const BUILT_IN: &[&str] = &[
    // Anthropic, then OpenAI (project and legacy) keys.
    r"sk-ant-[A-Za-z0-9_-]{20,}",
    r"sk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}",
    // GitHub tokens, classic and fine-grained.
    r"gh[pousr]_[A-Za-z0-9]{36,}",
    r"github_pat_[A-Za-z0-9_]{22,}",
    // GitLab, Slack, Google API, AWS access key ids.
    r"glpat-[A-Za-z0-9_-]{20,}",
    r"xox[abprs]-[A-Za-z0-9-]{10,}",
    r"AIza[0-9A-Za-z_-]{35}",
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    // JSON Web Tokens.
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    // PEM private keys, whole.
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    // NATS nkey seeds (user, account, operator, server, cluster, curve), as in a `.creds` file.
    r"\bS[UAONCX][A-Z2-7]{56}\b",
];

/// Text that holds none of these cannot match a built-in pattern: each pattern starts
/// with one of them. A redactor of the built-ins alone compiles them only once it meets
/// one, so a run whose texts hold none never pays the compile (about 0.3 ms, a seventh of
/// a one-step run's own instructions).
const TRIGGERS: &[&str] = &[
    "sk-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxa-",
    "xoxb-",
    "xoxp-",
    "xoxr-",
    "xoxs-",
    "AIza",
    "AKIA",
    "ASIA",
    "eyJ",
    "-----BEGIN ",
    "SU",
    "SA",
    "SO",
    "SN",
    "SC",
    "SX",
];

/// A vectorised search for each trigger, built once. `str::contains` builds its searcher at
/// every call: over a step's handful of short strings that setup was most of the cost, and
/// on long texts these searches are faster too (about 0.46 µs per KB against 1.25 for all
/// the triggers, measured from 8 bytes to 1 MB, slower only near 40 bytes: 0.15 µs against
/// 0.12). Aho-Corasick, tried before, was slower than either (1.7–2.2 µs per KB).
static TRIGGER_SEARCHES: LazyLock<Vec<memmem::Finder<'static>>> =
    LazyLock::new(|| TRIGGERS.iter().map(memmem::Finder::new).collect());

/// The built-in patterns and an agent's own, as one regular expression.
#[derive(Debug, Clone)]
pub struct TextRedactor {
    /// Compiled at once when the agent has patterns of its own, else at first need.
    pattern: Arc<OnceLock<Regex>>,
    /// The agent's own patterns (and its callers'), kept to combine with another's.
    extra: Vec<String>,
}

impl Default for TextRedactor {
    /// The built-in patterns alone, shared by every redactor of them in the process.
    fn default() -> Self {
        static BUILT_IN_ONLY: LazyLock<Arc<OnceLock<Regex>>> = LazyLock::new(Arc::default);
        TextRedactor {
            pattern: BUILT_IN_ONLY.clone(),
            extra: Vec::new(),
        }
    }
}

impl TextRedactor {
    /// The built-ins and `extra` (regular expressions; the error names the one that is not).
    pub fn new(extra: &[String]) -> Result<Self, String> {
        match extra.is_empty() {
            true => Ok(TextRedactor::default()),
            false => TextRedactor::compile(extra),
        }
    }

    fn compile(extra: &[String]) -> Result<Self, String> {
        for pattern in extra {
            Regex::new(pattern).map_err(|e| format!("`{pattern}`: {e}"))?;
        }
        let pattern = Regex::new(&combined(extra)).map_err(|e| e.to_string())?;
        Ok(TextRedactor {
            pattern: Arc::new(OnceLock::from(pattern)),
            extra: extra.to_vec(),
        })
    }

    /// The regular expression, compiled now if it was not.
    fn pattern(&self) -> &Regex {
        self.pattern.get_or_init(|| {
            Regex::new(&combined(&self.extra)).expect("the built-in patterns are valid")
        })
    }

    /// Whether a pattern could match `text`: always with patterns of the agent's own.
    ///
    /// Each trigger is searched for in turn, with a searcher built once per process
    /// ([`TRIGGER_SEARCHES`]): over these two dozen triggers that is faster than an
    /// Aho-Corasick automaton, which also took 0.06 to 0.17 ms to build in every run that
    /// redacted anything.
    fn may_match(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        !self.extra.is_empty()
            || TRIGGER_SEARCHES
                .iter()
                .any(|trigger| trigger.find(bytes).is_some())
    }

    /// This redactor with the patterns of `caller` too: a sub-agent's results are redacted
    /// as its caller's are, whatever it declares itself.
    pub fn with_callers(&self, caller: &TextRedactor) -> TextRedactor {
        let missing: Vec<&String> = caller
            .extra
            .iter()
            .filter(|p| !self.extra.contains(p))
            .collect();
        if missing.is_empty() {
            return self.clone();
        }
        let extra: Vec<String> = self.extra.iter().chain(missing).cloned().collect();
        // Each pattern compiled before, so together they do too.
        TextRedactor::new(&extra).unwrap_or_else(|_| self.clone())
    }

    /// `text` with every secret replaced by [`REDACTED`]; `None` when it holds none. The
    /// known values first, so one is replaced whole even where a pattern matches part of it.
    pub fn redact_text(&self, text: &str) -> Option<String> {
        let known = super::replace(text, REDACTED);
        let text = known.as_deref().unwrap_or(text);
        if !self.may_match(text) {
            return known;
        }
        match self.pattern().replace_all(text, REDACTED) {
            std::borrow::Cow::Borrowed(_) => known,
            std::borrow::Cow::Owned(redacted) => Some(redacted),
        }
    }

    /// Redacts every string in `value`, at any depth; how many changed.
    pub fn redact_value(&self, value: &mut Value) -> usize {
        match value {
            Value::String(text) => match self.redact_text(text) {
                Some(redacted) => {
                    *text = redacted;
                    1
                }
                None => 0,
            },
            Value::Array(items) => items.iter_mut().map(|v| self.redact_value(v)).sum(),
            Value::Object(map) => map.values_mut().map(|v| self.redact_value(v)).sum(),
            _ => 0,
        }
    }
}

/// The built-in patterns and `extra`, as one alternation.
fn combined(extra: &[String]) -> String {
    let all = BUILT_IN
        .iter()
        .copied()
        .chain(extra.iter().map(String::as_str));
    all.map(|pattern| format!("(?:{pattern})"))
        .collect::<Vec<_>>()
        .join("|")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A token of each built-in pattern's format, in that order.
    const SAMPLES: &[&str] = &[
        "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
        "sk-proj-abcdefghijklmnopqrstuvwxyz",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "github_pat_abcdefghijklmnopqrstuvwxyz",
        "glpat-abcdefghijklmnopqrstu",
        "xoxb-1234567890-abc",
        "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
        "AKIAABCDEFGHIJKLMNOP",
        "eyJhbGciOiJI.eyJzdWIiOiIx.abcdefghijk",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
        "SUAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    ];

    #[test]
    fn every_built_in_format_is_found_behind_its_trigger_and_redacted() {
        assert_eq!(SAMPLES.len(), BUILT_IN.len());
        let redactor = TextRedactor::default();
        for (sample, pattern) in SAMPLES.iter().zip(BUILT_IN) {
            let text = format!("token: {sample} end");
            assert!(
                redactor.may_match(&text),
                "{pattern}: no trigger in {sample}"
            );
            let redacted = redactor.redact_text(&text).unwrap_or_default();
            assert_eq!(redacted, format!("token: {REDACTED} end"), "{pattern}");
        }
    }

    #[test]
    fn text_without_a_trigger_is_not_searched() {
        let redactor = TextRedactor::default();
        assert!(!redactor.may_match("agent.yaml\n.runner/\nrun/ done"));
        assert_eq!(redactor.redact_text("agent.yaml"), None);
        let own = TextRedactor::new(&["internal-[0-9]+".to_string()]).unwrap();
        assert!(own.may_match("agent.yaml"));
        assert_eq!(
            own.redact_text("id internal-42").unwrap(),
            format!("id {REDACTED}")
        );
    }
}
