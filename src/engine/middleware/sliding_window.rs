//! `sliding_window`: keeps the most recent messages. The cut moves earlier until it does not
//! separate tool results from the assistant message that called them.

use super::{CallContext, Middleware, is_safe_cut};
use crate::provider::BoxFuture;

pub struct SlidingWindow {
    max_messages: usize,
}

impl SlidingWindow {
    pub fn new(max_messages: u64) -> Self {
        SlidingWindow {
            max_messages: max_messages.max(1) as usize,
        }
    }
}

impl Middleware for SlidingWindow {
    fn name(&self) -> &str {
        "sliding_window"
    }

    fn before<'a>(&'a self, mut ctx: CallContext) -> BoxFuture<'a, CallContext> {
        Box::pin(async move {
            let messages = &ctx.state.messages;
            if messages.len() <= self.max_messages {
                return ctx;
            }
            let mut cut = messages.len() - self.max_messages;
            // Moving the cut earlier keeps a few more messages but never orphans a result.
            while cut > 0 && !is_safe_cut(messages, cut) {
                cut -= 1;
            }
            let kept = messages[cut..].to_vec();
            ctx.state = ctx.state.with_context(kept);
            ctx
        })
    }
}
