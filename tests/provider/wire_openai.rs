//! One fixture per OpenAI-compatible wire quirk, served over HTTP in 7-byte pieces
//! (mid-line, mid-character), asserting the exact assembled message.

use runner::provider::{
    ErrorKind, FinishReason, ModelResponse, ProviderError, ProviderKind, StreamDelta, ToolCall,
    Usage,
};
use runner::testing::mock_server::{MockResponse, MockServer};
use serde_json::json;

use crate::common::{build, call, config, fixture, request};

async fn serve(
    kind: ProviderKind,
    response: MockResponse,
) -> (Result<ModelResponse, ProviderError>, Vec<StreamDelta>) {
    let server = MockServer::start();
    server.push(response);
    let provider = build(&config(kind, &server, 1));
    let out = call(&provider, &request()).await;
    assert_eq!(server.request_count(), 1);
    out
}

async fn openai(name: &str) -> (Result<ModelResponse, ProviderError>, Vec<StreamDelta>) {
    serve(
        ProviderKind::OpenAi,
        MockResponse::sse(fixture(name)).split_every(7),
    )
    .await
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
async fn text_then_finish_then_usage_chunk_with_empty_choices() {
    let (r, deltas) = openai("openai_text_usage.sse").await;
    let r = r.unwrap();
    assert_eq!(r.text, "Olá, mundo!");
    assert_eq!(r.finish_reason, FinishReason::Stop);
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 21,
            output_tokens: 4,
            total_tokens: 25
        }
    );
    assert_eq!(r.model, "gpt-4o-2024-08-06");
    assert!(r.tool_calls.is_empty() && r.thinking.is_empty());
    let texts: Vec<_> = deltas
        .iter()
        .filter(|d| matches!(d, StreamDelta::Text { .. }))
        .collect();
    assert_eq!(
        texts.len(),
        3,
        "empty content deltas are not forwarded: {texts:?}"
    );
}

#[tokio::test]
async fn tool_call_id_and_name_once_arguments_split_over_many_deltas() {
    let (r, deltas) = openai("openai_tool_split_args.sse").await;
    let r = r.unwrap();
    assert_eq!(r.text, "");
    assert_eq!(
        r.tool_calls,
        vec![call_of(
            "call_Ab12",
            "read_file",
            json!({"path": "src/main.rs"})
        )]
    );
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 80,
            output_tokens: 17,
            total_tokens: 97
        }
    );
    let starts = deltas
        .iter()
        .filter(|d| matches!(d, StreamDelta::ToolCallStart { .. }))
        .count();
    let frags = deltas
        .iter()
        .filter(|d| matches!(d, StreamDelta::ToolCallArguments { .. }))
        .count();
    assert_eq!((starts, frags), (1, 6));
}

#[tokio::test]
async fn parallel_tool_calls_keep_their_order_and_arguments() {
    let r = openai("openai_parallel_tool_calls.sse").await.0.unwrap();
    assert_eq!(
        r.tool_calls,
        vec![
            call_of("call_P0", "add", json!({"a": 2, "b": 3})),
            call_of("call_P1", "multiply", json!({"a": 4, "b": 5})),
        ]
    );
    assert_eq!(r.usage.total_tokens, 100);
}

#[tokio::test]
async fn sparse_tool_index_starting_at_1_and_no_trailing_blank_line() {
    let (r, deltas) = openai("compat_tool_index_starts_at_1.sse").await;
    let r = r.unwrap();
    assert_eq!(r.text, "Let me look.");
    assert_eq!(
        r.tool_calls,
        vec![call_of("toolu_X9", "list_dir", json!({"path": "docs"}))]
    );
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(r.usage, Usage::default(), "this server sends no usage");
    assert!(deltas.contains(&StreamDelta::ToolCallStart {
        index: 0,
        id: "toolu_X9".into(),
        name: "list_dir".into()
    }));
}

#[tokio::test]
async fn whole_arguments_in_one_delta_with_finish_and_usage_in_the_same_chunk() {
    let r = openai("mistral_whole_args_finish_and_usage.sse")
        .await
        .0
        .unwrap();
    assert_eq!(
        r.tool_calls,
        vec![call_of(
            "Zq8PdW3kM",
            "search_files",
            json!({"pattern": "TODO", "path": "."})
        )]
    );
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 300,
            output_tokens: 22,
            total_tokens: 322
        }
    );
}

#[tokio::test]
async fn empty_choices_chunk_that_is_not_usage_is_skipped() {
    let r = openai("azure_prompt_filter_empty_choices.sse")
        .await
        .0
        .unwrap();
    assert_eq!(r.text, "Hi there");
    assert_eq!(
        r.model, "gpt-4o-mini-2024-07-18",
        "the empty model of the filter chunk is ignored"
    );
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 9,
            output_tokens: 2,
            total_tokens: 11
        }
    );
    assert_eq!(r.finish_reason, FinishReason::Stop);
}

