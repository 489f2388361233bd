//! The scripted provider: ordered answers, real-looking streams, a clear end.

use std::sync::Arc;

use runner::provider::{
    ErrorKind, FinishReason, Provider, ProviderConfig, ProviderKind, ScriptedResponse, StreamDelta,
    Usage, build_provider,
};
use serde_json::json;

use crate::common::{call, request};

fn script() -> Vec<ScriptedResponse> {
    serde_json::from_value(json!([
        {"thinking": "look first", "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}],
         "usage": {"input_tokens": 100, "output_tokens": 20}},
        {"tool_calls": [{"name": "write_file", "arguments": "{\"path\": \"b\", "}]},
        {"text": "All done, bye."}
    ]))
    .unwrap()
}

#[tokio::test]
async fn answers_in_order_streams_and_then_runs_out() {
    let mut cfg = ProviderConfig::new(ProviderKind::Scripted, "script-1");
    cfg.script = script();
    let provider: Arc<dyn Provider> = build_provider(&cfg).unwrap(); // needs no key
    let req = request();

    let (r1, d1) = call(&provider, &req).await;
    let r1 = r1.unwrap();
    assert_eq!(r1.thinking[0].text, "look first");
    assert_eq!(r1.tool_calls[0].id, "call_1_1");
    assert_eq!(*r1.tool_calls[0].arguments, json!({"path": "a.txt"}));
    assert_eq!(r1.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        r1.usage,
        Usage {
            input_tokens: 100,
            output_tokens: 20,
            total_tokens: 120
        }
    );
    assert!(d1.contains(&StreamDelta::ToolCallStart {
        index: 0,
        id: "call_1_1".into(),
        name: "read_file".into()
    }));

    let r2 = call(&provider, &req).await.0.unwrap();
    assert!(
        r2.tool_calls[0].invalid_arguments.is_some(),
        "broken arguments are flagged, not fatal"
    );

    let (r3, d3) = call(&provider, &req).await;
    let r3 = r3.unwrap();
    assert_eq!(
        (r3.text.as_str(), r3.finish_reason),
        ("All done, bye.", FinishReason::Stop)
    );
    let texts: Vec<_> = d3
        .iter()
        .filter_map(|d| match d {
            StreamDelta::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, vec!["All ", "done, ", "bye."]);
    assert_eq!(r3.model, "script-1");

    let e = call(&provider, &req).await.0.unwrap_err();
    assert_eq!(e.kind, ErrorKind::ScriptExhausted);
    assert!(
        e.message.contains("3 response(s)") && e.message.contains("call 4"),
        "{e}"
    );
    assert!(!e.is_retryable());
}

#[test]
fn script_entries_reject_unknown_keys() {
    let bad = serde_json::from_value::<ScriptedResponse>(json!({"txt": "typo"}));
    assert!(bad.unwrap_err().to_string().contains("unknown field `txt`"));
}
