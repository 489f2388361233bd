//! Where a model sends the conversation, and which key goes with it: the fields of a model
//! mapping that decide it (`base_url`, `api_key_env`, and `provider` for what those leave
//! to its defaults). The widening rule compares them: a reload or a resume that sends an
//! agent's calls somewhere new, or another key along, gives the agent more.

use std::fmt;

use super::model::{ModelConfig, ModelRef, ProviderKind};

/// A model's endpoint and key variable, as the file decides them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub endpoint: Setting,
    pub key: Setting,
}

/// One of the two: written in the file, or left to the provider's default (which the
/// environment may set, as `OPENAI_BASE_URL` does, the same before and after a reload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setting {
    Written(String),
    DefaultOf(ProviderKind),
}

impl Destination {
    /// The destination of one model mapping. A URL is compared without its trailing `/`;
    /// `openai_responses` has `openai`'s defaults (another wire, the same endpoint and key).
    pub fn of(config: &ModelConfig) -> Destination {
        let provider = match config.provider {
            ProviderKind::OpenaiResponses => ProviderKind::Openai,
            other => other,
        };
        let setting = |written: Option<&String>, trim: bool| match written {
            Some(value) if trim => Setting::Written(value.trim_end_matches('/').to_string()),
            Some(value) => Setting::Written(value.clone()),
            None => Setting::DefaultOf(provider),
        };
        Destination {
            endpoint: setting(config.base_url.as_ref(), true),
            key: setting(config.api_key_env.as_ref(), false),
        }
    }
}

/// The destination of every model a reference reaches: the model, then its fallbacks.
pub fn destinations_of(model: &ModelRef) -> Vec<Destination> {
    let config = model.to_config();
    let fallbacks = config.fallback.iter().flat_map(destinations_of);
    let mut all = vec![Destination::of(&config)];
    all.extend(fallbacks);
    all
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.endpoint {
            Setting::Written(url) => write!(f, "`{}`", without_userinfo(url))?,
            Setting::DefaultOf(provider) => write!(f, "the default endpoint of `{provider}`")?,
        }
        match &self.key {
            Setting::Written(var) => write!(f, " with the key in `{var}`"),
            Setting::DefaultOf(provider) => write!(f, " with the default key of `{provider}`"),
        }
    }
}

/// A URL as shown in a message: a `user:password@` in it is not repeated.
fn without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://…@{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(provider: ProviderKind, base_url: Option<&str>, key: Option<&str>) -> ModelConfig {
        ModelConfig {
            provider,
            base_url: base_url.map(String::from),
            api_key_env: key.map(String::from),
            ..ModelConfig::default()
        }
    }

    #[test]
    fn the_provider_counts_only_for_what_the_file_leaves_to_it() {
        let both = |provider| Destination::of(&config(provider, Some("http://h/v1/"), Some("K")));
        assert_eq!(both(ProviderKind::Openai), both(ProviderKind::Anthropic));
        let default = |provider| Destination::of(&config(provider, None, None));
        assert_eq!(
            default(ProviderKind::Openai),
            default(ProviderKind::OpenaiResponses)
        );
        assert_ne!(default(ProviderKind::Openai), default(ProviderKind::Groq));
    }

    #[test]
    fn a_password_in_a_url_is_not_shown() {
        let shown = Destination::of(&config(
            ProviderKind::Openai,
            Some("https://me:hunter2@example.com/v1"),
            None,
        ))
        .to_string();
        assert_eq!(
            shown,
            "`https://…@example.com/v1` with the default key of `openai`"
        );
    }
}
