//! What `runner submit` publishes: a batch's record (`runner_batches`, key `<batch id>`),
//! and one job per input on `runner.jobs.<batch id>`. A job names its batch, its line and
//! its values; the agent's files, model and budget are the batch's. Credentials are in
//! neither: a worker uses its own environment's.
//!
//! Whoever may publish on those subjects writes them, so a worker reads both through
//! [`Job::parse`] and [`BatchRecord::parse`]: every field that becomes a path or a name (the
//! batch id is a directory under the worker's `--dir`, a session id, a key) is checked as a
//! bundle's paths are, before anything is written or run.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::batch::inputs::Input;
use crate::trace_env::Carried;

/// The version of jobs and batch records.
pub const JOB_VERSION: u32 = 1;

/// One input of a batch, to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub version: u32,
    pub batch_id: String,
    /// The input's line in the inputs file.
    pub line: u64,
    /// Its `"id"`, when the line has one (as written, for an agent that declares `id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_value: Option<Value>,
    pub values: Map<String, Value>,
    /// The span the input's run is a child of (W3C Trace Context): `TRACEPARENT` (and
    /// `TRACESTATE`) of the `runner submit` that published it, given to the run's
    /// environment. Absent when it had none (and from jobs of an older `runner`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<Carried>,
}

impl Job {
    /// A job as published: refused unless every field is one a `runner submit` writes.
    pub fn parse(bytes: &[u8]) -> Result<Job, String> {
        let job: Job = serde_json::from_slice(bytes).map_err(|e| format!("not a job ({e})"))?;
        check_version(job.version)?;
        check_id(&job.batch_id).map_err(|e| format!("its batch_id {e}"))?;
        if job.line == 0 {
            return Err("its line is 0 (lines count from 1)".into());
        }
        if let Some(trace) = &job.trace
            && Carried::parse(&trace.traceparent, trace.tracestate.as_deref()).as_ref()
                != Some(trace)
        {
            return Err("its trace is not a W3C Trace Context traceparent (and tracestate)".into());
        }
        Ok(job)
    }

    pub fn of(batch_id: &str, input: &Input, trace: Option<Carried>) -> Self {
        Job {
            trace,
            version: JOB_VERSION,
            batch_id: batch_id.to_string(),
            line: input.line,
            id: input.id.clone(),
            id_value: input.id_value.clone(),
            values: input.values.clone(),
        }
    }

    pub fn input(&self) -> Input {
        Input {
            line: self.line,
            id: self.id.clone(),
            id_value: self.id_value.clone(),
            values: self.values.clone(),
        }
    }

    /// The input's session, as in a local batch: `<batch id>-<line>`.
    pub fn session_id(&self) -> String {
        format!("{}-{}", self.batch_id, self.line)
    }

    /// The message id JetStream deduplicates a second publish of the job by.
    pub fn message_id(&self) -> String {
        self.session_id()
    }
}

/// What was submitted: the agent, its files, the options every job runs with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchRecord {
    pub version: u32,
    pub batch_id: String,
    /// The agent's name.
    pub agent_name: String,
    /// The agent's files (`bundle.rs`): the SHA-256 they are stored under.
    pub bundle: String,
    /// `--model` of `runner submit`, for every job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    pub created: String,
    /// How many inputs the file had (bad lines included); `None` while `runner submit` is
    /// still publishing, or if it died before it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<u64>,
}

impl BatchRecord {
    /// The record stored under `key`: refused unless it is that batch's, and its bundle
    /// and model are ones `runner submit` writes.
    pub fn parse(bytes: &[u8], key: &str) -> Result<BatchRecord, String> {
        let record: BatchRecord =
            serde_json::from_slice(bytes).map_err(|e| format!("not a batch record ({e})"))?;
        check_version(record.version)?;
        if record.batch_id != key {
            return Err("its batch_id is not the key it is stored under".into());
        }
        let sha256 = record.bundle.len() == 64
            && record
                .bundle
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !sha256 {
            return Err("its bundle is not a SHA-256 (64 lowercase hex digits)".into());
        }
        // A project model's name resolves on the worker, through the bundle's project file.
        let named = |m: &str| crate::spec::project::ModelName::parse(m).is_some();
        if let Some(model) = record.model.as_deref().filter(|m| !named(m)) {
            crate::spec::model::ModelShorthand::parse(model)
                .map_err(|e| format!("its model: {e}"))?;
        }
        Ok(record)
    }

