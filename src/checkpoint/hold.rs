//! What keeps other processes off a session while one runs it: the file store's lock, or a
//! hold kept elsewhere (the NATS store's lease, or that lease taken by the worker that
//! started this run: `nats::Lease`, `nats::relay::RelayedHold`).

use super::lock::SessionLock;

pub enum SessionHold {
    Lock(SessionLock),
    Remote(Box<dyn RemoteHold>),
}

/// A hold the checkpoint store does not keep itself.
pub trait RemoteHold: Send + Sync {
    /// Whether the session was taken from this process (a lease that expired unrenewed).
    fn is_lost(&self) -> bool;
}

impl SessionHold {
    /// Whether the session was taken from this process (a lease that expired unrenewed).
    /// A relayed hold is never found lost here: the worker refuses the writes instead.
    pub fn is_lost(&self) -> bool {
        match self {
            SessionHold::Lock(_) => false,
            SessionHold::Remote(hold) => hold.is_lost(),
        }
    }
}
