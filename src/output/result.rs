//! The result envelope (SPEC §3.2): printed with `--output json` and written to
//! `result.json` in the run directory.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::events::{Event, EventData, EventSink, RunCreated};
use crate::engine::outcome::{RunStatus, RunTotals};
use crate::engine::{ErrorCode, Limit};
use crate::sync::lock;

/// How a run ended: the engine's status (`invalid` for a run that never started).
pub use crate::engine::outcome::RunStatus as Status;

/// Token usage and cost of the whole run tree.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    pub cost_usd: Option<f64>,
}

/// `{"code": ..., "message": ...}` of a failed or invalid run: the engine's run error.
pub use crate::engine::outcome::RunError as ResultError;

/// The result envelope (read back by `runner runs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub version: u32,
    pub status: Status,
    pub exit_code: u8,
    pub agent: String,
    pub run_id: String,
    pub session_id: String,
    pub output: Option<String>,
    pub structured: Option<Value>,
    pub steps: u64,
    pub llm_calls: u64,
    pub tool_calls: u64,
    /// Model calls tried again after an error worth retrying (sub-agents' included).
    #[serde(default)]
    pub retries: u64,
    /// Model calls that moved to another model of a fallback chain (sub-agents' included).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fallbacks: u64,
    /// Calls per model, as the server named the model that answered (sub-agents' and
    /// middleware's calls included): more than one when a fallback answered.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, u64>,
    pub usage: ResultUsage,
    pub duration_ms: u64,
    pub limit: Option<Limit>,
    pub error: Option<ResultError>,
    pub transcript: Option<String>,
    pub events: Option<String>,
    /// Things that went wrong without ending the run (a checkpoint that could not be saved).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl RunResult {
    /// A result for a run that never started (bad command line, invalid file, missing key).
    pub fn invalid(
        agent: &str,
        run_id: &str,
        session_id: &str,
        code: ErrorCode,
        message: String,
    ) -> Self {
        Self::not_started(Status::Invalid, agent, (run_id, session_id), code, message)
    }

    /// A result for a run that ended before its first step: invalid, or failed or
    /// interrupted while its MCP servers were starting.
    pub fn not_started(
        status: Status,
        agent: &str,
        (run_id, session_id): (&str, &str),
        code: ErrorCode,
        message: String,
    ) -> Self {
        RunResult {
            version: 1,
            status,
            exit_code: status.exit_code(),
            agent: agent.to_string(),
            run_id: run_id.to_string(),
            session_id: session_id.to_string(),
            output: None,
            structured: None,
            steps: 0,
            llm_calls: 0,
            tool_calls: 0,
            retries: 0,
            fallbacks: 0,
            models: BTreeMap::new(),
            usage: ResultUsage::default(),
            duration_ms: 0,
            limit: None,
            error: Some(ResultError { code, message }),
            transcript: None,
            events: None,
            warnings: Vec::new(),
        }
    }
}

/// The result envelope as a subscriber: folds each root run's events (created, then
/// completed or failed with the run's totals) into its result, so `result.json` and
/// `--output json` can never disagree with the stream. Sub-agents' events are not the
/// root's result and are skipped; a new root run (the next chat turn) starts a new fold.
#[derive(Default)]
pub struct ResultFold {
    current: Mutex<Option<(RunResult, Instant)>>,
}

impl ResultFold {
    /// The result of the last root run, once it has ended.
    pub fn result(&self) -> Option<RunResult> {
        let current = lock(&self.current);
        current.as_ref().map(|(result, _)| result.clone())
    }

    fn started(event: &Event, created: &RunCreated) -> RunResult {
        let session = created.session_id.as_deref().unwrap_or(&event.thread_id);
        // Until its terminal event, a run counts as one that did not end.
        RunResult::not_started(
            Status::Interrupted,
            &event.agent,
            (&event.run_id, session),
            ErrorCode::Internal,
            "the run did not end".into(),
        )
    }

    fn ended(result: &mut RunResult, status: RunStatus, totals: &RunTotals, warnings: &[String]) {
        result.steps = totals.steps;
        result.llm_calls = totals.llm_calls;
        result.tool_calls = totals.tool_calls;
        result.usage = ResultUsage {
            input_tokens: totals.usage.input_tokens,
            output_tokens: totals.usage.output_tokens,
            total_tokens: totals.usage.total_tokens,
            cost_usd: totals.cost_usd,
        };
        result.warnings = warnings.to_vec();
        result.status = status;
        result.exit_code = result.status.exit_code();
    }
}

impl EventSink for ResultFold {
    fn emit(&self, event: &Event) {
        let mut current = lock(&self.current);
        // Retries, fallbacks and the models that answered count at every depth.
        match (&event.data, current.as_mut()) {
            (EventData::LlmRetry(_), Some((result, _))) => {
                result.retries += 1;
                return;
            }
            (EventData::LlmFallback(_), Some((result, _))) => {
                result.fallbacks += 1;
                return;
            }
            (EventData::LlmUsage(usage), Some((result, _))) => {
                *result.models.entry(usage.model.clone()).or_default() += 1;
                return;
            }
            _ => {}
        }
        if event.depth != 0 {
            return;
        }
        if let EventData::RunCreated(created) = &event.data {
            *current = Some((Self::started(event, created), Instant::now()));
            return;
        }
        let Some((result, started)) = current.as_mut() else {
            return;
        };
        match &event.data {
            EventData::RunCompleted(completed) => {
                Self::ended(
                    result,
                    completed.status,
                    &completed.totals,
                    &completed.warnings,
                );
                result.output = completed.output().map(String::from);
                result.structured = completed.structured.clone();
                result.error = None;
            }
            EventData::RunFailed(failed) => {
                Self::ended(result, failed.status, &failed.totals, &failed.warnings);
                result.limit = failed.error.details.limit;
                result.error = Some(ResultError {
                    code: failed.error.code,
                    message: failed.error.message.clone(),
                });
            }
            _ => return,
        }
        result.duration_ms = started.elapsed().as_millis() as u64;
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::engine::RunStatus;
    use crate::engine::events::Phase;

    /// The events spell a run's phase as they always have: `queued`, `in_progress`, or the
    /// status it ended with.
    #[test]
    fn a_phase_is_spelt_as_it_was() {
        for status in RunStatus::ALL {
            let name = json!(status.name());
            assert_eq!(serde_json::to_value(Phase::from(status)).unwrap(), name);
            assert_eq!(
                serde_json::from_value::<Phase>(name).unwrap(),
                Phase::Ended(status)
            );
        }
        assert_eq!(
            serde_json::to_value(Phase::InProgress).unwrap(),
            json!("in_progress")
        );
        assert_eq!(
            serde_json::from_value::<Phase>(json!("queued")).unwrap(),
            Phase::Queued
        );
    }
}
