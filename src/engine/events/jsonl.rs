//! The JSONL subscriber: `events.jsonl`, `--events PATH|-`.

use std::io::Write;
use std::sync::Mutex;

use super::bus::EventSink;
use super::event::Event;

/// Appends each event as one JSON line, flushed per line, so a crash leaves every emitted
/// event on disk and never half a line.
pub struct JsonlSink<W: Write + Send> {
    out: Mutex<W>,
}

impl<W: Write + Send> JsonlSink<W> {
    pub fn new(out: W) -> Self {
        JsonlSink {
            out: Mutex::new(out),
        }
    }
}

impl<W: Write + Send> EventSink for JsonlSink<W> {
    fn emit(&self, event: &Event) {
        let Ok(mut line) = serde_json::to_vec(event) else {
            return;
        };
        line.push(b'\n');
        if let Ok(mut out) = self.out.lock() {
            // A full disk must not stop the run; the result reports the run itself.
            let _ = out.write_all(&line).and_then(|()| out.flush());
        }
    }
}
