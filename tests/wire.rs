//! What real servers do to a run. Strict servers (llama.cpp renders a chat template from
//! every request) must accept every request `runner` sends, whatever the model did: each
//! scenario below runs on both wires, and the harness checks every request of every test
//! against `runner::testing::strict`. Replies cut off or empty, and slow streams, end the
//! run the way the file says.

mod support;

#[path = "wire/real_model.rs"]
mod real_model;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

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

/// Every wire: each scenario below runs once on each, and the harness checks each request
/// the mock receives against the strict-server rules (`runner::testing::strict`).
const WIRES: [&str; 3] = ["$MODEL", "$ANTHROPIC_MODEL", "$RESPONSES_MODEL"];

/// An agent file on `model` with `body` after its name and model.
fn on(model: &str, body: &str) -> Test {
    Test::new().agent(&format!("name: shape\nmodel: {model}\n{body}"))
}

const READS: &str = "prompt: Go\ntools:\n  - builtin: read_file\n";

#[test]
fn tool_errors_and_parallel_calls_keep_the_conversation_valid() {
    for model in WIRES {
        let ran = on(model, READS)
            .file("a.txt", "A")
            .reply(
                Reply::tool_call("read_file", json!({"path": "missing.txt"}))
                    .with_tool_call("read_file", json!({"path": "a.txt"}))
                    .with_tool_call("read_file", json!("{\"path\": \"a.t")),
            )
            .reply(Reply::text("done"))
            .args(["--output", "json"])
            .run();
        let result = ran.json();
        assert_eq!(result["output"], "done");
        assert_eq!(result["tool_calls"], 3, "the call that never parsed counts");
    }
}

/// `model.idle_timeout` bounds the silence between two pieces of a streamed reply.
#[test]
fn the_idle_timeout_is_set_in_the_file() {
    let ran = Test::new()
        .agent(
            "name: slow\nmodel: { provider: openai, name: m, base_url: \"$OPENAI_URL\", \
             api_key_env: RUNNER_TEST_KEY, idle_timeout: 150ms, retry: { max_attempts: 1 } }\nprompt: Go\n",
        )
        .respond(MockResponse::text("slow words").chunk_delay(Duration::from_millis(600)))
        .args(["--output", "json"])
        .status(1)
        .any_stderr()
        .run();
    assert_eq!(ran.json()["error"]["code"], "provider_timeout");
}

#[test]
fn plan_steps_keep_the_conversation_valid() {
    let plan = r#"{"steps": [{"id": "1", "description": "read a"}, {"id": "2", "description": "sum up", "depends_on": ["1"]}]}"#;
    for model in WIRES {
        on(model, &format!("{READS}execution: {{ strategy: plan }}\n"))
            .file("a.txt", "A")
            .reply(Reply::text(plan))
            .reply(Reply::tool_call("read_file", json!({"path": "a.txt"})))
            .reply(Reply::text("a says A"))
            .reply(Reply::text("summed"))
            .reply(Reply::text("The answer: A"))
            .stdout("The answer: A\n")
            .run();
    }
}

/// A provider error in a plan step ends the run with its own code at once, as in the loop
/// strategy: a new plan would meet the same error.
#[test]
fn a_provider_error_in_a_plan_step_ends_the_run_with_its_code() {
    let plan = r#"{"steps": [{"id": "1", "description": "read a"}]}"#;
    let ran = on(
        "$MODEL",
        &format!("{READS}execution: {{ strategy: plan }}\n"),
    )
    .reply(Reply::text(plan))
    .respond(MockResponse::error(400, "roles must alternate"))
    .args(["--output", "json"])
    .status(1)
    .stderr_contains("roles must alternate")
    .run();
    assert_eq!(ran.json()["error"]["code"], "provider_bad_request");
    assert_eq!(
        ran.requests().len(),
        2,
        "the plan and the failed step; no new plan"
    );
    assert_eq!(ran.json()["llm_calls"], 1, "one call answered");
}

