//! Recording real exchanges and replaying them with no network and no key.

use std::sync::Arc;

use runner::provider::cassette::{Exchange, normalize_request};
use runner::provider::{
    BuildOptions, CassetteRecorder, ErrorKind, Message, ModelRequest, Provider, ProviderKind,
    ReplayStore, build_provider_with,
};
use runner::testing::mock_server::{MockResponse, MockServer, Reply};
use serde_json::json;

use crate::common::{KEY, call, config, fake_env, request};

/// A two-call conversation (tool call, then answer); the system prompt has a timestamp.
async fn converse(provider: &Arc<dyn Provider>, stamp: &str, id_suffix: &str) -> Vec<String> {
    let mut req = request();
    req.system = Some(format!(
        "Now is {stamp}. Run 0b6f1c1e-2a9d-4c1e-9c3b-7d2e8f1a0b{id_suffix}."
    ));
    let first = call(provider, &req).await.0.unwrap();
    let mut assistant = first.to_message();
    // Ids differ on every real run; pretend this run got another one.
    if let Message::Assistant(a) = &mut assistant {
        a.tool_calls[0].id = format!("call_run_{id_suffix}");
    }
    let call_ref = match &assistant {
        Message::Assistant(a) => a.tool_calls[0].clone(),
        _ => unreachable!(),
    };
    req.messages.push(assistant);
    req.messages
        .push(Message::tool_result(&call_ref, "file contents", false));
    let second = call(provider, &req).await.0.unwrap();
    vec![first.tool_calls[0].name.clone(), second.text]
}

#[tokio::test]
async fn record_then_replay_without_network_or_key() {
    let dir = std::env::temp_dir().join(format!("runner-cassette-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.jsonl");

    let recorded = {
        let server = MockServer::start();
        server.push(MockResponse::reply(Reply::tool_call(
            "read_file",
            json!({"path": "a.txt"}),
        )));
        server.push(MockResponse::text("The file says hi."));
        let opts = BuildOptions {
            record: Some(CassetteRecorder::create(&path).unwrap()),
            replay: None,
        };
        let provider =
            build_provider_with(&config(ProviderKind::OpenAi, &server, 1), &opts, &fake_env)
                .unwrap();
        converse(&provider, "2026-11-21T10:00:00.123Z", "01").await
    }; // the server is gone from here on

    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 2);
    assert!(!text.contains(KEY));
    let first: Exchange = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        (first.version, first.provider.as_str(), first.model.as_str()),
        (1, "openai", "test-model")
    );
    assert!(
        first
            .request
            .system
            .as_deref()
            .unwrap()
            .contains("<timestamp>")
    );

    let no_env = |_: &str| None;
    let store = ReplayStore::load(&path).unwrap();
    let opts = BuildOptions {
        record: None,
        replay: Some(store),
    };
    let mut cfg = config(ProviderKind::OpenAi, &MockServer::start(), 1);
    cfg.base_url = Some("http://127.0.0.1:9/unused".into());
    let provider = build_provider_with(&cfg, &opts, &no_env).unwrap();
    let replayed = converse(&provider, "2027-01-02T03:04:05Z", "02").await;
    assert_eq!(replayed, recorded);
    assert_eq!(
        replayed,
        vec!["read_file".to_string(), "The file says hi.".to_string()]
    );

    // A third call has nothing left to replay.
    let e = call(&provider, &request()).await.0.unwrap_err();
    assert_eq!(e.kind, ErrorKind::ReplayMiss);
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn a_replay_miss_shows_the_closest_recorded_request() {
    let dir = std::env::temp_dir().join(format!("runner-cassette-miss-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.jsonl");
    {
        let server = MockServer::start();
        server.push(MockResponse::text("hello"));
        server.push(MockResponse::error(400, "context too long"));
        let opts = BuildOptions {
            record: Some(CassetteRecorder::create(&path).unwrap()),
            replay: None,
        };
        let provider = build_provider_with(
            &config(ProviderKind::Anthropic, &server, 1),
            &opts,
            &fake_env,
        )
        .unwrap();
        call(&provider, &request()).await.0.unwrap();
        let mut second = request();
        second.messages = vec![Message::user("a very long question")].into();
        assert!(call(&provider, &second).await.0.is_err());
    }
    let opts = BuildOptions {
        record: None,
        replay: Some(ReplayStore::load(&path).unwrap()),
    };
    let server = MockServer::start();
    let provider =
        build_provider_with(&config(ProviderKind::Anthropic, &server, 1), &opts, &|_| {
            None
        })
        .unwrap();

    let mut changed = request();
    changed.messages = vec![Message::user("Say goodbye.")].into();
    let e = call(&provider, &changed).await.0.unwrap_err();
    assert_eq!(e.kind, ErrorKind::ReplayMiss);
    assert!(
        e.message.contains("closest recorded request is exchange 1"),
        "{e}"
    );
    assert!(
        e.message
            .contains(r#"request.messages[0].content: recorded "Say hello.", now "Say goodbye.""#),
        "{e}"
    );
    assert!(e.hint.is_some());

    // Recorded errors replay as errors; recorded answers are used once each.
    let mut second = request();
    second.messages = vec![Message::user("a very long question")].into();
    let e = call(&provider, &second).await.0.unwrap_err();
    assert_eq!(
        (e.kind, e.message.as_str()),
        (ErrorKind::BadRequest, "context too long")
    );
    assert_eq!(call(&provider, &request()).await.0.unwrap().text, "hello");
    let e = call(&provider, &request()).await.0.unwrap_err();
    assert!(e.message.contains("already used"), "{e}");
    assert_eq!(server.request_count(), 0);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn normalisation_is_idempotent_and_maps_ids_in_order() {
    let mut req: ModelRequest = request();
    req.messages.push(Message::user(
        "at 2026-01-01 10:00 and 2026-01-01T10:00:00+02:00",
    ));
    let once = normalize_request(&req);
    assert_eq!(normalize_request(&once), once);
    assert!(
        matches!(&once.messages[1], Message::User { content } if content == "at <timestamp> and <timestamp>")
    );
}

#[tokio::test]
async fn the_cassette_never_holds_the_key_even_when_the_model_says_it() {
    let dir = std::env::temp_dir().join(format!("runner-cassette-key-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.jsonl");
    let server = MockServer::start();
    server.push(MockResponse::text(format!("Your key is {KEY}.")));
    let opts = BuildOptions {
        record: Some(CassetteRecorder::create(&path).unwrap()),
        replay: None,
    };
    let provider =
        build_provider_with(&config(ProviderKind::OpenAi, &server, 1), &opts, &fake_env).unwrap();
    call(&provider, &request()).await.0.unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains(KEY), "{text}");
    assert!(text.contains("Your key is [REDACTED]."), "{text}");
}

#[test]
fn replay_refuses_a_cassette_larger_than_the_bound() {
    let dir = std::env::temp_dir().join(format!("runner-cassette-big-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("huge.jsonl");
    // Sparse: no disk space used, and nothing is read.
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(runner::provider::cassette::MAX_CASSETTE_BYTES + 1)
        .unwrap();
    let e = ReplayStore::load(&path).unwrap_err();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(e.kind, ErrorKind::Config);
    assert!(e.message.contains("huge.jsonl"), "{e}");
    assert!(e.message.contains("at most 256 MiB"), "{e}");
}
