//! Bounds that hold whatever the run is doing: a timeout abandons the call in flight,
//! every model call is metered (middleware calls too), and a session's counts are checked
//! when they are read back.

mod support;

use std::time::Duration;

use runner::testing::mock_server::{MockResponse, Reply};
use serde_json::json;
use support::Test;

#[test]
fn a_timeout_stops_a_tool_call_in_flight() {
    let ran = Test::new()
        .agent(
            "prompt: Go\nlimits: { timeout: 500ms }\ntools:\n  - builtin: shell\n    allow: [sleep]\n",
        )
        .reply(Reply::tool_call("shell", json!({"command": "sleep 30"})))
        .reply(Reply::text("never asked"))
        .args(["--output", "json"])
        .status(3)
        .stderr_contains("timeout")
        .run();
    assert_eq!(ran.json()["limit"], "timeout");
    let completed = ran.events_of("agent.tool.execution.completed");
    assert_eq!(completed.len(), 1);
    let error = completed[0]["data"]["result"]["error"].as_str().unwrap();
    assert!(error.contains("limits.timeout"), "{error}");
    assert_eq!(ran.requests().len(), 1, "no model call after the bound");
}

#[test]
fn a_timeout_abandons_a_stream_that_hangs() {
    let ran = Test::new()
        .agent("prompt: Go\nlimits: { timeout: 300ms }\n")
        .respond(MockResponse::text("a b c d e f").chunk_delay(Duration::from_secs(2)))
        .args(["--output", "json"])
        .status(3)
        .stderr_contains("timeout")
        .run();
    assert_eq!(ran.json()["limit"], "timeout");
    assert_eq!(ran.json()["output"], serde_json::Value::Null);
}

#[test]
fn summarize_calls_are_counted_and_emitted() {
    let ran = Test::new()
        .agent(
            "prompt: Go\ntools:\n  - builtin: read_file\nmiddleware:\n  - summarize: { threshold: 1, keep_recent: 1 }\n",
        )
        .file("notes.txt", "some notes\n")
        .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
        .reply(Reply::text("the summary"))
        .reply(Reply::text("done"))
        .args(["--output", "json"])
        .stdout_contains("\"output\": \"done\"")
        .run();
    let envelope = ran.json();
    assert_eq!(envelope["llm_calls"], 3, "the summary call counts");
    assert_eq!(envelope["usage"]["total_tokens"], 45);
    assert_eq!(ran.events_of("agent.llm.usage").len(), 3);
}

#[test]
fn summarize_calls_are_bounded_by_max_tokens() {
    Test::new()
        .agent(
            "prompt: Go\nlimits: { max_tokens: 20 }\ntools:\n  - builtin: read_file\nmiddleware:\n  - summarize: { threshold: 1, keep_recent: 1 }\n",
        )
        .file("notes.txt", "some notes\n")
        .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
        .reply(Reply::text("the summary"))
        .reply(Reply::text("never asked"))
        .status(3)
        .stderr_contains("max_tokens")
        .run();
}

#[test]
fn a_hand_edited_count_in_a_checkpoint_is_refused_not_wrapped() {
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: ask_user\n")
        .reply(Reply::tool_call("ask_user", json!({"question": "Which?"})))
        .status(4)
        .any_stderr()
        .run();
    let path = ran.session_file("checkpoint.json");
    let mut checkpoint: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    checkpoint["state"]["llmCalls"] = json!(u64::MAX);
    std::fs::write(&path, checkpoint.to_string()).unwrap();
    let session = ran.session();
    ran.then()
        .command(["resume", &session, "--answer", "this", "--run-dir", "run2"])
        .status(2)
        .stderr_contains("llm_calls")
        .run();
    assert_eq!(ran.requests().len(), 1, "no model call after the refusal");
}

/// UAP §2.4, infinite by default: the plan strategy's bounds are the file's. Without
/// `max_plans` a run makes as many plans as it needs (it used to stop at a built-in 3).
#[test]
fn a_plan_run_makes_as_many_plans_as_it_needs_unless_the_file_says() {
    let plan = r#"{"steps": [{"id": "a", "description": "answer"}]}"#;
    let mut test = Test::new().agent("prompt: Go\nexecution: { strategy: plan }\n");
    for _ in 0..4 {
        test = test.reply(Reply::text("no plan here"));
    }
    let ran = test
        .reply(Reply::text(plan))
        .reply(Reply::text("step done"))
        .reply(Reply::text("All done."))
        .stdout("All done.\n")
        .run();
    assert_eq!(ran.requests().len(), 7, "five plans, one step, one answer");
    // The file's own bound still holds.
    Test::new()
        .agent("prompt: Go\nexecution: { strategy: plan, max_plans: 2 }\n")
        .reply(Reply::text("no plan here"))
        .reply(Reply::text("no plan here"))
        .reply(Reply::text("never asked"))
        .status(3)
        .stderr_contains("max_plans")
        .run();
}

