//! What a checkpoint keeps for a resume, in its `pending`: the inputs and the input text
//! (so a resume renders the same prompts), the definition the session runs under and every
//! agent file of its tree (a resume refuses a tree that gives any agent more:
//! `spec::widening`), the model `--model` put in the file's place (a resume goes on with
//! it), the engine's pending work, and the span of the session's first run that exported
//! spans (a resumed run's span links to it).
//!
//! The format is the checkpoint's: it is versioned with the checkpoint's `version` (1).
//! Fields a checkpoint of an older `runner` lacks (`definition`, `tree`, `model`, `trace`) are
//! `None`; a field that is there but unreadable is an error naming the session and the
//! field — never silently dropped (a lost `engine` would run calls in flight again).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::checkpoint::Checkpoint;
use crate::engine::pending::Pending;
use crate::spec::AgentSpec;
use crate::spec::model::ModelRef;
use crate::spec::tree::KeptAgents;
use crate::trace_env::Carried;

/// A checkpoint's resume data. Serialized in this field order, as checkpoints have it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ResumeData {
    #[serde(default)]
    pub inputs: Map<String, Value>,
    #[serde(default)]
    pub input_text: String,
    /// `None` for a checkpoint written before definitions were kept.
    #[serde(default)]
    pub definition: Option<AgentSpec>,
    /// The engine's pending work: calls in flight, a question, calls awaiting approval.
    #[serde(default)]
    pub engine: Option<Pending>,
    /// The model `--model` chose when the session started, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
    /// Every agent file of the tree; `None` for a checkpoint written before trees were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<KeptAgents>,
    /// The span of the session's first run that exported OpenTelemetry spans (its
    /// `invoke_agent`), which the spans of its later runs link to; `None` before one did,
    /// and for a checkpoint written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<Carried>,
}

/// A checkpoint whose resume data cannot be read.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "session `{session}`: its checkpoint's resume data is unreadable: field `{field}`: {problem}"
)]
pub struct UnreadableResumeData {
    pub session: String,
    /// The field of the checkpoint's `pending` (`pending` itself when it is no mapping).
    pub field: &'static str,
    pub problem: String,
}

impl ResumeData {
    /// The resume data of `checkpoint`, of session `session`.
    pub fn read(session: &str, checkpoint: &Checkpoint) -> Result<Self, UnreadableResumeData> {
        let unreadable = |field: &'static str, problem: String| UnreadableResumeData {
            session: session.to_string(),
            field,
            problem,
        };
        let fields = match &checkpoint.pending {
            None | Some(Value::Null) => return Ok(ResumeData::default()),
            Some(Value::Object(fields)) => fields,
            Some(other) => {
                return Err(unreadable(
                    "pending",
                    format!("a mapping was expected, not {}", kind(other)),
                ));
            }
        };
        let field = |name: &'static str| {
            let value = fields.get(name).filter(|value| !value.is_null()).cloned();
            Field { name, value }
        };
        let read = || -> Result<ResumeData, (&'static str, String)> {
            Ok(ResumeData {
                inputs: field("inputs").decode()?,
                input_text: field("input_text").decode()?,
                definition: field("definition").decode()?,
                engine: field("engine").decode()?,
                model: field("model").decode()?,
                tree: field("tree").decode()?,
                trace: field("trace").decode()?,
            })
        };
        read().map_err(|(field, problem)| unreadable(field, problem))
    }

    /// As a checkpoint's `pending` keeps it.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// One field of the resume data, as the checkpoint has it.
struct Field {
    name: &'static str,
    value: Option<Value>,
}

impl Field {
    /// The value as `T`; an absent (or `null`) field is `T`'s default.
    fn decode<T: DeserializeOwned + Default>(self) -> Result<T, (&'static str, String)> {
        match self.value {
            None => Ok(T::default()),
            Some(value) => serde_json::from_value(value).map_err(|e| (self.name, e.to_string())),
        }
    }
}

/// What kind of JSON value `value` is, for a message.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::checkpoint::SessionStatus;

    fn checkpoint(pending: Option<Value>) -> Checkpoint {
        Checkpoint {
            version: 1,
            session_id: "s1".into(),
            checkpoint_id: "c1".into(),
            timestamp: "2026-01-01T00:00:00.000Z".into(),
            step: 1,
            agent: "a".into(),
            status: SessionStatus::Running,
            state: json!({}),
            pending,
            journal: None,
        }
    }

    #[test]
    fn it_is_written_as_checkpoints_have_always_kept_it() {
        let data = ResumeData {
            inputs: Map::from_iter([("x".to_string(), json!(1))]),
            input_text: "hi".into(),
            ..ResumeData::default()
        };
        assert_eq!(
            data.to_value().to_string(),
            r#"{"inputs":{"x":1},"input_text":"hi","definition":null,"engine":null}"#
        );
    }

    #[test]
    fn fields_an_older_runner_did_not_keep_are_none_and_a_broken_one_is_named() {
        let old = checkpoint(Some(
            json!({"inputs": {"x": 1}, "input_text": "", "engine": null}),
        ));
        let read = ResumeData::read("s1", &old).unwrap();
        assert_eq!(read.inputs["x"], 1);
        assert!(read.definition.is_none() && read.tree.is_none() && read.model.is_none());
        assert!(read.trace.is_none());
        assert!(ResumeData::read("s1", &checkpoint(None)).is_ok());

        let broken = checkpoint(Some(json!({"inputs": [1, 2]})));
        let error = ResumeData::read("s1", &broken).unwrap_err();
        assert_eq!(error.field, "inputs");
        assert!(error.to_string().starts_with("session `s1`: "), "{error}");
        let not_a_mapping = checkpoint(Some(json!("text")));
        assert_eq!(
            ResumeData::read("s1", &not_a_mapping).unwrap_err().field,
            "pending"
        );
    }
}
