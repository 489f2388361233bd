//! The exact bytes of request bodies, key order included, for every wire: a conversation
//! with every kind of message, tools, a response format, and params merged over the body
//! (configured first, then per request; `null` removes a key).

use std::time::Duration;

use runner::provider::anthropic::AnthropicProvider;
use runner::provider::openai::{HttpSettings, OpenAiProvider};
use runner::provider::responses::ResponsesProvider;
use runner::provider::{
    AssistantMessage, InvalidArguments, Message, ModelRequest, ReasoningItem, ResponseFormat,
    ThinkingBlock, ToolCall, ToolResult, ToolSpec,
};
use serde_json::{Map, Value, json};

fn settings(params: Value) -> HttpSettings {
    let Value::Object(params) = params else {
        panic!("params must be an object")
    };
    HttpSettings {
        provider: "test".into(),
        model: "m-1".into(),
        base_url: "http://127.0.0.1:9".into(),
        key: None,
        key_env: None,
        params,
        timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(5),
        limits: Default::default(),
    }
}

fn params(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(map) => map,
        _ => panic!("params must be an object"),
    }
}

/// Every message kind: system entries, a signed, a redacted, an unsigned thinking block and
/// a Responses reasoning item (each wire sends back only its own),
/// valid and unparsable tool arguments, a turn of tool calls only, an empty assistant turn,
/// ok and failed tool results, consecutive user turns, text that needs escaping.
fn conversation() -> ModelRequest {
    let read = ToolCall {
        id: "call_1".into(),
        name: "read_file".into(),
        arguments: json!({"path": "a \"b\".txt", "lines": [1, 2]}).into(),
        invalid_arguments: None,
    };
    let broken = ToolCall {
        id: "call_2".into(),
        name: "shell".into(),
        arguments: Value::Null.into(),
        invalid_arguments: Some(InvalidArguments {
            raw: "{\"cmd\": ls".into(),
            error: "EOF while parsing".into(),
        }),
    };
    let list = ToolCall {
        id: "call_3".into(),
        name: "list".into(),
        arguments: json!({}).into(),
        invalid_arguments: None,
    };
    ModelRequest {
        system: Some("Be terse.".into()),
        messages: vec![
            Message::system("Extra rule."),
            Message::user("Hi\nthere é"),
            Message::Assistant(AssistantMessage {
                text: "Reading.".into(),
                thinking: vec![
                    ThinkingBlock {
                        text: "plan".into(),
                        signature: Some("sig-1".into()),
                        redacted: None,
                        reasoning_item: None,
                    },
                    ThinkingBlock {
                        text: String::new(),
                        signature: None,
                        redacted: Some("opaque".into()),
                        reasoning_item: None,
                    },
                    ThinkingBlock {
                        text: "unsigned".into(),
                        signature: None,
                        redacted: None,
                        reasoning_item: None,
                    },
                    ThinkingBlock {
                        text: "weighed it".into(),
                        signature: None,
                        redacted: None,
                        reasoning_item: Some(ReasoningItem {
                            id: "rs_1".into(),
                            encrypted_content: Some("enc".into()),
                        }),
                    },
                ],
                tool_calls: vec![read.clone(), broken.clone()],
            }),
            Message::tool_result(&read, "contents", false),
            Message::Tool(ToolResult {
                tool_call_id: "call_2".into(),
                name: "shell".into(),
                content: "bad arguments".into(),
                is_error: true,
            }),
            Message::Assistant(AssistantMessage {
                tool_calls: vec![list.clone()],
                ..Default::default()
            }),
            Message::tool_result(&list, "[]", false),
            Message::assistant(""),
            Message::user("Go on."),
            Message::user("Please."),
        ]
        .into(),
        tools: vec![
            ToolSpec {
                name: "read_file".into(),
                description: "Reads a file.".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            },
            ToolSpec {
                name: "list".into(),
                description: String::new(),
                parameters: json!({"type": "object"}),
            },
        ]
        .into(),
        response_format: Some(ResponseFormat {
            name: "verdict".into(),
            schema: json!({"type": "object", "required": ["ok"]}),
            strict: true,
        }),
        stop: Vec::new(),
        params: Map::new(),
        route: None,
    }
}

