//! `runner serve`: runs over HTTP against the mock model, through the binary. Each test
//! starts a server on a free loopback port in its workspace and talks to it as a client
//! would (tests/support/http.rs): every wait is bounded.

mod support;

use std::time::Duration;

use runner::testing::mock_server::{MockResponse, Reply};
use serde_json::{Value, json};
use support::http::{Api, Sse};
use support::{NatsServer, Running, Test, read_events, wait_until};

const READER: &str = "prompt: Go\ntools:\n  - builtin: read_file\n";

/// `POST /api/runs` for the test agent; the run's and its session's ids.
fn start(api: &Api, body: Value) -> (String, String) {
    let started = api.post("/api/runs", &body);
    assert_eq!(started.status, 201, "{}", started.body);
    ids(&started.json())
}

fn ids(started: &Value) -> (String, String) {
    (
        started["run_id"].as_str().unwrap().to_string(),
        started["session_id"].as_str().unwrap().to_string(),
    )
}

/// The run's events.jsonl, each line checked against the events schema.
fn events_jsonl(running: &Running, run: &str) -> Vec<Value> {
    read_events(&running.path(&format!(".runner/runs/{run}/events.jsonl")))
}

fn data(events: &[Sse]) -> Vec<Value> {
    events.iter().map(Sse::json).collect()
}

