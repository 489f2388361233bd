//! A stdio server's answer too large for the SDK becomes an error answer.
//!
//! The SDK reads a stdio server's stdout one line (one JSON-RPC message) at a time and
//! drops a line longer than its bound without a word, so the call that line answered would
//! wait forever (a filesystem server reading a large log does this). [`Oversized`] sits
//! between the server's stdout and the SDK: it passes every byte on unchanged, follows each
//! line's length and the `id` at its top level (without keeping the line), and after a line
//! the SDK will drop it adds a JSON-RPC error answer for that `id`. The call then fails at
//! once with a message that says why, and memory stays flat however long the line is.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// The longest message (its newline included) a stdio server may send: the SDK's own bound,
/// set on its transport too so that both agree.
pub const MAX_MESSAGE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// The longest `id` kept to answer for (real ids are short numbers or strings).
const MAX_ID: usize = 128;

/// How much is read from the server at a time.
const READ_SIZE: usize = 64 * 1024;

/// The reader the SDK is given in place of the server's stdout.
pub struct Oversized<R> {
    inner: R,
    /// Bytes read and examined, not yet passed on, from `start`.
    ready: Vec<u8>,
    start: usize,
    line: LineScan,
    max: usize,
}

impl<R> Oversized<R> {
    pub fn new(inner: R) -> Self {
        Self::with_max(inner, MAX_MESSAGE_BYTES)
    }

    fn with_max(inner: R, max: usize) -> Self {
        Oversized {
            inner,
            ready: Vec::new(),
            start: 0,
            line: LineScan::default(),
            max,
        }
    }

    /// Examines bytes just read into `ready`, adding an error answer after each line the
    /// SDK will drop.
    fn examine(&mut self, read: &[u8]) {
        let mut from = 0;
        for newline in memchr::memchr_iter(b'\n', read) {
            self.line.scan(&read[from..newline]);
            self.ready.extend_from_slice(&read[from..=newline]);
            let line = std::mem::take(&mut self.line);
            // The SDK counts the newline in the line's length.
            if line.length + 1 > self.max as u64 {
                tracing::warn!(
                    bytes = line.length,
                    "an MCP server sent a message over the bound"
                );
                self.ready.extend_from_slice(&line.error_answer(self.max));
            }
            from = newline + 1;
        }
        self.line.scan(&read[from..]);
        self.ready.extend_from_slice(&read[from..]);
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Oversized<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.start == this.ready.len() {
            this.ready.clear();
            this.start = 0;
            let mut scratch = [0u8; READ_SIZE];
            let mut read = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) => {}
                other => return other,
            }
            if read.filled().is_empty() {
                return Poll::Ready(Ok(())); // end of the stream
            }
            this.examine(read.filled());
        }
        let available = &this.ready[this.start..];
        let n = available.len().min(buf.remaining());
        buf.put_slice(&available[..n]);
        this.start += n;
        Poll::Ready(Ok(()))
    }
}

/// What is known of the line being received: its length and its top-level `id`, found
/// by following the JSON's structure byte by byte.
#[derive(Default)]
struct LineScan {
    length: u64,
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1, a key is expected next (after `{` or `,`).
    expect_key: bool,
    /// The top-level key being read or last read, while it may still be `id`.
    key: Vec<u8>,
    reading_key: bool,
    /// The raw text of the top-level `id` value, once its `:` was seen.
    id: Option<Vec<u8>>,
    reading_id: bool,
    /// The id was too long or malformed: nothing is answered.
    id_lost: bool,
}

impl LineScan {
    fn scan(&mut self, bytes: &[u8]) {
        self.length += bytes.len() as u64;
        for &byte in bytes {
            self.step(byte);
        }
    }

    fn step(&mut self, byte: u8) {
        if self.reading_id {
            self.id_byte(byte);
        }
        if self.in_string {
            match (self.escaped, byte) {
                (true, _) => self.escaped = false,
                (false, b'\\') => self.escaped = true,
                (false, b'"') => {
                    self.in_string = false;
                    self.reading_key = false;
                }
                (false, _) => {
                    if self.reading_key && self.key.len() < 3 {
                        self.key.push(byte);
                    }
                }
            }
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.reading_key = true;
                    self.key.clear();
                    self.expect_key = false;
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                self.expect_key = self.depth == 1 && byte == b'{';
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b',' if self.depth == 1 => self.expect_key = true,
            b':' if self.depth == 1 && self.key == b"id" => {
                self.reading_id = true;
                self.id = Some(Vec::new());
            }
            _ => {}
        }
    }

    /// Collects the `id` value's raw text until the `,` or `}` that ends it at depth 1.
    fn id_byte(&mut self, byte: u8) {
        let ends = !self.in_string && self.depth == 1 && matches!(byte, b',' | b'}');
        let Some(id) = &mut self.id else { return };
        if ends {
            self.reading_id = false;
            let text = String::from_utf8_lossy(id).trim().to_string();
            let valid = serde_json::from_str::<serde_json::Value>(&text)
                .is_ok_and(|v| v.is_number() || v.is_string());
            self.id_lost |= !valid;
            *id = text.into_bytes();
        } else if id.len() < MAX_ID {
            id.push(byte);
        } else {
            self.id_lost = true;
            self.reading_id = false;
        }
    }

    /// The JSON-RPC error answer for the line's `id` (nothing without one: a notification,
    /// or an id that cannot be told).
    fn error_answer(&self, max: usize) -> Vec<u8> {
        let Some(id) = self
            .id
            .as_ref()
            .filter(|_| !self.id_lost && !self.reading_id)
        else {
            return Vec::new();
        };
        let message = format!(
            "the server's answer is {} bytes, over the {} MiB a message may have; it was dropped",
            self.length,
            max / (1024 * 1024)
        );
        let mut answer = format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32603,"message":{}}}}}"#,
            String::from_utf8_lossy(id),
            serde_json::Value::from(message)
        )
        .into_bytes();
        answer.push(b'\n');
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn through(input: &[u8], max: usize) -> String {
        let mut reader = Oversized::with_max(input, max);
        let mut out = Vec::new();
        reader.read_to_end(&mut out).await.unwrap();
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn lines_within_the_bound_pass_unchanged() {
        let input = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"a\":[1,{\"id\":2}]}\n";
        assert_eq!(through(input.as_bytes(), 64).await, input);
    }

    #[tokio::test]
    async fn an_oversized_answer_is_followed_by_an_error_for_its_id() {
        let big = "x".repeat(100);
        // The id after the result, and an `id` key nested inside it, as servers may order.
        let input = format!(
            "{{\"result\":{{\"id\":9,\"text\":\"{big}\\\"id\\\":7\"}},\"jsonrpc\":\"2.0\",\"id\":\"r-3\"}}\nnext\n"
        );
        let out = through(input.as_bytes(), 64).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        let answer: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(answer["id"], "r-3");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("it was dropped")
        );
        assert_eq!(lines[2], "next");
    }

    #[tokio::test]
    async fn an_oversized_notification_gets_no_answer() {
        let input = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":\"{}\"}}\n",
            "y".repeat(100)
        );
        assert_eq!(through(input.as_bytes(), 64).await, input);
    }
}
