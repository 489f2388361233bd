//! One run, one stream: every command drives a run through the engine's driver, so the
//! lifecycle events, step numbers, transcript, result and checkpoints agree whichever
//! command started it (exec, resume, chat) and whatever strategy ran.

mod support;

use runner::testing::mock_server::{MockResponse, Reply};
use serde_json::{Value, json};
use support::{Ran, Test};

/// The step numbers of the root run's `step.created` events, in order.
fn root_steps(ran: &Ran) -> Vec<u64> {
    ran.events_of("agent.run.step.created")
        .iter()
        .filter(|e| e["depth"] == 0)
        .map(|e| e["data"]["details"]["step"].as_u64().unwrap())
        .collect()
}

#[test]
fn chat_against_a_server_that_refuses_fails_like_exec() {
    let ran = Test::new()
        .agent("system: Be brief.\n")
        .respond(MockResponse::error(400, "unknown model"))
        .command(["chat", "agent.yaml", "--run-dir", "run"])
        .stdin("hello\n")
        .status(1)
        .stderr_contains("error[provider_bad_request]")
        .run();
    assert!(!ran.stderr.contains("Failed {"), "{}", ran.stderr);
    let result = ran.result();
    assert_eq!(result["status"], "failed");
    assert_eq!(result["error"]["code"], "provider_bad_request");
    assert_eq!(ran.events_of("thread.run.failed").len(), 1);
    assert!(ran.transcript().contains("<<ERROR_START>>"));
}

#[test]
fn chat_turns_leave_a_transcript_and_a_result() {
    let ran = Test::new()
        .agent("system: Be brief.\n")
        .reply(Reply::text("Hello Ann."))
        .reply(Reply::text("You are Ann."))
        .command(["chat", "agent.yaml", "--run-dir", "run"])
        .stdin("I am Ann.\nWho am I?\n")
        .stdout("Hello Ann.\nYou are Ann.\n")
        .any_stderr()
        .run();
    let result = ran.result();
    assert_eq!(result["status"], "completed");
    assert_eq!(result["output"], "You are Ann.");
    let transcript = ran.transcript();
    assert!(transcript.contains("Hello Ann.") && transcript.contains("You are Ann."));
    assert_eq!(
        ran.events_of("agent.run.created").len(),
        2,
        "one run per turn"
    );
    assert_eq!(ran.events_of("thread.run.completed").len(), 2);
}

#[test]
fn parallel_plan_steps_get_their_own_numbers_and_the_result_counts_them() {
    let plan =
        r#"{"steps": [{"id": "a", "description": "first"}, {"id": "b", "description": "second"}]}"#;
    let ran = Test::new()
        .agent("prompt: Go\nexecution: { strategy: plan }\n")
        .reply(Reply::text(plan))
        .reply(Reply::text("one"))
        .reply(Reply::text("two"))
        .reply(Reply::text("Both done."))
        .args(["--output", "json"])
        .run();
    let steps = root_steps(&ran);
    let mut unique = steps.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), steps.len(), "step numbers repeat: {steps:?}");
    assert_eq!(ran.json()["steps"], steps.len() as u64);
    let headings: Vec<String> = ran
        .transcript()
        .lines()
        .filter(|line| line.starts_with("Step "))
        .map(|line| line.split(':').next().unwrap().to_string())
        .collect();
    let mut distinct = headings.clone();
    distinct.dedup();
    assert_eq!(headings.len(), steps.len(), "{headings:?}");
    assert_eq!(distinct, headings, "{headings:?}");
    let saved: Vec<u64> = ran
        .events_of("agent.checkpoint.saved")
        .iter()
        .map(|e| e["data"]["step"].as_u64().unwrap())
        .collect();
    assert_eq!(
        saved.first(),
        Some(&1),
        "a checkpoint after the planning step: {saved:?}"
    );
}

#[test]
fn calls_that_never_ran_have_their_tool_block_and_the_step_stays_done() {
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: read_file\n")
        .reply(
            Reply::tool_call("no_such_tool", json!({}))
                .with_tool_call("read_file", json!("{\"path\": \"no")),
        )
        .reply(Reply::text("Sorry."))
        .run();
    let transcript = ran.transcript();
    for name in ["no_such_tool", "read_file"] {
        let start = format!("<<TOOL_STEP_START/{name}:");
        assert_eq!(
            transcript.matches(&start).count(),
            1,
            "{name}\n{transcript}"
        );
    }
    assert_eq!(
        transcript.matches("\"success\":false").count(),
        2,
        "{transcript}"
    );
    assert!(
        transcript.contains("Step 1: Called no_such_tool, read_file ✓"),
        "{transcript}"
    );
}

#[test]
fn react_reasoning_is_written_once_as_thinking() {
    let ran = Test::new()
        .agent("prompt: Go\nexecution: { strategy: react }\n")
        .reply(Reply::text("I can answer at once."))
        .reply(Reply::text("Done."))
        .run();
    let transcript = ran.transcript();
    assert_eq!(
        transcript.matches("I can answer at once.").count(),
        1,
        "{transcript}"
    );
    assert!(
        transcript.contains("<<thinking>>\nI can answer at once.\n<</thinking>>"),
        "{transcript}"
    );
}

const HANDOFF_ROOT: &str = "system: You are AGENT-A.
prompt: My invoice is wrong.
handoffs:
  - name: transfer_to_b
    description: To billing.
    agent: ./b.yaml
";
const AGENT_B: &str = "name: agent-b\nsystem: You are AGENT-B.\ntools:\n  - builtin: ask_user\n";

