//! A2A end to end: the real binary, the mock model server, and the official A2A JavaScript
//! SDK (`@a2a-js/sdk`, A2A 1.0; installed by `.ci/run` with `npm ci --prefix tests/a2a`).

mod support;

use std::process::Command;

use runner::testing::mock_server::Reply;
use serde_json::{Value, json};
use support::{KEY, Test};

// ---- The A2A server: `runner serve`'s `/a2a/{agent}` ----

/// The SDK's client (`tests/a2a/client.mjs`) run with `plan`, on the node 22 that
/// `tests/mcp-server` installs; one JSON value per step.
fn a2a_client(plan: Value) -> Vec<Value> {
    let node = support::root().join("tests/mcp-server/node_modules/.bin/node");
    let output = Command::new(node)
        .arg(support::root().join("tests/a2a/client.mjs"))
        .arg(plan.to_string())
        .env(support::KEY_ENV, KEY)
        .env("NO_COLOR", "1")
        .current_dir(support::root().join("tests/a2a"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the client failed\n--- stdout\n{stdout}--- stderr\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// `runner serve` in the test's workspace (with ARGS); the server and its address.
fn serve_a2a(test: Test, args: &[&str]) -> (support::Running, support::http::Api, String) {
    let (running, api) = test.serve(args);
    let base = format!("http://{}/a2a", api.address());
    (running, api, base)
}

fn text(parts: &Value) -> String {
    let parts = parts.as_array().cloned().unwrap_or_default();
    let texts: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
    texts.join("\n")
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or_default()
}

/// The status updates' states and texts, and the artifacts, of a stream's events.
fn updates(events: &Value) -> (Vec<String>, Vec<Value>) {
    let mut states = Vec::new();
    let mut artifacts = Vec::new();
    for event in events.as_array().unwrap() {
        if let Some(update) = event.get("statusUpdate") {
            let said = text(&update["status"]["message"]["parts"]);
            states.push(format!("{} {said}", state(update)).trim().to_string());
        }
        if let Some(update) = event.get("artifactUpdate") {
            artifacts.push(update["artifact"].clone());
        }
    }
    (states, artifacts)
}

const REVIEWER: &str = "name: reviewer
description: Reviews a file and says what it thinks.
model: $MODEL
inputs:
  file: { type: string, description: The file to review, required: true }
prompt: Review {{ file }}.
output:
  schema: { type: object, required: [verdict], properties: { verdict: { type: string } } }
";

/// Each agent has an Agent Card at its well-known path (its name, description, a skill
/// that says how to give its input, streaming yes, push notifications no, its JSON-RPC
/// URL); the SDK's client sends a message (the answer an artifact), streams a run to its
/// end (the task, `working` updates from its steps, the artifact, `completed`), gets a
/// task; a typed agent takes a data part and answers with its structured value; bad input,
/// a limit, an unknown task or agent and 0.3's methods are clear errors.
#[test]
fn a2a_serves_cards_and_runs_messages_sent_and_streamed() {
    let test = Test::new()
        .agent("description: Greets people.\nprompt: Greet {{ input }}.\n")
        .file("reviewer.yaml", REVIEWER)
        .file(
            "busy.yaml",
            "name: busy\nmodel: $MODEL\nprompt: Go\ntools:\n  - builtin: list_dir\nlimits: { max_llm_calls: 1 }\n",
        )
        .reply(Reply::text("Hello, Ann!"))
        .reply(Reply::text("Hello, Bob!"))
        .reply(Reply::text(r#"{"verdict": "fine"}"#))
        .reply(Reply::tool_call("list_dir", json!({})));
    let (running, api, base) = serve_a2a(test, &[]);
    let greeter = format!("{base}/test-agent/");
    let reviewer = format!("{base}/reviewer/");
    let said = |text: &str| json!({"parts": [{"text": text}]});
    let answers = a2a_client(json!({"steps": [
        {"card": greeter},
        {"card": reviewer},
        {"send": greeter, "message": said("Ann")},
        {"stream": greeter, "message": said("Bob")},
        {"get": greeter, "id": "$task"},
        {"send": reviewer, "message": {"parts": [{"data": {"file": "a.txt"}}]}},
        {"send": reviewer, "message": said("a.txt")},
        {"send": reviewer, "message": {"parts": [{"data": {"path": "a.txt"}}]}},
        {"send": format!("{base}/busy/"), "message": said("go")},
        {"get": greeter, "id": "no-such-task"},
        {"card": format!("{base}/nobody/")},
    ]}));

    let card = &answers[0]["card"];
    assert_eq!(card["name"], "test-agent");
    assert_eq!(card["description"], "Greets people.");
    assert_eq!(
        card["supportedInterfaces"],
        json!([{"url": format!("{base}/test-agent"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}])
    );
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(card["capabilities"]["pushNotifications"], false);
    assert_eq!(card["defaultInputModes"], json!(["text/plain"]));
    let skill = &answers[1]["card"]["skills"][0];
    assert_eq!(skill["id"], "reviewer");
    let about = skill["description"].as_str().unwrap();
    assert!(
        about.contains("- file (string, required): The file to review"),
        "{about}"
    );
    assert_eq!(skill["inputModes"], json!(["application/json"]));
    assert_eq!(skill["outputModes"], json!(["application/json"]));

    let sent = &answers[2]["task"];
    assert_eq!(state(sent), "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(text(&sent["artifacts"][0]["parts"]), "Hello, Ann!");
    assert_eq!(sent["history"][0]["role"], "ROLE_USER");
    assert_eq!(sent["history"][0]["taskId"], sent["id"]);

    let events = &answers[3]["events"];
    assert_eq!(
        events[0]["task"]["contextId"].as_str().map(str::len),
        Some(36)
    );
    let (states, artifacts) = updates(events);
    assert_eq!(
        states,
        [
            "TASK_STATE_WORKING",
            "TASK_STATE_WORKING step 1",
            "TASK_STATE_COMPLETED"
        ],
        "{events}"
    );
    assert_eq!(text(&artifacts[0]["parts"]), "Hello, Bob!");
    let got = &answers[4]["task"];
    assert_eq!(got["id"], events[0]["task"]["id"]);
    assert_eq!(state(got), "TASK_STATE_COMPLETED");

    let reviewed = &answers[5]["task"];
    assert_eq!(
        reviewed["artifacts"][0]["parts"],
        json!([{"data": {"verdict": "fine"}}])
    );
    let untyped = &answers[6]["error"];
    assert_eq!(untyped["code"], -32602, "{untyped}");
    assert!(
        untyped["message"]
            .as_str()
            .unwrap()
            .contains("as a data part"),
        "{untyped}"
    );
    let wrong = &answers[7]["error"];
    assert_eq!(wrong["code"], -32602, "{wrong}");
    assert!(
        wrong["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid_input: "),
        "{wrong}"
    );

    let limited = &answers[8]["task"];
    assert_eq!(state(limited), "TASK_STATE_FAILED", "{limited}");
    let why = &limited["status"]["message"]["parts"];
    assert!(text(why).starts_with("limit_reached: "), "{why}");
    assert_eq!(why[1]["data"]["code"], "limit_reached");

    assert_eq!(answers[9]["error"]["code"], -32001, "{}", answers[9]);
    let nobody = answers[10]["error"]["message"].as_str().unwrap();
    assert!(nobody.contains("404"), "{nobody}");

    // A2A 0.3's method names are refused with the version error; a page of another site
    // is refused (DNS rebinding), as on /mcp.
    let legacy = json!({"jsonrpc": "2.0", "id": 7, "method": "message/send", "params": {}});
    let refused = api.post("/a2a/test-agent", &legacy).json();
    assert_eq!(refused["error"]["code"], -32009, "{refused}");
    assert_eq!(refused["id"], 7);
    let get = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}});
    let page = api.request(
        "POST",
        "/a2a/test-agent",
        &[("Origin", "http://evil.example")],
        Some(&get.to_string()),
    );
    assert_eq!(page.status, 403, "{}", page.body);
    // A message is bounded, as every request body of the server.
    let huge = json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": {
        "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x".repeat(2 << 20)}]}}});
    let refused = api.post("/a2a/test-agent", &huge);
    assert_eq!(refused.status, 413, "{}", refused.body);
    assert_eq!(refused.json()["error"]["code"], -32600);
    running.terminate();
    running.wait();
}

