//! The mock server itself: plain-thread use, routing, recording, defaults.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use runner::provider::{ErrorKind, ProviderKind};
use runner::testing::mock_server::{MockResponse, MockServer, Reply, Wire};
use serde_json::json;

use crate::common::{build, call, config, request};

/// One raw HTTP/1.1 exchange with `Connection: close`, from a plain thread.
fn raw_post(server: &MockServer, path: &str, body: &serde_json::Value) -> String {
    let addr = server.url().trim_start_matches("http://").to_string();
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = body.to_string();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn works_from_a_plain_test_and_routes_by_system_prompt() {
    let server = MockServer::start();
    server.route(|req| {
        let system = req.system_prompt()?;
        system
            .contains("explorer")
            .then(|| MockResponse::text("explorer reply"))
    });
    server.push(MockResponse::text("queued reply"));
    let explorer = json!({"model": "m", "stream": true, "messages": [
        {"role": "system", "content": "You are the explorer."}, {"role": "user", "content": "find"}]});
    let other =
        json!({"model": "m", "stream": false, "messages": [{"role": "user", "content": "hi"}]});

    let a = raw_post(&server, "/v1/chat/completions", &explorer);
    assert!(a.starts_with("HTTP/1.1 200"), "{a}");
    assert!(a.contains("transfer-encoding: chunked") && a.contains("data: [DONE]"));
    assert!(
        a.contains(r#""content":"explorer ""#) && a.contains(r#""content":"reply""#),
        "{a}"
    );
    let b = raw_post(&server, "/v1/chat/completions", &other);
    assert!(b.contains("\"content\":\"queued reply\""), "{b}");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].wire(), Wire::OpenAi);
    assert_eq!(
        reqs[0].system_prompt().as_deref(),
        Some("You are the explorer.")
    );
    assert_eq!(reqs[1].last_user_text().as_deref(), Some("hi"));
    assert_eq!(reqs[1].header("Content-Type"), Some("application/json"));
    assert_eq!(server.queued(), 0);
}

#[tokio::test]
async fn routes_anthropic_requests_by_system_prompt_too() {
    let server = MockServer::start();
    server.route(|req| match req.system_prompt()?.as_str() {
        "You are terse." => Some(MockResponse::reply(Reply::text("terse").with_usage(3, 1))),
        _ => None,
    });
    let r = call(
        &build(&config(ProviderKind::Anthropic, &server, 1)),
        &request(),
    )
    .await
    .0
    .unwrap();
    assert_eq!((r.text.as_str(), r.usage.total_tokens), ("terse", 4));
    assert_eq!(server.requests()[0].wire(), Wire::Anthropic);
}

#[tokio::test]
async fn an_empty_queue_answers_with_an_explanation() {
    let server = MockServer::start();
    let e = call(
        &build(&config(ProviderKind::OpenAi, &server, 3)),
        &request(),
    )
    .await
    .0
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::BadRequest);
    assert!(
        e.message.contains("no response scripted for request #1"),
        "{e}"
    );
}

#[test]
fn unknown_paths_get_404_and_dropping_the_server_closes_the_port() {
    let server = MockServer::start();
    let out = raw_post(&server, "/v2/other", &json!({}));
    assert!(out.starts_with("HTTP/1.1 404"), "{out}");
    let addr = server.url().trim_start_matches("http://").to_string();
    drop(server);
    assert!(TcpStream::connect(addr).is_err());
}

#[tokio::test]
async fn keep_alive_serves_many_requests_on_one_client() {
    let server = MockServer::start();
    for i in 0..5 {
        server.push(MockResponse::text(format!("answer {i}")));
    }
    let provider = build(&config(ProviderKind::OpenAi, &server, 1));
    for i in 0..5 {
        assert_eq!(
            call(&provider, &request()).await.0.unwrap().text,
            format!("answer {i}")
        );
    }
    assert_eq!(server.request_count(), 5);
}
