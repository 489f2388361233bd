//! An output of a task.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Part;

/// An artifact: what a task produced (for a run, its answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    pub artifact_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::fields::empty_as_none"
    )]
    pub name: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::fields::empty_as_none"
    )]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips() {
        let json = json!({
            "artifactId": "answer",
            "name": "answer",
            "description": "The agent's answer",
            "parts": [{"text": "42"}]
        });
        let artifact: Artifact = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(artifact.parts[0].as_text(), Some("42"));
        assert_eq!(serde_json::to_value(&artifact).unwrap(), json);
    }
}
