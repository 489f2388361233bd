//! `summarize`: when the estimated history exceeds `threshold` tokens, a model call
//! summarises everything but the `keep_recent` last messages, which stay verbatim.

use super::chain::{CallContext, Middleware, Spend};
use super::history::{estimate_tokens, is_safe_cut};
use crate::engine::budget::PricedModel;
use crate::engine::events::Notice;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::provider::{BoxFuture, Message, ModelRequest, ProviderError, StreamDelta};

pub struct Summarize {
    threshold: u64,
    keep_recent: usize,
    model: PricedModel,
}

impl Summarize {
    pub fn new(threshold: u64, keep_recent: u64, model: PricedModel) -> Self {
        Summarize {
            threshold,
            keep_recent: keep_recent as usize,
            model,
        }
    }
}

pub const SUMMARY_PREFIX: &str = "[Summary of the earlier conversation]\n";

impl Middleware for Summarize {
    fn name(&self) -> &str {
        "summarize"
    }

    fn before<'a>(&'a self, mut ctx: CallContext) -> BoxFuture<'a, CallContext> {
        Box::pin(async move {
            let messages = &ctx.state.messages;
            let total: u64 = messages.iter().map(estimate_tokens).sum();
            if total <= self.threshold || messages.len() <= self.keep_recent {
                return ctx;
            }
            let mut cut = messages.len() - self.keep_recent;
            while cut > 0 && !is_safe_cut(messages, cut) {
                cut -= 1;
            }
            if cut == 0 {
                return ctx;
            }
            // A failed summary leaves the history as it was; the next call tries again.
            match summarize(&self.model, &messages[..cut], None).await {
                Ok((summary, spend)) => {
                    ctx.spent.push(spend);
                    let mut kept = vec![Message::user(format!("{SUMMARY_PREFIX}{summary}"))];
                    kept.extend_from_slice(&messages[cut..]);
                    ctx.state = ctx.state.with_context(kept);
                }
                Err(error) => ctx.emitter.notify(Notice::Log(format!(
                    "summarize: the summary call failed, history kept: {error}"
                ))),
            }
            ctx
        })
    }
}

/// Has `model` summarise `messages` (in at most `words` words, when given): the summary's
/// text and what the call spent. A summary a fallback model wrote is costed at that model's
/// prices.
pub async fn summarize(
    model: &PricedModel,
    messages: &[Message],
    words: Option<u64>,
) -> Result<(String, Spend), ProviderError> {
    let transcript: Vec<String> = messages
        .iter()
        .map(|m| serde_json::to_string(m).unwrap_or_default())
        .collect();
    let mut system =
        "You summarise conversations, keeping every fact, decision and open question.".to_string();
    if let Some(words) = words {
        system.push_str(&format!(" Use at most {words} words."));
    }
    let request = ModelRequest {
        system: Some(system),
        messages: vec![Message::user(format!(
            "Summarise this conversation:\n{}",
            transcript.join("\n")
        ))]
        .into(),
        ..ModelRequest::default()
    };
    let answered_by = AtomicUsize::new(0);
    let sink = |delta: StreamDelta| {
        if let StreamDelta::Fallback { position, .. } = delta {
            answered_by.store(position.index, Ordering::Relaxed);
        }
    };
    let summary = model.provider.stream(&request, &sink).await?;
    let spend = Spend {
        model: summary.model.clone(),
        usage: summary.usage,
        price: model.prices.at(answered_by.load(Ordering::Relaxed)),
    };
    Ok((summary.text, spend))
}
