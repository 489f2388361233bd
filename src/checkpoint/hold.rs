//! What keeps other processes off a session while one runs it: the file store's lock, the
//! NATS store's lease, or that lease taken by the worker that started this run.

use super::lease::Lease;
use super::lock::SessionLock;
use crate::nats::relay::RelayedHold;

pub enum SessionHold {
    Lock(SessionLock),
    Lease(Box<Lease>),
    Relayed(RelayedHold),
}

impl SessionHold {
    /// Whether the session was taken from this process (a lease that expired unrenewed).
    /// A relayed hold is never found lost here: the worker refuses the writes instead.
    pub fn is_lost(&self) -> bool {
        match self {
            SessionHold::Lock(_) | SessionHold::Relayed(_) => false,
            SessionHold::Lease(lease) => lease.is_lost(),
        }
    }
}
