//! How `runner test` tells what it found: progress lines and a summary like `cargo test`
//! (text), one JSON document, JUnit XML, GitHub Actions annotations on the failing
//! assertions' lines, GitLab's Code Quality JSON, and a Markdown job summary.

mod github;
mod gitlab;
mod json;
mod junit;
mod summary;
mod text;

pub use github::annotations;
pub use gitlab::gitlab_report;
pub use json::json_report;
pub use junit::junit_report;
pub use summary::markdown_summary;
pub use text::{failures_section, progress_line, summary_line};
