//! Guardrails through the binary: `permissions` (deny → allow → ask → default) over tool
//! names and the arguments the workspace resolves, approval on a terminal, from an answers
//! file, with `--yes`, or by pausing (exit 4) until `runner resume --approve/--deny`;
//! sub-agents following their caller's rules; secrets redacted from every tool result.

mod support;

use runner::testing::mock_server::Reply;
use serde_json::json;
use support::{Ran, Test, terminal_available};

/// What the model was told about its `index`-th call (0-based) of the first reply.
fn told(ran: &Ran, request: usize, call: usize) -> String {
    let results = ran.requests()[request].tool_results();
    let id = format!("call_mock1_{call}");
    results
        .into_iter()
        .find(|(i, _)| *i == id)
        .map(|(_, text)| text)
        .unwrap_or_else(|| panic!("no result for {id}"))
}

/// The `decision` and `by` of each permission event, in order.
fn decisions(ran: &Ran) -> Vec<(String, String)> {
    ran.events_of("agent.tool.permission.decided")
        .iter()
        .map(|e| {
            let data = &e["data"];
            (
                data["decision"].as_str().unwrap().to_string(),
                data["by"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

const CI_AGENT: &str = "prompt: Go
tools:
  - builtin: read_file
  - builtin: write_file
  - builtin: shell
    allow: [./tool.sh]
permissions:
  default: deny
  deny: ['shell:command=./tool.sh push*']
  allow: [read_file, 'write_file:path=src/**', 'shell:command=./tool.sh test*']
";

/// Records each run of the program in `ran.log`.
const TOOL_SH: &str = "#!/bin/sh\necho \"$@\" >> ran.log\n";

#[test]
fn deny_wins_then_allow_then_the_default_and_the_model_is_told_why() {
    let ran = Test::new()
        .agent(CI_AGENT)
        .executable("tool.sh", TOOL_SH)
        .file("src/.keep", "")
        .reply(
            Reply::tool_call("shell", json!({"command": "./tool.sh  push origin"}))
                .with_tool_call("shell", json!({"command": "./tool.sh test --all"}))
                .with_tool_call("write_file", json!({"path": "src/lib.rs", "content": "ok"}))
                .with_tool_call(
                    "write_file",
                    json!({"path": "./src/../Cargo.toml", "content": "x"}),
                )
                .with_tool_call("http_get", json!({"url": "https://example.com"})),
        )
        .reply(Reply::text("done"))
        .run();
    assert_eq!(
        ran.read("ran.log"),
        "test --all\n",
        "only the allowed command ran"
    );
    assert!(
        told(&ran, 1, 0)
            .contains("denied by the agent's permissions (`deny: shell:command=./tool.sh push*`)")
    );
    assert_eq!(ran.read("src/lib.rs"), "ok");
    assert!(
        !ran.path("Cargo.toml").exists(),
        "`src/..` is not under src/"
    );
    assert!(told(&ran, 1, 3).contains("default: deny"));
    // http_get is no tool of the agent: answered as unknown, before any rule.
    assert!(told(&ran, 1, 4).contains("unknown tool"));
    assert_eq!(
        decisions(&ran),
        [
            ("deny", "rule"),
            ("allow", "rule"),
            ("allow", "rule"),
            ("deny", "rule")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let transcript = ran.transcript();
    assert!(transcript.contains(r#""permission":{"decision":"deny","rule":"deny: shell:command=./tool.sh push*","by":"rule"}"#), "{transcript}");
}

#[test]
fn an_absolute_path_inside_the_root_matches_as_the_relative_path_it_is() {
    let test = Test::new().agent(
        "prompt: Go\ntools:\n  - builtin: write_file\npermissions:\n  default: deny\n  allow: ['write_file:path=src/**']\n",
    );
    let absolute = test.path("src/deep/a.txt").to_string_lossy().into_owned();
    let ran = test
        .reply(Reply::tool_call(
            "write_file",
            json!({"path": absolute, "content": "in"}),
        ))
        .reply(Reply::text("done"))
        .run();
    assert_eq!(ran.read("src/deep/a.txt"), "in");
}

const ASKING_AGENT: &str = "prompt: Go
tools:
  - builtin: write_file
permissions:
  ask: [write_file]
";

fn asking() -> Test {
    Test::new().agent(ASKING_AGENT).reply(
        Reply::tool_call("write_file", json!({"path": "a.txt", "content": "A"}))
            .with_tool_call("write_file", json!({"path": "b.txt", "content": "B"})),
    )
}

/// Progress says a call waiting for approval was not run, and why, not how long it took;
/// a denied call is said once, by its permission line.
#[test]
fn progress_says_a_call_waiting_for_approval_was_not_run() {
    let ran = asking()
        .args(["--progress", "plain"])
        .status(4)
        .stderr_contains("✗ write_file not run: waits for approval")
        .run();
    assert!(!ran.stderr.contains("ms)"), "{}", ran.stderr);
    let denied = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: write_file\npermissions:\n  deny: [write_file]\n")
        .reply(Reply::tool_call(
            "write_file",
            json!({"path": "a.txt", "content": "A"}),
        ))
        .reply(Reply::text("done"))
        .args(["--progress", "plain"])
        .stderr_contains("✗ write_file not run: ")
        .run();
    assert_eq!(
        denied.stderr.matches("✗ write_file").count(),
        1,
        "{}",
        denied.stderr
    );
}

#[test]
fn ask_with_nobody_to_decide_pauses_and_resume_approves() {
    let ran = asking()
        .args(["--output", "json"])
        .status(4)
        .stderr_contains("--approve all")
        .run();
    assert!(!ran.path("a.txt").exists(), "nothing ran before approval");
    let envelope = ran.json();
    assert_eq!(envelope["status"], "input_required");
    let action = &ran.events_of("thread.run.requires_action")[0]["data"]["required_action"];
    assert_eq!(action["type"], "tool_approval");
    let calls: Vec<&str> = action["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ["call_mock1_0", "call_mock1_1"]);
    assert_eq!(action["calls"][0]["rule"], "ask: write_file");
    assert!(
        ran.transcript().contains("approval"),
        "{}",
        ran.transcript()
    );
    assert!(!ran.path("b.txt").exists());

    let session = ran.session();
    ran.then()
        .command(["resume", &session, "--run-dir", "run2"])
        .status(2)
        .stderr_contains(
            "waits for approval of call_mock1_0 (`write_file`), call_mock1_1 (`write_file`)",
        )
        .run();
    let resumed = ran
        .then()
        .reply(Reply::text("both written"))
        .command(["resume", &session, "--approve", "all", "--run-dir", "run3"])
        .stdout("both written\n")
        .run();
    assert_eq!(
        (resumed.read("a.txt"), resumed.read("b.txt")),
        ("A".into(), "B".into())
    );
    let last = resumed.requests().pop().unwrap();
    assert_eq!(
        last.tool_results().len(),
        2,
        "both calls have their results"
    );
    assert_eq!(
        resumed.result()["tool_calls"],
        2,
        "approved calls are counted once"
    );
}

#[test]
fn resume_can_deny_one_call_with_a_reason_for_the_model() {
    let ran = asking().status(4).any_stderr().run();
    let session = ran.session();
    ran.then()
        .command([
            "resume",
            &session,
            "--approve",
            "call_9",
            "--run-dir",
            "run3",
        ])
        .status(2)
        .stderr_contains("has no call `call_9` awaiting approval")
        .run();
    let resumed = ran
        .then()
        .reply(Reply::text("ok"))
        .command([
            "resume",
            &session,
            "--approve",
            "call_mock1_0",
            "--deny",
            "call_mock1_1",
            "--reason",
            "not b",
            "--run-dir",
            "run2",
        ])
        .run();
    assert!(resumed.path("a.txt").exists());
    assert!(!resumed.path("b.txt").exists());
    let results = resumed.requests().pop().unwrap().tool_results();
    let b = &results
        .iter()
        .find(|(id, _)| id == "call_mock1_1")
        .unwrap()
        .1;
    assert_eq!(b, "Error: denied by the user: not b");
}

#[test]
fn an_answers_file_approves_and_denies_by_pattern() {
    let ran = asking()
        .file(
            "answers.yaml",
            "approvals:\n  approve: ['write_file:path=a.*']\n  deny: ['write_file:path=b.*']\n",
        )
        .reply(Reply::text("done"))
        .args(["--answers", "answers.yaml"])
        .run();
    assert!(ran.path("a.txt").exists() && !ran.path("b.txt").exists());
    assert!(told(&ran, 1, 1).contains("denied by the answers file (`write_file:path=b.*`)"));
    assert_eq!(
        decisions(&ran),
        [
            ("ask", "rule"),
            ("allow", "answers"),
            ("ask", "rule"),
            ("deny", "answers")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
}

#[test]
fn yes_approves_every_call_that_asks() {
    let ran = asking().reply(Reply::text("done")).args(["--yes"]).run();
    assert!(ran.path("a.txt").exists() && ran.path("b.txt").exists());
    assert!(decisions(&ran).contains(&("allow".into(), "yes".into())));
}

#[test]
fn on_a_terminal_the_person_approves_always_for_the_rest_of_the_run() {
    if !terminal_available() {
        return;
    }
    let ran = asking()
        .reply(Reply::text("done"))
        .in_terminal()
        .stdin("a\n")
        .stdout_contains("needs your approval (ask: write_file)")
        .run();
    assert!(ran.path("a.txt").exists() && ran.path("b.txt").exists());
    let by: Vec<String> = decisions(&ran).into_iter().map(|(_, by)| by).collect();
    assert!(
        by.contains(&"terminal".to_string()) && by.contains(&"always".to_string()),
        "{by:?}"
    );
}

/// An agent with a sub-agent, `helper`, that writes files and has no rules of its own.
const WITH_HELPER: &str = "prompt: Go
tools:
  - name: helper
    description: Writes files.
    agent:
      name: helper
      tools:
        - builtin: write_file
    parameters:
      type: object
      properties: {task: {type: string}}
      required: [task]
    prompt: '{{ task }}'
";

#[test]
fn a_sub_agent_without_permissions_follows_its_callers() {
    let ran = Test::new()
        .agent(&format!(
            "{WITH_HELPER}permissions:\n  deny: ['write_file:path=*.env']\n"
        ))
        .reply(Reply::tool_call("helper", json!({"task": "write"})))
        .reply(Reply::tool_call(
            "write_file",
            json!({"path": "prod.env", "content": "K=1"}),
        ))
        .reply(Reply::text("could not"))
        .reply(Reply::text("done"))
        .run();
    assert!(!ran.path("prod.env").exists());
    let denied = ran
        .events_of("agent.tool.permission.decided")
        .into_iter()
        .find(|e| e["data"]["decision"] == "deny")
        .expect("the sub-agent's call was decided");
    assert_eq!(denied["depth"], 1);
}

#[test]
fn secrets_in_tool_results_reach_neither_the_model_nor_the_files() {
    let token = format!("ghp_{}", "x1Y2".repeat(9));
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: read_file\nredact: ['ACME-[0-9]{6}']\n")
        .file(
            "env.txt",
            &format!("GITHUB_TOKEN={token}\nlicence ACME-123456\n"),
        )
        .reply(Reply::tool_call("read_file", json!({"path": "env.txt"})))
        .reply(Reply::text("done"))
        .run();
    let sent = ran.requests()[1].tool_results().remove(0).1;
    assert_eq!(sent, "GITHUB_TOKEN=[REDACTED]\nlicence [REDACTED]\n");
    for file in ["events.jsonl", "transcript.txt"] {
        let text = ran.read(&format!("run/{file}"));
        assert!(
            !text.contains(&token) && !text.contains("ACME-123456"),
            "{file}"
        );
    }
}

#[test]
fn validate_locates_bad_patterns_with_a_did_you_mean() {
    Test::new()
        .agent(
            "prompt: Go
tools:
  - builtin: write_file
  - builtin: shell
    allow: [git]
permissions:
  deny: ['shel:command=git push*']
  allow: ['write_file:paht=src/**', 'shell:command']
redact: ['(']
",
        )
        .command(["validate", "agent.yaml"])
        .status(2)
        .any_stderr()
        .stdout_contains("agent.yaml:9:10: error[unknown-tool]: `shel:command=git push*` names `shel`, which is not a tool of this agent")
        .stdout_contains("did you mean `shell`?")
        .stdout_contains("agent.yaml:10:11: error[permission]: `write_file` has no argument `paht`")
        .stdout_contains("did you mean `path`?")
        .stdout_contains("error[permission]: `command` is not a condition: write `ARGUMENT=VALUE`")
        .stdout_contains("agent.yaml:11:10: error[permission]: `(` is not a regular expression")
        .run();
}

#[test]
fn a_resume_refuses_a_file_that_loosened_its_permissions() {
    let ran = asking().status(4).any_stderr().run();
    let session = ran.session();
    let loosened = ASKING_AGENT.replace("  ask: [write_file]\n", "  allow: [write_file]\n");
    std::fs::write(
        ran.path("agent.yaml"),
        loosened.replace("prompt: Go", &model_line(&ran)),
    )
    .unwrap();
    ran.then()
        .command(["resume", &session, "--approve", "all", "--run-dir", "run2"])
        .status(2)
        .stderr_contains("drops `permissions.ask` rule `write_file`")
        .stderr_contains("adds `permissions.allow` rule `write_file`")
        .run();
}

/// The agent file as the harness wrote it starts with its model: keep it when rewriting.
fn model_line(ran: &Ran) -> String {
    let written = ran.read("agent.yaml");
    let prompt = written.find("prompt: Go").unwrap();
    format!("{}prompt: Go", &written[..prompt])
}

// Command hooks (docs/hooks.md). Each hook program keeps what it read on stdin in
// `seen.jsonl` and answers with what its script says.

/// A hook that records its input, then prints `answer` (a shell word list for `printf`).
fn hook(answer: &str) -> String {
    format!("#!/bin/sh\ncat >> seen.jsonl\necho >> seen.jsonl\nprintf '%s' '{answer}'\n")
}

/// The JSON objects the hooks read, in order.
fn seen(ran: &Ran) -> Vec<serde_json::Value> {
    ran.read("seen.jsonl")
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The `outcome` of each hook event, in order.
fn hook_outcomes(ran: &Ran) -> Vec<String> {
    ran.events_of("agent.tool.hook.completed")
        .iter()
        .map(|e| e["data"]["outcome"].as_str().unwrap().to_string())
        .collect()
}

const HOOKED_AGENT: &str = "prompt: Go
tools:
  - builtin: shell
    allow: [./tool.sh]
hooks:
  pre_tool_use:
    - command: [./hooks/pre.sh]
      match: ['shell:command=./tool.sh deploy*']
";

#[test]
fn a_pre_tool_use_hook_denies_a_matching_call_with_its_reason() {
    let ran = Test::new()
        .agent(HOOKED_AGENT)
        .executable("tool.sh", TOOL_SH)
        .executable(
            "hooks/pre.sh",
            &hook(r#"{"decision": "deny", "reason": "deploys wait for the release"}"#),
        )
        .reply(
            Reply::tool_call("shell", json!({"command": "./tool.sh deploy prod"}))
                .with_tool_call("shell", json!({"command": "./tool.sh test"})),
        )
        .reply(Reply::text("done"))
        .run();
    assert_eq!(
        ran.read("ran.log"),
        "test\n",
        "only the call the hook did not match ran"
    );
    assert_eq!(
        told(&ran, 1, 0),
        "Error: denied by the pre_tool_use hook `./hooks/pre.sh`: deploys wait for the release"
    );
    let input = &seen(&ran)[0];
    assert_eq!(input["event"], "pre_tool_use");
    assert_eq!(input["tool_name"], "shell");
    assert_eq!(input["call_id"], "call_mock1_0");
    assert_eq!(
        input["arguments"],
        json!({"command": "./tool.sh deploy prod"})
    );
    assert_eq!(input["agent"], "test-agent");
    assert_eq!(input["depth"], 0);
    assert_eq!(input["session_id"], ran.result()["session_id"]);
    assert_eq!(
        seen(&ran).len(),
        1,
        "the hook is not run for calls it does not match"
    );
    assert_eq!(decisions(&ran), [("deny".to_string(), "hook".to_string())]);
    assert_eq!(hook_outcomes(&ran), ["denied"]);
}

#[test]
fn a_pre_tool_use_hook_rewrites_arguments_and_the_rules_still_hold() {
    let agent = "prompt: Go
tools:
  - builtin: shell
    allow: [./tool.sh]
permissions:
  deny: ['shell:command=./tool.sh push*']
hooks:
  pre_tool_use:
    - command: [./hooks/pre.sh]
";
    // Adds `--dry-run` to every command; the second call it turns into a denied one.
    let script = "#!/bin/sh
input=$(cat)
case \"$input\" in
  *'\"./tool.sh test\"'*) printf '%s' '{\"arguments\": {\"command\": \"./tool.sh test --dry-run\"}}' ;;
  *) printf '%s' '{\"arguments\": {\"command\": \"./tool.sh push --force\"}}' ;;
esac
";
    let ran = Test::new()
        .agent(agent)
        .executable("tool.sh", TOOL_SH)
        .executable("hooks/pre.sh", script)
        .reply(
            Reply::tool_call("shell", json!({"command": "./tool.sh test"}))
                .with_tool_call("shell", json!({"command": "./tool.sh status"})),
        )
        .reply(Reply::text("done"))
        .args(["--progress", "plain"])
        .stderr_contains("✎ shell: arguments rewritten by pre_tool_use hook")
        .run();
    assert_eq!(ran.read("ran.log"), "test --dry-run\n");
    assert!(told(&ran, 1, 1).contains("`deny: shell:command=./tool.sh push*`"));
    assert_eq!(hook_outcomes(&ran), ["rewrote", "rewrote"]);
    let started = ran.events_of("agent.tool.execution.started");
    assert_eq!(
        started[0]["data"]["input"]["command"],
        "./tool.sh test --dry-run"
    );
    // The model's own call stays as it made it in the history.
    let history = &ran.requests()[1].body["messages"];
    assert!(
        history
            .to_string()
            .contains(r#"\"command\":\"./tool.sh test\""#)
    );
    assert!(ran.transcript().contains(r#""outcome":"rewrote""#));
}

#[test]
fn a_hook_that_crashes_hangs_or_answers_garbage_denies_unless_on_error_allows() {
    let agent = "prompt: Go
tools:
  - builtin: shell
    allow: [./tool.sh]
hooks:
  pre_tool_use:
    - command: [./hooks/crash.sh]
      match: ['shell:command=*one*']
    - command: [./hooks/hang.sh]
      match: ['shell:command=*two*']
      timeout: 300ms
    - command: [./hooks/garbage.sh]
      match: ['shell:command=*three*']
    - command: [./hooks/crash.sh]
      match: ['shell:command=*four*']
      on_error: allow
";
    let ran = Test::new()
        .agent(agent)
        .executable("tool.sh", TOOL_SH)
        .executable(
            "hooks/crash.sh",
            "#!/bin/sh\necho 'cannot reach the policy server' >&2\nexit 3\n",
        )
        .executable("hooks/hang.sh", "#!/bin/sh\nsleep 30\n")
        .executable("hooks/garbage.sh", "#!/bin/sh\necho 'yes please'\n")
        .reply(
            Reply::tool_call("shell", json!({"command": "./tool.sh one"}))
                .with_tool_call("shell", json!({"command": "./tool.sh two"}))
                .with_tool_call("shell", json!({"command": "./tool.sh three"}))
                .with_tool_call("shell", json!({"command": "./tool.sh four"})),
        )
        .reply(Reply::text("done"))
        .run();
    assert_eq!(
        ran.read("ran.log"),
        "four\n",
        "only the call whose hook may fail open ran"
    );
    assert!(told(&ran, 1, 0).contains("the pre_tool_use hook `./hooks/crash.sh` failed: it exited with status 3: cannot reach the policy server"));
    assert!(told(&ran, 1, 1).contains("did not finish within 300ms and was killed"));
    assert!(
        told(&ran, 1, 2)
            .contains("its answer is not understood: it printed something that is not JSON")
    );
    assert_eq!(
        hook_outcomes(&ran),
        ["failed", "failed", "failed", "failed"]
    );
    let log = ran.read("run/hooks.log");
    assert!(
        log.contains("== pre_tool_use `./hooks/crash.sh` (call call_mock1_0 of shell)"),
        "{log}"
    );
    assert!(log.contains("cannot reach the policy server"), "{log}");
}

#[test]
fn a_post_tool_use_hook_replaces_or_annotates_the_result_and_sees_it_redacted() {
    let agent = "prompt: Go
tools:
  - builtin: read_file
hooks:
  post_tool_use:
    - command: [./hooks/post.sh]
";
    let script = "#!/bin/sh
input=$(cat)
printf '%s\\n' \"$input\" >> seen.jsonl
case \"$input\" in
  *internal.txt*) printf '%s' '{\"data\": \"[internal: withheld by policy]\"}' ;;
  *) printf '%s' '{\"note\": \"this file is generated; do not edit it\"}' ;;
esac
";
    let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let ran = Test::new()
        .agent(agent)
        .executable("hooks/post.sh", script)
        .file("internal.txt", "the launch date")
        .file("gen.rs", &format!("// token {token}\n"))
        .reply(
            Reply::tool_call("read_file", json!({"path": "internal.txt"}))
                .with_tool_call("read_file", json!({"path": "gen.rs"})),
        )
        .reply(Reply::text("done"))
        .run();
    assert_eq!(told(&ran, 1, 0), "[internal: withheld by policy]");
    let annotated = told(&ran, 1, 1);
    assert!(
        annotated.ends_with("\n\nthis file is generated; do not edit it"),
        "{annotated}"
    );
    assert!(
        !ran.read("seen.jsonl").contains(token),
        "the hook sees the result redacted"
    );
    assert_eq!(seen(&ran)[0]["result"]["success"], true);
    assert!(!ran.read("run/events.jsonl").contains("the launch date"));
    // The two calls run at once: their hooks end in either order.
    let mut outcomes = hook_outcomes(&ran);
    outcomes.sort();
    assert_eq!(outcomes, ["annotated", "replaced"]);
}

#[test]
fn a_hook_allow_settles_a_call_that_asks_and_hooks_get_no_secrets() {
    let agent = "prompt: Go
tools:
  - builtin: shell
    allow: [./tool.sh]
permissions:
  ask: [shell]
hooks:
  pre_tool_use:
    - command: [./hooks/pre.sh]
";
    let script =
        "#!/bin/sh\ncat > /dev/null\nenv > env.txt\nprintf '%s' '{\"decision\": \"allow\"}'\n";
    let ran = Test::new()
        .agent(agent)
        .executable("tool.sh", TOOL_SH)
        .executable("hooks/pre.sh", script)
        .env("DEPLOY_TOKEN", "s3cret-deploy")
        .reply(Reply::tool_call(
            "shell",
            json!({"command": "./tool.sh test"}),
        ))
        .reply(Reply::text("done"))
        .run();
    assert_eq!(ran.read("ran.log"), "test\n");
    assert_eq!(
        decisions(&ran),
        [("ask", "rule"), ("allow", "hook")].map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let env = ran.read("env.txt");
    assert!(
        !env.contains("s3cret-deploy") && !env.contains("OPENAI_API_KEY"),
        "{env}"
    );
}

#[test]
fn run_hooks_refuse_a_run_and_hear_its_end_and_its_pause() {
    let refused = Test::new()
        .agent("prompt: Go\nhooks:\n  run_start:\n    - command: [./hooks/start.sh]\n")
        .executable(
            "hooks/start.sh",
            &hook(r#"{"decision": "deny", "reason": "the freeze is on until Monday"}"#),
        )
        .status(1)
        .stderr_contains(
            "the run_start hook `./hooks/start.sh` refused the run: the freeze is on until Monday",
        )
        .run();
    assert_eq!(refused.requests().len(), 0, "no model call");
    assert_eq!(seen(&refused)[0]["event"], "run_start");

    let agent = "prompt: Go
tools:
  - builtin: write_file
permissions:
  ask: [write_file]
hooks:
  user_input:
    - command: [./hooks/notice.sh]
  run_end:
    - command: [./hooks/notice.sh]
";
    let paused = Test::new()
        .agent(agent)
        .executable("hooks/notice.sh", &hook(""))
        .reply(Reply::tool_call(
            "write_file",
            json!({"path": "a.txt", "content": "x"}),
        ))
        .status(4)
        .any_stderr()
        .run();
    let seen = seen(&paused);
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0]["event"], "user_input");
    assert_eq!(seen[1]["event"], "run_end");
    assert_eq!(seen[1]["result"]["status"], "input_required");
    assert_eq!(seen[1]["result"]["run_id"], paused.result()["run_id"]);
}

#[test]
fn validate_checks_hook_patterns_and_programs() {
    Test::new()
        .agent(
            "prompt: Go
tools:
  - builtin: shell
    allow: [git]
hooks:
  pre_tool_use:
    - command: [./hooks/missing.sh]
      match: ['shel:command=git*']
  run_end:
    - command: [notify-send]
      on_error: deny
",
        )
        .command(["validate", "agent.yaml"])
        .status(2)
        .any_stderr()
        .stdout_contains("agent.yaml:9:17: error[missing-file]: no such file: `./hooks/missing.sh`")
        .stdout_contains("agent.yaml:10:15: error[unknown-tool]: `shel:command=git*` names `shel`")
        .stdout_contains("did you mean `shell`?")
        .stdout_contains("agent.yaml:13:7: error[unknown-key]: unknown key `on_error`")
        .run();
}

#[test]
fn a_reload_or_resume_refuses_a_file_that_changes_its_hooks() {
    let ran = asking().status(4).any_stderr().run();
    let session = ran.session();
    let hooked =
        format!("{ASKING_AGENT}hooks:\n  run_end:\n    - command: [sh, -c, 'curl example.com']\n");
    std::fs::write(
        ran.path("agent.yaml"),
        hooked.replace("prompt: Go", &model_line(&ran)),
    )
    .unwrap();
    ran.then()
        .command(["resume", &session, "--approve", "all", "--run-dir", "run2"])
        .status(2)
        .stderr_contains("adds or changes a `run_end` hook `sh -c 'curl example.com'`")
        .run();
}

#[test]
fn a_sub_agent_without_hooks_goes_through_its_callers_tool_hooks() {
    let ran = Test::new()
        .agent(&format!(
            "{WITH_HELPER}hooks:\n  pre_tool_use:\n    - command: [./hooks/pre.sh]\n      match: [write_file]\n"
        ))
        .executable(
            "hooks/pre.sh",
            &hook(r#"{"decision": "deny", "reason": "read-only today"}"#),
        )
        .reply(Reply::tool_call("helper", json!({"task": "write"})))
        .reply(Reply::tool_call(
            "write_file",
            json!({"path": "a.txt", "content": "x"}),
        ))
        .reply(Reply::text("could not"))
        .reply(Reply::text("done"))
        .run();
    assert!(!ran.path("a.txt").exists());
    let input = &seen(&ran)[0];
    assert_eq!(
        (input["agent"].as_str(), input["depth"].as_u64()),
        (Some("helper"), Some(1))
    );
}

#[test]
fn each_chat_turn_is_a_run_its_run_hooks_hear_of() {
    let ran = Test::new()
        .agent(
            "system: Be brief.\nhooks:\n  run_start:\n    - command: [./hooks/notice.sh]\n  run_end:\n    - command: [./hooks/notice.sh]\n",
        )
        .executable("hooks/notice.sh", &hook(""))
        .reply(Reply::text("Hello Ann."))
        .reply(Reply::text("You are Ann."))
        .command(["chat", "agent.yaml", "--run-dir", "run"])
        .stdin("I am Ann.\nWho am I?\n")
        .stdout("Hello Ann.\nYou are Ann.\n")
        .any_stderr()
        .run();
    let events: Vec<String> = seen(&ran)
        .iter()
        .map(|input| input["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(events, ["run_start", "run_end", "run_start", "run_end"]);
    assert_eq!(seen(&ran)[3]["result"]["output"], "You are Ann.");
}

#[test]
fn a_call_approved_on_resume_passes_its_hooks_again_as_it_runs() {
    let agent = format!(
        "{ASKING_AGENT}hooks:\n  pre_tool_use:\n    - command: [./hooks/pre.sh]\n      match: ['write_file:path=a.txt']\n"
    );
    // The hook rewrites the content: the approved call runs with what the hook says then.
    let answer = r#"{"arguments": {"path": "a.txt", "content": "A, checked"}}"#;
    let paused = Test::new()
        .agent(&agent)
        .executable("hooks/pre.sh", &hook(answer))
        .reply(Reply::tool_call(
            "write_file",
            json!({"path": "a.txt", "content": "A"}),
        ))
        .status(4)
        .any_stderr()
        .run();
    assert_eq!(
        seen(&paused).len(),
        1,
        "the hook ran before the call waited"
    );
    assert!(!paused.path("a.txt").exists());
    let session = paused.session();
    let resumed = paused
        .then()
        .reply(Reply::text("done"))
        .command(["resume", &session, "--approve", "all", "--run-dir", "run2"])
        .run();
    assert_eq!(
        seen(&resumed).len(),
        2,
        "and again as the approved call ran"
    );
    assert_eq!(resumed.read("a.txt"), "A, checked");
}

#[test]
fn a_post_tool_use_hook_that_fails_withholds_the_result_unless_on_error_allows() {
    let agent = "prompt: Go
tools:
  - builtin: read_file
hooks:
  post_tool_use:
    - command: [./hooks/broken.sh]
      match: ['read_file:path=secret.txt']
    - command: [./hooks/broken.sh]
      match: ['read_file:path=public.txt']
      on_error: allow
";
    let ran = Test::new()
        .agent(agent)
        .executable(
            "hooks/broken.sh",
            "#!/bin/sh\necho 'scanner down' >&2\nexit 1\n",
        )
        .file("secret.txt", "the launch date")
        .file("public.txt", "the changelog")
        .reply(
            Reply::tool_call("read_file", json!({"path": "secret.txt"}))
                .with_tool_call("read_file", json!({"path": "public.txt"})),
        )
        .reply(Reply::text("done"))
        .run();
    assert_eq!(
        told(&ran, 1, 0),
        "Error: the result was withheld: the post_tool_use hook `./hooks/broken.sh` failed: it exited with status 1: scanner down"
    );
    assert!(told(&ran, 1, 1).contains("the changelog"));
    assert!(!ran.read("run/events.jsonl").contains("the launch date"));
    assert!(!ran.transcript().contains("the launch date"));
}

#[test]
fn validate_warns_that_a_sub_agents_run_hooks_never_run() {
    let sub_agent_with_run_end = WITH_HELPER.replace(
        "        - builtin: write_file\n",
        "        - builtin: write_file\n      hooks:\n        run_end:\n          - command: [notify-send, done]\n",
    );
    Test::new()
        .agent(&sub_agent_with_run_end)
        .command(["validate", "agent.yaml"])
        .any_stderr()
        .stdout_contains(
            "warning[no-effect]: `run_end` hooks of a sub-agent or handoff target never run",
        )
        .stdout_contains("help: declare them in the root agent's file")
        .run();
}

/// A hook reads the arguments as the model wrote them and as the tool resolves them (what
/// `match:` sees): the frozen-files hook of docs/hooks.md, which checks the resolved path,
/// denies `./src/release/v2.rs` and `src//release/v3.rs` too.
#[test]
fn a_hook_reads_the_resolved_arguments_and_a_path_spelt_otherwise_is_denied() {
    let agent = "prompt: Go
tools:
  - builtin: write_file
hooks:
  pre_tool_use:
    - command: [./hooks/frozen-files.sh]
      match: [write_file]
";
    // docs/hooks.md's frozen-files.py, in sh: the resolved path decides.
    let frozen = r#"#!/bin/sh
input=$(cat)
printf '%s\n' "$input" >> seen.jsonl
path=$(printf '%s' "$input" | sed -n 's/.*"resolved_arguments":{[^}]*"path":"\([^"]*\)".*/\1/p')
case "$path" in
  src/release/*) printf '%s' '{"decision": "deny", "reason": "src/release/ is frozen until the release ships"}' ;;
esac
"#;
    let write = |path: &str| json!({"path": path, "content": "x"});
    let ran = Test::new()
        .agent(agent)
        .executable("hooks/frozen-files.sh", frozen)
        .reply(
            Reply::tool_call("write_file", write("src/release/v1.rs"))
                .with_tool_call("write_file", write("./src/release/v2.rs"))
                .with_tool_call("write_file", write("src//release/v3.rs"))
                .with_tool_call("write_file", write("src/lib.rs")),
        )
        .reply(Reply::text("done"))
        .stdout("done\n")
        .run();
    for call in 0..3 {
        assert_eq!(
            told(&ran, 1, call),
            "Error: denied by the pre_tool_use hook `./hooks/frozen-files.sh`: src/release/ is frozen until the release ships"
        );
    }
    assert!(!ran.path("src/release").exists());
    assert_eq!(ran.read("src/lib.rs"), "x");
    let inputs = seen(&ran);
    let input = inputs
        .iter()
        .find(|input| input["arguments"]["path"] == "./src/release/v2.rs")
        .unwrap();
    assert_eq!(input["resolved_arguments"]["path"], "src/release/v2.rs");
    assert_eq!(input["resolved_arguments"]["content"], "x");
}
