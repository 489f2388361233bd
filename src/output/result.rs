//! The result envelope (SPEC §3.2): printed with `--output json` and written to
//! `result.json` in the run directory.

use serde::Serialize;
use serde_json::Value;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Completed,
    Failed,
    Invalid,
    LimitReached,
    InputRequired,
    Interrupted,
}

impl Status {
    pub fn exit_code(self) -> u8 {
        match self {
            Status::Completed => 0,
            Status::Failed => 1,
            Status::Invalid => 2,
            Status::LimitReached => 3,
            Status::InputRequired => 4,
            Status::Interrupted => 130,
        }
    }
}

/// Token usage and cost of the whole run tree.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ResultUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    pub cost_usd: Option<f64>,
}

/// `{"code": ..., "message": ...}` of a failed or invalid run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResultError {
    pub code: String,
    pub message: String,
}

/// The result envelope.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    pub usage: ResultUsage,
    pub duration_ms: u64,
    pub limit: Option<String>,
    pub error: Option<ResultError>,
    pub transcript: Option<String>,
    pub events: Option<String>,
    /// Things that went wrong without ending the run (a checkpoint that could not be saved).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl RunResult {
    /// A result for a run that never started (bad command line, invalid file, missing key).
    pub fn invalid(
        agent: &str,
        run_id: &str,
        session_id: &str,
        code: &str,
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
        code: &str,
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
            usage: ResultUsage::default(),
            duration_ms: 0,
            limit: None,
            error: Some(ResultError {
                code: code.to_string(),
                message,
            }),
            transcript: None,
            events: None,
            warnings: Vec::new(),
        }
    }
}
