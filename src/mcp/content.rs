//! A `tools/call` result as a tool result: text passes through, structured content becomes
//! the data when there is no text (and is kept beside the text only when it says more than
//! the text does), `isError` becomes `success: false`, and content the
//! model cannot take as text (images, audio, binary resources) is described in a line,
//! never dropped silently and never pasted in as base64.

use serde_json::Value;

use crate::tools::ToolOutput;

/// Maps the result JSON (`{"content": [...], "structuredContent": ..., "isError": ...}`).
pub fn tool_output(server: &str, result: &Value) -> ToolOutput {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let parts: Vec<String> = blocks.iter().map(describe_block).collect();
    let text = parts.join("\n");
    let structured = result.get("structuredContent").cloned();
    let kinds: Vec<Value> = blocks
        .iter()
        .map(|b| b.get("type").cloned().unwrap_or(Value::Null))
        .collect();
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);

    let output = if is_error {
        ToolOutput::error(if text.is_empty() {
            "the tool reported an error without a message".to_string()
        } else {
            text
        })
    } else {
        match (text.is_empty(), &structured) {
            (true, Some(data)) => ToolOutput::ok(data.clone()),
            _ => ToolOutput::ok(text),
        }
    };
    let output = output
        .with_meta("mcp_server", server)
        .with_meta("content", kinds);
    match structured {
        Some(data) if !is_error && !repeats(&output.data, &data) => {
            output.with_meta("structured", data)
        }
        _ => output,
    }
}

/// Whether structured content only repeats the text: the text is its JSON (what the spec
/// asks servers to send beside it), or it wraps the text whole (server-filesystem's
/// `{"content": TEXT}`). Keeping both doubled every large result in the events and the
/// transcript, past `max_output_chars`.
fn repeats(data: &Value, structured: &Value) -> bool {
    let Some(text) = data.as_str() else {
        return data == structured;
    };
    let parsed = serde_json::from_str::<Value>(text).ok();
    parsed.as_ref() == Some(structured) || holds_string(structured, text)
}

fn holds_string(value: &Value, text: &str) -> bool {
    match value {
        Value::String(s) => s == text,
        Value::Array(items) => items.iter().any(|v| holds_string(v, text)),
        Value::Object(map) => map.values().any(|v| holds_string(v, text)),
        _ => false,
    }
}

fn describe_block(block: &Value) -> String {
    let field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or_default();
    match field("type") {
        "text" => field("text").to_string(),
        kind @ ("image" | "audio") => format!(
            "[{kind} content: {}, {}; not shown]",
            or_unknown(field("mimeType")),
            size_of_base64(field("data"))
        ),
        "resource" => describe_resource(block.get("resource").unwrap_or(&Value::Null)),
        "resource_link" => {
            let mut line = format!("[resource link: {}", field("uri"));
            for (label, value) in [("name", field("name")), ("type", field("mimeType"))] {
                if !value.is_empty() {
                    line.push_str(&format!(", {label} {value}"));
                }
            }
            if !field("description").is_empty() {
                line.push_str(&format!(": {}", field("description")));
            }
            line.push(']');
            line
        }
        other => format!("[{} content; not shown]", or_unknown(other)),
    }
}

/// An embedded resource: its text is shown under a header line, a blob is described.
fn describe_resource(resource: &Value) -> String {
    let field = |name: &str| resource.get(name).and_then(Value::as_str);
    let uri = field("uri").unwrap_or_default();
    let mime = field("mimeType")
        .map(|m| format!(" ({m})"))
        .unwrap_or_default();
    match (field("text"), field("blob")) {
        (Some(text), _) => format!("[resource {uri}{mime}]\n{text}"),
        (None, Some(blob)) => format!(
            "[resource {uri}{mime}: {} of binary data; not shown]",
            size_of_base64(blob)
        ),
        (None, None) => format!("[resource {uri}{mime}; empty]"),
    }
}

