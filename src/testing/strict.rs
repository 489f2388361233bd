//! What a strict server accepts: the request-shape rules that real servers enforce, checked
//! on every request the mock receives in the binary's tests.
//!
//! The rules come from what refuses a request in practice: llama.cpp renders each model's
//! own chat template (several raise on a second system message, on two user messages in a
//! row, or on tool-call arguments that are not JSON) and validates tool messages; OpenAI's
//! reference answers 400 when a tool message answers no call or a call is left unanswered;
//! Anthropic's wants user and assistant turns to alternate from a user turn, every
//! `tool_use` answered by a `tool_result` at the start of the next turn, and no empty text.
//! `docs/providers.md` lists them.

use std::collections::HashSet;

use serde_json::Value;

use super::exchange::{MockRequest, Wire};

/// Every rule `request` breaks, described for a test failure (empty: a strict server takes it).
pub fn violations(request: &MockRequest) -> Vec<String> {
    match request.wire() {
        Wire::OpenAi => chat_violations(&request.body),
        Wire::Anthropic => messages_violations(&request.body),
        Wire::Responses => responses_violations(&request.body),
        Wire::Unknown => Vec::new(),
    }
}

/// Chat Completions.
fn chat_violations(body: &Value) -> Vec<String> {
    let Some(messages) = body["messages"].as_array().filter(|m| !m.is_empty()) else {
        return vec!["`messages` is missing or empty".into()];
    };
    let mut found = Vec::new();
    let mut open_calls: Vec<String> = Vec::new(); // asked by the last assistant, unanswered
    let mut previous = "";
    for (at, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("");
        let mut say = |rule: String| found.push(format!("messages[{at}] ({role}): {rule}"));
        if role != "tool" && !open_calls.is_empty() {
            say(format!("tool calls {open_calls:?} were never answered"));
            open_calls.clear();
        }
        match role {
            "system" if at > 0 => say("a system message after the first".into()),
            "system" => {}
            "user" | "assistant" => {
                if role == previous {
                    say(format!("two {role} messages in a row"));
                }
                if matches!(previous, "" | "system") && role != "user" {
                    say("the conversation does not start with a user message".into());
                }
            }
            "tool" => {
                let id = message["tool_call_id"].as_str().unwrap_or("");
                match open_calls.iter().position(|open| open == id) {
                    Some(index) => {
                        open_calls.remove(index);
                    }
                    None => say(format!("answers `{id}`, which no open call has")),
                }
            }
            other => say(format!("unknown role `{other}`")),
        }
        if matches!(role, "system" | "user") && !non_empty_text(&message["content"]) {
            say("empty content".into());
        }
        if role == "assistant" {
            open_calls = chat_calls(message, &mut say);
        }
        previous = role;
    }
    if !open_calls.is_empty() {
        found.push(format!("tool calls {open_calls:?} were never answered"));
    }
    if !matches!(previous, "user" | "tool") {
        found.push(format!(
            "the last message is `{previous}`, not user or tool"
        ));
    }
    found
}

/// The ids of an assistant message's calls, checking each call's shape.
fn chat_calls(message: &Value, say: &mut impl FnMut(String)) -> Vec<String> {
    let calls = message["tool_calls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if calls.is_empty() && !message["content"].is_string() {
        say("neither content nor tool calls".into());
    }
    let mut ids = Vec::new();
    for call in &calls {
        let id = call["id"].as_str().unwrap_or("");
        if id.is_empty() || ids.iter().any(|seen| seen == id) {
            say(format!("a tool call id is empty or repeated: `{id}`"));
        }
        let arguments = call["function"]["arguments"].as_str().unwrap_or("");
        if !serde_json::from_str::<Value>(arguments).is_ok_and(|v| v.is_object()) {
            say(format!("arguments are not a JSON object: {arguments:?}"));
        }
        ids.push(id.to_string());
    }
    ids
}

/// Anthropic Messages.
fn messages_violations(body: &Value) -> Vec<String> {
    let Some(messages) = body["messages"].as_array().filter(|m| !m.is_empty()) else {
        return vec!["`messages` is missing or empty".into()];
    };
    let mut found = Vec::new();
    if !body["max_tokens"].is_u64() {
        found.push("`max_tokens` is required".into());
    }
    let mut asked: HashSet<String> = HashSet::new(); // tool_use ids of the last assistant turn
    for (at, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("");
        let mut say = |rule: String| found.push(format!("messages[{at}] ({role}): {rule}"));
        let expected = if at % 2 == 0 { "user" } else { "assistant" };
        if role != expected {
            say(format!(
                "turns must alternate from user; expected {expected}"
            ));
        }
        let blocks = content_blocks(&message["content"]);
        if blocks.is_empty() {
            say("empty content".into());
        }
        let answered = tool_results(&blocks, &mut say);
        if role == "user" && answered != asked {
            say(format!(
                "tool results {answered:?} do not answer the calls {asked:?}"
            ));
        }
        asked = blocks
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| {
                if !b["input"].is_object() {
                    say(format!("tool_use input is not an object: {}", b["input"]));
                }
                b["id"].as_str().unwrap_or("").to_string()
            })
            .collect();
        for block in &blocks {
            if block["type"] == "text" && !non_empty_text(&block["text"]) {
                say("an empty text block".into());
            }
        }
    }
    if messages.len() % 2 == 0 {
        found.push("the last turn is the assistant's, not the user's".into());
    }
    found
}

