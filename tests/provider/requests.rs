//! What the clients send: bodies, headers and paths, as the mock server received them.

use runner::provider::{
    AssistantMessage, FinishReason, Message, ModelRequest, ProviderKind, ResponseFormat,
    ThinkingBlock, ToolCall, ToolResult,
};
use runner::testing::mock_server::{MockResponse, MockServer, Reply};
use serde_json::{Value, json};

use crate::common::{KEY, build, call, config, request};

fn conversation() -> ModelRequest {
    let mut req = request();
    let call = ToolCall {
        id: "toolu_1".into(),
        name: "read_file".into(),
        arguments: json!({"path": "a.txt"}).into(),
        invalid_arguments: None,
    };
    req.messages.push(Message::Assistant(AssistantMessage {
        text: "Reading.".into(),
        thinking: vec![ThinkingBlock {
            text: "need the file".into(),
            signature: Some("sig-1".into()),
            redacted: None,
            reasoning_item: None,
        }],
        tool_calls: vec![call.clone()],
    }));
    req.messages.push(Message::Tool(ToolResult {
        tool_call_id: "toolu_1".into(),
        name: "read_file".into(),
        content: "no such file".into(),
        is_error: true,
    }));
    req.messages.push(Message::user("Then say hello."));
    req
}

#[tokio::test]
async fn openai_body_headers_and_path() {
    let server = MockServer::start();
    server.push(MockResponse::text("hi"));
    let mut cfg = config(ProviderKind::OpenAi, &server, 1);
    cfg.params.insert("temperature".into(), json!(0.2));
    let provider = build(&cfg);
    let r = call(&provider, &conversation()).await.0.unwrap();
    assert_eq!(r.text, "hi");

    let req = &server.requests()[0];
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let b = &req.body;
    assert_eq!(b["model"], "test-model");
    assert_eq!(b["stream"], true);
    assert_eq!(b["stream_options"], json!({"include_usage": true}));
    assert_eq!(b["temperature"], json!(0.2));
    assert_eq!(
        b["tools"][0],
        json!({"type": "function", "function": {"name": "read_file", "description": "Reads a file.",
               "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}})
    );
    assert_eq!(
        b["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Say hello."},
            {"role": "assistant", "content": "Reading.", "tool_calls": [
                {"id": "toolu_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}}]},
            {"role": "tool", "tool_call_id": "toolu_1", "content": "no such file"},
            {"role": "user", "content": "Then say hello."}
        ])
    );
}

#[tokio::test]
async fn openai_response_format_and_null_params_remove_fields() {
    let server = MockServer::start();
    server.push(MockResponse::text("{}"));
    let mut cfg = config(ProviderKind::OpenAi, &server, 1);
    cfg.params.insert("stream_options".into(), Value::Null);
    let provider = build(&cfg);
    let mut req = request();
    // Without tools: beside them, a local server would get no schema.
    req.tools = Default::default();
    req.response_format = Some(ResponseFormat {
        name: "verdict".into(),
        schema: json!({"type": "object"}),
        strict: true,
    });
    call(&provider, &req).await.0.unwrap();
    let b = &server.requests()[0].body;
    assert!(b.get("stream_options").is_none());
    assert_eq!(
        b["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "verdict", "schema": {"type": "object"}, "strict": true}})
    );
}

#[tokio::test]
async fn azure_style_base_url_keeps_its_query_and_sends_api_key() {
    let server = MockServer::start();
    server.push(MockResponse::text("hi"));
    let mut cfg = config(ProviderKind::OpenAi, &server, 1);
    cfg.base_url = Some(format!(
        "{}/openai/deployments/gpt4o?api-version=2024-10-21",
        server.url()
    ));
    call(&build(&cfg), &request()).await.0.unwrap();
    let req = &server.requests()[0];
    assert_eq!(
        req.path,
        "/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21"
    );
    assert_eq!(req.header("api-key"), Some(KEY));
    assert_eq!(req.header("authorization"), None);
}

#[tokio::test]
async fn ollama_sends_no_key() {
    let server = MockServer::start();
    server.push(MockResponse::text("hi"));
    let provider = build(&config(ProviderKind::Ollama, &server, 1));
    assert_eq!(provider.name(), "ollama");
    call(&provider, &request()).await.0.unwrap();
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[tokio::test]
async fn non_streaming_path_for_both_wires() {
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let server = MockServer::start();
        server.push(MockResponse::reply(
            Reply::text("whole")
                .with_thinking("hmm")
                .with_tool_call("read_file", json!({"path": "x"})),
        ));
        let mut cfg = config(kind, &server, 1);
        cfg.params.insert("stream".into(), json!(false));
        let (r, deltas) = call(&build(&cfg), &request()).await;
        let r = r.unwrap();
        assert_eq!(server.requests()[0].body["stream"], false, "{kind:?}");
        assert!(server.requests()[0].body.get("stream_options").is_none());
        assert_eq!(r.text, "whole", "{kind:?}");
        assert_eq!(r.thinking[0].text, "hmm");
        assert_eq!(*r.tool_calls[0].arguments, json!({"path": "x"}));
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        assert!(!deltas.is_empty());
    }
}

#[tokio::test]
async fn anthropic_body_headers_and_path() {
    let server = MockServer::start();
    server.push(MockResponse::text("hi"));
    let provider = build(&config(ProviderKind::Anthropic, &server, 1));
    let mut req = conversation();
    req.response_format = Some(ResponseFormat {
        name: "v".into(),
        schema: json!({"type": "object"}),
        strict: false,
    });
    let r = call(&provider, &req).await.0.unwrap();
    assert_eq!(r.text, "hi");

    let got = &server.requests()[0];
    assert_eq!(got.path, "/v1/messages");
    assert_eq!(got.header("x-api-key"), Some(KEY));
    assert_eq!(got.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(got.header("authorization"), None);
    let b = &got.body;
    assert_eq!(b["max_tokens"], 4096);
    assert_eq!(b["stream"], true);
    let system = b["system"].as_str().unwrap();
    assert!(
        system.starts_with("You are terse.\n\n") && system.contains("{\"type\":\"object\"}"),
        "{system}"
    );
    assert_eq!(b["tools"][0]["input_schema"]["required"], json!(["path"]));
    assert_eq!(
        b["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Say hello."}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "need the file", "signature": "sig-1"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.txt"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "no such file", "is_error": true},
                {"type": "text", "text": "Then say hello."}]}
        ])
    );
}

#[tokio::test]
async fn anthropic_thinking_round_trips_with_its_signature() {
    let server = MockServer::start();
    server.push(MockResponse::reply(
        Reply::tool_call("read_file", json!({"path": "a"})).with_thinking("let me read"),
    ));
    server.push(MockResponse::text("done"));
    let mut cfg = config(ProviderKind::Anthropic, &server, 1);
    cfg.base_url = Some(format!("{}/v1/", server.url())); // ".../v1" is accepted too
    let provider = build(&cfg);
    let mut req = request();
    let first = call(&provider, &req).await.0.unwrap();
    assert_eq!(
        first.thinking[0].signature.as_deref(),
        Some("mock-signature-1")
    );
    req.messages.push(first.to_message());
    req.messages.push(Message::tool_result(
        &first.tool_calls[0],
        "contents",
        false,
    ));
    assert_eq!(call(&provider, &req).await.0.unwrap().text, "done");

    let second = &server.requests()[1];
    assert_eq!(second.path, "/v1/messages");
    let assistant = &second.body["messages"][1]["content"];
    assert_eq!(
        assistant[0],
        json!({"type": "thinking", "thinking": "let me read", "signature": "mock-signature-1"})
    );
    assert_eq!(assistant[1]["type"], "tool_use");
    assert_eq!(
        second.body["messages"][2]["content"][0]["tool_use_id"],
        first.tool_calls[0].id.as_str()
    );
}
