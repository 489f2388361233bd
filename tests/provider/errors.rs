//! HTTP errors, retries, broken streams, timeouts and keys.

use std::time::{Duration, SystemTime};

use runner::provider::{
    BuildOptions, ErrorKind, ProviderConfig, ProviderKind, StreamDelta, build_provider_with,
    parse_retry_after,
};
use runner::testing::mock_server::{MockResponse, MockServer, Reply};
use serde_json::json;

use crate::common::{KEY, assert_no_key, build, call, config, request, shown_text};

#[tokio::test]
async fn unauthorized_fails_at_once_with_a_hint_and_never_shows_the_key() {
    let server = MockServer::start();
    // A server that echoes the key back must not make it leak.
    server.push(MockResponse::json(401, &json!({"error": {"message": format!("Incorrect API key provided: {KEY}"), "type": "invalid_request_error"}})));
    let e = call(
        &build(&config(ProviderKind::OpenAi, &server, 4)),
        &request(),
    )
    .await
    .0
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Auth);
    assert_eq!(e.status, Some(401));
    assert!(e.message.starts_with("Incorrect API key provided"), "{e}");
    assert!(
        e.hint
            .as_deref()
            .unwrap()
            .contains("check the variable named by api_key_env (OPENAI_API_KEY)")
    );
    assert_no_key(&e);
    assert_eq!(server.request_count(), 1, "401 is not retried");
}

#[tokio::test]
async fn client_errors_are_not_retried_and_keep_the_provider_message() {
    for (status, kind) in [
        (400, ErrorKind::BadRequest),
        (403, ErrorKind::Auth),
        (404, ErrorKind::NotFound),
    ] {
        let server = MockServer::start();
        server.push(MockResponse::error(
            status,
            "The model `gpt-x` does not exist",
        ));
        let e = call(
            &build(&config(ProviderKind::Anthropic, &server, 4)),
            &request(),
        )
        .await
        .0
        .unwrap_err();
        assert_eq!((e.kind, e.status), (kind, Some(status)));
        assert!(
            e.message.contains("The model `gpt-x` does not exist"),
            "{e}"
        );
        assert!(e.hint.is_some());
        assert!(!e.is_retryable());
        assert_eq!(server.request_count(), 1);
    }
}

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let server = MockServer::start();
    server.push(MockResponse::error(429, "slow down").retry_after("0"));
    server.push(MockResponse::error(529, "Overloaded"));
    server.push(MockResponse::text("finally"));
    let r = call(
        &build(&config(ProviderKind::Anthropic, &server, 4)),
        &request(),
    )
    .await
    .0
    .unwrap();
    assert_eq!(r.text, "finally");
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn retry_after_is_read_from_the_response() {
    let server = MockServer::start();
    server.push(MockResponse::error(429, "slow down").retry_after("7"));
    let e = call(
        &build(&config(ProviderKind::OpenAi, &server, 1)),
        &request(),
    )
    .await
    .0
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::RateLimited);
    assert_eq!(e.retry_after, Some(Duration::from_secs(7)));
    // 1_000_000_000 s after the epoch is Sun, 09 Sep 2001 01:46:40 GMT.
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    assert_eq!(
        parse_retry_after("Sun, 09 Sep 2001 01:47:10 GMT", now),
        Some(Duration::from_secs(30))
    );
    assert_eq!(
        parse_retry_after("Sun, 09 Sep 2001 01:00:00 GMT", now),
        Some(Duration::ZERO)
    );
    assert_eq!(
        parse_retry_after("1.5", now),
        Some(Duration::from_millis(1500))
    );
    assert_eq!(parse_retry_after("soon", now), None);
}

#[tokio::test]
async fn server_errors_exhaust_the_attempts() {
    let server = MockServer::start();
    for _ in 0..3 {
        server.push(MockResponse::error(503, "upstream unavailable"));
    }
    let e = call(
        &build(&config(ProviderKind::OpenAi, &server, 3)),
        &request(),
    )
    .await
    .0
    .unwrap_err();
    assert_eq!((e.kind, e.attempts), (ErrorKind::Server, 3));
    assert!(e.to_string().contains("(after 3 attempts)"), "{e}");
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn a_stream_cut_mid_way_is_retried_and_its_partial_text_reset() {
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let server = MockServer::start();
        server
            .push(MockResponse::reply(Reply::text("partial answer that never ends")).drop_after(4));
        server.push(MockResponse::text("complete answer"));
        let (r, deltas) = call(&build(&config(kind, &server, 3)), &request()).await;
        assert_eq!(r.unwrap().text, "complete answer", "{kind:?}");
        let resets: Vec<_> = deltas
            .iter()
            .filter(|d| matches!(d, StreamDelta::Reset { .. }))
            .collect();
        assert_eq!(resets.len(), 1, "{kind:?}: {deltas:?}");
        assert!(matches!(resets[0], StreamDelta::Reset { attempt: 2, .. }));
        assert_eq!(shown_text(&deltas), "complete answer");
        assert_eq!(server.request_count(), 2);
    }
}

