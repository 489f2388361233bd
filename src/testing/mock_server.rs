//! A mock model server on 127.0.0.1 for tests and benchmarks.
//!
//! It speaks just enough HTTP/1.1 (keep-alive, `Content-Length` request bodies,
//! chunked streaming responses) to serve every wire format: `POST .../chat/completions`
//! (OpenAI Chat Completions), `POST .../responses` (OpenAI Responses) and
//! `POST .../messages` (Anthropic). Each request is answered by the
//! routing closure if one is set and it returns `Some`, else by the next queued
//! response; every request is recorded for assertions. Faults are properties of a
//! response: status and error body, `Retry-After`, a delay between chunks, a
//! connection cut after N chunks, arbitrary (malformed) bytes.
//!
//! It runs on its own thread with its own runtime, so a plain `#[test]` can start it
//! and run the `runner` binary against it; dropping the server stops it.
//!
//! ```no_run
//! use runner::testing::mock_server::{MockServer, MockResponse, Reply};
//! let server = MockServer::start();
//! server.push(MockResponse::reply(Reply::text("Hello!")));
//! server.push(MockResponse::error(429, "slow down").retry_after("1"));
//! server.route(|req| (req.system_prompt()?.contains("explorer"))
//!     .then(|| MockResponse::reply(Reply::text("found it"))));
//! // point a provider at server.openai_base_url() or server.anthropic_base_url()
//! ```

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, oneshot};

pub use super::exchange::{MockRequest, MockResponse, Wire};
pub use super::reply::Reply;

use crate::sync::lock;

type Router = Arc<dyn Fn(&MockRequest) -> Option<MockResponse> + Send + Sync>;

#[derive(Default)]
struct State {
    queue: VecDeque<MockResponse>,
    router: Option<Router>,
    requests: Vec<MockRequest>,
    /// Whether request bodies are kept whole (see [`MockServer::answer_only`]).
    answer_only: bool,
    /// See [`MockServer::enforce_response_format`].
    grammar: bool,
    /// See [`MockServer::close_after_each_reply`].
    close_after_reply: bool,
    /// See [`MockServer::connection_close`].
    connection_close: bool,
    /// Whether requests are routed and then dropped (see [`MockServer::forget_requests`]).
    forget: bool,
    /// How many requests came.
    received: usize,
}

/// The server. Cheap to query from any thread; stops when dropped.
pub struct MockServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// Limits that keep a misbehaving client from tying the server up.
/// (Above 100: `benches/serve.rs` keeps 100 runs in flight, each on a connection.)
const MAX_CONNECTIONS: usize = 256;
const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 32 * 1024 * 1024;
const READ_TIMEOUT: Duration = Duration::from_secs(30);

