//! The `model` key: a `provider/name` shorthand or a full mapping.

use std::borrow::Cow;
use std::fmt;
use std::sync::LazyLock;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::duration::HumanDuration;
pub use super::script::ScriptedResponse;

/// The model an agent talks to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ModelRef {
    /// Shorthand `provider/name`, e.g. `openai/gpt-4o-mini` or `anthropic/claude-sonnet-4-5`.
    Shorthand(ModelShorthand),
    /// A model the project file (`runner.yaml`) declares by this name, e.g. `smart`.
    Named(super::project::ModelName),
    /// The full form, with endpoint, key variable, parameters, pricing and retries.
    Config(Box<ModelConfig>),
}

impl ModelRef {
    /// The full configuration, expanding the shorthand with every default.
    pub fn to_config(&self) -> ModelConfig {
        match self {
            ModelRef::Shorthand(short) => ModelConfig {
                provider: short.provider,
                name: short.name.clone(),
                ..ModelConfig::default()
            },
            ModelRef::Config(config) => (**config).clone(),
            // Names are resolved when the file is loaded (`project::resolve_models`); one
            // left here builds nothing (`provider_config` refuses it).
            ModelRef::Named(name) => ModelConfig {
                name: name.0.clone(),
                ..ModelConfig::default()
            },
        }
    }

    /// The project model name this reference is, if it is one.
    pub fn as_name(&self) -> Option<&str> {
        match self {
            ModelRef::Named(name) => Some(&name.0),
            _ => None,
        }
    }
}

/// `--model provider/name` over the file's model. With the file's provider, only the name
/// changes: the endpoint, key variable, parameters, timeout and retries stay (a file that
/// points at a local server keeps pointing there, key and all, and its fallbacks stay); the
/// pricing and the context window go, since they were the other model's. Another provider
/// starts from that provider's defaults.
pub fn override_model(file: Option<&ModelRef>, chosen: &ModelShorthand) -> ModelRef {
    match file.map(ModelRef::to_config) {
        Some(config) if config.provider == chosen.provider => {
            ModelRef::Config(Box::new(ModelConfig {
                name: chosen.name.clone(),
                pricing: None,
                context_window: None,
                script: None,
                ..config
            }))
        }
        _ => ModelRef::Shorthand(chosen.clone()),
    }
}

/// The model providers `runner` can talk to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI Chat Completions, and every server speaking that wire (Azure, vLLM, llama.cpp,
    /// OpenRouter, Groq, Mistral) through `base_url`; `api: responses` switches to the
    /// Responses API.
    #[default]
    Openai,
    /// The OpenAI Responses API: `openai` with `api: responses`.
    #[serde(rename = "openai_responses")]
    OpenaiResponses,
    /// Anthropic Messages API.
    Anthropic,
    /// A local Ollama server (OpenAI-compatible wire, no key).
    Ollama,
    /// OpenRouter (OPENROUTER_API_KEY).
    Openrouter,
    /// Groq (GROQ_API_KEY).
    Groq,
    /// Together AI (TOGETHER_API_KEY).
    Together,
    /// Mistral's API (MISTRAL_API_KEY).
    Mistral,
    /// DeepSeek's API (DEEPSEEK_API_KEY).
    Deepseek,
    /// A local vLLM server on port 8000, no key.
    Vllm,
    /// LM Studio's local server on port 1234, no key.
    Lmstudio,
    /// Answers from `script`, in order: for offline examples and tests.
    Scripted,
}

impl ProviderKind {
    pub const ALL: [ProviderKind; 12] = [
        ProviderKind::Openai,
        ProviderKind::OpenaiResponses,
        ProviderKind::Anthropic,
        ProviderKind::Ollama,
        ProviderKind::Openrouter,
        ProviderKind::Groq,
        ProviderKind::Together,
        ProviderKind::Mistral,
        ProviderKind::Deepseek,
        ProviderKind::Vllm,
        ProviderKind::Lmstudio,
        ProviderKind::Scripted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::OpenaiResponses => "openai_responses",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Ollama => "ollama",
            ProviderKind::Openrouter => "openrouter",
            ProviderKind::Groq => "groq",
            ProviderKind::Together => "together",
            ProviderKind::Mistral => "mistral",
            ProviderKind::Deepseek => "deepseek",
            ProviderKind::Vllm => "vllm",
            ProviderKind::Lmstudio => "lmstudio",
            ProviderKind::Scripted => "scripted",
        }
    }

    pub fn parse(text: &str) -> Option<ProviderKind> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == text)
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which OpenAI API `provider: openai` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OpenAiApi {
    /// Chat Completions (`/chat/completions`).
    #[default]
    Chat,
    /// The Responses API (`/responses`).
    Responses,
}

/// `provider/name`, e.g. `openai/gpt-4o-mini`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelShorthand {
    pub provider: ProviderKind,
    pub name: String,
}

/// The pattern of the shorthand; `ModelShorthand::parse` accepts exactly this. Built from
/// `ProviderKind::ALL`, so a provider added there is a shorthand in files and in the schema
/// at once (a hand-written list once left the named services out).
pub fn model_shorthand_pattern() -> &'static str {
    static PATTERN: LazyLock<String> = LazyLock::new(|| {
        let names: Vec<&str> = ProviderKind::ALL.iter().map(|kind| kind.as_str()).collect();
        format!(r"^({})/\S+$", names.join("|"))
    });
    &PATTERN
}

