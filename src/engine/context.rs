//! Keeping the conversation inside the model's context window.
//!
//! Before each model call the request's size is estimated ([`estimate_request`], by
//! [`estimate_tokens`]); past
//! `threshold` of the window the history is compacted ([`compact`]) to half of that
//! (so that the next calls do not compact again at once): `summarize` has the agent's model
//! summarise the older messages, `truncate` drops them, `fail` ends the run. A provider's
//! context-length error compacts once more, whatever the estimate said, and the call is
//! made again. The cut never separates an assistant's tool calls from their results.

use crate::engine::budget::PricedModel;
use crate::engine::middleware::Spend;
use crate::engine::middleware::history::is_safe_cut;
use crate::engine::middleware::summarize::{SUMMARY_PREFIX, summarize};
use crate::engine::token_estimate::estimate_tokens;
use crate::provider::history::{History, MessageSpan};
use crate::provider::{Message, ModelRequest, ProviderError, ToolSpec};
use crate::spec::context::ContextStrategy;

/// The share of the window a request may fill when the file says nothing.
pub const DEFAULT_THRESHOLD: f64 = 0.8;

/// An agent's context policy: the window of each model of its chain, and what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextPolicy {
    /// The window of each model of the chain, by position (`None`: unknown).
    pub windows: Vec<Option<u64>>,
    pub threshold: f64,
    pub strategy: ContextStrategy,
}

impl ContextPolicy {
    /// The window a call that starts at chain position `index` must fit: the smallest known
    /// of that model's and the first model's (a call may go back to it after a cooldown).
    pub fn window(&self, index: usize) -> Option<u64> {
        let first = self.windows.first().copied().flatten();
        let current = self.windows.get(index).copied().flatten();
        match (first, current) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The largest estimate a request may have before it is compacted.
    pub fn limit(&self, index: usize) -> Option<u64> {
        self.window(index)
            .map(|window| (window as f64 * self.threshold) as u64)
    }
}

/// The estimated size of a request, in tokens: its system prompt, messages and tools as
/// JSON, counted by [`estimate_tokens`].
pub fn estimate_request(request: &ModelRequest) -> u64 {
    let messages: u64 = request.messages.iter().map(estimate_message).sum();
    let system = request.system.as_deref().map_or(0, estimate_tokens);
    messages + system + estimate_tools(&request.tools)
}

/// The estimated size of the tools offered, each serialised as a request holds it.
pub(crate) fn estimate_tools(tools: &[ToolSpec]) -> u64 {
    tools
        .iter()
        .map(|tool| serde_json::to_string(tool).map_or(0, |t| estimate_tokens(&t)))
        .sum()
}

/// The estimated size of a history, kept from one call to the next. A message is
/// serialised to be estimated, and doing that for the whole history before every call made
/// a step with a known window cost in proportion to the run (2.5 M instructions a step at
/// 300 steps, 7.7 M at 1,000). A history grows only at its end while its messages keep
/// their numbers ([`MessageSpan`]), so only the messages added since the last call are
/// estimated; a history replaced (compacted, edited) is estimated whole again.
#[derive(Debug, Default)]
pub(crate) struct HistoryEstimate {
    /// The messages estimated last (their span and count) and their total.
    known: Option<(MessageSpan, usize, u64)>,
}

impl HistoryEstimate {
    /// The estimated size of `history`, in tokens: the sum of [`estimate_message`].
    pub(crate) fn of(&mut self, history: &History) -> u64 {
        let ids = history.ids();
        let (from, known) = match self.known {
            Some((span, len, total))
                if MessageSpan::of(ids.get(..len).unwrap_or_default()) == Some(span) =>
            {
                (len, total)
            }
            _ => (0, 0),
        };
        let total = known + history[from..].iter().map(estimate_message).sum::<u64>();
        self.known = MessageSpan::of(ids).map(|span| (span, ids.len(), total));
        total
    }
}

/// The estimated size of one message, in tokens.
pub fn estimate_message(message: &Message) -> u64 {
    serde_json::to_string(message).map_or(0, |text| estimate_tokens(&text))
}

/// A compaction done: the history to send, and what it cost.
pub struct Compacted {
    pub messages: Vec<Message>,
    /// The summary's text (`summarize`).
    pub summary: Option<String>,
    /// Messages taken out of the history (summarised or dropped).
    pub removed: usize,
    /// The summary call's spend.
    pub spend: Option<Spend>,
}

/// Why a history could not be compacted.
#[derive(Debug)]
pub enum CompactError {
    /// Nothing can be taken out: every message is recent, or a cut would split a tool call
    /// from its results.
    NothingToCut,
    /// The summary call failed.
    Summary(ProviderError),
}

impl std::fmt::Display for CompactError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompactError::NothingToCut => f.write_str(
                "the history cannot be shortened: its last message alone fills the budget",
            ),
            CompactError::Summary(error) => write!(f, "the summary call failed: {error}"),
        }
    }
}

