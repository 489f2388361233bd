//! The text tool protocol (`tool_protocol: xml`, SPEC §7) for models without native tool
//! calling: a system-prompt section describing the tools, a streaming parser for the XML
//! the model writes, coercion of parameter values by the tools' schemas, and the messages
//! that carry results and format errors back. `docs/xml-protocol.md` describes it.

mod coerce;
mod entities;
mod parser;
mod prompt;

pub use coerce::coerce_params;
pub use entities::escape;
pub use parser::{Action, COMPLETION, FormatError, ParseOutcome, XmlStreamParser, parse_reply};
pub use prompt::{ToolDescription, protocol_section};

/// A tool's result as the user message the model reads next.
pub fn tool_result_message(tool_name: &str, content: &str, is_error: bool) -> String {
    let content = if is_error && !content.starts_with("Error:") {
        format!("Error: {content}")
    } else {
        content.to_string()
    };
    format!(
        "<tool_result tool_name=\"{}\">{}</tool_result>",
        escape(tool_name),
        escape(&content)
    )
}

/// What the model is told when its reply had no valid action.
pub fn no_action_feedback(error: Option<&FormatError>) -> String {
    let problem = error.map_or_else(
        || "your reply had no tool call and no <attempt_completion>".to_string(),
        |e| e.message.clone(),
    );
    format!(
        "Error: {problem}. Reply with exactly one action: one tool call written as XML, or \
         <attempt_completion><result>...</result></attempt_completion> when you are done."
    )
}
