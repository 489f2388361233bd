//! The `execute_tool {tool}` span of each tool call, what is said of a call before it
//! starts (kept until it does), and an MCP server's `tools/call` client span under it.

use std::time::SystemTime;

use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use serde_json::Value;

use super::{GenAiSpans, RunSpans};
use crate::engine::events::{ToolCompleted, ToolStarted};

impl GenAiSpans {
    pub(super) fn tool_started(&self, run: &mut RunSpans, started: &ToolStarted) {
        let Some(parent) = run.agent().cloned() else {
            return;
        };
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", started.tool_name.clone()),
            KeyValue::new("gen_ai.tool.call.id", started.tool_call_id.clone()),
            KeyValue::new("gen_ai.tool.type", "function"),
        ];
        if let Some(text) = self.content(|| Value::clone(&started.input)) {
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

    pub(super) fn tool_completed(&self, run: &mut RunSpans, completed: &ToolCompleted) {
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
    pub(super) fn tool_event(
        run: &mut RunSpans,
        call: &str,
        name: &'static str,
        attributes: Vec<KeyValue>,
    ) {
        match run.tools.get(call) {
            Some((cx, _)) => cx.span().add_event(name, attributes),
            None => run.early.entry(call.to_string()).or_default().push(
                opentelemetry::trace::Event::new(name, SystemTime::now(), attributes, 0),
            ),
        }
    }
}
