//! Diagnostic logging: `--debug` or `RUNNER_LOG` turns on `tracing` output on stderr, with
//! runner's own events (HTTP exchanges, retries, MCP servers, checkpoint records) and those
//! of the libraries it uses (the MCP SDK). Off by default: the progress lines are for
//! people, this is for finding out why.
//!
//! Every secret the process holds (API keys, MCP header and `env` values) is registered
//! here as it is read, and every log line is scrubbed of all of them before it is written,
//! whichever library wrote it: a secret in a log line becomes `[REDACTED]`.

use std::io::{self, Write};
use std::str::FromStr;
use std::sync::RwLock;

use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::secrets::{REDACTED, is_redactable};

/// What `--debug` turns on: runner's events and the MCP SDK's, at debug level.
const DEBUG: &str = "runner=debug,rmcp=debug";

/// The secrets to scrub from log lines.
static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Registers a secret: no log line will show it.
pub fn secret(value: &str) {
    // Short values would scrub ordinary words out of lines, and carry little anyway.
    if !is_redactable(value) {
        return;
    }
    let mut secrets = crate::sync::write(&SECRETS);
    if !secrets.iter().any(|known| known == value) {
        secrets.push(value.to_string());
    }
}

/// Starts logging when `RUNNER_LOG` is set (a level, `debug`, or targets with levels,
/// `runner=trace,rmcp=info`) or `debug` is; `RUNNER_LOG` wins. A filter that does not parse
/// is said on stderr, and logging stays off.
pub fn init(debug: bool) {
    let filter = match std::env::var("RUNNER_LOG") {
        Ok(filter) if !filter.trim().is_empty() => filter,
        _ if debug => DEBUG.to_string(),
        _ => return,
    };
    let targets = match Targets::from_str(&filter) {
        Ok(targets) => targets,
        Err(error) => {
            eprintln!(
                "warning: RUNNER_LOG=`{filter}` is not a log filter ({error}); e.g. `debug` or `runner=trace,rmcp=info`"
            );
            return;
        }
    };
    let format = tracing_subscriber::fmt::layer()
        .with_writer(Scrubbed)
        .with_ansi(false);
    let _ = tracing_subscriber::registry()
        .with(format)
        .with(targets)
        .try_init();
}

/// Makes a writer per log line.
struct Scrubbed;

impl<'a> MakeWriter<'a> for Scrubbed {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line(Vec::with_capacity(256))
    }
}

/// One log line, gathered, then written to stderr without the secrets when it is done.
struct Line(Vec<u8>);

impl Write for Line {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        let line = scrub(&String::from_utf8_lossy(&self.0));
        let _ = io::stderr().lock().write_all(line.as_bytes());
    }
}

/// `text` with every registered secret replaced.
fn scrub(text: &str) -> String {
    let known = crate::secrets::replace(text, REDACTED);
    let text = known.as_deref().unwrap_or(text);
    let secrets = crate::sync::read(&SECRETS);
    secrets.iter().fold(text.to_string(), |text, secret| {
        text.replace(secret, REDACTED)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_secrets_are_scrubbed_and_short_ones_ignored() {
        secret("sk-log-test-123");
        secret("ab");
        assert_eq!(
            scrub("auth: Bearer sk-log-test-123, ab"),
            "auth: Bearer [REDACTED], ab"
        );
    }
}
