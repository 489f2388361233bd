//! The `runner` binary's entry point (`src/main.rs` only calls [`run`]): the process's
//! setup, then the command line.
//!
//! No input may make `runner` crash: a panic anywhere (a bug) prints one
//! `error[internal]` line and ends the process with exit code 1, never Rust's 101.

use std::io::Write;
use std::panic::{self, PanicHookInfo};
use std::process::ExitCode;

use super::Exit;
use crate::spec::template::{panic_is_caught, panic_message};

/// Sets the process up and runs the command line; the process exit code.
pub fn run() -> ExitCode {
    // Before anything is read or started: no program the agent runs reads the keys in
    // this process's environment through /proc.
    crate::tools::hide_this_process();
    panic::set_hook(Box::new(report_panic));
    match panic::catch_unwind(super::main) {
        Ok(code) => code,
        Err(_) => Exit::Failed.into(),
    }
}

/// Reports a panic in one clean line instead of Rust's message and backtrace hint.
fn report_panic(info: &PanicHookInfo<'_>) {
    if panic_is_caught() {
        return;
    }
    let location = info
        .location()
        .map(|at| format!(" (at {}:{})", at.file(), at.line()))
        .unwrap_or_default();
    let _ = writeln!(
        std::io::stderr(),
        "error[internal]: {}{location}; this is a bug in runner, please report it",
        panic_message(info.payload())
    );
}
