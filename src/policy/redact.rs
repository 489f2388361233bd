//! Secrets in tool outputs: a file the agent reads or a command it runs may print a token,
//! and whatever a result holds reaches the model, the events and the transcript. Each
//! result passes through the secret values the process holds (`crate::secrets`: model
//! keys, MCP tokens, NATS credentials), the built-in patterns for common token formats, and
//! the `redact:` patterns of the agent and of the agents that called it, before any of them
//! sees it.

use regex::Regex;
use serde_json::Value;

use crate::tools::ToolOutput;

/// What a secret is replaced by (the same mark as a provider key in an error).
pub const REDACTED: &str = crate::provider::redact::REDACTED;

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
pub struct Redactor {
    pattern: Regex,
    /// The agent's own patterns (and its callers'), kept to combine with another's.
    extra: Vec<String>,
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::new(&[]).expect("the built-in patterns are valid")
    }
}

impl Redactor {
    /// The built-ins and `extra` (regular expressions; the error names the one that is not).
    pub fn new(extra: &[String]) -> Result<Self, String> {
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
        Ok(Redactor {
            pattern,
            extra: extra.to_vec(),
        })
    }

    /// This redactor with the patterns of `caller` too: a sub-agent's results are redacted
    /// as its caller's are, whatever it declares itself.
    pub fn with_callers(&self, caller: &Redactor) -> Redactor {
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
        Redactor::new(&extra).unwrap_or_else(|_| self.clone())
    }

    /// `text` with every secret replaced by [`REDACTED`]; `None` when it holds none. The
    /// known values first, so one is replaced whole even where a pattern matches part of it.
    pub fn redact_text(&self, text: &str) -> Option<String> {
        let known = crate::secrets::replace(text, REDACTED);
        let text = known.as_deref().unwrap_or(text);
        match self.pattern.replace_all(text, REDACTED) {
            std::borrow::Cow::Borrowed(_) => known,
            std::borrow::Cow::Owned(redacted) => Some(redacted),
        }
    }

    /// The output with every string in its data, error and metadata redacted; how many
    /// strings changed is noted in the metadata (`redacted`).
    pub fn redact(&self, mut output: ToolOutput) -> ToolOutput {
        let mut changed = self.redact_value(&mut output.data);
        if let Some(error) = &mut output.error
            && let Some(redacted) = self.redact_text(error)
        {
            *error = redacted;
            changed += 1;
        }
        for value in output.metadata.values_mut() {
            changed += self.redact_value(value);
        }
        if changed > 0 {
            output
                .metadata
                .insert("redacted".into(), Value::from(changed));
        }
        output
    }

    fn redact_value(&self, value: &mut Value) -> usize {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn common_tokens_are_replaced_wherever_they_are() {
        let redactor = Redactor::default();
        let github = format!("ghp_{}", "a1B2".repeat(9));
        let output = ToolOutput::ok(json!({"env": format!("TOKEN={github}\n"), "n": 1}))
            .with_meta("stderr", "AKIAABCDEFGHIJKLMNOP leaked");
        let redacted = redactor.redact(output);
        assert_eq!(redacted.data["env"], "TOKEN=[REDACTED]\n");
        assert_eq!(redacted.metadata["stderr"], "[REDACTED] leaked");
        assert_eq!(redacted.metadata["redacted"], 2);
    }

    #[test]
    fn an_agents_own_patterns_add_to_the_built_ins() {
        let redactor = Redactor::new(&["acme-[0-9]{6}".into()]).unwrap();
        assert_eq!(
            redactor.redact_text("id acme-123456").unwrap(),
            "id [REDACTED]"
        );
        assert_eq!(redactor.redact_text("nothing here"), None);
        assert!(Redactor::new(&["(".into()]).unwrap_err().starts_with("`(`"));
    }
}
