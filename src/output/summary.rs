//! The line a run ends with on stderr, when progress is shown: how it ended, what it did and
//! spent, and where its files are.
//!
//! ```text
//! completed · 3 steps · 4 model calls · 2 tool calls · 1,234 tokens · $0.0021 · 2.3 s · .runner/runs/01J…
//! ```

use std::path::Path;

use super::result::{RunResult, Status};

/// `n` and the noun, singular for one: `1 step`, `3 steps`.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub fn summary_line(result: &RunResult, run_dir: &Path) -> String {
    let plural = counted;
    let mut parts = vec![
        status_label(result.status).to_string(),
        plural(result.steps, "step", "steps"),
        plural(result.llm_calls, "model call", "model calls"),
        plural(result.tool_calls, "tool call", "tool calls"),
        format!("{} tokens", thousands(result.usage.total_tokens)),
    ];
    if let Some(cost) = result.usage.cost_usd {
        parts.push(format!("${cost:.4}"));
    }
    parts.push(format!("{:.1} s", result.duration_ms as f64 / 1000.0));
    parts.push(run_dir.display().to_string());
    parts.join(" · ")
}

pub fn status_label(status: Status) -> &'static str {
    match status {
        Status::Completed => "completed",
        Status::Failed => "failed",
        Status::Invalid => "invalid",
        Status::LimitReached => "limit reached",
        Status::InputRequired => "waiting for input",
        Status::Interrupted => "interrupted",
    }
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1234), "1,234");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
