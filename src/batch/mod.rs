//! `runner batch`: one agent over many inputs on one machine (`docs/scale.md`).
//!
//! The inputs file is streamed ([`inputs`]); each input runs as a child `runner exec` or,
//! when the batch is run again after an interruption, `runner resume` of its session
//! ([`job`], [`children`]), or, when its session completed before its envelope was
//! recorded, not run again ([`settled`]); `-j N` of them at once ([`scheduler`]); each envelope goes
//! into `results.jsonl` as it comes ([`results`]), whose brief per input ([`ledger`])
//! says what a rerun skips and what the batch spent against its [`budget`]; the batch
//! directory ([`dir`]) holds it all, [`progress`] shows it, and [`summary`] ends it.

pub mod budget;
pub mod children;
pub mod dir;
pub mod inputs;
pub mod job;
pub mod ledger;
pub mod progress;
pub mod results;
pub mod scheduler;
mod settled;
pub mod summary;
