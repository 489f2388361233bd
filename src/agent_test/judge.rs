//! `judge:` — a model grades the run's answer against a rubric and answers
//! `{"pass": bool, "reason": "..."}`.
//!
//! The judge is one model call through the provider layer, built like any agent's model,
//! so its exchange goes into the case's cassette (`--record`) and is answered from it on
//! replay, with no network and no key, like the agent's own calls.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use super::spec::{Case, JudgeCheck};
use crate::compile::provider_config;
use crate::provider::{
    BuildOptions, CassetteRecorder, Message, ModelRequest, ReplayStore, ResponseFormat,
    build_provider_with,
};
use crate::spec::model::ModelRef;

/// The judge's instructions. Part of every judge request, so of every recorded one:
/// changing it makes recorded judges miss.
const SYSTEM: &str = "You grade the answer of an AI agent against a rubric. Decide whether the answer meets every point of the rubric. Reply with only a JSON object: {\"pass\": true or false, \"reason\": \"one sentence saying why\"}.";

/// Where the judge's model call is answered from.
#[derive(Clone)]
pub enum JudgeSource {
    /// The model itself (live and scripted cases, and scripted judges).
    Live,
    /// The case's cassette.
    Replay(Arc<ReplayStore>),
    /// The model, with the exchange appended to this recorder.
    Record(Arc<CassetteRecorder>),
}

/// A judge's verdict as the model writes it.
#[derive(Debug, Deserialize)]
struct Verdict {
    pass: bool,
    #[serde(default)]
    reason: String,
}

/// `Ok` when the judge passes the answer; else its reason (or why there is no verdict).
pub fn grade(
    check: &JudgeCheck,
    default_model: Option<&ModelRef>,
    source: &JudgeSource,
    case: &Case,
    answer: &str,
) -> Result<(), String> {
    let model = check
        .model
        .as_ref()
        .or(default_model)
        .ok_or("the judge has no model")?;
    let config = provider_config(model).map_err(|e| format!("judge: {e}"))?;
    let mut build = BuildOptions::default();
    match source {
        JudgeSource::Live => {}
        JudgeSource::Replay(store) => build.replay = Some(store.clone()),
        JudgeSource::Record(recorder) => build.record = Some(recorder.clone()),
    }
    let provider = build_provider_with(&config, &build, &|name| std::env::var(name).ok())
        .map_err(|e| format!("judge: {e}"))?;
    let request = request(check, case, answer);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("judge: cannot start a runtime: {e}"))?;
    let response = runtime
        .block_on(provider.complete(&request))
        .map_err(|e| format!("judge: {e}"))?;
    let verdict = parse_verdict(&response.text).ok_or_else(|| {
        format!(
            "the judge's reply is not a verdict ({{\"pass\": bool, \"reason\": ...}}): {:?}",
            crate::provider::shorten(&response.text, 200)
        )
    })?;
    match verdict.pass {
        true => Ok(()),
        false => Err(format!("the judge failed the answer: {}", verdict.reason)),
    }
}

/// The rubric, the task the agent was given, and its answer.
fn request(check: &JudgeCheck, case: &Case, answer: &str) -> ModelRequest {
    let mut task = String::new();
    if let Some(input) = &case.input {
        task.push_str(input);
    }
    if !case.inputs.is_empty() {
        let values = Value::Object(case.inputs.clone());
        task.push_str(&format!("\nInput values: {values}"));
    }
    let task = match task.trim() {
        "" => "(the agent's own prompt)".to_string(),
        text => text.to_string(),
    };
    let prompt = format!(
        "Rubric:\n{}\n\nThe agent's task:\n{task}\n\nThe agent's answer:\n{answer}",
        check.rubric.trim()
    );
    ModelRequest {
        system: Some(SYSTEM.into()),
        messages: vec![Message::user(prompt)].into(),
        response_format: Some(ResponseFormat {
            name: "verdict".into(),
            schema: json!({
                "type": "object",
                "properties": {"pass": {"type": "boolean"}, "reason": {"type": "string"}},
                "required": ["pass", "reason"],
                "additionalProperties": false
            }),
            strict: true,
        }),
        ..ModelRequest::default()
    }
}

/// The verdict in a reply: bare JSON, or the outermost `{...}` of a fenced or chatty one.
fn parse_verdict(text: &str) -> Option<Verdict> {
    if let Ok(verdict) = serde_json::from_str(text.trim()) {
        return Some(verdict);
    }
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    serde_json::from_str(text.get(start..=end)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bare_fenced_and_chatty_verdicts() {
        assert!(
            parse_verdict(r#"{"pass": true, "reason": "ok"}"#)
                .unwrap()
                .pass
        );
        let fenced = "```json\n{\"pass\": false, \"reason\": \"no\"}\n```";
        assert!(!parse_verdict(fenced).unwrap().pass);
        assert!(
            parse_verdict("Sure! {\"pass\": true} Hope that helps.")
                .unwrap()
                .pass
        );
        assert!(parse_verdict("yes").is_none());
    }
}
