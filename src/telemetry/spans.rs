//! The subscriber that turns a run's events into spans, per the OpenTelemetry GenAI
//! semantic conventions: `invoke_agent {agent}` for each run (a sub-agent's under the tool
//! call that started it, a handoff's target under the agent that handed over), `chat
//! {model}` for each model call and `execute_tool {tool}` for each tool call under the
//! agent's span, and a `tools/call {tool}` client span under an MCP server's tool call.
//!
//! Spans start and end as the events arrive (the bus calls subscribers as it emits), so
//! their times are the events' own. Ending a span only queues it for the batching thread:
//! nothing here waits on the network.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

use opentelemetry::trace::{
    Link, Span as _, SpanId, SpanKind, Status, TraceContextExt, TraceId, Tracer as _,
};
use opentelemetry::{Array, Context, KeyValue, StringValue, Value as OtelValue};
use opentelemetry_sdk::trace::SdkTracer;
use serde::Serialize;
use serde_json::Value;

use super::content;
use super::export::carried_context;
use super::ids;
use super::metrics::GenAiMetrics;
use crate::engine::RunStatus;
use crate::engine::events::{
    Event, EventData, EventSink, Failure, Handoff, MessageCompleted, MessageCreated, RequestParams,
    RunCreated, ToolCompleted, ToolStarted,
};
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

/// The spans not yet ended.
#[derive(Default)]
struct Open {
    runs: HashMap<String, RunSpans>,
    /// A sub-agent run's parent: the tool call that started it, by the sub-agent's run id.
    sub_agents: HashMap<String, Context>,
}

/// The open spans of one run.
#[derive(Default)]
struct RunSpans {
    /// The run's agent span, then one per handoff, innermost last.
    agents: Vec<Context>,
    /// Model calls by message id, with the id of the one usage reports belong to.
    chats: HashMap<String, Chat>,
    last_chat: Option<String>,
    /// Tool calls by call id, with when each started (an MCP call's span starts then).
    tools: HashMap<String, (Context, SystemTime)>,
    /// What was said of a call before it started (its permission decision, a hook that
    /// denied it), added to its span when it starts or, if it never does, to the agent's.
    early: HashMap<String, Vec<opentelemetry::trace::Event>>,
}

/// An open model call: its span, when it started and its metric attributes.
struct Chat {
    cx: Context,
    started: SystemTime,
    attributes: Vec<KeyValue>,
}

impl Chat {
    /// The call's duration, recorded as it ends; `error_type` when it failed.
    fn record_duration(&self, metrics: &GenAiMetrics, error_type: Option<&str>) {
        let seconds = self.started.elapsed().unwrap_or_default().as_secs_f64();
        let mut attributes = self.attributes.clone();
        if let Some(error_type) = error_type {
            attributes.push(KeyValue::new("error.type", error_type.to_string()));
        }
        metrics.duration(seconds, &attributes);
    }
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
                .remove(&event.run_id)
                .or_else(|| open.runs.get(caller).and_then(RunSpans::agent).cloned())
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
            .entry(event.run_id.clone())
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

    fn chat_started(&self, run: &mut RunSpans, created: &MessageCreated) {
        let Some(parent) = run.agent().cloned() else {
            return;
        };
        let model = created.model.as_deref().unwrap_or_default();
        // Shared, not owned: these are cloned for each metric the call records.
        let mut attributes = vec![KeyValue::new("gen_ai.operation.name", "chat")];
        if let Some(provider) = &created.provider {
            attributes.push(KeyValue::new("gen_ai.provider.name", shared(provider)));
        }
        if !model.is_empty() {
            attributes.push(KeyValue::new("gen_ai.request.model", shared(model)));
        }
        let name = format!("chat {model}").trim_end().to_string();
        let mut span_attributes = attributes.clone();
        span_attributes.extend(request_attributes(&created.params));
        let cx = self.start(name, SpanKind::Client, span_attributes, &parent);
        let chat = Chat {
            cx,
            started: SystemTime::now(),
            attributes,
        };
        run.chats.insert(created.message.id.clone(), chat);
        run.last_chat = Some(created.message.id.clone());
    }

