//! The tools' JSON of a provider's last request, kept for the next.
//!
//! An agent offers the same tools at every call, as one shared list
//! ([`ModelRequest::tools`](super::types::ModelRequest::tools)), and serialising every
//! tool's schema again was most of what a step of an agent with many tools spent. The JSON
//! is kept with the list it was made from, and goes into the body as a shared piece
//! (`request_body.rs`) while the requests offer that same list.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde::Serialize;

use super::request_body::BodyWriter;
use super::types::ToolSpec;
use crate::sync::lock;

#[derive(Debug, Default)]
pub(crate) struct ToolsCache(Mutex<Option<(Arc<[ToolSpec]>, Bytes)>>);

impl ToolsCache {
    /// Writes `wire`, the wire's form of `tools`: the last call's bytes when it offered
    /// the same list. The list is kept with them, so its address cannot be another's.
    pub fn write(
        &self,
        tools: &Arc<[ToolSpec]>,
        wire: &impl Serialize,
        out: &mut BodyWriter,
    ) -> serde_json::Result<()> {
        let mut kept = lock(&self.0);
        let json = match &*kept {
            Some((made_from, json)) if Arc::ptr_eq(made_from, tools) => json.clone(),
            _ => {
                let json = Bytes::from(serde_json::to_vec(wire)?);
                *kept = Some((tools.clone(), json.clone()));
                json
            }
        };
        out.share(json);
        Ok(())
    }
}
