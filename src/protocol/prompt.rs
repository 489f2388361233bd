//! The system-prompt section that teaches a model the protocol and lists the tools.

use std::fmt::Write;

use serde_json::Value;

/// A tool as the prompt describes it.
#[derive(Debug, Clone)]
pub struct ToolDescription {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// The protocol rules and every tool with its parameters (from its JSON Schema).
pub fn protocol_section(tools: &[ToolDescription]) -> String {
    let mut out = String::from(
        "# Tools\n\
         You call tools by writing XML in your reply. Rules:\n\
         - Exactly one action per reply: either one tool call or <attempt_completion>. Stop writing after it.\n\
         - Put your reasoning first, in <thinking>...</thinking>.\n\
         - A tool call is the tool's name as the tag, with each parameter as a nested tag:\n  \
           <read_file>\n  <path>src/main.rs</path>\n  </read_file>\n\
         - Parameter values are text: write < as &lt;, > as &gt; and & as &amp; (or wrap the value in <![CDATA[...]]>). \
           Give arrays and objects as JSON inside the tag.\n\
         - When the task is done, answer with <attempt_completion><result>your final answer</result></attempt_completion>.\n\
         - Each tool's result comes back in the next message as <tool_result tool_name=\"...\">...</tool_result>; \
           a failure starts with \"Error:\".\n\n\
         ## Available tools\n",
    );
    for tool in tools {
        let _ = writeln!(out, "\n### {}\n{}", tool.name, tool.description.trim());
        let required: Vec<&str> = tool
            .parameters
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match tool.parameters.get("properties").and_then(Value::as_object) {
            Some(properties) if !properties.is_empty() => {
                out.push_str("Parameters:\n");
                for (name, schema) in properties {
                    let kind = schema
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("string");
                    let need = if required.contains(&name.as_str()) {
                        "required"
                    } else {
                        "optional"
                    };
                    let description = schema
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    let _ = writeln!(
                        out,
                        "- <{name}> ({kind}, {need}){}",
                        if description.is_empty() {
                            String::new()
                        } else {
                            format!(": {description}")
                        }
                    );
                }
            }
            _ => out.push_str("Parameters: none\n"),
        }
    }
    out
}
