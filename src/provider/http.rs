//! The HTTP plumbing both wire formats share: one POST with a per-request deadline and
//! an idle timeout between body chunks, error bodies turned into [`ProviderError`]s
//! (message extracted, `Retry-After` read), and a body read chunk by chunk. Every error
//! of an [`exchange`] leaves it with the key redacted.
//!
//! Connections are kept alive and reused. A server may close an idle one just as a request
//! goes out on it (a llama.cpp build answers `Connection: keep-alive`, then closes the
//! socket after each streamed reply): a request lost that way, before any byte of an answer,
//! is sent again at once on a new connection. That is not a retry of the model call (the
//! server never saw it), so the [`Retry`](super::Retry) wrapper neither waits nor counts.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once, OnceLock};
use std::time::{Duration, SystemTime};

use futures_util::FutureExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::time::{Instant, timeout_at};

use super::DeltaSink;
use super::body_limits::{BodyLimits, BodyMeter};
use super::error::{ErrorKind, ProviderError, error_message_from_body};
use super::loopback::{self, LoopbackClient};
use super::request_body::{BodyWriter, RequestBody};
use super::send_error::{Failure, SendError};
use super::types::{ModelResponse, StreamDelta};
use crate::sync::lock;

/// An API key. Its `Debug` never shows the value; it is only ever put in a header.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// A key, registered with the log so that no log line shows it.
    pub fn new(value: String) -> Self {
        crate::log::secret(&value);
        Secret(value)
    }
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([REDACTED])")
    }
}

/// What a request needs besides its body; shared by every call of one provider.
#[derive(Debug, Clone)]
pub(crate) struct HttpClient {
    /// Built at the first request, for `http://` and for `https://` URLs apart: only a
    /// TLS client loads the system's certificates (half of start-up CPU otherwise).
    plain: OnceLock<reqwest::Client>,
    tls: OnceLock<reqwest::Client>,
    /// Clients that keep no idle connection, for a request resent after its pooled
    /// connection was found closed: each of their requests goes on a new connection.
    fresh_plain: OnceLock<reqwest::Client>,
    fresh_tls: OnceLock<reqwest::Client>,
    /// For a URL on a loopback address, hyper's client with a lean connector
    /// (`loopback.rs`), pooled and not.
    loopback: OnceLock<LoopbackClient>,
    fresh_loopback: OnceLock<LoopbackClient>,
    /// Whether a server answered through the pooled clients: only then can a connection be
    /// waiting in the pool, to be found closed.
    answered: Arc<AtomicBool>,
    pub provider: String,
    pub key: Option<Secret>,
    pub key_env: Option<String>,
    pub timeout: Duration,
    pub idle_timeout: Duration,
    /// Bounds on a successful answer's size and its event stream's lines.
    pub limits: BodyLimits,
    /// The last URL posted to, parsed: a provider posts to one endpoint, and parsing it
    /// again for each request was 2 % of a step's CPU.
    last_url: Arc<Mutex<Option<(String, reqwest::Url)>>>,
}

/// One request: where it goes and what it says.
struct Request<'a> {
    url: &'a str,
    headers: HeaderMap,
    body: RequestBody,
}

/// Largest error body read (the message is near the start; the rest is noise).
const MAX_ERROR_BODY: usize = 64 * 1024;
/// After the terminal event, how long to wait for the server to end the body
/// (reading to the end lets the connection be reused).
const DRAIN_AFTER_DONE: Duration = Duration::from_secs(1);

/// An HTTP client for `url`'s scheme with rustls on the ring backend, connecting within
/// `timeout` (at most 30 s). Providers and MCP servers over HTTP both use it. A client for
/// an `http://` URL trusts no certificate at all: loading and parsing the system's (some
/// 300 files) is half of the start-up of a run against a local server, and it never
/// makes a TLS connection.
pub fn http_client(timeout: Duration, url: &str) -> Result<reqwest::Client, String> {
    build_client(timeout, url, true)
}

