//! OpenAI Chat Completions client, also used for every compatible server (Azure, Ollama,
//! vLLM, llama.cpp, OpenRouter, Groq, Mistral) through `base_url`.
//!
//! Streams by default (`stream: true` plus `stream_options.include_usage`); set
//! `params: {stream: false}` for servers that cannot stream, and a server that answers
//! a streaming request with plain JSON is understood as well. Any param set to `null`
//! removes that field from the body (e.g. `stream_options: null` for servers that
//! reject it).

use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::{ErrorKind, ProviderError};
use super::http::{HttpClient, Secret, exchange};
use super::item_cache::ItemCache;
use super::openai_body;
use super::openai_stream::{Accumulator, Delta, OpenAiStream, WireUsage};
use super::request_body::BodyWriter;
use super::tools_cache::ToolsCache;
use super::types::{ModelRequest, ModelResponse, StreamDelta};
use super::wire_body::Body;
use super::{BoxFuture, DeltaSink, Provider};

/// A Chat Completions endpoint.
#[derive(Debug)]
pub struct OpenAiProvider {
    http: HttpClient,
    model: String,
    url: String,
    azure: bool,
    /// OpenAI's own API: it takes at most 4 stop sequences (its reasoning models none), so
    /// the text protocol's are not sent there; the reply is read to its end instead.
    platform: bool,
    params: Map<String, Value>,
    /// The last request's messages, serialised.
    sent: ItemCache,
    /// The tools' JSON of the last request.
    sent_tools: ToolsCache,
}

/// Whether the Chat Completions server at `base_url` takes `response_format` along with
/// tools: OpenAI's and Azure's own APIs do; any other may turn the schema into a grammar
/// (llama.cpp does), which leaves the model no way to call a tool.
pub fn schema_with_tools(base_url: &str) -> bool {
    host(base_url) == "api.openai.com" || is_azure(base_url)
}

/// Settings for [`OpenAiProvider::new`] (and [`AnthropicProvider`](super::anthropic::AnthropicProvider)).
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// Name used in errors and cassettes ("openai", "ollama", ...).
    pub provider: String,
    pub model: String,
    pub base_url: String,
    pub key: Option<Secret>,
    /// The env var the key came from, named in hints.
    pub key_env: Option<String>,
    pub params: Map<String, Value>,
    pub timeout: std::time::Duration,
    pub idle_timeout: std::time::Duration,
    /// Bounds on an answer's size and its event stream's lines.
    pub limits: super::body_limits::BodyLimits,
}

impl OpenAiProvider {
    pub fn new(s: HttpSettings) -> Result<Self, ProviderError> {
        let http = HttpClient::new(&s.provider, s.key, s.key_env, s.timeout, s.idle_timeout)
            .with_limits(s.limits);
        let azure = is_azure(&s.base_url);
        let platform = host(&s.base_url) == "api.openai.com";
        Ok(OpenAiProvider {
            platform,
            url: endpoint_url(&s.base_url, "chat/completions"),
            http,
            model: s.model,
            azure,
            params: s.params,
            sent: ItemCache::default(),
            sent_tools: ToolsCache::default(),
        })
    }

    #[cfg(any(test, feature = "testing"))]
    /// The JSON body for `req`, borrowing it (public for tests).
    pub fn request_body<'a>(&'a self, req: &'a ModelRequest) -> impl serde::Serialize + 'a {
        self.body(req)
    }

