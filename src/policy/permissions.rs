//! `permissions:` as the engine applies it: ordered `deny`, `allow` and `ask` patterns and
//! a default for calls none matches. Deny wins over allow, allow over ask, so a broad
//! `ask: [write_file]` can sit beside a narrow `allow: [write_file:path=src/**]`.

use serde_json::Value;

use crate::spec::pattern::Pattern;
pub use crate::spec::permissions::Verdict;

/// The rules of one agent.
#[derive(Debug, Clone, Default)]
pub struct Permissions {
    pub deny: Vec<Pattern>,
    pub allow: Vec<Pattern>,
    pub ask: Vec<Pattern>,
    /// For calls no pattern matches.
    pub default: Verdict,
}

/// What the rules say about one call, and which rule said it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ruling {
    pub verdict: Verdict,
    /// `deny: shell:command=git push*`; `None` when the default decided.
    pub rule: Option<String>,
}

impl Ruling {
    /// The rule, or `default: VERDICT`, as events and messages name it.
    pub fn source(&self) -> String {
        self.rule
            .clone()
            .unwrap_or_else(|| format!("default: {}", self.verdict))
    }
}

impl Permissions {
    /// Rules from pattern texts; the first pattern that does not parse is the error.
    pub fn parse(
        deny: &[String],
        allow: &[String],
        ask: &[String],
        default: Verdict,
    ) -> Result<Self, String> {
        let parse = |texts: &[String]| {
            texts
                .iter()
                .map(|text| Pattern::parse(text).map_err(|e| format!("`{text}`: {e}")))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Permissions {
            deny: parse(deny)?,
            allow: parse(allow)?,
            ask: parse(ask)?,
            default,
        })
    }

    /// Decides a call of `tool` with its (normalised) `arguments`.
    pub fn decide(&self, tool: &str, arguments: &Value) -> Ruling {
        let lists = [
            (Verdict::Deny, &self.deny),
            (Verdict::Allow, &self.allow),
            (Verdict::Ask, &self.ask),
        ];
        for (verdict, patterns) in lists {
            if let Some(pattern) = patterns.iter().find(|p| p.matches(tool, arguments)) {
                return Ruling {
                    verdict,
                    rule: Some(format!("{verdict}: {pattern}")),
                };
            }
        }
        Ruling {
            verdict: self.default,
            rule: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(deny: &[&str], allow: &[&str], ask: &[&str], default: Verdict) -> Permissions {
        let owned = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Permissions::parse(&owned(deny), &owned(allow), &owned(ask), default).unwrap()
    }

    #[test]
    fn deny_wins_then_allow_then_ask_then_the_default() {
        let p = rules(
            &["shell:command=git push*"],
            &["shell", "write_file:path=src/**"],
            &["write_file"],
            Verdict::Deny,
        );
        let decide = |tool, args| p.decide(tool, &args).verdict;
        assert_eq!(
            decide("shell", json!({"command": "git push"})),
            Verdict::Deny
        );
        assert_eq!(
            decide("shell", json!({"command": "cargo test"})),
            Verdict::Allow
        );
        assert_eq!(
            decide("write_file", json!({"path": "src/x.rs"})),
            Verdict::Allow
        );
        assert_eq!(
            decide("write_file", json!({"path": "README.md"})),
            Verdict::Ask
        );
        assert_eq!(decide("http_get", json!({})), Verdict::Deny);
        assert_eq!(
            p.decide("shell", &json!({"command": "git push"})).source(),
            "deny: shell:command=git push*"
        );
        assert_eq!(p.decide("http_get", &json!({})).source(), "default: deny");
    }
}