impl ModelShorthand {
    pub fn parse(text: &str) -> Result<ModelShorthand, String> {
        let (provider, name) = text
            .split_once('/')
            .ok_or_else(|| format!("`{text}` is not `provider/name` (e.g. openai/gpt-4o-mini)"))?;
        let provider = ProviderKind::parse(provider).ok_or_else(|| {
            let known: Vec<&str> = ProviderKind::ALL.iter().map(|kind| kind.as_str()).collect();
            format!(
                "unknown provider `{provider}`: use one of {}",
                known.join(", ")
            )
        })?;
        if name.is_empty() || name.chars().any(char::is_whitespace) {
            return Err(format!("`{text}` has no model name after the `/`"));
        }
        Ok(ModelShorthand {
            provider,
            name: name.to_string(),
        })
    }
}

impl fmt::Display for ModelShorthand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.name)
    }
}

impl Serialize for ModelShorthand {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ModelShorthand {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ModelShorthand::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for ModelShorthand {
    fn schema_name() -> Cow<'static, str> {
        "ModelShorthand".into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": model_shorthand_pattern(),
            "description": "`provider/name`: the provider is openai, openai_responses, anthropic, ollama, openrouter, groq, together, mistral, deepseek, vllm, lmstudio or scripted.",
            "examples": ["openai/gpt-4o-mini", "openai_responses/gpt-5-mini", "anthropic/claude-sonnet-4-5", "ollama/llama3.2", "groq/llama-3.3-70b-versatile", "openrouter/openai/gpt-4o-mini", "vllm/Qwen/Qwen2.5-7B-Instruct", "lmstudio/qwen2.5-7b-instruct"]
        })
    }
}

/// The full model configuration.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Which API to speak: openai, openai_responses, anthropic, ollama, scripted, or an
    /// OpenAI-compatible service by name (openrouter, groq, together, mistral, deepseek,
    /// vllm, lmstudio).
    pub provider: ProviderKind,
    /// `provider: openai` only: `chat` (Chat Completions, the default) or `responses`
    /// (the Responses API, as `provider: openai_responses`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<OpenAiApi>,
    /// The model name sent to the provider, e.g. `gpt-4o-mini`.
    #[serde(default)]
    pub name: String,
    /// The endpoint. Defaults per provider; OPENAI_BASE_URL / ANTHROPIC_BASE_URL apply when
    /// the file sets none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key (default OPENAI_API_KEY or
    /// ANTHROPIC_API_KEY). The key itself never goes in the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$"))]
    pub api_key_env: Option<String>,
    /// Request parameters passed through to the API unchanged (temperature, max_tokens, ...).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub params: Map<String, Value>,
    /// Prices per million tokens; enables `limits.max_cost_usd` and the cost in the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<Pricing>,
    /// Timeout of one request, streaming included (default 600s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<HumanDuration>,
    /// The longest silence between two pieces of a streamed reply (default 180s). A slow
    /// local server that thinks long before its first token may need more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<HumanDuration>,
    /// The largest answer, in bytes, streamed or whole (default 128 MiB): a call whose
    /// answer grows past it fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_response_bytes: Option<u64>,
    /// The longest line of a streamed answer, in bytes (default 16 MiB): a call whose
    /// event stream has a longer one fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_line_bytes: Option<u64>,
    /// Retries of failed requests (connection errors, timeouts, 408/409/429/5xx).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryConfig>,
    /// `provider: scripted` only: the responses, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<Vec<ScriptedResponse>>,
    /// The models a call goes to, in order, when this one fails after its own retries with
    /// a retryable error (429, 5xx, a timeout, a connection error). Each is a model of its
    /// own: endpoint, key variable, parameters, prices and retries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback: Vec<ModelRef>,
    /// How long the calls stay on a fallback before the first model is tried again
    /// (default 60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown: Option<HumanDuration>,
    /// The model's context window, in tokens (default: the built-in value for a well-known
    /// model name, else unknown). The agent's `context` keeps each request under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub context_window: Option<u64>,
}

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Pricing {
    /// Dollars per million input (prompt) tokens.
    #[schemars(range(min = 0))]
    pub input_per_mtok: f64,
    /// Dollars per million output (completion) tokens.
    #[schemars(range(min = 0))]
    pub output_per_mtok: f64,
}

/// Exponential backoff with jitter; `Retry-After` is honoured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    /// Attempts in all, the first included (default 4; 1 disables retries).
    #[serde(default = "RetryConfig::default_attempts")]
    #[schemars(range(min = 1))]
    pub max_attempts: u32,
    /// Wait before the first retry (default 500ms); doubles each time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_backoff: Option<HumanDuration>,
    /// The longest wait between two attempts (default 30s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_backoff: Option<HumanDuration>,
}

impl RetryConfig {
    fn default_attempts() -> u32 {
        4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shorthand_pattern_accepts_every_provider_parse_accepts() {
        let pattern = regex::Regex::new(model_shorthand_pattern()).unwrap();
        for kind in ProviderKind::ALL {
            let text = format!("{kind}/some-model");
            assert!(pattern.is_match(&text), "{text}");
            assert!(ModelShorthand::parse(&text).is_ok(), "{text}");
        }
        assert!(!pattern.is_match("acme/some-model"));
    }
}
