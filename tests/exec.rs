//! `runner exec` end to end: the real binary against the mock model server over loopback
//! HTTP, asserting on stdout, exit codes, result.json and events.jsonl.

mod support;

#[path = "exec/middleware.rs"]
mod middleware;

use std::time::Duration;

use runner::testing::mock_server::{MockRequest, MockResponse, Reply};
use serde_json::{Value, json};
use support::{KEY, KEY_ENV, Ran, Test, terminal_available, wait_until};

const NOTES: &str = "line one\nline two\n";

fn tool_message(request: &MockRequest) -> Option<Value> {
    request.body["messages"]
        .as_array()?
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
}

fn event_types(ran: &Ran) -> Vec<String> {
    ran.events()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn quickstart_runs_offline_and_answers() {
    let ran = Test::new()
        .repo_path("examples/quickstart.yaml")
        .repo_path("README.md")
        .command(["exec", "examples/quickstart.yaml", "--run-dir", "run"])
        .stdout("This project is `runner`, a declarative agent runner.\n")
        .run();
    let result = ran.result();
    assert_eq!(result["status"], "completed");
    assert_eq!(result["tool_calls"], 1);
    assert_eq!(result["llm_calls"], 2);
    assert_eq!(result["usage"]["total_tokens"], 412);
}

#[test]
fn loop_calls_a_tool_and_answers_over_the_openai_wire() {
    let ran = Test::new()
        .agent("system: You read notes.\nprompt: Summarise notes.txt\ntools:\n  - builtin: read_file\n")
        .file("notes.txt", NOTES)
        .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
        .reply(Reply::text("The notes have two lines."))
        .args(["--output", "json"])
        .run();
    let envelope = ran.json();
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
    assert_eq!(envelope, ran.result());
    ran.snapshot("completed");

    let requests = ran.requests();
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

    let types = event_types(&ran);
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
    let key_seen =
        ran.read("run/events.jsonl").contains(KEY) || ran.read("run/result.json").contains(KEY);
    assert!(!key_seen, "the API key leaked into the run's files");
}

#[test]
fn the_anthropic_wire_works_the_same_way() {
    let ran = Test::new()
        .agent(
            "name: test-agent
model: { provider: anthropic, name: claude-mock, base_url: \"$ANTHROPIC_URL\", api_key_env: RUNNER_TEST_KEY }
system: You list.
prompt: What is here?
tools:
  - builtin: list_dir
",
        )
        .file("notes.txt", NOTES)
        .reply(Reply::tool_call("list_dir", json!({})).with_thinking("Look first."))
        .reply(Reply::text("Two files."))
        .stdout("Two files.\n")
        .run();
    let requests = ran.requests();
    assert_eq!(requests[0].body["system"], "You list.");
    let second = requests[1].body["messages"].to_string();
    assert!(second.contains("tool_result"), "{second}");
    assert!(second.contains("notes.txt"), "{second}");
}

#[test]
fn stdout_carries_only_the_answer() {
    Test::new()
        .agent("prompt: Hi\nmiddleware:\n  - logging: { level: info }\n")
        .reply(Reply::text("Just this."))
        .stdout("Just this.\n")
        .stderr_contains("[runner] test-agent step 1: model call")
        .run();
}

#[test]
fn a_missing_key_is_exit_2_naming_the_variable_before_any_request() {
    let ran = Test::new()
        .agent("prompt: Hi\n")
        .env_remove(KEY_ENV)
        .args(["--output", "json"])
        .status(2)
        .stderr_contains(KEY_ENV)
        .run();
    assert_eq!(ran.json()["status"], "invalid");
    assert!(ran.requests().is_empty());
    ran.snapshot("compile_error");
}

#[test]
fn an_invalid_agent_file_is_exit_2_with_its_diagnostics() {
    Test::new()
        .agent("name: test-agent\nmodel: openai/gpt-4o-mini\npromt: Hi\n")
        .status(2)
        .stderr_contains("agent.yaml:3:1: error[unknown-key]: unknown key `promt`")
        .run();
}

#[test]
fn inputs_are_typed_and_required() {
    let missing = Test::new()
        .agent(
            "inputs:\n  n: { type: number, required: true }\n  loud: { type: boolean, default: false }\n\
             prompt: \"{{ n + 1 }} {% if loud %}LOUD{% else %}quiet{% endif %}\"\n",
        )
        .status(2)
        .stderr_contains("missing required input `n`")
        .run();
    missing
        .then()
        .args(["--var", "n=three"])
        .status(2)
        .stderr_contains("input `n` is a number")
        .run();
    let ok = missing
        .then()
        .file("vars.yaml", "loud: true\n")
        .reply(Reply::text("ok"))
        .args(["--var", "n=3", "--vars", "vars.yaml"])
        .run();
    assert_eq!(ok.requests()[0].last_user_text().as_deref(), Some("4 LOUD"));
}

/// An agent whose model would list the directory for ever.
const BUSY: &str = "prompt: Go\ntools:\n  - builtin: list_dir\n";

/// Runs `test` against a model that keeps calling `list_dir` (150 tokens a call) and
/// checks that the run stops at the limit `name`.
fn stops_at_limit(test: Test, name: &str) -> Ran {
    let ran = (0..3)
        .fold(test, |test, _| {
            test.reply(Reply::tool_call("list_dir", json!({})).with_usage(100, 50))
        })
        .args(["--output", "json"])
        .status(3)
        .stderr_contains(name)
        .run();
    let envelope = ran.json();
    assert_eq!(envelope["status"], "limit_reached");
    assert_eq!(envelope["limit"], name);
    assert_eq!(ran.result()["limit"], name);
    ran
}

#[test]
fn every_limit_ends_the_run_with_exit_3_and_its_name() {
    stops_at_limit(
        Test::new().agent(&format!("{BUSY}limits: {{ max_llm_calls: 2 }}\n")),
        "max_llm_calls",
    )
    .snapshot("limit_reached");
    for (limits, name) in [
        ("limits: { max_tool_calls: 1 }\n", "max_tool_calls"),
        ("limits: { max_tokens: 200 }\n", "max_tokens"),
        ("execution: { max_iterations: 2 }\n", "max_iterations"),
        ("stop_when: \"step >= 2\"\n", "stop_when"),
    ] {
        stops_at_limit(Test::new().agent(&format!("{BUSY}{limits}")), name);
    }
    stops_at_limit(
        Test::new().agent(&format!(
            "name: test-agent
model: {{ provider: openai, name: m, base_url: \"$OPENAI_URL\", api_key_env: RUNNER_TEST_KEY, pricing: {{ input_per_mtok: 1000, output_per_mtok: 1000 }} }}
{BUSY}limits: {{ max_cost_usd: 0.2 }}
"
        )),
        "max_cost_usd",
    );
    // The wall clock is checked before each model call: the one after a slow turn is refused.
    stops_at_limit(
        Test::new()
            .agent(&format!("{BUSY}limits: {{ timeout: 300ms }}\n"))
            .respond(
                MockResponse::reply(Reply::tool_call("list_dir", json!({})))
                    .chunk_delay(Duration::from_millis(400)),
            ),
        "timeout",
    );
}

/// `timeout` is the wall clock of the run: a slow answer is abandoned when it expires.
#[test]
fn a_timeout_ends_a_model_call_in_progress() {
    Test::new()
        .agent("prompt: Go\nlimits: { timeout: 300ms }\n")
        .respond(MockResponse::text("slow answer").chunk_delay(Duration::from_millis(400)))
        .status(3)
        .stderr_contains("timeout")
        .run();
}

#[test]
fn a_turns_tool_calls_run_concurrently_and_results_keep_call_order() {
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: shell\n    allow: [sleep, echo]\n")
        .reply(
            Reply::tool_call("shell", json!({"command": "sleep 0.4"}))
                .with_tool_call("shell", json!({"command": "echo second"})),
        )
        .reply(Reply::text("done"))
        .run();
    let tool_events: Vec<(String, String)> = ran
        .tool_executions()
        .into_iter()
        .map(|(kind, data)| (kind, data["toolCallId"].as_str().unwrap().to_string()))
        .collect();
    // Both started before the first finished: they overlapped.
    assert!(
        tool_events[0].0.ends_with("started") && tool_events[1].0.ends_with("started"),
        "{tool_events:?}"
    );
    // The quick echo finished first, yet the results go back in call order.
    let messages = ran.requests()[1].body["messages"]
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
    let ran = Test::new()
        .agent(
            "prompt: Go\ntools:\n  - builtin: shell\n    allow: [sleep]\nexecution: { parallel_tools: false }\n",
        )
        .reply(
            Reply::tool_call("shell", json!({"command": "sleep 0.2"}))
                .with_tool_call("shell", json!({"command": "sleep 0.1"})),
        )
        .reply(Reply::text("done"))
        .run();
    let kinds: Vec<String> = event_types(&ran)
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
    let ran = Test::new()
        .agent(
            "prompt: Go\ntools:\n  - builtin: read_file\n  - builtin: shell\n    allow: [echo]\n",
        )
        .reply(
            Reply::tool_call("read_file", json!({"path": "../../etc/passwd"}))
                .with_tool_call("shell", json!({"command": "rm -rf /"}))
                .with_tool_call("no_such_tool", json!({})),
        )
        .reply(Reply::text("refused"))
        .run();
    let messages = ran.requests()[1].body["messages"].to_string();
    assert_eq!(messages.matches("Error:").count(), 3, "{messages}");
    assert!(
        messages.contains("unknown tool `no_such_tool`"),
        "{messages}"
    );
}

#[test]
fn structured_output_is_retried_then_accepted() {
    let ran = Test::new()
        .agent(
            "prompt: Judge\noutput:\n  schema: { type: object, required: [verdict], properties: { verdict: { enum: [approve, reject] } } }\n",
        )
        .reply(Reply::text("{\"verdict\": \"maybe\"}"))
        .reply(Reply::text("```json\n{\"verdict\": \"approve\"}\n```"))
        .args(["--output", "json"])
        .run();
    assert_eq!(ran.json()["structured"], json!({"verdict": "approve"}));
    let feedback = ran.requests()[1].last_user_text().unwrap();
    assert!(
        feedback.contains("does not match the output schema"),
        "{feedback}"
    );
}

#[test]
fn structured_output_that_never_matches_fails_with_exit_1() {
    let ran = Test::new()
        .agent("prompt: Judge\noutput:\n  schema: { type: object }\n")
        .reply(Reply::text("not json"))
        .reply(Reply::text("not json"))
        .reply(Reply::text("[1]"))
        .args(["--output", "json"])
        .status(1)
        .stderr_contains("error[structured_output]")
        .run();
    assert_eq!(ran.json()["error"]["code"], "structured_output");
    // Said for the person who reads it, not in the words the model was given.
    let message = ran.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("the last one: the answer does not match the output schema"),
        "{message}"
    );
    assert!(!ran.stderr.contains("Answer again"), "{}", ran.stderr);
}

#[test]
fn react_reasons_without_tools_then_acts() {
    let ran = Test::new()
        .agent(
            "prompt: Go\ntools:\n  - builtin: list_dir\nexecution: { strategy: react, max_steps: 3 }\n",
        )
        .reply(Reply::text("I should list the directory."))
        .reply(Reply::tool_call("list_dir", json!({})))
        .reply(Reply::text("Nothing left to do."))
        .reply(Reply::text("There are two files."))
        .stdout("There are two files.\n")
        .run();
    let requests = ran.requests();
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
        event_types(&ran)
            .iter()
            .any(|t| t == "agent.reasoning.created")
    );
}

/// The statuses plan step `id` went through, from the events.
fn plan_statuses(ran: &Ran) -> Vec<String> {
    ran.events_of("agent.plan.step.status.changed")
        .iter()
        .map(|e| {
            format!(
                "{}:{}",
                e["data"]["planStepId"].as_str().unwrap(),
                e["data"]["status"].as_str().unwrap()
            )
        })
        .collect()
}

/// UAP §5.4 `allow_replan`: a plan step whose last tool call failed, after which the model
/// answered without trying again, fails; a new plan is made that is told what failed, and
/// its steps run. The file's `max_plans` bounds how often.
#[test]
fn a_plan_step_whose_last_tool_call_failed_is_planned_again() {
    let first = r#"{"steps": [{"id": "1", "description": "read missing.txt"}]}"#;
    let second = r#"{"steps": [{"id": "2", "description": "answer from what is known"}]}"#;
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: read_file\nexecution: { strategy: plan }\n")
        .reply(Reply::text(first))
        .reply(Reply::tool_call(
            "read_file",
            json!({"path": "missing.txt"}),
        ))
        .reply(Reply::text("I could not read it."))
        .reply(Reply::text(second))
        .reply(Reply::text("known: nothing"))
        .reply(Reply::text("Final: the file is missing."))
        .stdout("Final: the file is missing.\n")
        .run();
    let requests = ran.requests();
    assert_eq!(requests.len(), 6);
    // The step was offered a way to give up, and the new plan was told what failed.
    assert!(
        requests[1].body["tools"]
            .to_string()
            .contains("step_failed"),
        "{}",
        requests[1].body["tools"]
    );
    let replan = requests[3].system_prompt().unwrap_or_default();
    assert!(
        replan.contains("The previous plan failed: step 1 (read missing.txt) failed")
            && replan.contains("`read_file`"),
        "{replan}"
    );
    assert_eq!(
        plan_statuses(&ran),
        ["1:in_progress", "1:failed", "2:in_progress", "2:completed"]
    );
    let failed_steps: Vec<Value> = ran
        .events_of("agent.run.step.completed")
        .into_iter()
        .filter(|e| e["data"]["status"] == "failed")
        .collect();
    assert_eq!(failed_steps.len(), 1, "{failed_steps:?}");
    let transcript = ran.transcript();
    assert!(
        transcript.contains("Step 3: Plan step 1: read missing.txt ✗"),
        "{transcript}"
    );

    // Bounded by `max_plans`: the second plan fails the same way, the run ends at the bound.
    let mut test = Test::new().agent(
        "prompt: Go\ntools:\n  - builtin: read_file\nexecution: { strategy: plan, max_plans: 2 }\n",
    );
    for _ in 0..2 {
        test = test
            .reply(Reply::text(first))
            .reply(Reply::tool_call(
                "read_file",
                json!({"path": "missing.txt"}),
            ))
            .reply(Reply::text("I could not read it."));
    }
    let ran = test
        .reply(Reply::text("never asked"))
        .args(["--output", "json"])
        .status(3)
        .stderr_contains("max_plans")
        .run();
    assert_eq!(ran.json()["limit"], "max_plans");
    assert_eq!(ran.requests().len(), 6);
}

/// A step the model ends with `step_failed` fails; without `allow_replan` the run fails with
/// the step's error; the step's status shows it.
#[test]
fn a_plan_step_the_model_gives_up_fails_the_run_without_allow_replan() {
    let plan = r#"{"steps": [{"id": "1", "description": "deploy"}, {"id": "2", "description": "report", "depends_on": ["1"]}]}"#;
    let ran = Test::new()
        .agent("prompt: Go\nexecution: { strategy: plan, allow_replan: false }\n")
        .reply(Reply::text(plan))
        .reply(Reply::tool_call(
            "step_failed",
            json!({"reason": "no credentials for the cluster"}),
        ))
        .reply(Reply::text("never asked"))
        .args(["--output", "json"])
        .status(1)
        .stderr_contains("no credentials for the cluster")
        .run();
    let result = ran.json();
    assert_eq!(result["error"]["code"], "plan_step_failed", "{result}");
    assert_eq!(ran.requests().len(), 2);
    assert_eq!(plan_statuses(&ran), ["1:in_progress", "1:failed"]);
    let failed = ran
        .events_of("agent.run.step.completed")
        .into_iter()
        .filter(|e| e["data"]["status"] == "failed")
        .count();
    assert_eq!(failed, 1);
}

#[test]
fn plan_runs_steps_in_dependency_order_and_composes_the_answer() {
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: list_dir\nexecution: { strategy: plan }\n")
        .reply(Reply::text(
            r#"{"steps": [{"id": "1", "description": "list", "depends_on": []}, {"id": "2", "description": "read", "depends_on": ["1"]}]}"#,
        ))
        .reply(Reply::text("listed"))
        .reply(Reply::text("read it"))
        .reply(Reply::text("Final: listed and read."))
        .stdout("Final: listed and read.\n")
        .run();
    let requests = ran.requests();
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
    let statuses: Vec<String> = ran
        .events_of("agent.plan.step.status.changed")
        .iter()
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
    let ran = Test::new()
        .agent(
            "prompt: Go\ntools:\n  - builtin: list_dir\nmiddleware:\n  - sliding_window: { max_messages: 3 }\n",
        )
        .reply(Reply::tool_call("list_dir", json!({})))
        .reply(Reply::tool_call("list_dir", json!({})))
        .reply(Reply::tool_call("list_dir", json!({})))
        .reply(Reply::text("done"))
        .run();
    for request in ran.requests() {
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
    let ran = Test::new()
        .agent("prompt: Hi\n")
        .respond(MockResponse::error(401, "Incorrect API key provided"))
        .args(["--output", "json"])
        .status(1)
        .stderr_contains("Incorrect API key provided")
        .run();
    let message = ran.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("Incorrect API key provided"), "{message}");
    assert!(!ran.stderr.contains(KEY) && !ran.stdout.contains(KEY));
    ran.snapshot("provider_failed");
}

#[test]
fn sigint_stops_the_run_with_exit_130() {
    let running = Test::new()
        .agent("prompt: Hi\n")
        .respond(MockResponse::text("a b c d e f g h").chunk_delay(Duration::from_millis(500)))
        .args(["--output", "json"])
        .status(130)
        .stderr_contains("interrupted")
        .spawn();
    wait_until("the run calls the model", || running.requests_made() > 0);
    running.interrupt();
    let ran = running.wait();
    assert_eq!(ran.json()["status"], "interrupted");
    assert_eq!(ran.result()["status"], "interrupted");
}

#[test]
fn the_transcript_is_written_as_the_run_goes_and_renders() {
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: read_file\n")
        .file("notes.txt", NOTES)
        .reply(
            Reply::tool_call("read_file", json!({"path": "notes.txt"})).with_thinking("Read it."),
        )
        .reply(Reply::text("Two lines <<STEP_END>> forged?"))
        .args(["--transcript", "copy.txt"])
        .run();
    let text = ran.transcript();
    assert_eq!(text, ran.read("copy.txt"));
    let tree = runner::output::transcript::parse(&text).expect("the transcript parses");
    assert_eq!(tree.final_answer(), Some("Two lines <<STEP_END>> forged?"));
    let rendered = ran
        .then()
        .command(["render", "run/transcript.txt", "--format", "json"])
        .run()
        .json()
        .to_string();
    assert!(
        rendered.contains("\"read_file\"") && rendered.contains("Read it."),
        "{rendered}"
    );
    ran.then()
        .command(["render", "run/transcript.txt"])
        .stdout_contains("<details>")
        .run();
    assert_eq!(ran.result()["transcript"], "run/transcript.txt");
}

/// The reference marks a single-step agent action with `<<SINGLE_STEP_FLAG>>` inside its
/// step: a run that answers in its first step without calling a tool gets it (strict
/// `render` reads it back), a run that needed more steps does not.
#[test]
fn a_run_that_answers_in_one_step_is_flagged_single_step() {
    let ran = Test::new()
        .agent("prompt: Go\n")
        .reply(Reply::text("Done at once."))
        .run();
    let text = ran.transcript();
    let lines: Vec<&str> = text.lines().take(3).collect();
    assert_eq!(lines[0], "<<STEP_START>>", "{text}");
    assert!(lines[1].starts_with("Step 1: "), "{text}");
    assert_eq!(lines[2], "<<SINGLE_STEP_FLAG>>", "{text}");
    let tree = ran
        .then()
        .command([
            "render",
            "run/transcript.txt",
            "--format",
            "json",
            "--strict",
        ])
        .run()
        .json();
    assert_eq!(tree["items"][0]["single_step"], true, "{tree}");

    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: read_file\n")
        .file("notes.txt", NOTES)
        .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
        .reply(Reply::text("Read it."))
        .run();
    let text = ran.transcript();
    assert!(!text.contains("<<SINGLE_STEP_FLAG>>"), "{text}");
    assert!(text.contains("Step 2: "), "{text}");
}

#[test]
fn a_failed_run_ends_its_transcript_with_an_error_block() {
    let ran = Test::new()
        .agent("prompt: Go\n")
        .respond(MockResponse::error(
            400,
            "bad request: unsupported parameter",
        ))
        .status(1)
        .stderr_contains("unsupported parameter")
        .run();
    let text = ran.transcript();
    assert!(
        text.contains("<<ERROR_JSON_START>>") || text.contains("ERROR"),
        "{text}"
    );
    runner::output::transcript::parse(&text).expect("the transcript parses");
    ran.then()
        .command(["render", "run/transcript.txt", "--format", "text"])
        .stdout_contains("unsupported parameter")
        .run();
}

#[test]
fn render_refuses_a_malformed_transcript_with_its_position() {
    Test::new()
        .file("bad.txt", "<<STEP_START>>\nStep 1: x ✓\n")
        .command(["render", "bad.txt"])
        .status(2)
        .stderr_contains("bad.txt:")
        .run();
}

#[test]
fn record_then_replay_without_network_or_key() {
    let recorded = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: read_file\n")
        .file("notes.txt", NOTES)
        .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
        .reply(Reply::text("Recorded answer."))
        .args(["--record", "cassette.jsonl"])
        .run();
    let replayed = recorded
        .then()
        .env_remove(KEY_ENV)
        .args(["--replay", "cassette.jsonl"])
        .stdout("Recorded answer.\n")
        .run();
    assert_eq!(
        replayed.requests().len(),
        2,
        "the replay sent nothing to the model"
    );
    assert!(
        !recorded.read("cassette.jsonl").contains(KEY),
        "the key leaked into the cassette"
    );
}

/// Local servers take dummy keys. `none` is a word of the prompt and `x` a letter of the
/// cassette's field names: neither is redacted (the recording says so on stderr), so the
/// cassette holds what was sent and replays.
#[test]
fn a_short_dummy_key_is_not_redacted_and_the_cassette_replays() {
    for key in ["none", "x"] {
        let recorded = Test::new()
            .env(KEY_ENV, key)
            .agent("prompt: Reply with the word none.\ntools:\n  - builtin: read_file\n")
            .file("notes.txt", NOTES)
            .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
            .reply(Reply::text("none"))
            .args(["--record", "cassette.jsonl"])
            .stdout("none\n")
            .stderr_contains("shorter than 8 characters, so cassette.jsonl does not redact it")
            .run();
        let cassette = recorded.read("cassette.jsonl");
        assert!(
            cassette.contains("Reply with the word none.") && !cassette.contains("[REDACTED]"),
            "key {key}: {cassette}"
        );
        recorded
            .then()
            .env_remove(KEY_ENV)
            .args(["--replay", "cassette.jsonl"])
            .stdout("none\n")
            .run();
    }
}

#[test]
fn a_replay_miss_fails_with_exit_1_and_says_which_request() {
    let recorded = Test::new()
        .agent("prompt: Go\n")
        .reply(Reply::text("Recorded answer."))
        .args(["--record", "cassette.jsonl"])
        .run();
    let ran = recorded
        .then()
        .agent("prompt: Something else\n")
        .args(["--replay", "cassette.jsonl", "--output", "json"])
        .status(1)
        .any_stderr()
        .run();
    let message = ran.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("Something else") || message.contains("no recorded"),
        "{message}"
    );
}

#[test]
fn faults_are_retried_and_partial_output_never_becomes_the_answer() {
    let ran = Test::new()
        .agent(
            "name: test-agent
model: { provider: openai, name: m, base_url: \"$OPENAI_URL\", api_key_env: RUNNER_TEST_KEY, retry: { max_attempts: 4, initial_backoff: 10ms, max_backoff: 50ms } }
prompt: Go
",
        )
        .respond(MockResponse::error(429, "rate limited").retry_after("0"))
        .respond(MockResponse::text("partial words that never finish").drop_after(2))
        .respond(MockResponse::text("The real answer."))
        .stdout("The real answer.\n")
        .run();
    assert_eq!(ran.requests().len(), 3);
    let transcript = ran.transcript();
    assert!(!transcript.contains("never finish"), "{transcript}");
    let resets = ran
        .events_of("thread.message.delta")
        .iter()
        .filter(|e| e["data"]["delta"]["reset"] == true)
        .count();
    assert!(resets >= 1, "consumers are told to drop the partial text");
}

#[test]
fn ask_user_takes_answers_from_a_file() {
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: ask_user\n")
        .file("answers.yaml", "branch: main\n")
        .reply(Reply::tool_call(
            "ask_user",
            json!({"question": "Which branch?", "id": "branch"}),
        ))
        .reply(Reply::text("Using main."))
        .args(["--answers", "answers.yaml"])
        .run();
    let tool = tool_message(&ran.requests()[1]).unwrap();
    assert_eq!(tool["content"], "main");
}

#[test]
fn ask_user_without_an_answer_pauses_the_run_with_exit_4() {
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: ask_user\n")
        .reply(Reply::tool_call(
            "ask_user",
            json!({"question": "Which branch?"}),
        ))
        .args(["--output", "json"])
        .status(4)
        .stderr_contains("Which branch?")
        .run();
    let envelope = ran.json();
    assert_eq!(envelope["status"], "input_required");
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Which branch?")
    );
    assert!(
        event_types(&ran)
            .iter()
            .any(|t| t == "thread.run.requires_action")
    );
    let transcript = ran.transcript();
    assert!(transcript.contains("INPUT_REQUIRED"), "{transcript}");
    runner::output::transcript::parse(&transcript).expect("parses");
    ran.snapshot("input_required");
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
    let ran = Test::new()
        .agent(
            "system: You read notes.\nprompt: Go\ntool_protocol: xml\ntools:\n  - builtin: read_file\n",
        )
        .file("notes.txt", NOTES)
        .respond(tiny_chunks(
            "I will read it.<thinking>The notes &amp; more</thinking>\n<read_file>\n<path>notes.txt</path>\n<limit>1</limit>\n</read_file>",
        ))
        .respond(tiny_chunks("I think I am done."))
        .respond(tiny_chunks(
            "<attempt_completion><result>First line: line one</result></attempt_completion> trailing",
        ))
        .args(["--output", "json"])
        .run();
    assert_eq!(ran.json()["output"], "First line: line one");
    let requests = ran.requests();
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
    let started = ran.events_of("agent.tool.execution.started").remove(0);
    assert_eq!(
        started["data"]["input"],
        json!({"path": "notes.txt", "limit": 1})
    );
    let transcript = ran.transcript();
    assert!(
        transcript.contains("The notes & more")
            && transcript.contains("<<TOOL_STEP_START/read_file:"),
        "{transcript}"
    );
}

#[test]
fn a_value_that_does_not_fit_its_type_is_a_tool_error() {
    let ran = Test::new()
        .agent("prompt: Go\ntool_protocol: xml\ntools:\n  - builtin: read_file\n")
        .file("notes.txt", NOTES)
        .respond(tiny_chunks(
            "<read_file><path>notes.txt</path><limit>many</limit></read_file>",
        ))
        .respond(tiny_chunks(
            "<attempt_completion><result>ok</result></attempt_completion>",
        ))
        .run();
    let second = ran.requests()[1].body["messages"].to_string();
    assert!(
        second.contains("Error: invalid arguments: parameter `limit` must be an integer"),
        "{second}"
    );
}

#[test]
fn tool_timeout_and_max_output_chars_shape_the_results() {
    let ran = Test::new()
        .agent(
            "prompt: Go\ntools:\n  - builtin: shell\n    allow: [sleep]\n  - builtin: read_file\nlimits: { tool_timeout: 300ms, max_output_chars: 50 }\n",
        )
        .file("big.txt", &"x".repeat(500))
        .reply(
            Reply::tool_call("shell", json!({"command": "sleep 5"}))
                .with_tool_call("read_file", json!({"path": "big.txt"})),
        )
        .reply(Reply::text("done"))
        .run();
    let messages = ran.requests()[1].body["messages"].to_string();
    assert!(messages.contains("timed out after 300ms"), "{messages}");
    assert!(
        messages.contains("characters cut (limits.max_output_chars)"),
        "{messages}"
    );
}

#[test]
fn prune_tool_outputs_replaces_old_outputs_when_the_context_is_full() {
    let read_big = || Reply::tool_call("read_file", json!({"path": "big.txt"}));
    let ran = Test::new()
        .agent(
            "prompt: Go\ntools:\n  - builtin: read_file\nmiddleware:\n  - prune_tool_outputs: { context_limit: 600, output_reserve: 100, protect_recent: 300 }\n",
        )
        .file("big.txt", &"y".repeat(1200))
        .reply(read_big())
        .reply(read_big())
        .reply(read_big())
        .reply(Reply::text("done"))
        .run();
    let last = ran.requests().pop().unwrap().body["messages"].to_string();
    assert!(last.contains("[output cleared to save context]"), "{last}");
    assert!(
        last.contains(&"y".repeat(1200)),
        "the most recent output is kept"
    );
}

#[test]
fn summarize_replaces_old_history_with_a_summary_from_a_model_call() {
    let read_big = || Reply::tool_call("read_file", json!({"path": "big.txt"}));
    let ran = Test::new()
        .agent(
            "prompt: Go\ntools:\n  - builtin: read_file\nmiddleware:\n  - summarize: { threshold: 400, keep_recent: 2 }\n",
        )
        .file("big.txt", &"z".repeat(1000))
        .route(|request| {
            request
                .system_prompt()
                .filter(|s| s.contains("You summarise conversations"))
                .map(|_| MockResponse::text("SUMMARY: the notes were read twice."))
        })
        .reply(read_big())
        .reply(read_big())
        .reply(Reply::text("done"))
        .run();
    let requests = ran.requests();
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
    let ran = Test::new()
        .agent("prompt: Go\n")
        .reply(Reply::text("answer"))
        .args(["--events", "-", "--output", "json"])
        .run();
    let lines: Vec<Value> = ran
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is an event"))
        .collect();
    assert_eq!(lines.first().unwrap()["type"], "agent.run.created");
    assert_eq!(lines.last().unwrap()["type"], "thread.run.completed");
    assert_eq!(
        ran.result()["output"],
        "answer",
        "result.json is still written"
    );
}

/// A mistyped agent file is a plain "no such file", with the closest agent file beside it.
#[test]
fn a_missing_agent_file_is_a_plain_message_with_a_guess() {
    Test::new()
        .file("triage.yaml", "name: triage\nmodel: $MODEL\nprompt: Go\n")
        .command(["exec", "trige.yaml"])
        .status(2)
        .stderr("error: no such file: trige.yaml (did you mean triage.yaml?)\n")
        .run();
}

/// With `output.schema`, text mode prints the value that passed the schema, as JSON: the
/// reply's fence is gone and `| jq` works.
#[test]
fn text_mode_prints_the_structured_value_as_json() {
    Test::new()
        .agent("prompt: Go\noutput:\n  schema: { type: object, required: [ok] }\n")
        .reply(Reply::text("Here:\n```json\n{\"ok\": true}\n```"))
        .stdout("{\n  \"ok\": true\n}\n")
        .run();
}

/// `runner render` finds a transcript from its run directory, a run id, a session id or
/// `last`, as well as from the file.
#[test]
fn render_takes_a_run_directory_a_run_id_a_session_or_last() {
    let ran = Test::new()
        .agent("prompt: Go\n")
        .reply(Reply::text("Rendered answer."))
        .command(["exec", "agent.yaml", "--session", "s1"])
        .run();
    let runs: Vec<String> = std::fs::read_dir(ran.path(".runner/runs"))
        .unwrap()
        .map(|run| run.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let run_id = &runs[0];
    let run_dir = format!(".runner/runs/{run_id}");
    for what in [run_dir.as_str(), run_id.as_str(), "s1", "last"] {
        ran.then()
            .command(["render", what])
            .stdout_contains("Rendered answer.")
            .run();
    }
    ran.then()
        .command(["render", "nothing-here"])
        .status(2)
        .stderr_contains("no transcript, run directory, run id or session `nothing-here`")
        .run();
}

/// A bad value in a `--vars` file names the file, and the line of the value.
#[test]
fn a_bad_value_in_a_vars_file_names_the_file_and_line() {
    Test::new()
        .agent("inputs:\n  count: { type: integer }\nprompt: \"Count {{ count }}\"\n")
        .file("vars.yaml", "# the batch\ncount: many\n")
        .args(["--vars", "vars.yaml"])
        .status(2)
        .stderr_contains("vars.yaml:2:8: input `count` is an integer")
        .run();
}

/// `sessions rm` removes the session's runs from `.runner/runs` too.
#[test]
fn sessions_rm_removes_the_sessions_runs() {
    let ran = Test::new()
        .agent("prompt: Go\n")
        .reply(Reply::text("done"))
        .command(["exec", "agent.yaml", "--session", "s1"])
        .run();
    let runs = || std::fs::read_dir(ran.path(".runner/runs")).unwrap().count();
    assert_eq!(runs(), 1);
    ran.then().command(["sessions", "rm", "s1"]).run();
    assert_eq!(runs(), 0, "the session's run went with it");
}

/// `OLLAMA_HOST` points an ollama model at the server, as Ollama's own clients read it.
#[test]
fn ollama_host_points_an_ollama_model_at_the_server() {
    let test = Test::new();
    let host = test
        .mock_url()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    test.agent("name: local\nmodel: ollama/llama3.2\nprompt: Go\n")
        .reply(Reply::text("from the local server"))
        .env("OLLAMA_HOST", &host)
        .stdout("from the local server\n")
        .run();
}

/// `runner init` writes a first agent file that validates and runs offline at once, with the
/// schema for editors beside it; it never overwrites a file.
#[test]
fn init_writes_an_agent_that_runs_offline_at_once() {
    let ran = Test::new()
        .command(["init", "helper"])
        .stdout_contains("created helper.yaml")
        .run();
    assert!(
        ran.read("helper.yaml")
            .starts_with("# yaml-language-server: $schema=.runner/agent.schema.json\n")
    );
    let schema: serde_json::Value =
        serde_json::from_str(&ran.read(".runner/agent.schema.json")).unwrap();
    assert_eq!(
        schema["$id"],
        "https://runner.dev/schemas/agent.schema.json"
    );
    ran.then().command(["validate", "helper.yaml"]).run();
    ran.then()
        .command(["exec", "helper.yaml", "--var", "topic=tests"])
        .env_remove("RUNNER_TEST_KEY")
        .stdout_contains("I listed the directory")
        .run();
    ran.then()
        .command(["init", "helper"])
        .status(2)
        .stderr_contains("helper.yaml exists already")
        .run();
}

/// `runner completions SHELL` prints a script generated from the parser itself: bash
/// accepts it, and it offers the commands and their options.
#[test]
fn completions_come_from_the_parser_and_bash_accepts_them() {
    let ran = Test::new()
        .command(["completions", "bash"])
        .any_stderr()
        .run();
    for word in ["exec", "validate", "resume", "init", "--output", "--watch"] {
        assert!(ran.stdout.contains(word), "{word} missing from the script");
    }
    std::fs::write(ran.path("runner.bash"), &ran.stdout).unwrap();
    let syntax = std::process::Command::new("bash")
        .args(["-n", "runner.bash"])
        .current_dir(&ran.dir)
        .status()
        .expect("bash runs");
    assert!(syntax.success(), "bash -n refused the script");
    ran.then()
        .command(["completions", "zsh"])
        .stdout_contains("#compdef runner")
        .run();
}

/// An OpenAI-compatible service named as the provider reads its own key variable (and the
/// file's `base_url` still wins over its endpoint).
#[test]
fn a_service_named_as_the_provider_reads_its_own_key_variable() {
    let agent = "name: fast\nmodel: { provider: groq, name: llama-3.3-70b-versatile, base_url: \"$OPENAI_URL\" }\nprompt: Go\n";
    let ran = Test::new()
        .agent(agent)
        .reply(Reply::text("quick"))
        .env("GROQ_API_KEY", "gsk-test-not-a-real-key")
        .stdout("quick\n")
        .run();
    let request = &ran.requests()[0];
    assert_eq!(
        request.header("authorization"),
        Some("Bearer gsk-test-not-a-real-key")
    );
    assert_eq!(request.body["model"], "llama-3.3-70b-versatile");
    ran.then()
        .command(["exec", "agent.yaml"])
        .env_remove("GROQ_API_KEY")
        .status(2)
        .stderr_contains("GROQ_API_KEY")
        .run();
}

/// `runner runs` lists the runs under `.runner/runs`, newest first, shows one's result, and
/// prunes the finished ones beyond the newest N.
#[test]
fn runs_are_listed_shown_and_pruned() {
    let ran = Test::new()
        .agent("prompt: Go\n")
        .reply(Reply::text("one"))
        .command(["exec", "agent.yaml"])
        .run();
    let later = ran
        .then()
        .reply(Reply::text("two"))
        .command(["exec", "agent.yaml", "--output", "json"])
        .run();
    let newest = later.json()["run_id"].as_str().unwrap().to_string();
    let listed = ran.then().command(["runs"]).run();
    let lines: Vec<&str> = listed.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "a header and two runs: {}", listed.stdout);
    assert!(
        lines[1].starts_with(&newest),
        "newest first: {}",
        listed.stdout
    );
    assert!(lines[1].contains("completed"));
    ran.then()
        .command(["runs", "show", &newest])
        .stdout_contains("\"output\": \"two\"")
        .run();
    ran.then()
        .command(["runs", "prune", "--keep", "1"])
        .stdout("removed 1 run(s)\n")
        .run();
    let left: Vec<String> = std::fs::read_dir(ran.path(".runner/runs"))
        .unwrap()
        .map(|run| run.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, [newest]);
}

/// `--progress plain` (what a CI job gets): a line per event with its UTC time, and a
/// closing line with how the run ended, what it did and where its files are; the error
/// of a run that stops is printed once, and a limit is not called a failure.
#[test]
fn plain_progress_is_timestamped_and_ends_with_a_summary_naming_the_run_directory() {
    let ran = Test::new()
        .agent(&format!("{BUSY}limits: {{ max_llm_calls: 1 }}\n"))
        .reply(Reply::tool_call("list_dir", json!({})).with_usage(100, 50))
        .args(["--progress", "plain"])
        .status(3)
        .stderr_contains("error[limit_reached]: the run reached `max_llm_calls`")
        .run();
    let lines: Vec<&str> = ran.stderr.lines().collect();
    let stamped = |line: &str| {
        let time = line.split(' ').next().unwrap_or("");
        time.len() == 24 && time.ends_with('Z') && time.as_bytes()[10] == b'T'
    };
    let step = lines.iter().find(|l| l.contains("step 1")).unwrap();
    assert!(stamped(step), "{step}");
    assert!(lines.iter().any(|l| stamped(l) && l.contains("✓ list_dir")));
    let summary = lines
        .iter()
        .find(|l| l.starts_with("limit reached"))
        .unwrap();
    assert!(
        summary.starts_with("limit reached · 2 steps · 1 model call · 1 tool call · 150 tokens · ")
            && summary.ends_with(" s · run"),
        "{summary}"
    );
    let errors = lines
        .iter()
        .filter(|l| l.contains("the run reached"))
        .count();
    assert_eq!(errors, 1, "the limit is said once:\n{}", ran.stderr);
    assert!(!ran.stderr.contains("failed"), "{}", ran.stderr);
}

/// In a CI job (`CI=true`) progress is plain without asking; elsewhere, with stderr not a
/// terminal, there is none.
#[test]
fn progress_is_plain_in_ci_and_absent_in_a_pipe() {
    let ci = Test::new()
        .agent("prompt: Go\n")
        .reply(Reply::text("done"))
        .env("CI", "true")
        .stdout("done\n")
        .stderr_contains("completed · 1 step · 1 model call · 0 tool calls")
        .run();
    assert!(ci.stderr.contains("T") && ci.stderr.contains("Z test-agent · step 1"));
    Test::new()
        .agent("prompt: Go\n")
        .reply(Reply::text("done"))
        .stdout("done\n")
        .stderr("")
        .run();
}

/// In GitHub Actions a failed run also prints an annotation, escaped so that the message
/// cannot forge another workflow command.
#[test]
fn a_failed_run_in_github_actions_is_an_annotation() {
    Test::new()
        .agent(&format!("{BUSY}limits: {{ max_llm_calls: 1 }}\n"))
        .reply(Reply::tool_call("list_dir", json!({})))
        .env("GITHUB_ACTIONS", "true")
        .status(3)
        .stderr_contains("::error title=runner%3A test-agent limit reached::error[")
        .run();
}

/// `--debug` logs what happens inside (the HTTP exchanges, the retries) on stderr, and no
/// line shows the key, even where the server echoed it; a bad `RUNNER_LOG` is said.
#[test]
fn debug_logs_exchanges_and_retries_without_the_key() {
    let echo = format!("overloaded for key {}", KEY);
    let ran = Test::new()
        .agent(&format!(
            "name: test-agent\nmodel: {{ provider: openai, name: m, base_url: \"$OPENAI_URL\", api_key_env: {}, retry: {{ max_attempts: 2, initial_backoff: 1ms }} }}\nprompt: Go\n",
            KEY_ENV
        ))
        .respond(MockResponse::error(503, echo))
        .reply(Reply::text("done"))
        .args(["--debug"])
        .stdout("done\n")
        .stderr_contains("retrying the model call")
        .run();
    assert!(
        ran.stderr.contains("model request answered"),
        "{}",
        ran.stderr
    );
    assert!(ran.stderr.contains("status=503"), "{}", ran.stderr);
    assert!(!ran.stderr.contains(KEY), "{}", ran.stderr);
    Test::new()
        .agent("prompt: Go\n")
        .reply(Reply::text("done"))
        .env("RUNNER_LOG", "runner=loud")
        .stdout("done\n")
        .stderr_contains("warning: RUNNER_LOG=`runner=loud` is not a log filter")
        .run();
}

/// On a terminal, a status line ticks at the bottom between events (spinner, the run's
/// seconds, agent and step, tokens), event lines scroll above it, and it is gone when the
/// run ends, before the summary.
#[test]
fn live_progress_ticks_a_status_line_on_a_terminal() {
    if !terminal_available() {
        return;
    }
    let ran = Test::new()
        .agent("prompt: Go\n")
        .respond(MockResponse::reply(Reply::text("done")).chunk_delay(Duration::from_millis(400)))
        .in_terminal()
        .stdout_contains("test-agent · step 1: Model call")
        .run();
    let screen = &ran.stdout;
    // The status line's message, which no event line has; drawn more than once as it ticks.
    let drawn = screen
        .matches("test-agent · step 1: Model call · 0 tokens")
        .count();
    assert!(
        drawn >= 2,
        "the status line ticked {drawn} times:\n{screen:?}"
    );
    let summary = screen.find("completed · 1 step · 1 model call").unwrap();
    let last_draw = screen.rfind("· 0 tokens").unwrap();
    assert!(
        last_draw < summary,
        "the status line is cleared before the summary"
    );
    assert!(screen.trim_end().ends_with("done"), "{screen:?}");
}

/// Retries are seen as they happen: an `agent.llm.retry` event each (attempt, wait,
/// reason), a progress line, and their count in the result.
#[test]
fn retries_are_events_progress_lines_and_counted_in_the_result() {
    let ran = Test::new()
        .agent(&format!(
            "name: test-agent\nmodel: {{ provider: openai, name: m, base_url: \"$OPENAI_URL\", api_key_env: {KEY_ENV}, retry: {{ max_attempts: 3, initial_backoff: 1ms }} }}\nprompt: Go\n"
        ))
        .respond(MockResponse::error(503, "upstream unavailable"))
        .respond(MockResponse::error(429, "slow down"))
        .reply(Reply::text("done"))
        .args(["--progress", "plain"])
        .stdout("done\n")
        .stderr_contains("↻ attempt 2 in ")
        .stderr_contains("↻ attempt 3 in ")
        .run();
    let retries = ran.events_of("agent.llm.retry");
    let attempts: Vec<u64> = retries
        .iter()
        .map(|e| e["data"]["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, [2, 3]);
    assert!(
        retries[0]["data"]["reason"]
            .as_str()
            .unwrap()
            .contains("503")
    );
    assert_eq!(ran.result()["retries"], 2);
}

/// `--stream` prints the model's text on stderr as it arrives, between the progress
/// lines, each of which still starts on a line of its own.
#[test]
fn stream_prints_the_reply_as_it_arrives() {
    let ran = Test::new()
        .agent(BUSY)
        .reply(Reply::text("Looking first.").with_tool_call("list_dir", json!({})))
        .reply(Reply::text("All done here."))
        .args(["--progress", "plain", "--stream"])
        .stdout("All done here.\n")
        .stderr_contains("Looking first.\n")
        .stderr_contains("All done here.\n")
        .run();
    let lines: Vec<&str> = ran.stderr.lines().collect();
    let stamped = |line: &&str| line.starts_with("20") && line.contains("Z ");
    let after_text = lines.iter().position(|l| *l == "Looking first.").unwrap();
    assert!(stamped(&lines[after_text + 1]), "{}", ran.stderr);
}

/// With `--stream`, thinking the server streams is shown too, before the reply and apart
/// from it (after `thinking: ` without colour), and reaches the events as
/// `thinkingChunk` deltas.
#[test]
fn stream_shows_the_models_thinking_apart_from_its_reply() {
    let ran = Test::new()
        .agent("prompt: Go\n")
        .reply(Reply::text("The answer is 4.").with_thinking("Two and two make four."))
        .args(["--progress", "plain", "--stream"])
        .stdout("The answer is 4.\n")
        .stderr_contains("thinking: Two and two make four.\nThe answer is 4.\n")
        .run();
    let thinking: String = ran
        .events_of("thread.message.delta")
        .iter()
        .filter_map(|e| e["data"]["delta"]["thinkingChunk"].as_str())
        .collect();
    assert_eq!(thinking, "Two and two make four.");
}

/// `docs/running.md`: a problem is printed "at the key it belongs to". A model that cannot
/// be built is reported at the key that names it: once the `summarize` middleware's model
/// was reported at the root's `/model`, and a handoff target's at `/tools`.
#[test]
fn a_model_that_cannot_be_built_is_reported_at_the_key_that_names_it() {
    let missing = "{ provider: openai, name: m, api_key_env: RUNNER_TEST_MISSING_KEY }";
    Test::new()
        .agent(&format!(
            "prompt: Go\nmiddleware:\n  - logging: {{}}\n  - summarize:\n      threshold: 1000\n      model: {missing}\n"
        ))
        .env_remove("RUNNER_TEST_MISSING_KEY")
        .status(2)
        .stderr_contains("agent.yaml:8:14: error[model]: ")
        .stderr_contains("RUNNER_TEST_MISSING_KEY is not set")
        .stderr_contains("(at /middleware/1/summarize/model)")
        .run();
    Test::new()
        .agent(&format!(
            "prompt: Go\nhandoffs:\n  - name: to_inline\n    description: inline\n    agent:\n      name: inline\n      model: {missing}\n  - name: to_file\n    description: a file\n    agent: target.yaml\n"
        ))
        .file("target.yaml", &format!("name: target\nmodel: {missing}\n"))
        .env_remove("RUNNER_TEST_MISSING_KEY")
        .status(2)
        .stderr_contains("agent.yaml:9:14: error[sub-agent]: agent `inline` (inline): ")
        .stderr_contains("(at /handoffs/0/agent/model)")
        .run();
    Test::new()
        .agent("prompt: Go\nhandoffs:\n  - name: to_file\n    description: a file\n    agent: target.yaml\n")
        .file("target.yaml", &format!("name: target\nmodel: {missing}\n"))
        .env_remove("RUNNER_TEST_MISSING_KEY")
        .status(2)
        .stderr_contains("agent.yaml:7:12: error[sub-agent]: agent `target` (")
        .stderr_contains("(at /handoffs/0/agent)")
        .run();
}

/// `--input TEXT` to an agent whose `prompt` and `system` never read `{{ input }}` was
/// dropped without a word (`agents/code-reviewer.yaml`). It is a warning now, on stderr and
/// in the result's `warnings`; a prompt that reads it, even through an include, is quiet.
#[test]
fn input_text_that_no_template_reads_is_a_warning() {
    let ran = Test::new()
        .agent("prompt: Review the diff.\n")
        .reply(Reply::text("Looks fine."))
        .args(["--input", "look at main.rs"])
        .stdout("Looks fine.\n")
        .stderr_contains("warning: --input is ignored: neither `prompt` nor `system` of agent.yaml reads `{{ input }}`")
        .stderr_contains("`--var NAME=TEXT`")
        .run();
    let warnings = ran.result()["warnings"].clone();
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .starts_with("--input is ignored"),
        "{warnings}"
    );
    assert_eq!(
        ran.requests()[0].body["messages"][0]["content"],
        "Review the diff."
    );
    Test::new()
        .agent("system: \"{% include 'system.txt' %}\"\nprompt: Review the diff.\n")
        .file("system.txt", "You review {{ input }}.")
        .reply(Reply::text("Looks fine."))
        .args(["--input", "main.rs"])
        .stdout("Looks fine.\n")
        .run();
}

/// An HTTP server on loopback that answers every request with `status` and no
/// `WWW-Authenticate` header; its thread ends after `count` connections.
fn refusing_server(status: &'static str, count: usize) -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming().take(count) {
            let Ok(mut client) = client else { return };
            client
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut buf = [0u8; 8192];
            let _ = client.read(&mut buf);
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: 6\r\nconnection: close\r\n\r\nnot ok"
            );
            let _ = client.write_all(response.as_bytes());
        }
    });
    port
}