#[test]
fn resume_after_a_handoff_continues_with_the_agent_that_had_control() {
    let ran = Test::new()
        .agent(HANDOFF_ROOT)
        .file("b.yaml", AGENT_B)
        .reply(Reply::tool_call(
            "transfer_to_b",
            json!({"reason": "billing"}),
        ))
        .reply(Reply::tool_call(
            "ask_user",
            json!({"question": "Which invoice?"}),
        ))
        .status(4)
        .any_stderr()
        .run();
    let session = ran.session();
    let resumed = ran
        .then()
        .reply(Reply::text("B fixed INV-7."))
        .command(["resume", &session, "--answer", "INV-7", "--run-dir", "run2"])
        .stdout("B fixed INV-7.\n")
        .run();
    let last = resumed.requests().pop().unwrap();
    assert_eq!(last.system_prompt().as_deref(), Some("You are AGENT-B."));
    assert!(last.body["tools"].to_string().contains("ask_user"));
}

#[test]
fn an_ask_user_pause_is_an_input_block_with_its_checkpoint_and_the_answer_lands_inside() {
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: ask_user\n")
        .reply(Reply::tool_call(
            "ask_user",
            json!({"question": "Which file?"}),
        ))
        .status(4)
        .any_stderr()
        .run();
    let transcript = ran.transcript();
    assert!(
        transcript.contains("Which file?\nExpected input types: text\ncheckpoint_name: step-1"),
        "{transcript}"
    );
    assert!(
        !transcript.contains("✗"),
        "a pause is not a failure\n{transcript}"
    );
    let session = ran.session();
    let resumed = ran
        .then()
        .reply(Reply::text("Thanks."))
        .command([
            "resume",
            &session,
            "--answer",
            "notes.txt",
            "--run-dir",
            "run2",
        ])
        .stdout("Thanks.\n")
        .run();
    let transcript = resumed.transcript();
    let block = transcript
        .split("<<INPUT_REQUIRED_START>>")
        .nth(1)
        .and_then(|rest| rest.split("<<INPUT_REQUIRED_END>>").next())
        .unwrap_or_else(|| panic!("no input block\n{transcript}"));
    assert!(
        block.contains("<<USER_INPUT_PROVIDED_START>>"),
        "{transcript}"
    );
    assert!(block.contains("notes.txt"), "{transcript}");
}

#[test]
fn an_answer_from_the_answers_file_is_written_inside_the_ask_user_block() {
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: ask_user\n")
        .file("answers.yaml", "branch: main\n")
        .reply(Reply::tool_call(
            "ask_user",
            json!({"question": "Which branch?", "id": "branch"}),
        ))
        .reply(Reply::text("Using main."))
        .args(["--answers", "answers.yaml"])
        .stdout("Using main.\n")
        .run();
    let provided = ran.events_of("agent.user_input.provided");
    assert_eq!(provided.len(), 1);
    assert_eq!(provided[0]["data"]["answer"], "main");
    assert!(provided[0]["data"]["stepId"].is_string());
    let transcript = ran.transcript();
    let tool_block = transcript
        .split("<<TOOL_STEP_START/ask_user:")
        .nth(1)
        .and_then(|rest| rest.split("<<TOOL_STEP_END/ask_user:").next())
        .unwrap_or_else(|| panic!("no ask_user block\n{transcript}"));
    let input = tool_block
        .split("<<INPUT_REQUIRED_START>>")
        .nth(1)
        .unwrap_or_else(|| panic!("no input block in the tool block\n{transcript}"));
    assert!(input.contains("Which branch?"), "{transcript}");
    assert!(
        input.contains("<<USER_INPUT_PROVIDED_START>>\n{\"input\":\"main\""),
        "{transcript}"
    );
    // The transcript still reads back.
    ran.then()
        .command(["render", "run/transcript.txt"])
        .stdout_contains("Which branch?")
        .run();
}

#[test]
fn a_missing_key_at_exec_start_points_at_the_model_in_the_file() {
    let ran = Test::new()
        .file(
            "agent.yaml",
            "name: keyless\nmodel: { provider: openai, name: m, api_key_env: RUNNER_NO_SUCH_KEY }\nprompt: Go\n",
        )
        .status(2)
        .any_stderr()
        .run();
    assert!(
        ran.stderr.contains("agent.yaml:2:8: error["),
        "{}",
        ran.stderr
    );
    assert!(ran.stderr.contains("RUNNER_NO_SUCH_KEY"), "{}", ran.stderr);
}

#[test]
fn a_template_error_at_render_time_points_into_the_prompt() {
    let ran = Test::new()
        .agent("prompt: \"Count {{ range(100000000) | length }}\"\n")
        .status(2)
        .any_stderr()
        .run();
    assert!(ran.stderr.contains("agent.yaml:3:"), "{}", ran.stderr);
    assert!(ran.stderr.contains("error[template]"), "{}", ran.stderr);
}

#[test]
fn the_result_is_the_fold_of_the_stream() {
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: list_dir\n")
        .reply(Reply::tool_call("list_dir", json!({})).with_usage(7, 3))
        .reply(Reply::text("Two files.").with_usage(9, 2))
        .args(["--output", "json"])
        .run();
    let result = ran.json();
    let events = ran.events();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "thread.run.completed");
    let usage: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "agent.llm.usage")
        .map(|e| &e["data"]["totalUsage"])
        .collect();
    assert_eq!(
        result["usage"]["total_tokens"],
        usage.last().unwrap()["total_tokens"]
    );
    assert_eq!(result["llm_calls"], usage.len());
    assert_eq!(result["steps"], root_steps(&ran).len());
    assert_eq!(result, ran.result());
}