/// [`http_client`]; `pooled: false` keeps no idle connection.
fn build_client(timeout: Duration, url: &str, pooled: bool) -> Result<reqwest::Client, String> {
    static CRYPTO: Once = Once::new();
    CRYPTO.call_once(|| {
        // Fails only when the application installed a provider first: keep theirs.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    let builder = reqwest::Client::builder().connect_timeout(timeout.min(Duration::from_secs(30)));
    let builder = match is_tls(url) {
        true => builder,
        false => builder.tls_certs_only(Vec::new()),
    };
    let builder = match pooled {
        true => builder,
        false => builder.pool_max_idle_per_host(0),
    };
    // TCP keep-alive probes and a user timeout find a peer that vanished across a network;
    // over loopback there is none to cross, and they cost five `setsockopt`s per connection
    // (one per request to a server that closes after each reply).
    let builder = match is_loopback(url) {
        true => builder
            .tcp_keepalive(None)
            .tcp_keepalive_interval(None)
            .tcp_keepalive_retries(None)
            .tcp_user_timeout(None),
        false => builder,
    };
    builder.build().map_err(|e| format!("HTTP client: {e}"))
}

/// Whether `url`'s host is a loopback address written as one (`loopback::is_loopback`).
fn is_loopback(url: &str) -> bool {
    reqwest::Url::parse(url).is_ok_and(|url| loopback::is_loopback(&url))
}

/// Whether `url` is `https://` (any letter case).
fn is_tls(url: &str) -> bool {
    url.get(..8)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
}

impl HttpClient {
    pub fn new(
        provider: &str,
        key: Option<Secret>,
        key_env: Option<String>,
        timeout: Duration,
        idle_timeout: Duration,
    ) -> Self {
        HttpClient {
            plain: OnceLock::new(),
            tls: OnceLock::new(),
            fresh_plain: OnceLock::new(),
            fresh_tls: OnceLock::new(),
            loopback: OnceLock::new(),
            fresh_loopback: OnceLock::new(),
            answered: Arc::default(),
            provider: provider.to_string(),
            key,
            key_env,
            timeout,
            idle_timeout,
            limits: BodyLimits::default(),
            last_url: Arc::default(),
        }
    }

    /// The same client with other bounds on answers.
    pub fn with_limits(mut self, limits: BodyLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The client for `url`'s scheme, pooled or not, built at its first use.
    fn client(&self, url: &str, pooled: bool) -> Result<&reqwest::Client, ProviderError> {
        let slot = match (is_tls(url), pooled) {
            (false, true) => &self.plain,
            (true, true) => &self.tls,
            (false, false) => &self.fresh_plain,
            (true, false) => &self.fresh_tls,
        };
        if let Some(client) = slot.get() {
            return Ok(client);
        }
        let client = build_client(self.timeout, url, pooled)
            .map_err(|message| self.err(ErrorKind::Config, message))?;
        Ok(slot.get_or_init(|| client))
    }

    /// Sends the request; when it was lost on a pooled connection the server had closed
    /// (see the module docs), sends it once more on a new connection.
    async fn send(
        &self,
        url: &str,
        headers: HeaderMap,
        body: RequestBody,
        deadline: Instant,
    ) -> Result<reqwest::Response, ProviderError> {
        let request = Request { url, headers, body };
        let error = match timeout_at(deadline, self.send_once(&request, true)).await {
            Err(_) => return Err(self.timeout_error(None)),
            Ok(Ok(response)) => {
                self.answered.store(true, Ordering::Relaxed);
                return Ok(response);
            }
            Ok(Err(SendError::Config(e))) => return Err(e),
            Ok(Err(e)) => e,
        };
        if !(self.answered.load(Ordering::Relaxed) && error.closed_before_answer()) {
            return Err(self.transport_error(&error.failure(), url));
        }
        tracing::debug!(url, error = %error, "the pooled connection was closed; sending again on a new one");
        match timeout_at(deadline, self.send_once(&request, false)).await {
            Err(_) => Err(self.timeout_error(None)),
            Ok(Err(SendError::Config(e))) => Err(e),
            Ok(Err(e)) => Err(self.transport_error(&e.failure(), url)),
            Ok(Ok(response)) => Ok(response),
        }
    }

    /// Sends the request once, pooled or on a new connection: through hyper's client for a
    /// loopback `http://` URL, else through reqwest's.
    async fn send_once(
        &self,
        request: &Request<'_>,
        pooled: bool,
    ) -> Result<reqwest::Response, SendError> {
        let url = request.url;
        let parsed = self.parsed(url);
        if !is_tls(url) && parsed.as_ref().is_some_and(loopback::is_loopback) {
            return self.send_loopback(request, pooled).await;
        }
        let client = self.client(url, pooled).map_err(SendError::Config)?;
        // A URL that does not parse is left for reqwest to report as it always has.
        let builder = match parsed {
            Some(parsed) => client.post(parsed),
            None => client.post(url),
        };
        let builder = builder
            .headers(request.headers.clone())
            .body(request.body.joined());
        builder.send().await.map_err(SendError::Reqwest)
    }

    /// [`send_once`](Self::send_once) for a loopback URL. The answer is handed on as
    /// reqwest's, so it is read the same way whichever client sent the request.
    async fn send_loopback(
        &self,
        request: &Request<'_>,
        pooled: bool,
    ) -> Result<reqwest::Response, SendError> {
        let slot = match pooled {
            true => &self.loopback,
            false => &self.fresh_loopback,
        };
        let client = slot.get_or_init(|| loopback::client(pooled));
        let uri: hyper::Uri = request.url.parse().map_err(|e| {
            SendError::Config(self.err(ErrorKind::Config, format!("{}: {e}", request.url)))
        })?;
        let mut http = hyper::Request::post(uri)
            .body(request.body.frames())
            .map_err(|e| SendError::Config(self.err(ErrorKind::Config, e.to_string())))?;
        *http.headers_mut() = request.headers.clone();
        // What reqwest sends besides the caller's headers.
        http.headers_mut()
            .insert(reqwest::header::ACCEPT, HeaderValue::from_static("*/*"));
        let response = client.request(http).await.map_err(SendError::Loopback)?;
        Ok(reqwest::Response::from(response.map(reqwest::Body::wrap)))
    }

    /// `url` parsed: the last request's, when it went to the same URL.
    fn parsed(&self, url: &str) -> Option<reqwest::Url> {
        let mut last = lock(&self.last_url);
        if let Some((text, parsed)) = &*last
            && text == url
        {
            return Some(parsed.clone());
        }
        let parsed = reqwest::Url::parse(url).ok()?;
        *last = Some((url.to_string(), parsed.clone()));
        Some(parsed)
    }

    fn err(&self, kind: ErrorKind, message: impl Into<String>) -> ProviderError {
        ProviderError::new(kind, self.provider.clone(), message)
    }

    /// Sends a JSON POST. A non-2xx answer becomes the classified error.
    pub async fn post(
        &self,
        url: &str,
        headers: Vec<(&'static str, String)>,
        body: RequestBody,
    ) -> Result<HttpBody<'_>, ProviderError> {
        let deadline = Instant::now() + self.timeout;
        let mut map = HeaderMap::new();
        map.insert("content-type", HeaderValue::from_static("application/json"));
        for (name, value) in headers {
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                // Never echo the value: it may be the key.
                self.err(
                    ErrorKind::Config,
                    format!("header {name} has characters HTTP forbids"),
                )
            })?;
            value.set_sensitive(true);
            map.insert(HeaderName::from_static(name), value);
        }
        let sent = body.len();
        let started = Instant::now();
        let response = self.send(url, map, body, deadline).await?;
        let status = response.status().as_u16();
        tracing::debug!(
            url,
            status,
            request_bytes = sent,
            ms = started.elapsed().as_millis() as u64,
            "model request answered"
        );
        let is_json = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("json"));
        let mut body = HttpBody {
            client: self,
            response,
            url: url.to_string(),
            deadline,
            is_json,
        };
        if (200..300).contains(&status) {
            return Ok(body);
        }
        let retry_after = retry_after(body.response.headers());
        let bytes = body.read_to_end(MAX_ERROR_BODY).await.unwrap_or_default();
        let message = error_message_from_body(&bytes);
        Err(
            ProviderError::from_status(&self.provider, status, message, self.key_env.as_deref())
                .with_retry_after(retry_after),
        )
    }

    fn timeout_error(&self, idle: Option<Duration>) -> ProviderError {
        match idle {
            Some(idle) => self.err(
                ErrorKind::Timeout,
                format!(
                    "no data from the server for {}s (idle_timeout)",
                    idle.as_secs_f64()
                ),
            ),
            None => self.err(
                ErrorKind::Timeout,
                format!(
                    "request took longer than {}s (timeout)",
                    self.timeout.as_secs_f64()
                ),
            ),
        }
    }

    fn transport_error(&self, failure: &Failure<'_>, url: &str) -> ProviderError {
        let mut message = if failure.connect {
            format!("could not connect to {url}")
        } else if failure.body {
            "the connection broke while the response was being received".to_string()
        } else {
            format!("request to {url} failed")
        };
        // The causes say why (refused, reset, TLS, ...); URLs carry no key.
        for cause in failure.causes() {
            message.push_str(": ");
            message.push_str(&cause.to_string());
        }
        let kind = match failure.timeout {
            true => ErrorKind::Timeout,
            false => ErrorKind::Network,
        };
        self.err(kind, message)
    }
}