/// `docs/mcp.md`: a server that answers 401 says how to give the token, with or without a
/// `WWW-Authenticate` challenge. Without one, the SDK's message once came with no hint.
#[test]
fn an_mcp_server_refusing_without_a_challenge_says_how_to_give_the_token() {
    for (status, said) in [
        ("401 Unauthorized", "the server answered 401 Unauthorized"),
        ("403 Forbidden", "the server answered 403 Forbidden"),
    ] {
        let port = refusing_server(status, 4);
        let ran = Test::new()
            .agent(&format!(
                "prompt: Go\ntools:\n  - mcp:\n      url: http://127.0.0.1:{port}/mcp\n"
            ))
            .args(["--output", "json"])
            .status(1)
            .stderr_contains(said)
            .stderr_contains("headers: { Authorization:")
            .run();
        assert_eq!(ran.json()["error"]["code"], "mcp_server");
        assert!(ran.requests().is_empty(), "no model call");
    }
}

/// `docs/mcp.md`: problems at start are `mcp_server`, except a name collision between the
/// tools of two servers, which is the agent file's (`invalid_agent`), like any collision.
#[test]
fn a_tool_name_collision_between_mcp_servers_is_invalid_agent() {
    let server = support::root().join("tests/mcp-server/node_modules/.bin/mcp-server-everything");
    let entry = format!(
        "  - mcp: {{ command: {}, args: [stdio], tools: [echo] }}\n",
        server.display()
    );
    let ran = Test::new()
        .agent(&format!("prompt: Hi\ntools:\n{entry}{entry}"))
        .args(["--output", "json"])
        .status(2)
        .stderr_contains("tool `echo`: two tools have this name")
        .run();
    assert_eq!(ran.json()["error"]["code"], "invalid_agent");
}

