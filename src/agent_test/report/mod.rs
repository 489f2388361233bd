//! How `runner test` tells what it found: progress lines and a summary like `cargo test`
//! (text), one JSON document, JUnit XML, and GitHub Actions annotations on the failing
//! assertions' lines.

mod github;
mod json;
mod junit;
mod text;

pub use github::annotations;
pub use json::json_report;
pub use junit::junit_report;
pub use text::{failures_section, progress_line, summary_line};
