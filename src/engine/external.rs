//! Client-side tools (`- external:` in the agent file): the model sees a name, a
//! description and a parameter schema, and the program running the agent runs the call.
//! A call with valid arguments does not run here: the run pauses with a `requires_action`
//! of type `submit_tool_outputs`, and the output submitted on resume becomes its result.

use serde_json::Value;

use crate::tools::{ArgsValidator, ToolOutput};

/// The outcome of a call of an external tool, as the turn sees it.
pub enum ExternalCall {
    /// The arguments do not fit the schema: this error is the call's result, as for any tool.
    Invalid(ToolOutput),
    /// The call waits for its output.
    Waiting,
}

/// A tool declared by its interface only.
pub struct ExternalTool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub validator: ArgsValidator,
}

impl ExternalTool {
    /// Checks a call's arguments; a valid call waits for the client.
    pub fn called(&self, arguments: &Value) -> ExternalCall {
        match self.validator.check(arguments) {
            Ok(()) => ExternalCall::Waiting,
            Err(error) => ExternalCall::Invalid(error),
        }
    }
}

/// An output the program running the agent submitted for one call: any JSON value. A
/// string is the text the model reads; anything else is read as its JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct SubmittedOutput {
    pub call_id: String,
    pub output: Value,
}

impl SubmittedOutput {
    pub fn new(call_id: impl Into<String>, output: Value) -> Self {
        SubmittedOutput {
            call_id: call_id.into(),
            output,
        }
    }

    /// The call's result.
    pub fn result(&self) -> ToolOutput {
        ToolOutput::ok(self.output.clone())
    }
}
