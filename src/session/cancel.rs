//! A run's own stop signal. Each run has one (no process-wide flag): the front end that
//! hosts the run flips it — the CLI on SIGINT/SIGTERM, a server when its client asks — and
//! the engine stops at its next await, the run ending `interrupted`, checkpointed.

use std::sync::Arc;

use tokio::sync::watch;

/// Cancels one run (or one chat); clones cancel the same run.
#[derive(Debug, Clone)]
pub struct Cancel {
    sender: Arc<watch::Sender<bool>>,
}

impl Default for Cancel {
    fn default() -> Self {
        Cancel::new()
    }
}

impl Cancel {
    pub fn new() -> Self {
        Cancel {
            sender: Arc::new(watch::Sender::new(false)),
        }
    }

    /// Asks the run to stop; it ends `interrupted`, its session saved, resumable.
    pub fn cancel(&self) {
        self.sender.send_replace(true);
    }

    pub fn is_cancelled(&self) -> bool {
        *self.sender.borrow()
    }

    /// What the engine, the MCP servers and the hooks watch.
    pub(crate) fn receiver(&self) -> watch::Receiver<bool> {
        self.sender.subscribe()
    }
}
