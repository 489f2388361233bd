//! `runner exec` end to end: the real binary against the mock model server over loopback
//! HTTP, asserting on stdout, exit codes, result.json and events.jsonl.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use runner::testing::mock_server::{MockResponse, MockServer, Reply};
use serde_json::{Value, json};
use support::{Outcome, Run, tempdir};

const KEY_ENV: &str = "RUNNER_TEST_KEY";
const KEY: &str = "sk-test-not-a-real-key-1234";

/// A workspace with one agent file talking to `mock` over the OpenAI wire.
struct Case {
    dir: PathBuf,
}

impl Case {
    fn new(mock: &MockServer, body: &str) -> Self {
        Self::with_model(
            &format!(
                "model: {{ provider: openai, name: mock-model, base_url: \"{}\", api_key_env: {KEY_ENV}, retry: {{ max_attempts: 1 }} }}",
                mock.openai_base_url()
            ),
            body,
        )
    }

    fn with_model(model: &str, body: &str) -> Self {
        let dir = tempdir("exec");
        std::fs::write(
            dir.join("agent.yaml"),
            format!("name: test-agent\n{model}\n{body}"),
        )
        .unwrap();
        std::fs::write(dir.join("notes.txt"), "line one\nline two\n").unwrap();
        Case { dir }
    }

    fn run(&self, extra: &[&str]) -> Outcome {
        self.command(extra).run()
    }

    fn command(&self, extra: &[&str]) -> Run {
        let mut args = vec!["exec", "agent.yaml", "--run-dir", "run"];
        args.extend_from_slice(extra);
        Run::new(args).current_dir(&self.dir).env(KEY_ENV, KEY)
    }

    fn result(&self) -> Value {
        read_json(&self.dir.join("run/result.json"))
    }

    /// The run's events, each checked against schemas/events.schema.json.
    fn events(&self) -> Vec<Value> {
        support::read_events(&self.dir.join("run/events.jsonl"))
    }

    fn event_types(&self) -> Vec<String> {
        self.events()
            .iter()
            .map(|e| e["type"].as_str().unwrap().to_string())
            .collect()
    }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn tool_message(request: &runner::testing::mock_server::MockRequest) -> Option<Value> {
    request.body["messages"]
        .as_array()?
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
}

#[test]
fn quickstart_runs_offline_and_answers() {
    let outcome = Run::new([
        "exec",
        "examples/quickstart.yaml",
        "--run-dir",
        "target/quickstart-run",
    ])
    .run();
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(
        outcome.stdout,
        "This project is `runner`, a declarative agent runner.\n"
    );
    let result = read_json(&support::root().join("target/quickstart-run/result.json"));
    assert_eq!(result["status"], "completed");
    assert_eq!(result["tool_calls"], 1);
    assert_eq!(result["llm_calls"], 2);
    assert_eq!(result["usage"]["total_tokens"], 412);
}

#[test]
fn loop_calls_a_tool_and_answers_over_the_openai_wire() {
    let mock = MockServer::start();
    mock.push(MockResponse::reply(Reply::tool_call(
        "read_file",
        json!({"path": "notes.txt"}),
    )));
    mock.push(MockResponse::text("The notes have two lines."));
    let case = Case::new(
        &mock,
        "system: You read notes.\nprompt: Summarise notes.txt\ntools:\n  - builtin: read_file\n",
    );
    let outcome = case.run(&["--output", "json"]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let envelope = outcome.json();
    assert_eq!(envelope["status"], "completed");
    assert_eq!(envelope["exit_code"], 0);
    assert_eq!(envelope["output"], "The notes have two lines.");
    assert_eq!(envelope["agent"], "test-agent");
    assert_eq!(envelope["steps"], 2);
    assert_eq!(envelope["llm_calls"], 2);
    assert_eq!(envelope["tool_calls"], 1);
    assert_eq!(envelope["usage"]["total_tokens"], 30);
    assert_eq!(envelope["limit"], Value::Null);
    assert_eq!(envelope["error"], Value::Null);
    assert_eq!(envelope, case.result());

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["model"], "mock-model");
    assert_eq!(
        requests[0].body["tools"][0]["function"]["name"],
        "read_file"
    );
    let tool = tool_message(&requests[1]).expect("the tool result goes back to the model");
    assert!(
        tool["content"].as_str().unwrap().contains("line two"),
        "{tool}"
    );
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );

