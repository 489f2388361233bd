//! The subscriber that turns a run's events into spans, per the OpenTelemetry GenAI
//! semantic conventions: `invoke_agent {agent}` for each run (a sub-agent's under the tool
//! call that started it, a handoff's target under the agent that handed over), `chat
//! {model}` for each model call and `execute_tool {tool}` for each tool call under the
//! agent's span, and a `tools/call {tool}` client span under an MCP server's tool call.
//!
//! Spans start and end as the events arrive (the bus calls subscribers as it emits), so
//! their times are the events' own. Ending a span only queues it for the batching thread:
//! nothing here waits on the network.
//!
//! Here: the agents' spans (a run, a handoff, the run's end) and which event goes where.
//! A model call's span and metrics are `model_calls.rs`'s, a tool call's `tool_calls.rs`'s,
//! and the attribute values `attributes.rs`'s.

use std::sync::Mutex;
use std::time::SystemTime;

use opentelemetry::trace::{Link, SpanId, SpanKind, Status, TraceContextExt, TraceId, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::SdkTracer;
use serde_json::Value;

mod model_calls;
mod tool_calls;

use super::attributes::{agent_attributes, name_of};
use super::content;
use super::export::carried_context;
use super::ids;
use super::metrics::GenAiMetrics;
use crate::engine::RunStatus;
use crate::engine::events::{Event, EventData, EventSink, Failure, Handoff, RunCreated};
use crate::engine::outcome::RunTotals;
use crate::policy::Redactor;
use crate::sync::lock;
use crate::trace_env::{Carried, ChildTrace};

/// The subscriber of one run tree (a run and its sub-agents' runs).
pub struct GenAiSpans {
    tracer: SdkTracer,
    /// The caller's trace (`TRACEPARENT`), parent of root runs.
    parent: Context,
    /// Set when content is recorded: what it passes through first.
    content: Option<Redactor>,
    metrics: GenAiMetrics,
    /// The span of the session's first traced run, which root runs' spans link to: the
    /// one kept, else the first root run seen here.
    first: Mutex<Option<Carried>>,
    /// Told the first root run's span, when no span was kept.
    keep: Option<KeepSpan>,
    /// Spans are exported (`OTEL_TRACES_EXPORTER` is not `none`): else they are built
    /// only for the metrics, and neither kept for the session nor passed on to children.
    traced: bool,
    /// What the programs the run starts are told: each root run's span as it starts.
    children: ChildTrace,
    /// The ids the first root run's span was promised (its MCP servers were told them).
    ahead: Mutex<Option<(TraceId, SpanId)>>,
    open: Mutex<Open>,
}

/// Keeps the span of a session's first traced run (the session's files).
pub type KeepSpan = Box<dyn Fn(&Carried) + Send + Sync>;

/// Where a run's spans go among the traces around it: under the span of the caller that
/// started it, when it named one with its request (else `TRACEPARENT`'s), and linked to its
/// session's first run that exported spans (a resume, a branch, a later `chat` turn each
/// start a trace of their own), with who keeps the run's own span when none was kept.
#[derive(Default)]
pub struct RunTrace {
    /// The caller's span (`runner serve`: a request's `traceparent` header).
    pub caller: Option<Carried>,
    /// The span of the session's first traced run, when one was kept.
    pub first: Option<Carried>,
    /// Told the root run's span as it starts (the session's files keep the first).
    pub keep: Option<KeepSpan>,
    /// The run's trace context, given to what it starts: the ids its span is to have,
    /// then the span (`trace_env::ChildTrace`). Many runs of one process each have theirs.
    pub children: ChildTrace,
}

/// The spans not yet ended. Every event looks its run up here, so the maps hash with
/// foldhash rather than SipHash; they hold a run's few open spans, nothing to flood.
#[derive(Default)]
struct Open {
    runs: foldhash::HashMap<String, RunSpans>,
    /// A sub-agent run's parent: the tool call that started it, by the sub-agent's run id.
    sub_agents: foldhash::HashMap<String, Context>,
}

/// The open spans of one run.
#[derive(Default)]
struct RunSpans {
    /// The run's agent span, then one per handoff, innermost last.
    agents: Vec<Context>,
    /// Model calls by message id, with the id of the one usage reports belong to.
    chats: foldhash::HashMap<String, model_calls::Chat>,
    last_chat: Option<String>,
    /// Tool calls by call id, with when each started (an MCP call's span starts then).
    tools: foldhash::HashMap<String, (Context, SystemTime)>,
    /// What was said of a call before it started (its permission decision, a hook that
    /// denied it), added to its span when it starts or, if it never does, to the agent's.
    early: foldhash::HashMap<String, Vec<opentelemetry::trace::Event>>,
}

impl RunSpans {
    fn agent(&self) -> Option<&Context> {
        self.agents.last()
    }
}

impl GenAiSpans {
    pub fn new(
        tracer: SdkTracer,
        parent: Context,
        content: Option<Redactor>,
        metrics: GenAiMetrics,
        session: RunTrace,
        traced: bool,
    ) -> Self {
        let ahead = session.children.current().and_then(|promised| {
            let span = carried_context(&promised).span().span_context().clone();
            span.is_valid().then(|| (span.trace_id(), span.span_id()))
        });
        GenAiSpans {
            tracer,
            parent,
            content,
            metrics,
            traced,
            first: Mutex::new(session.first),
            keep: session.keep,
            children: session.children,
            ahead: Mutex::new(ahead),
            open: Mutex::new(Open::default()),
        }
    }

    fn start(
        &self,
        name: String,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
        parent: &Context,
    ) -> Context {
        self.start_linked(name, kind, attributes, parent, Vec::new())
    }

    fn start_linked(
        &self,
        name: String,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
        parent: &Context,
        links: Vec<Link>,
    ) -> Context {
        let span = self
            .tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes)
            .with_links(links)
            .start_with_context(&self.tracer, parent);
        parent.with_span(span)
    }

    /// The link of a root run's span to the session's first traced run, if it had one.
    fn session_links(first: Option<&Carried>) -> Vec<Link> {
        let Some(first) = first else {
            return Vec::new();
        };
        let span = carried_context(first).span().span_context().clone();
        match span.is_valid() {
            true => vec![Link::with_context(span)],
            false => Vec::new(),
        }
    }

    /// The content `value` makes, redacted, when content is recorded. Not made otherwise:
    /// a reply or a tool result as JSON costs more than the rest of its span.
    fn content(&self, value: impl FnOnce() -> Value) -> Option<String> {
        self.content
            .as_ref()
            .map(|r| content::redacted(r, &value()))
    }

    fn run_created(&self, open: &mut Open, event: &Event, created: &RunCreated) {
        let parent = match &event.parent_run_id {
            None => self.parent.clone(),
            Some(caller) => open
                .sub_agents
                .remove(&*event.run_id)
                .or_else(|| open.runs.get(&**caller).and_then(RunSpans::agent).cloned())
                .unwrap_or_else(|| self.parent.clone()),
        };
        let mut attributes = agent_attributes(&event.agent, event);
        if let Some(text) = self.content(|| content::input_messages(&created.initial_messages)) {
            attributes.push(KeyValue::new("gen_ai.input.messages", text));
        }
        let root = event.parent_run_id.is_none() && self.traced;
        let mut first = lock(&self.first);
        let links = match root {
            true => Self::session_links(first.as_ref()),
            false => Vec::new(),
        };
        // A root run's span has the ids its programs were promised, the first time.
        let promised = root.then(|| lock(&self.ahead).take()).flatten();
        let name = format!("invoke_agent {}", event.agent);
        let cx = ids::start_with(promised, || {
            self.start_linked(name, SpanKind::Internal, attributes, &parent, links)
        });
        if root {
            let span = carried(cx.span().span_context());
            if first.is_none() {
                *first = Some(span.clone());
                if let Some(keep) = &self.keep {
                    keep(&span);
                }
            }
            // What the run starts from now on (hooks, commands) is its child.
            self.children.set(span);
        }
        drop(first);
        open.runs
            .entry(event.run_id.to_string())
            .or_default()
            .agents
            .push(cx);
    }

    fn handoff(&self, run: &mut RunSpans, event: &Event, handoff: &Handoff) {
        let Some(parent) = run.agent().cloned() else {
            return;
        };
        parent.span().add_event(
            "runner.handoff",
            vec![
                KeyValue::new("runner.handoff.to", handoff.to.clone()),
                KeyValue::new("gen_ai.tool.name", handoff.tool_name.clone()),
            ],
        );
        let attributes = agent_attributes(&handoff.to, event);
        let cx = self.start(
            format!("invoke_agent {}", handoff.to),
            SpanKind::Internal,
            attributes,
            &parent,
        );
        run.agents.push(cx);
    }

    /// The run is over: what is still open ends with it (a model call the provider failed,
    /// a tool call cut off), then its agent spans, innermost first, with its status.
    fn run_ended(
        &self,
        open: &mut Open,
        event: &Event,
        status: RunStatus,
        failure: Option<&Failure>,
        totals: &RunTotals,
    ) {
        let Some(mut run) = open.runs.remove(&*event.run_id) else {
            return;
        };
        let error_type = failure
            .map(|f| f.code.name().into_owned())
            .unwrap_or_else(|| status.name().to_string());
        let unfinished = Status::error(failure.map(|f| f.message.clone()).unwrap_or_default());
        for chat in run.chats.values() {
            chat.record_duration(&self.metrics, Some(&error_type));
        }
        let chats = run.chats.drain().map(|(_, chat)| chat.cx);
        for cx in chats.chain(run.tools.drain().map(|(_, (cx, _))| cx)) {
            let span = cx.span();
            span.set_attribute(KeyValue::new("error.type", error_type.clone()));
            span.set_status(unfinished.clone());
            span.end();
        }
        let ended = match status {
            RunStatus::Completed => Status::Ok,
            // A pause for a person is no error: the session goes on when answered.
            RunStatus::InputRequired => Status::Unset,
            _ => Status::error(
                failure
                    .map(|f| f.message.clone())
                    .unwrap_or_else(|| status.name().to_string()),
            ),
        };
        while let Some(cx) = run.agents.pop() {
            let span = cx.span();
            for events in run.early.drain() {
                for early in events.1 {
                    span.add_event_with_timestamp(early.name, early.timestamp, early.attributes);
                }
            }
            span.set_attribute(KeyValue::new("runner.run.status", status.name()));
            if !matches!(ended, Status::Ok | Status::Unset) {
                span.set_attribute(KeyValue::new("error.type", error_type.clone()));
            }
            span.set_attribute(KeyValue::new(
                "gen_ai.usage.input_tokens",
                totals.usage.input_tokens as i64,
            ));
            span.set_attribute(KeyValue::new(
                "gen_ai.usage.output_tokens",
                totals.usage.output_tokens as i64,
            ));
            if let Some(cost) = totals.cost_usd {
                span.set_attribute(KeyValue::new("runner.cost_usd", cost));
            }
            span.set_status(ended.clone());
            span.end();
        }
    }
}

