//! A piece of a message or an artifact: text, a file (bytes or a URL), or JSON data.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One part. Its content is one of four fields of the JSON object (`text`, `raw`, `url`,
/// `data`); `filename` and `mediaType` apply to any of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    #[serde(flatten)]
    pub content: PartContent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::fields::empty_as_none"
    )]
    pub filename: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::fields::empty_as_none"
    )]
    pub media_type: Option<String>,
}

/// What a part holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PartContent {
    /// Text.
    Text(String),
    /// A file's bytes, base64 in JSON (kept encoded: the bytes are the reader's concern).
    Raw(String),
    /// A file by reference.
    Url(String),
    /// Any JSON value.
    Data(Value),
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::of(PartContent::Text(text.into()))
    }

    /// A JSON data part.
    pub fn data(value: Value) -> Self {
        Self::of(PartContent::Data(value))
    }

    fn of(content: PartContent) -> Self {
        Self {
            content,
            metadata: None,
            filename: None,
            media_type: None,
        }
    }

    /// The text of a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(text) => Some(text),
            _ => None,
        }
    }

    /// The value of a data part.
    pub fn as_data(&self) -> Option<&Value> {
        match &self.content {
            PartContent::Data(value) => Some(value),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(json: Value) -> Part {
        let part: Part = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&part).unwrap(), json);
        part
    }

    #[test]
    fn a_text_part() {
        let part = round_trip(json!({"text": "hello"}));
        assert_eq!(part.as_text(), Some("hello"));
    }

    #[test]
    fn a_data_part_with_its_media_type() {
        let part = round_trip(
            json!({"data": {"text": "not a text part"}, "mediaType": "application/json"}),
        );
        assert_eq!(part.as_data(), Some(&json!({"text": "not a text part"})));
        assert_eq!(part.media_type.as_deref(), Some("application/json"));
    }

    #[test]
    fn file_parts() {
        round_trip(json!({"raw": "aGk=", "filename": "hi.txt", "mediaType": "text/plain"}));
        round_trip(json!({"url": "https://example.com/a.pdf", "metadata": {"k": 1}}));
    }

    #[test]
    fn a_part_without_content_is_an_error() {
        assert!(serde_json::from_value::<Part>(json!({"mediaType": "text/plain"})).is_err());
    }

    #[test]
    fn an_empty_filename_is_unset() {
        let part: Part = serde_json::from_value(json!({"text": "x", "filename": ""})).unwrap();
        assert_eq!(part.filename, None);
    }
}
