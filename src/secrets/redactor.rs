//! Text cleaned of secrets: the values this process holds ([`super::replace`]), the
//! built-in patterns of common token formats, and an agent's own `redact:` patterns. The
//! tool-output redactor (`policy::Redactor`) and the diagnostics of an agent file
//! (`spec::diagnostic::redacted`) both use it.

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

/// The built-in patterns and an agent's own, as one regular expression.
#[derive(Debug, Clone)]
pub struct TextRedactor {
    pattern: Regex,
    /// The agent's own patterns (and its callers'), kept to combine with another's.
    extra: Vec<String>,
}

impl Default for TextRedactor {
    /// The built-in patterns alone. They are compiled once per process (a fifth of a
    /// millisecond and more); each redactor of them shares that.
    fn default() -> Self {
        static BUILT_IN_ONLY: std::sync::LazyLock<TextRedactor> = std::sync::LazyLock::new(|| {
            TextRedactor::compile(&[]).expect("the built-in patterns are valid")
        });
        BUILT_IN_ONLY.clone()
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
        let all: Vec<String> = BUILT_IN
            .iter()
            .map(|p| p.to_string())
            .chain(extra.iter().cloned())
            .map(|p| format!("(?:{p})"))
            .collect();
        let pattern = Regex::new(&all.join("|")).map_err(|e| e.to_string())?;
        Ok(TextRedactor {
            pattern,
            extra: extra.to_vec(),
        })
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
        match self.pattern.replace_all(text, REDACTED) {
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
