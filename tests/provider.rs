//! Integration tests of the provider layer: every test goes through real HTTP to the
//! mock model server on 127.0.0.1 (no internet), or through the scripted and replay
//! providers which need no network at all
//! (as do the exact request bodies in `bodies`).

#[path = "provider/bodies.rs"]
mod bodies;
#[path = "provider/common.rs"]
mod common;
#[path = "provider/errors.rs"]
mod errors;
#[path = "provider/mock.rs"]
mod mock;
#[path = "provider/record_replay.rs"]
mod record_replay;
#[path = "provider/requests.rs"]
mod requests;
#[path = "provider/scripted.rs"]
mod scripted;
#[path = "provider/wire_anthropic.rs"]
mod wire_anthropic;
#[path = "provider/wire_openai.rs"]
mod wire_openai;
#[path = "provider/wire_responses.rs"]
mod wire_responses;