    /// The body for `req`, through this provider's caches of its last request.
    fn body<'a>(&'a self, req: &'a ModelRequest) -> Body<'a, openai_body::Wire<'a>> {
        let (sent, tools) = (&self.sent, &self.sent_tools);
        openai_body::request_body(&self.model, &self.params, req, self.takes(), sent, tools)
    }

    /// What this server takes of a request (see [`Takes`](openai_body::Takes)).
    fn takes(&self) -> openai_body::Takes {
        openai_body::Takes {
            stop: !self.platform,
            schema_with_tools: self.schema_with_tools(),
        }
    }

    async fn call(
        &self,
        req: &ModelRequest,
        sink: &DeltaSink<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        let provider = &self.http.provider;
        let stream = OpenAiStream::new(provider, &self.model);
        let whole = |bytes: &[u8]| parse_completion(provider, &self.model, bytes, sink);
        let body = self.body(req);
        exchange(
            &self.http,
            &self.url,
            auth_headers(self.http.key.as_ref(), self.azure),
            |out: &mut BodyWriter| body.write_json(out),
            stream,
            whole,
            sink,
        )
        .await
        .map_err(|error| error.about_request(req))
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        &self.http.provider
    }
    fn model(&self) -> &str {
        &self.model
    }
    fn schema_with_tools(&self) -> bool {
        self.platform || self.azure
    }
    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
        sink: &'a DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(self.call(req, sink))
    }
}

/// `base_url` + `/path`, keeping a query string (Azure's `?api-version=`) at the end.
pub(crate) fn endpoint_url(base_url: &str, path: &str) -> String {
    let (base, query) = match base_url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (base_url, None),
    };
    let mut url = format!("{}/{}", base.trim_end_matches('/'), path);
    if let Some(q) = query {
        url.push('?');
        url.push_str(q);
    }
    url
}

/// The host name of a URL.
fn host(url: &str) -> &str {
    let rest = url.split("://").nth(1).unwrap_or(url);
    rest.split(['/', '?', ':']).next().unwrap_or("")
}

/// The key as OpenAI wants it: a bearer token, or Azure's `api-key` header.
pub(crate) fn auth_headers(key: Option<&Secret>, azure: bool) -> Vec<(&'static str, String)> {
    match key {
        Some(key) if azure => vec![("api-key", key.expose().to_string())],
        Some(key) => vec![("authorization", format!("Bearer {}", key.expose()))],
        None => Vec::new(),
    }
}

/// Azure OpenAI takes the key in an `api-key` header instead of a bearer token: used
/// for Azure hosts and for any URL with Azure's `api-version` query parameter.
pub(crate) fn is_azure(base_url: &str) -> bool {
    let host = host(base_url);
    let query = base_url.split_once('?').map_or("", |(_, q)| q);
    host.ends_with(".azure.com")
        || host.ends_with(".azure-api.net")
        || query.split('&').any(|p| p.starts_with("api-version="))
}

#[derive(Deserialize)]
struct Completion<'a> {
    #[serde(default)]
    id: Option<String>,
    #[serde(default, borrow)]
    model: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    choices: Vec<CompletionChoice<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct CompletionChoice<'a> {
    #[serde(borrow)]
    message: Delta<'a>,
    #[serde(default)]
    finish_reason: Option<String>,
}

/// A non-streaming `chat.completion` body, reported to the sink as one set of deltas.
pub(crate) fn parse_completion(
    provider: &str,
    model: &str,
    body: &[u8],
    sink: &DeltaSink<'_>,
) -> Result<ModelResponse, ProviderError> {
    let c: Completion<'_> = serde_json::from_slice(body).map_err(|e| {
        let text = String::from_utf8_lossy(body);
        ProviderError::new(
            ErrorKind::Protocol,
            provider,
            format!("malformed completion ({e}): {text}"),
        )
    })?;
    if let Some(error) = c.error.as_ref().filter(|e| !e.is_null()) {
        return Err(ProviderError::from_stream_error(provider, error));
    }
    let model = c
        .model
        .map(|m| m.into_owned())
        .unwrap_or_else(|| model.to_string());
    let mut acc = Accumulator::new(provider, &model);
    acc.id = c.id.filter(|id| !id.is_empty());
    let choice = c.choices.into_iter().next().ok_or_else(|| {
        ProviderError::new(ErrorKind::Protocol, provider, "completion has no choices")
    })?;
    acc.delta(choice.message, sink);
    acc.finish = choice.finish_reason;
    if let Some(usage) = c.usage {
        acc.usage = Some(usage.to_usage());
        sink(StreamDelta::Usage {
            usage: usage.to_usage(),
        });
    }
    acc.done = true;
    Ok(acc.into_response())
}
