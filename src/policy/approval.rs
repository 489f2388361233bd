//! Who settles a call that `permissions` sends to `ask`: the answers file's `approvals`,
//! `--yes`, or the person at the terminal, asked in turn. When none of them can, the run
//! pauses (exit 4) and `runner resume --approve/--deny` settles the calls.

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::spec::pattern::Pattern;
use crate::sync::lock;

/// Who or what decided a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decider {
    /// A `permissions` rule (or the default) decided alone.
    Rule,
    /// The person, at the terminal.
    Terminal,
    /// An earlier "always" at the terminal, for this tool in this run.
    Always,
    /// The `approvals` of `--answers FILE`.
    Answers,
    /// `--yes`.
    Yes,
    /// `runner resume --approve/--deny`.
    Resume,
    /// A `pre_tool_use` hook.
    Hook,
}

/// A call waiting for a decision.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalRequest<'a> {
    pub tool: &'a str,
    pub call_id: &'a str,
    /// As the model gave them (what a person should see).
    pub arguments: &'a Value,
    /// The rule that asked, e.g. `ask: write_file`.
    pub rule: &'a str,
}

/// A decision on a call that asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// `None`: approved; `Some(reason)`: denied, the reason going to the model.
    pub denied: Option<String>,
    pub by: Decider,
    /// Approve every later call of this tool in this run without asking.
    pub always: bool,
}

impl Approval {
    pub fn approved(by: Decider) -> Self {
        Approval {
            denied: None,
            by,
            always: false,
        }
    }

    pub fn denied(by: Decider, reason: impl Into<String>) -> Self {
        Approval {
            denied: Some(reason.into()),
            by,
            always: false,
        }
    }
}

/// One way of settling a call that asked; `None` when it cannot.
pub trait Approver: Send + Sync {
    fn decide(&self, request: &ApprovalRequest<'_>) -> Option<Approval>;
}

/// The run's approvers, asked in order, and the tools approved "always" so far.
#[derive(Default)]
pub struct Approvals {
    sources: Vec<Arc<dyn Approver>>,
    always: Mutex<HashSet<String>>,
}

impl Approvals {
    pub fn new(sources: Vec<Arc<dyn Approver>>) -> Self {
        Approvals {
            sources,
            always: Mutex::default(),
        }
    }

    /// The first source's decision; `None`: nobody could decide, so the run must pause.
    pub fn decide(&self, request: &ApprovalRequest<'_>) -> Option<Approval> {
        let mut always = lock(&self.always);
        if always.contains(request.tool) {
            return Some(Approval::approved(Decider::Always));
        }
        let approval = self.sources.iter().find_map(|s| s.decide(request))?;
        if approval.always && approval.denied.is_none() {
            always.insert(request.tool.to_string());
        }
        Some(approval)
    }
}

/// `--yes`: every call that asks is approved.
pub struct ApproveAll;

impl Approver for ApproveAll {
    fn decide(&self, _request: &ApprovalRequest<'_>) -> Option<Approval> {
        Some(Approval::approved(Decider::Yes))
    }
}

/// The `approvals` of an answers file: calls to approve and to deny, as permission
/// patterns; deny wins.
pub struct ApprovalRules {
    approve: Vec<Pattern>,
    deny: Vec<Pattern>,
}

impl ApprovalRules {
    /// From the answers file's `approvals: {approve: [..], deny: [..]}` value.
    pub fn from_value(value: &Value) -> Result<Self, String> {
        let Value::Object(map) = value else {
            return Err("`approvals` must be a mapping with `approve` and `deny` lists".into());
        };
        if let Some(key) = map
            .keys()
            .find(|k| !matches!(k.as_str(), "approve" | "deny"))
        {
            return Err(format!(
                "`approvals` has an unknown key `{key}`; it takes `approve` and `deny`"
            ));
        }
        let list = |key: &str| -> Result<Vec<Pattern>, String> {
            match map.get(key) {
                None => Ok(Vec::new()),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|item| match item {
                        Value::String(text) => Pattern::parse(text)
                            .map_err(|e| format!("`approvals.{key}`: `{text}`: {e}")),
                        other => Err(format!("`approvals.{key}`: {other} is not a pattern")),
                    })
                    .collect(),
                Some(_) => Err(format!("`approvals.{key}` must be a list of patterns")),
            }
        };
        Ok(ApprovalRules {
            approve: list("approve")?,
            deny: list("deny")?,
        })
    }
}

