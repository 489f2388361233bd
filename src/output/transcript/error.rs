//! The parser's error: where (1-based line and column, columns counted in characters) and
//! what was expected there, so a broken transcript can be fixed by hand.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub col: usize,
    /// What the grammar allowed at this point.
    pub expected: String,
    /// What was there instead (shortened).
    pub found: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: expected {}, found {}",
            self.line, self.col, self.expected, self.found
        )
    }
}

impl std::error::Error for ParseError {}

/// `text` quoted for an error message, cut to a readable length.
pub(crate) fn quote(text: &str) -> String {
    const MAX: usize = 60;
    let mut s: String = text.chars().take(MAX).collect();
    if text.chars().nth(MAX).is_some() {
        s.push('…');
    }
    format!("`{}`", s.escape_debug())
}
