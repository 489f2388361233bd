//! A running program's output as it arrives, for the person watching (the transcript
//! reference's real-time tool progress; the event-depth reference's ToolOutput): split into
//! lines, each cut to [`MAX_LINE_CHARS`], and bounded to [`MAX_LINES_PER_SECOND`] per call
//! over stdout and stderr together. Lines beyond the bound are counted, not kept: the next
//! line shown says how many were skipped, and so does a last report when the program ends.
//! The whole output is only in the call's result; what is shown here is a view of it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::sync::lock;

/// The most lines shown in any one second of a call.
pub const MAX_LINES_PER_SECOND: usize = 20;
/// A longer line is cut to this many characters (and `…`); the rest of it is not shown.
pub const MAX_LINE_CHARS: usize = 500;

/// Which pipe a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// One report: a line (or, at the end, none), and how many lines were skipped before it.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputLine {
    pub stream: Stream,
    /// `None` on the last report of a call that skipped lines after its last shown one.
    pub line: Option<String>,
    /// Lines not shown (over the bound) since the last report.
    pub skipped: u64,
}

/// Where a call's lines go (the engine turns them into `agent.tool.output` events).
#[derive(Clone)]
pub struct OutputSink(Arc<dyn Fn(OutputLine) + Send + Sync>);

impl OutputSink {
    pub fn new(sink: impl Fn(OutputLine) + Send + Sync + 'static) -> Self {
        OutputSink(Arc::new(sink))
    }
}

impl std::fmt::Debug for OutputSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutputSink")
    }
}

/// The lines of one call's stdout and stderr, bounded, on their way to a sink. Shared by
/// the two pipe readers.
#[derive(Debug, Clone)]
pub struct LiveOutput {
    sink: OutputSink,
    state: Arc<Mutex<Lines>>,
}

#[derive(Debug, Default)]
struct Lines {
    /// The unfinished last line of each pipe, at most [`MAX_LINE_CHARS`] characters of it.
    partial: [Partial; 2],
    /// When each of the last [`MAX_LINES_PER_SECOND`] shown lines was shown.
    shown: VecDeque<Instant>,
    skipped: u64,
    /// The pipe of the last skipped line, for the final report.
    skipped_on: Option<Stream>,
}

#[derive(Debug, Default)]
struct Partial {
    bytes: Vec<u8>,
    /// The line is longer than kept: the rest up to its end is dropped.
    cut: bool,
}

impl LiveOutput {
    pub fn new(sink: OutputSink) -> Self {
        LiveOutput {
            sink,
            state: Arc::default(),
        }
    }

    /// Bytes read from `stream`: each line they complete is shown or skipped.
    pub fn push(&self, stream: Stream, bytes: &[u8]) {
        let mut reports = Vec::new();
        {
            let mut lines = lock(&self.state);
            let mut rest = bytes;
            while let Some(end) = rest.iter().position(|&b| b == b'\n') {
                lines.extend(stream, &rest[..end]);
                if let Some(report) = lines.finish_line(stream, Instant::now()) {
                    reports.push(report);
                }
                rest = &rest[end + 1..];
            }
            lines.extend(stream, rest);
        }
        // Outside the lock: the sink publishes events.
        for report in reports {
            (self.sink.0)(report);
        }
    }

    /// The program ended: its unfinished lines are shown (or skipped), and lines skipped
    /// since the last shown one are reported.
    pub fn finish(&self) {
        let mut reports = Vec::new();
        {
            let mut lines = lock(&self.state);
            for stream in [Stream::Stdout, Stream::Stderr] {
                if !lines.partial[stream as usize].bytes.is_empty()
                    && let Some(report) = lines.finish_line(stream, Instant::now())
                {
                    reports.push(report);
                }
            }
            if lines.skipped > 0 {
                reports.push(OutputLine {
                    stream: lines.skipped_on.unwrap_or(Stream::Stdout),
                    line: None,
                    skipped: std::mem::take(&mut lines.skipped),
                });
            }
        }
        for report in reports {
            (self.sink.0)(report);
        }
    }
}

impl Lines {
    /// Keeps the start of the current line, up to a little over the cut.
    fn extend(&mut self, stream: Stream, bytes: &[u8]) {
        let partial = &mut self.partial[stream as usize];
        // Four bytes a character at most: enough bytes for MAX_LINE_CHARS characters.
        let room = (MAX_LINE_CHARS * 4 + 4).saturating_sub(partial.bytes.len());
        if bytes.len() > room {
            partial.cut = true;
        }
        partial
            .bytes
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// The current line of `stream` is complete: shown if the bound allows, else counted.
    fn finish_line(&mut self, stream: Stream, now: Instant) -> Option<OutputLine> {
        let partial = std::mem::take(&mut self.partial[stream as usize]);
        let window = Duration::from_secs(1);
        while self
            .shown
            .front()
            .is_some_and(|&at| now.duration_since(at) >= window)
        {
            self.shown.pop_front();
        }
        if self.shown.len() >= MAX_LINES_PER_SECOND {
            self.skipped += 1;
            self.skipped_on = Some(stream);
            return None;
        }
        self.shown.push_back(now);
        Some(OutputLine {
            stream,
            line: Some(line_text(&partial.bytes, partial.cut)),
            skipped: std::mem::take(&mut self.skipped),
        })
    }
}

/// The line as text: invalid UTF-8 replaced, a carriage return at its end dropped, cut to
/// [`MAX_LINE_CHARS`] characters with `…`.
fn line_text(bytes: &[u8], cut: bool) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.strip_suffix('\r').unwrap_or(&text);
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None if cut => format!("{text}…"),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collecting() -> (LiveOutput, Arc<Mutex<Vec<OutputLine>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = seen.clone();
        let live = LiveOutput::new(OutputSink::new(move |line| lock(&into).push(line)));
        (live, seen)
    }

    #[test]
    fn lines_split_across_reads_are_joined_and_a_burst_is_bounded() {
        let (live, seen) = collecting();
        live.push(Stream::Stdout, b"one\ntw");
        live.push(Stream::Stdout, b"o\n");
        live.push(Stream::Stderr, b"oops");
        let burst = "x\n".repeat(100);
        live.push(Stream::Stdout, burst.as_bytes());
        live.finish();
        let seen = lock(&seen);
        assert_eq!(seen[0].line.as_deref(), Some("one"));
        assert_eq!(seen[1].line.as_deref(), Some("two"));
        let shown = seen.iter().filter(|l| l.line.is_some()).count();
        let skipped: u64 = seen.iter().map(|l| l.skipped).sum();
        // 2 lines, 100 of the burst, the unfinished stderr line at the end: all counted,
        // most of the burst skipped.
        assert_eq!(shown as u64 + skipped, 103);
        assert!(shown < 50, "{shown} lines shown");
        assert_eq!(seen.last().unwrap().line, None);
    }

    #[test]
    fn a_long_line_is_cut() {
        let (live, seen) = collecting();
        live.push(Stream::Stdout, &vec![b'a'; 100_000]);
        live.push(Stream::Stdout, b"\n");
        let seen = lock(&seen);
        let line = seen[0].line.as_deref().unwrap();
        assert_eq!(line.chars().count(), MAX_LINE_CHARS + 1);
        assert!(line.ends_with('…'));
    }
}
