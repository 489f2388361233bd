//! What keeps other processes off a session while one runs it: the file store's lock, or
//! the NATS store's lease.

use super::lease::Lease;
use super::lock::SessionLock;

pub enum SessionHold {
    Lock(SessionLock),
    Lease(Box<Lease>),
}

impl SessionHold {
    /// Whether the session was taken from this process (a lease that expired unrenewed).
    pub fn is_lost(&self) -> bool {
        match self {
            SessionHold::Lock(_) => false,
            SessionHold::Lease(lease) => lease.is_lost(),
        }
    }
}
