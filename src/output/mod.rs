//! What a run leaves behind: the result envelope and progress (and, from the transcript
//! work, the tagged transcript and its renderers).

pub mod progress;
pub mod result;
