//! From a model configuration to a ready `Arc<dyn Provider>`.
//!
//! This is where keys are read: the env var named by `api_key_env` (default
//! `OPENAI_API_KEY` for both OpenAI wires / `ANTHROPIC_API_KEY`; none for Ollama and
//! scripted). A missing key fails here, naming the variable, before any request. When
//! `base_url` is unset, `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` apply, then the
//! provider's default.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::Provider;
use super::anthropic::AnthropicProvider;
use super::body_limits::BodyLimits;
use super::cassette::{CassetteRecorder, Recording};
use super::error::{ErrorKind, ProviderError};
use super::http::Secret;
use super::openai::{HttpSettings, OpenAiProvider};
use super::replay::{Replay, ReplayStore};
use super::responses::ResponsesProvider;
use super::retry::Retry;
use super::scripted::{ScriptedProvider, ScriptedResponse};
use super::services::Service;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// OpenAI Chat Completions and every server speaking it.
    OpenAi,
    /// The OpenAI Responses API: OpenAI's key and endpoint, another wire.
    OpenAiResponses,
    Anthropic,
    Ollama,
    /// An OpenAI-compatible service known by name (Chat Completions, its own defaults).
    Service(Service),
    Scripted,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::OpenAiResponses => "openai_responses",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Ollama => "ollama",
            ProviderKind::Service(service) => service.name(),
            ProviderKind::Scripted => "scripted",
        }
    }

    /// The key variable used when `api_key_env` is not set (`None`: no key needed).
    pub fn default_key_env(self) -> Option<&'static str> {
        match self {
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => Some("OPENAI_API_KEY"),
            ProviderKind::Anthropic => Some("ANTHROPIC_API_KEY"),
            ProviderKind::Service(service) => service.key_env(),
            ProviderKind::Ollama | ProviderKind::Scripted => None,
        }
    }

    /// `(env var, built-in default)` for the base URL.
    pub fn default_base_url(self) -> (Option<&'static str>, &'static str) {
        match self {
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => {
                (Some("OPENAI_BASE_URL"), "https://api.openai.com/v1")
            }
            ProviderKind::Anthropic => (Some("ANTHROPIC_BASE_URL"), "https://api.anthropic.com"),
            ProviderKind::Ollama => (Some("OLLAMA_HOST"), "http://127.0.0.1:11434/v1"),
            ProviderKind::Service(service) => (None, service.base_url()),
            ProviderKind::Scripted => (None, ""),
        }
    }

    /// The base URL the variable of [`default_base_url`](Self::default_base_url) names.
    /// `OLLAMA_HOST` is Ollama's own setting, read as Ollama reads it: `host[:port]`, port
    /// 11434 by default, or a URL with a scheme (whose own default port applies); its
    /// OpenAI-compatible API is under `/v1`.
    pub fn base_url_from_env(self, value: &str) -> String {
        let value = value.trim().trim_end_matches('/');
        if self != ProviderKind::Ollama {
            return value.to_string();
        }
        match value.split_once("://") {
            Some(_) => format!("{value}/v1"),
            None if value.contains(':') => format!("http://{value}/v1"),
            None => format!("http://{value}:11434/v1"),
        }
    }
}

/// `model.retry`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryConfig {
    /// Total attempts, the first included (1 = no retry).
    pub max_attempts: u32,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
        }
    }
}

/// Everything needed to build one provider (the `model` mapping of an agent file).
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// The model name sent to the API.
    pub model: String,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    /// Passed through into the API request body (`null` removes a default field).
    pub params: Map<String, Value>,
    /// Whole request, streaming included.
    pub timeout: Duration,
    /// Longest silence between two pieces of a streamed body.
    pub idle_timeout: Duration,
    /// Bounds on an answer's size and its event stream's lines.
    pub limits: BodyLimits,
    pub retry: RetryConfig,
    /// `kind: scripted` only.
    pub script: Vec<ScriptedResponse>,
}

impl ProviderConfig {
    pub fn new(kind: ProviderKind, model: impl Into<String>) -> Self {
        ProviderConfig {
            kind,
            model: model.into(),
            base_url: None,
            api_key_env: None,
            params: Map::new(),
            timeout: Duration::from_secs(600),
            idle_timeout: Duration::from_secs(180),
            limits: BodyLimits::default(),
            retry: RetryConfig::default(),
            script: Vec::new(),
        }
    }

    /// The variable the key is read from, if this provider uses one.
    pub fn key_env(&self) -> Option<String> {
        self.api_key_env
            .clone()
            .or_else(|| self.kind.default_key_env().map(String::from))
    }
}

