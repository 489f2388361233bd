//! A run's result as the task's last updates: `completed` with the answer as an artifact
//! (text, or a data part with the structured value when the agent declares
//! `output.schema`); `input-required` with the question, or the calls awaiting approval and
//! how to answer; `failed` with the run's error code and message (a limit, an error, a run
//! that never started); `canceled` for an interrupted run.

use serde_json::{Value, json};

use super::follow::status;
use super::task::Task;
use crate::a2a::{Artifact, Part, TaskState};
use crate::engine::events::{ActionKind, RequiredAction};
use crate::output::result::{RunResult, Status};

/// Gives the task the updates of how its run ended (`None`: it never said).
pub fn settle(task: &Task, result: Option<&RunResult>, waits_for: Option<RequiredAction>) {
    let Some(result) = result else {
        task.run_ended(None);
        let text = "internal: the run did not end".to_string();
        task.status(status(task, TaskState::Failed, vec![Part::text(text)]));
        return;
    };
    match (result.status, waits_for) {
        (Status::Completed, _) => {
            task.run_ended(None);
            task.artifact(answer(task, result));
            task.status(status(task, TaskState::Completed, Vec::new()));
        }
        (Status::InputRequired, Some(action)) => {
            let parts = vec![Part::text(question(&action)), Part::data(pending(&action))];
            task.run_ended(Some(action));
            task.status(status(task, TaskState::InputRequired, parts));
        }
        (Status::Interrupted, _) => {
            task.run_ended(None);
            task.status(status(task, TaskState::Canceled, error_parts(result)));
        }
        _ => {
            task.run_ended(None);
            task.status(status(task, TaskState::Failed, error_parts(result)));
        }
    }
}

/// The answer: the structured value when the agent has an output schema, else the text.
fn answer(task: &Task, result: &RunResult) -> Artifact {
    let part = match (&result.structured, task.agent.structured) {
        (Some(value), true) => Part::data(value.clone()),
        _ => Part::text(result.output.clone().unwrap_or_default()),
    };
    Artifact {
        artifact_id: format!("{}-answer", result.run_id),
        name: Some("answer".into()),
        description: Some(format!("The answer of {}", task.agent.name)),
        parts: vec![part],
        metadata: None,
        extensions: Vec::new(),
    }
}

/// `CODE: MESSAGE`, and the same as data with the run and session.
fn error_parts(result: &RunResult) -> Vec<Part> {
    let (code, message) = match &result.error {
        Some(error) => (error.code.name().into_owned(), error.message.clone()),
        None => (result.status.name().to_string(), String::new()),
    };
    let data = json!({
        "status": result.status.name(),
        "code": code,
        "message": message,
        "runId": result.run_id,
        "sessionId": result.session_id,
    });
    vec![Part::text(format!("{code}: {message}")), Part::data(data)]
}

/// The question, or the calls awaiting approval and how to answer.
fn question(action: &RequiredAction) -> String {
    let asker = match &action.agent {
        Some(agent) => format!("{agent} asks: "),
        None => String::new(),
    };
    let mut text = format!("{asker}{}", action.question);
    for call in &action.calls {
        text.push_str(&format!(
            "\n- {} {} ({})",
            call.name, call.arguments, call.rule
        ));
    }
    if let Some(submit) = &action.submit_tool_outputs {
        for call in &submit.tool_calls {
            text.push_str(&format!(
                "\n- {} {} (call {})",
                call.name, call.arguments, call.id
            ));
        }
    }
    let how = match action.kind {
        ActionKind::SubmitToolOutputs => {
            "Answer with a message on this task: a data part {\"tool_outputs\": {\"CALL_ID\": \
             output}} with each call's output (any JSON)."
        }
        ActionKind::UserInput => "Answer with a message on this task: its text is the answer.",
        ActionKind::ToolApproval => {
            "Answer with a message on this task: a data part {\"approve\": true} lets these \
             calls run, {\"approve\": false, \"reason\": \"...\"} denies them (the model is \
             told the reason); or the text `approve` or `deny`."
        }
    };
    format!("{text}\n{how}")
}

/// What the run waits for, as data: `runner resume`'s vocabulary.
fn pending(action: &RequiredAction) -> Value {
    json!({"waitsFor": action})
}