const ASKS: &str = "description: Asks, then writes.\nprompt: Go\ntools:\n  - builtin: ask_user\n  - builtin: write_file\npermissions:\n  ask: [write_file]\n";

/// A run that asks a question (`ask_user`) is `input-required` with the question; a
/// message on the task answers it and the run goes on, to a call an `ask` rule holds:
/// `input-required` again with the call and how to approve it; a data part
/// `{"approve": true}` lets it run, and the task completes. The context is the session.
#[test]
fn a2a_input_required_is_answered_by_a_message_on_the_task() {
    let test = Test::new()
        .agent(ASKS)
        .reply(Reply::tool_call(
            "ask_user",
            json!({"question": "Which colour?"}),
        ))
        .reply(Reply::tool_call(
            "write_file",
            json!({"path": "colour.txt", "content": "blue"}),
        ))
        .reply(Reply::text("Written."));
    let (running, _api, base) = serve_a2a(test, &[]);
    let agent = format!("{base}/test-agent/");
    let answers = a2a_client(json!({"steps": [
        {"send": agent, "message": {"parts": [{"text": "Go"}]}},
        {"stream": agent, "message": {"taskId": "$task", "parts": [{"text": "blue"}]}},
        {"send": agent, "message": {"taskId": "$task", "contextId": "$context", "parts": [{"data": {"approve": true}}]}},
        {"send": agent, "message": {"taskId": "$task", "parts": [{"text": "again"}]}},
    ]}));
    let asked = &answers[0]["task"];
    assert_eq!(state(asked), "TASK_STATE_INPUT_REQUIRED", "{asked}");
    let question = text(&asked["status"]["message"]["parts"]);
    assert!(question.starts_with("Which colour?\n"), "{question}");
    assert_eq!(
        asked["status"]["message"]["parts"][1]["data"]["waitsFor"]["type"],
        "user_input"
    );

    let (states, _) = updates(&answers[1]["events"]);
    let held = states.last().unwrap();
    assert!(
        held.starts_with("TASK_STATE_INPUT_REQUIRED")
            && held.contains(
                "- write_file {\"path\":\"colour.txt\",\"content\":\"blue\"} (ask: write_file)"
            )
            && held.contains("{\"approve\": true}"),
        "{states:?}"
    );
    let approved = &answers[2]["task"];
    assert_eq!(state(approved), "TASK_STATE_COMPLETED", "{approved}");
    assert_eq!(approved["id"], asked["id"]);
    assert_eq!(approved["contextId"], asked["contextId"]);
    assert_eq!(text(&approved["artifacts"][0]["parts"]), "Written.");
    // The history: the client's messages and the agent's questions, not its progress.
    let roles: Vec<&str> = approved["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "ROLE_USER",
            "ROLE_AGENT",
            "ROLE_USER",
            "ROLE_AGENT",
            "ROLE_USER"
        ]
    );
    assert_eq!(
        approved["metadata"]["runner"]["runIds"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        std::fs::read_to_string(running.path("colour.txt")).unwrap(),
        "blue"
    );

    // An ended task takes no more messages: its context continues.
    let ended = &answers[3]["error"];
    assert_eq!(ended["code"], -32004, "{ended}");
    assert!(
        ended["message"].as_str().unwrap().contains("contextId"),
        "{ended}"
    );
    running.terminate();
    let ran = running.wait();
    let answered = ran.requests()[1].body.to_string();
    assert!(answered.contains("blue"), "{answered}");
}

