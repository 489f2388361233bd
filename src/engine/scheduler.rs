//! Runs the tool calls of one model turn (UAP §8.5–8.6): concurrently by default, at most N
//! at once with `parallel_tools: N`, `sequential` tools alone, `depends_on` tools and calls
//! with `after` after the calls they wait for ([`super::call_order`]). Results come back in
//! the order the model made the calls, whatever order they finished in.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use serde_json::{Map, Value, json};
use tokio::sync::{RwLock, Semaphore, watch};

use super::budget::LimitHit;
use super::call_order::{CallOrder, OrderRules, order_calls};
use super::effect::ToolEffect;
use crate::provider::{BoxFuture, ToolCall};
use crate::sync::lock;
use crate::tools::{Tool, ToolContext, ToolOutput, stopped};

/// The metadata key of a call's result that says the call did not run, and why (progress
/// shows `✗ TOOL not run: WHY` rather than a duration).
pub const NOT_RUN: &str = "not_run";

/// How one turn's calls may run.
#[derive(Debug, Clone)]
pub struct SchedulePolicy {
    /// At most this many calls at once (`None`: all).
    pub parallel: Option<usize>,
    pub tool_timeout: Option<Duration>,
    pub max_output_chars: Option<u64>,
    /// When the run's `timeout` expires: calls still running then are stopped.
    pub deadline: Option<Instant>,
    /// The calls of a reply past this many are not run (`execution.max_calls_per_turn`).
    pub max_calls: usize,
    /// Tools the agent file makes run alone, besides those that always do.
    pub sequential: HashSet<String>,
    /// The tools whose calls may carry an `after` list (`execution.model_order`).
    pub after_tools: HashSet<String>,
}

/// All calls at once, unbounded.
impl Default for SchedulePolicy {
    fn default() -> Self {
        SchedulePolicy {
            parallel: None,
            tool_timeout: None,
            max_output_chars: None,
            deadline: None,
            max_calls: usize::MAX,
            sequential: HashSet::new(),
            after_tools: HashSet::new(),
        }
    }
}

/// What happened to one call.
#[derive(Debug, Clone)]
pub struct CallResult {
    pub call: ToolCall,
    /// Shared with the call's `agent.tool.execution.completed` event.
    pub output: Arc<ToolOutput>,
    /// What the call did to the run (a handoff, a question, a sub-agent's trace).
    pub effect: Option<ToolEffect>,
    /// Whether the call counts in `tool_calls`: it ran, or it was answered with an error
    /// about the call itself; `false` for calls a bound refused.
    pub counted: bool,
}

/// A call's result and its effect on the run.
pub struct Called {
    pub output: ToolOutput,
    pub effect: Option<ToolEffect>,
}

impl From<ToolOutput> for Called {
    fn from(output: ToolOutput) -> Self {
        Called {
            output,
            effect: None,
        }
    }
}

/// The tools of a turn as the scheduler sees them: whether a name is known (and must run
/// alone), and how to start a call. Plain tool maps implement it; the engine's own
/// implementation also runs sub-agents and handoffs.
pub trait Dispatch: Send + Sync {
    /// `None`: there is no tool of that name. `Some(true)`: it must run alone.
    fn sequential(&self, name: &str) -> Option<bool>;
    /// Starts one call; the future owns what it needs, so it can run as its own task.
    fn start(&self, call: &ToolCall, context: ToolContext) -> BoxFuture<'static, Called>;
    /// What every result of tool `name` carries in its metadata ([`Tool::origin`]).
    fn origin(&self, name: &str) -> Map<String, Value>;
    /// Whether a well-formed call may run, and with what arguments (`permissions`,
    /// approval, `pre_tool_use` hooks); every call may, as it is, here.
    fn authorize<'a>(&'a self, _call: &'a ToolCall) -> BoxFuture<'a, Authorization> {
        Box::pin(std::future::ready(Authorization::Run {
            note: Map::new(),
            arguments: None,
        }))
    }
    /// A call's result after it ran, before the model, the events and the transcript see
    /// it (`post_tool_use` hooks); as it came, here.
    fn after<'a>(&'a self, _call: &'a ToolCall, output: ToolOutput) -> BoxFuture<'a, ToolOutput> {
        Box::pin(std::future::ready(output))
    }
    /// A result as the model, the events and the transcript may see it (secrets redacted);
    /// as it came, here.
    fn redact(&self, output: ToolOutput) -> ToolOutput {
        output
    }
}

