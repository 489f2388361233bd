//! One call through its agent's guardrails, in this order: the `permissions` rules on the
//! model's arguments (a denial ends it here); the `pre_tool_use` hooks, which may deny it,
//! let it through or rewrite its arguments; the rules again on rewritten arguments; then,
//! for a call the rules sent to `ask`, a hook's `allow` or a person's approval. After it
//! ran, its result passes the redaction and the `post_tool_use` hooks. Every decision is
//! an `agent.tool.permission.decided` event, every hook's run an `agent.tool.hook.completed`
//! event, and both are noted in the result's metadata.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::agent::AgentTool;
use super::effect::ToolEffect;
use super::events::{HookCompleted, PermissionDecided};
use super::scheduler::Authorization;
use super::subagent::CallerRun;

use crate::policy::hooks::{CallHookInput, Checked, HookReport};
use crate::policy::{ApprovalRequest, Decider, Decision, HookOutcome, ToolPolicy, Verdict};
use crate::provider::ToolCall;
use crate::tools::ToolOutput;

/// One call of one tool, and the guardrails it goes through.
pub struct CallGuard<'a> {
    pub policy: &'a ToolPolicy,
    pub caller: &'a CallerRun,
    pub tool: &'a AgentTool,
    pub call: &'a ToolCall,
    /// A person approved the call on `runner resume`: the rules are not asked again.
    pub approved: bool,
}