/// README: "In CI (`CI=true`) the same lines carry UTC timestamps, without colour or
/// status line". A terminal once won over `CI=true`, and Buildkite runs jobs in a terminal.
#[test]
fn ci_wins_over_a_terminal_for_progress() {
    if !terminal_available() {
        return;
    }
    let ran = Test::new()
        .agent("prompt: Go\n")
        .respond(MockResponse::reply(Reply::text("done")).chunk_delay(Duration::from_millis(400)))
        .in_terminal()
        .env("CI", "true")
        .stdout_contains("Z test-agent · step 1: Model call")
        .run();
    let screen = &ran.stdout;
    assert!(
        !screen.contains("· 0 tokens"),
        "no status line:\n{screen:?}"
    );
    assert!(!screen.contains('\u{1b}'), "no colour:\n{screen:?}");
}

/// A run in a git repository leaves nothing to commit: `.runner/` ignores itself.
#[test]
fn the_state_directory_ignores_itself_in_git() {
    let ran = Test::new()
        .agent("prompt: Go\n")
        .reply(Reply::text("done"))
        .command(["exec", "agent.yaml"])
        .stdout("done\n")
        .run();
    assert_eq!(ran.read(".runner/.gitignore"), "*\n");
    if std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped the git check: git is not installed");
        return;
    }
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&ran.dir)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["init", "-q"]);
    let status = git(&["status", "--porcelain", "--untracked-files=all"]);
    assert!(!status.contains(".runner"), "{status}");
}