/// What the policy says about a call the scheduler could run.
pub enum Authorization {
    /// It runs — with `arguments` instead of the model's, when a hook rewrote them; its
    /// result's metadata gets the entries of `note` (the decision, when one was made).
    Run {
        note: Map<String, Value>,
        arguments: Option<Arc<Value>>,
    },
    /// It does not run; this is its result (a denial and its reason).
    Refuse(ToolOutput),
    /// Nobody could decide: it does not run, and its result is missing until a resume
    /// settles it (the effect says on what it waits).
    Wait(ToolEffect),
}

impl Dispatch for HashMap<String, Arc<dyn Tool>> {
    fn sequential(&self, name: &str) -> Option<bool> {
        self.get(name).map(|tool| tool.sequential())
    }

    fn origin(&self, name: &str) -> Map<String, Value> {
        self.get(name).map(|tool| tool.origin()).unwrap_or_default()
    }

    fn start(&self, call: &ToolCall, context: ToolContext) -> BoxFuture<'static, Called> {
        let tool = self.get(&call.name).cloned();
        let arguments = Value::clone(&call.arguments);
        Box::pin(async move {
            match tool {
                Some(tool) => tool.call(arguments, &context).await.into(),
                None => ToolOutput::error("unknown tool").into(),
            }
        })
    }
}

/// Hooks the scheduler calls as calls start and finish (events, progress, budget).
pub trait CallObserver: Send + Sync {
    /// Asked before a call runs; an error (a reached bound) skips it.
    fn admit(&self, call: &ToolCall) -> Result<(), LimitHit>;
    fn started(&self, call: &ToolCall);
    fn finished(&self, call: &ToolCall, output: &Arc<ToolOutput>, duration: Duration);
}

/// Runs `calls`; returns their results in call order and the first bound reached, if any.
pub async fn run_calls(
    calls: &[ToolCall],
    tools: &dyn Dispatch,
    dependencies: &HashMap<String, Vec<String>>,
    policy: &SchedulePolicy,
    observer: &dyn CallObserver,
    cancel: &watch::Receiver<bool>,
) -> (Vec<CallResult>, Option<LimitHit>) {
    let CallOrder {
        waits: waits_for,
        refused,
        calls: ordered,
    } = {
        let alone = |name: &str| runs_alone(tools, policy, name) == Some(true);
        let rules = OrderRules {
            depends_on: dependencies,
            runs_alone: &alone,
            after_tools: &policy.after_tools,
        };
        order_calls(calls, &rules)
    };
    let (done_senders, done_receivers): (Vec<_>, Vec<_>) =
        calls.iter().map(|_| watch::channel(false)).unzip();
    let permits = Semaphore::new(policy.parallel.unwrap_or(Semaphore::MAX_PERMITS).max(1));
    let exclusive = RwLock::new(());
    let limit_hit = std::sync::Mutex::new(None::<LimitHit>);

    let runs = (0..calls.len()).map(|index| {
        let waits = &waits_for[index];
        let refused = &refused[index];
        // The call as its tool gets it (without the runner's `after`).
        let call = &ordered[index];
        let done_receivers = &done_receivers;
        let done = &done_senders[index];
        let permits = &permits;
        let exclusive = &exclusive;
        let limit_hit = &limit_hit;
        async move {
            for &other in waits {
                let mut receiver = done_receivers[other].clone();
                let _ = receiver.wait_for(|finished| *finished).await;
            }
            let sequential = runs_alone(tools, policy, &call.name);
            let started = Instant::now();
            let admitted = match (refused, index < policy.max_calls) {
                (_, false) => too_many(calls.len(), policy.max_calls),
                (Some(why), true) => Admission::Answered(Box::new(ToolOutput::error(why.clone()))),
                (None, true) => admit(call, sequential, observer),
            };
            let (called, counted) = match admitted {
                Admission::Answered(output) => (Called::from(*output), true),
                Admission::Refused(output, hit) => {
                    if let Some(hit) = hit {
                        lock(limit_hit).get_or_insert(hit);
                    }
                    (Called::from(*output), false)
                }
                Admission::Run { sequential } => match tools.authorize(call).await {
                    Authorization::Run { note, arguments } => {
                        let _guard = if sequential {
                            Guard::Write(exclusive.write().await)
                        } else {
                            Guard::Read(exclusive.read().await)
                        };
                        let _permit = permits.acquire().await;
                        let rewritten = arguments.map(|arguments| ToolCall {
                            arguments,
                            ..call.clone()
                        });
                        let ran = rewritten.as_ref().unwrap_or(call);
                        observer.started(ran);
                        let mut called = spawn_call(tools, ran, policy, cancel).await;
                        called.output = tools.after(ran, called.output).await;
                        called.output.metadata.extend(note);
                        (called, true)
                    }
                    Authorization::Refuse(output) => (Called::from(output), true),
                    Authorization::Wait(effect) => {
                        // Its block closes like a paused `ask_user` call's; the call runs
                        // (or is denied, or gets its submitted output) in a step of the
                        // resumed run.
                        let waits = effect.waits_for();
                        let output = ToolOutput::error(format!("not run yet: it {waits}"))
                            .with_meta(NOT_RUN, waits);
                        let effect = Some(effect);
                        (Called { output, effect }, false)
                    }
                },
            };
            // Redacted before the cut, so a cut cannot leave half a secret behind.
            let output = truncate_output(tools.redact(called.output), policy.max_output_chars);
            let output = Arc::new(output);
            let duration = started.elapsed();
            observer.finished(call, &output, duration);
            let _ = done.send(true);
            CallResult {
                call: call.clone(),
                output,
                effect: called.effect,
                counted,
            }
        }
    });
    let results = join_all(runs).await;
    let hit = lock(&limit_hit).take();
    (results, hit)
}

