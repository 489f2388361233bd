//! OpenAI-compatible services known by name, so `model: groq/llama-3.3-70b-versatile` needs
//! neither `base_url` nor `api_key_env`. Each speaks Chat Completions; the file's
//! `base_url` and `api_key_env` still win.

/// A service and its defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    OpenRouter,
    Groq,
    Together,
    Mistral,
    DeepSeek,
    /// A local vLLM server (`vllm serve`), no key.
    Vllm,
    /// LM Studio's local server, no key.
    LmStudio,
}

impl Service {
    #[cfg(test)]
    const ALL: [Service; 7] = [
        Service::OpenRouter,
        Service::Groq,
        Service::Together,
        Service::Mistral,
        Service::DeepSeek,
        Service::Vllm,
        Service::LmStudio,
    ];

    /// The `provider` value, and the provider's name in errors and cassettes.
    pub fn name(self) -> &'static str {
        match self {
            Service::OpenRouter => "openrouter",
            Service::Groq => "groq",
            Service::Together => "together",
            Service::Mistral => "mistral",
            Service::DeepSeek => "deepseek",
            Service::Vllm => "vllm",
            Service::LmStudio => "lmstudio",
        }
    }

    /// The variable the key is read from (`None`: a local server that needs none).
    pub fn key_env(self) -> Option<&'static str> {
        match self {
            Service::OpenRouter => Some("OPENROUTER_API_KEY"),
            Service::Groq => Some("GROQ_API_KEY"),
            Service::Together => Some("TOGETHER_API_KEY"),
            Service::Mistral => Some("MISTRAL_API_KEY"),
            Service::DeepSeek => Some("DEEPSEEK_API_KEY"),
            Service::Vllm | Service::LmStudio => None,
        }
    }

    /// The endpoint, as each service documents it (local servers on their default ports).
    pub fn base_url(self) -> &'static str {
        match self {
            Service::OpenRouter => "https://openrouter.ai/api/v1",
            Service::Groq => "https://api.groq.com/openai/v1",
            Service::Together => "https://api.together.xyz/v1",
            Service::Mistral => "https://api.mistral.ai/v1",
            Service::DeepSeek => "https://api.deepseek.com/v1",
            Service::Vllm => "http://127.0.0.1:8000/v1",
            Service::LmStudio => "http://127.0.0.1:1234/v1",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_service_has_a_name_of_its_own_and_local_ones_need_no_key() {
        let names: std::collections::HashSet<_> = Service::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(names.len(), Service::ALL.len());
        for service in Service::ALL {
            let local = service.base_url().starts_with("http://127.0.0.1");
            assert_eq!(service.key_env().is_none(), local, "{}", service.name());
        }
    }
}
