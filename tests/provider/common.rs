//! Shared helpers: configs pointed at the mock, a delta collector, fixtures.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use runner::provider::{
    BuildOptions, Message, ModelRequest, ModelResponse, Provider, ProviderConfig, ProviderError,
    ProviderKind, RetryConfig, StreamDelta, ToolSpec, build_provider_with,
};
use runner::testing::mock_server::MockServer;
use serde_json::json;

/// The fake key used everywhere; tests assert it never shows up in errors.
pub const KEY: &str = "sk-test-SECRET-0123456789";

pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/wire/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

/// A config for `kind` aimed at `server`, with quick retries and bounded timeouts.
pub fn config(kind: ProviderKind, server: &MockServer, max_attempts: u32) -> ProviderConfig {
    let mut cfg = ProviderConfig::new(kind, "test-model");
    cfg.base_url = Some(match kind {
        ProviderKind::Anthropic => server.anthropic_base_url(),
        _ => server.openai_base_url(),
    });
    cfg.timeout = Duration::from_secs(20);
    cfg.idle_timeout = Duration::from_secs(10);
    cfg.retry = RetryConfig {
        max_attempts,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(20),
    };
    cfg
}

/// Builds with `KEY` in the default key variables and nothing else in the environment.
pub fn build(cfg: &ProviderConfig) -> Arc<dyn Provider> {
    build_provider_with(cfg, &BuildOptions::default(), &fake_env).expect("build provider")
}

pub fn fake_env(name: &str) -> Option<String> {
    matches!(name, "OPENAI_API_KEY" | "ANTHROPIC_API_KEY" | "CUSTOM_KEY").then(|| KEY.to_string())
}

pub fn request() -> ModelRequest {
    ModelRequest {
        system: Some("You are terse.".into()),
        messages: vec![Message::user("Say hello.")].into(),
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Reads a file.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }].into(),
        ..Default::default()
    }
}

/// Runs one call, collecting the deltas.
pub async fn call(
    provider: &Arc<dyn Provider>,
    req: &ModelRequest,
) -> (Result<ModelResponse, ProviderError>, Vec<StreamDelta>) {
    let deltas = Mutex::new(Vec::new());
    let sink = |d: StreamDelta| deltas.lock().unwrap().push(d);
    let result = provider.stream(req, &sink).await;
    (result, deltas.into_inner().unwrap())
}

/// The text a consumer would show: text deltas, with everything before a Reset dropped.
pub fn shown_text(deltas: &[StreamDelta]) -> String {
    let mut text = String::new();
    for d in deltas {
        match d {
            StreamDelta::Text { text: t } => text.push_str(t),
            StreamDelta::Reset { .. } => text.clear(),
            _ => {}
        }
    }
    text
}

/// Asserts that no error text contains the key.
pub fn assert_no_key(e: &ProviderError) {
    let all = format!("{e} {e:?}");
    assert!(!all.contains(KEY), "key leaked in error: {all}");
}
