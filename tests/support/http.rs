//! A plain HTTP/1.1 client for `runner serve` on loopback, with a reader of server-sent
//! events: each request is one connection (`Connection: close`), every read bounded by a
//! timeout, so a test that waits for something that never comes fails instead of hanging.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use serde_json::Value;

use super::wait_until;

/// How long one read may wait.
const READ_TIMEOUT: Duration = Duration::from_secs(20);

/// A server's API at `127.0.0.1:port`.
#[derive(Clone)]
pub struct Api {
    address: SocketAddr,
    token: Option<String>,
}

/// An answer, read whole.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }

    /// The `error.code` of an error answer.
    pub fn code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// A port nobody listens on now, for a server that cannot be told port 0. It is taken
/// below the system's ephemeral range (32768 and up on Linux), where the mock models and
/// servers that bind port 0 get theirs, so none of them can take it before this server
/// binds it; a random start keeps two tests apart.
pub fn free_port() -> u16 {
    const BELOW_EPHEMERAL: std::ops::Range<u16> = 20000..32768;
    let start = fastrand::u16(BELOW_EPHEMERAL);
    (start..BELOW_EPHEMERAL.end)
        .chain(BELOW_EPHEMERAL.start..start)
        .find(|port| TcpListener::bind(("127.0.0.1", *port)).is_ok())
        .expect("a free port below 32768")
}

impl Api {
    pub fn new(port: u16) -> Self {
        Api {
            address: SocketAddr::from(([127, 0, 0, 1], port)),
            token: None,
        }
    }

    /// Where the server listens (for a raw connection).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Requests carry `Authorization: Bearer token`.
    pub fn with_token(&self, token: &str) -> Self {
        Api {
            token: Some(token.into()),
            ..self.clone()
        }
    }

    /// Waits until the server accepts connections.
    pub fn wait_up(&self) {
        wait_until("the server listens", || {
            TcpStream::connect(self.address).is_ok()
        });
    }

    pub fn get(&self, path: &str) -> Response {
        self.request("GET", path, &[], None)
    }

    pub fn post(&self, path: &str, body: &Value) -> Response {
        self.request("POST", path, &[], Some(&body.to_string()))
    }

    pub fn delete(&self, path: &str) -> Response {
        self.request("DELETE", path, &[], None)
    }

    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Response {
        let mut reader = self.send(method, path, headers, body);
        let (status, headers) = read_head(&mut reader);
        let mut body = Body::new(reader, &headers);
        let mut bytes = Vec::new();
        while let Some(chunk) = body.chunk() {
            bytes.extend(chunk);
        }
        Response {
            status,
            headers,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> BufReader<TcpStream> {
        let mut stream = TcpStream::connect(self.address).expect("connect to the server");
        stream.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
            self.address
        );
        if let Some(token) = &self.token {
            head.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        let body = body.unwrap_or("");
        if !body.is_empty() || method == "POST" {
            head.push_str("Content-Type: application/json\r\n");
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        BufReader::new(stream)
    }

    /// The server-sent events of run `run`, after event `last_event_id` if given.
    pub fn events(&self, run: &str, last_event_id: Option<u64>) -> Events {
        let id = last_event_id.map(|id| id.to_string());
        let headers: Vec<(&str, &str)> = match &id {
            Some(id) => vec![("Last-Event-ID", id.as_str())],
            None => Vec::new(),
        };
        let mut reader = self.send("GET", &format!("/api/runs/{run}/events"), &headers, None);
        let (status, headers) = read_head(&mut reader);
        assert_eq!(status, 200, "GET /api/runs/{run}/events");
        Events {
            body: Body::new(reader, &headers),
            pending: Vec::new(),
        }
    }
}

fn read_head(reader: &mut BufReader<TcpStream>) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    reader.read_line(&mut line).expect("a status line");
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP status line: {line:?}"));
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).expect("a header line");
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            return (status, headers);
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
}

/// A response body, chunked or not, read a piece at a time.
struct Body {
    reader: BufReader<TcpStream>,
    chunked: bool,
    done: bool,
}

impl Body {
    fn new(reader: BufReader<TcpStream>, headers: &[(String, String)]) -> Self {
        let chunked = headers.iter().any(|(name, value)| {
            name.eq_ignore_ascii_case("transfer-encoding") && value.contains("chunked")
        });
        Body {
            reader,
            chunked,
            done: false,
        }
    }

    /// The next piece, `None` at the end.
    fn chunk(&mut self) -> Option<Vec<u8>> {
        if self.done {
            return None;
        }
        if !self.chunked {
            self.done = true;
            let mut rest = Vec::new();
            self.reader.read_to_end(&mut rest).expect("the body");
            return Some(rest);
        }
        let mut size = String::new();
        self.reader.read_line(&mut size).expect("a chunk size");
        let size = usize::from_str_radix(size.trim(), 16)
            .unwrap_or_else(|_| panic!("not a chunk size: {size:?}"));
        let mut chunk = vec![0; size + 2];
        self.reader.read_exact(&mut chunk).expect("a chunk");
        chunk.truncate(size);
        if size == 0 {
            self.done = true;
            return None;
        }
        Some(chunk)
    }
}

/// One server-sent event.
#[derive(Debug, Clone)]
pub struct Sse {
    pub id: Option<u64>,
    /// `event:`; `None` for a plain message (each run event).
    pub event: Option<String>,
    pub data: String,
}

impl Sse {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap()
    }
}

/// The events of one stream, as they come.
pub struct Events {
    body: Body,
    pending: Vec<u8>,
}

impl Events {
    /// The next event (keep-alive comments skipped); `None` when the stream ended.
    pub fn next(&mut self) -> Option<Sse> {
        loop {
            if let Some(end) = find(&self.pending, b"\n\n") {
                let frame: Vec<u8> = self.pending.drain(..end + 2).collect();
                if let Some(event) = parse_frame(&String::from_utf8_lossy(&frame)) {
                    return Some(event);
                }
                continue;
            }
            let chunk = self.body.chunk()?;
            self.pending.extend(chunk);
        }
    }

    /// Every event up to and including `event: end`, which must come.
    pub fn until_end(&mut self) -> (Vec<Sse>, Sse) {
        let mut events = Vec::new();
        loop {
            let event = self.next().expect("the stream ends with `event: end`");
            if event.event.as_deref() == Some("end") {
                return (events, event);
            }
            events.push(event);
        }
    }
}

fn find(bytes: &[u8], needle: &[u8]) -> Option<usize> {
    bytes
        .windows(needle.len())
        .position(|window| window == needle)
}

fn parse_frame(frame: &str) -> Option<Sse> {
    let (mut id, mut event, mut data) = (None, None, Vec::new());
    for line in frame.lines() {
        if let Some(value) = line.strip_prefix("id:") {
            id = value.trim().parse().ok();
        } else if let Some(value) = line.strip_prefix("event:") {
            event = Some(value.trim().to_string());
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push(value.strip_prefix(' ').unwrap_or(value).to_string());
        }
    }
    if data.is_empty() && event.is_none() {
        return None;
    }
    Some(Sse {
        id,
        event,
        data: data.join("\n"),
    })
}
