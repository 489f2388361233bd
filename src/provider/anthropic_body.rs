//! The Messages API request body, serialised from borrowed data (see
//! [`super::wire_body`]); the mapping is described in [`super::anthropic`].

use std::ops::Range;
use std::sync::Arc;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::anthropic::DEFAULT_MAX_TOKENS;
use super::item_cache::{CachedItems, ItemCache};
use super::request_body::BodyWriter;
use super::tools_cache::ToolsCache;
use super::types::{Message, ModelRequest, ToolSpec};
use super::wire_body::{Body, Field, TRUE, WireField};

/// The body for `req` to `model`. The turns that `cache` holds from the last request are
/// not serialised again.
pub(crate) fn request_body<'a>(
    model: &'a str,
    params: &'a Map<String, Value>,
    req: &'a ModelRequest,
    cache: &'a ItemCache,
    tools: &'a ToolsCache,
) -> Body<'a, Wire<'a>> {
    let mut body = Body::new();
    body.push("model", Field::Wire(Wire::Str(model)));
    body.push("max_tokens", Field::Wire(Wire::U64(DEFAULT_MAX_TOKENS)));
    if let Some(system) = system_prompt(req) {
        body.push("system", Field::Wire(Wire::String(system)));
    }
    let turns = CachedItems {
        cache,
        first: None,
        messages: &req.messages,
        build: turns,
    };
    body.push("messages", Field::Wire(Wire::Turns(turns)));
    if !req.tools.is_empty() {
        body.push("tools", Field::Wire(Wire::Tools(Tools(&req.tools, tools))));
    }
    if !req.stop.is_empty() {
        body.push("stop_sequences", Field::Wire(Wire::Strs(&req.stop)));
    }
    body.push("stream", Field::Json(&TRUE));
    body.merge_params(params, &req.params);
    body
}

/// The body's own fields.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum Wire<'a> {
    Str(&'a str),
    Strs(&'a [String]),
    String(String),
    U64(u64),
    Turns(CachedItems<'a, Turn<'a>>),
    Tools(Tools<'a>),
}

impl WireField for Wire<'_> {
    fn write_json(&self, out: &mut BodyWriter) -> serde_json::Result<()> {
        match self {
            Wire::Turns(turns) => turns.write_json(out),
            Wire::Tools(tools) => tools.1.write(tools.0, tools, out),
            other => serde_json::to_writer(out, other),
        }
    }
}

fn system_prompt(req: &ModelRequest) -> Option<String> {
    let schema = req.response_format.as_ref().map(|rf| {
        format!(
            "Reply with only a JSON value (no prose, no code fence) that matches this JSON Schema:\n{}",
            rf.schema
        )
    });
    let in_messages = req.messages.iter().filter_map(|m| match m {
        Message::System { content } => Some(content.as_str()),
        _ => None,
    });
    let parts: Vec<&str> = req
        .system
        .as_deref()
        .into_iter()
        .chain(in_messages)
        .chain(schema.as_deref())
        .filter(|p| !p.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

#[derive(Serialize)]
pub(crate) struct Turn<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        #[serde(skip_serializing_if = "is_false")]
        is_error: bool,
    },
    RedactedThinking {
        data: &'a str,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Input<'a>,
    },
}

fn is_false(b: &bool) -> bool {
    !b
}

/// A tool call's arguments: the object, or `{}` when they are not one.
struct Input<'a>(&'a Value);

impl Serialize for Input<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(_) => self.0.serialize(serializer),
            _ => serializer.serialize_map(Some(0))?.end(),
        }
    }
}

/// The conversation as alternating turns: tool results are user turns, and consecutive
/// turns of one role are merged. Each turn comes with the range of messages it was made
/// from; `from` is where to start (where a turn starts: a message joins only the turn
/// before it).
fn turns(messages: &[Message], from: usize) -> Vec<(Range<usize>, Turn<'_>)> {
    let mut turns: Vec<(Range<usize>, Turn<'_>)> = Vec::new();
    for (at, m) in messages.iter().enumerate().skip(from) {
        let (role, blocks) = match m {
            Message::System { .. } => continue, // in the `system` field
            Message::User { content } => ("user", vec![Block::Text { text: content }]),
            Message::Tool(r) => {
                let block = Block::ToolResult {
                    tool_use_id: &r.tool_call_id,
                    content: &r.content,
                    is_error: r.is_error,
                };
                ("user", vec![block])
            }
            Message::Assistant(a) => {
                let mut blocks = Vec::new();
                for t in &a.thinking {
                    if let Some(data) = &t.redacted {
                        blocks.push(Block::RedactedThinking { data });
                    } else if let Some(signature) = &t.signature {
                        blocks.push(Block::Thinking {
                            thinking: &t.text,
                            signature,
                        });
                    } // unsigned reasoning (another provider's) cannot be sent back
                }
                if !a.text.is_empty() {
                    blocks.push(Block::Text { text: &a.text });
                }
                for c in &a.tool_calls {
                    blocks.push(Block::ToolUse {
                        id: &c.id,
                        name: &c.name,
                        input: Input(&c.arguments),
                    });
                }
                if blocks.is_empty() {
                    continue; // the API rejects empty turns
                }
                ("assistant", blocks)
            }
        };
        match turns.last_mut() {
            Some((range, last)) if last.role == role => {
                last.content.extend(blocks);
                range.end = at + 1;
            }
            _ => turns.push((
                at..at + 1,
                Turn {
                    role,
                    content: blocks,
                },
            )),
        }
    }
    turns
}

/// The tools offered, and where their JSON is kept from one call to the next.
pub(crate) struct Tools<'a>(&'a Arc<[ToolSpec]>, &'a ToolsCache);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|t| WireTool {
            name: &t.name,
            description: &t.description,
            input_schema: &t.parameters,
        }))
    }
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}