/// What a model may answer to forge a job summary: HTML, a table cell, links and an
/// image, a heading and a list item of its own, and a token.
const FORGING: &str = "Done <script>alert(1)</script> | forged | cell\n\
[click](javascript:alert(1)) ![x](javascript:alert(2)) <b>bold</b>\n\
# Heading\n- item\n\
ghp_abcdefghijklmnopqrstuvwxyz0123456789AB";

#[test]
fn a_job_summary_in_github_actions_shows_the_run_with_model_text_inert() {
    let ran = Test::new()
        .agent("prompt: Go.\n")
        .reply(Reply::text(FORGING))
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", "step-summary.md")
        .run();
    let markdown = ran.read("step-summary.md");
    let shown = support::markdown::shown(&markdown);
    let header = [
        "Status",
        "Exit code",
        "Steps",
        "Model calls",
        "Tool calls",
        "Tokens",
        "Cost",
        "Duration",
    ];
    let rows = shown.table(&header);
    assert_eq!(rows.len(), 1, "{markdown}");
    assert_eq!(
        rows[0][..5],
        ["completed", "0", "1", "1", "0"],
        "{markdown}"
    );
    assert_eq!(
        shown.tables.len(),
        1,
        "the answer made a table:\n{markdown}"
    );
    let text = &shown.text;
    assert!(
        text.contains("runner: test-agent completed (exit 0)"),
        "{text}"
    );
    assert!(
        text.contains("Done <script>alert(1)</script> | forged | cell"),
        "{text}"
    );
    assert!(
        text.contains("[click](javascript:alert(1)) ![x](javascript:alert(2)) <b>bold</b>"),
        "{text}"
    );
    assert!(text.contains("# Heading\n- item"), "{text}");
    assert!(text.contains("[REDACTED]"), "{text}");
    assert!(!markdown.contains("ghp_abc"), "{markdown}");
    assert!(text.contains("Run directory: run"), "{text}");
    // Only one heading (the summary's own), and no list but the summary's.
    assert_eq!(
        markdown.lines().filter(|l| l.starts_with('#')).count(),
        1,
        "{markdown}"
    );
}