/// `CancelTask` interrupts the task's run (checkpointed): the stream ends `canceled`, and a
/// message on its context continues the session in a new task; a stream left early is
/// picked up again with `SubscribeToTask` to the task's end; an ended task cannot be
/// canceled.
#[test]
fn a2a_cancels_a_task_and_resubscribes_to_one() {
    let test = Test::new()
        .agent("description: Waits.\nprompt: Go\ntools:\n  - builtin: shell\n    allow: [sleep]\n")
        .reply(Reply::tool_call("shell", json!({"command": "sleep 30"})))
        .reply(Reply::text("Going on."))
        .reply(Reply::tool_call("shell", json!({"command": "sleep 3"})))
        .reply(Reply::text("Slept."));
    let (running, _api, base) = serve_a2a(test, &[]);
    let agent = format!("{base}/test-agent/");
    let answers = a2a_client(json!({"steps": [
        {"stream": agent, "message": {"parts": [{"text": "Go"}]}, "cancelOn": "calls shell"},
        {"cancel": agent, "id": "$task"},
        {"send": agent, "message": {"contextId": "$context", "parts": [{"text": "Go on"}]}},
        {"send": agent, "message": {"contextId": "$context", "parts": [{"text": "More"}]}},
        {"stream": agent, "message": {"parts": [{"text": "Go"}]}, "leaveOn": "calls shell"},
        {"resubscribe": agent, "id": "$task"},
        {"get": agent, "id": "$task"},
    ]}));
    let (states, _) = updates(&answers[0]["events"]);
    assert!(
        states
            .last()
            .unwrap()
            .starts_with("TASK_STATE_CANCELED interrupted: "),
        "{states:?}"
    );
    assert_eq!(state(&answers[0]["cancelled"]), "TASK_STATE_CANCELED");
    assert_eq!(answers[1]["error"]["code"], -32002, "{}", answers[1]);

    // A message on the interrupted session's context continues it, in a new task; a
    // completed session is not continued.
    let continued = &answers[2]["task"];
    assert_eq!(state(continued), "TASK_STATE_COMPLETED", "{continued}");
    assert_eq!(continued["contextId"], answers[0]["cancelled"]["contextId"]);
    assert_ne!(continued["id"], answers[0]["cancelled"]["id"]);
    assert_eq!(text(&continued["artifacts"][0]["parts"]), "Going on.");
    let completed = answers[3]["error"]["message"].as_str().unwrap();
    assert!(completed.contains("is completed"), "{completed}");

    let events = &answers[5]["events"];
    assert_eq!(
        events[0]["task"]["id"], answers[6]["task"]["id"],
        "{events}"
    );
    let (states, artifacts) = updates(events);
    assert_eq!(states.last().unwrap(), "TASK_STATE_COMPLETED", "{states:?}");
    assert_eq!(text(&artifacts[0]["parts"]), "Slept.");
    running.terminate();
    running.wait();
}

