//! The `chat {model}` span of each model call, its usage, and the GenAI client metrics it
//! records (tokens, duration).

use std::time::SystemTime;

use opentelemetry::trace::{SpanKind, Status, TraceContextExt};
use opentelemetry::{Array, Context, KeyValue, StringValue, Value as OtelValue};

use super::super::attributes::{request_attributes, shared};
use super::super::content;
use super::super::metrics::GenAiMetrics;
use super::{GenAiSpans, RunSpans};
use crate::engine::events::{LlmUsage, MessageCompleted, MessageCreated};

/// An open model call: its span, when it started and its metric attributes.
pub(super) struct Chat {
    pub(super) cx: Context,
    started: SystemTime,
    attributes: Vec<KeyValue>,
}

impl Chat {
    /// The call's duration, recorded as it ends; `error_type` when it failed.
    pub(super) fn record_duration(&self, metrics: &GenAiMetrics, error_type: Option<&str>) {
        let seconds = self.started.elapsed().unwrap_or_default().as_secs_f64();
        let Some(error_type) = error_type else {
            return metrics.duration(seconds, &self.attributes);
        };
        let mut attributes = self.attributes.clone();
        attributes.push(KeyValue::new("error.type", error_type.to_string()));
        metrics.duration(seconds, &attributes);
    }
}

impl GenAiSpans {
    pub(super) fn chat_started(&self, run: &mut RunSpans, created: &MessageCreated) {
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

    pub(super) fn chat_completed(&self, run: &mut RunSpans, completed: &MessageCompleted) {
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

    /// A model call's usage: its tokens as metrics and on its span, with the model that
    /// answered.
    pub(super) fn usage(&self, run: &mut RunSpans, usage: &LlmUsage) {
        let chat = run.last_chat.as_ref().and_then(|id| run.chats.get_mut(id));
        let Some(chat) = chat else {
            return;
        };
        let model = KeyValue::new("gen_ai.response.model", shared(&usage.model));
        chat.attributes.push(model.clone());
        let tokens = &usage.usage;
        self.metrics
            .tokens(tokens.input_tokens, tokens.output_tokens, &chat.attributes);
        let span = chat.cx.span();
        span.set_attribute(model);
        span.set_attribute(KeyValue::new(
            "gen_ai.usage.input_tokens",
            tokens.input_tokens as i64,
        ));
        span.set_attribute(KeyValue::new(
            "gen_ai.usage.output_tokens",
            tokens.output_tokens as i64,
        ));
    }
}