#[test]
fn summary_writes_the_same_summary_anywhere_and_an_error_with_its_code() {
    let ran = Test::new()
        .agent("prompt: Go.\n")
        .reply(Reply::text(FORGING))
        .args(["--summary", "gitlab.md"])
        .run();
    let shown = support::markdown::shown(&ran.read("gitlab.md"));
    assert!(
        shown
            .text
            .contains("Done <script>alert(1)</script> | forged | cell"),
        "{}",
        shown.text
    );
    assert!(!ran.path("step-summary.md").exists());
    // A run that never starts (its key is missing) has its summary too, error and all.
    let ran = Test::new()
        .agent("prompt: Go.\n")
        .env_remove(KEY_ENV)
        .args(["--summary", "gitlab.md"])
        .status(2)
        .any_stderr()
        .run();
    let markdown = ran.read("gitlab.md");
    let shown = support::markdown::shown(&markdown);
    let rows = shown.table(&[
        "Status",
        "Exit code",
        "Steps",
        "Model calls",
        "Tool calls",
        "Tokens",
        "Cost",
        "Duration",
    ]);
    assert_eq!(rows[0][..2], ["invalid", "2"], "{markdown}");
    assert!(
        shown
            .text
            .contains("Error: error[invalid_agent]: openai error (missing_key)"),
        "{}",
        shown.text
    );
}