/// With `--token-env`, the card and the JSON-RPC endpoint need the token (401 without);
/// the card declares the bearer scheme, and the SDK's client that sends the token runs
/// the agent. With `--allow-origin`, a page of that origin may send the A2A headers.
#[test]
fn a2a_needs_the_servers_token() {
    let token = "a-token-of-some-length-42";
    let test = Test::new()
        .agent("description: Greets.\nprompt: Go\n")
        .env("SERVE_TOKEN", token)
        .reply(Reply::text("Hi."));
    let page = "http://localhost:3000";
    let args = ["--token-env", "SERVE_TOKEN", "--allow-origin", page];
    let (running, api, base) = serve_a2a(test, &args);
    let refused = api.get("/a2a/test-agent/.well-known/agent-card.json");
    assert_eq!(refused.status, 401, "{}", refused.body);
    // A page of an allowed origin may send what an A2A client sends.
    let preflight = api.request(
        "OPTIONS",
        "/a2a/test-agent",
        &[
            ("Origin", page),
            ("Access-Control-Request-Method", "POST"),
            (
                "Access-Control-Request-Headers",
                "authorization,content-type,a2a-version",
            ),
        ],
        None,
    );
    let allowed = preflight
        .header("access-control-allow-headers")
        .unwrap_or_default();
    assert!(allowed.contains("a2a-version"), "{:?}", preflight.headers);
    let get = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}});
    assert_eq!(api.post("/a2a/test-agent", &get).status, 401);
    let agent = format!("{base}/test-agent/");
    let answers = a2a_client(json!({
        "headers": {"Authorization": format!("Bearer {token}")},
        "steps": [
            {"card": agent},
            {"send": agent, "message": {"parts": [{"text": "hello"}]}},
        ],
    }));
    let card = &answers[0]["card"];
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert_eq!(text(&answers[1]["task"]["artifacts"][0]["parts"]), "Hi.");
    running.terminate();
    running.wait();
}
