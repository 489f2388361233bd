//! Checkpoints (UAP §12.4): a session's state saved after every step, so a run that crashed,
//! was interrupted, waits for an answer or hit a limit can be resumed, and any step can be
//! branched from (UAP §7). A session is held by one process at a time (`lock.rs`).
//! `docs/checkpoints.md` describes the files.

// The NATS store (`nats::session_store`) is built from the file store's pieces: its
// journal records, their deltas and their replay.
pub(crate) mod delta;
mod error;
pub(crate) mod file_store;
mod hold;
pub(crate) mod journal;
mod lock;
pub(crate) mod pending_fields;
pub(crate) mod replay;
mod session_id;
pub(crate) mod store;
mod thread_tree;

pub use error::CheckpointError;
pub use file_store::FileCheckpointStore;
pub use hold::{RemoteHold, SessionHold};
pub use pending_fields::PendingFields;
pub use session_id::check_session_id;
pub use store::{
    Checkpoint, CheckpointRef, CheckpointStore, ParentRef, Saved, SessionMetadata, SessionStatus,
    SessionSummary,
};
pub use thread_tree::ThreadTree;
