//! `http_get`: fetches a URL from an allowed host.
//!
//! * Only `http` and `https`. The host must be in `allow_hosts`: an exact name (compared
//!   case-insensitively, ports ignored), or `*.example.com`, which matches any subdomain
//!   of example.com but not example.com itself. Redirects are followed (at most 5) only
//!   to allowed hosts.
//! * The whole request, body included, must finish within `timeout` (default 30s).
//! * The body is capped at [`MAX_BODY_BYTES`]; a binary body is not shown.

use std::sync::Once;
use std::time::Duration;

use reqwest::Url;
use serde_json::{Value, json};

use super::text::{capped_text, looks_binary};
use super::{BoxFuture, Signature, Tool, ToolContext, ToolOutput};

/// The default time a request may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How much of a body is kept.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// How many redirects are followed.
const MAX_REDIRECTS: usize = 5;

/// The `http_get` built-in.
pub struct HttpGetTool {
    sig: Signature,
    allow_hosts: Vec<String>,
    timeout: Duration,
    client: reqwest::Client,
}

impl HttpGetTool {
    /// Fails only when the HTTP client cannot be built (no TLS backend).
    pub fn new(allow_hosts: Vec<String>, timeout: Option<Duration>) -> Result<Self, String> {
        static CRYPTO: Once = Once::new();
        CRYPTO.call_once(|| {
            // Fails only when the application installed a provider first: keep theirs.
            let _ = rustls::crypto::ring::default_provider().install_default();
        });
        let timeout = timeout.unwrap_or(DEFAULT_TIMEOUT);
        let allowed = allow_hosts.clone();
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else if let Err(reason) = check_url(attempt.url(), &allowed) {
                attempt.error(format!("redirect refused: {reason}"))
            } else {
                attempt.follow()
            }
        });
        let client = reqwest::Client::builder()
            .redirect(policy)
            .connect_timeout(timeout)
            .user_agent(concat!("runner/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("http_get: cannot build the HTTP client: {e}"))?;
        let parameters = json!({
            "type": "object",
            "properties": {
                "url": {
                    "type": "string",
                    "description": format!(
                        "The http:// or https:// URL to fetch. Allowed hosts: {}.",
                        allow_hosts.join(", ")
                    )
                }
            },
            "required": ["url"],
            "additionalProperties": false
        });
        Ok(HttpGetTool {
            sig: Signature::new(
                "http_get",
                format!(
                    "Fetch a URL with HTTP GET and return its status, content type and body text. \
                     Allowed hosts: {}.",
                    allow_hosts.join(", ")
                ),
                parameters,
            ),
            allow_hosts,
            timeout,
            client,
        })
    }

    async fn run(&self, arguments: Value, ctx: &ToolContext) -> ToolOutput {
        let arguments = match self.sig.accept(arguments) {
            Ok(arguments) => arguments,
            Err(out) => return out,
        };
        let raw = arguments["url"].as_str().unwrap_or_default();
        let url = match Url::parse(raw) {
            Ok(url) => url,
            Err(e) => return ToolOutput::error(format!("invalid URL `{raw}`: {e}")),
        };
        if let Err(reason) = check_url(&url, &self.allow_hosts) {
            return ToolOutput::error(reason);
        }
        let fetch = tokio::time::timeout(self.timeout, self.fetch(url.clone()));
        tokio::select! {
            done = fetch => match done {
                Ok(output) => output,
                Err(_) => ToolOutput::error(format!(
                    "GET {url} did not finish within {}s",
                    self.timeout.as_secs_f64()
                ))
                .with_meta("timed_out", true),
            },
            _ = ctx.cancelled() => ToolOutput::error("cancelled: the run was interrupted")
                .with_meta("cancelled", true),
        }
    }

    async fn fetch(&self, url: Url) -> ToolOutput {
        let mut response = match self.client.get(url.clone()).send().await {
            Ok(response) => response,
            Err(e) => return ToolOutput::error(format!("GET {url} failed: {}", error_chain(&e))),
        };
        let status = response.status();
        let final_url = response.url().to_string();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut body = Vec::new();
        let mut truncated = false;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = MAX_BODY_BYTES - body.len();
                    if chunk.len() > room {
                        body.extend_from_slice(&chunk[..room]);
                        truncated = true;
                        break;
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => {
                    return ToolOutput::error(format!(
                        "GET {url}: reading the body failed: {}",
                        error_chain(&e)
                    ));
                }
            }
        }
        let text = if looks_binary(&body) {
            format!("[binary body of {} bytes not shown]", body.len())
        } else if truncated {
            let mut text = capped_text(&body, body.len() as u64);
            text.push_str(&format!("\n[… body truncated at {MAX_BODY_BYTES} bytes]"));
            text
        } else {
            capped_text(&body, body.len() as u64)
        };
        let data = json!({
            "status": status.as_u16(),
            "content_type": content_type,
            "text": text,
        });
        let output = if status.is_success() {
            ToolOutput::ok(data)
        } else {
            ToolOutput::error(format!("GET {url} answered HTTP {status}")).with_data(data)
        };
        output
            .with_meta("url", final_url)
            .with_meta("bytes", body.len() as u64)
            .with_meta("truncated", truncated)
    }
}

/// `Ok` when `url` is http(s) and its host is allowed; otherwise why not.
fn check_url(url: &Url, allow_hosts: &[String]) -> Result<(), String> {
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(format!(
            "URL scheme `{}` is not allowed; only http and https",
            url.scheme()
        ));
    }
    let Some(host) = url.host_str() else {
        return Err(format!("URL `{url}` has no host"));
    };
    if host_allowed(host, allow_hosts) {
        Ok(())
    } else {
        Err(format!(
            "host `{host}` is not allowed; allowed hosts: {}",
            if allow_hosts.is_empty() {
                "(none)".to_string()
            } else {
                allow_hosts.join(", ")
            }
        ))
    }
}

/// Exact names (case-insensitive, a trailing dot ignored) and `*.domain` wildcards, which
/// match subdomains at any depth but not the domain itself.
pub fn host_allowed(host: &str, allow_hosts: &[String]) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    allow_hosts.iter().any(|entry| {
        let entry = entry.trim_end_matches('.').to_ascii_lowercase();
        match entry.strip_prefix("*.") {
            Some(domain) => host
                .strip_suffix(domain)
                .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.')),
            None => host == entry,
        }
    })
}

/// An error with its causes, `a: b: c`.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

impl Tool for HttpGetTool {
    fn name(&self) -> &str {
        self.sig.name
    }
    fn description(&self) -> &str {
        &self.sig.description
    }
    fn parameters(&self) -> &Value {
        &self.sig.parameters
    }
    fn idempotent(&self) -> bool {
        true
    }
    /// The URL as parsed (host lower-cased, default port dropped), so patterns match
    /// what is fetched.
    fn policy_arguments(&self, arguments: &Value) -> Option<Value> {
        let url = Url::parse(arguments.get("url")?.as_str()?).ok()?;
        let mut normalized = arguments.clone();
        normalized["url"] = Value::String(url.to_string());
        Some(normalized)
    }
    fn call<'a>(&'a self, arguments: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(self.run(arguments, ctx))
    }
}
