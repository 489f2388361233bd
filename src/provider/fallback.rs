//! Fallbacks as a wrapper provider: a chain of models, each a whole provider (retries
//! included), tried in order.
//!
//! A call starts at the chain position the caller passes in the request
//! ([`ModelRequest::route`]); the engine keeps that position with the agent's state, so
//! the calls after a switch stay on the model that answered, and a resumed session goes on
//! where it was. Once `cooldown` has passed since the switch, a call starts at the first
//! model again. A model that fails with a retryable error ([`ProviderError::is_retryable`])
//! after its own retries hands the call to the next one; any other error (a bad request, a
//! refused key) would fail the same way on every model and ends the call, saying why it did
//! not fail over. Each move is a [`StreamDelta::Fallback`] to the sink.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::error::ProviderError;
use super::types::{ModelRequest, ModelResponse, StreamDelta};
use super::{BoxFuture, DeltaSink, Provider};

/// Where a model's calls start in its fallback chain: `index` 0 is the model itself, and
/// `since_ms` when the chain moved there (milliseconds since the Unix epoch; wall-clock
/// time, so that a resumed session counts its cooldown from the switch, not from the
/// resume).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainPosition {
    pub index: usize,
    pub since_ms: u64,
}

/// One model of a chain: the provider and how events name it (`provider/name`).
pub struct ChainModel {
    pub label: String,
    pub provider: Arc<dyn Provider>,
    /// Its context window, when known: a request it refuses as too long goes to a later
    /// model with a larger one.
    pub window: Option<u64>,
}

pub struct Fallback {
    chain: Vec<ChainModel>,
    cooldown: Duration,
}

impl Fallback {
    /// A chain: the model first, then its fallbacks in order.
    pub fn new(chain: Vec<ChainModel>, cooldown: Duration) -> Self {
        Fallback { chain, cooldown }
    }

    /// Where a call made at `now_ms` starts: the request's position, or the first model
    /// once the cooldown is over (or when the position is not in this chain).
    fn start(&self, route: Option<ChainPosition>, now_ms: u64, sink: &DeltaSink<'_>) -> usize {
        let Some(route) = route.filter(|r| r.index > 0 && r.index < self.chain.len()) else {
            return 0;
        };
        let waited = Duration::from_millis(now_ms.saturating_sub(route.since_ms));
        if waited < self.cooldown {
            return route.index;
        }
        sink(StreamDelta::Fallback {
            from: self.chain[route.index].label.clone(),
            to: self.chain[0].label.clone(),
            reason: format!(
                "the cooldown of {} is over: the first model is tried again",
                seconds(self.cooldown)
            ),
            position: ChainPosition {
                index: 0,
                since_ms: now_ms,
            },
        });
        0
    }

    /// The model a call that failed with `error` on the model at `index` goes to: the next
    /// after a retryable error; after a refusal as too long, the first later one with a
    /// larger window (the history is compacted instead when there is none).
    fn next_for(&self, index: usize, error: &ProviderError) -> Option<usize> {
        if error.is_retryable() {
            return (index + 1 < self.chain.len()).then_some(index + 1);
        }
        if !error.is_context_overflow() {
            return None;
        }
        let current = self.chain[index].window?;
        (index + 1..self.chain.len()).find(|&i| self.chain[i].window.is_some_and(|w| w > current))
    }

    async fn call(
        &self,
        req: &ModelRequest,
        sink: &DeltaSink<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        let mut index = self.start(req.route, now_ms(), sink);
        loop {
            let emitted = AtomicBool::new(false);
            let tracking = |d: StreamDelta| {
                if !matches!(d, StreamDelta::Fallback { .. } | StreamDelta::Idle) {
                    emitted.store(true, Ordering::Relaxed);
                }
                sink(d);
            };
            let error = match self.chain[index].provider.stream(req, &tracking).await {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            let Some(next_index) = self.next_for(index, &error) else {
                return match self.chain.get(index + 1) {
                    Some(next) if !error.is_context_overflow() => {
                        Err(not_failed_over(error, &next.label))
                    }
                    _ => Err(error),
                };
            };
            let next = &self.chain[next_index];
            let reason = error.to_string();
            tracing::debug!(from = %self.chain[index].label, to = %next.label, %reason, "falling back");
            let from = index;
            index = next_index;
            sink(StreamDelta::Fallback {
                from: self.chain[from].label.clone(),
                to: next.label.clone(),
                reason: reason.clone(),
                position: ChainPosition {
                    index,
                    since_ms: now_ms(),
                },
            });
            if emitted.load(Ordering::Relaxed) {
                sink(StreamDelta::Reset { attempt: 1, reason });
            }
        }
    }
}

/// The error of a model whose fallback was not tried, saying why.
fn not_failed_over(mut error: ProviderError, next: &str) -> ProviderError {
    let why = format!(
        "not passed to the fallback {next}: a {} error is not retryable, and the same request \
         would fail the same way there",
        error.kind.as_str()
    );
    error.hint = Some(match error.hint.take() {
        Some(hint) => format!("{hint}; {why}"),
        None => why,
    });
    error
}

fn seconds(duration: Duration) -> String {
    format!("{}s", duration.as_secs_f64())
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Provider for Fallback {
    fn name(&self) -> &str {
        self.chain[0].provider.name()
    }
    fn model(&self) -> &str {
        self.chain[0].provider.model()
    }
    fn schema_with_tools(&self) -> bool {
        self.chain.iter().all(|m| m.provider.schema_with_tools())
    }
    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
        sink: &'a DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(self.call(req, sink))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::scripted::{ScriptedProvider, ScriptedResponse};

    fn chain(cooldown: Duration) -> Fallback {
        let model = |name: &str| ChainModel {
            window: None,
            label: format!("scripted/{name}"),
            provider: Arc::new(ScriptedProvider::new(
                name.to_string(),
                Vec::<ScriptedResponse>::new(),
            )),
        };
        Fallback::new(vec![model("a"), model("b")], cooldown)
    }

    #[test]
    fn a_call_stays_on_the_fallback_until_the_cooldown_is_over() {
        let fallback = chain(Duration::from_secs(30));
        let at = |index, since_ms| Some(ChainPosition { index, since_ms });
        let moved = std::sync::Mutex::new(Vec::new());
        let sink = |d: StreamDelta| moved.lock().unwrap().push(d);
        assert_eq!(fallback.start(at(1, 1_000), 20_000, &sink), 1);
        assert!(moved.lock().unwrap().is_empty());
        assert_eq!(fallback.start(at(1, 1_000), 31_000, &sink), 0);
        assert!(matches!(
            moved.lock().unwrap()[0],
            StreamDelta::Fallback {
                position: ChainPosition {
                    index: 0,
                    since_ms: 31_000
                },
                ..
            }
        ));
        // A position from another chain (a longer one, before the file changed) starts over.
        assert_eq!(fallback.start(at(5, 1_000), 2_000, &sink), 0);
        assert_eq!(fallback.start(None, 2_000, &sink), 0);
    }
}
