//! The spec's `model` → the provider layer's configuration.

use std::sync::Arc;
use std::time::Duration;

use super::tree::for_each_agent;
use super::{CompileError, CompileInput};
use crate::engine::budget::{ChainPrices, PricedModel};
use crate::engine::events::RequestParams;
use crate::provider::BuildOptions;
use crate::provider::fallback::{ChainModel, Fallback};
use crate::provider::services::Service;
use crate::provider::{
    ProviderConfig, ProviderError, ProviderKind, RetryConfig, build_provider_with,
};
use crate::spec::AgentSpec;
use crate::spec::middleware::MiddlewareEntry;
use crate::spec::model::{ModelRef, OpenAiApi, ProviderKind as SpecKind};

/// Why no provider can be built (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("the agent has no model: set `model:` in the file or pass --model provider/name")]
    NoModel,
    #[error("{0}")]
    Provider(ProviderError),
    #[error("the model name `{0}` was not resolved through the project file")]
    Unresolved(String),
    #[error("`api` is only read with `provider: openai`, not `provider: {0}`")]
    ApiWithoutOpenAi(SpecKind),
    /// A model of the fallback chain (its position in `fallback`, from 0) does not build.
    #[error("fallback {0} ({1}): {2}")]
    InFallback(usize, String, Box<ModelError>),
    #[error(
        "a fallback model has no `{0}` of its own: list every fallback, in order, in the first \
         model's `fallback`, and set `cooldown` there"
    )]
    NestedFallback(&'static str),
}

impl ModelError {
    /// The key, under the model's own, of the part of the model that is wrong.
    pub fn key_in_model(&self) -> String {
        match self {
            ModelError::InFallback(index, _, _) => format!("/fallback/{index}"),
            _ => String::new(),
        }
    }
}

/// How long calls stay on a fallback before the first model is tried again, unless the
/// model says (`cooldown`).
pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(60);