#[test]
fn stop_sequences_go_where_the_server_takes_them() {
    let mut req = conversation();
    req.stop = vec!["</read_file>".into()];
    let body: Value = serde_json::from_str(&openai_body(json!({}), &req)).unwrap();
    assert_eq!(body["stop"], json!(["</read_file>"]));
    let body: Value = serde_json::from_str(&anthropic_body(json!({}), &req)).unwrap();
    assert_eq!(body["stop_sequences"], json!(["</read_file>"]));
    // OpenAI's own API takes at most 4 and its reasoning models none.
    let platform = HttpSettings {
        base_url: "https://api.openai.com/v1".into(),
        ..settings(json!({}))
    };
    let provider = OpenAiProvider::new(platform).unwrap();
    let body = serde_json::to_value(provider.request_body(&req)).unwrap();
    assert!(body.get("stop").is_none(), "{body}");
}

/// A server that may enforce `response_format` as a grammar (any OpenAI-compatible one but
/// OpenAI's and Azure's) gets it only on a request without tools.
#[test]
fn response_format_goes_beside_tools_only_where_it_cannot_be_a_grammar() {
    let mut req = conversation();
    assert!(req.response_format.is_some() && !req.tools.is_empty());
    let body: Value = serde_json::from_str(&openai_body(json!({}), &req)).unwrap();
    assert!(body.get("response_format").is_none(), "{body}");
    req.tools = Default::default();
    let body: Value = serde_json::from_str(&openai_body(json!({}), &req)).unwrap();
    assert_eq!(body["response_format"]["json_schema"]["name"], "verdict");
}

fn openai_body(cfg: Value, req: &ModelRequest) -> String {
    let provider = OpenAiProvider::new(settings(cfg)).unwrap();
    serde_json::to_string(&provider.request_body(req)).unwrap()
}

fn anthropic_body(cfg: Value, req: &ModelRequest) -> String {
    let provider = AnthropicProvider::new(settings(cfg)).unwrap();
    serde_json::to_string(&provider.request_body(req)).unwrap()
}

fn responses_body(cfg: Value, req: &ModelRequest) -> String {
    let provider = ResponsesProvider::new(settings(cfg)).unwrap();
    serde_json::to_string(&provider.request_body(req)).unwrap()
}

#[test]
fn openai_body_bytes() {
    // OpenAI's own API takes `response_format` beside tools (see the test below).
    let platform = HttpSettings {
        base_url: "https://api.openai.com/v1".into(),
        ..settings(json!({}))
    };
    let provider = OpenAiProvider::new(platform).unwrap();
    let body = serde_json::to_string(&provider.request_body(&conversation())).unwrap();
    assert_eq!(
        body,
        concat!(
            r#"{"model":"m-1","messages":["#,
            r#"{"role":"system","content":"Be terse.\n\nExtra rule."},"#,
            r#"{"role":"user","content":"Hi\nthere é"},"#,
            r#"{"role":"assistant","content":"Reading.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a \\\"b\\\".txt\",\"lines\":[1,2]}"}},{"id":"call_2","type":"function","function":{"name":"shell","arguments":"{}"}}]},"#,
            r#"{"role":"tool","tool_call_id":"call_1","content":"contents"},"#,
            r#"{"role":"tool","tool_call_id":"call_2","content":"bad arguments"},"#,
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"call_3","type":"function","function":{"name":"list","arguments":"{}"}}]},"#,
            r#"{"role":"tool","tool_call_id":"call_3","content":"[]"},"#,
            r#"{"role":"assistant","content":""},"#,
            r#"{"role":"user","content":"Go on.\n\nPlease."}]"#,
            r#","tools":[{"type":"function","function":{"name":"read_file","description":"Reads a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}},{"type":"function","function":{"name":"list","description":"","parameters":{"type":"object"}}}]"#,
            r#","response_format":{"type":"json_schema","json_schema":{"name":"verdict","schema":{"type":"object","required":["ok"]},"strict":true}}"#,
            r#","stream":true,"stream_options":{"include_usage":true}}"#,
        )
    );
}

