//! Tests of the tagged transcript: round trips (proptest), parser errors, the streaming
//! writer, and golden renderings (insta snapshots under tests/snapshots/).

#[path = "transcript/errors.rs"]
mod errors;
#[path = "transcript/fixtures.rs"]
mod fixtures;
#[path = "transcript/golden.rs"]
mod golden;
#[path = "transcript/roundtrip.rs"]
mod roundtrip;
#[path = "transcript/strategies.rs"]
mod strategies;
#[path = "transcript/streaming.rs"]
mod streaming;
