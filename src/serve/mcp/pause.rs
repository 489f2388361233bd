//! What a paused run waits for (its `thread.run.requires_action` event): a question
//! (`ask_user`, or an MCP server's form) or calls an `ask` rule holds for approval. For a
//! client that can elicit, it is a form and the form's answer is the session's answer; for
//! one that cannot, it is said in the tool result, with the session id `runner_resume`
//! takes.

use rmcp::model::{ElicitResult, ElicitationAction, ElicitationSchema};
use serde_json::{Value, json};

use crate::engine::events::{ActionKind, RequiredAction};
use crate::serve::redact::clean_text;
use crate::session::{Answer, Denial, SubmittedOutput};

/// Why a denial is given when the person declined the form.
const DECLINED: &str = "the person declined";

/// The form that asks the person, and its message.
pub fn form(action: &RequiredAction) -> (String, ElicitationSchema) {
    let schema = match action.kind {
        ActionKind::UserInput => json!({
            "type": "object",
            "properties": {"answer": {"type": "string", "title": "Answer", "description": action.question}},
            "required": ["answer"],
        }),
        ActionKind::ToolApproval => json!({
            "type": "object",
            "properties": {
                "approve": {"type": "boolean", "title": "Approve", "description": "Let these calls run"},
                "reason": {"type": "string", "title": "Reason", "description": "Why not (the model is told)"},
            },
            "required": ["approve"],
        }),
        ActionKind::SubmitToolOutputs => outputs_form(action),
    };
    let schema =
        serde_json::from_value(schema).expect("the pause forms are valid elicitation schemas");
    (clean_text(&message(action)), schema)
}

/// One field per external call: its output, as JSON (text that is not JSON is a string).
fn outputs_form(action: &RequiredAction) -> Value {
    let calls = action
        .submit_tool_outputs
        .iter()
        .flat_map(|s| &s.tool_calls);
    let properties: serde_json::Map<String, Value> = calls
        .map(|call| {
            let field = json!({"type": "string", "title": call.name,
                "description": format!("The output of `{}` {} (JSON)", call.name, call.arguments)});
            (call.id.clone(), field)
        })
        .collect();
    let required: Vec<&String> = properties.keys().collect();
    json!({"type": "object", "properties": properties, "required": required})
}

/// The question, or the calls to approve with their arguments and the rule that asked.
fn message(action: &RequiredAction) -> String {
    let asker = match &action.agent {
        Some(agent) => format!("{agent} asks: "),
        None => String::new(),
    };
    let mut message = format!("{asker}{}", action.question);
    for call in &action.calls {
        message.push_str(&format!(
            "\n- {} {} ({})",
            call.name, call.arguments, call.rule
        ));
    }
    message
}

/// The session's answer to the person's answer; `None` when they cancelled (the session
/// stays paused).
pub fn answer_of(action: &RequiredAction, reply: ElicitResult) -> Option<Answer> {
    let content = reply.content.unwrap_or(Value::Null);
    match (action.kind, reply.action) {
        (ActionKind::UserInput, ElicitationAction::Accept) => Some(Answer::Text(text_of(&content))),
        (ActionKind::ToolApproval, ElicitationAction::Accept) => {
            let reason = content
                .get("reason")
                .and_then(Value::as_str)
                .map(str::to_string);
            Some(decide(
                content.get("approve") == Some(&Value::Bool(true)),
                action,
                reason,
            ))
        }
        (ActionKind::SubmitToolOutputs, ElicitationAction::Accept) => {
            let fields = content.as_object().cloned().unwrap_or_default();
            let outputs = fields.into_iter().map(|(id, field)| {
                let output = match &field {
                    Value::String(text) => serde_json::from_str(text).unwrap_or(field),
                    _ => field,
                };
                SubmittedOutput::new(id, output)
            });
            Some(Answer::Outputs(outputs.collect()))
        }
        (ActionKind::ToolApproval, ElicitationAction::Decline) => {
            Some(decide(false, action, Some(DECLINED.to_string())))
        }
        // Cancelled, a question declined, or an action of a later protocol.
        _ => None,
    }
}

/// The `answer` field; a form filled otherwise (a client that fills fields of its own) is
/// given as its JSON.
fn text_of(content: &Value) -> String {
    match content.get("answer") {
        Some(Value::String(text)) => text.clone(),
        _ => content.to_string(),
    }
}

/// Every call waiting approved, or every one denied.
pub fn decide(approve: bool, action: &RequiredAction, reason: Option<String>) -> Answer {
    let ids = action.calls.iter().map(|call| call.id.clone());
    match approve {
        true => Answer::Decide {
            approve: ids.collect(),
            deny: Vec::new(),
        },
        false => Answer::Decide {
            approve: Vec::new(),
            deny: ids.map(|id| Denial::new(id, reason.clone())).collect(),
        },
    }
}

/// The tool result's text for a client that cannot elicit (or did not answer).
pub fn waiting_text(action: &RequiredAction, session_id: &str) -> String {
    let how = match action.kind {
        ActionKind::UserInput => format!(
            "call `runner_resume` with {{\"session_id\": \"{session_id}\", \"answer\": \"...\"}}"
        ),
        ActionKind::ToolApproval => format!(
            "call `runner_resume` with {{\"session_id\": \"{session_id}\", \"approve\": true}} \
             (or false, with a `reason`)"
        ),
        ActionKind::SubmitToolOutputs => format!(
            "call `runner_resume` with {{\"session_id\": \"{session_id}\", \"tool_outputs\": \
             {{\"CALL_ID\": output}}}}"
        ),
    };
    let what = match action.kind {
        ActionKind::UserInput => "an answer",
        ActionKind::ToolApproval => "approval",
        ActionKind::SubmitToolOutputs => "tool outputs",
    };
    format!(
        "The run paused: it waits for {what} (session {session_id}).\n{}\nTo continue, {how}.",
        message(action)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::events::{ExternalCall, SubmitToolOutputs};

    fn waiting_for_outputs() -> RequiredAction {
        RequiredAction {
            kind: ActionKind::SubmitToolOutputs,
            question: "submit the output of `stock` (call c1)".into(),
            id: None,
            tool_call_id: "c1".into(),
            agent: None,
            calls: Vec::new(),
            submit_tool_outputs: Some(SubmitToolOutputs {
                tool_calls: vec![ExternalCall {
                    id: "c1".into(),
                    name: "stock".into(),
                    arguments: json!({"sku": "A-1"}),
                }],
            }),
        }
    }

    /// The form for external calls is a valid elicitation form (it is built with
    /// `expect`), with a field per call, and its fields are read as JSON when they parse.
    #[test]
    fn external_calls_are_a_form_with_a_field_per_call() {
        let action = waiting_for_outputs();
        let (_, schema) = form(&action);
        let schema = serde_json::to_value(schema).unwrap();
        assert_eq!(schema["required"], json!(["c1"]));
        let reply = ElicitResult::new(ElicitationAction::Accept)
            .with_content(json!({"c1": "{\"units\": 7}"}));
        match answer_of(&action, reply) {
            Some(Answer::Outputs(outputs)) => {
                assert_eq!(outputs, [SubmittedOutput::new("c1", json!({"units": 7}))])
            }
            other => panic!("{other:?}"),
        }
    }
}
