//! The hooks of one tool call: `pre_tool_use` before it runs (after `permissions` let it),
//! `post_tool_use` after, before its result reaches anyone. Hooks run one after another in
//! the order written; each sees the call as the hooks before it left it.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::watch;

use super::answer::{HookDecision, PostToolAnswer, PreToolAnswer, read};
use super::invoke::HookScene;
use super::{HookFailure, HookOutcome, HookPoint, HookReport, Hooks, OnError, ToolHook};
use crate::tools::ToolOutput;

/// The call a hook is told about, and where its run belongs.
pub struct CallHookInput<'a> {
    pub run_id: &'a str,
    pub session_id: &'a str,
    pub agent: &'a str,
    pub depth: u32,
    pub tool: &'a str,
    pub call_id: &'a str,
    /// The run directory (`hooks.log`), if there is one.
    pub log_dir: Option<&'a Path>,
    pub cancel: &'a watch::Receiver<bool>,
}

/// The arguments as patterns match them (paths resolved in the workspace, …).
pub type Normalize<'a> = &'a (dyn Fn(&Value) -> Value + Sync);

/// What `pre_tool_use` decided, and what each hook did.
pub struct BeforeCall {
    pub checked: Checked,
    pub reports: Vec<HookReport>,
}

/// A call after its `pre_tool_use` hooks.
#[derive(Debug, Clone, PartialEq)]
pub enum Checked {
    /// It may run, with these arguments (rewritten when a hook changed them);
    /// `allowed_by`: the hook that said `allow`, if one did.
    Go {
        arguments: Arc<Value>,
        rewritten: bool,
        allowed_by: Option<String>,
    },
    /// It does not run; the model is told `reason`; `hook` is the one that decided.
    Deny { reason: String, hook: String },
}

/// A result after its `post_tool_use` hooks, and what each hook did.
pub struct AfterCall {
    pub output: ToolOutput,
    pub reports: Vec<HookReport>,
}

impl Hooks {
    /// Runs the `pre_tool_use` hooks that match the call.
    pub async fn before_call(
        &self,
        call: &CallHookInput<'_>,
        arguments: Arc<Value>,
        normalize: Normalize<'_>,
    ) -> BeforeCall {
        let (mut arguments, mut rewritten, mut allowed_by) = (arguments, false, None);
        let mut reports = Vec::new();
        for hook in &self.pre_tool_use {
            let resolved = normalize(&arguments);
            if !hook.applies(call.tool, &resolved) {
                continue;
            }
            let input = call.stdin(HookPoint::PreToolUse, (&arguments, &resolved), None);
            let (answer, report) = self
                .ask::<PreToolAnswer>((hook, HookPoint::PreToolUse), call, &input)
                .await;
            let label = report.command.clone();
            let answer = match answer {
                Ok(answer) => answer,
                Err(failure) => {
                    reports.push(report);
                    if hook.hook.on_error == OnError::Deny {
                        let reason = format!("the pre_tool_use hook `{label}` failed: {failure}");
                        let checked = Checked::Deny {
                            reason,
                            hook: label,
                        };
                        return BeforeCall { checked, reports };
                    }
                    continue;
                }
            };
            if answer.decision == Some(HookDecision::Deny) {
                let reason = match answer.reason {
                    Some(reason) => format!("denied by the pre_tool_use hook `{label}`: {reason}"),
                    None => format!("denied by the pre_tool_use hook `{label}`"),
                };
                reports.push(report.with(HookOutcome::Denied, Some(reason.clone())));
                let checked = Checked::Deny {
                    reason,
                    hook: label,
                };
                return BeforeCall { checked, reports };
            }
            let outcome = match (answer.arguments, answer.decision) {
                (Some(new), _) => {
                    arguments = Arc::new(Value::Object(new));
                    rewritten = true;
                    HookOutcome::Rewrote
                }
                (None, Some(HookDecision::Allow)) => HookOutcome::Allowed,
                (None, _) => HookOutcome::NoChange,
            };
            if answer.decision == Some(HookDecision::Allow) {
                allowed_by = Some(label);
            }
            reports.push(report.with(outcome, None));
        }
        let checked = Checked::Go {
            arguments,
            rewritten,
            allowed_by,
        };
        BeforeCall { checked, reports }
    }

