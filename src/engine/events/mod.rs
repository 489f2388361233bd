//! One event stream per run (SPEC §4). Everything a run leaves behind (events.jsonl, the
//! transcript, progress, result.json) subscribes to it, so they can never disagree.
//! Sub-agents emit into the same bus with their own run id and `depth + 1`.

mod bus;
mod data;
mod event;
mod flush;
mod jsonl;
mod line;
mod notice;

pub use crate::engine::request_params::RequestParams;
pub use bus::{Emitter, EventBus, EventSink};
pub use data::*;
pub use event::Event;
pub use flush::FlushPoints;
pub use jsonl::JsonlSink;
pub use notice::Notice;
