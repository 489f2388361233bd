//! The spec's `model` → the provider layer's configuration.

use std::time::Duration;

use crate::provider::{ProviderConfig, ProviderError, ProviderKind, RetryConfig};
use crate::spec::model::{ModelRef, ProviderKind as SpecKind};

/// Why no provider can be built (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("the agent has no model: set `model:` in the file or pass --model provider/name")]
    NoModel,
    #[error("{0}")]
    Provider(ProviderError),
}

/// The provider configuration of a model reference, with the spec's defaults applied.
pub fn provider_config(model: &ModelRef) -> Result<ProviderConfig, ModelError> {
    let spec = model.to_config();
    let kind = match spec.provider {
        SpecKind::Openai => ProviderKind::OpenAi,
        SpecKind::Anthropic => ProviderKind::Anthropic,
        SpecKind::Ollama => ProviderKind::Ollama,
        SpecKind::Scripted => ProviderKind::Scripted,
    };
    let mut config = ProviderConfig::new(kind, spec.name.clone());
    config.base_url = spec.base_url.clone();
    config.api_key_env = spec.api_key_env.clone();
    config.params = spec.params.clone();
    if let Some(timeout) = spec.timeout {
        config.timeout = timeout.0;
    }
    if let Some(retry) = &spec.retry {
        config.retry = RetryConfig {
            max_attempts: retry.max_attempts,
            initial_backoff: retry
                .initial_backoff
                .map_or(Duration::from_millis(500), |d| d.0),
            max_backoff: retry.max_backoff.map_or(Duration::from_secs(30), |d| d.0),
        };
    }
    if let Some(script) = &spec.script {
        config.script = script.clone();
    }
    Ok(config)
}
