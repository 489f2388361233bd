//! The text tool protocol's parser: the same result however the text is split, entities and
//! CDATA, unknown tags as text, one action per reply, format errors; value coercion.

use proptest::prelude::*;
use runner::protocol::{
    Action, ToolDescription, XmlStreamParser, coerce_params, parse_reply, protocol_section,
    tool_result_message,
};
use serde_json::json;

fn tools() -> Vec<String> {
    vec!["read_file".into(), "search".into()]
}

fn in_chunks(text: &str, sizes: &[usize]) -> runner::protocol::ParseOutcome {
    let mut parser = XmlStreamParser::new(tools());
    let mut rest = text;
    let mut i = 0;
    while !rest.is_empty() {
        let mut cut = sizes[i % sizes.len()].max(1).min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        parser.push(&rest[..cut]);
        rest = &rest[cut..];
        i += 1;
    }
    parser.finish()
}

/// What a server that stopped at a closing tag leaves: an action whose parameters are closed.
#[test]
fn an_action_cut_at_its_closing_tag_is_open_with_its_parameters_closed() {
    let open = |text: &str| {
        let mut parser = XmlStreamParser::new(tools());
        parser.push(text);
        parser.open_action().map(String::from)
    };
    assert_eq!(
        open("Reading. <read_file>\n<path>a.txt</path>\n"),
        Some("read_file".into())
    );
    assert_eq!(
        open("<read_file><path>a.t"),
        None,
        "a parameter is still open"
    );
    assert_eq!(
        open("<read_file><path>a</path></read_file>"),
        None,
        "closed already"
    );
    assert_eq!(open("just text"), None);
}

#[test]
fn a_tool_call_with_thinking_and_text_around_it() {
    let outcome = parse_reply(
        "Let me look.\n<thinking>I need &lt;main&gt;</thinking>\n<read_file>\n<path>src/a&amp;b.rs</path>\n<limit>5</limit>\n</read_file>\nignored <search><q>x</q></search>",
        tools(),
    );
    assert_eq!(outcome.text, "Let me look.\n\n");
    assert_eq!(outcome.thinking, ["I need <main>"]);
    assert_eq!(
        outcome.action,
        Some(Action::ToolCall {
            name: "read_file".into(),
            params: vec![
                ("path".into(), "src/a&b.rs".into()),
                ("limit".into(), "5".into())
            ]
        })
    );
    assert_eq!(
        outcome.ignored_bytes,
        "\nignored <search><q>x</q></search>".len()
    );
    assert_eq!(outcome.error, None);
}

#[test]
fn completion_cdata_numeric_entities_and_unknown_tags() {
    let outcome = parse_reply(
        "<b>bold</b> x << y <attempt_completion><result>\n<![CDATA[a </result> <b> & ]]] c]]> &#65;&#x42;\n</result></attempt_completion>",
        tools(),
    );
    assert_eq!(outcome.text, "<b>bold</b> x << y ");
    assert_eq!(
        outcome.action,
        Some(Action::Completion {
            result: "a </result> <b> & ]]] c AB".into()
        })
    );
}

#[test]
fn unclosed_and_mismatched_actions_are_format_errors() {
    let unclosed = parse_reply("<read_file><path>x</path>", tools());
    assert!(unclosed.error.unwrap().message.contains("not closed"));
    assert_eq!(unclosed.action, None);
    let mismatched = parse_reply("<read_file><path>x</path></search>", tools());
    assert!(mismatched.error.unwrap().message.contains("does not close"));
    let open_param = parse_reply("<read_file><path>x</read_file>", tools());
    assert!(open_param.error.unwrap().message.contains("not closed"));
    let none = parse_reply("Just text.", tools());
    assert_eq!((none.action, none.error), (None, None));
}

#[test]
fn values_are_coerced_by_the_schema() {
    let schema = json!({"type": "object", "properties": {
        "n": {"type": "integer"}, "x": {"type": "number"}, "ok": {"type": "boolean"},
        "list": {"type": "array"}, "obj": {"type": "object"}, "s": {"type": "string"}}});
    let params = [
        ("n", " 3 "),
        ("x", "2.5"),
        ("ok", "TRUE"),
        ("list", "[1, \"a\"]"),
        ("obj", "{\"k\": 1}"),
        ("s", "\n keep  \n"),
    ];
    let params: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let values = coerce_params(&params, &schema).unwrap();
    assert_eq!(
        serde_json::Value::Object(values),
        json!({"n": 3, "x": 2.5, "ok": true, "list": [1, "a"], "obj": {"k": 1}, "s": " keep  "})
    );
    let error = coerce_params(&[("n".into(), "three".into())], &schema).unwrap_err();
    assert!(error.contains("`n` must be an integer"), "{error}");
}

#[test]
fn the_prompt_lists_tools_and_parameters_and_results_are_escaped() {
    let section = protocol_section(&[ToolDescription {
        name: "read_file".into(),
        description: "Reads a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string", "description": "Which file"}, "limit": {"type": "integer"}}, "required": ["path"]}),
    }]);
    assert!(section.contains("### read_file\nReads a file."));
    assert!(section.contains("- <path> (string, required): Which file"));
    assert!(section.contains("- <limit> (integer, optional)"));
    assert_eq!(
        tool_result_message("read_file", "a<b", true),
        "<tool_result tool_name=\"read_file\">Error: a&lt;b</tool_result>"
    );
}

fn reply() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        "[a-z <>&;#x0-9/\\]\\[!]{0,20}",
        Just("&lt;&amp;&#65;".to_string()),
        Just("<![CDATA[x </path> ]]] y]]>".to_string()),
        Just("é 漢字 🦀".to_string()),
    ];
    (
        "[a-zA-Z <>/]{0,20}",
        proptest::option::of("[a-z <&;]{0,15}"),
        value,
        proptest::bool::ANY,
        "[a-z <>]{0,10}",
    )
        .prop_map(|(before, thinking, value, completion, after)| {
            let escaped = value.replace("</path>", "&lt;/path>");
            let value = if value.starts_with("<![CDATA[") {
                value
            } else {
                escaped
            };
            let thinking = thinking
                .map(|t| format!("<thinking>{t}</thinking>"))
                .unwrap_or_default();
            let action = if completion {
                format!("<attempt_completion><result>{value}</result></attempt_completion>")
            } else {
                format!("<read_file>\n<path>{value}</path>\n</read_file>")
            };
            format!("{before}{thinking}{action}{after}")
        })
}

proptest! {
    #[test]
    fn the_result_does_not_depend_on_how_the_text_is_split(text in reply(), sizes in proptest::collection::vec(1usize..9, 1..6)) {
        let whole = parse_reply(&text, tools());
        prop_assert_eq!(&in_chunks(&text, &[1]), &whole);
        prop_assert_eq!(&in_chunks(&text, &sizes), &whole);
        prop_assert!(whole.action.is_some() || whole.error.is_some(), "{:?}", whole);
    }

    #[test]
    fn no_input_makes_it_panic(text in "\\PC{0,200}") {
        let _ = in_chunks(&text, &[3]);
    }
}
