//! One fixture per Anthropic Messages stream quirk, served over HTTP in 7-byte pieces.

use runner::provider::{
    ErrorKind, FinishReason, ModelResponse, ProviderError, ProviderKind, StreamDelta,
    ThinkingBlock, ToolCall, Usage,
};
use runner::testing::mock_server::{MockResponse, MockServer};
use serde_json::json;

use crate::common::{build, call, config, fixture, request};

async fn anthropic(name: &str) -> (Result<ModelResponse, ProviderError>, Vec<StreamDelta>) {
    let server = MockServer::start();
    server.push(MockResponse::sse(fixture(name)).split_every(7));
    let provider = build(&config(ProviderKind::Anthropic, &server, 1));
    call(&provider, &request()).await
}

fn call_of(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
        invalid_arguments: None,
    }
}

#[tokio::test]
async fn text_with_pings_padding_and_cached_input_tokens() {
    let (r, deltas) = anthropic("anthropic_text_ping_padding_cache_usage.sse").await;
    let r = r.unwrap();
    assert_eq!(r.text, "Hello, world");
    assert_eq!(r.finish_reason, FinishReason::Stop);
    // 6 uncached + 70 cache writes + 1200 cache reads.
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 1276,
            output_tokens: 5,
            total_tokens: 1281
        }
    );
    assert_eq!(r.model, "claude-sonnet-4-5");
    assert!(deltas.contains(&StreamDelta::Text {
        text: ", world".into()
    }));
}

#[tokio::test]
async fn tool_use_assembled_from_input_json_deltas() {
    let r = anthropic("anthropic_tool_use_input_json_delta.sse")
        .await
        .0
        .unwrap();
    assert_eq!(
        r.tool_calls,
        vec![call_of(
            "toolu_01Read",
            "read_file",
            json!({"path": "src/lib.rs"})
        )]
    );
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        r.usage.output_tokens, 40,
        "final output_tokens from message_delta"
    );
    assert_eq!(r.usage.input_tokens, 30);
}

#[tokio::test]
async fn thinking_with_signature_then_tool_without_arguments() {
    let r = anthropic("anthropic_thinking_then_tool_without_args.sse")
        .await
        .0
        .unwrap();
    assert_eq!(
        r.thinking,
        vec![ThinkingBlock {
            text: "The user wants the version.".into(),
            signature: Some("EqQBCkYIBxgCKkBsig+test/AAA==".into()),
            redacted: None,
            reasoning_item: None,
        }]
    );
    assert_eq!(
        r.tool_calls,
        vec![call_of("toolu_01NoArgs", "get_version", json!({}))]
    );
    assert_eq!(r.model, "claude-haiku-4-5");
}

#[tokio::test]
async fn text_then_two_tool_uses() {
    let r = anthropic("anthropic_parallel_tool_use_with_text.sse")
        .await
        .0
        .unwrap();
    assert_eq!(r.text, "I'll add and multiply.");
    assert_eq!(
        r.tool_calls,
        vec![
            call_of("toolu_A", "add", json!({"a": 2, "b": 3})),
            call_of("toolu_M", "multiply", json!({"a": 2, "b": 3}))
        ]
    );
    assert_eq!(r.usage.output_tokens, 90);
}

#[tokio::test]
async fn overloaded_error_event_is_retryable() {
    let (r, deltas) = anthropic("anthropic_overloaded_error_event.sse").await;
    let e = r.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Server);
    assert!(e.is_retryable());
    assert!(
        e.message.contains("Overloaded") && e.message.contains("overloaded_error"),
        "{e}"
    );
    assert!(deltas.contains(&StreamDelta::Text {
        text: "Partial".into()
    }));
}

#[tokio::test]
async fn stream_without_message_stop_is_incomplete() {
    let e = anthropic("anthropic_truncated_no_message_stop.sse")
        .await
        .0
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::IncompleteStream);
}