#[test]
fn react_keeps_the_conversation_valid() {
    for model in WIRES {
        on(
            model,
            &format!("{READS}execution: {{ strategy: react, max_steps: 3 }}\n"),
        )
        .file("a.txt", "A")
        .reply(Reply::text("I should read a."))
        .reply(Reply::tool_call("read_file", json!({"path": "a.txt"})))
        .reply(Reply::text("I know enough."))
        .reply(Reply::text("It says A"))
        .stdout("It says A\n")
        .run();
    }
}

#[test]
fn the_xml_protocol_and_its_format_retries_keep_the_conversation_valid() {
    for model in WIRES {
        on(model, &format!("{READS}tool_protocol: xml\n"))
            .file("a.txt", "A")
            .reply(Reply::text("<read_file><path>a.txt</path></read_file>"))
            .reply(Reply::text("no action here"))
            .reply(Reply::text(
                "<attempt_completion><result>A</result></attempt_completion>",
            ))
            .stdout("A\n")
            .run();
    }
}

#[test]
fn structured_output_retries_keep_the_conversation_valid() {
    let body = "prompt: Go\noutput:\n  schema: { type: object, required: [ok] }\n";
    for model in WIRES {
        on(model, body)
            .reply(Reply::text("not json"))
            .reply(Reply::text("{\"ok\": true}"))
            .args(["--output", "json"])
            .run();
    }
}

#[test]
fn summarize_keeps_the_conversation_valid() {
    let body = format!("{READS}middleware:\n  - summarize: {{ threshold: 1, keep_recent: 1 }}\n");
    for model in WIRES {
        let ran = on(model, &body)
            .file("a.txt", "A")
            .reply(Reply::tool_call("read_file", json!({"path": "a.txt"})))
            .reply(Reply::text("summary of the reading"))
            .reply(Reply::text("done"))
            .args(["--output", "json"])
            .run();
        assert_eq!(ran.json()["output"], "done");
    }
}

#[test]
fn sub_agents_and_handoffs_keep_the_conversation_valid() {
    for model in WIRES {
        on(
            model,
            "prompt: Go\ntools:\n  - name: helper\n    description: Helps.\n    \
             parameters: { type: object, properties: { q: { type: string } }, required: [q] }\n    \
             agent: { name: helper, system: You help. }\n    prompt: \"Help with {{ q }}\"\n\
             handoffs:\n  - name: transfer\n    description: To B.\n    \
             agent: { name: b, system: You are B. }\n",
        )
        .reply(Reply::tool_call("helper", json!({"q": "x"})))
        .reply(Reply::text("helped"))
        .reply(Reply::tool_call("transfer", json!({})))
        .reply(Reply::text("B answers"))
        .stdout("B answers\n")
        .run();
    }
}

#[test]
fn a_resumed_question_keeps_the_conversation_valid() {
    for model in WIRES {
        let paused = on(model, "prompt: Go\ntools:\n  - builtin: ask_user\n")
            .reply(Reply::tool_call("ask_user", json!({"question": "Which?"})))
            .status(4)
            .any_stderr()
            .run();
        let session = paused.session();
        paused
            .then()
            .reply(Reply::text("as you said"))
            .command(["resume", &session, "--answer", "this one"])
            .stdout("as you said\n")
            .run();
    }
}

/// The text protocol asks the server to stop at the first action's closing tag, so a slow
/// server does not generate what would be ignored; the tag is put back in the history.
#[test]
fn the_xml_protocol_stops_the_reply_after_its_first_action() {
    // The Responses API has no stop sequences: its replies are read to the end.
    for model in ["$MODEL", "$ANTHROPIC_MODEL"] {
        let ran = on(model, &format!("{READS}tool_protocol: xml\n"))
            .file("a.txt", "A")
            .reply(Reply::text(
                "<read_file><path>a.txt</path></read_file>\nAnd now a second action nobody reads: \
                 <read_file><path>b.txt</path></read_file>",
            ))
            .reply(Reply::text(
                "<attempt_completion><result>A</result></attempt_completion> and a trailing essay",
            ))
            .args(["--output", "json"])
            .run();
        assert_eq!(ran.json()["output"], "A");
        let requests = ran.requests();
        let stop = requests[0].stop_sequences();
        assert!(stop.contains(&"</read_file>".to_string()), "{stop:?}");
        assert!(
            stop.contains(&"</attempt_completion>".to_string()),
            "{stop:?}"
        );
        let history = requests[1].body["messages"].to_string();
        assert!(
            history.contains("<read_file><path>a.txt</path></read_file>"),
            "{history}"
        );
        assert!(!history.contains("b.txt"), "{history}");
    }
}