// What a step asks of the kernel (#44): ids, the writes of its events, a connection's
// set-up. These run the binary under strace.

/// `steps` steps of one `list_dir` call each, then an answer.
fn list_dir_steps(steps: usize) -> Test {
    let test = Test::new().agent("prompt: Go\ntools:\n  - builtin: list_dir\n");
    (0..steps)
        .fold(test, |test, _| {
            test.reply(Reply::tool_call("list_dir", json!({"path": "."})))
        })
        .reply(Reply::text("done"))
}

/// The workspace root is resolved once, at start; a call's path is walked from it, so
/// `list_dir .` resolves no link: no `readlink` per step (`std::fs::canonicalize` of the
/// whole path, twice a call, made one per component of the root's path).
#[test]
fn a_path_is_resolved_below_the_root_resolved_once_not_from_slash_at_each_call() {
    let short = list_dir_steps(2).traced("readlink,readlinkat").run();
    let long = list_dir_steps(8).traced("readlink,readlinkat").run();
    let count = |ran: &Ran| ran.syscalls("readlink").len() + ran.syscalls("readlinkat").len();
    let (few, more) = (count(&short), count(&long));
    assert_eq!(
        few,
        more,
        "six more `list_dir .` calls read {} more links",
        more.saturating_sub(few)
    );
    assert_eq!(long.events_of("agent.tool.execution.completed").len(), 8);
}

