//! Writing to stdout when it may be closed: a pipe whose reader stopped (`| head -1`) must
//! not turn into a panic (exit 101) or change the exit code the command reports.

use std::io::Write;

/// Writes `text` to stdout and flushes it; a failed write is dropped.
pub fn print_text(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}