impl EventSink for GenAiSpans {
    fn emit(&self, event: &Event) {
        let mut open = lock(&self.open);
        let open = &mut *open;
        match &event.data {
            EventData::RunCreated(created) => self.run_created(open, event, created),
            EventData::RunCompleted(done) => {
                self.run_ended(open, event, done.status, None, &done.totals)
            }
            EventData::RunFailed(failed) => self.run_ended(
                open,
                event,
                failed.status,
                Some(&failed.error),
                &failed.totals,
            ),
            EventData::SubAgentStarted(started) => {
                let caller = open.runs.get(&*event.run_id);
                if let Some((cx, _)) = caller.and_then(|run| run.tools.get(&started.tool_call_id)) {
                    open.sub_agents
                        .insert(started.sub_agent_run_id.clone(), cx.clone());
                }
            }
            data => {
                let Some(run) = open.runs.get_mut(&*event.run_id) else {
                    return;
                };
                self.run_event(run, event, data);
            }
        }
    }
}

impl GenAiSpans {
    /// An event inside a run.
    fn run_event(&self, run: &mut RunSpans, event: &Event, data: &EventData) {
        match data {
            EventData::Handoff(handoff) => self.handoff(run, event, handoff),
            EventData::MessageCreated(created) if created.starts_model_call() => {
                self.chat_started(run, created)
            }
            EventData::MessageCompleted(completed) => self.chat_completed(run, completed),
            EventData::LlmUsage(usage) => self.usage(run, usage),
            EventData::LlmRetry(retry) => {
                if let Some(chat) = run.chats.get(&retry.message_id) {
                    chat.cx.span().add_event(
                        "runner.llm.retry",
                        vec![
                            KeyValue::new("runner.retry.attempt", i64::from(retry.attempt)),
                            KeyValue::new("runner.retry.wait_ms", retry.wait_ms as i64),
                            KeyValue::new("runner.retry.reason", retry.reason.clone()),
                        ],
                    );
                }
            }
            EventData::ToolStarted(started) => self.tool_started(run, started),
            EventData::ToolCompleted(completed) => self.tool_completed(run, completed),
            EventData::PermissionDecided(decided) => {
                let mut attributes = vec![
                    KeyValue::new("runner.permission.decision", name_of(&decided.decision)),
                    KeyValue::new("runner.permission.rule", decided.rule.clone()),
                    KeyValue::new("runner.permission.by", name_of(&decided.by)),
                ];
                if let Some(reason) = &decided.reason {
                    attributes.push(KeyValue::new("runner.permission.reason", reason.clone()));
                }
                Self::tool_event(
                    run,
                    &decided.tool_call_id,
                    "runner.permission.decided",
                    attributes,
                );
            }
            EventData::HookCompleted(hook) => {
                let attributes = vec![
                    KeyValue::new("runner.hook.point", name_of(&hook.hook)),
                    KeyValue::new("runner.hook.command", hook.command.clone()),
                    KeyValue::new("runner.hook.outcome", name_of(&hook.outcome)),
                    KeyValue::new("runner.hook.duration_ms", hook.duration_ms as i64),
                ];
                Self::tool_event(run, &hook.tool_call_id, "runner.hook.completed", attributes);
            }
            _ => {}
        }
    }
}

/// A span's context as children are given it (W3C Trace Context).
pub(super) fn carried(span: &opentelemetry::trace::SpanContext) -> Carried {
    let flags = u8::from(span.is_sampled());
    Carried {
        traceparent: format!("00-{}-{}-{flags:02x}", span.trace_id(), span.span_id()),
        tracestate: Some(span.trace_state().header()).filter(|state| !state.is_empty()),
    }
}
