//! What a run leaves behind: the result envelope, progress for people, and the tagged
//! transcript with its renderers.

pub(crate) mod ci_report;
pub mod code_quality;
pub mod events_schema;
pub mod job_summary;
pub mod progress;
pub mod render;
pub mod result;
pub mod safe_markdown;
pub mod summary;
pub mod transcript;
pub mod transcript_events;
