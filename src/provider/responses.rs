//! OpenAI Responses API client (`POST {base_url}/responses`, streaming), the API OpenAI
//! recommends for its reasoning models. Selected with `provider: openai_responses` or
//! `api: responses` on `provider: openai`; the key, base URL and Azure handling are the
//! Chat Completions client's.
//!
//! Mapping from the neutral [`Message`](super::types::Message)s: the system prompt goes
//! in `instructions`; the conversation becomes `input` items: `message`s (user and system
//! text as `input_text`, assistant text as `output_text`), `function_call` and
//! `function_call_output`. The request is stateless (`store: false`), so the model's
//! reasoning is asked for in encrypted form (`include: ["reasoning.encrypted_content"]`)
//! and each reasoning item of an assistant turn is sent back before that turn's text and
//! calls. Tools are flat function tools with `strict: false`; a `response_format` becomes
//! `text.format`.

use serde_json::{Map, Value};

use super::error::ProviderError;
use super::http::{HttpClient, exchange};
use super::item_cache::ItemCache;
use super::openai::{HttpSettings, auth_headers, endpoint_url, is_azure};
use super::request_body::BodyWriter;
use super::responses_body;
use super::responses_stream::{ResponsesStream, parse_response};
use super::tools_cache::ToolsCache;
use super::types::{ModelRequest, ModelResponse};
use super::{BoxFuture, DeltaSink, Provider};

/// A Responses API endpoint.
#[derive(Debug)]
pub struct ResponsesProvider {
    http: HttpClient,
    model: String,
    url: String,
    azure: bool,
    params: Map<String, Value>,
    /// The last request's input items, serialised.
    sent: ItemCache,
    /// The tools' JSON of the last request.
    sent_tools: ToolsCache,
}

impl ResponsesProvider {
    pub fn new(s: HttpSettings) -> Result<Self, ProviderError> {
        let http = HttpClient::new(&s.provider, s.key, s.key_env, s.timeout, s.idle_timeout)
            .with_limits(s.limits);
        Ok(ResponsesProvider {
            url: endpoint_url(&s.base_url, "responses"),
            azure: is_azure(&s.base_url),
            http,
            model: s.model,
            params: s.params,
            sent: ItemCache::default(),
            sent_tools: ToolsCache::default(),
        })
    }

    #[cfg(any(test, feature = "testing"))]
    /// The JSON body for `req`, borrowing it (public for tests).
    pub fn request_body<'a>(&'a self, req: &'a ModelRequest) -> impl serde::Serialize + 'a {
        responses_body::request_body(&self.model, &self.params, req, &self.sent, &self.sent_tools)
    }

    async fn call(
        &self,
        req: &ModelRequest,
        sink: &DeltaSink<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        let provider = &self.http.provider;
        let stream = ResponsesStream::new(provider, &self.model);
        let whole = |bytes: &[u8]| parse_response(provider, &self.model, bytes, sink);
        let body = responses_body::request_body(
            &self.model,
            &self.params,
            req,
            &self.sent,
            &self.sent_tools,
        );
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

impl Provider for ResponsesProvider {
    fn name(&self) -> &str {
        &self.http.provider
    }
    fn model(&self) -> &str {
        &self.model
    }
    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
        sink: &'a DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(self.call(req, sink))
    }
}
