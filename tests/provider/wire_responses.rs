//! The OpenAI Responses API wire against the mock server: what is sent (instructions,
//! input items, flat tools, `text.format`, stateless reasoning) and how the events come
//! back together (text, parallel calls, reasoning carried into the next request,
//! incomplete responses, errors, cassettes).

use runner::provider::cassette::Exchange;
use runner::provider::{
    AssistantMessage, BuildOptions, CassetteRecorder, ErrorKind, FinishReason, Message,
    ModelRequest, ModelResponse, ProviderError, ProviderKind, ReasoningItem, ReplayStore,
    ResponseFormat, StreamDelta, ThinkingBlock, ToolCall, Usage, build_provider_with,
};
use runner::testing::mock_server::{MockRequest, MockResponse, MockServer, Reply, Wire};
use serde_json::{Value, json};

use crate::common::{KEY, assert_no_key, build, call, config, fake_env, request, shown_text};

const KIND: ProviderKind = ProviderKind::OpenAiResponses;

/// One call with `response` queued; the outcome, the deltas and the request sent.
async fn serve(
    req: &ModelRequest,
    response: MockResponse,
) -> (
    Result<ModelResponse, ProviderError>,
    Vec<StreamDelta>,
    MockRequest,
) {
    let server = MockServer::start();
    server.push(response);
    let (result, deltas) = call(&build(&config(KIND, &server, 1)), req).await;
    let sent = server.requests().remove(0);
    (result, deltas, sent)
}

/// An SSE body of these Responses events, in 5-byte pieces.
fn events(events: &[Value]) -> MockResponse {
    let body: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    MockResponse::sse(body).split_every(5)
}

fn call_of(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
        invalid_arguments: None,
    }
}

#[tokio::test]
async fn streamed_text_with_usage_and_the_request_it_answers() {
    let reply = Reply::text("Hello there, friend.").with_usage(12, 7);
    let (r, deltas, sent) = serve(&request(), MockResponse::reply(reply).split_every(7)).await;
    let r = r.unwrap();
    assert_eq!(r.text, "Hello there, friend.");
    assert_eq!(shown_text(&deltas), "Hello there, friend.");
    assert_eq!(r.usage, Usage::new(12, 7));
    assert!(deltas.contains(&StreamDelta::Usage {
        usage: Usage::new(12, 7)
    }));
    assert_eq!(r.finish_reason, FinishReason::Stop);
    assert_eq!(r.model, "test-model");
    assert!(r.tool_calls.is_empty() && r.thinking.is_empty());

    assert_eq!(sent.path, "/v1/responses");
    assert_eq!(sent.wire(), Wire::Responses);
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(sent.system_prompt().as_deref(), Some("You are terse."));
    assert_eq!(sent.last_user_text().as_deref(), Some("Say hello."));
    let body = &sent.body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["instructions"], "You are terse.");
    assert_eq!(
        body["input"],
        json!([{"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "Say hello."}]}])
    );
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "name": "read_file", "description": "Reads a file.",
                "parameters": request().tools[0].parameters, "strict": false}])
    );
    assert_eq!(
        (&body["store"], &body["stream"]),
        (&json!(false), &json!(true))
    );
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert!(body.get("messages").is_none() && body.get("text").is_none());
}

