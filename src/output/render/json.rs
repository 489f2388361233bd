//! JSON rendering: the parsed tree as serde sees it, for programs that want the structure
//! without writing a parser for the tagged format.

use crate::output::transcript::Transcript;

/// The tree as pretty-printed JSON, ending in a newline.
pub fn render_json(transcript: &Transcript) -> String {
    // The model holds only strings, numbers, booleans and JSON values: serialising it
    // cannot fail.
    let mut out = serde_json::to_string_pretty(transcript).unwrap_or_else(|_| "null".into());
    out.push('\n');
    out
}
