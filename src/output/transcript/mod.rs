//! The tagged transcript (SPEC §8): `transcript.txt`, the record a run leaves behind.
//!
//! One linear text, so it can be appended to as the run goes and survive a crash, that
//! still encodes a tree (steps, tool calls, sub-agents inside tool calls). This module
//! holds the tree ([`model`]), the escaping that keeps content from forging tags
//! ([`escape`]), the writer used during a run ([`writer`]) and the strict parser used
//! by `runner render` and `runner resume` ([`parser`]). The format is described in
//! `docs/transcript.md`.

pub mod error;
pub mod escape;
pub mod model;
pub mod parser;
pub mod recorder;
pub mod serialize;
pub mod tags;
pub mod tolerant;
pub mod writer;

pub use model::{
    ErrorBlock, ErrorJson, InputRequired, Item, Step, StepStatus, ToolResult, ToolStep, Transcript,
    UserInput,
};
pub use parser::{parse, parse_tolerant};
pub use recorder::{Recorder, TranscriptSink};
// For the crate's own tests and benchmarks (the `testing` feature).
pub use writer::TranscriptWriter;
#[cfg(any(test, feature = "testing"))]
pub use {
    error::ParseError,
    model::Checkpoint,
    parser::{IncompleteTail, PartialTranscript, parse_partial},
    recorder::WriteError,
    serialize::write_transcript,
};
