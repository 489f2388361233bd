//! `command` middleware through the binary: programs that see each model request before it
//! is sent and each response after (JSON on stdin and stdout), in the chain's order with
//! the built-ins, their failures, and their programs protected like hook programs.

use runner::testing::mock_server::Reply;
use serde_json::json;

use super::support::Test;

/// Logs `NAME EVENT MESSAGES` for each call to `calls.log` (shell: no JSON parser needed,
/// the input is one compact line), and answers nothing: the call goes on unchanged.
const LOG_SH: &str = r#"#!/bin/sh
input=$(cat)
event=$(printf '%s' "$input" | sed -n 's/.*"event":"\([a-z_]*\)".*/\1/p')
messages=$(printf '%s' "$input" | grep -o '"role":"' | wc -l | tr -d ' ')
echo "$1 $event $messages" >> calls.log
"#;

/// Replaces card numbers in what the model is sent and in what it answers.
const REDACT_PY: &str = r#"#!/usr/bin/env python3
import json, re, sys
call = json.load(sys.stdin)
card = re.compile(r"\b\d{4}-\d{4}-\d{4}-\d{4}\b")
with open("calls.log", "a") as log:
    log.write("redact " + call["event"] + "\n")
if call["event"] == "before_model":
    for message in call["messages"]:
        if isinstance(message.get("content"), str):
            message["content"] = card.sub("[CARD]", message["content"])
    print(json.dumps({"messages": call["messages"]}))
else:
    print(json.dumps({"response": {"text": card.sub("[CARD]", call["response"]["text"])}}))
"#;

const CARD: &str = "4111-1111-1111-1111";

#[test]
fn command_middleware_redacts_and_logs_each_call_in_the_chains_order_with_the_built_ins() {
    let agent = format!(
        "prompt: Refund the card {CARD}, then say which card it was.
tools:
  - builtin: list_dir
middleware:
  - command: {{ command: [./mw/log.sh, outer] }}
  - command: {{ command: [./mw/redact.py], timeout: 20s }}
  - sliding_window: {{ max_messages: 2 }}
  - command: {{ command: [./mw/log.sh, inner] }}
"
    );
    let ran = Test::new()
        .agent(&agent)
        .executable("mw/log.sh", LOG_SH)
        .executable("mw/redact.py", REDACT_PY)
        .reply(Reply::tool_call("list_dir", json!({"path": "."})))
        .reply(Reply::text(format!("Refunded {CARD}.")))
        .stdout("Refunded [CARD].\n")
        .run();
    for request in ran.requests() {
        let sent = request.body.to_string();
        assert!(!sent.contains(CARD), "the card reached the model: {sent}");
        assert!(sent.contains("Refund the card [CARD]"), "{sent}");
    }
    // `before` in order (the sliding window between the loggers cuts what the inner one
    // sees on the second call), `after` in reverse.
    let call = "outer before_model {n}\nredact before_model\ninner before_model {m}\ninner after_model 0\nredact after_model\nouter after_model 0\n";
    let expected = call.replace("{n}", "1").replace("{m}", "1")
        + &call.replace("{n}", "3").replace("{m}", "1");
    assert_eq!(ran.read("calls.log"), expected);
    let kept = ran.events_of("thread.run.completed")[0].to_string();
    assert!(
        !kept.contains(CARD),
        "the run kept the redacted history: {kept}"
    );
}

#[test]
fn a_failing_command_middleware_fails_the_call_unless_it_says_continue() {
    let broken = "#!/bin/sh\ncat > /dev/null\necho 'policy server down' >&2\nexit 3\n";
    let failing = Test::new()
        .agent("prompt: Go\nmiddleware:\n  - command: { command: [./mw/broken.sh] }\n")
        .executable("mw/broken.sh", broken)
        .reply(Reply::text("never sent"))
        .args(["--output", "json"])
        .status(1)
        .any_stderr()
        .run();
    let result = failing.json();
    assert_eq!(result["error"]["code"], "middleware");
    assert_eq!(
        result["error"]["message"],
        "the command middleware `./mw/broken.sh` failed: it exited with status 3: policy server down"
    );
    assert!(failing.requests().is_empty(), "no request went out");
    assert!(failing.read("run/hooks.log").contains("policy server down"));

    let going_on = Test::new()
        .agent("prompt: Go\nmiddleware:\n  - command: { command: [./mw/broken.sh], on_error: continue }\n")
        .executable("mw/broken.sh", broken)
        .reply(Reply::text("answered"))
        .args(["--output", "json"])
        .any_stderr()
        .run();
    let result = going_on.json();
    assert_eq!(result["output"], "answered");
    assert!(
        result["warnings"][0]
            .as_str()
            .unwrap()
            .contains("the command middleware `./mw/broken.sh` failed"),
        "{result}"
    );
}

#[test]
fn an_answer_that_is_not_one_fails_the_call() {
    let garbage = "#!/bin/sh\ncat > /dev/null\necho '{\"respnse\": {\"text\": \"x\"}}'\n";
    let ran = Test::new()
        .agent("prompt: Go\nmiddleware:\n  - command: { command: [./mw/garbage.sh] }\n")
        .executable("mw/garbage.sh", garbage)
        .args(["--output", "json"])
        .status(1)
        .any_stderr()
        .run();
    let message = ran.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("its answer is not understood"),
        "{message}"
    );
    assert!(message.contains("unknown field `respnse`"), "{message}");
}

#[test]
fn the_model_cannot_rewrite_a_middleware_program_and_a_resume_cannot_add_one() {
    let quiet = "#!/bin/sh\ncat > /dev/null\n";
    let ran = Test::new()
        .agent(
            "prompt: Go\ntools:\n  - builtin: write_file\n  - builtin: ask_user\nmiddleware:\n  - command: { command: [./mw/redact.sh] }\n",
        )
        .executable("mw/redact.sh", quiet)
        .reply(Reply::tool_call(
            "write_file",
            json!({"path": "mw/redact.sh", "content": "#!/bin/sh\nexit 0\n"}),
        ))
        .reply(Reply::tool_call("ask_user", json!({"question": "Go on?"})))
        .status(4)
        .any_stderr()
        .run();
    let refused = &ran.events_of("agent.tool.execution.completed")[0]["data"]["result"];
    let error = refused["error"].as_str().unwrap();
    assert!(error.contains("agent definition file"), "{error}");
    assert_eq!(ran.read("mw/redact.sh"), quiet);

    let session = ran.session();
    let file = ran.read("agent.yaml");
    let widened = format!("{file}  - command: {{ command: [sh, -c, 'curl example.com'] }}\n");
    std::fs::write(ran.path("agent.yaml"), widened).unwrap();
    ran.then()
        .command(["resume", &session, "--answer", "yes", "--run-dir", "run2"])
        .status(2)
        .stderr_contains("adds or changes a `command` middleware `sh -c 'curl example.com'`")
        .run();
}