enum Guard<'a> {
    Read(#[allow(dead_code)] tokio::sync::RwLockReadGuard<'a, ()>),
    Write(#[allow(dead_code)] tokio::sync::RwLockWriteGuard<'a, ()>),
}

/// Whether a call may run, or the result it gets instead.
enum Admission {
    Run {
        sequential: bool,
    },
    /// Counted but not run: the call itself is wrong, and this error says how.
    Answered(Box<ToolOutput>),
    /// Neither run nor counted: the result for the model, and the bound that refused it, if any.
    Refused(Box<ToolOutput>, Option<LimitHit>),
}

/// The result of a call past `execution.max_calls_per_turn`.
fn too_many(calls: usize, max: usize) -> Admission {
    let message = format!(
        "not run: the reply made {calls} tool calls and at most {max} run per reply \
         (execution.max_calls_per_turn); ask for the rest in the next reply"
    );
    Admission::Refused(Box::new(ToolOutput::error(message)), None)
}

/// How much of a call's unparsable arguments its error quotes.
const MAX_QUOTED: usize = 2_000;

/// Checks that the call can run: the budget allows it, the tool exists, its arguments
/// parsed. A call the model got wrong (unknown tool, arguments that are not JSON) is
/// counted like any call the run processed: the model made it and gets an answer to it.
fn admit(call: &ToolCall, sequential: Option<bool>, observer: &dyn CallObserver) -> Admission {
    if let Err(hit) = observer.admit(call) {
        let message = format!(
            "not run: the run reached its bound `{}` ({})",
            hit.limit, hit.detail
        );
        return Admission::Refused(Box::new(ToolOutput::error(message)), Some(hit));
    }
    let Some(sequential) = sequential else {
        let message = format!("unknown tool `{}`", call.name);
        return Admission::Answered(Box::new(ToolOutput::error(message)));
    };
    if let Some(invalid) = &call.invalid_arguments {
        // What the model wrote goes back in the error: the request carries `{}` instead.
        let raw: String = invalid.raw.chars().take(MAX_QUOTED).collect();
        let message = format!("invalid arguments: {}; you wrote: {raw}", invalid.error);
        return Admission::Answered(Box::new(ToolOutput::error(message)));
    }
    Admission::Run { sequential }
}

/// Runs the call as its own task, so calls of a turn truly run at once (a tool that never
/// yields cannot hold the others back) and a tool that panics becomes a tool error.
async fn spawn_call(
    tools: &dyn Dispatch,
    call: &ToolCall,
    policy: &SchedulePolicy,
    cancel: &watch::Receiver<bool>,
) -> Called {
    tracing::debug!(tool = %call.name, call_id = %call.id, "tool call started");
    let run = tools.start(call, ToolContext::new(call.id.clone(), cancel.clone()));
    let (timeout, deadline, cancel) = (policy.tool_timeout, policy.deadline, cancel.clone());
    let mut task = AbortOnDrop(tokio::spawn(async move {
        execute(run, timeout, deadline, &cancel).await
    }));
    let mut called = match (&mut task.0).await {
        Ok(called) => called,
        Err(error) if error.is_panic() => {
            ToolOutput::error("the tool failed unexpectedly (it panicked)").into()
        }
        Err(_) => ToolOutput::error("interrupted").into(),
    };
    // A call the engine cut off says where it went, as the tool's own results do.
    for (key, value) in tools.origin(&call.name) {
        called.output.metadata.entry(key).or_insert(value);
    }
    called
}

/// A spawned call that stops when its scheduler gives up on it (a run that ends at its
/// deadline must not leave tools running behind it).
struct AbortOnDrop(tokio::task::JoinHandle<Called>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn execute(
    run: BoxFuture<'static, Called>,
    timeout: Option<Duration>,
    deadline: Option<Instant>,
    cancel: &watch::Receiver<bool>,
) -> Called {
    let timed = async {
        match timeout {
            Some(limit) => match tokio::time::timeout(limit, run).await {
                Ok(called) => called,
                Err(_) => ToolOutput::error(format!(
                    "timed out after {} (limits.tool_timeout)",
                    crate::spec::duration::HumanDuration(limit)
                ))
                .into(),
            },
            None => run.await,
        }
    };
    tokio::select! {
        called = timed => called,
        _ = stopped(cancel) => ToolOutput::error("interrupted").into(),
        _ = until(deadline) => {
            ToolOutput::error("stopped: the run reached its time limit (limits.timeout)").into()
        }
    }
}

/// Whether a tool runs alone: because it says so, or because the agent file does
/// (`None`: there is no such tool).
fn runs_alone(tools: &dyn Dispatch, policy: &SchedulePolicy, name: &str) -> Option<bool> {
    tools
        .sequential(name)
        .map(|alone| alone || policy.sequential.contains(name))
}

/// Cuts the result's data when its JSON text is longer than `max` characters, saying so;
/// a metadata value longer than that (an MCP server's structured content) is replaced by
/// how long it was, since everything in a result reaches the events and the transcript.
pub fn truncate_output(mut output: ToolOutput, max: Option<u64>) -> ToolOutput {
    let Some(max) = max.map(|m| m as usize) else {
        return output;
    };
    for value in output.metadata.values_mut() {
        let total = value.to_string().chars().count();
        if total > max {
            *value = json!({"cut": total, "reason": "limits.max_output_chars"});
        }
    }
    let text = match &output.data {
        Value::String(text) => text.clone(),
        Value::Null => return output,
        other => other.to_string(),
    };
    let total = text.chars().count();
    if total <= max {
        return output;
    }
    let kept: String = text.chars().take(max).collect();
    let cut = total - max;
    output.data = Value::String(format!(
        "{kept}\n[… {cut} of {total} characters cut (limits.max_output_chars)]"
    ));
    output.metadata.insert(
        "truncated".into(),
        json!({"kept": max, "cut": cut, "total": total}),
    );
    output
}

/// Waits until `deadline`; forever without one.
pub async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_output_chars_bounds_the_data_and_the_metadata() {
        let output = ToolOutput::ok("x".repeat(50))
            .with_meta("structured", json!({"content": "y".repeat(50)}))
            .with_meta("mcp_server", "srv");
        let cut = truncate_output(output, Some(20));
        assert!(cut.data.as_str().unwrap().starts_with(&"x".repeat(20)));
        assert_eq!(cut.metadata["truncated"]["total"], 50);
        assert_eq!(
            cut.metadata["structured"],
            json!({"cut": 64, "reason": "limits.max_output_chars"})
        );
        assert_eq!(cut.metadata["mcp_server"], "srv");
    }
}
