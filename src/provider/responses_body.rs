//! The Responses API request body, serialised from borrowed data (see
//! [`super::wire_body`]); the mapping is described in [`super::responses`].

use std::ops::Range;
use std::sync::Arc;

use serde::Serialize;
use serde::ser::Serializer;
use serde_json::{Map, Value};

use super::item_cache::{CachedItems, ItemCache};
use super::request_body::BodyWriter;
use super::tools_cache::ToolsCache;
use super::types::{Message, ModelRequest, ThinkingBlock, ToolSpec};
use super::wire_body::{Arguments, Body, Field, TRUE, WireField};

/// `store: false`: the server keeps nothing, the whole conversation is sent every time.
static FALSE: Value = Value::Bool(false);
/// What a stateless client needs back to carry reasoning into the next request.
const INCLUDE: &[&str] = &["reasoning.encrypted_content"];

/// The body for `req` to `model`. The input items that `cache` holds from the last
/// request are not serialised again.
pub(crate) fn request_body<'a>(
    model: &'a str,
    params: &'a Map<String, Value>,
    req: &'a ModelRequest,
    cache: &'a ItemCache,
    tools: &'a ToolsCache,
) -> Body<'a, Wire<'a>> {
    let mut body = Body::new();
    body.push("model", Field::Wire(Wire::Str(model)));
    if let Some(system) = req.system.as_deref() {
        body.push("instructions", Field::Wire(Wire::Str(system)));
    }
    body.push("input", Field::Wire(Wire::Input(input(req, cache))));
    if !req.tools.is_empty() {
        body.push("tools", Field::Wire(Wire::Tools(Tools(&req.tools, tools))));
    }
    if let Some(rf) = &req.response_format {
        let format = TextFormat {
            kind: "json_schema",
            name: &rf.name,
            schema: &rf.schema,
            strict: rf.strict,
        };
        body.push("text", Field::Wire(Wire::Text(Text { format })));
    }
    body.push("store", Field::Json(&FALSE));
    body.push("include", Field::Wire(Wire::Include(INCLUDE)));
    body.push("stream", Field::Json(&TRUE));
    body.merge_params(params, &req.params);
    body
}

/// The body's own fields.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum Wire<'a> {
    Str(&'a str),
    Input(CachedItems<'a, Item<'a>>),
    Tools(Tools<'a>),
    Text(Text<'a>),
    Include(&'static [&'static str]),
}

impl WireField for Wire<'_> {
    fn write_json(&self, out: &mut BodyWriter) -> serde_json::Result<()> {
        match self {
            Wire::Input(input) => input.write_json(out),
            Wire::Tools(tools) => tools.1.write(tools.0, tools, out),
            other => serde_json::to_writer(out, other),
        }
    }
}

/// The conversation as input items, through the cache.
fn input<'a>(req: &'a ModelRequest, cache: &'a ItemCache) -> CachedItems<'a, Item<'a>> {
    CachedItems {
        cache,
        first: None,
        messages: &req.messages,
        build: input_items,
    }
}

/// The input items of the messages from `from` on: an assistant turn becomes its
/// reasoning items, its text and its function calls, in that order (the order the model
/// produced them in a turn that called tools). Each item comes with the message it was
/// made from; the items of one message share it.
fn input_items(messages: &[Message], from: usize) -> Vec<(Range<usize>, Item<'_>)> {
    let items = messages
        .iter()
        .enumerate()
        .skip(from)
        .flat_map(|(at, message)| {
            items(message)
                .into_iter()
                .map(move |item| (at..at + 1, item))
        });
    items.collect()
}

fn items(m: &Message) -> Vec<Item<'_>> {
    match m {
        Message::System { content } => {
            vec![Item::message("system", Part::InputText { text: content })]
        }
        Message::User { content } => vec![Item::message("user", Part::InputText { text: content })],
        Message::Tool(r) => vec![Item::FunctionCallOutput {
            call_id: &r.tool_call_id,
            output: &r.content,
        }],
        Message::Assistant(a) => {
            let reasoning = a.thinking.iter().filter_map(reasoning_item);
            let text = (!a.text.is_empty())
                .then(|| Item::message("assistant", Part::OutputText { text: &a.text }));
            let calls = a.tool_calls.iter().map(|c| Item::FunctionCall {
                call_id: &c.id,
                name: &c.name,
                arguments: Arguments(c),
            });
            reasoning.chain(text).chain(calls).collect()
        }
    }
}

/// The block as a reasoning item, when it is one that can be sent back: with `store:
/// false` the server refuses an item it cannot decrypt ("Item not found"), and the
/// reasoning of other wires (Anthropic's signed thinking, plain reasoning text) has no
/// place here.
fn reasoning_item(t: &ThinkingBlock) -> Option<Item<'_>> {
    let item = t.reasoning_item.as_ref()?;
    let encrypted_content = item.encrypted_content.as_deref()?;
    let summary = (!t.text.is_empty()).then_some(SummaryText { text: &t.text });
    Some(Item::Reasoning {
        id: &item.id,
        summary: summary.into_iter().collect(),
        encrypted_content,
    })
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Item<'a> {
    Message {
        role: &'static str,
        content: [Part<'a>; 1],
    },
    Reasoning {
        id: &'a str,
        summary: Vec<SummaryText<'a>>,
        encrypted_content: &'a str,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: Arguments<'a>,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: &'a str,
    },
}

impl<'a> Item<'a> {
    fn message(role: &'static str, part: Part<'a>) -> Self {
        Item::Message {
            role,
            content: [part],
        }
    }
}

/// A content part: what the user (or system) said, or what the model said.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Part<'a> {
    InputText { text: &'a str },
    OutputText { text: &'a str },
}

#[derive(Serialize)]
#[serde(tag = "type", rename = "summary_text")]
pub(crate) struct SummaryText<'a> {
    text: &'a str,
}

/// Function tools, flat (not nested under `function` as in Chat Completions). `strict`
/// is sent as `false` because this API makes it `true` when absent, which would reject
/// every tool schema that does not follow OpenAI's strict rules.
/// The tools offered, and where their JSON is kept from one call to the next.
pub(crate) struct Tools<'a>(&'a Arc<[ToolSpec]>, &'a ToolsCache);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|t| WireTool {
            kind: "function",
            name: &t.name,
            description: &t.description,
            parameters: &t.parameters,
            strict: false,
        }))
    }
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    strict: bool,
}

/// `text: {format: {...}}`, the structured-output request.
#[derive(Serialize)]
pub(crate) struct Text<'a> {
    format: TextFormat<'a>,
}

#[derive(Serialize)]
struct TextFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    schema: &'a Value,
    strict: bool,
}
