//! The Chat Completions request body, serialised from borrowed data (see
//! [`super::wire_body`]): the system prompt and messages, tools, the response format, and
//! streaming with usage, then `params` merged over it.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use serde::Serialize;
use serde::ser::Serializer;
use serde_json::{Map, Value};

use super::item_cache::{CachedItems, ItemCache};
use super::request_body::BodyWriter;
use super::tools_cache::ToolsCache;
use super::types::{Message, ModelRequest, ToolCall, ToolSpec};
use super::wire_body::{Arguments, Body, Field, TRUE, WireField};

/// What a server takes of a request, besides what every server does.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Takes {
    /// `req.stop` (OpenAI's own API takes at most 4 stop sequences, its reasoning models none).
    pub stop: bool,
    /// `response_format` on a request with tools. A server that enforces the schema as a
    /// grammar (llama.cpp) would leave the model no way to call a tool: the schema goes
    /// only on requests without tools (the engine's answer call).
    pub schema_with_tools: bool,
}

impl Takes {
    #[cfg(test)]
    pub const ALL: Takes = Takes {
        stop: true,
        schema_with_tools: true,
    };
}

/// The body for `req` to `model`, with what the server `takes`. The history's messages
/// that `cache` holds from the last request are not serialised again.
pub(crate) fn request_body<'a>(
    model: &'a str,
    params: &'a Map<String, Value>,
    req: &'a ModelRequest,
    takes: Takes,
    cache: &'a ItemCache,
    tools: &'a ToolsCache,
) -> Body<'a, Wire<'a>> {
    let mut body = Body::new();
    body.push("model", Field::Wire(Wire::Str(model)));
    body.push(
        "messages",
        Field::Wire(Wire::Messages(messages(req, cache))),
    );
    if !req.tools.is_empty() {
        body.push("tools", Field::Wire(Wire::Tools(Tools(&req.tools, tools))));
    }
    let format = req
        .response_format
        .as_ref()
        .filter(|_| takes.schema_with_tools || req.tools.is_empty());
    if let Some(rf) = format {
        let format = ResponseFormat {
            kind: "json_schema",
            json_schema: JsonSchema {
                name: &rf.name,
                schema: &rf.schema,
                strict: rf.strict,
            },
        };
        body.push("response_format", Field::Wire(Wire::ResponseFormat(format)));
    }
    if takes.stop && !req.stop.is_empty() {
        body.push("stop", Field::Wire(Wire::Strs(&req.stop)));
    }
    body.push("stream", Field::Json(&TRUE));
    let options = StreamOptions {
        include_usage: true,
    };
    body.push("stream_options", Field::Wire(Wire::StreamOptions(options)));
    body.merge_params(params, &req.params);
    // Servers reject stream options on a request that does not stream.
    if !body.is_true("stream") {
        body.remove("stream_options");
    }
    body
}

/// The body's own fields.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum Wire<'a> {
    Str(&'a str),
    Strs(&'a [String]),
    Messages(CachedItems<'a, WireMessage<'a>>),
    Tools(Tools<'a>),
    ResponseFormat(ResponseFormat<'a>),
    StreamOptions(StreamOptions),
}

impl WireField for Wire<'_> {
    fn write_json(&self, out: &mut BodyWriter) -> serde_json::Result<()> {
        match self {
            Wire::Messages(messages) => messages.write_json(out),
            Wire::Tools(tools) => tools.1.write(tools.0, tools, out),
            other => serde_json::to_writer(out, other),
        }
    }
}

/// The system prompt, then the conversation.
fn messages<'a>(req: &'a ModelRequest, cache: &'a ItemCache) -> CachedItems<'a, WireMessage<'a>> {
    CachedItems {
        cache,
        first: system_prompt(req).map(|content| WireMessage::System { content }),
        messages: &req.messages,
        build: conversation,
    }
}

/// One system message, first: `system` and any `Message::System` of the history joined,
/// since many chat templates refuse a system message anywhere else.
fn system_prompt(req: &ModelRequest) -> Option<Cow<'_, str>> {
    let mut parts = req
        .system
        .iter()
        .map(String::as_str)
        .chain(req.messages.iter().filter_map(|m| match m {
            Message::System { content } => Some(content.as_str()),
            _ => None,
        }));
    let first = parts.next()?;
    Some(parts.fold(Cow::Borrowed(first), |joined, more| {
        Cow::Owned(format!("{joined}\n\n{more}"))
    }))
}