#[tokio::test]
async fn reasoning_content_and_a_first_tool_delta_that_carries_arguments() {
    let (r, deltas) = openai("llamacpp_reasoning_content_tool_call.sse").await;
    let r = r.unwrap();
    assert_eq!(r.thinking.len(), 1);
    assert_eq!(r.thinking[0].text, "User wants the weather.");
    assert_eq!(r.thinking[0].signature, None);
    assert_eq!(
        r.tool_calls,
        vec![call_of(
            "Rk2Jd8aPq0LmZx7Vb3Nc5Ty1Wu4Ei6Oo",
            "get_weather",
            json!({"city": "Florence"})
        )]
    );
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 120,
            output_tokens: 30,
            total_tokens: 150
        }
    );
    assert!(deltas.contains(&StreamDelta::Thinking {
        text: " weather".into()
    }));
}

#[tokio::test]
async fn event_error_frame_after_reasoning_is_a_classified_error() {
    let (r, deltas) = openai("groq_reasoning_then_event_error.sse").await;
    let e = r.unwrap_err();
    assert_eq!(e.kind, ErrorKind::BadRequest);
    assert_eq!(e.status, Some(400));
    assert!(e.message.contains("Tool call validation failed"), "{e}");
    assert!(!e.is_retryable());
    assert!(
        deltas
            .iter()
            .any(|d| matches!(d, StreamDelta::Thinking { .. }))
    );
}

#[tokio::test]
async fn comments_reasoning_field_and_repeated_finish_chunks() {
    let r = openai("openrouter_comments_repeated_finish.sse")
        .await
        .0
        .unwrap();
    assert_eq!(r.text, "Hello");
    assert_eq!(r.thinking[0].text, "Greet");
    assert_eq!(r.finish_reason, FinishReason::Length);
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 12,
            output_tokens: 10,
            total_tokens: 22
        }
    );
}

#[tokio::test]
async fn error_object_inside_a_200_stream_fails_the_call() {
    let e = openai("openrouter_error_object_in_200_stream.sse")
        .await
        .0
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::BadRequest);
    assert!(e.message.contains("Token limit reached"), "{e}");
}

#[tokio::test]
async fn stream_without_done_or_finish_reason_is_incomplete() {
    let (r, deltas) = openai("openai_truncated_no_terminal.sse").await;
    let e = r.unwrap_err();
    assert_eq!(e.kind, ErrorKind::IncompleteStream);
    assert!(e.is_retryable());
    assert!(deltas.contains(&StreamDelta::Text {
        text: "Half an ans".into()
    }));
}

#[tokio::test]
async fn finish_reason_without_done_is_complete() {
    let r = openai("openai_finish_without_done.sse").await.0.unwrap();
    assert_eq!(
        (r.text.as_str(), r.finish_reason),
        ("Done.", FinishReason::Stop)
    );
}

#[tokio::test]
async fn crlf_line_endings() {
    let r = openai("openai_crlf_line_endings.sse").await.0.unwrap();
    assert_eq!(r.text, "crlf ok");
}

#[tokio::test]
async fn malformed_chunk_is_a_protocol_error_quoting_the_data() {
    let e = openai("openai_malformed_chunk.sse").await.0.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Protocol);
    assert!(e.message.contains("\"oops\""), "{e}");
}

#[tokio::test]
async fn invalid_tool_arguments_are_kept_raw_and_flagged() {
    let r = openai("openai_invalid_tool_arguments.sse").await.0.unwrap();
    let c = &r.tool_calls[0];
    assert_eq!((c.id.as_str(), c.name.as_str()), ("call_bad", "write_file"));
    assert_eq!(*c.arguments, serde_json::Value::Null);
    let invalid = c.invalid_arguments.as_ref().expect("flagged");
    assert_eq!(invalid.raw, "{\"path\": \"a.txt\", \"content\": ");
    assert!(!invalid.error.is_empty());
    assert_eq!(
        c.arguments_text(),
        invalid.raw,
        "sent back as the model wrote it"
    );
}

#[tokio::test]
async fn ollama_non_streaming_json_answer() {
    let body = fixture("ollama_nonstream_tool_call.json");
    let (r, deltas) = serve(
        ProviderKind::Ollama,
        MockResponse::raw(200, "application/json", body),
    )
    .await;
    let r = r.unwrap();
    assert_eq!(r.text, "");
    assert_eq!(r.thinking[0].text, "Need the capital; call the tool.");
    assert_eq!(
        r.tool_calls,
        vec![call_of(
            "call_k3j9x2ab",
            "capital_of",
            json!({"country": "France"})
        )]
    );
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 70,
            output_tokens: 50,
            total_tokens: 120
        }
    );
    assert_eq!(r.model, "qwen3:0.6b");
    assert!(
        deltas
            .iter()
            .any(|d| matches!(d, StreamDelta::ToolCallStart { .. }))
    );
}

#[tokio::test]
async fn a_named_host_is_reached_through_reqwest_with_the_same_answer() {
    // `localhost` is a name (it could resolve elsewhere): not the loopback path of
    // `src/provider/loopback.rs`, which only takes addresses written as such.
    let server = MockServer::start();
    server.push(MockResponse::sse(fixture("openai_text_usage.sse")).split_every(7));
    let mut cfg = config(ProviderKind::OpenAi, &server, 1);
    cfg.base_url = cfg
        .base_url
        .map(|url| url.replace("127.0.0.1", "localhost"));
    assert!(cfg.base_url.as_deref().unwrap().contains("//localhost:"));
    let (r, _) = call(&build(&cfg), &request()).await;
    assert_eq!(r.unwrap().text, "Olá, mundo!");
    assert_eq!(server.request_count(), 1);
}
