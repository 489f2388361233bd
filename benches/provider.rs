//! Provider benchmarks.
//!
//! * `assembly/*`: SSE parsing plus delta assembly of a large stream held in memory,
//!   fed in 16 KiB pieces as a socket would deliver it (throughput in bytes/s).
//! * `request/*`: one whole model call against the mock server over loopback HTTP:
//!   `client` goes through the real provider (request body, HTTP, SSE, assembly);
//!   `raw_http` does the same exchange with a hand-written keep-alive HTTP/1.1 client
//!   and no parsing. Their difference is the provider client's own overhead.
//!
//! Run: `cargo bench --bench provider`

use std::hint::black_box;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use runner::provider::anthropic_stream::AnthropicStream;
use runner::provider::openai_stream::OpenAiStream;
use runner::provider::{
    BuildOptions, Message, ModelRequest, ProviderConfig, ProviderKind, StreamDelta,
    build_provider_with,
};
use runner::testing::mock_server::{MockResponse, MockServer, Reply};
use serde_json::json;

const PIECE: usize = 16 * 1024;

/// An OpenAI-style stream of about `target` bytes: text deltas with the usual chunk
/// envelope, a tool call in many fragments every so often, usage and `[DONE]`.
fn openai_stream(target: usize) -> Vec<u8> {
    let mut out = String::new();
    let mut i = 0usize;
    while out.len() < target {
        let chunk = if i % 50 == 49 {
            json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_790_000_000u64,
                   "model": "gpt-4o", "system_fingerprint": "fp_bench", "choices": [{"index": 0,
                   "delta": {"tool_calls": [{"index": i / 50, "id": format!("call_{i}"), "type": "function",
                   "function": {"name": "read_file", "arguments": "{\"path\": \"src/ma"}}]},
                   "logprobs": null, "finish_reason": null}], "usage": null})
        } else {
            json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_790_000_000u64,
                   "model": "gpt-4o", "system_fingerprint": "fp_bench", "choices": [{"index": 0,
                   "delta": {"content": format!(" token{} \\\"quoted\\\" é", i % 97)},
                   "logprobs": null, "finish_reason": null}], "usage": null, "obfuscation": "abc"})
        };
        out.push_str(&format!("data: {chunk}\n\n"));
        i += 1;
    }
    out.push_str("data: {\"id\":\"chatcmpl-bench\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    out.push_str("data: {\"id\":\"chatcmpl-bench\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"total_tokens\":3}}\n\n");
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}

/// An Anthropic-style stream of about `target` bytes: one long text block.
fn anthropic_stream(target: usize) -> Vec<u8> {
    let mut out = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    );
    let mut i = 0;
    while out.len() < target {
        out.push_str(&format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\" word{} and more\"}}}}\n\n",
            i % 89
        ));
        i += 1;
    }
    out.push_str(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    );
    out.push_str("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n");
    out.push_str("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    out.into_bytes()
}

fn count_sink(_: StreamDelta) {}

fn assembly(c: &mut Criterion) {
    let mut g = c.benchmark_group("assembly");
    let openai = openai_stream(8 << 20);
    g.throughput(Throughput::Bytes(openai.len() as u64));
    g.bench_function("openai_8MiB", |b| {
        b.iter(|| {
            let mut s = OpenAiStream::new("openai", "gpt-4o");
            for piece in openai.chunks(PIECE) {
                s.feed(piece, &count_sink).unwrap();
            }
            black_box(s.finish(&count_sink).unwrap())
        })
    });
    let anthropic = anthropic_stream(8 << 20);
    g.throughput(Throughput::Bytes(anthropic.len() as u64));
    g.bench_function("anthropic_8MiB", |b| {
        b.iter(|| {
            let mut s = AnthropicStream::new("anthropic", "claude");
            for piece in anthropic.chunks(PIECE) {
                s.feed(piece, &count_sink).unwrap();
            }
            black_box(s.finish(&count_sink).unwrap())
        })
    });
    g.finish();
}

fn request(c: &mut Criterion) {
    let server = MockServer::start();
    server.route(|_| {
        Some(MockResponse::reply(Reply::text(
            "Hello there, this is a short answer.",
        )))
    });
    let mut cfg = ProviderConfig::new(ProviderKind::OpenAi, "bench-model");
    cfg.base_url = Some(server.openai_base_url());
    let env = |_: &str| Some("sk-bench".to_string());
    let provider = build_provider_with(&cfg, &BuildOptions::default(), &env).unwrap();
    let req = ModelRequest {
        system: Some("Be brief.".into()),
        messages: vec![Message::user("Hi")].into(),
        ..Default::default()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let mut g = c.benchmark_group("request");
    g.measurement_time(Duration::from_secs(5));
    g.bench_function("client", |b| {
        b.iter(|| rt.block_on(async { black_box(provider.complete(&req).await.unwrap()) }))
    });

    // The same exchange with no client work: fixed request bytes, read to the end.
    let body = serde_json::to_vec(&json!({"model": "bench-model", "stream": true,
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]}))
    .unwrap();
    let addr = server.url().trim_start_matches("http://").to_string();
    let mut head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    head.extend_from_slice(&body);
    let mut conn = TcpStream::connect(&addr).unwrap();
    conn.set_nodelay(true).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    g.bench_function("raw_http", |b| {
        b.iter(|| {
            conn.write_all(&head).unwrap();
            let mut seen = Vec::new();
            while !seen.ends_with(b"0\r\n\r\n") {
                let n = conn.read(&mut buf).unwrap();
                assert!(n > 0, "server closed");
                seen.extend_from_slice(&buf[..n]);
            }
            black_box(seen.len())
        })
    });
    g.finish();
}

criterion_group!(benches, assembly, request);
criterion_main!(benches);