impl Approver for ApprovalRules {
    fn decide(&self, request: &ApprovalRequest<'_>) -> Option<Approval> {
        let matching = |patterns: &[Pattern]| {
            patterns
                .iter()
                .find(|p| p.matches(request.tool, request.arguments))
                .map(|p| p.to_string())
        };
        if let Some(pattern) = matching(&self.deny) {
            let reason = format!("denied by the answers file (`{pattern}`)");
            return Some(Approval::denied(Decider::Answers, reason));
        }
        matching(&self.approve).map(|_| Approval::approved(Decider::Answers))
    }
}

/// Asks the person on the terminal, one call at a time.
#[derive(Default)]
pub struct TerminalApprover {
    asking: Mutex<()>,
}

impl Approver for TerminalApprover {
    fn decide(&self, request: &ApprovalRequest<'_>) -> Option<Approval> {
        let _one_at_a_time = lock(&self.asking);
        let mut stderr = std::io::stderr();
        let arguments = serde_json::to_string_pretty(request.arguments).unwrap_or_default();
        let _ = write!(
            stderr,
            "\n? `{}` needs your approval ({})\n{arguments}\n  y: yes, once   a: always `{}` in this run   n: no\n> ",
            request.tool, request.rule, request.tool
        );
        let _ = stderr.flush();
        let answer = read_line()?;
        match answer.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Some(Approval::approved(Decider::Terminal)),
            "a" | "always" => Some(Approval {
                always: true,
                ..Approval::approved(Decider::Terminal)
            }),
            _ => {
                let _ = write!(stderr, "reason (for the model)> ");
                let _ = stderr.flush();
                let reason = read_line().unwrap_or_default();
                let reason = match reason.trim() {
                    "" => "denied by the user".to_string(),
                    given => format!("denied by the user: {given}"),
                };
                Some(Approval::denied(Decider::Terminal, reason))
            }
        }
    }
}

fn read_line() -> Option<String> {
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answers_files_approvals_deny_first() {
        let rules = ApprovalRules::from_value(&json!({
            "approve": ["write_file:path=src/**"],
            "deny": ["write_file:path=src/secret*"],
        }))
        .unwrap();
        let request = |path: &'static str| {
            let arguments = Box::leak(Box::new(json!({"path": path})));
            rules.decide(&ApprovalRequest {
                tool: "write_file",
                call_id: "c1",
                arguments,
                rule: "ask: write_file",
            })
        };
        assert_eq!(
            request("src/a.rs"),
            Some(Approval::approved(Decider::Answers))
        );
        assert!(request("src/secret.rs").unwrap().denied.is_some());
        assert_eq!(request("README.md"), None);
        assert!(ApprovalRules::from_value(&json!({"allow": []})).is_err());
    }

    #[test]
    fn always_approves_the_tool_for_the_rest_of_the_run() {
        struct Once(Mutex<bool>);
        impl Approver for Once {
            fn decide(&self, _: &ApprovalRequest<'_>) -> Option<Approval> {
                let mut asked = self.0.lock().unwrap();
                (!*asked).then(|| {
                    *asked = true;
                    Approval {
                        always: true,
                        ..Approval::approved(Decider::Terminal)
                    }
                })
            }
        }
        let approvals = Approvals::new(vec![Arc::new(Once(Mutex::new(false)))]);
        let arguments = json!({});
        let request = ApprovalRequest {
            tool: "shell",
            call_id: "c",
            arguments: &arguments,
            rule: "ask: shell",
        };
        assert_eq!(approvals.decide(&request).unwrap().by, Decider::Terminal);
        assert_eq!(approvals.decide(&request).unwrap().by, Decider::Always);
    }
}