/// The agent file is read once for a run: loading it finds no MCP server, so it imported
/// no `.mcp.json` file, and the tree of the run does not read it again to look for one
/// (a thread, a read and a parse at every start).
#[test]
fn an_agent_file_without_mcp_servers_is_read_once() {
    let ran = list_dir_steps(1).traced("openat").run();
    let reads: Vec<String> = ran
        .syscalls("openat")
        .into_iter()
        .filter(|call| call.contains("agent.yaml\",") && !call.contains("O_PATH"))
        .collect();
    assert_eq!(reads.len(), 1, "{reads:#?}");
    assert_eq!(ran.events_of("agent.tool.execution.completed").len(), 1);
}

#[test]
fn ids_come_from_one_generator_not_from_the_kernel_one_by_one() {
    let short = list_dir_steps(2).traced("getrandom").run();
    let long = list_dir_steps(8).traced("getrandom").run();
    // Each step names a step, a message, a tool call and two checkpoints: ten `getrandom`
    // calls a step when each id was drawn from the kernel.
    let (few, more) = (
        short.syscalls("getrandom").len(),
        long.syscalls("getrandom").len(),
    );
    assert!(
        more <= few + 2,
        "six more steps drew {} more times from the kernel ({few} → {more})",
        more - few
    );
    // The ids are still UUIDv4s, and distinct: nine steps, and nine model calls, eight tool
    // results and the prompt as messages.
    let events = long.events();
    let ids: Vec<&str> = events
        .iter()
        .filter_map(|e| match e["type"].as_str() {
            Some("agent.run.step.created") => e["data"]["stepId"].as_str(),
            Some("thread.message.created") => e["data"]["message"]["id"].as_str(),
            _ => None,
        })
        .collect();
    for id in &ids {
        let uuid = uuid::Uuid::parse_str(id).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(uuid.get_version_num(), 4, "{id}");
    }
    let distinct: std::collections::HashSet<&&str> = ids.iter().collect();
    assert_eq!((ids.len(), distinct.len()), (27, 27), "{ids:?}");
}

#[test]
fn a_steps_events_reach_events_jsonl_in_three_writes_not_one_each() {
    let ran = list_dir_steps(6).traced("write,writev").run();
    let writes = ran
        .syscalls("write")
        .into_iter()
        .chain(ran.syscalls("writev"))
        .filter(|call| call.contains("events.jsonl>"))
        .count();
    let events = ran.events();
    let deltas = events
        .iter()
        .filter(|e| e["type"] == "thread.message.delta")
        .count();
    // A step's events go out when the model is called, when its tool starts (with the
    // streamed pieces of the reply: the mock sends each reply in one read), and when it
    // ends: three writes for each of the seven steps, where each event, then each piece,
    // took one.
    assert!(
        writes <= 3 * 7 + 1,
        "{} events ({deltas} streamed pieces) took {writes} writes to events.jsonl",
        events.len()
    );
}

#[test]
fn a_slow_replys_pieces_reach_events_jsonl_while_it_streams() {
    let running = Test::new()
        .agent("prompt: Hi\n")
        .respond(MockResponse::text("a b c d e f g h").chunk_delay(Duration::from_millis(300)))
        .status(130)
        .stderr_contains("interrupted")
        .spawn();
    // Held pieces go out when the stream waits for more, not when the reply ends.
    wait_until("a streamed piece is on disk", || {
        std::fs::read_to_string(running.path("run/events.jsonl"))
            .is_ok_and(|events| events.contains("thread.message.delta"))
    });
    assert!(
        !std::fs::read_to_string(running.path("run/events.jsonl"))
            .unwrap()
            .contains("thread.message.completed"),
        "the reply ended before its first piece was seen"
    );
    running.interrupt();
    running.wait();
}

#[test]
fn a_small_directory_is_listed_on_the_runs_own_thread() {
    let ran = list_dir_steps(3).traced("getdents64,writev").run();
    // The thread that sends the requests lists the directory too: no hand-off to the
    // blocking pool and back (two thread wake-ups) for a handful of system calls.
    let listing = ran.threads_calling("getdents64");
    let requesting = ran.threads_calling("writev");
    assert!(!listing.is_empty() && !requesting.is_empty());
    assert!(
        listing.is_subset(&requesting),
        "listed by threads {listing:?}, requests sent by {requesting:?}"
    );
    assert_eq!(ran.events_of("agent.tool.execution.completed").len(), 3);
}

#[test]
fn events_and_transcript_are_on_disk_before_a_tool_runs() {
    // Each call reads the run's files while it runs: what `tail -f` shows at that moment.
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: shell\n    allow: [cat]\n")
        .reply(Reply::tool_call(
            "shell",
            json!({"command": "cat run/events.jsonl"}),
        ))
        .reply(Reply::tool_call(
            "shell",
            json!({"command": "cat run/transcript.txt"}),
        ))
        .reply(Reply::text("done"))
        .run();
    let seen: Vec<String> = ran
        .events_of("agent.tool.execution.completed")
        .iter()
        .map(|e| e["data"]["result"].to_string())
        .collect();
    for written in [
        "thread.message.created",
        "thread.run.step.tool_call.created",
        "agent.tool.execution.started",
    ] {
        assert!(seen[0].contains(written), "no {written} in {}", seen[0]);
    }
    // The first step and its checkpoint were written whole before the second's call ran.
    for written in ["Step 1: ", "<<STEP_END>>", "<<CHECKPOINT_START>>"] {
        assert!(seen[1].contains(written), "no {written} in {}", seen[1]);
    }
}

#[test]
fn a_server_that_closes_each_connection_costs_one_socket_option_per_request() {
    let ran = list_dir_steps(4)
        .connection_close()
        .traced("connect,setsockopt")
        .run();
    let connections = ran
        .syscalls("connect")
        .iter()
        .filter(|call| call.contains("inet_addr(\"127.0.0.1\")"))
        .count();
    assert_eq!(connections, 5, "a connection for each of the five requests");
    // TCP_NODELAY; no keep-alive probes or user timeout for a loopback peer.
    let options = ran.syscalls("setsockopt");
    assert_eq!(options.len(), connections, "{options:#?}");
}