#[tokio::test]
async fn parallel_tool_calls_with_arguments_split_over_deltas() {
    let reply = Reply::tool_call("read_file", json!({"path": "a.txt"}))
        .with_tool_call("add", json!({"a": 2, "b": 3}));
    let (r, deltas, _) = serve(&request(), MockResponse::reply(reply).split_every(7)).await;
    let r = r.unwrap();
    assert_eq!(
        r.tool_calls,
        vec![
            call_of("call_mock1_0", "read_file", json!({"path": "a.txt"})),
            call_of("call_mock1_1", "add", json!({"a": 2, "b": 3})),
        ]
    );
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(r.text, "");
    let starts: Vec<_> = deltas
        .iter()
        .filter_map(|d| match d {
            StreamDelta::ToolCallStart { index, id, name } => Some((*index, id.as_str(), name)),
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        vec![
            (0, "call_mock1_0", &"read_file".to_string()),
            (1, "call_mock1_1", &"add".to_string())
        ]
    );
    for index in 0..2 {
        let fragments: Vec<&str> = deltas
            .iter()
            .filter_map(|d| match d {
                StreamDelta::ToolCallArguments { index: i, fragment } if *i == index => {
                    Some(fragment.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(fragments.len(), 2, "call {index}: {fragments:?}");
        assert_eq!(
            fragments.concat(),
            r.tool_calls[index].arguments.to_string(),
            "the deltas add up to the arguments, each fragment reported once"
        );
    }
}

#[tokio::test]
async fn reasoning_items_are_carried_into_the_next_request_before_the_calls() {
    let server = MockServer::start();
    server.push(MockResponse::reply(
        Reply::tool_call("read_file", json!({"path": "a.txt"}))
            .with_thinking("The user wants a.txt, so read it."),
    ));
    server.push(MockResponse::text("It says hi."));
    let provider = build(&config(KIND, &server, 1));

    let mut req = request();
    let (first, deltas) = call(&provider, &req).await;
    let first = first.unwrap();
    let thinking: String = deltas
        .iter()
        .filter_map(|d| match d {
            StreamDelta::Thinking { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "The user wants a.txt, so read it.");
    let expected = ThinkingBlock {
        text: "The user wants a.txt, so read it.".into(),
        reasoning_item: Some(ReasoningItem {
            id: "rs_mock1".into(),
            encrypted_content: Some("mock-encrypted-1".into()),
        }),
        ..Default::default()
    };
    assert_eq!(first.thinking, vec![expected]);

    // The assistant turn survives a checkpoint (it is serialised with the state).
    let assistant = first.to_message();
    let saved = serde_json::to_string(&assistant).unwrap();
    let restored: Message = serde_json::from_str(&saved).unwrap();
    assert_eq!(restored, assistant);

    req.messages.push(restored);
    let call_ref = first.tool_calls[0].clone();
    req.messages
        .push(Message::tool_result(&call_ref, "hi", false));
    let second = call(&provider, &req).await.0.unwrap();
    assert_eq!(second.text, "It says hi.");

    let input = server.requests()[1].body["input"].clone();
    assert_eq!(
        input,
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Say hello."}]},
            {"type": "reasoning", "id": "rs_mock1", "encrypted_content": "mock-encrypted-1",
             "summary": [{"type": "summary_text", "text": "The user wants a.txt, so read it."}]},
            {"type": "function_call", "call_id": "call_mock1_0", "name": "read_file",
             "arguments": "{\"path\":\"a.txt\"}"},
            {"type": "function_call_output", "call_id": "call_mock1_0", "output": "hi"},
        ])
    );
}

#[tokio::test]
async fn reasoning_that_cannot_be_sent_back_is_left_out() {
    let server = MockServer::start();
    server.push(MockResponse::text("ok"));
    let mut req = request();
    req.messages.push(Message::Assistant(AssistantMessage {
        text: "Earlier answer.".into(),
        thinking: vec![
            // Anthropic's signed thinking and a reasoning item without its encrypted
            // content: neither can be decoded by a server that keeps nothing.
            ThinkingBlock {
                text: "signed".into(),
                signature: Some("sig".into()),
                ..Default::default()
            },
            ThinkingBlock {
                text: "bare".into(),
                reasoning_item: Some(ReasoningItem {
                    id: "rs_old".into(),
                    encrypted_content: None,
                }),
                ..Default::default()
            },
        ],
        tool_calls: vec![ToolCall::from_raw(
            "call_bad".into(),
            "read_file".into(),
            "{\"path\": \"no",
        )],
    }));
    req.messages.push(Message::user("Again."));
    call(&build(&config(KIND, &server, 1)), &req)
        .await
        .0
        .unwrap();
    let input = server.requests()[0].body["input"].clone();
    assert_eq!(
        input[1],
        json!({"type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": "Earlier answer."}]})
    );
    assert_eq!(
        input[2],
        json!({"type": "function_call", "call_id": "call_bad", "name": "read_file", "arguments": "{}"}),
        "arguments that never parsed go back as {{}}"
    );
    assert_eq!(input.as_array().unwrap().len(), 4, "{input}");
}

#[tokio::test]
async fn structured_output_goes_in_text_format_and_a_whole_json_answer_is_read() {
    let mut req = request();
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}},
                        "required": ["n"], "additionalProperties": false});
    req.response_format = Some(ResponseFormat {
        name: "count".into(),
        schema: schema.clone(),
        strict: true,
    });
    req.params.insert("stream".into(), json!(false));
    let reply = Reply::text("{\"n\": 3}").with_thinking("Count them.");
    let (r, deltas, sent) = serve(&req, MockResponse::reply(reply)).await;
    assert_eq!(
        sent.body["text"],
        json!({"format": {"type": "json_schema", "name": "count", "schema": schema, "strict": true}})
    );
    assert_eq!(sent.body["stream"], json!(false));
    assert!(sent.body.get("response_format").is_none());

    let r = r.unwrap();
    assert_eq!(r.text, "{\"n\": 3}");
    assert_eq!(
        shown_text(&deltas),
        r.text,
        "a whole answer is reported too"
    );
    assert_eq!(r.thinking[0].text, "Count them.");
    assert_eq!(
        r.thinking[0]
            .reasoning_item
            .as_ref()
            .unwrap()
            .encrypted_content
            .as_deref(),
        Some("mock-encrypted-1")
    );
    assert_eq!(r.usage, Usage::new(10, 5));
}