/// Lets the tasks already woken run once before this one goes on. Unlike
/// `tokio::task::yield_now`, which also polls the operating system for I/O (a system call
/// each time), this only puts the task back in the scheduler's queue.
async fn one_turn() {
    let mut queued = false;
    std::future::poll_fn(|cx| {
        if std::mem::replace(&mut queued, true) {
            return std::task::Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await
}

/// A successful response whose body is read chunk by chunk under the timeouts.
pub(crate) struct HttpBody<'c> {
    client: &'c HttpClient,
    response: reqwest::Response,
    /// The URL posted to, for errors (an answer hyper's client got does not carry it).
    url: String,
    deadline: Instant,
    is_json: bool,
}

impl HttpBody<'_> {
    /// True when the server answered with JSON instead of an event stream (it ignored
    /// `stream: true`, or streaming was turned off).
    pub fn is_json(&self) -> bool {
        self.is_json
    }

    /// The next piece of the body; `None` at its end.
    pub async fn next_chunk(&mut self) -> Result<Option<bytes::Bytes>, ProviderError> {
        let idle = self.client.idle_timeout;
        let idle_deadline = Instant::now() + idle;
        let (limit, is_idle) = if idle_deadline < self.deadline {
            (idle_deadline, Some(idle))
        } else {
            (self.deadline, None)
        };
        match timeout_at(limit, self.response.chunk()).await {
            Err(_) => Err(self.client.timeout_error(is_idle)),
            Ok(read) => self.taken(read),
        }
    }

    /// The next piece of the body, as [`next_chunk`](Self::next_chunk) reads it, but when
    /// none has arrived yet, `waiting` is called before the wait for it.
    pub async fn next_chunk_or_wait(
        &mut self,
        waiting: impl FnOnce(),
    ) -> Result<Option<bytes::Bytes>, ProviderError> {
        // Polled with no waker to keep: a chunk not ready is read by `next_chunk`, which
        // polls again (the body gives up nothing until a poll returns it). The connection
        // is read by a task of its own, which hands over one frame per turn: it gets that
        // turn before the body counts as waiting, so a read of several events is handed
        // on whole.
        if let Some(read) = self.response.chunk().now_or_never() {
            return self.taken(read);
        }
        one_turn().await;
        if let Some(read) = self.response.chunk().now_or_never() {
            return self.taken(read);
        }
        waiting();
        self.next_chunk().await
    }

    fn taken(
        &self,
        read: Result<Option<bytes::Bytes>, reqwest::Error>,
    ) -> Result<Option<bytes::Bytes>, ProviderError> {
        read.map_err(|e| {
            self.client
                .transport_error(&Failure::of_reqwest(&e), &self.url)
        })
    }

    /// Reads the rest of the body, up to `max` bytes.
    pub async fn read_to_end(&mut self, max: usize) -> Result<Vec<u8>, ProviderError> {
        let mut out = Vec::new();
        while let Some(chunk) = self.next_chunk().await? {
            out.extend_from_slice(&chunk);
            if out.len() > max {
                out.truncate(max);
                break;
            }
        }
        Ok(out)
    }

    /// Called once the terminal event arrived: lets the server end the body briefly,
    /// ignoring whatever happens (the answer is already complete).
    pub async fn drain(&mut self) {
        // Most often the end came with the terminal event, or comes after one turn of the
        // connection's task: then no timer is armed (arming one wakes the runtime's driver,
        // a system call each time).
        for _ in 0..2 {
            match self.response.chunk().now_or_never() {
                Some(Ok(Some(_))) => {}
                Some(_) => return,
                None => one_turn().await,
            }
        }
        let limit = Instant::now() + DRAIN_AFTER_DONE;
        for _ in 0..64 {
            match timeout_at(limit, self.response.chunk()).await {
                Ok(Ok(Some(_))) => continue,
                _ => return,
            }
        }
    }
}

/// `Retry-After` (seconds or HTTP date) or OpenAI's `retry-after-ms`.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
    {
        return duration_from_secs(ms / 1000.0);
    }
    let value = headers.get("retry-after")?.to_str().ok()?.trim();
    parse_retry_after(value, SystemTime::now())
}

