//! A worker's runs reach the session store through the worker: each child is given one end
//! of a socket pair (its number in `--sessions-fd`), and the worker carries its calls over
//! the worker's own NATS connection. A child then opens no connection of its
//! own (a handshake and two stream lookups per job, on the server and in the child), and
//! it can reach only its own session: the worker refuses keys of any other, and writes
//! while it does not hold the session's lease.
//!
//! The worker takes and renews the lease for its child, and lets go of it when the child's
//! end closes: a child killed frees its session at once, and a worker killed stops
//! renewing (its children die with it), so the lease expires as before.

mod client;
mod server;
mod wire;

pub use client::RelayedKv;
pub use server::Relayed;