/// A run's cassettes, for its models: a shared recorder for `--record` (the MCP servers'
/// exchanges go in it too), a shared store for `--replay` (the MCP servers' are
/// `compile::BuildOptions`').
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    pub record: Option<Arc<CassetteRecorder>>,
    pub replay: Option<Arc<ReplayStore>>,
}

#[cfg(any(test, feature = "testing"))]
/// Builds the provider for `cfg` with keys from the process environment.
pub fn build_provider(cfg: &ProviderConfig) -> Result<Arc<dyn Provider>, ProviderError> {
    build_provider_with(cfg, &BuildOptions::default(), &|name| {
        std::env::var(name).ok()
    })
}

/// Builds the provider for `cfg`: `Recording?(Retry(client))`, or `Replay` (which
/// reads no key). `env` looks variables up (tests pass a map instead of the process
/// environment).
pub fn build_provider_with(
    cfg: &ProviderConfig,
    opts: &BuildOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, ProviderError> {
    let name = cfg.kind.as_str();
    if let Some(store) = &opts.replay {
        // The recorded client's answer: it decides whether a first answer that does not
        // match the output schema counts as a retry.
        let schema_with_tools = kind_takes_schema_with_tools(cfg.kind, &base_url(cfg, env));
        let replay = Replay::new(store.clone(), name, cfg.model.clone());
        return Ok(Arc::new(replay.with_schema_with_tools(schema_with_tools)));
    }
    let (provider, key): (Arc<dyn Provider>, Option<Secret>) = match cfg.kind {
        ProviderKind::Scripted => (
            Arc::new(ScriptedProvider::new(cfg.model.clone(), cfg.script.clone())),
            None,
        ),
        kind => {
            let key_env = cfg.key_env();
            let key = match &key_env {
                Some(var) => match env(var).filter(|v| !v.trim().is_empty()) {
                    Some(value) => {
                        // Whatever its variable is called, no tool result may show it.
                        crate::secrets::remember(&value);
                        Some(Secret::new(value.trim().to_string()))
                    }
                    None => {
                        return Err(ProviderError::new(
                            ErrorKind::MissingKey,
                            name,
                            format!("the environment variable {var} is not set (it should hold the {name} API key)"),
                        )
                        .with_hint(format!("export {var}=... or set model.api_key_env to the variable that holds the key")));
                    }
                },
                None => None,
            };
            let base_url = base_url(cfg, env);
            let settings = HttpSettings {
                provider: name.to_string(),
                model: cfg.model.clone(),
                base_url,
                key: key.clone(),
                key_env,
                params: cfg.params.clone(),
                timeout: cfg.timeout,
                idle_timeout: cfg.idle_timeout,
                limits: cfg.limits,
            };
            let client: Arc<dyn Provider> = match kind {
                ProviderKind::Anthropic => Arc::new(AnthropicProvider::new(settings)?),
                ProviderKind::OpenAiResponses => Arc::new(ResponsesProvider::new(settings)?),
                _ => Arc::new(OpenAiProvider::new(settings)?),
            };
            (Arc::new(Retry::new(client, cfg.retry, cfg.timeout)), key)
        }
    };
    Ok(match &opts.record {
        Some(recorder) => Arc::new(Recording::new(provider, recorder.clone(), key)),
        None => provider,
    })
}

/// The endpoint of `cfg` (an HTTP provider): `base_url`, else the provider's variable
/// (`OLLAMA_HOST`, ...), else its default.
fn base_url(cfg: &ProviderConfig, env: &dyn Fn(&str) -> Option<String>) -> String {
    let kind = cfg.kind;
    let (url_env, default_url) = kind.default_base_url();
    let from_env = || {
        let value = url_env.and_then(env).filter(|u| !u.trim().is_empty())?;
        Some(kind.base_url_from_env(&value))
    };
    cfg.base_url
        .clone()
        .or_else(from_env)
        .unwrap_or_else(|| default_url.to_string())
}

/// [`Provider::schema_with_tools`] of the client `build_provider_with` makes for `kind`.
fn kind_takes_schema_with_tools(kind: ProviderKind, base_url: &str) -> bool {
    match kind {
        ProviderKind::OpenAi | ProviderKind::Ollama | ProviderKind::Service(_) => {
            super::openai::schema_with_tools(base_url)
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ollama_host_is_read_as_ollama_writes_it() {
        let url = |host| ProviderKind::Ollama.base_url_from_env(host);
        assert_eq!(url("127.0.0.1"), "http://127.0.0.1:11434/v1");
        assert_eq!(url("0.0.0.0:9999"), "http://0.0.0.0:9999/v1");
        assert_eq!(
            url("https://gpu.example.com/"),
            "https://gpu.example.com/v1"
        );
        let openai = ProviderKind::OpenAi.base_url_from_env("http://127.0.0.1:8080/v1");
        assert_eq!(openai, "http://127.0.0.1:8080/v1");
    }
}