/// Parses a `Retry-After` value relative to `now`.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    if let Ok(secs) = value.parse::<f64>() {
        return duration_from_secs(secs);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

fn duration_from_secs(secs: f64) -> Option<Duration> {
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// A wire format's incremental reader of a streamed answer (OpenAI chunks, Anthropic events).
pub trait WireStream {
    fn feed(&mut self, bytes: &[u8], sink: &DeltaSink<'_>) -> Result<(), ProviderError>;
    /// The terminal event arrived: the rest of the body can be drained.
    fn is_done(&self) -> bool;
    fn finish(self, sink: &DeltaSink<'_>) -> Result<ModelResponse, ProviderError>;
}

/// One exchange, the same for every wire: POST the body (`body` writes its JSON), then
/// read either a whole JSON answer (`whole`) or a stream (`stream`), stopping at its
/// terminal event. Whatever part of the answer an error quotes, it comes back with the
/// key redacted.
pub async fn exchange<S: WireStream>(
    http: &HttpClient,
    url: &str,
    headers: Vec<(&'static str, String)>,
    body: impl FnOnce(&mut BodyWriter) -> serde_json::Result<()>,
    stream: S,
    whole: impl FnOnce(&[u8]) -> Result<ModelResponse, ProviderError>,
    sink: &DeltaSink<'_>,
) -> Result<ModelResponse, ProviderError> {
    exchange_unredacted(http, url, headers, body, stream, whole, sink)
        .await
        .map_err(|e| e.redact(http.key.as_ref()))
}

async fn exchange_unredacted<S: WireStream>(
    http: &HttpClient,
    url: &str,
    headers: Vec<(&'static str, String)>,
    body: impl FnOnce(&mut BodyWriter) -> serde_json::Result<()>,
    stream: S,
    whole: impl FnOnce(&[u8]) -> Result<ModelResponse, ProviderError>,
    sink: &DeltaSink<'_>,
) -> Result<ModelResponse, ProviderError> {
    let mut writer = BodyWriter::default();
    body(&mut writer)
        .map_err(|e| ProviderError::new(ErrorKind::Config, http.provider.clone(), e.to_string()))?;
    let mut resp = http.post(url, headers, writer.finish()).await?;
    if resp.is_json() {
        let mut meter = BodyMeter::whole(http.limits);
        let mut bytes = Vec::new();
        while let Some(chunk) = resp.next_chunk().await? {
            meter.take(&chunk, &http.provider)?;
            bytes.extend_from_slice(&chunk);
        }
        return whole(&bytes);
    }
    let mut stream = stream;
    let mut meter = BodyMeter::stream(http.limits);
    // What one read brought (often several events) is handed on before the next wait.
    while let Some(chunk) = resp.next_chunk_or_wait(|| sink(StreamDelta::Idle)).await? {
        meter.take(&chunk, &http.provider)?;
        stream.feed(&chunk, sink)?;
        if stream.is_done() {
            resp.drain().await;
            break;
        }
    }
    stream.finish(sink)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_urls_get_a_client_with_certificates() {
        assert!(is_tls("https://api.openai.com/v1"));
        assert!(is_tls("HTTPS://example.com"));
        assert!(!is_tls("http://127.0.0.1:8080/v1"));
        assert!(!is_tls("https"));
    }
}
