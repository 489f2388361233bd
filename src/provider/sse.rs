//! Incremental Server-Sent Events parser.
//!
//! Bytes arrive in arbitrary pieces (a chunk may end mid-line or mid-UTF-8 character),
//! so the parser keeps only the unfinished line and remembers how far it has scanned:
//! every byte is examined once, which keeps parsing linear however the stream is split.
//!
//! Handled: `data:` (one optional space after the colon; several lines joined with
//! `\n`), `event:`, comment lines (`: ...`), `id:`/`retry:` (ignored), LF and CRLF line
//! ends, and a last event without its trailing blank line ([`SseParser::finish`]).

use super::DeltaSink;
use super::error::ProviderError;
use super::http::WireStream;
use super::types::ModelResponse;

/// A wire's reading of its events: what an [`SseStream`] feeds them to.
pub trait EventReader {
    /// Takes in one event, reporting what it adds to `sink`.
    fn event(&mut self, event: SseEvent<'_>, sink: &DeltaSink<'_>) -> Result<(), ProviderError>;
    /// The terminal event arrived: the rest of the body can be drained.
    fn is_done(&self) -> bool;
    /// The assembled response once the body ended, or `IncompleteStream` when the wire's
    /// end never came.
    fn end(self) -> Result<ModelResponse, ProviderError>;
}

/// A streamed body: SSE events, read by a wire's [`EventReader`]. Feed it the body's bytes
/// as they arrive, then [`finish`](Self::finish).
pub struct SseStream<R> {
    sse: SseParser,
    reader: R,
}

impl<R: EventReader> SseStream<R> {
    pub fn with_reader(reader: R) -> Self {
        SseStream {
            sse: SseParser::new(),
            reader,
        }
    }

    /// True once the wire's terminal event arrived.
    pub fn is_done(&self) -> bool {
        self.reader.is_done()
    }

    pub fn feed(&mut self, bytes: &[u8], sink: &DeltaSink<'_>) -> Result<(), ProviderError> {
        let reader = &mut self.reader;
        self.sse.feed(bytes, &mut |event| reader.event(event, sink))
    }

    /// Ends the body (a last event without its blank line counts) and returns the response.
    pub fn finish(mut self, sink: &DeltaSink<'_>) -> Result<ModelResponse, ProviderError> {
        let reader = &mut self.reader;
        self.sse.finish(&mut |event| reader.event(event, sink))?;
        self.reader.end()
    }
}

impl<R: EventReader> WireStream for SseStream<R> {
    fn feed(&mut self, bytes: &[u8], sink: &DeltaSink<'_>) -> Result<(), ProviderError> {
        SseStream::feed(self, bytes, sink)
    }
    fn is_done(&self) -> bool {
        SseStream::is_done(self)
    }
    fn finish(self, sink: &DeltaSink<'_>) -> Result<ModelResponse, ProviderError> {
        SseStream::finish(self, sink)
    }
}

/// One dispatched event. Borrowed from the parser's buffers: copy what you keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` field, or `""` when absent (the SSE default "message").
    pub event: &'a str,
    pub data: &'a str,
}

#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the line being received (never holds a complete line between calls).
    line: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next piece of the body, calling `on_event` for every complete event.
    /// An error returned by `on_event` stops parsing and is passed through.
    pub fn feed<E>(
        &mut self,
        mut chunk: &[u8],
        on_event: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        while let Some(nl) = memchr::memchr(b'\n', chunk) {
            let (head, rest) = (&chunk[..nl], &chunk[nl + 1..]);
            chunk = rest;
            if self.line.is_empty() {
                self.line_done(head, on_event)?;
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(head);
                let result = self.line_done(&line, on_event);
                line.clear();
                self.line = line; // keep the allocation
                result?;
            }
        }
        self.line.extend_from_slice(chunk);
        Ok(())
    }

    /// Ends the stream: a pending line and a pending event (no trailing blank line)
    /// are processed as if the blank line had arrived.
    pub fn finish<E>(
        &mut self,
        on_event: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, on_event)?;
        }
        self.line_done(b"", on_event)
    }

    fn line_done<E>(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return self.dispatch(on_event);
        }
        if line[0] == b':' {
            return Ok(()); // comment (e.g. OpenRouter's ": OPENROUTER PROCESSING")
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                push_utf8(&mut self.data, value);
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                push_utf8(&mut self.event, value);
            }
            _ => {} // id, retry and unknown fields carry nothing we use
        }
        Ok(())
    }

    fn dispatch<E>(
        &mut self,
        on_event: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let result = if self.has_data {
            on_event(SseEvent {
                event: &self.event,
                data: &self.data,
            })
        } else {
            Ok(())
        };
        self.event.clear();
        self.data.clear();
        self.has_data = false;
        result
    }
}

fn push_utf8(out: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => out.push_str(s),
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &[u8], piece: usize) -> Vec<(String, String)> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        let mut push = |e: SseEvent<'_>| -> Result<(), ()> {
            out.push((e.event.to_string(), e.data.to_string()));
            Ok(())
        };
        for c in input.chunks(piece) {
            p.feed(c, &mut push).unwrap();
        }
        p.finish(&mut push).unwrap();
        out
    }

    #[test]
    fn same_events_however_split() {
        let input = ": comment\n\nevent: a\ndata: {\"x\":\"é\"}\n\ndata:1\ndata: 2\r\n\r\nid: 7\ndata: last";
        let expected = vec![
            ("a".to_string(), "{\"x\":\"é\"}".to_string()),
            (String::new(), "1\n2".to_string()),
            (String::new(), "last".to_string()),
        ];
        for piece in 1..input.len() + 1 {
            assert_eq!(
                parse_in_pieces(input.as_bytes(), piece),
                expected,
                "piece {piece}"
            );
        }
    }

    #[test]
    fn event_without_data_is_not_dispatched() {
        assert!(parse_in_pieces(b"event: ping\n\n: x\n\n", 3).is_empty());
    }
}