#[tokio::test]
async fn an_incomplete_response_at_max_output_tokens_finishes_with_length() {
    let response = events(&[
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "model": "gpt-5-mini-2025-08-07", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "The answer is"}),
        json!({"type": "response.incomplete", "response": {"id": "resp_1", "status": "incomplete",
               "incomplete_details": {"reason": "max_output_tokens"}, "model": "gpt-5-mini-2025-08-07",
               "output": [{"id": "msg_1", "type": "message", "status": "incomplete", "role": "assistant",
                           "content": [{"type": "output_text", "text": "The answer is", "annotations": []}]}],
               "usage": {"input_tokens": 30, "output_tokens": 16, "output_tokens_details": {"reasoning_tokens": 12}, "total_tokens": 46}}}),
    ]);
    let (r, deltas, _) = serve(&request(), response).await;
    let r = r.unwrap();
    assert_eq!(r.finish_reason, FinishReason::Length);
    assert_eq!(r.text, "The answer is");
    assert_eq!(shown_text(&deltas), "The answer is", "reported once");
    assert_eq!(r.usage, Usage::new(30, 16));
    assert_eq!(r.model, "gpt-5-mini-2025-08-07");
}

#[tokio::test]
async fn error_events_and_failed_responses_are_classified() {
    let cases = [
        (
            json!({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down", "param": null}),
            ErrorKind::RateLimited,
            "Slow down",
        ),
        (
            json!({"type": "response.failed", "response": {"id": "resp_1", "status": "failed",
                   "error": {"code": "server_error", "message": "The model crashed"}, "output": []}}),
            ErrorKind::Server,
            "The model crashed",
        ),
        (
            json!({"type": "error", "code": "invalid_request_error", "message": "Bad input", "param": "input"}),
            ErrorKind::BadRequest,
            "Bad input",
        ),
    ];
    for (event, kind, message) in cases {
        let created = json!({"type": "response.created", "response": {"status": "in_progress", "output": []}});
        let e = serve(&request(), events(&[created, event]))
            .await
            .0
            .unwrap_err();
        assert_eq!(e.kind, kind, "{e}");
        assert!(e.message.starts_with(message), "{e}");
        assert!(
            !e.message.contains("[error"),
            "the event type is no label: {e}"
        );
    }
}

#[tokio::test]
async fn a_stream_cut_before_its_end_is_incomplete() {
    let body = Reply::text("Hello there.").responses_events("m", 1);
    let cut = body[..body.len() - 1].concat(); // no response.completed
    let e = serve(&request(), MockResponse::sse(cut))
        .await
        .0
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::IncompleteStream);
    assert!(e.is_retryable());
}

#[tokio::test]
async fn http_errors_are_classified_and_never_show_the_key() {
    for (status, kind) in [
        (400, ErrorKind::BadRequest),
        (401, ErrorKind::Auth),
        (429, ErrorKind::RateLimited),
        (500, ErrorKind::Server),
        (503, ErrorKind::Server),
    ] {
        let message = format!("Request refused for key {KEY} (status {status})");
        let e = serve(&request(), MockResponse::error(status, message))
            .await
            .0
            .unwrap_err();
        assert_eq!((e.kind, e.status), (kind, Some(status)), "{e}");
        assert_eq!(e.provider, "openai_responses");
        assert!(
            e.message.contains("Request refused for key [REDACTED]"),
            "{e}"
        );
        assert_no_key(&e);
    }
}

#[tokio::test]
async fn record_then_replay_through_a_cassette() {
    let dir = std::env::temp_dir().join(format!("runner-responses-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.jsonl");
    let converse = |provider: std::sync::Arc<dyn runner::provider::Provider>| async move {
        let mut req = request();
        let first = call(&provider, &req).await.0.unwrap();
        req.messages.push(first.to_message());
        req.messages
            .push(Message::tool_result(&first.tool_calls[0], "hi", false));
        let second = call(&provider, &req).await.0.unwrap();
        (first, second)
    };

    let recorded = {
        let server = MockServer::start();
        server.push(MockResponse::reply(
            Reply::tool_call("read_file", json!({"path": "a.txt"})).with_thinking("Read it."),
        ));
        server.push(MockResponse::text("It says hi."));
        let opts = BuildOptions {
            record: Some(CassetteRecorder::create(&path).unwrap()),
            replay: None,
        };
        converse(build_provider_with(&config(KIND, &server, 1), &opts, &fake_env).unwrap()).await
    };
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Exchange> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].provider, "openai_responses");
    let Message::Assistant(carried) = &lines[1].request.messages[1] else {
        panic!("{:?}", lines[1].request.messages)
    };
    assert_eq!(
        carried.thinking[0].reasoning_item,
        Some(ReasoningItem {
            id: "<reasoning_id>".into(),
            encrypted_content: Some("<encrypted>".into()),
        }),
        "the request is normalised"
    );

    let opts = BuildOptions {
        record: None,
        replay: Some(ReplayStore::load(&path).unwrap()),
    };
    let mut cfg = config(KIND, &MockServer::start(), 1);
    cfg.base_url = Some("http://127.0.0.1:9/unused".into());
    let replayed = converse(build_provider_with(&cfg, &opts, &|_| None).unwrap()).await;
    assert_eq!(replayed, recorded);
    assert_eq!(replayed.1.text, "It says hi.");
    assert_eq!(
        replayed.0.thinking[0]
            .reasoning_item
            .as_ref()
            .unwrap()
            .encrypted_content
            .as_deref(),
        Some("mock-encrypted-1"),
        "the response keeps what the next live request would need"
    );
    std::fs::remove_dir_all(&dir).ok();
}