#[test]
fn openai_body_with_params() {
    // Configured: a new key, a value the request overrides, one removed (`null`).
    // Per request: the override, a removal of a body field, a new key. A removal moves the
    // last key into the removed one's place (as `serde_json::Map::remove` does), hence
    // `temperature` where `tools` was and `top_p` where `stream_options` was.
    let mut req = conversation();
    req.response_format = None;
    req.params = params(json!({"temperature": 0.5, "tools": null, "seed": 7}));
    let cfg = json!({"temperature": 0.2, "top_p": 0.9, "stream_options": null});
    assert_eq!(
        openai_body(cfg, &req),
        concat!(
            r#"{"model":"m-1","messages":["#,
            r#"{"role":"system","content":"Be terse.\n\nExtra rule."},"#,
            r#"{"role":"user","content":"Hi\nthere é"},"#,
            r#"{"role":"assistant","content":"Reading.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a \\\"b\\\".txt\",\"lines\":[1,2]}"}},{"id":"call_2","type":"function","function":{"name":"shell","arguments":"{}"}}]},"#,
            r#"{"role":"tool","tool_call_id":"call_1","content":"contents"},"#,
            r#"{"role":"tool","tool_call_id":"call_2","content":"bad arguments"},"#,
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"call_3","type":"function","function":{"name":"list","arguments":"{}"}}]},"#,
            r#"{"role":"tool","tool_call_id":"call_3","content":"[]"},"#,
            r#"{"role":"assistant","content":""},"#,
            r#"{"role":"user","content":"Go on.\n\nPlease."}]"#,
            r#","temperature":0.5"#,
            r#","stream":true,"top_p":0.9,"seed":7}"#,
        )
    );
}

#[test]
fn openai_body_without_streaming_drops_stream_options() {
    let mut req = ModelRequest {
        messages: vec![Message::user("x")].into(),
        ..Default::default()
    };
    req.params = params(json!({"stream": false, "max_tokens": 10}));
    assert_eq!(
        openai_body(json!({}), &req),
        concat!(
            r#"{"model":"m-1","messages":["#,
            r#"{"role":"user","content":"x"}]"#,
            r#","stream":false,"max_tokens":10}"#,
        )
    );
    // Only `true` keeps them.
    req.params = params(json!({"stream": "yes"}));
    assert_eq!(
        openai_body(json!({}), &req),
        concat!(
            r#"{"model":"m-1","messages":["#,
            r#"{"role":"user","content":"x"}]"#,
            r#","stream":"yes"}"#,
        )
    );
}

#[test]
fn anthropic_body_bytes() {
    let body = anthropic_body(json!({}), &conversation());
    assert_eq!(
        body,
        concat!(
            r#"{"model":"m-1","max_tokens":4096,"system":"Be terse.\n\nExtra rule.\n\nReply with only a JSON value (no prose, no code fence) that matches this JSON Schema:\n{\"type\":\"object\",\"required\":[\"ok\"]}","messages":["#,
            r#"{"role":"user","content":[{"type":"text","text":"Hi\nthere é"}]},"#,
            r#"{"role":"assistant","content":[{"type":"thinking","thinking":"plan","signature":"sig-1"},{"type":"redacted_thinking","data":"opaque"},{"type":"text","text":"Reading."},{"type":"tool_use","id":"call_1","name":"read_file","input":{"path":"a \"b\".txt","lines":[1,2]}},{"type":"tool_use","id":"call_2","name":"shell","input":{}}]},"#,
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"contents"},{"type":"tool_result","tool_use_id":"call_2","content":"bad arguments","is_error":true}]},"#,
            r#"{"role":"assistant","content":[{"type":"tool_use","id":"call_3","name":"list","input":{}}]},"#,
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_3","content":"[]"},{"type":"text","text":"Go on."},{"type":"text","text":"Please."}]}]"#,
            r#","tools":[{"name":"read_file","description":"Reads a file.","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}},{"name":"list","description":"","input_schema":{"type":"object"}}]"#,
            r#","stream":true}"#,
        )
    );
}

#[test]
fn anthropic_body_with_params() {
    let mut req = conversation();
    req.system = None;
    req.response_format = None;
    req.params = params(
        json!({"temperature": null, "thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 8000}),
    );
    let cfg = json!({"max_tokens": 2048, "temperature": 0.2, "stream": false});
    assert_eq!(
        anthropic_body(cfg, &req),
        concat!(
            r#"{"model":"m-1","max_tokens":8000,"system":"Extra rule.","messages":["#,
            r#"{"role":"user","content":[{"type":"text","text":"Hi\nthere é"}]},"#,
            r#"{"role":"assistant","content":[{"type":"thinking","thinking":"plan","signature":"sig-1"},{"type":"redacted_thinking","data":"opaque"},{"type":"text","text":"Reading."},{"type":"tool_use","id":"call_1","name":"read_file","input":{"path":"a \"b\".txt","lines":[1,2]}},{"type":"tool_use","id":"call_2","name":"shell","input":{}}]},"#,
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"contents"},{"type":"tool_result","tool_use_id":"call_2","content":"bad arguments","is_error":true}]},"#,
            r#"{"role":"assistant","content":[{"type":"tool_use","id":"call_3","name":"list","input":{}}]},"#,
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_3","content":"[]"},{"type":"text","text":"Go on."},{"type":"text","text":"Please."}]}]"#,
            r#","tools":[{"name":"read_file","description":"Reads a file.","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}},{"name":"list","description":"","input_schema":{"type":"object"}}]"#,
            r#","stream":false,"thinking":{"type":"enabled","budget_tokens":1024}}"#,
        )
    );
}

