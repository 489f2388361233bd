//! Bounds on a model server's answer: a server that sends one endless line, or a reply that
//! never ends, would otherwise grow the runner's memory without limit (the SSE parser keeps
//! an unfinished line, the wires keep the text received). Every byte of a successful
//! answer is counted here as it arrives, before anything keeps it, and a call over a bound
//! fails with an error that names the setting.

use super::error::{ErrorKind, ProviderError};

/// Default longest line of a streamed answer (`model.max_line_bytes`): one event, and real
/// servers send each delta as a line of its own, a few hundred bytes.
pub const DEFAULT_MAX_LINE: u64 = 16 * 1024 * 1024;
/// Default largest answer (`model.max_response_bytes`), streamed or whole: far more than
/// any model writes in one reply.
pub const DEFAULT_MAX_RESPONSE: u64 = 128 * 1024 * 1024;

/// The bounds of one model's answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimits {
    /// Longest line of an event stream, its newline excluded.
    pub max_line: u64,
    /// Largest body of a successful answer.
    pub max_response: u64,
}

impl Default for BodyLimits {
    fn default() -> Self {
        BodyLimits {
            max_line: DEFAULT_MAX_LINE,
            max_response: DEFAULT_MAX_RESPONSE,
        }
    }
}

/// Counts one answer's bytes against its [`BodyLimits`].
#[derive(Debug)]
pub struct BodyMeter {
    limits: BodyLimits,
    /// Whether lines are bounded too (an event stream; a whole JSON answer is one value).
    lines: bool,
    total: u64,
    /// The length of the line being received.
    line: u64,
}

impl BodyMeter {
    /// A meter for an event stream: lines and the whole answer are bounded.
    pub fn stream(limits: BodyLimits) -> Self {
        BodyMeter {
            limits,
            lines: true,
            total: 0,
            line: 0,
        }
    }

    /// A meter for a whole (JSON) answer: only its size is bounded.
    pub fn whole(limits: BodyLimits) -> Self {
        BodyMeter {
            lines: false,
            ..BodyMeter::stream(limits)
        }
    }

    /// Counts the next piece of the body; an error once a bound is crossed.
    pub fn take(&mut self, chunk: &[u8], provider: &str) -> Result<(), ProviderError> {
        self.total += chunk.len() as u64;
        if self.total > self.limits.max_response {
            return Err(too_large(
                provider,
                format!(
                    "the answer is larger than {} (model.max_response_bytes)",
                    size(self.limits.max_response)
                ),
            ));
        }
        if self.lines && self.longest_line(chunk) > self.limits.max_line {
            return Err(too_large(
                provider,
                format!(
                    "a line of the event stream is longer than {} (model.max_line_bytes)",
                    size(self.limits.max_line)
                ),
            ));
        }
        Ok(())
    }
}

impl BodyMeter {
    /// The longest line `chunk` ends or extends (a line carried over from earlier chunks
    /// counted whole); remembers the length of the line it leaves unfinished.
    fn longest_line(&mut self, chunk: &[u8]) -> u64 {
        let (mut longest, mut carried, mut start) = (0, self.line, 0);
        for end in memchr::memchr_iter(b'\n', chunk) {
            longest = longest.max(carried + (end - start) as u64);
            carried = 0;
            start = end + 1;
        }
        self.line = carried + (chunk.len() - start) as u64;
        longest.max(self.line)
    }
}

fn too_large(provider: &str, message: String) -> ProviderError {
    ProviderError::new(ErrorKind::Protocol, provider, message).with_hint(
        "a server that sends this much is broken or hostile; raise the bound in the model mapping only if you trust it",
    )
}

/// `bytes` in the unit that reads best.
fn size(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    match bytes {
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b >= 1024 && b % 1024 == 0 => format!("{} KiB", b / 1024),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_line: u64, max_response: u64) -> BodyLimits {
        BodyLimits {
            max_line,
            max_response,
        }
    }

    #[test]
    fn a_line_is_bounded_however_the_body_is_split() {
        let body = format!("data: {}\n\ndata: {}", "x".repeat(10), "y".repeat(20));
        for piece in 1..body.len() {
            let mut meter = BodyMeter::stream(limits(16, 1000));
            let crossed = body
                .as_bytes()
                .chunks(piece)
                .any(|chunk| meter.take(chunk, "p").is_err());
            assert!(crossed, "piece {piece}");
        }
        let mut meter = BodyMeter::stream(limits(16, 1000));
        assert!(meter.take(&body.as_bytes()[..20], "p").is_ok());
    }

    #[test]
    fn the_whole_answer_is_bounded() {
        let mut meter = BodyMeter::whole(limits(4, 10));
        assert!(meter.take(b"{\"a\": 1}", "p").is_ok());
        let error = meter.take(b"{}{}", "p").unwrap_err();
        assert!(error.message.contains("max_response_bytes"), "{error}");
        assert_eq!(size(16 * 1024 * 1024), "16 MiB");
    }
}
