//! A model that answers from a script, for offline examples and tests.
//!
//! Responses are given out in order, one per call, whatever the request; asking for one
//! more than the script holds is a `ScriptExhausted` error. The position is the session's,
//! as a model's history is: a model first asked to go on with a conversation that already
//! holds replies of its script (`runner resume`) goes on after the last of them, rather
//! than from its first reply (which would ask a resumed `ask_user` again). Answers are
//! streamed (text in word-sized deltas, then tool calls) so consumers see the same events
//! as from a real provider. Tool call ids are deterministic: `call_<response>_<call>`.

use std::sync::Mutex;

use serde_json::Value;

use super::error::{ErrorKind, ProviderError};
use super::types::{
    AssistantMessage, FinishReason, Message, ModelRequest, ModelResponse, StreamDelta,
    ThinkingBlock, ToolCall, Usage,
};
use super::{BoxFuture, DeltaSink, Provider};
use crate::sync::lock;

// The script is what the agent file says (`model.script`): its types are the spec's.
pub use crate::spec::script::{ScriptedResponse, ScriptedToolCall, ScriptedUsage};

pub struct ScriptedProvider {
    model: String,
    script: Vec<ScriptedResponse>,
    /// The next response; `None` until the first call places it.
    next: Mutex<Option<usize>>,
}

impl ScriptedProvider {
    pub fn new(model: impl Into<String>, script: Vec<ScriptedResponse>) -> Self {
        ScriptedProvider {
            model: model.into(),
            script,
            next: Mutex::new(None),
        }
    }

    /// How many responses have been given out.
    pub fn used(&self) -> usize {
        let next = lock(&self.next);
        next.unwrap_or(0).min(self.script.len())
    }

    fn answer(
        &self,
        req: &ModelRequest,
        sink: &DeltaSink<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        let n = {
            let mut next = lock(&self.next);
            let n = next.unwrap_or_else(|| self.position_after(&req.messages));
            *next = Some(n + 1);
            n
        };
        let Some(entry) = self.script.get(n) else {
            return Err(ProviderError::new(
                ErrorKind::ScriptExhausted,
                "scripted",
                format!(
                    "the script has {} response(s) and call {} asked for another",
                    self.script.len(),
                    n + 1
                ),
            )
            .with_hint("add entries to model.script"));
        };
        Ok(render(entry, n, &self.model, sink))
    }

    /// Where a conversation goes on: after the script's reply that is its last reply (a
    /// resumed session), else at the first. Replies are known by their text and their
    /// calls' ids and names; of equal replies, the first that can be this far into the
    /// conversation.
    fn position_after(&self, messages: &[Message]) -> usize {
        let replies: Vec<&AssistantMessage> = messages
            .iter()
            .filter_map(|message| match message {
                Message::Assistant(reply) => Some(reply),
                _ => None,
            })
            .collect();
        let Some(last) = replies.last() else {
            return 0;
        };
        let calls = |calls: &[ToolCall]| -> Vec<(String, String)> {
            calls
                .iter()
                .map(|c| (c.id.clone(), c.name.clone()))
                .collect()
        };
        let found: Vec<usize> = (0..self.script.len())
            .filter(|&n| {
                let given = render(&self.script[n], n, &self.model, &|_| {});
                given.text == last.text && calls(&given.tool_calls) == calls(&last.tool_calls)
            })
            .collect();
        found
            .iter()
            .find(|&&n| n + 1 >= replies.len())
            .or(found.last())
            .map_or(0, |n| n + 1)
    }
}

/// Streams `entry` into `sink` and returns it as a response. Shared with replay.
pub(crate) fn render(
    entry: &ScriptedResponse,
    n: usize,
    model: &str,
    sink: &DeltaSink<'_>,
) -> ModelResponse {
    let mut thinking = Vec::new();
    if let Some(t) = entry.thinking.as_ref().filter(|t| !t.is_empty()) {
        sink(StreamDelta::Thinking { text: t.clone() });
        thinking.push(ThinkingBlock {
            text: t.clone(),
            ..Default::default()
        });
    }
    let text = entry.text.clone().unwrap_or_default();
    for piece in word_pieces(&text) {
        sink(StreamDelta::Text {
            text: piece.to_string(),
        });
    }
    let mut tool_calls = Vec::new();
    for (i, c) in entry.tool_calls.iter().enumerate() {
        let id =
            c.id.clone()
                .unwrap_or_else(|| format!("call_{}_{}", n + 1, i + 1));
        let raw = match &c.arguments {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            v => v.to_string(),
        };
        sink(StreamDelta::ToolCallStart {
            index: i,
            id: id.clone(),
            name: c.name.clone(),
        });
        if !raw.is_empty() {
            sink(StreamDelta::ToolCallArguments {
                index: i,
                fragment: raw.clone(),
            });
        }
        tool_calls.push(ToolCall::from_raw(id, c.name.clone(), &raw));
    }
    let u = entry.usage.unwrap_or_default();
    let usage = Usage::new(u.input_tokens, u.output_tokens);
    sink(StreamDelta::Usage { usage });
    let finish_reason = if tool_calls.is_empty() {
        FinishReason::Stop
    } else {
        FinishReason::ToolCalls
    };
    ModelResponse {
        text,
        thinking,
        tool_calls,
        usage,
        finish_reason,
        model: model.to_string(),
        id: None,
    }
}

/// Splits text after each run of whitespace: "a b  c" -> "a ", "b  ", "c".
pub(crate) fn word_pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let after = &rest[word_end..];
        let ws = after
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(after.len());
        let (piece, tail) = rest.split_at(word_end + ws);
        rest = tail;
        Some(piece)
    })
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        &self.model
    }
    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
        sink: &'a DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(async move { self.answer(req, sink) })
    }
}

#[cfg(test)]
mod tests {
    use super::word_pieces;

    #[test]
    fn word_pieces_rejoin_to_the_text() {
        for text in ["", "a", "a b  c", " lead", "trail ", "Olá mundo\n!"] {
            let pieces: Vec<_> = word_pieces(text).collect();
            assert_eq!(pieces.concat(), text);
        }
        assert_eq!(
            word_pieces("a b  c").collect::<Vec<_>>(),
            vec!["a ", "b  ", "c"]
        );
    }
}
