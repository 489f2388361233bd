//! The A2A client: how `runner` calls a remote A2A agent (a `tools:` entry with `a2a:`),
//! over the JSON-RPC binding with the protocol's types of [`crate::a2a`], and how its
//! exchanges are recorded into and replayed from a cassette. The engine sees it through
//! its `RemoteAgent` port, plugged in by the compile layer.

pub mod cassette;
pub mod client;
