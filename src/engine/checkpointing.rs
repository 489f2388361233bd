//! The engine's side of checkpoints: after every step of the root agent the state is handed
//! to a `Checkpointer` (the CLI's is the file store). Before a turn's tool calls run, the
//! state with those calls in flight is saved too, so a crash mid-tool is detected on resume
//! instead of the calls being run again blindly (docs/checkpoints.md has the rule).

use super::outcome::RunStatus;
use super::pending::Pending;
use super::state::AgentState;

/// When a checkpoint must be on disk (safe against power loss, not only a crash of the
/// process: what a process wrote before it died is the kernel's to write out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Before `save` returns: tool calls, whose effects cannot be taken back, start next.
    Now,
    /// With the next [`Durability::Now`] save, the next snapshot, the run's end, or the
    /// first save [`MAX_UNSYNCED`] after it was written, whichever comes first: nothing irreversible
    /// happens before then. Losing it to a power cut leaves a step's calls in flight, which
    /// a resume does not run again, or loses calls whose running again does no harm.
    WithNext,
}

/// How long a [`Durability::WithNext`] checkpoint waits for a sync before the next save
/// makes one: a run of read-only steps syncs about once a second instead of once a step,
/// and a power cut costs it about that second of model calls.
pub const MAX_UNSYNCED: std::time::Duration = std::time::Duration::from_secs(1);

/// Why a checkpoint was not saved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SaveError {
    /// The session's hold lapsed: another process may run it now.
    #[error(
        "this process no longer holds the session: its lease lapsed (not renewed in time), and another process may have taken it over"
    )]
    Lost,
    /// The state or the pending data could not be encoded.
    #[error("{0}")]
    Encode(#[from] serde_json::Error),
    /// The store refused or failed the write.
    #[error("{0}")]
    Store(Box<dyn std::error::Error + Send + Sync>),
}

/// Saves states for resume.
pub trait Checkpointer: Send + Sync {
    /// Saves `state` of a running run. Returns the checkpoint's name.
    fn save(
        &self,
        state: &AgentState,
        pending: Option<&Pending>,
        durability: Durability,
    ) -> Result<String, SaveError>;
    /// Saves the final state of run `run_id` with how it ended, durably. Returns the
    /// checkpoint's name.
    fn finish(
        &self,
        state: &AgentState,
        status: RunStatus,
        pending: Option<&Pending>,
        run_id: &str,
    ) -> Result<String, SaveError>;
    /// Whether the session is lost to this process for good: its store is gone (a run
    /// started by `runner worker` whose worker died) or another process took it over (its
    /// lease expired). A save that failed then did not fail the run: it cut it off, and
    /// the session goes on elsewhere, or at a resume, from its last checkpoint.
    fn session_lost(&self) -> bool {
        false
    }
}