fn or_unknown(text: &str) -> &str {
    if text.is_empty() {
        "unknown type"
    } else {
        text
    }
}

/// The decoded size of base64 text, for people: `1.2 KB`.
fn size_of_base64(data: &str) -> String {
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    let bytes = (data.len() / 4 * 3).saturating_sub(padding);
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_blocks_join_into_the_data() {
        let output = tool_output(
            "srv",
            &json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
        );
        assert!(output.success);
        assert_eq!(output.data, json!("a\nb"));
        assert_eq!(output.metadata["mcp_server"], json!("srv"));
        assert_eq!(output.metadata["content"], json!(["text", "text"]));
    }

    #[test]
    fn is_error_is_a_failed_call_with_the_text_as_error() {
        let output = tool_output(
            "srv",
            &json!({"content": [{"type": "text", "text": "boom"}], "isError": true}),
        );
        assert!(!output.success);
        assert_eq!(output.error.as_deref(), Some("boom"));
        let silent = tool_output("srv", &json!({"content": [], "isError": true}));
        assert!(!silent.success);
        assert!(silent.error.unwrap().contains("without a message"));
    }

    #[test]
    fn structured_content_is_the_data_when_there_is_no_text_and_kept_otherwise() {
        let only = tool_output("s", &json!({"content": [], "structuredContent": {"t": 1}}));
        assert_eq!(only.data, json!({"t": 1}));
        let both = tool_output(
            "s",
            &json!({"content": [{"type": "text", "text": "{\"t\":1}"}],
                                            "structuredContent": {"t": 1}}),
        );
        assert_eq!(both.data, json!("{\"t\":1}"));
        assert_eq!(
            both.metadata.get("structured"),
            None,
            "the text is its JSON"
        );
        // server-filesystem: the file's text, and the same text wrapped.
        let file = "line one\nline two";
        let wrapped = tool_output(
            "s",
            &json!({"content": [{"type": "text", "text": file}],
                    "structuredContent": {"content": file}}),
        );
        assert_eq!(wrapped.data, json!(file));
        assert_eq!(
            wrapped.metadata.get("structured"),
            None,
            "it repeats the text"
        );
        let more = tool_output(
            "s",
            &json!({"content": [{"type": "text", "text": "3 results"}],
                    "structuredContent": {"results": [1, 2, 3]}}),
        );
        assert_eq!(more.metadata["structured"], json!({"results": [1, 2, 3]}));
    }

    #[test]
    fn images_audio_and_binary_resources_are_described_not_pasted() {
        let output = tool_output(
            "s",
            &json!({"content": [
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "demo://b", "mimeType": "application/gzip", "blob": "H4sIAAAA"}},
                {"type": "resource", "resource": {"uri": "demo://t", "mimeType": "text/plain", "text": "hello"}},
                {"type": "resource_link", "uri": "demo://l", "name": "Resource 1", "mimeType": "text/plain"},
                {"type": "hologram"}
            ]}),
        );
        let text = output.data.as_str().unwrap();
        assert!(
            text.contains("[image content: image/png, 8 bytes; not shown]"),
            "{text}"
        );
        assert!(
            text.contains("[audio content: audio/wav, 3 bytes; not shown]"),
            "{text}"
        );
        assert!(
            text.contains(
                "[resource demo://b (application/gzip): 6 bytes of binary data; not shown]"
            ),
            "{text}"
        );
        assert!(
            text.contains("[resource demo://t (text/plain)]\nhello"),
            "{text}"
        );
        assert!(
            text.contains("[resource link: demo://l, name Resource 1, type text/plain]"),
            "{text}"
        );
        assert!(text.contains("[hologram content; not shown]"), "{text}");
        assert!(!text.contains("iVBOR"));
    }

    #[test]
    fn a_result_without_content_is_an_empty_success() {
        let output = tool_output("s", &json!({}));
        assert!(output.success);
        assert_eq!(output.data, json!(""));
    }
}
