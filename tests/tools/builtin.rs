//! build_builtin, the trait surface, and the ToolOutput shape.

use std::sync::Arc;

use runner::spec::tools::BuiltinTool;
use runner::tools::{Tool, ToolOutput, build_builtin, validate_arguments};
use serde_json::{Value, json};

use crate::common::{Scratch, builtin, call, error_of};

fn spec(value: Value) -> BuiltinTool {
    serde_json::from_value(value).unwrap()
}

fn property_names(tool: &dyn Tool) -> Vec<String> {
    let params = tool.parameters();
    assert_eq!(params["type"], "object", "{}", tool.name());
    params["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[test]
fn every_builtin_builds_with_the_spec_parameter_names() {
    let dir = Scratch::new();
    let cases = [
        (
            json!({"builtin": "read_file"}),
            vec!["path", "offset", "limit"],
            vec!["path"],
        ),
        (
            json!({"builtin": "write_file"}),
            vec!["path", "content"],
            vec!["path", "content"],
        ),
        (json!({"builtin": "list_dir"}), vec!["path"], vec![]),
        (
            json!({"builtin": "search_files"}),
            vec!["pattern", "path", "glob"],
            vec!["pattern"],
        ),
        (
            json!({"builtin": "shell", "allow": ["git"]}),
            vec!["command"],
            vec!["command"],
        ),
        (
            json!({"builtin": "http_get", "allow_hosts": ["example.com"]}),
            vec!["url"],
            vec!["url"],
        ),
    ];
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for (entry, properties, required) in cases {
        let name = entry["builtin"].as_str().unwrap().to_string();
        let tool = build_builtin(&spec(entry), dir.path(), &Default::default(), &[]).unwrap();
        assert_eq!(tool.name(), name);
        assert!(!tool.description().is_empty());
        assert_eq!(property_names(tool.as_ref()), properties, "{name}");
        let listed: Vec<&str> = tool.parameters()["required"]
            .as_array()
            .map(|r| r.iter().map(|v| v.as_str().unwrap()).collect())
            .unwrap_or_default();
        assert_eq!(listed, required, "{name}");
        for (key, schema) in tool.parameters()["properties"].as_object().unwrap() {
            assert!(
                schema["description"].is_string(),
                "{name}.{key} has no description"
            );
        }
        assert!(!tool.sequential());
        tools.push(tool);
    }
    let idempotent: Vec<&str> = tools
        .iter()
        .filter(|t| t.idempotent())
        .map(|t| t.name())
        .collect();
    assert_eq!(
        idempotent,
        [
            "read_file",
            "write_file",
            "list_dir",
            "search_files",
            "http_get"
        ]
    );
}

#[test]
fn ask_user_is_left_to_the_engine() {
    let err = build_builtin(
        &spec(json!({"builtin": "ask_user"})),
        &std::env::temp_dir(),
        &Default::default(),
        &[],
    )
    .err()
    .unwrap();
    assert!(err.contains("engine"), "{err}");
}

#[test]
fn shell_with_an_empty_allow_list_is_refused() {
    let err = build_builtin(
        &spec(json!({"builtin": "shell", "allow": []})),
        &std::env::temp_dir(),
        &Default::default(),
        &[],
    )
    .err()
    .unwrap();
    assert!(err.contains("allow"), "{err}");
}

#[test]
fn root_is_resolved_against_the_base_dir_and_must_exist() {
    let dir = Scratch::new();
    dir.write("sub/inner.txt", "inside sub\n");
    let tool = builtin(json!({"builtin": "read_file", "root": "sub"}), dir.path());
    let out = futures_block(call(tool.as_ref(), json!({"path": "inner.txt"})));
    assert!(out.success, "{out:#?}");
    assert_eq!(out.data, "inside sub\n");

    let err = build_builtin(
        &spec(json!({"builtin": "list_dir", "root": "missing"})),
        dir.path(),
        &Default::default(),
        &[],
    )
    .err()
    .unwrap();
    assert!(err.contains("missing"), "{err}");
}

#[test]
fn tool_output_serialises_with_exactly_four_keys() {
    let ok = ToolOutput::ok(json!({"n": 1})).with_meta("lines", 3);
    assert_eq!(
        serde_json::to_value(&ok).unwrap(),
        json!({"success": true, "data": {"n": 1}, "error": null, "metadata": {"lines": 3}})
    );
    let failed = ToolOutput::error("nope");
    assert_eq!(
        serde_json::to_string(&failed).unwrap(),
        r#"{"success":false,"data":null,"error":"nope","metadata":{}}"#
    );
    let back: ToolOutput = serde_json::from_value(serde_json::to_value(&ok).unwrap()).unwrap();
    assert_eq!(back, ok);
}

#[test]
fn validate_arguments_names_the_problem_and_where() {
    let schema = json!({
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"]
    });
    assert!(validate_arguments(&schema, &json!({"n": 2})).is_ok());
    let out = validate_arguments(&schema, &json!({"n": "two"})).unwrap_err();
    let err = error_of(&out);
    assert!(err.starts_with("invalid arguments: "), "{err}");
    assert!(err.contains("at /n"), "{err}");
    let out = validate_arguments(&schema, &json!({})).unwrap_err();
    assert!(
        error_of(&out).contains("\"n\" is a required property"),
        "{out:?}"
    );
}

#[tokio::test]
async fn invalid_arguments_are_a_tool_error_for_every_builtin() {
    let dir = Scratch::new();
    let cases = [
        (
            json!({"builtin": "read_file"}),
            json!({"offset": 1}),
            "\"path\" is a required property",
        ),
        (
            json!({"builtin": "read_file"}),
            json!({"path": "x", "offset": "ten"}),
            "at /offset",
        ),
        (
            json!({"builtin": "read_file"}),
            json!({"path": "x", "offset": 0}),
            "at /offset",
        ),
        (
            json!({"builtin": "write_file"}),
            json!({"path": "x"}),
            "\"content\" is a required property",
        ),
        (
            json!({"builtin": "list_dir"}),
            json!({"path": 7}),
            "at /path",
        ),
        (json!({"builtin": "list_dir"}), json!({"dir": "."}), "dir"),
        (
            json!({"builtin": "search_files"}),
            json!({"path": "."}),
            "\"pattern\"",
        ),
        (
            json!({"builtin": "shell", "allow": ["echo"]}),
            json!({"command": ["echo", "hi"]}),
            "at /command",
        ),
        (
            json!({"builtin": "http_get", "allow_hosts": ["a.b"]}),
            json!({}),
            "\"url\"",
        ),
        (
            json!({"builtin": "http_get", "allow_hosts": ["a.b"]}),
            json!("http://a.b/"),
            "object",
        ),
    ];
    for (entry, arguments, expected) in cases {
        let tool = builtin(entry, dir.path());
        let out = call(tool.as_ref(), arguments.clone()).await;
        let err = error_of(&out);
        assert!(
            err.starts_with("invalid arguments: "),
            "{} {arguments}: {err}",
            tool.name()
        );
        assert!(err.contains(expected), "{} {arguments}: {err}", tool.name());
    }
}

/// Runs a future to completion on a fresh runtime (for the plain #[test]s above).
fn futures_block<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}
