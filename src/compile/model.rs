//! The spec's `model` → the provider layer's configuration.

use std::time::Duration;

use super::tree::for_each_agent;
use super::{CompileError, CompileInput};
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
    #[error("`api` is only read with `provider: openai`, not `provider: {0}`")]
    ApiWithoutOpenAi(SpecKind),
}

/// The provider configuration of a model reference, with the spec's defaults applied.
pub fn provider_config(model: &ModelRef) -> Result<ProviderConfig, ModelError> {
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

/// Builds the models of every agent in the tree (its own and its `summarize` model), so a
/// missing API key stops the run at start (exit 2), naming the variable and the file,
/// rather than when a sub-agent is first called. The root is compiled first, so a problem
/// of its own is reported at its line.
pub fn check_models(input: &CompileInput<'_>) -> Result<(), CompileError> {
    for_each_agent(input, &mut |agent, place| {
        for (key, model) in models_of(agent.spec, agent.model_override.as_ref()) {
            let built = provider_config(model)
                .and_then(|config| {
                    build_provider_with(&config, &agent.build.models, &*agent.env)
                        .map_err(ModelError::Provider)
                })
                .map(drop);
            built.map_err(|error| {
                let pointer = place.key(&key);
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