    fn chat_completed(&self, run: &mut RunSpans, completed: &MessageCompleted) {
        let Some(chat) = run.chats.remove(&completed.message.id) else {
            return;
        };
        chat.record_duration(&self.metrics, None);
        let span = chat.cx.span();
        if let Some(id) = &completed.response_id {
            span.set_attribute(KeyValue::new("gen_ai.response.id", id.clone()));
        }
        let reason = completed.message.finish_reason.as_str();
        span.set_attribute(KeyValue::new(
            "gen_ai.response.finish_reasons",
            OtelValue::Array(Array::String(vec![StringValue::from(reason.to_string())])),
        ));
        let message = &completed.message;
        let reply = || content::output_message(&message.content, &message.tool_calls, reason);
        if let Some(text) = self.content(reply) {
            span.set_attribute(KeyValue::new("gen_ai.output.messages", text));
        }
        span.set_status(Status::Ok);
        span.end();
    }

    fn tool_started(&self, run: &mut RunSpans, started: &ToolStarted) {
        let Some(parent) = run.agent().cloned() else {
            return;
        };
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", started.tool_name.clone()),
            KeyValue::new("gen_ai.tool.call.id", started.tool_call_id.clone()),
            KeyValue::new("gen_ai.tool.type", "function"),
        ];
        if let Some(text) = self.content(|| started.input.clone()) {
            attributes.push(KeyValue::new("gen_ai.tool.call.arguments", text));
        }
        let cx = self.start(
            format!("execute_tool {}", started.tool_name),
            SpanKind::Internal,
            attributes,
            &parent,
        );
        for early in run.early.remove(&started.tool_call_id).unwrap_or_default() {
            cx.span()
                .add_event_with_timestamp(early.name, early.timestamp, early.attributes);
        }
        run.tools
            .insert(started.tool_call_id.clone(), (cx, SystemTime::now()));
    }

    fn tool_completed(&self, run: &mut RunSpans, completed: &ToolCompleted) {
        let Some((cx, started)) = run.tools.remove(&completed.tool_call_id) else {
            return;
        };
        let span = cx.span();
        let result = &completed.result;
        let status = match result.success {
            true => Status::Ok,
            false => Status::error(result.error.clone().unwrap_or_default()),
        };
        if !result.success {
            span.set_attribute(KeyValue::new("error.type", "tool_error"));
        }
        if let Some(text) = self.content(|| serde_json::to_value(result).unwrap_or_default()) {
            span.set_attribute(KeyValue::new("gen_ai.tool.call.result", text));
        }
        if let Some(server) = result.metadata.get("mcp_server").and_then(Value::as_str) {
            span.set_attribute(KeyValue::new("gen_ai.tool.type", "extension"));
            self.mcp_call(&cx, completed, server, started, status.clone());
        }
        span.set_status(status);
        span.end();
    }

    /// The MCP server's `tools/call` as a client span under the tool call: its times are
    /// the tool call's, as the engine sees it.
    fn mcp_call(
        &self,
        parent: &Context,
        completed: &ToolCompleted,
        server: &str,
        started: SystemTime,
        status: Status,
    ) {
        let mut span = self
            .tracer
            .span_builder(format!("tools/call {}", completed.tool_name))
            .with_kind(SpanKind::Client)
            .with_start_time(started)
            .with_attributes(vec![
                KeyValue::new("mcp.method.name", "tools/call"),
                KeyValue::new("gen_ai.tool.name", completed.tool_name.clone()),
                KeyValue::new("gen_ai.tool.call.id", completed.tool_call_id.clone()),
                KeyValue::new("runner.mcp.server", server.to_string()),
            ])
            .start_with_context(&self.tracer, parent);
        if let Status::Error { .. } = status {
            span.set_attribute(KeyValue::new("error.type", "tool_error"));
        }
        span.set_status(status);
        span.end();
    }

    /// An event of a tool call: on its span, or kept for it until it starts.
    fn tool_event(run: &mut RunSpans, call: &str, name: &'static str, attributes: Vec<KeyValue>) {
        match run.tools.get(call) {
            Some((cx, _)) => cx.span().add_event(name, attributes),
            None => run.early.entry(call.to_string()).or_default().push(
                opentelemetry::trace::Event::new(name, SystemTime::now(), attributes, 0),
            ),
        }
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
        let Some(mut run) = open.runs.remove(&event.run_id) else {
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
                let caller = open.runs.get(&event.run_id);
                if let Some((cx, _)) = caller.and_then(|run| run.tools.get(&started.tool_call_id)) {
                    open.sub_agents
                        .insert(started.sub_agent_run_id.clone(), cx.clone());
                }
            }
            data => {
                let Some(run) = open.runs.get_mut(&event.run_id) else {
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
            EventData::LlmUsage(usage) => {
                let chat = run.last_chat.as_ref().and_then(|id| run.chats.get_mut(id));
                if let Some(chat) = chat {
                    let model = KeyValue::new("gen_ai.response.model", shared(&usage.model));
                    chat.attributes.push(model.clone());
                    self.metrics.tokens(
                        usage.usage.input_tokens,
                        usage.usage.output_tokens,
                        &chat.attributes,
                    );
                    let span = chat.cx.span();
                    span.set_attribute(model);
                    span.set_attribute(KeyValue::new(
                        "gen_ai.usage.input_tokens",
                        usage.usage.input_tokens as i64,
                    ));
                    span.set_attribute(KeyValue::new(
                        "gen_ai.usage.output_tokens",
                        usage.usage.output_tokens as i64,
                    ));
                }
            }
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

/// The attributes of an `invoke_agent` span.
fn agent_attributes(agent: &str, event: &Event) -> Vec<KeyValue> {
    vec![
        KeyValue::new("gen_ai.operation.name", "invoke_agent"),
        KeyValue::new("gen_ai.agent.name", agent.to_string()),
        KeyValue::new("gen_ai.agent.id", event.run_id.clone()),
        KeyValue::new("gen_ai.conversation.id", event.thread_id.clone()),
    ]
}

/// The `gen_ai.request.*` attributes of the parameters a model call was sent with.
fn request_attributes(params: &RequestParams) -> Vec<KeyValue> {
    let floats = [
        ("gen_ai.request.temperature", params.temperature),
        ("gen_ai.request.top_p", params.top_p),
        ("gen_ai.request.top_k", params.top_k),
        ("gen_ai.request.frequency_penalty", params.frequency_penalty),
        ("gen_ai.request.presence_penalty", params.presence_penalty),
    ];
    let ints = [
        ("gen_ai.request.max_tokens", params.max_tokens),
        ("gen_ai.request.seed", params.seed),
        ("gen_ai.request.choice.count", params.choice_count),
    ];
    let mut attributes: Vec<KeyValue> = floats
        .into_iter()
        .filter_map(|(key, value)| Some(KeyValue::new(key, value?)))
        .chain(
            ints.into_iter()
                .filter_map(|(key, value)| Some(KeyValue::new(key, value?))),
        )
        .collect();
    if !params.stop_sequences.is_empty() {
        let stops = params.stop_sequences.iter().cloned().map(StringValue::from);
        attributes.push(KeyValue::new(
            "gen_ai.request.stop_sequences",
            OtelValue::Array(Array::String(stops.collect())),
        ));
    }
    attributes
}

/// A span's context as children are given it (W3C Trace Context).
pub(super) fn carried(span: &opentelemetry::trace::SpanContext) -> Carried {
    let flags = u8::from(span.is_sampled());
    Carried {
        traceparent: format!("00-{}-{}-{flags:02x}", span.trace_id(), span.span_id()),
        tracestate: Some(span.trace_state().header()).filter(|state| !state.is_empty()),
    }
}

/// `text` as an attribute value whose clones share it (an owned one is copied by each).
fn shared(text: &str) -> StringValue {
    StringValue::from(std::sync::Arc::<str>::from(text))
}

/// A unit enum's name as it is serialized (`allow`, `pre_tool_use`, `tool_calls`).
fn name_of<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        Ok(Value::Object(map)) => map
            .values()
            .next()
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        _ => String::new(),
    }
}
