//! The JSONL subscriber: `events.jsonl`, `--events PATH|-`.

use std::fs::File;
use std::io::{self, Write};
use std::sync::Mutex;

use super::bus::EventSink;
use super::event::Event;
use super::flush::FlushPoints;
use super::line::{EnvelopeJson, write_line};
use crate::fsutil::WholeRecords;
use crate::sync::lock;

/// Appends each event as one JSON line. The lines of one moment of the run are held and
/// written together, before the run waits on anything and at the end of the run
/// ([`FlushPoints`]); a line is never held across a wait, so a process killed
/// while a model or a tool works leaves every event emitted before it on disk.
///
/// A write that fails (a full disk) must not stop the run, so it is not an error here: the
/// sink writes nothing more and keeps the failure for [`failure`](Self::failure), which the
/// run directory reports. To a file ([`JsonlSink::file`]) the line the failure tore is cut
/// off again, so the file still ends with a whole line (see [`WholeRecords`]).
pub struct JsonlSink<W: Write + Send> {
    out: Mutex<Lines<W>>,
}

/// The file, when to write it, and the line being made.
struct Lines<W: Write> {
    records: WholeRecords<W>,
    points: FlushPoints,
    envelope: EnvelopeJson,
    line: Vec<u8>,
}

impl<W: Write> Lines<W> {
    fn new(records: WholeRecords<W>) -> Self {
        Lines {
            records,
            points: FlushPoints::default(),
            envelope: EnvelopeJson::default(),
            line: Vec::new(),
        }
    }
}

impl<W: Write + Send> JsonlSink<W> {
    /// Lines to any writer (stdout, memory): one a failed write tore is not taken back.
    pub fn new(out: W) -> Self {
        JsonlSink {
            out: Mutex::new(Lines::new(WholeRecords::new(out))),
        }
    }

    /// The write that failed, if one did: the output holds the lines before it, no more.
    pub fn failure(&self) -> Option<io::Error> {
        lock(&self.out).records.failure()
    }
}

impl JsonlSink<File> {
    /// Lines to a file written from its start (as `File::create` leaves it).
    pub fn file(file: File) -> Self {
        JsonlSink {
            out: Mutex::new(Lines::new(WholeRecords::file(file))),
        }
    }
}

impl<W: Write + Send> EventSink for JsonlSink<W> {
    fn emit(&self, event: &Event) {
        let mut out = lock(&self.out);
        let Lines {
            records,
            points,
            envelope,
            line,
        } = &mut *out;
        line.clear();
        if write_line(event, envelope, line).is_err() {
            return;
        }
        // A failure is kept by `records` for `failure()`; the run goes on.
        let _ = match points.after(event) {
            true => records.append(line),
            false => records.hold(line),
        };
    }

    fn flush(&self) {
        self.write_held();
    }
}

impl<W: Write + Send> JsonlSink<W> {
    fn write_held(&self) {
        // A failure is kept by `records` for `failure()`; the run goes on.
        let _ = lock(&self.out).records.write_held();
    }
}

impl<W: Write + Send> Drop for JsonlSink<W> {
    fn drop(&mut self) {
        self.write_held();
    }
}
