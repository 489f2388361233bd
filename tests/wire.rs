//! What strict servers (llama.cpp, which renders a chat template from every request) accept:
//! the requests `runner` sends stay valid whatever the model did.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use runner::testing::mock_server::{MockRequest, MockResponse, Reply};
use serde_json::{Value, json};
use support::Test;

/// The tool-call arguments of every assistant message that do not parse as JSON.
fn unparsable_arguments(request: &MockRequest) -> Vec<String> {
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .filter_map(|call| {
            let text = call["function"]["arguments"].as_str()?.to_string();
            serde_json::from_str::<Value>(&text)
                .is_err()
                .then_some(text)
        })
        .collect()
}

/// A call cut off mid-arguments (as `max_tokens` does) goes back to the server as `{}`, so
/// the next request is valid; the model learns what went wrong from the tool error.
#[test]
fn a_malformed_tool_call_does_not_make_the_next_request_invalid() {
    let served = Arc::new(AtomicUsize::new(0));
    let count = served.clone();
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: read_file\n")
        .route(move |request| {
            let bad = unparsable_arguments(request);
            if !bad.is_empty() {
                // What llama.cpp does: it cannot render its template.
                return Some(MockResponse::error(500, format!("cannot parse {bad:?}")));
            }
            let reply = match count.fetch_add(1, Ordering::SeqCst) {
                0 => Reply::tool_call("read_file", json!("{\"path\": \"notes/proj")),
                _ => Reply::text("recovered"),
            };
            Some(MockResponse::reply(reply))
        })
        .stdout("recovered\n")
        .run();
    assert_eq!(served.load(Ordering::SeqCst), 2);
    let second = ran.requests()[1].body["messages"].to_string();
    assert!(second.contains("you wrote:"), "{second}");
    assert!(second.contains("notes/proj"), "{second}");
}

/// A streamed answer that stops at the model's length limit.
fn cut_off(text: &str) -> MockResponse {
    let chunk = |delta: Value, finish: Value| {
        let body = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {body}\n\n")
    };
    let sse = chunk(json!({"role": "assistant", "content": text}), Value::Null)
        + &chunk(json!({}), json!("length"))
        + "data: [DONE]\n\n";
    MockResponse::sse(sse)
}

#[test]
fn an_answer_cut_off_at_the_length_limit_is_a_warning_by_default() {
    let ran = Test::new()
        .agent("prompt: Go\n")
        .respond(cut_off("The answer is that the"))
        .args(["--output", "json"])
        .stderr_contains("cut off at the model's length limit")
        .run();
    let envelope = ran.json();
    assert_eq!(envelope["status"], "completed");
    assert!(
        envelope["warnings"][0]
            .as_str()
            .unwrap()
            .contains("finish_reason: length")
    );
}

#[test]
fn an_answer_cut_off_fails_the_run_when_the_file_says_so() {
    let ran = Test::new()
        .agent("prompt: Go\nanswer: { truncated: fail }\n")
        .respond(cut_off("The answer is that the"))
        .args(["--output", "json"])
        .status(1)
        .stderr_contains("error[truncated]")
        .run();
    assert_eq!(ran.json()["error"]["code"], "truncated");
}

#[test]
fn an_empty_answer_is_a_warning_or_a_failure() {
    Test::new()
        .agent("prompt: Go\n")
        .reply(Reply::text(""))
        .stdout("\n")
        .stderr_contains("the final answer is empty")
        .run();
    let ran = Test::new()
        .agent("prompt: Go\nanswer: { empty: fail }\n")
        .reply(Reply::text("  "))
        .args(["--output", "json"])
        .status(1)
        .stderr_contains("error[empty_answer]")
        .run();
    assert_eq!(ran.json()["error"]["code"], "empty_answer");
}

/// An agent on the OpenAI Responses API (`api: responses`) calls a tool, then answers: the
/// model's reasoning item goes back with its encrypted content before the call it led to,
/// and the tool's output comes back as a `function_call_output`.
#[test]
fn an_agent_on_the_responses_api_calls_a_tool_then_answers() {
    let model = "{ provider: openai, api: responses, name: gpt-5-mini, base_url: \"$OPENAI_URL\", \
                 api_key_env: RUNNER_TEST_KEY, retry: { max_attempts: 1 } }";
    let ran = Test::new()
        .agent(&format!(
            "name: test-agent\nmodel: {model}\nsystem: You read notes.\nprompt: Summarise notes.txt\n\
             tools:\n  - builtin: read_file\n"
        ))
        .file("notes.txt", "buy milk\n")
        .reply(
            Reply::tool_call("read_file", json!({"path": "notes.txt"}))
                .with_thinking("The notes are in notes.txt."),
        )
        .reply(Reply::text("You need milk."))
        .stdout("You need milk.\n")
        .run();
    let requests = ran.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.path == "/v1/responses"));
    assert_eq!(
        requests[0].system_prompt().as_deref(),
        Some("You read notes.")
    );
    assert_eq!(
        requests[0].last_user_text().as_deref(),
        Some("Summarise notes.txt")
    );
    let input = requests[1].conversation();
    let kinds: Vec<&str> = input.iter().filter_map(|i| i["type"].as_str()).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(input[1]["id"], "rs_mock1");
    assert_eq!(input[1]["encrypted_content"], "mock-encrypted-1");
    assert_eq!(input[2]["call_id"], "call_mock1_0");
    assert_eq!(input[3]["call_id"], "call_mock1_0");
    let output = input[3]["output"].as_str().unwrap();
    assert!(output.contains("buy milk"), "{output}");
}