/// Builds a model and its fallbacks: the provider (a [`Fallback`] over the chain when the
/// model has `fallback`) and the prices of each model of the chain.
pub fn build_model(
    model: &ModelRef,
    build: &BuildOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PricedModel, ModelError> {
    let spec = model.to_config();
    let one = |model: &ModelRef| {
        provider_config(model).and_then(|config| {
            build_provider_with(&config, build, env).map_err(ModelError::Provider)
        })
    };
    // The first model's parameters are the ones its calls' events report.
    let params = RequestParams::from_body(&provider_config(model)?.params);
    let provider = one(model)?;
    if spec.fallback.is_empty() {
        return Ok(PricedModel {
            provider,
            prices: ChainPrices::single(super::model_price(model)),
            windows: chain_windows(model),
            params,
        });
    }
    let mut chain = vec![ChainModel {
        label: label(model),
        provider,
        window: window(model),
    }];
    let mut prices = vec![super::model_price(model)];
    for (index, fallback) in spec.fallback.iter().enumerate() {
        let in_fallback = |error| ModelError::InFallback(index, label(fallback), Box::new(error));
        let own = fallback.to_config();
        if !own.fallback.is_empty() {
            return Err(in_fallback(ModelError::NestedFallback("fallback")));
        }
        if own.cooldown.is_some() {
            return Err(in_fallback(ModelError::NestedFallback("cooldown")));
        }
        chain.push(ChainModel {
            window: window(fallback),
            label: label(fallback),
            provider: one(fallback).map_err(in_fallback)?,
        });
        prices.push(super::model_price(fallback));
    }
    let cooldown = spec.cooldown.map_or(DEFAULT_COOLDOWN, |d| d.0);
    Ok(PricedModel {
        provider: Arc::new(Fallback::new(chain, cooldown)),
        prices: ChainPrices(prices),
        windows: chain_windows(model),
        params,
    })
}

/// The context window of each model of the chain: `context_window`, else the built-in
/// value for its name.
pub fn chain_windows(model: &ModelRef) -> Vec<Option<u64>> {
    let config = model.to_config();
    std::iter::once(model)
        .chain(config.fallback.iter())
        .map(window)
        .collect()
}

/// A model's context window: `context_window`, else the built-in value for its name.
fn window(model: &ModelRef) -> Option<u64> {
    let config = model.to_config();
    config
        .context_window
        .or_else(|| crate::provider::windows::known_window(&config.name))
}

/// How events and errors name a model: `provider/name`.
pub fn label(model: &ModelRef) -> String {
    let config = model.to_config();
    format!("{}/{}", config.provider, config.name)
}

/// The provider configuration of a model reference, with the spec's defaults applied.
pub fn provider_config(model: &ModelRef) -> Result<ProviderConfig, ModelError> {
    if let Some(name) = model.as_name() {
        return Err(ModelError::Unresolved(name.to_string()));
    }
    let spec = model.to_config();
    let kind = match (spec.provider, spec.api) {
        (SpecKind::Openai, None | Some(OpenAiApi::Chat)) => ProviderKind::OpenAi,
        (SpecKind::Openai, Some(OpenAiApi::Responses)) => ProviderKind::OpenAiResponses,
        (other, Some(_)) => return Err(ModelError::ApiWithoutOpenAi(other)),
        (SpecKind::OpenaiResponses, None) => ProviderKind::OpenAiResponses,
        (SpecKind::Anthropic, None) => ProviderKind::Anthropic,
        (SpecKind::Ollama, None) => ProviderKind::Ollama,
        (SpecKind::Openrouter, None) => ProviderKind::Service(Service::OpenRouter),
        (SpecKind::Groq, None) => ProviderKind::Service(Service::Groq),
        (SpecKind::Together, None) => ProviderKind::Service(Service::Together),
        (SpecKind::Mistral, None) => ProviderKind::Service(Service::Mistral),
        (SpecKind::Deepseek, None) => ProviderKind::Service(Service::DeepSeek),
        (SpecKind::Vllm, None) => ProviderKind::Service(Service::Vllm),
        (SpecKind::Lmstudio, None) => ProviderKind::Service(Service::LmStudio),
        (SpecKind::Scripted, None) => ProviderKind::Scripted,
    };
    let mut config = ProviderConfig::new(kind, spec.name.clone());
    config.base_url = spec.base_url.clone();
    config.api_key_env = spec.api_key_env.clone();
    config.params = spec.params.clone();
    if let Some(timeout) = spec.timeout {
        config.timeout = timeout.0;
    }
    if let Some(idle) = spec.idle_timeout {
        config.idle_timeout = idle.0;
    }
    if let Some(bytes) = spec.max_response_bytes {
        config.limits.max_response = bytes;
    }
    if let Some(bytes) = spec.max_line_bytes {
        config.limits.max_line = bytes;
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

/// Builds the models of every agent in the tree (its own, each of its fallbacks, and its
/// `summarize` model), so a
/// missing API key stops the run at start (exit 2), naming the variable and the file,
/// rather than when a sub-agent is first called. The root is compiled first, so a problem
/// of its own is reported at its line.
pub fn check_models(input: &CompileInput<'_>) -> Result<(), CompileError> {
    for_each_agent(input, &mut |agent, place| {
        for (key, model) in models_of(agent.spec, agent.model_override.as_ref()) {
            let built = build_model(model, &agent.build.models, &*agent.env).map(drop);
            built.map_err(|error| {
                let pointer = place.key(&format!("{key}{}", error.key_in_model()));
                if place.pointer.is_empty() {
                    return CompileError::Model(error).at(pointer);
                }
                let file = place
                    .file
                    .map_or("inline".to_string(), |f| f.display().to_string());
                let name = &agent.spec.name;
                CompileError::SubAgentFile(format!("agent `{name}` ({file}): {error}")).at(pointer)
            })?;
        }
        Ok(())
    })
}

/// The models an agent uses, each with the key that names it: its own (or the one
/// `--model` puts in its place) and its `summarize` middleware's.
fn models_of<'a>(
    spec: &'a AgentSpec,
    model_override: Option<&'a ModelRef>,
) -> impl Iterator<Item = (String, &'a ModelRef)> {
    let summarizers = spec
        .middleware
        .iter()
        .enumerate()
        .filter_map(|(index, entry)| match entry {
            MiddlewareEntry::Summarize(config) => config
                .model
                .as_ref()
                .map(|model| (summarize_model_key(index), model)),
            _ => None,
        });
    model_override
        .or(spec.model.as_ref())
        .map(|model| ("/model".to_string(), model))
        .into_iter()
        .chain(summarizers)
}

/// The key of the model of the `summarize` middleware at `index`.
pub fn summarize_model_key(index: usize) -> String {
    format!("/middleware/{index}/summarize/model")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn kind_of(model: Value) -> Result<ProviderKind, String> {
        let model: ModelRef = serde_json::from_value(model).map_err(|e| e.to_string())?;
        provider_config(&model)
            .map(|config| config.kind)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn both_spellings_of_the_responses_api_build_the_same_provider() {
        assert_eq!(
            kind_of(json!("openai_responses/gpt-5-mini")),
            Ok(ProviderKind::OpenAiResponses)
        );
        assert_eq!(
            kind_of(json!({"provider": "openai", "api": "responses", "name": "gpt-5-mini"})),
            Ok(ProviderKind::OpenAiResponses)
        );
        assert_eq!(
            kind_of(json!({"provider": "openai", "api": "chat", "name": "gpt-4o"})),
            Ok(ProviderKind::OpenAi)
        );
        assert_eq!(kind_of(json!("openai/gpt-4o")), Ok(ProviderKind::OpenAi));
    }

    #[test]
    fn api_on_another_provider_is_refused() {
        assert_eq!(
            kind_of(json!({"provider": "anthropic", "api": "chat", "name": "claude-sonnet-4-5"})),
            Err("`api` is only read with `provider: openai`, not `provider: anthropic`".into())
        );
        let doubled = json!({"provider": "openai_responses", "api": "responses", "name": "m"});
        assert!(kind_of(doubled).is_err());
    }
}
