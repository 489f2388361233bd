//! A form a tool's service needs a person to fill in before the tool can finish (an MCP
//! server's `elicitation/create`), when nobody is there to fill it in: the tool says so
//! through its [`ToolContext`](super::ToolContext), the run pauses on the form like
//! `ask_user` pauses on a question, and `runner resume --answer` makes the call again with
//! the answer ready for the form ([`FormAnswer`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::AnswerSource;

/// The form, as the service sent it and as the person is asked it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormRequest {
    /// Who asks: the MCP server's label.
    pub server: String,
    /// The service's message, which also keys an answer to it.
    pub message: String,
    /// The JSON Schema of the fields.
    pub schema: Value,
    /// The question as the person reads it (the message and the fields).
    pub question: String,
}

/// The answer a resume brings to the form its session paused on: given to the form with
/// the same message when the call is made again.
pub struct FormAnswer {
    pub message: String,
    pub answer: String,
}

impl AnswerSource for FormAnswer {
    fn answer(&self, _question: &str, id: Option<&str>) -> Option<String> {
        (id == Some(self.message.as_str())).then(|| self.answer.clone())
    }
}
