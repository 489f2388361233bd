//! `runner`: a declarative agent runner.
//!
//! The library is usable without the CLI; the `runner` binary is a thin front-end.

pub mod cli;
pub mod fsutil;
pub mod spec;
pub mod tools;