impl MockServer {
    /// Binds 127.0.0.1 on a free port and starts serving.
    ///
    /// # Panics
    /// When no loopback port can be bound or the thread cannot start (test setup).
    pub fn start() -> Self {
        let std_listener =
            std::net::TcpListener::bind("127.0.0.1:0").expect("mock server: bind 127.0.0.1:0");
        std_listener
            .set_nonblocking(true)
            .expect("mock server: set_nonblocking");
        let addr = std_listener.local_addr().expect("mock server: local_addr");
        let state = Arc::new(Mutex::new(State::default()));
        let (tx, rx) = oneshot::channel();
        let thread_state = state.clone();
        let thread = std::thread::Builder::new()
            .name("mock-model-server".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("mock server: runtime");
                runtime.block_on(async move {
                    let listener =
                        TcpListener::from_std(std_listener).expect("mock server: listener");
                    tokio::select! {
                        _ = rx => {}
                        _ = accept_loop(listener, thread_state) => {}
                    }
                });
                // Dropping the runtime cancels every connection task.
            })
            .expect("mock server: thread");
        MockServer {
            addr,
            state,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `base_url` for the OpenAI-compatible providers: `http://127.0.0.1:PORT/v1`.
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// `base_url` for the Anthropic provider: `http://127.0.0.1:PORT`.
    pub fn anthropic_base_url(&self) -> String {
        self.url()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Queues a response (answers are given in push order).
    pub fn push(&self, response: MockResponse) -> &Self {
        self.lock().queue.push_back(response);
        self
    }

    /// Answers requests for which `f` returns `Some`; the others take from the queue.
    pub fn route(
        &self,
        f: impl Fn(&MockRequest) -> Option<MockResponse> + Send + Sync + 'static,
    ) -> &Self {
        self.lock().router = Some(Arc::new(f));
        self
    }

    /// Keeps of each request body only the fields an answer depends on (`model`, `stream`,
    /// the stop sequences), read without building the rest. For long benchmark runs: each
    /// request carries the whole history, and keeping a thousand of them parsed took over a
    /// gigabyte and most of the run's time, which then slowed the client it measures.
    pub fn answer_only(&self) -> &Self {
        self.lock().answer_only = true;
        self
    }

    /// Enforces a request's `response_format` as a grammar, as llama.cpp does: a reply
    /// must then be text, so the queued replies that call tools are dropped and the first
    /// text reply answers instead.
    pub fn enforce_response_format(&self) -> &Self {
        self.lock().grammar = true;
        self
    }

    /// Answers `Connection: keep-alive` but closes each connection after its first reply,
    /// as a llama.cpp build does a few milliseconds after each streamed reply. The close is
    /// made to lose the race every time: the server waits for the client's next request
    /// on the connection, then closes it unanswered (and unrecorded).
    pub fn close_after_each_reply(&self) -> &Self {
        self.lock().close_after_reply = true;
        self
    }

    /// Answers each request `Connection: close` and closes the connection after the reply,
    /// as many servers do: every request then needs a connection of its own.
    pub fn connection_close(&self) -> &Self {
        self.lock().connection_close = true;
        self
    }

    /// Routes each request with its whole body, then drops it: for benchmark runs of tens
    /// of thousands of requests whose route needs the conversation ([`MockServer::requests`]
    /// is then empty; [`MockServer::request_count`] still counts them).
    pub fn forget_requests(&self) -> &Self {
        self.lock().forget = true;
        self
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<MockRequest> {
        self.lock().requests.clone()
    }

    pub fn request_count(&self) -> usize {
        self.lock().received
    }

    /// Responses still queued.
    pub fn queued(&self) -> usize {
        self.lock().queue.len()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<Mutex<State>>) {
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let state = state.clone();
        tokio::spawn(async move {
            let _ = serve_connection(stream, state).await;
            drop(permit);
        });
    }
}

/// Serves requests on one keep-alive connection until the client closes it, a fault
/// cuts it, or it is idle for too long.
async fn serve_connection(mut stream: TcpStream, state: Arc<Mutex<State>>) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    loop {
        let Some(req) = read_request(&mut stream, &mut buf, &state).await? else {
            return Ok(());
        };
        let (close_after_reply, connection_close) = {
            let state = lock(&state);
            (state.close_after_reply, state.connection_close)
        };
        let close = close_after_reply
            || connection_close
            || req
                .header("connection")
                .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let response = pick_response(&state, &req);
        let (status, content_type, chunks, streamed) = response.render(&req);
        let mut head = format!(
            "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\n",
            reason(status)
        );
        if close_after_reply {
            head.push_str("connection: keep-alive\r\n");
        }
        if connection_close {
            head.push_str("connection: close\r\n");
        }
        for (k, v) in &response.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if streamed {
            head.push_str("transfer-encoding: chunked\r\ncache-control: no-cache\r\n\r\n");
        } else {
            let len: usize = chunks.iter().map(Vec::len).sum();
            head.push_str(&format!("content-length: {len}\r\n\r\n"));
        }
        if response.chunk_delay.is_zero() && response.drop_after.is_none() {
            // No fault between the chunks: the response goes in one write, so how many
            // reads the client needs does not depend on how fast this server was.
            stream
                .write_all(&whole_response(head, &chunks, streamed))
                .await?;
            if close_after_reply {
                return close_when_reused(stream).await;
            }
            if close {
                return Ok(());
            }
            continue;
        }
        stream.write_all(head.as_bytes()).await?;
        for (i, chunk) in chunks.iter().enumerate() {
            if response.drop_after == Some(i) {
                return stream.shutdown().await; // cut mid-body
            }
            if i > 0 && !response.chunk_delay.is_zero() {
                tokio::time::sleep(response.chunk_delay).await;
            }
            if streamed {
                if chunk.is_empty() {
                    continue; // an empty chunk would end the body
                }
                stream
                    .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                    .await?;
                stream.write_all(chunk).await?;
                stream.write_all(b"\r\n").await?;
            } else {
                stream.write_all(chunk).await?;
            }
            stream.flush().await?;
        }
        if response.drop_after.is_some_and(|n| n >= chunks.len()) {
            return stream.shutdown().await;
        }
        if streamed {
            stream.write_all(b"0\r\n\r\n").await?;
        }
        stream.flush().await?;
        if close_after_reply {
            return close_when_reused(stream).await;
        }
        if close {
            return Ok(());
        }
    }
}

/// Waits until the client sends more on a connection that was left open (its next
/// request) or closes it, then closes it: the request is lost before any byte of an answer.
async fn close_when_reused(mut stream: TcpStream) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let _ = read_more(&mut stream, &mut buf).await;
    stream.shutdown().await
}

/// The head, then the chunks (in chunked encoding when `streamed`), as one buffer.
fn whole_response(head: String, chunks: &[Vec<u8>], streamed: bool) -> Vec<u8> {
    let mut bytes = head.into_bytes();
    for chunk in chunks.iter().filter(|c| !streamed || !c.is_empty()) {
        if streamed {
            bytes.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        }
        bytes.extend_from_slice(chunk);
        if streamed {
            bytes.extend_from_slice(b"\r\n");
        }
    }
    if streamed {
        bytes.extend_from_slice(b"0\r\n\r\n");
    }
    bytes
}

fn pick_response(state: &Mutex<State>, req: &MockRequest) -> MockResponse {
    let router = lock(state).router.clone();
    if let Some(response) = router.and_then(|route| route(req)) {
        return response;
    }
    let mut st = lock(state);
    if st.grammar && req.body.get("response_format").is_some() {
        // Under a grammar only text can be written: tool calls never come.
        while st.queue.front().is_some_and(MockResponse::calls_tools) {
            st.queue.pop_front();
        }
    }
    let queued = st.queue.pop_front();
    drop(st);
    queued.unwrap_or_else(|| {
        if req.wire() == Wire::Unknown {
            MockResponse::error(
                404,
                format!("mock server: no API at {} {}", req.method, req.path),
            )
        } else {
            MockResponse::error(
                400,
                format!(
                    "mock server: no response scripted for request #{} ({} {})",
                    req.number, req.method, req.path
                ),
            )
        }
    })
}

/// Reads one request (head and `Content-Length` body); `None` when the client closed
/// the connection or went quiet.
async fn read_request(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    state: &Mutex<State>,
) -> std::io::Result<Option<MockRequest>> {
    let head_end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD || !read_more(stream, buf).await? {
            return Ok(None);
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or("").split(' ');
    let method = request_line.next().unwrap_or("").to_string();
    let path = request_line.next().unwrap_or("").to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    if length > MAX_BODY {
        return Ok(None);
    }
    let body_start = head_end + 4;
    while buf.len() < body_start + length {
        if !read_more(stream, buf).await? {
            return Ok(None);
        }
    }
    let answer_only = lock(state).answer_only;
    let bytes = &buf[body_start..body_start + length];
    let body = if answer_only {
        serde_json::from_slice::<AnswerFields>(bytes)
            .and_then(serde_json::to_value)
            .unwrap_or(Value::Null)
    } else {
        serde_json::from_slice(bytes).unwrap_or(Value::Null)
    };
    buf.drain(..body_start + length);
    let mut st = lock(state);
    st.received += 1;
    let req = MockRequest {
        number: st.received,
        method,
        path,
        headers,
        body,
    };
    if !st.forget {
        st.requests.push(req.clone());
    }
    Ok(Some(req))
}

/// The fields of a request body that an answer depends on; serde skips the others
/// without building them.
#[derive(serde::Deserialize, serde::Serialize)]
struct AnswerFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stream: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stop: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stop_sequences: Option<Value>,
}

async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    let mut tmp = [0u8; 16 * 1024];
    match tokio::time::timeout(READ_TIMEOUT, stream.read(&mut tmp)).await {
        Ok(Ok(0)) | Err(_) => Ok(false),
        Ok(Ok(n)) => {
            buf.extend_from_slice(&tmp[..n]);
            Ok(true)
        }
        Ok(Err(e)) => Err(e),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}
