//! Turning a parsed transcript into something to read: Markdown (for files and web
//! views), plain or coloured text (for terminals) and JSON (for programs). The renderers
//! are pure functions of the tree, so `runner render` is parse + render and the output
//! can be snapshot-tested.

pub mod json;
pub mod markdown;
pub mod text;

pub use json::render_json;
pub use markdown::{render_markdown, write_markdown};
pub use text::{TextOptions, render_text};

use crate::output::transcript::Transcript;

/// The formats of `runner render --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Text,
    Json,
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "markdown" | "md" => Ok(Format::Markdown),
            "text" => Ok(Format::Text),
            "json" => Ok(Format::Json),
            other => Err(format!(
                "unknown format `{other}` (expected markdown, text or json)"
            )),
        }
    }
}

/// Renders `transcript` in `format`; `color` only matters for [`Format::Text`].
pub fn render(transcript: &Transcript, format: Format, color: bool) -> String {
    match format {
        Format::Markdown => render_markdown(transcript),
        Format::Text => render_text(transcript, TextOptions { color }),
        Format::Json => render_json(transcript),
    }
}
