//! Colour for people, never for pipes: on only when the stream is a terminal and NO_COLOR
//! is unset.

use std::io::IsTerminal;

/// Whether to colour output written to stdout.
pub fn stdout_colored() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

pub fn paint(text: &str, ansi: &str, enabled: bool) -> String {
    if enabled {
        format!("\x1b[{ansi}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}