    let types = case.event_types();
    for expected in [
        "agent.run.created",
        "agent.run.step.created",
        "thread.message.created",
        "thread.message.delta",
        "thread.message.completed",
        "agent.llm.usage",
        "thread.run.step.tool_call.created",
        "agent.tool.execution.started",
        "agent.tool.execution.completed",
        "thread.run.completed",
    ] {
        assert!(
            types.iter().any(|t| t == expected),
            "no {expected} in {types:?}"
        );
    }
    let key_seen = std::fs::read_to_string(case.dir.join("run/events.jsonl"))
        .unwrap()
        .contains(KEY)
        || std::fs::read_to_string(case.dir.join("run/result.json"))
            .unwrap()
            .contains(KEY);
    assert!(!key_seen, "the API key leaked into the run's files");
}

#[test]
fn the_anthropic_wire_works_the_same_way() {
    let mock = MockServer::start();
    mock.push(MockResponse::reply(
        Reply::tool_call("list_dir", json!({})).with_thinking("Look first."),
    ));
    mock.push(MockResponse::text("Two files."));
    let model = format!(
        "model: {{ provider: anthropic, name: claude-mock, base_url: \"{}\", api_key_env: {KEY_ENV} }}",
        mock.anthropic_base_url()
    );
    let case = Case::with_model(
        &model,
        "system: You list.\nprompt: What is here?\ntools:\n  - builtin: list_dir\n",
    );
    let outcome = case.run(&[]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(outcome.stdout, "Two files.\n");
    let requests = mock.requests();
    assert_eq!(requests[0].body["system"], "You list.");
    let second = requests[1].body["messages"].to_string();
    assert!(second.contains("tool_result"), "{second}");
    assert!(second.contains("notes.txt"), "{second}");
}

#[test]
fn stdout_carries_only_the_answer() {
    let mock = MockServer::start();
    mock.push(MockResponse::text("Just this."));
    let case = Case::new(
        &mock,
        "prompt: Hi\nmiddleware:\n  - logging: { level: info }\n",
    );
    let outcome = case.run(&[]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(outcome.stdout, "Just this.\n");
    assert!(
        outcome
            .stderr
            .contains("[runner] test-agent step 1: model call"),
        "{}",
        outcome.stderr
    );
}

#[test]
fn a_missing_key_is_exit_2_naming_the_variable_before_any_request() {
    let mock = MockServer::start();
    let case = Case::new(&mock, "prompt: Hi\n");
    let outcome = case
        .command(&["--output", "json"])
        .env_remove(KEY_ENV)
        .run();
    assert_eq!(outcome.code, 2);
    assert!(outcome.stderr.contains(KEY_ENV), "{}", outcome.stderr);
    assert_eq!(outcome.json()["status"], "invalid");
    assert_eq!(mock.request_count(), 0);
}

#[test]
fn an_invalid_agent_file_is_exit_2_with_its_diagnostics() {
    let case = Case::with_model("model: openai/gpt-4o-mini", "promt: Hi\n");
    let outcome = case.run(&[]);
    assert_eq!(outcome.code, 2);
    assert!(
        outcome
            .stderr
            .contains("agent.yaml:3:1: error[unknown-key]: unknown key `promt`"),
        "{}",
        outcome.stderr
    );
}

#[test]
fn inputs_are_typed_and_required() {
    let mock = MockServer::start();
    mock.push(MockResponse::text("ok"));
    let body = "inputs:\n  n: { type: number, required: true }\n  loud: { type: boolean, default: false }\n\
                prompt: \"{{ n + 1 }} {% if loud %}LOUD{% else %}quiet{% endif %}\"\n";
    let case = Case::new(&mock, body);
    let missing = case.run(&[]);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("missing required input `n`"),
        "{}",
        missing.stderr
    );
    let wrong = case.run(&["--var", "n=three"]);
    assert_eq!(wrong.code, 2);
    assert!(
        wrong.stderr.contains("input `n` is a number"),
        "{}",
        wrong.stderr
    );
    std::fs::write(case.dir.join("vars.yaml"), "loud: true\n").unwrap();
    let ok = case.run(&["--var", "n=3", "--vars", "vars.yaml"]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    assert_eq!(
        mock.requests()[0].last_user_text().as_deref(),
        Some("4 LOUD")
    );
}

fn limit_case(mock: &MockServer, limits: &str, replies: usize) -> Case {
    for _ in 0..replies {
        mock.push(MockResponse::reply(
            Reply::tool_call("list_dir", json!({})).with_usage(100, 50),
        ));
    }
    Case::new(
        mock,
        &format!("prompt: Go\ntools:\n  - builtin: list_dir\n{limits}"),
    )
}

fn assert_limit(case: &Case, name: &str) {
    let outcome = case.run(&["--output", "json"]);
    assert_eq!(outcome.code, 3, "{}\n{}", outcome.stdout, outcome.stderr);
    let envelope = outcome.json();
    assert_eq!(envelope["status"], "limit_reached");
    assert_eq!(envelope["limit"], name);
    assert_eq!(case.result()["limit"], name);
}

#[test]
fn every_limit_ends_the_run_with_exit_3_and_its_name() {
    let mock = MockServer::start();
    assert_limit(
        &limit_case(&mock, "limits: { max_llm_calls: 2 }\n", 3),
        "max_llm_calls",
    );
    let mock = MockServer::start();
    assert_limit(
        &limit_case(&mock, "limits: { max_tool_calls: 1 }\n", 3),
        "max_tool_calls",
    );
    let mock = MockServer::start();
    assert_limit(
        &limit_case(&mock, "limits: { max_tokens: 200 }\n", 3),
        "max_tokens",
    );
    let mock = MockServer::start();
    assert_limit(
        &limit_case(&mock, "execution: { max_iterations: 2 }\n", 3),
        "max_iterations",
    );
    let mock = MockServer::start();
    assert_limit(
        &limit_case(&mock, "stop_when: \"step >= 2\"\n", 3),
        "stop_when",
    );
    let mock = MockServer::start();
    let model = format!(
        "model: {{ provider: openai, name: m, base_url: \"{}\", api_key_env: {KEY_ENV}, pricing: {{ input_per_mtok: 1000, output_per_mtok: 1000 }} }}",
        mock.openai_base_url()
    );
    for _ in 0..3 {
        mock.push(MockResponse::reply(
            Reply::tool_call("list_dir", json!({})).with_usage(100, 50),
        ));
    }
    let case = Case::with_model(
        &model,
        "prompt: Go\ntools:\n  - builtin: list_dir\nlimits: { max_cost_usd: 0.2 }\n",
    );
    assert_limit(&case, "max_cost_usd");
    let mock = MockServer::start();
    mock.push(MockResponse::text("slow answer").chunk_delay(Duration::from_millis(400)));
    let case = Case::new(&mock, "prompt: Go\nlimits: { timeout: 300ms }\n");
    let outcome = case.run(&[]);
    assert!(outcome.code == 3 || outcome.code == 0, "{}", outcome.stderr);
}

#[test]
fn a_turns_tool_calls_run_concurrently_and_results_keep_call_order() {
    let mock = MockServer::start();
    mock.push(MockResponse::reply(
        Reply::tool_call("shell", json!({"command": "sleep 0.4"}))
            .with_tool_call("shell", json!({"command": "echo second"})),
    ));
    mock.push(MockResponse::text("done"));
    let case = Case::new(
        &mock,
        "prompt: Go\ntools:\n  - builtin: shell\n    allow: [sleep, echo]\n",
    );
    let outcome = case.run(&[]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let tool_events: Vec<(String, String)> = case
        .events()
        .iter()
        .filter(|e| {
            e["type"]
                .as_str()
                .unwrap()
                .starts_with("agent.tool.execution")
        })
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_string(),
                e["data"]["toolCallId"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // Both started before the first finished: they overlapped.
    assert!(
        tool_events[0].0.ends_with("started") && tool_events[1].0.ends_with("started"),
        "{tool_events:?}"
    );
    // The quick echo finished first, yet the results go back in call order.
    let messages = mock.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let tools: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tools.len(), 2);
    assert!(
        tools[1]["content"].as_str().unwrap().contains("second"),
        "{tools:?}"
    );
}

#[test]
fn parallel_tools_false_runs_one_call_at_a_time() {
    let mock = MockServer::start();
    mock.push(MockResponse::reply(
        Reply::tool_call("shell", json!({"command": "sleep 0.2"}))
            .with_tool_call("shell", json!({"command": "sleep 0.1"})),
    ));
    mock.push(MockResponse::text("done"));
    let case = Case::new(
        &mock,
        "prompt: Go\ntools:\n  - builtin: shell\n    allow: [sleep]\nexecution: { parallel_tools: false }\n",
    );
    assert_eq!(case.run(&[]).code, 0);
    let kinds: Vec<String> = case
        .event_types()
        .into_iter()
        .filter(|t| t.starts_with("agent.tool.execution"))
        .collect();
    assert_eq!(
        kinds,
        [
            "agent.tool.execution.started",
            "agent.tool.execution.completed",
            "agent.tool.execution.started",
            "agent.tool.execution.completed"
        ]
    );
}

#[test]
fn confinement_and_shell_refusals_go_back_to_the_model() {
    let mock = MockServer::start();
    mock.push(MockResponse::reply(
        Reply::tool_call("read_file", json!({"path": "../../etc/passwd"}))
            .with_tool_call("shell", json!({"command": "rm -rf /"}))
            .with_tool_call("no_such_tool", json!({})),
    ));
    mock.push(MockResponse::text("refused"));
    let case = Case::new(
        &mock,
        "prompt: Go\ntools:\n  - builtin: read_file\n  - builtin: shell\n    allow: [echo]\n",
    );
    let outcome = case.run(&[]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let messages = mock.requests()[1].body["messages"].to_string();
    assert_eq!(messages.matches("Error:").count(), 3, "{messages}");
    assert!(
        messages.contains("unknown tool `no_such_tool`"),
        "{messages}"
    );
}

#[test]
fn structured_output_is_retried_then_accepted() {
    let mock = MockServer::start();
    mock.push(MockResponse::text("{\"verdict\": \"maybe\"}"));
    mock.push(MockResponse::text(
        "```json\n{\"verdict\": \"approve\"}\n```",
    ));
    let case = Case::new(
        &mock,
        "prompt: Judge\noutput:\n  schema: { type: object, required: [verdict], properties: { verdict: { enum: [approve, reject] } } }\n",
    );
    let outcome = case.run(&["--output", "json"]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(outcome.json()["structured"], json!({"verdict": "approve"}));
    let feedback = mock.requests()[1].last_user_text().unwrap();
    assert!(
        feedback.contains("does not match the output schema"),
        "{feedback}"
    );
}

#[test]
fn structured_output_that_never_matches_fails_with_exit_1() {
    let mock = MockServer::start();
    for _ in 0..3 {
        mock.push(MockResponse::text("not json"));
    }
    let case = Case::new(
        &mock,
        "prompt: Judge\noutput:\n  schema: { type: object }\n",
    );
    let outcome = case.run(&["--output", "json"]);
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    assert_eq!(outcome.json()["error"]["code"], "structured_output");
}

#[test]
fn react_reasons_without_tools_then_acts() {
    let mock = MockServer::start();
    mock.push(MockResponse::text("I should list the directory."));
    mock.push(MockResponse::reply(Reply::tool_call("list_dir", json!({}))));
    mock.push(MockResponse::text("Nothing left to do."));
    mock.push(MockResponse::text("There are two files."));
    let case = Case::new(
        &mock,
        "prompt: Go\ntools:\n  - builtin: list_dir\nexecution: { strategy: react, max_steps: 3 }\n",
    );
    let outcome = case.run(&[]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(outcome.stdout, "There are two files.\n");
    let requests = mock.requests();
    assert!(
        requests[0].body.get("tools").is_none(),
        "the reasoning call offers no tools"
    );
    assert!(requests[1].body["tools"].is_array());
    assert!(
        requests[1]
            .system_prompt()
            .unwrap()
            .contains("I should list the directory.")
    );
    assert!(
        case.event_types()
            .iter()
            .any(|t| t == "agent.reasoning.created")
    );
}

#[test]
fn plan_runs_steps_in_dependency_order_and_composes_the_answer() {
    let mock = MockServer::start();
    mock.push(MockResponse::text(
        r#"{"steps": [{"id": "1", "description": "list", "depends_on": []}, {"id": "2", "description": "read", "depends_on": ["1"]}]}"#,
    ));
    mock.push(MockResponse::text("listed"));
    mock.push(MockResponse::text("read it"));
    mock.push(MockResponse::text("Final: listed and read."));
    let case = Case::new(
        &mock,
        "prompt: Go\ntools:\n  - builtin: list_dir\nexecution: { strategy: plan }\n",
    );
    let outcome = case.run(&[]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(outcome.stdout, "Final: listed and read.\n");
    let requests = mock.requests();
    assert!(
        requests[1]
            .last_user_text()
            .unwrap()
            .contains("Do plan step 1")
    );
    assert!(
        requests[2]
            .last_user_text()
            .unwrap()
            .contains("Do plan step 2")
    );
    let statuses: Vec<String> = case
        .events()
        .iter()
        .filter(|e| e["type"] == "agent.plan.step.status.changed")
        .map(|e| {
            format!(
                "{}:{}",
                e["data"]["planStepId"].as_str().unwrap(),
                e["data"]["status"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            "1:in_progress",
            "1:completed",
            "2:in_progress",
            "2:completed"
        ]
    );
}

#[test]
fn sliding_window_limits_what_the_model_sees() {
    let mock = MockServer::start();
    for _ in 0..3 {
        mock.push(MockResponse::reply(Reply::tool_call("list_dir", json!({}))));
    }
    mock.push(MockResponse::text("done"));
    let case = Case::new(
        &mock,
        "prompt: Go\ntools:\n  - builtin: list_dir\nmiddleware:\n  - sliding_window: { max_messages: 3 }\n",
    );
    assert_eq!(case.run(&[]).code, 0);
    for request in mock.requests() {
        let messages = request.body["messages"].as_array().unwrap();
        let non_system = messages.iter().filter(|m| m["role"] != "system").count();
        assert!(non_system <= 3, "{non_system} messages sent");
        assert_ne!(
            messages.iter().find(|m| m["role"] != "system").unwrap()["role"],
            "tool",
            "a tool result lost its call"
        );
    }
}

#[test]
fn provider_errors_fail_with_exit_1_and_the_providers_message() {
    let mock = MockServer::start();
    mock.push(MockResponse::error(401, "Incorrect API key provided"));
    let case = Case::new(&mock, "prompt: Hi\n");
    let outcome = case.run(&["--output", "json"]);
    assert_eq!(outcome.code, 1);
    let message = outcome.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("Incorrect API key provided"), "{message}");
    assert!(!outcome.stderr.contains(KEY) && !outcome.stdout.contains(KEY));
}

#[test]
fn sigint_stops_the_run_with_exit_130() {
    let mock = MockServer::start();
    mock.push(MockResponse::text("a b c d e f g h").chunk_delay(Duration::from_millis(500)));
    let case = Case::new(&mock, "prompt: Hi\n");
    let child = case.command(&["--output", "json"]).spawn();
    for _ in 0..100 {
        if mock.request_count() > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id() as i32;
    // SAFETY-free: plain `kill` from the standard library is not available; use the binary.
    std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130));
    let envelope: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(envelope["status"], "interrupted");
    assert_eq!(case.result()["status"], "interrupted");
}

#[test]
fn the_transcript_is_written_as_the_run_goes_and_renders() {
    let mock = MockServer::start();
    mock.push(MockResponse::reply(
        Reply::tool_call("read_file", json!({"path": "notes.txt"})).with_thinking("Read it."),
    ));
    mock.push(MockResponse::text("Two lines <<STEP_END>> forged?"));
    let case = Case::new(&mock, "prompt: Go\ntools:\n  - builtin: read_file\n");
    assert_eq!(case.run(&["--transcript", "copy.txt"]).code, 0);
    let path = case.dir.join("run/transcript.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        std::fs::read_to_string(case.dir.join("copy.txt")).unwrap()
    );
    let tree = runner::output::transcript::parse(&text).expect("the transcript parses");
    assert_eq!(tree.final_answer(), Some("Two lines <<STEP_END>> forged?"));
    let json = Run::new(["render", path.to_str().unwrap(), "--format", "json"]).run();
    assert_eq!(json.code, 0, "{}", json.stderr);
    let rendered = json.json().to_string();
    assert!(
        rendered.contains("\"read_file\"") && rendered.contains("Read it."),
        "{rendered}"
    );
    let markdown = Run::new(["render", path.to_str().unwrap()]).run();
    assert!(markdown.stdout.contains("<details>"), "{}", markdown.stdout);
    assert_eq!(case.result()["transcript"], "run/transcript.txt");
}

#[test]
fn a_failed_run_ends_its_transcript_with_an_error_block() {
    let mock = MockServer::start();
    mock.push(MockResponse::error(
        400,
        "bad request: unsupported parameter",
    ));
    let case = Case::new(&mock, "prompt: Go\n");
    assert_eq!(case.run(&[]).code, 1);
    let text = std::fs::read_to_string(case.dir.join("run/transcript.txt")).unwrap();
    assert!(
        text.contains("<<ERROR_JSON_START>>") || text.contains("ERROR"),
        "{text}"
    );
    runner::output::transcript::parse(&text).expect("the transcript parses");
    let text_render = Run::new([
        "render",
        case.dir.join("run/transcript.txt").to_str().unwrap(),
        "--format",
        "text",
    ])
    .run();
    assert!(
        text_render.stdout.contains("unsupported parameter"),
        "{}",
        text_render.stdout
    );
}

#[test]
fn render_refuses_a_malformed_transcript_with_its_position() {
    let dir = tempdir("render");
    let path = dir.join("bad.txt");
    std::fs::write(&path, "<<STEP_START>>\nStep 1: x ✓\n").unwrap();
    let outcome = Run::new(["render", path.to_str().unwrap()]).run();
    assert_eq!(outcome.code, 2);
    assert!(outcome.stderr.contains("bad.txt:"), "{}", outcome.stderr);
}

#[test]
fn record_then_replay_without_network_or_key() {
    let mock = MockServer::start();
    mock.push(MockResponse::reply(Reply::tool_call(
        "read_file",
        json!({"path": "notes.txt"}),
    )));
    mock.push(MockResponse::text("Recorded answer."));
    let case = Case::new(&mock, "prompt: Go\ntools:\n  - builtin: read_file\n");
    let recorded = case.run(&["--record", "cassette.jsonl"]);
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    drop(mock); // no server from here on
    let replayed = case
        .command(&["--replay", "cassette.jsonl"])
        .env_remove(KEY_ENV)
        .run();
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    assert_eq!(replayed.stdout, "Recorded answer.\n");
    let cassette = std::fs::read_to_string(case.dir.join("cassette.jsonl")).unwrap();
    assert!(!cassette.contains(KEY), "the key leaked into the cassette");
}

#[test]
fn a_replay_miss_fails_with_exit_1_and_says_which_request() {
    let mock = MockServer::start();
    mock.push(MockResponse::text("Recorded answer."));
    let case = Case::new(&mock, "prompt: Go\n");
    assert_eq!(case.run(&["--record", "cassette.jsonl"]).code, 0);
    std::fs::write(
        case.dir.join("agent.yaml"),
        std::fs::read_to_string(case.dir.join("agent.yaml"))
            .unwrap()
            .replace("prompt: Go", "prompt: Something else"),
    )
    .unwrap();
    let outcome = case.run(&["--replay", "cassette.jsonl", "--output", "json"]);
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    let message = outcome.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("Something else") || message.contains("no recorded"),
        "{message}"
    );
}

#[test]
fn faults_are_retried_and_partial_output_never_becomes_the_answer() {
    let mock = MockServer::start();
    mock.push(MockResponse::error(429, "rate limited").retry_after("0"));
    mock.push(MockResponse::text("partial words that never finish").drop_after(2));
    mock.push(MockResponse::text("The real answer."));
    let model = format!(
        "model: {{ provider: openai, name: m, base_url: \"{}\", api_key_env: {KEY_ENV}, retry: {{ max_attempts: 4, initial_backoff: 10ms, max_backoff: 50ms }} }}",
        mock.openai_base_url()
    );
    let case = Case::with_model(&model, "prompt: Go\n");
    let outcome = case.run(&[]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(outcome.stdout, "The real answer.\n");
    assert_eq!(mock.request_count(), 3);
    let transcript = std::fs::read_to_string(case.dir.join("run/transcript.txt")).unwrap();
    assert!(!transcript.contains("never finish"), "{transcript}");
    let resets = case
        .events()
        .iter()
        .filter(|e| e["type"] == "thread.message.delta" && e["data"]["delta"]["reset"] == true)
        .count();
    assert!(resets >= 1, "consumers are told to drop the partial text");
}

#[test]
fn ask_user_takes_answers_from_a_file() {
    let mock = MockServer::start();
    mock.push(MockResponse::reply(Reply::tool_call(
        "ask_user",
        json!({"question": "Which branch?", "id": "branch"}),
    )));
    mock.push(MockResponse::text("Using main."));
    let case = Case::new(&mock, "prompt: Go\ntools:\n  - builtin: ask_user\n");
    std::fs::write(case.dir.join("answers.yaml"), "branch: main\n").unwrap();
    let outcome = case.run(&["--answers", "answers.yaml"]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let tool = tool_message(&mock.requests()[1]).unwrap();
    assert_eq!(tool["content"], "main");
}

#[test]
fn ask_user_without_an_answer_pauses_the_run_with_exit_4() {
    let mock = MockServer::start();
    mock.push(MockResponse::reply(Reply::tool_call(
        "ask_user",
        json!({"question": "Which branch?"}),
    )));
    let case = Case::new(&mock, "prompt: Go\ntools:\n  - builtin: ask_user\n");
    let outcome = case.run(&["--output", "json"]);
    assert_eq!(outcome.code, 4, "{}", outcome.stderr);
    let envelope = outcome.json();
    assert_eq!(envelope["status"], "input_required");
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Which branch?")
    );
    assert!(
        case.event_types()
            .iter()
            .any(|t| t == "thread.run.requires_action")
    );
    let transcript = std::fs::read_to_string(case.dir.join("run/transcript.txt")).unwrap();
    assert!(transcript.contains("INPUT_REQUIRED"), "{transcript}");
    runner::output::transcript::parse(&transcript).expect("parses");
}

/// An OpenAI stream whose content arrives three bytes at a time (splitting tag names and
/// entities), whatever the text.
fn tiny_chunks(text: &str) -> MockResponse {
    let mut body = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = 3.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let chunk = json!({"id": "x", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": {"content": &rest[..cut]}, "finish_reason": null}]});
        body.push_str(&format!("data: {chunk}\n\n"));
        rest = &rest[cut..];
    }
    let end = json!({"id": "x", "object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}});
    body.push_str(&format!("data: {end}\n\ndata: [DONE]\n\n"));
    MockResponse::sse(body)
}

#[test]
fn the_xml_protocol_runs_tools_from_text_streamed_in_tiny_chunks() {
    let mock = MockServer::start();
    mock.push(tiny_chunks(
        "I will read it.<thinking>The notes &amp; more</thinking>\n<read_file>\n<path>notes.txt</path>\n<limit>1</limit>\n</read_file>",
    ));
    mock.push(tiny_chunks("I think I am done."));
    mock.push(tiny_chunks(
        "<attempt_completion><result>First line: line one</result></attempt_completion> trailing",
    ));
    let case = Case::new(
        &mock,
        "system: You read notes.\nprompt: Go\ntool_protocol: xml\ntools:\n  - builtin: read_file\n",
    );
    let outcome = case.run(&["--output", "json"]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(outcome.json()["output"], "First line: line one");
    let requests = mock.requests();
    assert!(
        requests[0].body.get("tools").is_none(),
        "no native tools are sent"
    );
    let system = requests[0].system_prompt().unwrap();
    assert!(
        system.starts_with("You read notes.")
            && system.contains("### read_file")
            && system.contains("<path> (string, required)"),
        "{system}"
    );
    let second = requests[1].body["messages"].to_string();
    assert!(
        second.contains("<tool_result tool_name=\\\"read_file\\\">line one"),
        "{second}"
    );
    assert!(
        !second.contains("\"tool\""),
        "results go back as user messages: {second}"
    );
    let third = requests[2].last_user_text().unwrap();
    assert!(
        third.starts_with("Error: your reply had no tool call"),
        "{third}"
    );
    // The run looks like a native one: a tool block with typed JSON input, and thinking.
    let started = case
        .events()
        .into_iter()
        .find(|e| e["type"] == "agent.tool.execution.started")
        .unwrap();
    assert_eq!(
        started["data"]["input"],
        json!({"path": "notes.txt", "limit": 1})
    );
    let transcript = std::fs::read_to_string(case.dir.join("run/transcript.txt")).unwrap();
    assert!(
        transcript.contains("The notes & more")
            && transcript.contains("<<TOOL_STEP_START/read_file:"),
        "{transcript}"
    );
}

#[test]
fn a_value_that_does_not_fit_its_type_is_a_tool_error() {
    let mock = MockServer::start();
    mock.push(tiny_chunks(
        "<read_file><path>notes.txt</path><limit>many</limit></read_file>",
    ));
    mock.push(tiny_chunks(
        "<attempt_completion><result>ok</result></attempt_completion>",
    ));
    let case = Case::new(
        &mock,
        "prompt: Go\ntool_protocol: xml\ntools:\n  - builtin: read_file\n",
    );
    assert_eq!(case.run(&[]).code, 0);
    let second = mock.requests()[1].body["messages"].to_string();
    assert!(
        second.contains("Error: invalid arguments: parameter `limit` must be an integer"),
        "{second}"
    );
}

#[test]
fn tool_timeout_and_max_output_chars_shape_the_results() {
    let mock = MockServer::start();
    mock.push(MockResponse::reply(
        Reply::tool_call("shell", json!({"command": "sleep 5"}))
            .with_tool_call("read_file", json!({"path": "big.txt"})),
    ));
    mock.push(MockResponse::text("done"));
    let case = Case::new(
        &mock,
        "prompt: Go\ntools:\n  - builtin: shell\n    allow: [sleep]\n  - builtin: read_file\nlimits: { tool_timeout: 300ms, max_output_chars: 50 }\n",
    );
    std::fs::write(case.dir.join("big.txt"), "x".repeat(500)).unwrap();
    let outcome = case.run(&[]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let messages = mock.requests()[1].body["messages"].to_string();
    assert!(messages.contains("timed out after 300ms"), "{messages}");
    assert!(
        messages.contains("characters cut (limits.max_output_chars)"),
        "{messages}"
    );
}

#[test]
fn prune_tool_outputs_replaces_old_outputs_when_the_context_is_full() {
    let mock = MockServer::start();
    for _ in 0..3 {
        mock.push(MockResponse::reply(Reply::tool_call(
            "read_file",
            json!({"path": "big.txt"}),
        )));
    }
    mock.push(MockResponse::text("done"));
    let case = Case::new(
        &mock,
        "prompt: Go\ntools:\n  - builtin: read_file\nmiddleware:\n  - prune_tool_outputs: { context_limit: 600, output_reserve: 100, protect_recent: 300 }\n",
    );
    std::fs::write(case.dir.join("big.txt"), "y".repeat(1200)).unwrap();
    assert_eq!(case.run(&[]).code, 0);
    let last = mock.requests().pop().unwrap().body["messages"].to_string();
    assert!(last.contains("[output cleared to save context]"), "{last}");
    assert!(
        last.contains(&"y".repeat(1200)),
        "the most recent output is kept"
    );
}

#[test]
fn summarize_replaces_old_history_with_a_summary_from_a_model_call() {
    let mock = MockServer::start();
    mock.route(|request| {
        request
            .system_prompt()
            .filter(|s| s.contains("You summarise conversations"))
            .map(|_| MockResponse::text("SUMMARY: the notes were read twice."))
    });
    for _ in 0..2 {
        mock.push(MockResponse::reply(Reply::tool_call(
            "read_file",
            json!({"path": "big.txt"}),
        )));
    }
    mock.push(MockResponse::text("done"));
    let case = Case::new(
        &mock,
        "prompt: Go\ntools:\n  - builtin: read_file\nmiddleware:\n  - summarize: { threshold: 400, keep_recent: 2 }\n",
    );
    std::fs::write(case.dir.join("big.txt"), "z".repeat(1000)).unwrap();
    assert_eq!(case.run(&[]).code, 0);
    let requests = mock.requests();
    assert!(
        requests.iter().any(|r| r
            .system_prompt()
            .unwrap_or_default()
            .contains("You summarise")),
        "a summary call was made"
    );
    let last = requests.last().unwrap().body["messages"].to_string();
    assert!(
        last.contains("SUMMARY: the notes were read twice."),
        "{last}"
    );
}

#[test]
fn events_dash_puts_the_event_stream_on_stdout_instead_of_the_result() {
    let mock = MockServer::start();
    mock.push(MockResponse::text("answer"));
    let case = Case::new(&mock, "prompt: Go\n");
    let outcome = case.run(&["--events", "-", "--output", "json"]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let lines: Vec<Value> = outcome
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is an event"))
        .collect();
    assert_eq!(lines.first().unwrap()["type"], "agent.run.created");
    assert_eq!(lines.last().unwrap()["type"], "thread.run.completed");
    assert_eq!(
        case.result()["output"],
        "answer",
        "result.json is still written"
    );
}
