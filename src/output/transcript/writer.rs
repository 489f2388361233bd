//! Writing a transcript to a file while the run goes.
//!
//! SPEC §8 wants the status mark on a step's *first* line, but the status is only known
//! when the step ends, and an append-only file cannot be patched. So the writer keeps the
//! open step in memory ([`Recorder`]) and writes it, header first, as one block when it
//! ends; checkpoints, errors, input requests and the final answer outside a step are
//! written as soon as they are reported. Each block is one `write_all` followed by a
//! `flush`; a writer made [`holding`](TranscriptWriter::holding) (a run directory's)
//! instead keeps the finished blocks until [`flush`](TranscriptSink::flush), which its
//! event subscriber calls before the run waits and at the end of the run
//! ([`FlushPoints`](crate::engine::events::FlushPoints)), so a step and its checkpoint go
//! out in one `write`, with the next step's model call.
//!
//! A write that fails (a full disk) ends the file there: nothing more is written, and
//! [`TranscriptWriter::failure`] tells the run directory, which reports it. To a file
//! ([`TranscriptWriter::file`]) the block the failure tore is cut off again, so the file
//! still parses (see [`WholeRecords`]).
//!
//! Crash behaviour (docs/transcript.md): every *completed* block is on disk and the file
//! parses; the step that was running when the process died is missing. If the process
//! dies in the middle of a write the file ends in a torn block, which
//! [`parse_partial`](super::parser::parse_partial) reports as an incomplete tail after
//! returning every complete block before it. An engine that stops on purpose (SIGINT,
//! pause for input, fatal error) calls [`TranscriptWriter::abort`] first, which writes
//! the open step with no status mark ([`StepStatus::Open`]).

use std::fs::File;
use std::io::{self, Write};

use serde_json::Value;

#[cfg(any(test, feature = "testing"))]
use super::model::UserInput;
use super::model::{ErrorJson, InputRequired, Item, StepStatus, ToolResult};
use super::recorder::{Recorder, TranscriptSink, WriteError};
use super::serialize::write_items;
use crate::fsutil::WholeRecords;

/// A [`TranscriptSink`] that appends finished top-level blocks to `W`.
#[derive(Debug)]
pub struct TranscriptWriter<W: Write> {
    out: WholeRecords<W>,
    recorder: Recorder,
    buf: String,
    /// Whether finished blocks wait for [`flush`](TranscriptSink::flush).
    holding: bool,
}

impl<W: Write> TranscriptWriter<W> {
    #[cfg(any(test, feature = "testing"))]
    /// Writes to `out`; a block a failed write tore is not taken back.
    pub fn new(out: W) -> Self {
        Self::to(WholeRecords::new(out))
    }

    fn to(out: WholeRecords<W>) -> Self {
        TranscriptWriter {
            out,
            recorder: Recorder::new(),
            buf: String::new(),
            holding: false,
        }
    }

    /// The same writer, keeping finished blocks until [`flush`](TranscriptSink::flush)
    /// rather than writing each at once.
    pub fn holding(mut self) -> Self {
        self.holding = true;
        self
    }

    /// The write that failed, if one did: the output holds the blocks before it, no more.
    pub fn failure(&self) -> Option<io::Error> {
        self.out.failure()
    }

    #[cfg(any(test, feature = "testing"))]
    /// Writes the open step (status [`Open`](StepStatus::Open)) with its pending tool
    /// calls closed without a result. For runs that stop before the step ends.
    pub fn abort(&mut self) -> Result<(), WriteError> {
        self.recorder.abort();
        self.drain()
    }

    #[cfg(any(test, feature = "testing"))]
    /// True while a step is open or a top-level tool call is pending (nothing of it is on
    /// disk yet).
    pub fn is_busy(&self) -> bool {
        self.recorder.is_busy()
    }

    #[cfg(any(test, feature = "testing"))]
    /// The underlying writer. Whatever is still open is dropped; call
    /// [`abort`](Self::abort) first to keep it.
    pub fn into_inner(self) -> W {
        self.out.into_inner()
    }

    /// Writes the finished top-level items, if any, as one block.
    fn drain(&mut self) -> Result<(), WriteError> {
        let items = self.recorder.take_finished();
        if items.is_empty() {
            return Ok(());
        }
        self.buf.clear();
        write_items(&items, &mut self.buf);
        match self.holding {
            true => self.out.hold(self.buf.as_bytes())?,
            false => self.out.append(self.buf.as_bytes())?,
        }
        Ok(())
    }

    fn then_drain(&mut self, r: Result<(), WriteError>) -> Result<(), WriteError> {
        r?;
        self.drain()
    }
}

impl TranscriptWriter<File> {
    /// Writes to a file from its start (as `File::create` leaves it).
    pub fn file(file: File) -> Self {
        Self::to(WholeRecords::file(file))
    }
}

impl<W: Write> TranscriptSink for TranscriptWriter<W> {
    fn step_start(&mut self, number: u32, title: &str) -> Result<(), WriteError> {
        self.recorder.step_start(number, title)
    }

    fn single_step(&mut self) -> Result<(), WriteError> {
        self.recorder.single_step()
    }

    fn thinking(&mut self, text: &str) -> Result<(), WriteError> {
        let r = self.recorder.thinking(text);
        self.then_drain(r)
    }

    fn text(&mut self, text: &str) -> Result<(), WriteError> {
        let r = self.recorder.text(text);
        self.then_drain(r)
    }

    fn tool_start(&mut self, name: &str, id: &str, input: &Value) -> Result<(), WriteError> {
        self.recorder.tool_start(name, id, input)
    }

    fn tool_nested(&mut self, id: &str, items: Vec<Item>) -> Result<(), WriteError> {
        self.recorder.tool_nested(id, items)
    }

    fn tool_result(&mut self, name: &str, id: &str, result: ToolResult) -> Result<(), WriteError> {
        let r = self.recorder.tool_result(name, id, result);
        self.then_drain(r)
    }

    #[cfg(any(test, feature = "testing"))]
    fn tool_end(&mut self, name: &str, id: &str) -> Result<(), WriteError> {
        let r = self.recorder.tool_end(name, id);
        self.then_drain(r)
    }

    fn step_end(&mut self, status: StepStatus) -> Result<(), WriteError> {
        let r = self.recorder.step_end(status);
        self.then_drain(r)
    }

    fn checkpoint(&mut self, name: &str) -> Result<(), WriteError> {
        let r = self.recorder.checkpoint(name);
        self.then_drain(r)
    }

    fn error(&mut self, message: &str, json: ErrorJson) -> Result<(), WriteError> {
        let r = self.recorder.error(message, json);
        self.then_drain(r)
    }

    fn input_required(&mut self, request: InputRequired) -> Result<(), WriteError> {
        let r = self.recorder.input_required(request);
        self.then_drain(r)
    }

    #[cfg(any(test, feature = "testing"))]
    fn user_input_provided(&mut self, input: UserInput) -> Result<(), WriteError> {
        let r = self.recorder.user_input_provided(input);
        self.then_drain(r)
    }

    fn final_answer(&mut self, text: &str) -> Result<(), WriteError> {
        let r = self.recorder.final_answer(text);
        self.then_drain(r)
    }

    fn flush(&mut self) -> Result<(), WriteError> {
        self.out.write_held()?;
        Ok(())
    }
}