/// A reply that takes a few seconds to stream: long enough to act while the run goes.
/// Reads run `run`'s events to their end, which says `completed`, and checks its answer.
fn ends_completed_with(api: &Api, run: &str, output: &str) {
    let (_, end) = api.events(run, None).until_end();
    assert_eq!(end.data, r#"{"status":"completed"}"#);
    assert_eq!(
        api.get(&format!("/api/runs/{run}")).json()["output"],
        output
    );
}

fn slow_reply() -> MockResponse {
    MockResponse::text("slow words that take their time to arrive")
        .chunk_delay(Duration::from_millis(600))
}

#[test]
fn the_event_stream_of_a_run_is_its_events_jsonl() {
    let test = Test::new()
        .agent(READER)
        .file("notes.txt", "remember the milk")
        .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
        .reply(Reply::text("Done."));
    let (running, api) = test.serve(&[]);
    let (run, session) = start(&api, json!({"agent": "test-agent"}));
    let (live, end) = api.events(&run, None).until_end();
    assert_eq!(end.data, r#"{"status":"completed"}"#);
    let ids: Vec<Option<u64>> = live.iter().map(|event| event.id).collect();
    let expected: Vec<Option<u64>> = (1..=live.len() as u64).map(Some).collect();
    assert_eq!(ids, expected, "each event's id is its line in events.jsonl");
    assert_eq!(data(&live).last().unwrap()["type"], "thread.run.completed");
    assert_eq!(data(&live), events_jsonl(&running, &run));
    // A client that comes after the run ended gets it from its start.
    let (late, _) = api.events(&run, None).until_end();
    assert_eq!(data(&late), data(&live));
    let result = api.get(&format!("/api/runs/{run}")).json();
    assert_eq!(result["status"], "completed");
    assert_eq!(result["output"], "Done.");
    assert_eq!(result["session_id"], session.as_str());
    let text = api.get(&format!("/api/runs/{run}/transcript?format=text"));
    assert!(text.body.contains("Done."), "{}", text.body);
}

#[test]
fn a_client_that_reconnects_with_last_event_id_misses_nothing_and_gets_nothing_twice() {
    let test = Test::new()
        .agent(READER)
        .file("notes.txt", "remember the milk")
        .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
        .respond(slow_reply());
    let (running, api) = test.serve(&[]);
    let (run, _) = start(&api, json!({"agent": "test-agent"}));
    let mut first = Vec::new();
    {
        let mut stream = api.events(&run, None);
        while let Some(event) = stream.next() {
            let tool_done = event.json()["type"] == "agent.tool.execution.completed";
            first.push(event);
            if tool_done {
                break;
            }
        }
    } // the connection drops mid-run: the model's slow reply is still streaming
    let result = api.get(&format!("/api/runs/{run}")).json();
    assert_eq!(result["status"], "running", "the run was still going");
    let last = first.last().unwrap().id.unwrap();
    let (rest, end) = api.events(&run, Some(last)).until_end();
    assert_eq!(end.data, r#"{"status":"completed"}"#);
    assert_eq!(rest.first().unwrap().id, Some(last + 1));
    let all: Vec<Value> = data(&first).into_iter().chain(data(&rest)).collect();
    assert_eq!(all, events_jsonl(&running, &run));
}

#[test]
fn an_ask_rule_pauses_the_run_and_an_answer_over_http_approves_the_call() {
    let agent = "prompt: Go
tools:
  - builtin: shell
    allow: [touch]
permissions:
  ask: [shell]
";
    let test = Test::new()
        .agent(agent)
        .reply(Reply::tool_call(
            "shell",
            json!({"command": "touch APPROVED"}),
        ))
        .reply(Reply::text("done"));
    let (running, api) = test.serve(&[]);
    let (run, session) = start(&api, json!({"agent": "test-agent"}));
    let (events, end) = api.events(&run, None).until_end();
    assert_eq!(end.data, r#"{"status":"input_required"}"#);
    assert!(
        data(&events)
            .iter()
            .any(|e| e["type"] == "thread.run.requires_action")
    );
    assert!(!running.path("APPROVED").exists(), "nothing ran unapproved");
    let waiting = api.get(&format!("/api/sessions/{session}")).json();
    assert_eq!(waiting["status"], "input_required");
    let call = &waiting["waits_for"]["required_action"]["calls"][0];
    assert_eq!(call["name"], "shell", "what it waits for: {waiting}");
    let answered = api.post(
        &format!("/api/sessions/{session}/answer"),
        &json!({"approve": [call["id"]]}),
    );
    assert_eq!(answered.status, 201, "{}", answered.body);
    let (next, same_session) = ids(&answered.json());
    assert_eq!(same_session, session);
    ends_completed_with(&api, &next, "done");
    assert!(running.path("APPROVED").exists(), "the approved call ran");
}

/// A program drives an agent over HTTP and runs the agent's external tool itself: the
/// session says which call waits (`waits_for`), and `tool_outputs` answers it.
#[test]
fn an_external_call_waits_and_its_output_is_submitted_over_http() {
    let agent = "prompt: Go
tools:
  - external:
      name: stock
      description: Units in stock of a product.
      parameters: { type: object, properties: { sku: { type: string } }, required: [sku] }
";
    let test = Test::new()
        .agent(agent)
        .reply(Reply::tool_call("stock", json!({"sku": "A-1"})))
        .reply(Reply::text("7 in stock"));
    let (_running, api) = test.serve(&[]);
    let (run, session) = start(&api, json!({"agent": "test-agent"}));
    let (_, end) = api.events(&run, None).until_end();
    assert_eq!(end.data, r#"{"status":"input_required"}"#);
    let waiting = api.get(&format!("/api/sessions/{session}")).json();
    let action = &waiting["waits_for"]["required_action"];
    assert_eq!(action["type"], "submit_tool_outputs", "{waiting}");
    let call = &action["submit_tool_outputs"]["tool_calls"][0];
    assert_eq!(call["arguments"], json!({"sku": "A-1"}));
    let unknown = api.post(
        &format!("/api/sessions/{session}/answer"),
        &json!({"tool_outputs": [{"tool_call_id": "call_x", "output": 1}]}),
    );
    assert_eq!(unknown.status, 400, "{}", unknown.body);
    assert!(
        unknown.body.contains("has no call `call_x`"),
        "{}",
        unknown.body
    );
    let answered = api.post(
        &format!("/api/sessions/{session}/answer"),
        &json!({"tool_outputs": [{"tool_call_id": call["id"], "output": {"units": 7}}]}),
    );
    assert_eq!(answered.status, 201, "{}", answered.body);
    let (next, _) = ids(&answered.json());
    ends_completed_with(&api, &next, "7 in stock");
}

/// Two calls denied in one answer, each with its own reason: each reason is the result
/// the model reads for its call (one reason for all used to be the only choice).
#[test]
fn each_call_denied_over_http_tells_the_model_its_own_reason() {
    let agent = "prompt: Go
tools:
  - builtin: shell
    allow: [touch]
permissions:
  ask: [shell]
";
    let test = Test::new()
        .agent(agent)
        .reply(
            Reply::tool_call("shell", json!({"command": "touch FIRST"}))
                .with_tool_call("shell", json!({"command": "touch SECOND"})),
        )
        .reply(Reply::text("understood"));
    let (running, api) = test.serve(&[]);
    let (run, session) = start(&api, json!({"agent": "test-agent"}));
    let (_, end) = api.events(&run, None).until_end();
    assert_eq!(end.data, r#"{"status":"input_required"}"#);
    let waiting = api.get(&format!("/api/sessions/{session}")).json();
    let calls = waiting["waits_for"]["required_action"]["calls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(calls.len(), 2, "two calls wait: {waiting}");
    let denials = json!([
        {"id": calls[0]["id"], "reason": "not the first"},
        {"id": calls[1]["id"], "reason": "nor the second"},
    ]);
    let answered = api.post(
        &format!("/api/sessions/{session}/answer"),
        &json!({"deny": denials}),
    );
    assert_eq!(answered.status, 201, "{}", answered.body);
    let (next, _) = ids(&answered.json());
    ends_completed_with(&api, &next, "understood");
    assert!(!running.path("FIRST").exists() && !running.path("SECOND").exists());
    let last = running.requests().pop().unwrap();
    let result_of = |call: &Value| {
        last.conversation()
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == call["id"])
            .map(|m| m["content"].clone())
    };
    assert_eq!(
        result_of(&calls[0]),
        Some(json!("Error: denied by the user: not the first"))
    );
    assert_eq!(
        result_of(&calls[1]),
        Some(json!("Error: denied by the user: nor the second"))
    );
}

#[test]
fn a_cancelled_run_ends_interrupted_and_resumes_over_http() {
    let test = Test::new()
        .agent("prompt: Go\n")
        .respond(slow_reply())
        .reply(Reply::text("resumed answer"));
    let (running, api) = test.serve(&[]);
    let (run, session) = start(&api, json!({"agent": "test-agent"}));
    wait_until("the model is called", || running.requests_made() >= 1);
    let cancelled = api.post(&format!("/api/runs/{run}/cancel"), &json!({}));
    assert_eq!(cancelled.status, 202, "{}", cancelled.body);
    let (_, end) = api.events(&run, None).until_end();
    assert_eq!(end.data, r#"{"status":"interrupted"}"#);
    assert_eq!(
        api.get(&format!("/api/runs/{run}")).json()["status"],
        "interrupted"
    );
    let resumed = api.post(&format!("/api/sessions/{session}/resume"), &json!({}));
    assert_eq!(resumed.status, 201, "{}", resumed.body);
    let (next, _) = ids(&resumed.json());
    ends_completed_with(&api, &next, "resumed answer");
}

#[test]
fn a_run_past_the_slots_and_the_queue_is_refused_with_429() {
    let test = Test::new()
        .agent("prompt: Go\n")
        .respond(slow_reply())
        .reply(Reply::text("second"));
    let (running, api) = test.serve(&["-j", "1", "--queue", "0"]);
    let (first, _) = start(&api, json!({"agent": "test-agent"}));
    wait_until("the first run calls the model", || {
        running.requests_made() >= 1
    });
    let refused = api.post("/api/runs", &json!({"agent": "test-agent"}));
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert_eq!(refused.code(), "busy");
    assert_eq!(running.requests_made(), 1, "the refused run did not start");
    // Once the slot is free, a run starts again.
    api.post(&format!("/api/runs/{first}/cancel"), &json!({}));
    api.events(&first, None).until_end();
    let (second, _) = start(&api, json!({"agent": "test-agent"}));
    let (_, end) = api.events(&second, None).until_end();
    assert_eq!(end.data, r#"{"status":"completed"}"#);
}

#[test]
fn listening_off_loopback_needs_a_token() {
    Test::new()
        .agent("prompt: Go\n")
        .command(["serve", ".", "--listen", "0.0.0.0:0"])
        .status(2)
        .stderr("error: listening on 0.0.0.0:0 needs a token: set one in an environment variable and give its name with --token-env NAME (requests then carry `Authorization: Bearer TOKEN`)\n")
        .run();
    let token = "a-token-of-some-length-42";
    let test = Test::new().agent("prompt: Go\n").env("SERVE_TOKEN", token);
    let (_running, api) = test.serve(&["--token-env", "SERVE_TOKEN"]);
    let refused = api.get("/api/agents");
    assert_eq!(refused.status, 401);
    assert_eq!(refused.code(), "unauthorized");
    assert_eq!(refused.header("www-authenticate"), Some("Bearer"));
    let wrong = api
        .with_token("a-token-of-some-length-43")
        .get("/api/agents");
    assert_eq!(wrong.status, 401);
    let agents = api.with_token(token).get("/api/agents");
    assert_eq!(agents.status, 200, "{}", agents.body);
    assert_eq!(agents.json()[0]["name"], "test-agent");
}

#[test]
fn the_web_view_is_served_without_the_token_under_a_policy_of_its_own_origin_only() {
    let token = "a-token-of-some-length-42";
    let test = Test::new().agent("prompt: Go\n").env("SERVE_TOKEN", token);
    let (_running, api) = test.serve(&["--token-env", "SERVE_TOKEN"]);
    // The page's files hold no data: they load without the token, and the page asks for it.
    for (path, kind, holds) in [
        ("/", "text/html", "/web/app.js"),
        ("/web/app.js", "text/javascript", "Authorization"),
        ("/web/style.css", "text/css", "font"),
    ] {
        let asset = api.get(path);
        assert_eq!(asset.status, 200, "{path}: {}", asset.body);
        assert!(
            asset.header("content-type").unwrap().starts_with(kind),
            "{path}"
        );
        assert!(asset.body.contains(holds), "{path}");
        let policy = asset.header("content-security-policy").unwrap();
        assert!(
            policy.starts_with("default-src 'none'; script-src 'self';"),
            "{policy}"
        );
        assert!(
            !policy.contains("unsafe") && !policy.contains("http"),
            "{policy}"
        );
        assert_eq!(asset.header("x-content-type-options"), Some("nosniff"));
    }
    // The API behind it still needs the token.
    assert_eq!(api.get("/api/sessions").status, 401);
    assert_eq!(api.get("/web/other.js").status, 401);
}

#[test]
fn bad_requests_are_answered_with_their_code_and_status() {
    let test = Test::new()
        .agent("prompt: Go\ninputs:\n  topic: { type: string, required: true }\n")
        .file("broken.yaml", "name: broken\nmodel: nope\n");
    let (running, api) = test.serve(&[]);
    let agents = api.get("/api/agents").json();
    let named = |name: &str| {
        let all = agents.as_array().unwrap();
        all.iter().find(|a| a["name"] == name).unwrap().clone()
    };
    let broken = &named("broken");
    assert_eq!(broken["valid"], false);
    assert!(
        broken["diagnostics"][0]
            .as_str()
            .unwrap()
            .starts_with("./broken.yaml:2:8: error[model]"),
        "{broken}"
    );
    assert_eq!(
        named("test-agent")["input_schema"]["required"],
        json!(["topic"])
    );
    let invalid = api.post("/api/runs", &json!({"agent": "broken"}));
    assert_eq!(
        (invalid.status, invalid.code()),
        (400, "invalid_agent".into())
    );
    let missing = api.post("/api/runs", &json!({"agent": "test-agent"}));
    assert_eq!(
        (missing.status, missing.code()),
        (400, "invalid_input".into())
    );
    let unknown = api.post("/api/runs", &json!({"agent": "nobody"}));
    assert_eq!((unknown.status, unknown.code()), (404, "not_found".into()));
    let typo = api.post("/api/runs", &json!({"agnet": "test-agent"}));
    assert_eq!((typo.status, typo.code()), (400, "bad_request".into()));
    let path = api.get("/api/runs/..%2F..%2Fetc");
    assert_eq!((path.status, path.code()), (400, "invalid_session".into()));
    let big = "x".repeat(2 * 1024 * 1024);
    let large = api.request("POST", "/api/runs", &[], Some(&big));
    assert_eq!((large.status, large.code()), (413, "body_too_large".into()));
    assert_eq!(running.requests_made(), 0, "no run started");
}

#[test]
fn sigterm_interrupts_the_runs_in_flight_and_a_new_server_resumes_them() {
    let test = Test::new()
        .agent("prompt: Go\n")
        .respond(slow_reply())
        .reply(Reply::text("resumed answer"));
    let (running, api) = test.serve(&[]);
    let (run, session) = start(&api, json!({"agent": "test-agent"}));
    wait_until("the model is called", || running.requests_made() >= 1);
    let mut stream = api.events(&run, None);
    running.terminate();
    let (_, end) = stream.until_end();
    assert_eq!(end.data, r#"{"status":"interrupted"}"#);
    let stopped = running.wait();
    assert!(
        stopped.stderr.contains("runner serve: stopped"),
        "{}",
        stopped.stderr
    );
    let (again, api) = stopped.then().serve(&[]);
    let result = api.get(&format!("/api/runs/{run}")).json();
    assert_eq!(
        result["status"], "interrupted",
        "read from its run directory"
    );
    let resumed = api.post(&format!("/api/sessions/{session}/resume"), &json!({}));
    assert_eq!(resumed.status, 201, "{}", resumed.body);
    let (next, _) = ids(&resumed.json());
    ends_completed_with(&api, &next, "resumed answer");
    drop(again);
}

/// A client that sent half a request does not hold the server's exit on SIGTERM: once the
/// runs have ended, a connection still open gets a second to finish, not the ten seconds
/// runs get (it used to hold the process for twelve).
#[test]
fn sigterm_is_not_held_by_a_client_that_sent_half_a_request() {
    use std::io::Write;
    let (running, api) = Test::new().agent("prompt: Go\n").serve(&[]);
    let mut half = std::net::TcpStream::connect(api.address()).unwrap();
    half.write_all(b"POST /api/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"agent\"")
        .unwrap();
    // Connections are accepted in order: once a later one is answered, the half request's
    // connection is one the server serves.
    assert_eq!(api.get("/api/agents").status, 200);
    let signalled = std::time::Instant::now();
    running.terminate();
    let stopped = running.wait();
    let took = signalled.elapsed();
    assert!(
        stopped.stderr.contains("runner serve: stopped"),
        "{}",
        stopped.stderr
    );
    assert!(
        took < Duration::from_secs(10),
        "the half request held the exit for {took:?}"
    );
    drop(half);
}

/// A saved agent file is checked again and served as saved: a broken file is listed with
/// its diagnostics, and once fixed it runs.
/// Clients that send half a request's head and then nothing (slowloris) cannot hold the
/// server: each is disconnected after the header timeout, and a client past the cap on
/// connections waits for a slot, then is answered.
#[test]
fn clients_that_send_half_a_head_are_disconnected_and_cannot_hold_the_server() {
    use std::io::{Read, Write};
    let args = ["--max-connections", "2", "--header-timeout", "1"];
    let (_running, api) = Test::new().agent("prompt: Go\n").serve(&args);
    let slow: Vec<std::net::TcpStream> = (0..2)
        .map(|_| {
            let mut stream = std::net::TcpStream::connect(api.address()).unwrap();
            stream
                .write_all(b"GET /api/agents HTTP/1.1\r\nHost: x\r\n")
                .unwrap();
            stream
        })
        .collect();
    // Both slots are the slow clients' until the server lets them go.
    let answered = api.get("/api/agents");
    assert_eq!(answered.status, 200, "{}", answered.body);
    for mut stream in slow {
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut answer = Vec::new();
        let closed = stream.read_to_end(&mut answer);
        assert!(closed.is_ok(), "the server closed it: {closed:?}");
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            !answer.contains(" 200 "),
            "half a request is not served: {answer}"
        );
    }
}

#[test]
fn an_agent_file_saved_while_serving_is_served_as_saved() {
    let test = Test::new()
        .agent("prompt: Go\nfoo: 1\n")
        .reply(Reply::text("fixed"));
    let (running, api) = test.serve(&[]);
    let listed = api.get("/api/agents").json();
    assert_eq!(listed[0]["valid"], false);
    assert!(
        listed[0]["diagnostics"][0]
            .as_str()
            .unwrap()
            .contains("unknown key `foo`"),
        "{listed}"
    );
    running.save(
        "agent.yaml",
        "name: test-agent\nmodel: $MODEL\nprompt: Go\n",
    );
    let listed = api.get("/api/agents").json();
    assert_eq!(listed[0]["valid"], true, "{listed}");
    assert_eq!(listed[0]["name"], "test-agent");
    let (run, _) = start(&api, json!({"agent": "test-agent"}));
    let (_, end) = api.events(&run, None).until_end();
    assert_eq!(end.data, r#"{"status":"completed"}"#);
}

/// A browser page of another origin can read the API's answers only when `--allow-origin`
/// names its origin.
#[test]
fn cors_headers_are_sent_only_to_the_origins_allowed() {
    let origin = [("Origin", "http://localhost:3000")];
    let (_plain, api) = Test::new().agent("prompt: Go\n").serve(&[]);
    let answer = api.request("GET", "/api/agents", &origin, None);
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("access-control-allow-origin"), None);
    let test = Test::new().agent("prompt: Go\n");
    let (_allowing, api) = test.serve(&["--allow-origin", "http://localhost:3000"]);
    let answer = api.request("GET", "/api/agents", &origin, None);
    assert_eq!(
        answer.header("access-control-allow-origin"),
        Some("http://localhost:3000")
    );
    let other = [("Origin", "http://evil.example")];
    let answer = api.request("GET", "/api/agents", &other, None);
    assert_eq!(answer.header("access-control-allow-origin"), None);
}

/// The API key the server holds never reaches an answer: not through a tool's result, the
/// model's text, the events, the result, the transcript or the session.
#[test]
fn no_answer_of_the_api_holds_the_key() {
    let test = Test::new()
        .agent(READER)
        .file("notes.txt", &format!("the key is {}", support::KEY))
        .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
        .reply(Reply::text(format!("It says {}.", support::KEY)));
    let (_running, api) = test.serve(&[]);
    let (run, session) = start(&api, json!({"agent": "test-agent"}));
    let (events, _) = api.events(&run, None).until_end();
    let mut answers: Vec<String> = events.iter().map(|event| event.data.clone()).collect();
    for path in [
        format!("/api/runs/{run}"),
        format!("/api/runs/{run}/transcript?format=text"),
        format!("/api/runs/{run}/transcript?format=markdown"),
        format!("/api/runs/{run}/transcript?format=json"),
        format!("/api/sessions/{session}"),
        "/api/sessions".to_string(),
    ] {
        let answer = api.get(&path);
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
        answers.push(answer.body);
    }
    let leaked: Vec<&String> = answers
        .iter()
        .filter(|a| a.contains(support::KEY))
        .collect();
    assert!(leaked.is_empty(), "the key leaked: {leaked:?}");
    assert!(
        answers.iter().any(|a| a.contains("[REDACTED]")),
        "the key was there to be redacted"
    );
}

/// `/api/openapi.json` describes every route, with the bodies' schemas generated from the
/// types the server reads and writes.
#[test]
fn the_openapi_document_has_every_route_and_the_bodies_schemas() {
    let (_running, api) = Test::new().agent("prompt: Go\n").serve(&[]);
    let document = api.get("/api/openapi.json").json();
    assert_eq!(document["openapi"], "3.0.3");
    let paths: Vec<&String> = document["paths"].as_object().unwrap().keys().collect();
    for route in [
        "/api/agents",
        "/api/runs",
        "/api/runs/{id}",
        "/api/runs/{id}/events",
        "/api/runs/{id}/transcript",
        "/api/runs/{id}/cancel",
        "/api/sessions",
        "/api/sessions/{id}",
        "/api/sessions/{id}/answer",
        "/api/sessions/{id}/resume",
    ] {
        assert!(paths.iter().any(|p| *p == route), "{route} in {paths:?}");
    }
    let schemas = &document["components"]["schemas"];
    let start = &schemas["StartRun"];
    assert_eq!(start["required"], json!(["agent"]), "{start}");
    assert!(start["properties"]["inputs"].is_object());
    assert!(schemas["AnswerRequest"]["properties"]["deny"].is_object());
    assert!(schemas["Event"].is_object(), "the events' schema is there");
    // Every reference points at a schema of the document.
    let text = document.to_string();
    for reference in text.split("\"$ref\":\"").skip(1) {
        let name = reference.split('"').next().unwrap();
        let name = name.strip_prefix("#/components/schemas/").expect(name);
        assert!(
            schemas.get(name).is_some(),
            "{name} is referenced, not defined"
        );
    }
}

const ASKER: &str = "name: asker
model: $MODEL
prompt: Go
tools:
  - builtin: shell
    allow: [touch]
permissions:
  ask: [shell]
";

const SLOW: &str = "name: slow\nmodel: $MODEL\nprompt: Go\n";

/// The session ids `GET /api/sessions` lists.
fn listed(api: &Api) -> Vec<String> {
    let sessions = api.get("/api/sessions").json();
    let ids = sessions.as_array().cloned().unwrap_or_default().into_iter();
    ids.filter_map(|s| s["session_id"].as_str().map(String::from))
        .collect()
}

/// Two servers sharing sessions over NATS, each in a working directory of its own (two
/// machines with the same agent files): a session paused on one is answered on the other,
/// a run interrupted on one by SIGTERM is resumed on the other, and both list the sessions.
#[test]
fn two_servers_over_nats_share_sessions() {
    let nats = NatsServer::start();
    let url = nats.url();
    let test = Test::new()
        .file("one/asker.yaml", ASKER)
        .file("two/asker.yaml", ASKER)
        .file("one/slow.yaml", SLOW)
        .file("two/slow.yaml", SLOW)
        .reply(Reply::tool_call(
            "shell",
            json!({"command": "touch APPROVED"}),
        ))
        .reply(Reply::text("approved on the other"))
        .respond(slow_reply())
        .reply(Reply::text("resumed on the other"));
    let (one, api_one) = test.cwd("one").serve(&["--nats", &url]);
    let (two, api_two) = one.alongside().cwd("two").serve(&["--nats", &url]);

    let (run, paused) = start(&api_one, json!({"agent": "asker"}));
    let (_, end) = api_one.events(&run, None).until_end();
    assert_eq!(end.data, r#"{"status":"input_required"}"#);
    assert!(listed(&api_two).contains(&paused), "listed on the other");
    let waiting = api_two.get(&format!("/api/sessions/{paused}")).json();
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let call = &waiting["waits_for"]["required_action"]["calls"][0];
    assert_eq!(
        call["name"], "shell",
        "what it waits for, from NATS: {waiting}"
    );
    let answered = api_two.post(
        &format!("/api/sessions/{paused}/answer"),
        &json!({"approve": [call["id"]]}),
    );
    assert_eq!(answered.status, 201, "{}", answered.body);
    ends_completed_with(&api_two, &ids(&answered.json()).0, "approved on the other");
    assert!(
        two.path("two/APPROVED").exists(),
        "the call ran on the other"
    );
    assert!(!one.path("one/.runner/sessions").exists(), "kept in NATS");

    let (run, interrupted) = start(&api_one, json!({"agent": "slow"}));
    wait_until("the slow reply starts", || one.requests_made() >= 3);
    let mut stream = api_one.events(&run, None);
    one.terminate();
    let (_, end) = stream.until_end();
    assert_eq!(end.data, r#"{"status":"interrupted"}"#);
    one.wait();
    let session = api_two.get(&format!("/api/sessions/{interrupted}")).json();
    assert_eq!(session["status"], "interrupted", "{session}");
    let resumed = api_two.post(&format!("/api/sessions/{interrupted}/resume"), &json!({}));
    assert_eq!(resumed.status, 201, "{}", resumed.body);
    ends_completed_with(&api_two, &ids(&resumed.json()).0, "resumed on the other");
    let both = listed(&api_two);
    assert!(
        both.contains(&paused) && both.contains(&interrupted),
        "{both:?}"
    );
}

/// A file whose `checkpoints: {dir: ...}` keeps its sessions elsewhere than the server's
/// sessions directory is refused before it runs, saying why: its session could not be
/// answered or resumed over the API.
#[test]
fn an_agent_that_keeps_its_sessions_elsewhere_is_refused_with_why() {
    let agent = "prompt: Go\ncheckpoints:\n  dir: elsewhere\n";
    let (running, api) = Test::new().agent(agent).reply(Reply::text("no")).serve(&[]);
    let refused = api.post("/api/runs", &json!({"agent": "test-agent"}));
    assert_eq!(
        (refused.status, refused.code()),
        (400, "invalid_agent".into())
    );
    let message = refused.json()["error"]["message"].to_string();
    assert!(
        message.contains("elsewhere") && message.contains("resumed"),
        "{message}"
    );
    assert_eq!(running.requests_made(), 0, "no run started");
}

/// A long `shell` command's lines reach an SSE client while it runs (before its result):
/// the program waits, bounded, for the client to have seen its first line.
#[test]
fn a_running_programs_lines_reach_the_event_stream_before_its_result() {
    let waiter = "#!/bin/sh
echo half way
i=0
while [ ! -e SEEN ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done
echo all done
";
    let test = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: shell\n    allow: [./wait.sh]\n")
        .executable("wait.sh", waiter)
        .reply(Reply::tool_call("shell", json!({"command": "./wait.sh"})))
        .reply(Reply::text("Done."));
    let (running, api) = test.serve(&[]);
    let (run, _) = start(&api, json!({"agent": "test-agent"}));
    let mut stream = api.events(&run, None);
    let mut seen = Vec::new();
    while let Some(event) = stream.next() {
        let event = event.json();
        let line = event["type"] == "agent.tool.output" && event["data"]["line"] == "half way";
        seen.push(event);
        if line {
            break;
        }
    }
    assert!(
        !seen
            .iter()
            .any(|e| e["type"] == "agent.tool.execution.completed"),
        "the line came before the result"
    );
    std::fs::write(running.path("SEEN"), "").unwrap();
    drop(stream);
    ends_completed_with(&api, &run, "Done.");
    let events = events_jsonl(&running, &run);
    let lines: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "agent.tool.output")
        .map(|e| &e["data"]["line"])
        .collect();
    assert_eq!(lines, [&json!("half way"), &json!("all done")]);
}