/// The history with consecutive user messages joined into one: many chat templates
/// (llama.cpp renders the model's own) insist that user and assistant alternate, and a
/// plan step's instruction follows the task as a second user message. Each wire message
/// comes with the range of messages it was made from; `from` is where to start (where a
/// wire message starts: a message joins only the one before it).
fn conversation(messages: &[Message], from: usize) -> Vec<(Range<usize>, WireMessage<'_>)> {
    let mut wire: Vec<(Range<usize>, WireMessage<'_>)> = Vec::new();
    for (at, message) in messages.iter().enumerate().skip(from) {
        match (wire.last_mut(), message) {
            (_, Message::System { .. }) => {} // in the system prompt
            (Some((range, WireMessage::User { content })), Message::User { content: more }) => {
                *content = Cow::Owned(format!("{content}\n\n{more}"));
                range.end = at + 1;
            }
            _ => wire.push((at..at + 1, WireMessage::from(message))),
        }
    }
    wire
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub(crate) enum WireMessage<'a> {
    System {
        content: Cow<'a, str>,
    },
    User {
        content: Cow<'a, str>,
    },
    Assistant {
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Calls::is_empty")]
        tool_calls: Calls<'a>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

impl<'a> From<&'a Message> for WireMessage<'a> {
    fn from(m: &'a Message) -> Self {
        match m {
            Message::System { content } => WireMessage::System {
                content: Cow::Borrowed(content),
            },
            Message::User { content } => WireMessage::User {
                content: Cow::Borrowed(content),
            },
            // Reasoning is not sent back: Chat Completions has no field for it.
            Message::Assistant(a) => WireMessage::Assistant {
                content: (!a.text.is_empty() || a.tool_calls.is_empty()).then_some(&*a.text),
                tool_calls: Calls(&a.tool_calls),
            },
            Message::Tool(r) => WireMessage::Tool {
                tool_call_id: &r.tool_call_id,
                content: &r.content,
            },
        }
    }
}

pub(crate) struct Calls<'a>(&'a [ToolCall]);

impl Calls<'_> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|c| WireCall {
            id: &c.id,
            kind: "function",
            function: CallFunction {
                name: &c.name,
                arguments: Arguments(c),
            },
        }))
    }
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CallFunction<'a>,
}

#[derive(Serialize)]
struct CallFunction<'a> {
    name: &'a str,
    arguments: Arguments<'a>,
}

/// The tools offered, and where their JSON is kept from one call to the next.
pub(crate) struct Tools<'a>(&'a Arc<[ToolSpec]>, &'a ToolsCache);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|t| WireTool {
            kind: "function",
            function: ToolFunction {
                name: &t.name,
                description: &t.description,
                parameters: &t.parameters,
            },
        }))
    }
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ToolFunction<'a>,
}

#[derive(Serialize)]
struct ToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Serialize)]
pub(crate) struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchema<'a>,
}

#[derive(Serialize)]
struct JsonSchema<'a> {
    name: &'a str,
    schema: &'a Value,
    strict: bool,
}

#[derive(Serialize)]
pub(crate) struct StreamOptions {
    include_usage: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_user_messages_go_as_one() {
        let req = ModelRequest {
            system: Some("sys".into()),
            messages: vec![
                Message::user("the task"),
                Message::user("Do plan step 1"),
                Message::assistant("done"),
                Message::system("more rules"),
                Message::user("compose"),
            ]
            .into(),
            ..ModelRequest::default()
        };
        let (cache, tools, params) = (ItemCache::default(), ToolsCache::default(), Map::new());
        let body = request_body("m", &params, &req, Takes::ALL, &cache, &tools);
        let body = serde_json::to_value(body).unwrap();
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["system", "user", "assistant", "user"]);
        assert_eq!(body["messages"][0]["content"], "sys\n\nmore rules");
        assert_eq!(body["messages"][1]["content"], "the task\n\nDo plan step 1");
    }

    fn tool(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: format!("The {name} tool."),
            parameters: serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        }
    }

    #[test]
    fn a_cached_history_and_tools_are_sent_as_the_same_bytes() {
        let (cache, tools, params) = (ItemCache::default(), ToolsCache::default(), Map::new());
        let fresh = |req: &ModelRequest| {
            let (cache, tools) = (ItemCache::default(), ToolsCache::default());
            let body = request_body("m", &params, req, Takes::ALL, &cache, &tools);
            serde_json::to_string(&body).unwrap()
        };
        // Written the way requests are, against serialised through serde.
        let cached = |req: &ModelRequest| {
            let mut out = BodyWriter::default();
            let body = request_body("m", &params, req, Takes::ALL, &cache, &tools);
            body.write_json(&mut out).unwrap();
            String::from_utf8(out.finish().joined().to_vec()).unwrap()
        };
        let mut req = ModelRequest {
            system: Some("sys".into()),
            messages: vec![Message::user("task"), Message::user("step 1")].into(),
            tools: vec![tool("one"), tool("two")].into(),
            ..ModelRequest::default()
        };
        assert_eq!(cached(&req), fresh(&req));
        req.messages.push(Message::assistant("one"));
        req.messages.push(Message::user("more"));
        assert_eq!(cached(&req), fresh(&req));
        // Another list of tools is serialised anew.
        req.tools = vec![tool("three")].into();
        assert_eq!(cached(&req), fresh(&req));
        assert!(cached(&req).contains("The three tool."));
        // A history rewritten by context management has new numbers: nothing is reused.
        req.messages = vec![Message::user("summary"), Message::assistant("one")].into();
        req.system = Some("other".into());
        assert_eq!(cached(&req), fresh(&req));
    }
}
