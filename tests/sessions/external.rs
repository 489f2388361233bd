//! Client-side tools (`- external:`): a call pauses the run (exit 4) with a
//! `requires_action` of type `submit_tool_outputs`, and `runner resume --tool-output`
//! gives the model its output.

use runner::testing::mock_server::{MockRequest, MockResponse, Reply};
use serde_json::{Value, json};

use super::support::Test;

/// An agent with one external tool beside a built-in one.
const SHOP: &str = "prompt: Where is order 42?
tools:
  - external:
      name: lookup_order
      description: Looks an order up in the shop's database.
      parameters:
        type: object
        properties: { id: { type: string } }
        required: [id]
  - builtin: write_file
";

#[test]
fn an_external_call_pauses_the_run_and_its_submitted_output_continues_it() {
    let ran = Test::new()
        .agent(SHOP)
        .reply(
            Reply::tool_call("lookup_order", json!({"id": "42"})).with_tool_call(
                "write_file",
                json!({"path": "note.txt", "content": "asked"}),
            ),
        )
        .args(["--output", "json"])
        .status(4)
        .stderr_contains("--tool-output CALL_ID=JSON")
        .run();
    assert_eq!(
        ran.read("note.txt"),
        "asked",
        "the ordinary call beside it ran"
    );
    let envelope = ran.json();
    assert_eq!(envelope["status"], "input_required");
    let message = envelope["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "waits for tool outputs: submit the output of `lookup_order` (call call_mock1_0)"
        ),
        "{message}"
    );
    let action = &ran.events_of("thread.run.requires_action")[0]["data"]["required_action"];
    assert_eq!(action["type"], "submit_tool_outputs");
    assert_eq!(
        action["submit_tool_outputs"]["tool_calls"],
        json!([{"id": "call_mock1_0", "name": "lookup_order", "arguments": {"id": "42"}}])
    );
    assert!(
        ran.transcript().contains("tool_outputs"),
        "{}",
        ran.transcript()
    );

    let session = ran.session();
    ran.then()
        .command(["resume", &session, "--run-dir", "run2"])
        .status(2)
        .stderr_contains(
            "waits for the outputs of call_mock1_0 (`lookup_order`): pass --tool-output CALL_ID=JSON for call_mock1_0",
        )
        .run();
    ran.then()
        .command([
            "resume",
            &session,
            "--tool-output",
            "call_9=1",
            "--run-dir",
            "run3",
        ])
        .status(2)
        .stderr_contains("has no call `call_9` waiting for its output")
        .run();
    ran.then()
        .command([
            "resume",
            &session,
            "--tool-output",
            "call_mock1_0=shipped",
            "--run-dir",
            "run4",
        ])
        .status(2)
        .stderr_contains("--tool-output for call `call_mock1_0`: the value is not JSON")
        .run();
    let resumed = ran
        .then()
        .file("order.json", r#"{"status": "shipped", "carrier": "DHL"}"#)
        .reply(Reply::text("Order 42 has shipped with DHL."))
        .command([
            "resume",
            &session,
            "--tool-output",
            "call_mock1_0=@order.json",
            "--run-dir",
            "run5",
            "--output",
            "json",
        ])
        .run();
    let result = resumed.json();
    assert_eq!(result["output"], "Order 42 has shipped with DHL.");
    assert_eq!(
        result["tool_calls"], 2,
        "the session's calls, each counted once: write_file and the external call"
    );
    let last = resumed.requests().pop().unwrap();
    let results = last.tool_results();
    assert_eq!(
        results
            .iter()
            .map(|(id, _)| id.as_str())
            .collect::<Vec<_>>(),
        ["call_mock1_0", "call_mock1_1"],
        "results in the order the model made the calls"
    );
    let output: Value = serde_json::from_str(&results[0].1).unwrap();
    assert_eq!(output, json!({"status": "shipped", "carrier": "DHL"}));
    let completed = resumed.events_of("agent.tool.execution.completed");
    assert!(
        completed
            .iter()
            .any(|e| e["data"]["toolCallId"] == "call_mock1_0"
                && e["data"]["result"]["success"] == true),
        "the submitted output is the call's result in the events"
    );
}

#[test]
fn an_external_call_with_arguments_off_its_schema_is_a_tool_error_not_a_pause() {
    let ran = Test::new()
        .agent(SHOP)
        .reply(Reply::tool_call("lookup_order", json!({"order": 42})))
        .reply(Reply::text("I could not look it up."))
        .stdout("I could not look it up.\n")
        .run();
    let last = ran.requests().pop().unwrap();
    let (_, told) = &last.tool_results()[0];
    assert!(told.contains("invalid arguments"), "{told}");
    assert!(told.contains("\"id\" is a required property"), "{told}");
}