#[test]
fn a_loopback_connection_is_one_socket_call_and_one_close() {
    // `src/provider/loopback.rs`: the socket is made non-blocking as it is created (no
    // `fcntl`s), its addresses are not read, and it is closed without a shutdown first.
    let ran = list_dir_steps(4)
        .connection_close()
        .traced("socket,getpeername,getsockname,shutdown")
        .run();
    let sockets: Vec<String> = ran
        .syscalls("socket")
        .into_iter()
        .filter(|call| call.contains("AF_INET"))
        .collect();
    assert_eq!(sockets.len(), 5, "a socket for each request: {sockets:#?}");
    for socket in &sockets {
        assert!(socket.contains("SOCK_NONBLOCK"), "{socket}");
    }
    for unneeded in ["getpeername", "getsockname", "shutdown"] {
        assert_eq!(ran.syscalls(unneeded), Vec::<String>::new(), "{unneeded}");
    }
}

/// A program that says what it is doing, a token among it, a burst of 300 lines, then
/// (once the burst's second is over, so the bound lets it through) a warning on stderr.
const TALKER: &str = "#!/bin/sh
echo starting
echo token acme-123456
i=1
while [ $i -le 300 ]; do echo line $i; i=$((i+1)); done
sleep 1.1
echo 'warning: slow' >&2
";

/// The lines of `agent.tool.output` events, and the lines they say were skipped.
fn live_lines(ran: &Ran) -> (Vec<Value>, u64) {
    let output = ran.events_of("agent.tool.output");
    let skipped = output
        .iter()
        .map(|e| e["data"]["skipped"].as_u64().unwrap())
        .sum();
    (output, skipped)
}

/// `docs/running.md`: a long `shell` command's output streams as it arrives, as
/// `agent.tool.output` events and progress lines, bounded (lines over the rate are counted,
/// not shown) and redacted like the result, which alone keeps the whole output.
#[test]
fn a_shell_commands_output_streams_as_it_arrives_bounded_and_redacted() {
    let ran = Test::new()
        .agent(
            "prompt: Go\nredact: [\"acme-[0-9]{6}\"]\ntools:\n  - builtin: shell\n    allow: [./talk.sh]\n",
        )
        .executable("talk.sh", TALKER)
        .reply(Reply::tool_call("shell", json!({"command": "./talk.sh"})))
        .reply(Reply::text("done"))
        .args(["--progress", "plain"])
        .stdout("done\n")
        .stderr_contains(" │ shell starting\n")
        .stderr_contains(" │ shell stderr: warning: slow\n")
        .run();
    let (output, skipped) = live_lines(&ran);
    let lines: Vec<&str> = output
        .iter()
        .filter_map(|e| e["data"]["line"].as_str())
        .collect();
    assert_eq!(lines[0], "starting", "{lines:?}");
    assert!(lines.contains(&"token [REDACTED]"), "{lines:?}");
    let stderr = output.iter().find(|e| e["data"]["line"] == "warning: slow");
    assert_eq!(stderr.unwrap()["data"]["stream"], "stderr");
    // Every line is shown or counted; the burst is mostly counted.
    assert_eq!(lines.len() as u64 + skipped, 303, "{lines:?}");
    assert!(lines.len() < 100, "{} lines shown", lines.len());
    assert!(output.iter().all(|e| e["depth"] == 0));

    // Between the call's start and end; the whole output only in its result.
    let events = ran.events();
    let at = |kind: &str| events.iter().position(|e| e["type"] == kind).unwrap();
    let first = events
        .iter()
        .position(|e| e["type"] == "agent.tool.output")
        .unwrap();
    let last = events
        .iter()
        .rposition(|e| e["type"] == "agent.tool.output")
        .unwrap();
    assert!(at("agent.tool.execution.started") < first);
    assert!(last < at("agent.tool.execution.completed"));
    let result = &ran.events_of("agent.tool.execution.completed")[0]["data"]["result"];
    assert!(
        result["data"]["stdout"]
            .as_str()
            .unwrap()
            .contains("line 300\n")
    );
    assert!(!ran.read("run/events.jsonl").contains("acme-123456"));
    assert!(!ran.transcript().contains("acme-123456"));
}

/// A sub-agent's program streams too, at the sub-agent's depth (indented under its caller
/// in the progress lines), redacted with its caller's patterns.
#[test]
fn a_sub_agents_shell_output_streams_at_its_depth() {
    let ran = Test::new()
        .agent(
            "prompt: Go\nredact: [\"acme-[0-9]{6}\"]\ntools:\n  - name: helper\n    description: Runs.\n    parameters: { type: object, properties: {} }\n    agent: ./helper.yaml\n",
        )
        .file(
            "helper.yaml",
            "name: helper\nsystem: You run.\ntools:\n  - builtin: shell\n    allow: [./talk.sh]\n",
        )
        .executable("talk.sh", TALKER)
        .reply(Reply::tool_call("helper", json!({})))
        .reply(Reply::tool_call("shell", json!({"command": "./talk.sh"})))
        .reply(Reply::text("ran"))
        .reply(Reply::text("done"))
        .args(["--progress", "plain"])
        .stdout("done\n")
        .stderr_contains("   │ shell starting\n")
        .run();
    let (output, _) = live_lines(&ran);
    assert!(!output.is_empty());
    assert!(
        output
            .iter()
            .all(|e| e["depth"] == 1 && e["agent"] == "helper")
    );
    let token = output
        .iter()
        .find(|e| e["data"]["line"] == "token [REDACTED]");
    assert!(token.is_some(), "{output:?}");
    assert!(!ran.read("run/events.jsonl").contains("acme-123456"));
}

/// UAP §8.5: `depends_on` and `sequential` on built-in tools, not only on sub-agents. The
/// write is called first, yet waits for the read it depends on.
#[test]
fn a_built_in_tool_waits_for_the_tools_it_depends_on() {
    let ran = Test::new()
        .agent(
            "prompt: Go\ntools:\n  - builtin: read_file\n  - builtin: write_file\n    depends_on: [read_file]\n  - builtin: list_dir\n    sequential: true\n",
        )
        .file("notes.txt", "old")
        .reply(
            Reply::tool_call("write_file", json!({"path": "notes.txt", "content": "new"}))
                .with_tool_call("read_file", json!({"path": "notes.txt"})),
        )
        .reply(Reply::text("done"))
        .run();
    let order: Vec<(String, String)> = ran
        .tool_executions()
        .into_iter()
        .map(|(kind, data)| (kind, data["toolName"].as_str().unwrap_or("").to_string()))
        .collect();
    let position = |kind: &str, tool: &str| {
        order
            .iter()
            .position(|(k, t)| k == kind && t == tool)
            .unwrap_or_else(|| panic!("no {kind} of {tool}: {order:?}"))
    };
    assert!(
        position("completed", "read_file") < position("started", "write_file"),
        "{order:?}"
    );
    // The read saw the file before the write, though the model asked for it second.
    let messages = ran.requests()[1].body["messages"].clone();
    let results: Vec<&Value> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert!(
        results[1]["content"].as_str().unwrap().contains("old"),
        "{results:?}"
    );
    assert_eq!(ran.read("notes.txt"), "new");
}

/// UAP §8.6: with `execution.model_order`, every tool is offered an `after` argument; the
/// scheduler runs a call after the calls it names (by id or position), answers a cycle or
/// an unknown call with a tool error, and the run goes on.
#[test]
fn the_model_orders_its_calls_with_after_and_a_cycle_is_a_tool_error() {
    let ran = Test::new()
        .agent(
            "prompt: Go\nexecution: { model_order: true }\ntools:\n  - builtin: read_file\n  - builtin: write_file\n",
        )
        .file("notes.txt", "old")
        .reply(
            // Position 2 (the write) first: the read sees what the write wrote.
            Reply::tool_call("read_file", json!({"path": "notes.txt", "after": [2]}))
                .with_tool_call("write_file", json!({"path": "notes.txt", "content": "new"}))
                .with_tool_call("read_file", json!({"path": "a.txt", "after": [4]}))
                .with_tool_call("read_file", json!({"path": "b.txt", "after": [3]}))
                .with_tool_call("read_file", json!({"path": "c.txt", "after": ["call_nobody"]})),
        )
        .reply(Reply::text("done"))
        .stdout("done\n")
        .run();
    let request = &ran.requests()[0].body;
    for tool in request["tools"].as_array().unwrap() {
        let after = &tool["function"]["parameters"]["properties"]["after"];
        assert_eq!(after["type"], "array", "{tool}");
    }
    let messages = ran.requests()[1].body["messages"].clone();
    let results: Vec<String> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert!(results[0].contains("new"), "{results:?}");
    assert!(
        results[2].contains("cycle") && results[3].contains("cycle"),
        "{results:?}"
    );
    assert!(
        results[4].contains("`call_nobody`, which is no call of this reply"),
        "{results:?}"
    );
    // The tool got its own arguments only: `after` is the runner's.
    let started = ran.events_of("agent.tool.execution.started");
    let read = started
        .iter()
        .find(|e| e["data"]["toolName"] == "read_file")
        .unwrap();
    assert_eq!(read["data"]["input"], json!({"path": "notes.txt"}));
}
