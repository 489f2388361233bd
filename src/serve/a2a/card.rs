//! An agent file as an A2A Agent Card: its name, its description, one skill (the agent,
//! described with its inputs), what the endpoint can do (streaming; no push
//! notifications), and where it is: the JSON-RPC endpoint `/a2a/{agent}` on the address
//! the client reached. With a token, the card says so (a bearer scheme).

use indexmap::IndexMap;
use serde_json::Value;

use crate::a2a::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, JSONRPC_BINDING, PROTOCOL_VERSION,
    SecurityRequirement, SecurityScheme, StringList,
};
use crate::serve::agents::AgentEntry;

const TEXT: &str = "text/plain";
const JSON: &str = "application/json";

/// The card of `entry`, its endpoint at `base` (e.g. `http://127.0.0.1:8080`).
pub fn card_of(entry: &AgentEntry, base: &str, token: bool) -> AgentCard {
    let description = entry
        .description
        .clone()
        .unwrap_or_else(|| format!("Runs the agent `{}`.", entry.name));
    let typed = typed(entry);
    let input = if typed { JSON } else { TEXT };
    let output = if entry.output_schema.is_some() {
        JSON
    } else {
        TEXT
    };
    let skill = AgentSkill {
        id: entry.name.clone(),
        name: entry.name.clone(),
        description: skill_description(&description, &entry.input_schema),
        tags: vec!["runner".into()],
        examples: Vec::new(),
        input_modes: vec![input.into()],
        output_modes: vec![output.into()],
        security_requirements: Vec::new(),
    };
    let mut card = AgentCard {
        name: entry.name.clone(),
        description,
        supported_interfaces: vec![AgentInterface {
            url: format!("{base}/a2a/{}", entry.name),
            protocol_binding: JSONRPC_BINDING.into(),
            tenant: None,
            protocol_version: PROTOCOL_VERSION.into(),
        }],
        provider: None,
        version: env!("CARGO_PKG_VERSION").into(),
        documentation_url: None,
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extensions: Vec::new(),
            extended_agent_card: Some(false),
        },
        security_schemes: IndexMap::new(),
        security_requirements: Vec::new(),
        default_input_modes: vec![input.into()],
        default_output_modes: vec![output.into()],
        skills: vec![skill],
        signatures: Vec::new(),
        icon_url: None,
    };
    if token {
        let scheme = SecurityScheme::bearer("The token of `runner serve --token-env`");
        card.security_schemes.insert("bearer".into(), scheme);
        let mut schemes = IndexMap::new();
        schemes.insert("bearer".into(), StringList::default());
        card.security_requirements
            .push(SecurityRequirement { schemes });
    }
    card
}

/// Whether the agent declares `inputs:` (it takes a data part, not text).
pub fn typed(entry: &AgentEntry) -> bool {
    entry.input_schema["properties"]
        .as_object()
        .is_some_and(|properties| !properties.is_empty())
}

/// The description, and how to give the agent its input: free text, or a data part of
/// these fields.
fn skill_description(description: &str, schema: &Value) -> String {
    let Some(properties) = schema["properties"].as_object().filter(|p| !p.is_empty()) else {
        return format!("{description}\nInput: the message's text.");
    };
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut text = format!("{description}\nInputs (a data part holding an object):");
    for (name, property) in properties {
        let kind = property["type"].as_str().unwrap_or("any");
        let needed = if required.contains(&name.as_str()) {
            ", required"
        } else {
            ""
        };
        text.push_str(&format!("\n- {name} ({kind}{needed})"));
        if let Some(about) = property["description"].as_str() {
            text.push_str(&format!(": {about}"));
        }
    }
    text
}
