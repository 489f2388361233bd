//! Secrets in tool outputs: a file the agent reads or a command it runs may print a token,
//! and whatever a result holds reaches the model, the events and the transcript. Each
//! result passes through the secret values the process holds (`crate::secrets`: model
//! keys, MCP tokens, NATS credentials), the built-in patterns for common token formats, and
//! the `redact:` patterns of the agent and of the agents that called it, before any of them
//! sees it.

use serde_json::Value;

use crate::secrets::TextRedactor;
use crate::tools::ToolOutput;

/// The built-in patterns and an agent's own, applied to a tool's whole output.
#[derive(Debug, Clone, Default)]
pub struct Redactor(TextRedactor);

impl Redactor {
    /// The built-ins and `extra` (regular expressions; the error names the one that is not).
    pub fn new(extra: &[String]) -> Result<Self, String> {
        TextRedactor::new(extra).map(Redactor)
    }

    /// This redactor with the patterns of `caller` too: a sub-agent's results are redacted
    /// as its caller's are, whatever it declares itself.
    pub fn with_callers(&self, caller: &Redactor) -> Redactor {
        Redactor(self.0.with_callers(&caller.0))
    }

    /// `text` with every secret replaced by `[REDACTED]`; `None` when it holds none.
    pub fn redact_text(&self, text: &str) -> Option<String> {
        self.0.redact_text(text)
    }

    /// The output with every string in its data, error and metadata redacted; how many
    /// strings changed is noted in the metadata (`redacted`).
    pub fn redact(&self, mut output: ToolOutput) -> ToolOutput {
        let mut changed = self.0.redact_value(&mut output.data);
        if let Some(error) = &mut output.error
            && let Some(redacted) = self.redact_text(error)
        {
            *error = redacted;
            changed += 1;
        }
        for value in output.metadata.values_mut() {
            changed += self.0.redact_value(value);
        }
        if changed > 0 {
            output
                .metadata
                .insert("redacted".into(), Value::from(changed));
        }
        output
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