/// Compacts `messages` so that the recent ones kept fill at most `keep_tokens`: the older
/// ones are summarised by `model` (`summarize`) or dropped but for the first user message
/// (`truncate`).
pub async fn compact(
    strategy: ContextStrategy,
    model: &PricedModel,
    messages: &[Message],
    keep_tokens: u64,
) -> Result<Compacted, CompactError> {
    let cut = cut_point(messages, keep_tokens).ok_or(CompactError::NothingToCut)?;
    match strategy {
        ContextStrategy::Truncate => {
            let first = messages
                .first()
                .filter(|m| matches!(m, Message::User { .. }) && cut > 0);
            let mut kept: Vec<Message> = first.cloned().into_iter().collect();
            let from = cut.max(kept.len());
            kept.extend_from_slice(&messages[from..]);
            Ok(Compacted {
                removed: messages.len() - kept.len(),
                messages: kept,
                summary: None,
                spend: None,
            })
        }
        ContextStrategy::Summarize | ContextStrategy::Fail => {
            // Half the budget for the summary, in words (a token is about 3/4 of a word).
            let words = (keep_tokens / 2).max(50);
            let (summary, spend) = summarize(model, &messages[..cut], Some(words))
                .await
                .map_err(CompactError::Summary)?;
            let mut kept = vec![Message::user(format!("{SUMMARY_PREFIX}{summary}"))];
            kept.extend_from_slice(&messages[cut..]);
            Ok(Compacted {
                messages: kept,
                summary: Some(summary),
                removed: cut,
                spend: Some(spend),
            })
        }
    }
}

/// Where the older messages end: the earliest index from which the rest fits in
/// `keep_tokens`, moved later until it does not separate a tool call from its results
/// (never past the last message: the latest one always stays). `None` when nothing would
/// be taken out.
fn cut_point(messages: &[Message], keep_tokens: u64) -> Option<usize> {
    let last = messages.len().checked_sub(1)?;
    let mut cut = messages.len();
    let mut kept = 0;
    while cut > 0 {
        let size = estimate_message(&messages[cut - 1]);
        if kept + size > keep_tokens {
            break;
        }
        kept += size;
        cut -= 1;
    }
    // Later keeps less (it still fits); only when no later cut is safe, earlier.
    let start = cut.min(last);
    let later = (start..=last).find(|&i| is_safe_cut(messages, i));
    let cut = later.or_else(|| (1..start).rev().find(|&i| is_safe_cut(messages, i)))?;
    (cut > 0).then_some(cut)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::types::ToolResult;
    use crate::provider::{AssistantMessage, ToolCall};

    #[test]
    fn a_history_estimate_kept_across_calls_is_the_sum_of_its_messages() {
        let whole = |history: &History| history.iter().map(estimate_message).sum::<u64>();
        let mut estimate = HistoryEstimate::default();
        let mut history = History::from(vec![Message::user("list the notes")]);
        assert_eq!(estimate.of(&history), whole(&history));
        // Appended to: the earlier messages' estimate is reused.
        history.push(calling());
        history.push(Message::assistant("three notes: a, b and c"));
        assert_eq!(estimate.of(&history), whole(&history));
        // A copy appended to apart, and the history it came from: each as it is.
        let mut other = history.clone();
        other.push(Message::user("and the fourth?"));
        assert_eq!(estimate.of(&other), whole(&other));
        assert_eq!(estimate.of(&history), whole(&history));
        // Replaced by fewer, different messages (compacted): estimated whole again.
        let compacted = History::from(vec![Message::user("a summary")]);
        assert_eq!(estimate.of(&compacted), whole(&compacted));
        assert_eq!(estimate.of(&History::default()), 0);
    }

    fn calling() -> Message {
        Message::Assistant(AssistantMessage {
            text: String::new(),
            thinking: Vec::new(),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "list_dir".into(),
                arguments: serde_json::json!({}).into(),
                invalid_arguments: None,
            }],
        })
    }

    fn result() -> Message {
        Message::Tool(ToolResult {
            tool_call_id: "c1".into(),
            name: "list_dir".into(),
            content: "x".repeat(300),
            is_error: false,
        })
    }

    #[test]
    fn a_cut_never_separates_a_call_from_its_result() {
        let messages = vec![
            Message::user("Go"),
            calling(),
            result(),
            calling(),
            result(),
        ];
        let small = estimate_message(&messages[4]);
        // Room for the last result only: the cut moves to the message after it, the last.
        let cut = cut_point(&messages, small).unwrap();
        assert!(is_safe_cut(&messages, cut));
        assert_ne!(cut, 4);
        // Room for everything: nothing to take out.
        assert_eq!(cut_point(&messages, u64::MAX), None);
    }
}