#[tokio::test]
async fn a_cut_stream_without_retries_is_a_network_or_incomplete_error() {
    let server = MockServer::start();
    server.push(MockResponse::reply(Reply::text("a b c d e f")).drop_after(3));
    let e = call(
        &build(&config(ProviderKind::OpenAi, &server, 1)),
        &request(),
    )
    .await
    .0
    .unwrap_err();
    assert!(
        matches!(e.kind, ErrorKind::Network | ErrorKind::IncompleteStream),
        "{e}"
    );
    assert!(e.is_retryable());
}

#[tokio::test]
async fn in_stream_overloaded_error_is_retried() {
    let server = MockServer::start();
    server.push(MockResponse::sse(crate::common::fixture(
        "anthropic_overloaded_error_event.sse",
    )));
    server.push(MockResponse::text("ok now"));
    let (r, deltas) = call(
        &build(&config(ProviderKind::Anthropic, &server, 2)),
        &request(),
    )
    .await;
    assert_eq!(r.unwrap().text, "ok now");
    assert_eq!(shown_text(&deltas), "ok now");
}

#[tokio::test]
async fn idle_timeout_between_chunks() {
    let server = MockServer::start();
    server.push(MockResponse::text("slow words here").chunk_delay(Duration::from_secs(5)));
    let mut cfg = config(ProviderKind::OpenAi, &server, 1);
    cfg.idle_timeout = Duration::from_millis(200);
    let e = call(&build(&cfg), &request()).await.0.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Timeout);
    assert!(e.message.contains("idle_timeout"), "{e}");
    assert!(e.is_retryable());
}

#[tokio::test]
async fn whole_request_timeout() {
    let server = MockServer::start();
    server.push(
        MockResponse::text("one two three four five six").chunk_delay(Duration::from_millis(150)),
    );
    let mut cfg = config(ProviderKind::Anthropic, &server, 1);
    cfg.timeout = Duration::from_millis(300);
    let e = call(&build(&cfg), &request()).await.0.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Timeout);
    assert!(e.message.contains("(timeout)"), "{e}");
}

#[tokio::test]
async fn connection_refused_is_a_retryable_network_error() {
    let dead_url = {
        let server = MockServer::start();
        server.openai_base_url()
    }; // dropped: nothing listens there any more
    let mut cfg = ProviderConfig::new(ProviderKind::OpenAi, "m");
    cfg.base_url = Some(dead_url.clone());
    cfg.retry.max_attempts = 2;
    cfg.retry.initial_backoff = Duration::from_millis(1);
    let e = call(&build(&cfg), &request()).await.0.unwrap_err();
    assert_eq!((e.kind, e.attempts), (ErrorKind::Network, 2));
    assert!(e.message.contains("could not connect"), "{e}");
    assert_no_key(&e);
}

#[tokio::test]
async fn missing_key_names_the_variable_before_any_request() {
    let server = MockServer::start();
    let none = |_: &str| None;
    let mut cfg = config(ProviderKind::OpenAi, &server, 1);
    let e = build_provider_with(&cfg, &BuildOptions::default(), &none)
        .err()
        .unwrap();
    assert_eq!(e.kind, ErrorKind::MissingKey);
    assert!(e.message.contains("OPENAI_API_KEY"), "{e}");
    cfg.kind = ProviderKind::Anthropic;
    cfg.api_key_env = Some("TEAM_CLAUDE_KEY".into());
    let e = build_provider_with(&cfg, &BuildOptions::default(), &none)
        .err()
        .unwrap();
    assert!(e.message.contains("TEAM_CLAUDE_KEY"), "{e}");
    let empty = |_: &str| Some("  ".to_string());
    assert!(
        build_provider_with(&cfg, &BuildOptions::default(), &empty).is_err(),
        "blank key is missing"
    );
    assert_eq!(server.request_count(), 0);
}

#[tokio::test]
async fn custom_key_variable_and_base_url_from_the_environment() {
    let server = MockServer::start();
    server.push(MockResponse::text("hi"));
    let url = server.openai_base_url();
    let env = move |name: &str| match name {
        "CUSTOM_KEY" => Some(KEY.to_string()),
        "OPENAI_BASE_URL" => Some(url.clone()),
        _ => None,
    };
    let mut cfg = config(ProviderKind::OpenAi, &server, 1);
    cfg.base_url = None;
    cfg.api_key_env = Some("CUSTOM_KEY".into());
    let provider = build_provider_with(&cfg, &BuildOptions::default(), &env).unwrap();
    assert_eq!(call(&provider, &request()).await.0.unwrap().text, "hi");
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}
