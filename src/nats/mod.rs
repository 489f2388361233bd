//! Many machines: NATS JetStream carries the jobs of a batch (a work-queue stream), the
//! sessions they run (a key-value bucket: [`NatsCheckpointStore`], held by a
//! [`Lease`]), the agent files they run (content-addressed [`bundle`]s) and their
//! results. `runner submit` publishes a batch, `runner worker` runs it, `runner batch
//! status|results` follows it (`docs/scale.md`).

pub mod blocking;
pub mod buckets;
pub mod bundle;
pub mod connect;
pub mod job;
pub mod kv;
mod lease;
pub mod relay;
pub mod results;
pub mod session_kv;
mod session_store;
mod sessions_at;
pub mod submit;
pub mod worker;

pub use blocking::Blocking;
pub use connect::{NatsError, connect};
pub use lease::Lease;
pub use session_store::NatsCheckpointStore;
pub use sessions_at::SessionsAt;
