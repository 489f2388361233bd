//! `prune_tool_outputs`: when the estimated context exceeds `context_limit -
//! output_reserve`, replaces old tool outputs with a marker, keeping the most recent
//! `protect_recent` tokens untouched.

use super::chain::{CallContext, Middleware};
use super::history::estimate_tokens;
use crate::provider::{BoxFuture, Message};
use crate::spec::middleware::PruneToolOutputsConfig;

pub const PRUNED_MARKER: &str = "[output cleared to save context]";

pub struct PruneToolOutputs {
    config: PruneToolOutputsConfig,
}

impl PruneToolOutputs {
    pub fn new(config: PruneToolOutputsConfig) -> Self {
        PruneToolOutputs { config }
    }
}

impl Middleware for PruneToolOutputs {
    fn name(&self) -> &str {
        "prune_tool_outputs"
    }

    fn before<'a>(&'a self, mut ctx: CallContext) -> BoxFuture<'a, CallContext> {
        Box::pin(async move {
            let usable = self
                .config
                .context_limit
                .saturating_sub(self.config.output_reserve);
            let total: u64 = ctx.state.messages.iter().map(estimate_tokens).sum();
            if total <= usable {
                return ctx;
            }
            let mut messages = ctx.state.messages.to_vec();
            let mut recent = 0;
            for message in messages.iter_mut().rev() {
                recent += estimate_tokens(message);
                if recent <= self.config.protect_recent {
                    continue;
                }
                if let Message::Tool(result) = message
                    && result.content != PRUNED_MARKER
                {
                    result.content = PRUNED_MARKER.to_string();
                }
            }
            ctx.state = ctx.state.with_context(messages);
            ctx
        })
    }
}