    /// Runs the `post_tool_use` hooks that match the call on its result.
    pub async fn after_call(
        &self,
        call: &CallHookInput<'_>,
        arguments: &Value,
        normalize: Normalize<'_>,
        mut output: ToolOutput,
    ) -> AfterCall {
        let mut reports = Vec::new();
        let normalized = normalize(arguments);
        for hook in &self.post_tool_use {
            if !hook.applies(call.tool, &normalized) {
                continue;
            }
            let result = serde_json::to_value(&output).unwrap_or_default();
            let input = call.stdin(
                HookPoint::PostToolUse,
                (arguments, &normalized),
                Some(result),
            );
            let (answer, report) = self
                .ask::<PostToolAnswer>((hook, HookPoint::PostToolUse), call, &input)
                .await;
            match answer {
                Ok(answer) => {
                    let outcome = apply(&mut output, answer);
                    reports.push(report.with(outcome, None));
                }
                Err(failure) => {
                    let label = report.command.clone();
                    reports.push(report);
                    if hook.hook.on_error == OnError::Deny {
                        let message = format!(
                            "the result was withheld: the post_tool_use hook `{label}` failed: {failure}"
                        );
                        output = ToolOutput::error(message);
                        break;
                    }
                }
            }
        }
        AfterCall { output, reports }
    }

    /// Runs one tool hook and reads its answer; the report says `failed` when it failed.
    async fn ask<T: serde::de::DeserializeOwned + Default>(
        &self,
        (hook, point): (&ToolHook, HookPoint),
        call: &CallHookInput<'_>,
        input: &Value,
    ) -> (Result<T, HookFailure>, HookReport) {
        let scene = HookScene {
            point: point.name(),
            about: format!("(call {} of {})", call.call_id, call.tool),
            log_dir: call.log_dir,
            cancel: call.cancel,
        };
        let (answer, duration) = match self.runner.refuses(&hook.hook) {
            Some(refused) => (Err(refused), std::time::Duration::ZERO),
            None => self.runner.run(&hook.hook, input, &scene).await,
        };
        let answer = answer.and_then(read::<T>);
        let report = HookReport {
            point,
            command: hook.hook.label(),
            outcome: HookOutcome::Failed,
            duration,
            detail: answer.as_ref().err().map(ToString::to_string),
        };
        (answer, report)
    }
}

impl CallHookInput<'_> {
    /// The JSON object a tool hook reads on stdin: the arguments as written, and as the
    /// tool will use them (what `match:` and `permissions` see), so a hook that checks a
    /// path is not fooled by `./src/x` or `src//x`.
    fn stdin(
        &self,
        point: HookPoint,
        (arguments, resolved): (&Value, &Value),
        result: Option<Value>,
    ) -> Value {
        let mut input = json!({
            "event": point.name(),
            "run_id": self.run_id,
            "session_id": self.session_id,
            "agent": self.agent,
            "depth": self.depth,
            "tool_name": self.tool,
            "call_id": self.call_id,
            "arguments": arguments,
            "resolved_arguments": resolved,
        });
        if let Some(dir) = self.log_dir {
            input["run_dir"] = dir.display().to_string().into();
        }
        if let Some(result) = result {
            input["result"] = result;
        }
        input
    }
}

impl HookReport {
    fn with(mut self, outcome: HookOutcome, detail: Option<String>) -> Self {
        self.outcome = outcome;
        self.detail = detail;
        self
    }
}

/// Applies a `post_tool_use` answer to the result; what it did.
fn apply(output: &mut ToolOutput, answer: PostToolAnswer) -> HookOutcome {
    let mut outcome = HookOutcome::NoChange;
    if let Some(data) = answer.data {
        output.data = data;
        outcome = HookOutcome::Replaced;
    }
    if let Some(error) = answer.error {
        output.success = false;
        output.error = Some(error);
        outcome = HookOutcome::Replaced;
    }
    if let Some(note) = answer.note {
        // Added to the text the model reads, after whatever the data says.
        let text = match std::mem::take(&mut output.data) {
            Value::Null => note,
            Value::String(text) if text.is_empty() => note,
            Value::String(text) => format!("{text}\n\n{note}"),
            other => format!("{other}\n\n{note}"),
        };
        output.data = Value::String(text);
        if outcome == HookOutcome::NoChange {
            outcome = HookOutcome::Annotated;
        }
    }
    outcome
}