#[test]
fn outputs_are_submitted_for_every_external_call_of_a_turn_at_once() {
    let ran = Test::new()
        .agent(SHOP)
        .reply(
            Reply::tool_call("lookup_order", json!({"id": "1"}))
                .with_tool_call("lookup_order", json!({"id": "2"})),
        )
        .status(4)
        .any_stderr()
        .run();
    let session = ran.session();
    ran.then()
        .command([
            "resume",
            &session,
            "--tool-output",
            r#"call_mock1_0="open""#,
            "--run-dir",
            "run2",
        ])
        .status(2)
        .stderr_contains("pass --tool-output CALL_ID=JSON for call_mock1_1")
        .run();
    ran.then()
        .command([
            "resume",
            &session,
            "--tool-output",
            r#"call_mock1_0="open""#,
            "--tool-output",
            r#"call_mock1_0="closed""#,
            "--run-dir",
            "run3",
        ])
        .status(2)
        .stderr_contains("the output of call `call_mock1_0` is given twice")
        .run();
    let resumed = ran
        .then()
        .reply(Reply::text("One is open, two is closed."))
        .command([
            "resume",
            &session,
            "--tool-output",
            r#"call_mock1_1="closed""#,
            "--tool-output",
            r#"call_mock1_0="open""#,
            "--run-dir",
            "run4",
        ])
        .stdout("One is open, two is closed.\n")
        .run();
    let told = resumed.requests().pop().unwrap().tool_results();
    assert_eq!(
        told,
        [
            ("call_mock1_0".to_string(), "open".to_string()),
            ("call_mock1_1".to_string(), "closed".to_string())
        ],
        "a string output is the text the model reads"
    );
}

const CALLER: &str = "system: You are ROOT.
prompt: Find order 42.
tools:
  - name: clerk
    description: Asks the clerk.
    parameters: { type: object, properties: { q: { type: string } }, required: [q] }
    agent:
      name: clerk
      system: You are CLERK.
      tools:
        - external:
            name: lookup_order
            description: Looks an order up.
            parameters: { type: object, properties: { id: { type: string } } }
";

/// Answers ROOT and CLERK from their own scripts, by system prompt.
fn by_agent(
    root: Vec<Reply>,
    clerk: Vec<Reply>,
) -> impl Fn(&MockRequest) -> Option<MockResponse> + Send + Sync + 'static {
    let scripts = std::sync::Mutex::new((root.into_iter(), clerk.into_iter()));
    move |request: &MockRequest| {
        let system = request.system_prompt().unwrap_or_default();
        let mut scripts = scripts.lock().unwrap();
        let reply = match system.contains("CLERK") {
            true => scripts.1.next(),
            false => scripts.0.next(),
        };
        reply.map(MockResponse::reply)
    }
}

#[test]
fn a_sub_agents_external_call_pauses_the_whole_run_and_its_output_goes_to_the_sub_agent() {
    let ran = Test::new()
        .agent(CALLER)
        .route(by_agent(
            vec![
                Reply::tool_call("clerk", json!({"q": "order 42"})),
                Reply::text("The clerk says: shipped."),
            ],
            vec![
                Reply::tool_call("lookup_order", json!({"id": "42"})),
                Reply::text("shipped"),
            ],
        ))
        .status(4)
        .stderr_contains("`clerk` waits for tool outputs")
        .run();
    let root = ran
        .events_of("thread.run.requires_action")
        .into_iter()
        .find(|e| e["depth"] == 0)
        .expect("the root pauses");
    let action = &root["data"]["required_action"];
    assert_eq!(action["agent"], "clerk");
    let call = action["submit_tool_outputs"]["tool_calls"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let session = ran.session();
    let resumed = ran
        .then()
        .command([
            "resume",
            &session,
            "--tool-output",
            &format!("{call}={}", json!({"status": "shipped"})),
            "--run-dir",
            "run2",
        ])
        .stdout("The clerk says: shipped.\n")
        .run();
    let clerk: Vec<MockRequest> = resumed
        .requests()
        .into_iter()
        .filter(|r| r.system_prompt().unwrap_or_default().contains("CLERK"))
        .collect();
    assert_eq!(clerk.len(), 2, "the clerk goes on, not again");
    assert_eq!(
        clerk[1].tool_results(),
        [(call, r#"{"status":"shipped"}"#.to_string())]
    );
}