impl CallGuard<'_> {
    /// Whether the call runs, and with which arguments.
    pub async fn authorize(&self) -> Authorization {
        let mut note = Map::new();
        let mut decision = match self.approved {
            true => {
                let approved = json!({"decision": Verdict::Allow, "by": Decider::Resume});
                note.insert("permission".into(), approved);
                None
            }
            false => self.rule(&self.call.arguments),
        };
        if let Some(denied) = decision.take_if(|d| d.verdict == Verdict::Deny) {
            return self.refuse(&denied, note);
        }
        let (arguments, rewritten, allowed_by) = match self.pre_hooks(&mut note).await {
            Checked::Go {
                arguments,
                rewritten,
                allowed_by,
            } => (arguments, rewritten, allowed_by),
            Checked::Deny { reason, hook } => {
                let denied = hook_decision(Verdict::Deny, hook, Some(reason));
                return self.refuse(&denied, note);
            }
        };
        if rewritten {
            // Whatever a hook wrote, the rules hold for what will run.
            let again = self.rule(&arguments);
            if let Some(denied) = again.as_ref().filter(|d| d.verdict == Verdict::Deny) {
                return self.refuse(denied, note);
            }
            if !self.approved {
                decision = again;
            }
        }
        let arguments = rewritten.then_some(arguments);
        let Some(decision) = decision else {
            return Authorization::Run { note, arguments };
        };
        self.settle(decision, allowed_by, note, arguments)
    }

    /// A call's result through the `post_tool_use` hooks, which see it redacted (the
    /// scheduler redacts every result once more after this, what the hooks wrote too).
    pub async fn after(&self, output: ToolOutput) -> ToolOutput {
        if self.policy.hooks.post_tool_use.is_empty() {
            return output;
        }
        let output = self.policy.redactor.redact(output);
        let normalize = |arguments: &Value| self.normalized(arguments);
        let input = self.hook_input();
        let after = (self.policy.hooks)
            .after_call(&input, &self.call.arguments, &normalize, output)
            .await;
        let mut output = after.output;
        if let Some(noted) = self.reported(&after.reports) {
            output.metadata.insert("hooks".into(), noted);
        }
        output
    }

    /// Settles a call the rules decided: one that asks is let through by a hook's `allow`,
    /// or put to whoever can approve it (or it waits).
    fn settle(
        &self,
        mut decision: Decision,
        allowed_by: Option<String>,
        mut note: Map<String, Value>,
        arguments: Option<Arc<Value>>,
    ) -> Authorization {
        // Announced first, so progress on a terminal makes way for a question.
        note.extend(self.decided(&decision));
        if decision.verdict == Verdict::Ask {
            decision = match allowed_by {
                Some(hook) => hook_decision(Verdict::Allow, hook, None),
                None => self.policy.approve(&ApprovalRequest {
                    tool: &self.call.name,
                    call_id: &self.call.id,
                    arguments: arguments.as_deref().unwrap_or(&self.call.arguments),
                    rule: &decision.rule,
                }),
            };
            if decision.verdict != Verdict::Ask {
                note.extend(self.decided(&decision));
            }
        }
        match decision.verdict {
            Verdict::Allow => Authorization::Run { note, arguments },
            Verdict::Deny => refusal(&decision, note),
            Verdict::Ask => Authorization::Wait(ToolEffect::ApprovalRequired {
                rule: decision.rule,
            }),
        }
    }

    /// The `pre_tool_use` hooks' verdict; what they did is noted in `note`.
    async fn pre_hooks(&self, note: &mut Map<String, Value>) -> Checked {
        let arguments = self.call.arguments.clone();
        if self.policy.hooks.pre_tool_use.is_empty() {
            return Checked::Go {
                arguments,
                rewritten: false,
                allowed_by: None,
            };
        }
        let normalize = |arguments: &Value| self.normalized(arguments);
        let input = self.hook_input();
        let before = (self.policy.hooks)
            .before_call(&input, arguments, &normalize)
            .await;
        if let Some(noted) = self.reported(&before.reports) {
            note.insert("hooks".into(), noted);
        }
        before.checked
    }

    /// What the rules say about the call with `arguments` (as the tool will use them).
    fn rule(&self, arguments: &Value) -> Option<Decision> {
        // Without rules nothing is matched, so the path is not resolved for them: the tool
        // resolves it once, when it runs.
        self.policy.permissions.as_ref()?;
        self.policy
            .rule(&self.call.name, &self.normalized(arguments))
    }

    /// The arguments as patterns see them: paths resolved in the workspace, a command's
    /// words re-joined.
    fn normalized(&self, arguments: &Value) -> Value {
        match self.tool {
            AgentTool::Plain(tool) => tool.policy_arguments(arguments),
            _ => None,
        }
        .unwrap_or_else(|| arguments.clone())
    }

    /// Announces a denial: the call does not run.
    fn refuse(&self, decision: &Decision, mut note: Map<String, Value>) -> Authorization {
        note.extend(self.decided(decision));
        refusal(decision, note)
    }

    /// Announces a decision; the note it leaves in the call's result.
    fn decided(&self, decision: &Decision) -> Map<String, Value> {
        self.caller.ctx.emitter.emit(PermissionDecided {
            step_id: self.caller.step_id.clone(),
            tool_call_id: self.call.id.clone(),
            tool_name: self.call.name.clone(),
            decision: decision.verdict,
            rule: decision.rule.clone(),
            by: decision.by,
            reason: decision.reason.clone(),
        });
        let note = json!({"decision": decision.verdict, "rule": decision.rule, "by": decision.by});
        Map::from_iter([("permission".to_string(), note)])
    }

    /// Announces each hook's run; the note for the result: the hooks that did something.
    fn reported(&self, reports: &[HookReport]) -> Option<Value> {
        for report in reports {
            self.caller.ctx.emitter.emit(HookCompleted {
                step_id: self.caller.step_id.clone(),
                tool_call_id: self.call.id.clone(),
                tool_name: self.call.name.clone(),
                hook: report.point,
                command: report.command.clone(),
                outcome: report.outcome,
                duration_ms: report.duration.as_millis() as u64,
                detail: report.detail.clone(),
            });
        }
        let acted: Vec<Value> = reports
            .iter()
            .filter(|report| report.outcome != HookOutcome::NoChange)
            .map(|report| {
                json!({"hook": report.point, "command": report.command, "outcome": report.outcome})
            })
            .collect();
        (!acted.is_empty()).then_some(Value::Array(acted))
    }

    fn hook_input(&self) -> CallHookInput<'_> {
        let ctx = &self.caller.ctx;
        CallHookInput {
            run_id: &ctx.emitter.run_id,
            session_id: &ctx.emitter.thread_id,
            agent: &ctx.emitter.agent,
            depth: ctx.emitter.depth,
            tool: &self.call.name,
            call_id: &self.call.id,
            log_dir: ctx.run_dir.as_deref(),
            cancel: &ctx.cancel,
        }
    }
}

/// A call that does not run: its result is the reason of the (announced) denial.
fn refusal(decision: &Decision, note: Map<String, Value>) -> Authorization {
    let reason = decision.reason.clone().unwrap_or_else(|| "denied".into());
    let mut output = ToolOutput::error(reason);
    output.metadata.extend(note);
    Authorization::Refuse(output)
}

/// A decision a `pre_tool_use` hook took.
fn hook_decision(verdict: Verdict, hook: String, reason: Option<String>) -> Decision {
    Decision {
        verdict,
        rule: format!("pre_tool_use: {hook}"),
        by: Decider::Hook,
        reason,
    }
}