    /// Whether `other` submits the same agent files with the same options (a submit run
    /// again to go on).
    pub fn same_submission(&self, other: &BatchRecord) -> bool {
        (&self.agent_name, &self.bundle, &self.model, self.max_tokens)
            == (
                &other.agent_name,
                &other.bundle,
                &other.model,
                other.max_tokens,
            )
            && self.max_cost_usd == other.max_cost_usd
    }

    pub fn budget(&self) -> crate::batch::budget::Budget {
        crate::batch::budget::Budget {
            max_cost_usd: self.max_cost_usd,
            max_tokens: self.max_tokens,
        }
    }
}

fn check_version(version: u32) -> Result<(), String> {
    match version == JOB_VERSION {
        true => Ok(()),
        false => Err(format!(
            "version {version} is not supported (this worker reads version {JOB_VERSION})"
        )),
    }
}

/// A batch id is one plain path component (what `runner submit --batch-id` takes); said
/// without quoting it when it is long.
fn check_id(id: &str) -> Result<(), String> {
    match crate::batch::dir::check_batch_id(id) {
        Ok(()) => Ok(()),
        Err(_) if id.len() > crate::batch::dir::MAX_BATCH_ID_LEN => {
            Err(format!("has {} characters", id.len()))
        }
        Err(_) => Err(format!(
            "`{}` is not a batch id (ASCII letters, digits, `-` and `_`)",
            id.escape_debug()
        )),
    }
}

/// The key of a batch's spending in `runner_batches`.
pub fn spent_key(batch_id: &str) -> String {
    format!("{batch_id}.spent")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> BatchRecord {
        BatchRecord {
            version: JOB_VERSION,
            batch_id: "b".into(),
            agent_name: "a".into(),
            bundle: "sha".into(),
            model: None,
            max_cost_usd: Some(1.0),
            max_tokens: None,
            created: "2026-11-23T00:00:00Z".into(),
            inputs: None,
        }
    }

    #[test]
    fn a_job_or_record_whose_fields_would_leave_the_workers_directory_is_refused() {
        let job = |batch: &str, line: u64| {
            serde_json::to_vec(&serde_json::json!({
                "version": 1, "batch_id": batch, "line": line, "values": {}
            }))
            .unwrap()
        };
        assert!(Job::parse(&job("b-1", 1)).is_ok());
        for bad in ["/tmp/x", "../x", "a/b", "", "a.b"] {
            assert!(Job::parse(&job(bad, 1)).is_err(), "{bad}");
        }
        assert!(Job::parse(&job("b", 0)).is_err());
        let mut good = record();
        good.bundle = "a".repeat(64);
        let bytes = |r: &BatchRecord| serde_json::to_vec(r).unwrap();
        assert!(BatchRecord::parse(&bytes(&good), "b").is_ok());
        assert!(BatchRecord::parse(&bytes(&good), "other").is_err());
        let escaping = BatchRecord {
            bundle: "../../x".into(),
            ..good.clone()
        };
        assert!(BatchRecord::parse(&bytes(&escaping), "b").is_err());
        let flag = BatchRecord {
            model: Some("--nats".into()),
            ..good
        };
        assert!(BatchRecord::parse(&bytes(&flag), "b").is_err());
    }

    #[test]
    fn a_submit_goes_on_only_with_the_files_and_options_it_began_with() {
        let begun = record();
        let again = BatchRecord {
            created: "later".into(),
            inputs: Some(3),
            ..record()
        };
        assert!(begun.same_submission(&again));
        let other_files = BatchRecord {
            bundle: "other".into(),
            ..record()
        };
        assert!(!begun.same_submission(&other_files));
        let other_budget = BatchRecord {
            max_cost_usd: Some(2.0),
            ..record()
        };
        assert!(!begun.same_submission(&other_budget));
        let other_model = BatchRecord {
            model: Some("openai/gpt-x".into()),
            ..record()
        };
        assert!(!begun.same_submission(&other_model));
    }
}