#[test]
fn anthropic_body_of_a_bare_request() {
    // No system prompt at all, no tools: neither key is sent.
    let req = ModelRequest {
        messages: vec![Message::user("x")].into(),
        ..Default::default()
    };
    assert_eq!(
        anthropic_body(json!({}), &req),
        concat!(
            r#"{"model":"m-1","max_tokens":4096,"messages":["#,
            r#"{"role":"user","content":[{"type":"text","text":"x"}]}]"#,
            r#","stream":true}"#,
        )
    );
}

#[test]
fn responses_body_bytes() {
    let body = responses_body(json!({}), &conversation());
    assert_eq!(
        body,
        concat!(
            r#"{"model":"m-1","instructions":"Be terse.","input":["#,
            r#"{"type":"message","role":"system","content":[{"type":"input_text","text":"Extra rule."}]},"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"Hi\nthere é"}]},"#,
            r#"{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"weighed it"}],"encrypted_content":"enc"},"#,
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Reading."}]},"#,
            r#"{"type":"function_call","call_id":"call_1","name":"read_file","arguments":"{\"path\":\"a \\\"b\\\".txt\",\"lines\":[1,2]}"},"#,
            r#"{"type":"function_call","call_id":"call_2","name":"shell","arguments":"{}"},"#,
            r#"{"type":"function_call_output","call_id":"call_1","output":"contents"},"#,
            r#"{"type":"function_call_output","call_id":"call_2","output":"bad arguments"},"#,
            r#"{"type":"function_call","call_id":"call_3","name":"list","arguments":"{}"},"#,
            r#"{"type":"function_call_output","call_id":"call_3","output":"[]"},"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"Go on."}]},"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"Please."}]}]"#,
            r#","tools":[{"type":"function","name":"read_file","description":"Reads a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}}},"strict":false},{"type":"function","name":"list","description":"","parameters":{"type":"object"},"strict":false}]"#,
            r#","text":{"format":{"type":"json_schema","name":"verdict","schema":{"type":"object","required":["ok"]},"strict":true}}"#,
            r#","store":false,"include":["reasoning.encrypted_content"],"stream":true}"#,
        )
    );
}

#[test]
fn responses_body_with_params() {
    // `include: null` is how a model without reasoning (gpt-4.1) is used: it refuses the
    // request for encrypted reasoning.
    let req = ModelRequest {
        messages: vec![Message::user("x")].into(),
        params: params(
            json!({"max_output_tokens": 100, "reasoning": {"effort": "low", "summary": "auto"}}),
        ),
        ..Default::default()
    };
    assert_eq!(
        responses_body(json!({"include": null}), &req),
        concat!(
            r#"{"model":"m-1","input":["#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}]"#,
            r#","store":false,"stream":true,"max_output_tokens":100,"reasoning":{"effort":"low","summary":"auto"}}"#,
        )
    );
}

/// A provider serialises only the messages its last request did not have: on every wire,
/// a request sent again, grown by a turn, grown into its last turn, or with its history
/// rewritten has the same bytes
/// as from a provider that never sent anything.
#[test]
fn every_wire_sends_the_same_bytes_from_its_cache() {
    fn check<P>(make: impl Fn() -> P, body: impl Fn(&P, &ModelRequest) -> String) {
        let provider = make();
        let mut req = conversation();
        for round in 0..5 {
            match round {
                1 => req.messages.push(Message::assistant("More.")),
                2 => req.messages.push(Message::user("And then?")),
                // Joined with the user turn before it on the wires that join them.
                3 => req.messages.push(Message::user("Quickly.")),
                4 => req.messages = vec![Message::user("summary"), Message::assistant("ok")].into(),
                _ => {}
            }
            assert_eq!(body(&provider, &req), body(&make(), &req), "round {round}");
        }
    }
    check(
        || OpenAiProvider::new(settings(json!({}))).unwrap(),
        |p, r| serde_json::to_string(&p.request_body(r)).unwrap(),
    );
    check(
        || AnthropicProvider::new(settings(json!({}))).unwrap(),
        |p, r| serde_json::to_string(&p.request_body(r)).unwrap(),
    );
    check(
        || ResponsesProvider::new(settings(json!({}))).unwrap(),
        |p, r| serde_json::to_string(&p.request_body(r)).unwrap(),
    );
}
