//! Tests of the tagged transcript: round trips (proptest), parser errors, the streaming
//! writer, golden renderings (insta snapshots under tests/snapshots/), and the Markdown
//! rendering read back by a CommonMark parser; `runner render` bounded whatever the shape.

mod support;

#[path = "transcript/bounds.rs"]
mod bounds;
#[path = "transcript/errors.rs"]
mod errors;
#[path = "transcript/fixtures.rs"]
mod fixtures;
#[path = "transcript/golden.rs"]
mod golden;
#[path = "transcript/markdown.rs"]
mod markdown;
#[path = "transcript/reference.rs"]
mod reference;
#[path = "transcript/roundtrip.rs"]
mod roundtrip;
#[path = "transcript/strategies.rs"]
mod strategies;
#[path = "transcript/streaming.rs"]
mod streaming;