/// The Responses API: items rather than messages, and no role order to keep, but every
/// `function_call_output` must answer an earlier `function_call`, every call must be
/// answered, and arguments must be a JSON object.
fn responses_violations(body: &Value) -> Vec<String> {
    let Some(items) = body["input"].as_array().filter(|i| !i.is_empty()) else {
        return vec!["`input` is missing or empty".into()];
    };
    let mut found = Vec::new();
    let mut open_calls: Vec<&str> = Vec::new();
    for (at, item) in items.iter().enumerate() {
        let mut say = |rule: String| found.push(format!("input[{at}]: {rule}"));
        let call_id = item["call_id"].as_str().unwrap_or("");
        match item["type"].as_str().unwrap_or("") {
            "function_call" => {
                let arguments = item["arguments"].as_str().unwrap_or("");
                if !serde_json::from_str::<Value>(arguments).is_ok_and(|v| v.is_object()) {
                    say(format!("arguments are not a JSON object: {arguments:?}"));
                }
                open_calls.push(call_id);
            }
            "function_call_output" => match open_calls.iter().position(|id| *id == call_id) {
                Some(index) => {
                    open_calls.remove(index);
                }
                None => say(format!("answers `{call_id}`, which no open call has")),
            },
            "message" if item["role"] == "user" && !open_calls.is_empty() => {
                say(format!("tool calls {open_calls:?} were never answered"));
            }
            _ => {}
        }
    }
    if !open_calls.is_empty() {
        found.push(format!("tool calls {open_calls:?} were never answered"));
    }
    found
}

/// A message's content as blocks (a plain string is one text block).
fn content_blocks(content: &Value) -> Vec<Value> {
    match content {
        Value::String(text) => vec![serde_json::json!({"type": "text", "text": text})],
        Value::Array(blocks) => blocks.clone(),
        _ => Vec::new(),
    }
}

/// The ids a user turn answers; its tool results must come before any other block.
fn tool_results(blocks: &[Value], say: &mut impl FnMut(String)) -> HashSet<String> {
    let results = blocks
        .iter()
        .take_while(|b| b["type"] == "tool_result")
        .count();
    if blocks[results..].iter().any(|b| b["type"] == "tool_result") {
        say("a tool_result after other content".into());
    }
    blocks
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .filter_map(|b| b["tool_use_id"].as_str().map(String::from))
        .collect()
}

fn non_empty_text(value: &Value) -> bool {
    value.as_str().is_some_and(|text| !text.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chat(messages: Value) -> Vec<String> {
        chat_violations(&json!({ "messages": messages }))
    }

    #[test]
    fn a_valid_chat_with_tool_calls_passes() {
        let found = chat(json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}}
            ]},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
            {"role": "tool", "tool_call_id": "a", "content": "1"}
        ]));
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn chat_rules_each_catch_their_fault() {
        let call = |args: &str| {
            json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": args}}]})
        };
        let cases = [
            (
                json!([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]),
                "two user",
            ),
            (
                json!([{"role": "user", "content": "a"}, {"role": "system", "content": "b"}]),
                "system message after",
            ),
            (
                json!([{"role": "user", "content": "a"}, call("{\"p\": \"x")]),
                "not a JSON object",
            ),
            (
                json!([{"role": "user", "content": "a"}, call("{}"), {"role": "user", "content": "b"}]),
                "never answered",
            ),
            (
                json!([{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "z", "content": ""}]),
                "no open call",
            ),
            (json!([{"role": "user", "content": ""}]), "empty content"),
            (
                json!([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]),
                "last message",
            ),
        ];
        for (messages, rule) in cases {
            let found = chat(messages.clone());
            assert!(
                found.iter().any(|f| f.contains(rule)),
                "{rule}: {found:?} for {messages}"
            );
        }
    }

    #[test]
    fn anthropic_rules_each_catch_their_fault() {
        let check =
            |messages: Value| messages_violations(&json!({"max_tokens": 10, "messages": messages}));
        let valid = check(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "1"}, {"type": "text", "text": "more"}]}
        ]));
        assert!(valid.is_empty(), "{valid:?}");
        let unanswered = check(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
            {"role": "user", "content": "what?"}
        ]));
        assert!(
            unanswered.iter().any(|f| f.contains("do not answer")),
            "{unanswered:?}"
        );
        let twice =
            check(json!([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]));
        assert!(twice.iter().any(|f| f.contains("alternate")), "{twice:?}");
    }
}