/// A server error that says the request could not be read (llama.cpp's 500 when a request
/// breaks its template) is not retried, and the message says what was sent.
#[test]
fn a_request_the_server_cannot_read_is_not_retried_and_is_described() {
    let ran = Test::new()
        .agent(
            "name: strict\nmodel: { provider: openai, name: m, base_url: \"$OPENAI_URL\", \
             api_key_env: RUNNER_TEST_KEY, retry: { max_attempts: 4, initial_backoff: 1ms } }\n\
             prompt: Go\ntools:\n  - builtin: read_file\n",
        )
        .respond(MockResponse::error(
            500,
            "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101]",
        ))
        .args(["--output", "json"])
        .status(1)
        .stderr_contains("runner sent 1 message (user), 1 tool")
        .run();
    assert_eq!(ran.json()["error"]["code"], "provider_bad_request");
    assert_eq!(ran.requests().len(), 1, "not retried");
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

/// A server that enforces `response_format` as a grammar (llama.cpp) could only write the
/// JSON if the schema came with the tools: it goes on the answer call only, so the model
/// calls its tool first, answers, and is then asked for the JSON (without tools).
#[test]
fn an_output_schema_leaves_the_tools_usable_on_a_grammar_enforcing_server() {
    let ran = Test::new()
        .enforce_response_format()
        .agent(
            "prompt: How many legs has the animal in notes.txt?\ntools:\n  - builtin: read_file\n\
             output:\n  schema: { type: object, required: [legs], properties: { legs: { type: integer } } }\n",
        )
        .file("notes.txt", "A spider.\n")
        .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
        .reply(Reply::text("A spider has 8 legs."))
        .reply(Reply::text("{\"legs\": 8}"))
        .args(["--output", "json"])
        .run();
    let result = ran.json();
    assert_eq!(result["structured"], json!({"legs": 8}));
    assert_eq!(result["tool_calls"], 1, "the tool ran before the answer");
    let requests = ran.requests();
    assert_eq!(requests.len(), 3);
    for offered in &requests[..2] {
        assert!(offered.body.get("tools").is_some());
        assert!(offered.body.get("response_format").is_none());
    }
    assert!(requests[2].body.get("tools").is_none());
    assert!(requests[2].body["response_format"]["json_schema"].is_object());
    let asked = requests[2].last_user_text().unwrap();
    assert!(
        asked.contains("JSON value matching the output schema"),
        "{asked}"
    );
}

/// Structured output with a tool on every wire: a tool call, then the answer call.
#[test]
fn a_tool_call_then_a_structured_answer_keeps_the_conversation_valid() {
    let body = format!("{READS}output:\n  schema: {{ type: object, required: [ok] }}\n");
    for model in WIRES {
        let ran = on(model, &body)
            .file("a.txt", "A")
            .reply(Reply::tool_call("read_file", json!({"path": "a.txt"})))
            .reply(Reply::text("It says A."))
            .reply(Reply::text("{\"ok\": true}"))
            .args(["--output", "json"])
            .run();
        assert_eq!(ran.json()["structured"], json!({"ok": true}), "{model}");
    }
}

/// A server that answers `Connection: keep-alive` but closes the connection after each
/// reply loses the request sent next on it, before any byte of an answer: it goes again
/// at once on a new connection, which is not a retry (the mock model allows one attempt,
/// and nothing about retrying is said).
#[test]
fn a_pooled_connection_the_server_closed_is_replaced_without_a_retry() {
    let ran = Test::new()
        .close_after_each_reply()
        .agent(READS)
        .file("a.txt", "A")
        .reply(Reply::tool_call("read_file", json!({"path": "a.txt"})))
        .reply(Reply::tool_call("read_file", json!({"path": "a.txt"})))
        .reply(Reply::text("done"))
        .args(["--output", "json"])
        .run();
    let result = ran.json();
    assert_eq!(result["output"], "done");
    assert_eq!(result["retries"], 0);
    assert_eq!(ran.requests().len(), 3, "each answered once");
}

/// A `<result>` that quotes a tool call holds one of the stop sequences, and the server
/// cuts the reply there: the cut reply is dropped and the call made again without stop
/// sequences, so the answer is whole.
#[test]
fn a_stop_sequence_inside_a_result_is_recovered_by_asking_again_without_stops() {
    let quoted = "Call <read_file><path>a.txt</path></read_file> first.";
    let answer = format!("<attempt_completion><result>{quoted}</result></attempt_completion>");
    for model in ["$MODEL", "$ANTHROPIC_MODEL"] {
        let ran = on(model, &format!("{READS}tool_protocol: xml\n"))
            .reply(Reply::text(&answer))
            .reply(Reply::text(&answer))
            .args(["--output", "json"])
            .run();
        assert_eq!(ran.json()["output"], quoted, "{model}");
        let requests = ran.requests();
        assert_eq!(requests.len(), 2);
        let stops = requests[0].stop_sequences();
        assert!(stops.contains(&"</read_file>".to_string()), "{stops:?}");
        assert!(requests[1].stop_sequences().is_empty());
        assert_eq!(
            requests[1].conversation(),
            requests[0].conversation(),
            "the cut reply is not in the history"
        );
    }
}

/// A model that writes its answer straight into `<attempt_completion>`, without
/// `<result>`: the body is the answer.
#[test]
fn a_completion_without_a_result_gives_its_body_as_the_answer() {
    on("$MODEL", &format!("{READS}tool_protocol: xml\n"))
        .reply(Reply::text(
            "<attempt_completion>yes, and because the list is empty it will crash &amp; burn.</attempt_completion>",
        ))
        .stdout("yes, and because the list is empty it will crash & burn.\n")
        .run();
}

/// The closing tag a stop sequence left out is put back in what was streamed too, not
/// only in the history.
#[test]
fn the_streamed_text_of_a_stopped_action_ends_with_its_closing_tag() {
    let ran = on("$MODEL", &format!("{READS}tool_protocol: xml\n"))
        .file("a.txt", "A")
        .reply(Reply::text("<read_file><path>a.txt</path></read_file>"))
        .reply(Reply::text(
            "<attempt_completion><result>A</result></attempt_completion>",
        ))
        .run();
    let events = ran.events();
    let first = events
        .iter()
        .find(|e| {
            e["type"] == "thread.message.created" && e["data"]["message"]["role"] == "assistant"
        })
        .map(|e| e["data"]["message"]["id"].clone())
        .unwrap();
    let streamed: String = events
        .iter()
        .filter(|e| e["type"] == "thread.message.delta" && e["data"]["messageId"] == first)
        .filter_map(|e| e["data"]["delta"]["contentChunk"].as_str())
        .collect();
    assert_eq!(streamed, "<read_file><path>a.txt</path></read_file>");
}

/// A root with `answer: { empty: fail }` hands off to a target that answers empty: the
/// run fails, as the root's file says.
#[test]
fn the_roots_answer_policy_holds_after_a_handoff() {
    let ran = Test::new()
        .agent(
            "prompt: Go\nanswer: { empty: fail }\nhandoffs:\n  - name: transfer\n    \
             description: To B.\n    agent: { name: b, system: You are B. }\n",
        )
        .reply(Reply::tool_call("transfer", json!({})))
        .reply(Reply::text(""))
        .args(["--output", "json"])
        .status(1)
        .stderr_contains("error[empty_answer]")
        .run();
    assert_eq!(ran.json()["error"]["code"], "empty_answer");
}

/// A request longer than the model's window (llama.cpp's 400) is a matter of the prompt or
/// the window, not of `model.params`.
#[test]
fn a_context_overflow_hints_at_a_shorter_prompt_or_a_bigger_window() {
    let ran = Test::new()
        .agent("prompt: Go\n")
        .respond(MockResponse::error(
            400,
            "request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it",
        ))
        .args(["--output", "json"])
        .status(1)
        .any_stderr()
        .run();
    let error = &ran.json()["error"];
    assert_eq!(error["code"], "provider_bad_request");
    let said = format!("{}\n{}", error, ran.stderr);
    assert!(
        said.contains("does not fit the model's context window"),
        "{said}"
    );
    assert!(!said.contains("model.params"), "{said}");
}

/// llama.cpp answers a request that breaks its chat template with a 400: the hint says the
/// server could not read it.
#[test]
fn a_template_error_at_http_400_says_the_server_could_not_read_the_request() {
    Test::new()
        .agent("prompt: Go\n")
        .respond(MockResponse::error(
            400,
            "Failed to parse messages: Conversation roles must alternate user/assistant",
        ))
        .status(1)
        .stderr_contains("the server could not read the request")
        .run();
}

/// The agent-events reference's message events, on every wire: each message that joins
/// the thread is announced (the prompt, the model's replies, the tool result), the tool
/// call streams as `toolCallsChunk` deltas of its reply, and once the model has written it
/// whole, `thread.run.step.tool_call.completed_by_llm` says so before it runs.
#[test]
fn every_message_is_announced_and_tool_calls_stream_as_the_model_writes_them() {
    for model in WIRES {
        let arguments = json!({"path": "a.txt"});
        let ran = on(model, READS)
            .file("a.txt", "The contents of A")
            .reply(Reply::tool_call("read_file", arguments.clone()))
            .reply(Reply::text("A says hello."))
            .run();
        let events = ran.events();
        let created: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "thread.message.created")
            .map(|e| &e["data"])
            .collect();
        let roles: Vec<&str> = created
            .iter()
            .map(|c| c["message"]["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "tool", "assistant"], "{model}");
        assert_eq!(created[0]["message"]["content"], "Go", "{model}");
        assert_eq!(
            created[0]["stepId"],
            Value::Null,
            "{model}: before any step"
        );
        assert_eq!(created[1]["message"]["metadata"]["inProgress"], true);
        let tool = &created[2]["message"];
        assert_eq!(tool["metadata"]["inProgress"], false, "{model}");
        assert_eq!(tool["name"], "read_file", "{model}");
        assert!(
            tool["content"]
                .as_str()
                .unwrap()
                .contains("The contents of A"),
            "{model}: {tool}"
        );

        // The call's pieces, in its reply's deltas: id and name first, then the arguments.
        let reply_id = &created[1]["message"]["id"];
        let chunks: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "thread.message.delta" && e["data"]["messageId"] == *reply_id)
            .flat_map(|e| e["data"]["delta"]["toolCallsChunk"].as_array())
            .flatten()
            .collect();
        assert_eq!(chunks[0]["name"], "read_file", "{model}: {chunks:?}");
        let call_id = chunks[0]["id"].as_str().unwrap();
        assert_eq!(tool["toolCallId"], call_id, "{model}");
        let written: String = chunks
            .iter()
            .filter_map(|c| c["argumentsChunk"].as_str())
            .collect();
        assert!(
            chunks.len() > 2,
            "{model}: the arguments come in pieces: {chunks:?}"
        );
        assert_eq!(serde_json::from_str::<Value>(&written).unwrap(), arguments);

        // Written whole: after its last piece, before it is asked for and runs.
        let position = |kind: &str| events.iter().position(|e| e["type"] == kind).unwrap();
        let last_piece = events
            .iter()
            .rposition(|e| e["data"]["delta"]["toolCallsChunk"].is_array())
            .unwrap();
        let whole = position("thread.run.step.tool_call.completed_by_llm");
        let call = &events[whole]["data"]["toolCall"];
        assert_eq!(call["id"], call_id, "{model}");
        assert_eq!(call["arguments"], arguments, "{model}");
        assert!(last_piece < whole, "{model}");
        assert!(whole < position("thread.message.completed"), "{model}");
        assert!(whole < position("agent.tool.execution.started"), "{model}");
        assert_eq!(
            ran.events_of("thread.run.step.tool_call.completed_by_llm")
                .len(),
            1
        );
    }
}