/// Without `max_step_calls` a plan step makes as many calls as it needs (it used to stop
/// at a built-in 25).
#[test]
fn a_plan_step_makes_as_many_calls_as_it_needs_unless_the_file_says() {
    let plan = r#"{"steps": [{"id": "a", "description": "look around"}]}"#;
    let mut test = Test::new()
        .agent("prompt: Go\nexecution: { strategy: plan }\ntools:\n  - builtin: list_dir\n")
        .reply(Reply::text(plan));
    for _ in 0..30 {
        test = test.reply(Reply::tool_call("list_dir", json!({"path": "."})));
    }
    let ran = test
        .reply(Reply::text("looked 30 times"))
        .reply(Reply::text("Done."))
        .stdout("Done.\n")
        .run();
    assert_eq!(ran.requests().len(), 33);
}

/// A plan step's bound, when the file sets one.
#[test]
fn a_plan_step_is_bounded_by_execution_max_step_calls() {
    let plan = r#"{"steps": [{"id": "a", "description": "look around"}]}"#;
    let ran = Test::new()
        .agent(
            "prompt: Go\nexecution: { strategy: plan, max_step_calls: 2 }\ntools:\n  - builtin: list_dir\n",
        )
        .reply(Reply::text(plan))
        .reply(Reply::tool_call("list_dir", json!({"path": "."})))
        .reply(Reply::tool_call("list_dir", json!({"path": "."})))
        .reply(Reply::text("never asked"))
        .args(["--output", "json"])
        .status(3)
        .stderr_contains("max_step_calls")
        .run();
    assert_eq!(ran.json()["limit"], "max_step_calls");
    assert_eq!(
        ran.requests().len(),
        3,
        "the plan and two calls of its step"
    );
}

#[test]
fn output_retries_bound_the_answers_that_do_not_match() {
    let ran = Test::new()
        .agent("prompt: Go\noutput:\n  schema: { type: object, required: [ok] }\n  retries: 0\n")
        .reply(Reply::text("not json"))
        .reply(Reply::text("{\"ok\": true}"))
        .args(["--output", "json"])
        .status(1)
        .stderr_contains("structured_output")
        .run();
    assert_eq!(ran.json()["error"]["code"], "structured_output");
    assert_eq!(ran.requests().len(), 1, "no second answer was asked for");
}

#[test]
fn format_retries_bound_the_replies_without_an_action() {
    let ran = Test::new()
        .agent(
            "prompt: Go\ntool_protocol: xml\nexecution: { format_retries: 1 }\ntools:\n  - builtin: read_file\n",
        )
        .reply(Reply::text("no action here"))
        .reply(Reply::text("still none"))
        .reply(Reply::text("never asked"))
        .args(["--output", "json"])
        .status(1)
        .stderr_contains("xml_format")
        .run();
    assert_eq!(ran.json()["error"]["code"], "xml_format");
    assert_eq!(ran.requests().len(), 2, "one retry, then the run fails");
}

#[test]
fn the_calls_of_a_reply_past_max_calls_per_turn_are_tool_errors() {
    let mut reply = Reply::tool_call("list_dir", json!({"path": "."}));
    for _ in 1..5 {
        reply = reply.with_tool_call("list_dir", json!({"path": "."}));
    }
    let ran = Test::new()
        .agent("prompt: Go\nexecution: { max_calls_per_turn: 3 }\ntools:\n  - builtin: list_dir\n")
        .reply(reply)
        .reply(Reply::text("done"))
        .args(["--output", "json"])
        .stdout_contains("\"output\": \"done\"")
        .run();
    assert_eq!(ran.json()["tool_calls"], 3);
    let refused: Vec<String> = ran
        .events_of("agent.tool.execution.completed")
        .iter()
        .filter_map(|e| e["data"]["result"]["error"].as_str().map(String::from))
        .collect();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(
        refused[0].contains("execution.max_calls_per_turn"),
        "{refused:?}"
    );
}
