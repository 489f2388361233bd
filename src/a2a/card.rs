//! The Agent Card: what an agent is, what it can do, and where and how to call it.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// An agent's self-description, served at its base URL + [`super::AGENT_CARD_PATH`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    pub name: String,
    pub description: String,
    /// Where to call it; the first is preferred.
    pub supported_interfaces: Vec<AgentInterface>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    pub capabilities: AgentCapabilities,
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub security_schemes: IndexMap<String, SecurityScheme>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
    /// Media types accepted in messages (`text/plain`, `application/json`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default_input_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default_output_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<AgentSkill>,
    /// JSON Web Signatures of the card, kept as sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
}

impl AgentCard {
    /// The URL of the first interface with this binding (e.g. [`super::JSONRPC_BINDING`]).
    pub fn interface_url(&self, binding: &str) -> Option<&str> {
        let found = self
            .supported_interfaces
            .iter()
            .find(|i| i.protocol_binding == binding);
        found.map(|i| i.url.as_str())
    }
}

/// One way to reach the agent: a URL, a binding (`JSONRPC`, `GRPC`, `HTTP+JSON`) and the
/// protocol version spoken there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    pub url: String,
    pub protocol_binding: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::fields::empty_as_none"
    )]
    pub tenant: Option<String>,
    pub protocol_version: String,
}

/// Who provides the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    pub url: String,
    pub organization: String,
}

/// What the agent's endpoint supports beyond request/response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<AgentExtension>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
}

/// A protocol extension the agent uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    pub uri: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "super::fields::is_false")]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Map<String, Value>>,
}

/// Something the agent is good at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    pub id: String,
    pub name: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
}

/// How a client authenticates: one of the scheme kinds. HTTP authentication (a bearer
/// token) is typed; the others are kept as sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecurityScheme {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_auth_security_scheme: Option<HttpAuthSecurityScheme>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_security_scheme: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth2_security_scheme: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_id_connect_security_scheme: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtls_security_scheme: Option<Value>,
}

impl SecurityScheme {
    /// `Authorization: Bearer <token>`.
    pub fn bearer(description: &str) -> Self {
        let scheme = HttpAuthSecurityScheme {
            description: description.to_string(),
            scheme: "Bearer".to_string(),
            bearer_format: String::new(),
        };
        Self {
            http_auth_security_scheme: Some(scheme),
            ..Self::default()
        }
    }
}

/// HTTP authentication (RFC 9110): `Bearer`, `Basic`...
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub scheme: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bearer_format: String,
}

/// The schemes (by name in `securitySchemes`) a call needs, each with its scopes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SecurityRequirement {
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub schemes: IndexMap<String, StringList>,
}

/// A list of strings, as protobuf wraps one in a map.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StringList {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub list: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_card_as_the_sdk_reads_it() {
        let json = json!({
            "name": "reviewer",
            "description": "Reviews a diff",
            "supportedInterfaces": [{
                "url": "http://127.0.0.1:8080/a2a/reviewer",
                "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0"
            }],
            "version": "1.0.0",
            "capabilities": {"streaming": true, "pushNotifications": false},
            "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
            "securityRequirements": [{"schemes": {"bearer": {}}}],
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{
                "id": "reviewer",
                "name": "reviewer",
                "description": "Reviews a diff",
                "tags": ["runner"],
                "inputModes": ["application/json"]
            }]
        });
        let card: AgentCard = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(
            card.interface_url("JSONRPC"),
            Some("http://127.0.0.1:8080/a2a/reviewer")
        );
        assert_eq!(card.capabilities.streaming, Some(true));
        assert_eq!(serde_json::to_value(&card).unwrap(), json);
    }

    #[test]
    fn the_bearer_scheme() {
        let json = serde_json::to_value(SecurityScheme::bearer("")).unwrap();
        assert_eq!(
            json,
            json!({"httpAuthSecurityScheme": {"scheme": "Bearer"}})
        );
    }
}
