//! Checkpoints, `runner resume` and `runner sessions` end to end.

mod support;

#[path = "sessions/external.rs"]
mod external;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use runner::testing::mock_server::{MockResponse, Reply};
use serde_json::{Value, json};
use support::{Ran, Test, read_json, wait_until};

const NOTES: &str = "a\nb\n";

/// A worker that reads the notes once, then answers.
const READER: &str = "name: worker\nmodel: $MODEL\nprompt: Go\ntools:\n  - builtin: read_file\n";

fn read_notes() -> Reply {
    Reply::tool_call("read_file", json!({"path": "notes.txt"}))
}

#[test]
fn every_step_is_checkpointed_and_sessions_lists_shows_and_removes() {
    let ran = Test::new()
        .agent(READER)
        .file("notes.txt", NOTES)
        .reply(read_notes())
        .reply(Reply::text("done"))
        .run();
    let session = ran.session();
    assert!(ran.session_file("checkpoint.json").is_file());
    let journal = std::fs::read_to_string(ran.session_file("journal.jsonl")).unwrap();
    assert!(
        journal.lines().count() >= 3,
        "a record per checkpoint: {journal}"
    );
    let metadata = read_json(&ran.session_file("metadata.json"));
    assert_eq!(metadata["status"], "completed");
    assert_eq!(metadata["agent"], "worker");
    assert!(!ran.events_of("agent.checkpoint.saved").is_empty());
    let transcript = ran.transcript();
    assert!(transcript.contains("<<CHECKPOINT_START>>"), "{transcript}");
    runner::output::transcript::parse(&transcript).expect("parses");

    ran.then()
        .command(["sessions", "list"])
        .stdout_contains(&session)
        .stdout_contains("completed")
        .run();
    ran.then()
        .command(["sessions", "show", &session])
        .stdout_contains("thread tree")
        .run();
    ran.then().command(["sessions", "rm", &session]).run();
    assert!(!ran.session_file("metadata.json").exists());
}

/// A session started with `--model` goes on with that model when it is resumed, rather
/// than the agent file's.
#[test]
fn a_resumed_session_keeps_the_model_it_was_started_with() {
    let paused = Test::new()
        .agent("name: worker\nmodel: $MODEL\nprompt: Go\ntools:\n  - builtin: ask_user\n")
        .reply(Reply::tool_call(
            "ask_user",
            json!({"question": "Which file?"}),
        ))
        .args(["--model", "openai/chosen-model"])
        .status(4)
        .any_stderr()
        .run();
    assert_eq!(paused.requests()[0].body["model"], "chosen-model");
    let session = paused.session();
    let resumed = paused
        .then()
        .reply(Reply::text("done"))
        .command(["resume", &session, "--answer", "a.txt", "--run-dir", "run2"])
        .run();
    assert_eq!(
        resumed.requests().last().unwrap().body["model"],
        "chosen-model"
    );
}

#[test]
fn input_required_then_resume_with_the_answer() {
    let paused = Test::new()
        .agent("name: worker\nmodel: $MODEL\nprompt: Go\ntools:\n  - builtin: ask_user\n")
        .reply(Reply::tool_call(
            "ask_user",
            json!({"question": "Which file?"}),
        ))
        .status(4)
        .stderr_contains("Which file?")
        .run();
    let session = paused.session();
    paused
        .then()
        .command(["resume", &session])
        .status(2)
        .stderr_contains("Which file?")
        .run();
    let resumed = paused
        .then()
        .reply(Reply::text("Reading notes.txt as asked."))
        .command([
            "resume",
            &session,
            "--answer",
            "notes.txt",
            "--run-dir",
            "run2",
            "--output",
            "json",
        ])
        .run();
    assert_eq!(resumed.json()["output"], "Reading notes.txt as asked.");
    assert_eq!(resumed.json()["session_id"], session.as_str());
    let last = resumed.requests().pop().unwrap();
    let tool = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    assert_eq!(tool["content"], "notes.txt");
    let transcript = resumed.transcript();
    assert!(transcript.contains("USER_INPUT_PROVIDED"), "{transcript}");
}

#[test]
fn a_limit_raised_in_the_file_lets_the_session_finish() {
    let agent = format!("{READER}limits: {{ max_llm_calls: 2 }}\n");
    let stopped = Test::new()
        .agent(&agent)
        .file("notes.txt", NOTES)
        .reply(read_notes())
        .reply(read_notes())
        .reply(read_notes())
        .reply(Reply::text("finally"))
        .status(3)
        .stderr_contains("max_llm_calls")
        .run();
    let session = stopped.session();
    let resumed = stopped
        .then()
        .agent(&agent.replace("max_llm_calls: 2", "max_llm_calls: 10"))
        // Raising a bound gives the agent more: the person says so.
        .command([
            "resume",
            &session,
            "--run-dir",
            "run2",
            "--output",
            "json",
            "--allow-widening",
        ])
        .run();
    let envelope = resumed.json();
    assert_eq!(envelope["output"], "finally");
    assert_eq!(envelope["llm_calls"], 4, "the session keeps counting");
    let history = resumed.requests().pop().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .len();
    assert!(
        history >= 6,
        "the history was restored ({history} messages)"
    );
}

#[test]
fn an_interrupted_run_resumes() {
    let running = Test::new()
        .agent(READER)
        .file("notes.txt", NOTES)
        .reply(read_notes())
        .respond(
            MockResponse::text("slow words that never arrive")
                .chunk_delay(Duration::from_millis(800)),
        )
        .reply(Reply::text("resumed answer"))
        .args(["--output", "json"])
        .status(130)
        .stderr_contains("interrupted")
        .spawn();
    wait_until("the second model call", || running.requests_made() >= 2);
    running.interrupt();
    let interrupted = running.wait();
    let session = interrupted.json()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let hint = format!("to continue: runner resume {session}\n");
    assert!(
        interrupted.stderr.ends_with(&hint),
        "{}",
        interrupted.stderr
    );
    interrupted
        .then()
        .command(["resume", &session, "--run-dir", "run2"])
        .stdout("resumed answer\n")
        .run();
}

/// The hint after a limit is the command that continues: a raised `limits.` key widens
/// the definition the session started with, so the resume it gives has `--allow-widening`.
#[test]
fn the_hint_after_a_limit_is_the_command_that_continues() {
    let limited = |calls: u32| format!("{READER}limits: {{ max_llm_calls: {calls} }}\n");
    let stopped = Test::new()
        .agent(&limited(1))
        .file("notes.txt", NOTES)
        .reply(read_notes())
        .status(3)
        .any_stderr()
        .run();
    let session = stopped.session();
    let hint = stopped
        .stderr
        .lines()
        .find_map(|line| line.strip_prefix("to continue: "))
        .expect("a hint");
    let command = format!("runner resume {session} --allow-widening");
    assert_eq!(
        hint,
        format!("raise `limits.max_llm_calls` in agent.yaml, then {command}")
    );
    // Doing exactly what it says.
    let words = shell_words::split(&command).unwrap();
    stopped
        .then()
        .agent(&limited(5))
        .reply(Reply::text("done"))
        .command_vec(words[1..].to_vec())
        .stdout("done\n")
        .run();
}

#[test]
fn corrupt_and_truncated_checkpoints_are_refused_by_name() {
    let ran = Test::new()
        .agent("name: worker\nmodel: $MODEL\nprompt: Go\nlimits: { max_llm_calls: 1 }\n")
        .reply(Reply::text("done"))
        .run();
    let session = ran.session();
    let checkpoint = ran.session_file("checkpoint.json");
    let text = std::fs::read_to_string(&checkpoint).unwrap();
    std::fs::write(&checkpoint, &text[..text.len() / 2]).unwrap();
    // The step file is intact and loads; then the bound stops the run.
    ran.then()
        .command([
            "resume",
            &session,
            "--from-checkpoint",
            "1",
            "--branch",
            "x",
        ])
        .status(3)
        .stderr_contains("max_llm_calls")
        .run();
    ran.then()
        .command(["resume", &session])
        .status(2)
        .stderr_contains("checkpoint.json")
        .stderr_contains("truncated")
        .run();
    std::fs::write(&checkpoint, "garbage, not JSON").unwrap();
    ran.then()
        .command(["resume", &session])
        .status(2)
        .stderr_contains("checkpoint.json: not a valid checkpoint file")
        .run();
    std::fs::write(&checkpoint, text.replace("\"version\":1", "\"version\":7")).unwrap();
    ran.then()
        .command(["resume", &session])
        .status(2)
        .stderr_contains("version 7")
        .run();
}

#[test]
fn a_checkpoint_directory_that_cannot_be_created_is_exit_2_with_its_path() {
    let ran = Test::new()
        .agent(
            "name: worker\nmodel: $MODEL\nprompt: Go\ncheckpoints: { dir: notes.txt/sessions }\n",
        )
        .file("notes.txt", NOTES)
        .command(["exec", "agent.yaml"])
        .status(2)
        .stderr_contains("notes.txt/sessions")
        .run();
    assert!(ran.requests().is_empty());
}

#[test]
fn branching_from_a_step_starts_a_new_session_in_the_tree() {
    let ran = Test::new()
        .agent(READER)
        .file("notes.txt", NOTES)
        .reply(read_notes())
        .reply(Reply::text("first ending"))
        .reply(Reply::text("second ending"))
        .stdout("first ending\n")
        .run();
    let session = ran.session();
    let branch = ran
        .then()
        .command([
            "resume",
            &session,
            "--from-checkpoint",
            "1",
            "--branch",
            "alt",
            "--output",
            "json",
            "--run-dir",
            "run2",
        ])
        .run();
    let envelope = branch.json();
    assert_eq!(envelope["output"], "second ending");
    let new_session = envelope["session_id"].as_str().unwrap().to_string();
    assert_ne!(new_session, session);
    ran.then()
        .command(["sessions", "show", &session])
        .stdout_contains(&new_session)
        .stdout_contains("[alt]")
        .run();
    let requests = ran.requests();
    assert_eq!(
        requests[2].body["messages"], requests[1].body["messages"],
        "the branch starts from the state after step 1"
    );
}

/// Kills the run with SIGKILL at many points of a five-step run whose tool appends to a
/// file, resuming after each kill: the run finishes, and no call ever ran twice.
#[test]
fn killed_at_any_point_the_session_resumes_without_repeating_a_tool_call() {
    let test = Test::new()
        .agent("name: worker\nmodel: $MODEL\nprompt: Append five lines.\ntools:\n  - builtin: shell\n    allow: [./append.sh]\n")
        .executable("append.sh", APPEND)
        .route(|request| {
            let reply = match tool_results(request) {
                done if done >= CALLS => Reply::text("all appended"),
                done => Reply::tool_call(
                    "shell",
                    json!({"command": format!("./append.sh call-{}", done + 1)}),
                ),
            };
            Some(MockResponse::reply(reply).chunk_delay(Duration::from_millis(15)))
        });
    let ran = kill_and_resume_until_done(test);
    assert_appended_at_most_once(&ran);
}

/// The same over a tree: the root calls a sub-agent five times, and the sub-agent's tool
/// appends. A run killed inside a sub-agent resumes with that call marked interrupted:
/// nothing the sub-agent did runs again.
#[test]
fn killed_inside_a_sub_agent_the_session_resumes_without_repeating_its_tool_calls() {
    let test = Test::new()
        .agent("name: worker\nmodel: $MODEL\nsystem: You are ROOT.\nprompt: Append five lines.\ntools:\n  - name: write\n    description: Appends a line.\n    parameters: { type: object, properties: { line: { type: string } }, required: [line] }\n    agent: { name: writer, system: You are WRITER., tools: [{ builtin: shell, allow: [./append.sh] }] }\n    prompt: \"{{ line }}\"\n")
        .executable("append.sh", APPEND)
        .route(|request| {
            let system = request.system_prompt().unwrap_or_default();
            let done = tool_results(request);
            let reply = if system.contains("WRITER") {
                match done {
                    0 => Reply::tool_call(
                        "shell",
                        json!({"command": format!("./append.sh {}", request.last_user_text().unwrap_or_default())}),
                    ),
                    _ => Reply::text("written"),
                }
            } else if done >= CALLS {
                Reply::text("all appended")
            } else {
                Reply::tool_call("write", json!({"line": format!("call-{}", done + 1)}))
            };
            Some(MockResponse::reply(reply).chunk_delay(Duration::from_millis(15)))
        });
    let ran = kill_and_resume_until_done(test);
    assert_appended_at_most_once(&ran);
}

/// A session killed after its first record has its metadata and journal, and no snapshot
/// yet (a first record takes none): it resumes from the journal alone, with the call that
/// was running marked interrupted, not run again.
#[test]
fn killed_after_its_first_record_a_session_without_a_snapshot_resumes_from_its_journal() {
    let running = Test::new()
        .agent("name: worker\nmodel: $MODEL\nprompt: Go\ntools:\n  - builtin: shell\n    allow: [./hang.sh]\n")
        .executable("hang.sh", "#!/bin/sh\necho started >> side-effects.log\nsleep 30\n")
        .reply(Reply::tool_call("shell", json!({"command": "./hang.sh"})))
        .reply(Reply::text("resumed"))
        .command(["exec", "agent.yaml", "--session", "first", "--run-dir", "run-0"])
        .own_process_group()
        .spawn();
    wait_until("the tool call", || {
        running.path("side-effects.log").exists()
    });
    // The tool's `sleep` with it.
    let killed = running.kill_group();
    let session = killed.path(".runner/sessions/first");
    assert!(
        session.join("metadata.json").is_file(),
        "the session exists"
    );
    assert!(session.join("journal.jsonl").is_file());
    assert!(!session.join("checkpoint.json").exists(), "no snapshot yet");
    killed
        .then()
        .command(["resume", "first", "--run-dir", "run-1"])
        .stdout("resumed\n")
        .any_stderr()
        .run();
    let log = std::fs::read_to_string(killed.path("side-effects.log")).unwrap();
    assert_eq!(
        log, "started\n",
        "the call that was running did not run again"
    );
    assert!(
        session.join("checkpoint.json").is_file(),
        "a snapshot at the end"
    );
}

const CALLS: usize = 5;

/// A tool that takes a moment, then appends its argument to `side-effects.log`.
const APPEND: &str = "#!/bin/sh\nsleep 0.03\necho \"$1\" >> side-effects.log\n";

/// How many tool results the request's history holds.
fn tool_results(request: &runner::testing::mock_server::MockRequest) -> usize {
    request.body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count())
}

/// Runs `test` as session `crash-test`, killing it with SIGKILL after each delay and
/// resuming it (or starting it again, before its first checkpoint), until a run finishes.
fn kill_and_resume_until_done(test: Test) -> Ran {
    // A session exists once it has metadata, written with its first checkpoint.
    const CHECKPOINT: &str = ".runner/sessions/crash-test/metadata.json";
    let delays = [40u64, 90, 25, 140, 60, 110, 35, 75, 160, 50];
    let exec = |test: Test, run_dir: &str| {
        test.command([
            "exec",
            "agent.yaml",
            "--session",
            "crash-test",
            "--run-dir",
            run_dir,
        ])
    };
    let mut test = exec(test, "run-0");
    let mut attempt = 0;
    loop {
        // Killed while the delays last; after that, the run must finish.
        let kill_after = delays.get(attempt);
        let ran = match kill_after {
            Some(&delay) => {
                let running = test.spawn();
                std::thread::sleep(Duration::from_millis(delay));
                running.kill()
            }
            None => test.run(),
        };
        // Every run's transcript holds its completed steps, whatever happened to the process.
        let transcript =
            std::fs::read_to_string(ran.path(&format!("run-{attempt}/transcript.txt")))
                .unwrap_or_default();
        let partial = runner::output::transcript::parse_partial(&transcript);
        assert!(
            partial.tail.is_none() || kill_after.is_some(),
            "a finished run has a complete transcript"
        );
        if ran.code == 0 {
            eprintln!("crash test: {} runs", attempt + 1);
            return ran;
        }
        attempt += 1;
        let run_dir = format!("run-{attempt}");
        test = if ran.path(CHECKPOINT).exists() {
            ran.then()
                .command(["resume", "crash-test", "--run-dir", &run_dir])
        } else {
            exec(ran.then(), &run_dir)
        };
    }
}

/// No line of `side-effects.log` is there twice, and there are at most `CALLS`.
fn assert_appended_at_most_once(ran: &Ran) {
    let log = std::fs::read_to_string(ran.path("side-effects.log")).unwrap_or_default();
    let mut lines: Vec<&str> = log.lines().collect();
    let total = lines.len();
    lines.sort();
    lines.dedup();
    assert_eq!(lines.len(), total, "a tool call ran twice: {log}");
    assert!(total <= CALLS, "{log}");
}

#[test]
fn an_invalid_session_id_is_exit_2_before_any_model_call_for_every_command() {
    let long = "x".repeat(129);
    let ran = Test::new()
        .agent("name: worker\nmodel: $MODEL\nprompt: Go\n")
        .reply(Reply::text("ran anyway"))
        .command(["sessions", "list"])
        .run();
    for id in [
        "../x",
        "a/b",
        "..",
        ".",
        "",
        "tab\there",
        "é",
        long.as_str(),
    ] {
        let exec = ran
            .then()
            .command(["exec", "agent.yaml", "--session", id, "--output", "json"])
            .status(2)
            .stderr_contains("is not a valid session id")
            .run();
        assert_eq!(exec.json()["status"], "invalid", "{id:?}");
        ran.then()
            .command(["resume", id])
            .status(2)
            .stderr_contains("is not a valid session id")
            .run();
        for subcommand in ["show", "rm"] {
            ran.then()
                .command(["sessions", subcommand, id])
                .status(2)
                .stderr_contains("is not a valid session id")
                .run();
        }
    }
    assert!(ran.requests().is_empty(), "no model call");
    assert!(!ran.path(".runner/x").exists());
}

/// A worker whose tool appends a line to `side-effects.log` and then waits for the test to
/// release it (`release_the_tool`), so the run holds its session while other commands try
/// it. The mock model answers by the number
/// of tool results so far: (`ask_user`, when `ask_first`), the append, then the answer.
fn appender(ask_first: bool) -> Test {
    appender_stalling(ask_first, Arc::default())
}

/// An appender whose model, while `stall` is set, takes seconds between the chunks of
/// every reply: a run killed then is killed in its model call.
fn appender_stalling(ask_first: bool, stall: Arc<AtomicBool>) -> Test {
    Test::new()
        .agent("name: worker\nmodel: $MODEL\nprompt: Append a line.\ntools:\n  - builtin: ask_user\n  - builtin: shell\n    allow: [./append.sh]\n")
        .executable(
            "append.sh",
            "#!/bin/sh\necho \"$1\" >> side-effects.log\n\
             i=0; while [ ! -e release ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done\n",
        )
        .route(move |request| {
            let done = request.body["messages"]
                .as_array()
                .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
            let reply = match done + usize::from(!ask_first) {
                0 => Reply::tool_call("ask_user", json!({"question": "Which line?"})),
                1 => Reply::tool_call("shell", json!({"command": "./append.sh line-1"})),
                _ => Reply::text("appended"),
            };
            let response = MockResponse::reply(reply);
            Some(match stall.load(Ordering::SeqCst) {
                true => response.chunk_delay(Duration::from_secs(5)),
                false => response,
            })
        })
}

/// An appender's workspace, before any run: `runner sessions list` there, so later commands
/// can be started side by side with `then()`.
fn appender_workspace() -> support::Ran {
    appender(false).command(["sessions", "list"]).run()
}

/// Waits until the appender's tool has started: its run is under way, past its first model
/// call, and holds the session.
fn wait_for_the_tool(ran: &support::Ran) {
    wait_until("the tool runs", || ran.path("side-effects.log").exists());
}

/// Lets the appender's tool finish (it gives up by itself after 20 s).
fn release_the_tool(ran: &support::Ran) {
    std::fs::write(ran.path("release"), "").unwrap();
}

/// The pid written in a session's lock file (empty when there is none).
fn lock_holder(ran: &support::Ran, session: &str) -> String {
    let lock = ran.path(&format!(".runner/sessions/{session}/lock"));
    std::fs::read_to_string(lock)
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The lines appended by the tool, each of which must appear once.
fn appended_once(ran: &support::Ran) -> Vec<String> {
    let log = ran.read("side-effects.log");
    let lines: Vec<String> = log.lines().map(String::from).collect();
    let mut unique = lines.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), lines.len(), "a tool call ran twice: {log}");
    lines
}

#[test]
fn two_resumes_of_one_session_at_once_run_it_once_and_refuse_the_second_naming_the_holder() {
    let paused = appender(true)
        .args(["--session", "s1"])
        .status(4)
        .stderr_contains("Which line?")
        .run();
    let first = paused
        .then()
        .command(["resume", "s1", "--answer", "that one", "--run-dir", "run2"])
        .stdout("appended\n")
        .spawn();
    wait_for_the_tool(&paused);
    let holder = lock_holder(&paused, "s1");
    let second = paused
        .then()
        .command([
            "resume",
            "s1",
            "--answer",
            "that one",
            "--run-dir",
            "run3",
            "--output",
            "json",
        ])
        .status(2)
        .stderr_contains("session `s1` is in use by another runner process")
        .run();
    assert!(
        second.stderr.contains(&format!("(pid {holder})")),
        "the refusal names the holder's pid {holder}: {}",
        second.stderr
    );
    let command_line = std::fs::read(format!("/proc/{holder}/cmdline")).unwrap_or_default();
    assert!(
        String::from_utf8_lossy(&command_line).contains("resume"),
        "pid {holder} is the first resume"
    );
    assert_eq!(second.json()["status"], "invalid");
    assert_eq!(second.json()["exit_code"], 2);
    release_the_tool(&paused);
    first.wait();
    assert_eq!(appended_once(&paused), ["line-1"]);
}

#[test]
fn two_execs_of_one_session_at_once_run_it_once() {
    let workspace = appender_workspace();
    let first = workspace
        .then()
        .args(["--session", "s1"])
        .stdout("appended\n")
        .spawn();
    wait_for_the_tool(&workspace);
    workspace
        .then()
        .command(["exec", "agent.yaml", "--session", "s1", "--run-dir", "run2"])
        .status(2)
        .stderr_contains("session `s1` is in use by another runner process (pid ")
        .run();
    release_the_tool(&workspace);
    first.wait();
    assert_eq!(appended_once(&workspace), ["line-1"]);
}

#[test]
fn sessions_rm_of_a_session_in_use_is_refused() {
    let workspace = appender_workspace();
    let running = workspace
        .then()
        .args(["--session", "s1"])
        .stdout("appended\n")
        .spawn();
    wait_for_the_tool(&workspace);
    let holder = lock_holder(&workspace, "s1");
    workspace
        .then()
        .command(["sessions", "rm", "s1"])
        .status(2)
        .stderr_contains(&format!(
            "session `s1` is in use by another runner process (pid {holder})"
        ))
        .run();
    release_the_tool(&workspace);
    running.wait();
    let metadata = read_json(&workspace.path(".runner/sessions/s1/metadata.json"));
    assert_eq!(metadata["status"], "completed");
    workspace.then().command(["sessions", "rm", "s1"]).run();
    assert!(!workspace.path(".runner/sessions/s1").exists());
}

#[test]
fn exec_with_the_id_of_an_existing_session_is_refused_and_keeps_its_history() {
    let ran = Test::new()
        .agent(READER)
        .file("notes.txt", NOTES)
        .reply(read_notes())
        .reply(Reply::text("done"))
        .args(["--session", "s1"])
        .run();
    let checkpoint = ran.read(".runner/sessions/s1/checkpoint.json");
    let again = ran
        .then()
        .reply(Reply::text("a new history"))
        .command([
            "exec",
            "agent.yaml",
            "--session",
            "s1",
            "--run-dir",
            "run2",
            "--output",
            "json",
        ])
        .status(2)
        .stderr_contains("session `s1` already exists")
        .stderr_contains("runner resume s1")
        .run();
    assert_eq!(again.json()["status"], "invalid");
    assert_eq!(again.json()["error"]["code"], "session_exists");
    assert_eq!(again.json()["session_id"], "s1");
    assert_eq!(again.requests().len(), 2, "no model call");
    assert_eq!(ran.read(".runner/sessions/s1/checkpoint.json"), checkpoint);
}

#[test]
fn runs_killed_with_sigkill_free_their_session_and_are_listed_in_its_run_ids() {
    let stall = Arc::new(AtomicBool::new(false));
    let workspace = appender_stalling(false, stall.clone())
        .command(["sessions", "list"])
        .run();
    // Killed in its tool call, after its first checkpoint.
    let exec = workspace
        .then()
        .command(["exec", "agent.yaml", "--session", "s1", "--run-dir", "run1"])
        .spawn();
    wait_for_the_tool(&workspace);
    exec.kill();
    release_the_tool(&workspace);
    // Killed in its first model call, before any checkpoint of its own.
    stall.store(true, Ordering::SeqCst);
    let before = workspace.requests().len();
    let resume = workspace
        .then()
        .command(["resume", "s1", "--run-dir", "run2"])
        .spawn();
    wait_until("the resume's model call", || {
        resume.requests_made() > before
    });
    resume.kill();
    stall.store(false, Ordering::SeqCst);
    let resumed = workspace
        .then()
        .command(["resume", "s1", "--run-dir", "run3"])
        .stdout("appended\n")
        .run();
    let metadata = read_json(&workspace.path(".runner/sessions/s1/metadata.json"));
    assert_eq!(
        metadata["runIds"],
        json!([
            run_id_in(&workspace, "run1"),
            run_id_in(&workspace, "run2"),
            resumed.result()["run_id"]
        ]),
        "every run, the killed ones too"
    );
    assert_eq!(appended_once(&workspace), ["line-1"]);
}

/// The run id of a run that left no result (killed): from its first event.
fn run_id_in(ran: &support::Ran, run_dir: &str) -> String {
    let events = ran.read(&format!("{run_dir}/events.jsonl"));
    let first: serde_json::Value = serde_json::from_str(events.lines().next().unwrap()).unwrap();
    first["runId"].as_str().unwrap().to_string()
}

/// Where a kill lands in the journal: just after the record of a step's calls in flight (the
/// tool is running), or just after the record of the step's end (the next model call is
/// under way).
#[derive(Debug, Clone, Copy)]
enum Boundary {
    CallsInFlight(usize),
    StepEnd(usize),
}

/// A worker that appends `line-1` and `line-2` with a tool that waits for `release-N`, then
/// answers; while `stall` is set its model takes seconds per reply.
fn two_appends(stall: Arc<AtomicBool>) -> Test {
    Test::new()
        .agent("name: worker\nmodel: $MODEL\nprompt: Append two lines.\ntools:\n  - builtin: shell\n    allow: [./append.sh]\n")
        .executable(
            "append.sh",
            "#!/bin/sh\necho \"$1\" >> side-effects.log\n\
             i=0; while [ ! -e \"release-$1\" ] && [ $i -lt 400 ]; do sleep 0.02; i=$((i+1)); done\n",
        )
        .route(move |request| {
            let reply = match tool_results(request) {
                done if done >= 2 => Reply::text("appended"),
                done => Reply::tool_call(
                    "shell",
                    json!({"command": format!("./append.sh line-{}", done + 1)}),
                ),
            };
            let response = MockResponse::reply(reply);
            Some(match stall.load(Ordering::SeqCst) {
                true => response.chunk_delay(Duration::from_secs(5)),
                false => response,
            })
        })
}

/// SIGKILL at every record boundary of the journal: each resume finds the records up to
/// the kill, marks a call in flight as interrupted instead of running it again, and
/// finishes; no line is appended twice.
#[test]
fn killed_at_every_journal_record_boundary_the_session_resumes_without_repeating_a_call() {
    use Boundary::*;
    for boundary in [CallsInFlight(1), StepEnd(1), CallsInFlight(2), StepEnd(2)] {
        let stall = Arc::new(AtomicBool::new(false));
        let running = two_appends(stall.clone()).args(["--session", "s1"]).spawn();
        let lines = |n: usize| {
            move |path: &std::path::Path| {
                std::fs::read_to_string(path.join("side-effects.log"))
                    .map_or(0, |log| log.lines().count())
                    >= n
            }
        };
        let dir = running.path("");
        match boundary {
            CallsInFlight(n) => {
                for earlier in 1..n {
                    std::fs::write(dir.join(format!("release-line-{earlier}")), "").unwrap();
                }
                wait_until("the tool runs", || lines(n)(&dir));
            }
            StepEnd(n) => {
                for step in 1..=n {
                    wait_until("the tool runs", || lines(step)(&dir));
                    if step == n {
                        stall.store(true, Ordering::SeqCst);
                    }
                    std::fs::write(dir.join(format!("release-line-{step}")), "").unwrap();
                }
                wait_until("the next model call", || running.requests_made() > n);
            }
        }
        let killed = running.kill();
        let journal = killed.read(".runner/sessions/s1/journal.jsonl");
        stall.store(false, Ordering::SeqCst);
        for n in 1..=2 {
            std::fs::write(killed.path(&format!("release-line-{n}")), "").unwrap();
        }
        let resumed = killed
            .then()
            .command(["resume", "s1", "--run-dir", "after"])
            .any_stderr()
            .status_any()
            .run();
        assert!(
            matches!(resumed.code, 0),
            "{boundary:?}: {}\n{journal}",
            resumed.stderr
        );
        let log = resumed.read("side-effects.log");
        let mut lines: Vec<&str> = log.lines().collect();
        let total = lines.len();
        lines.dedup();
        assert_eq!(lines.len(), total, "{boundary:?}: a call ran twice: {log}");
    }
}

/// A call that must not run twice (a shell command) starts only once the record of it in
/// flight is synced; a read-only call (`list_dir`) does not wait for a sync, since a power
/// cut that lost its record would only have the model ask for it again. The order is read
/// from the `--debug` log.
#[test]
fn only_calls_that_must_not_run_twice_wait_for_a_sync() {
    let step = |reply: Reply| MockResponse::reply(reply);
    let ran = Test::new()
        .agent("name: worker\nmodel: $MODEL\nprompt: Go\ntools:\n  - builtin: list_dir\n  - builtin: shell\n    allow: [./append.sh]\n")
        .executable("append.sh", APPEND)
        .respond(step(Reply::tool_call("shell", json!({"command": "./append.sh one"}))))
        .respond(step(Reply::tool_call("list_dir", json!({"path": "."}))))
        .respond(step(Reply::tool_call("shell", json!({"command": "./append.sh two"}))))
        .respond(step(Reply::tool_call("list_dir", json!({"path": "."}))))
        .reply(Reply::text("done"))
        .args(["--debug", "--session", "s1"])
        .stdout("done\n")
        .any_stderr()
        .run();
    // For each call started: whether the journal was synced after its last record.
    let mut synced_since_record = false;
    let mut starts = Vec::new();
    for line in ran.stderr.lines() {
        if line.contains("checkpoint record written") {
            synced_since_record = false;
        } else if line.contains("journal synced") {
            synced_since_record = true;
        } else if line.contains("tool call started") {
            let tool = if line.contains("tool=shell") {
                "shell"
            } else {
                "list_dir"
            };
            starts.push((tool, synced_since_record));
        }
    }
    assert_eq!(
        starts,
        [
            ("shell", true),
            ("list_dir", false),
            ("shell", true),
            ("list_dir", false)
        ],
        "{}",
        ran.stderr
    );
    // The run's end syncs what waited: no record comes after the last sync.
    assert!(synced_since_record, "{}", ran.stderr);
}

/// A record torn by a crash mid-append is dropped with a warning; the records before it
/// hold, and the session resumes from them.
#[test]
fn a_torn_journal_tail_is_dropped_with_a_warning() {
    let paused = Test::new()
        .agent("name: worker\nmodel: $MODEL\nprompt: Go\ntools:\n  - builtin: ask_user\n")
        .reply(Reply::tool_call(
            "ask_user",
            json!({"question": "Which file?"}),
        ))
        .args(["--session", "s1"])
        .status(4)
        .any_stderr()
        .run();
    let journal = paused.path(".runner/sessions/s1/journal.jsonl");
    let mut bytes = std::fs::read(&journal).unwrap();
    let whole = bytes.len();
    bytes.extend_from_slice(b"0badc0de {\"seq\":99,\"checkpointId\":\"torn");
    std::fs::write(&journal, &bytes).unwrap();
    let resumed = paused
        .then()
        .reply(Reply::text("notes.txt it is"))
        .command([
            "resume",
            "s1",
            "--answer",
            "notes.txt",
            "--run-dir",
            "after",
        ])
        .stdout("notes.txt it is\n")
        .stderr_contains("a record cut off")
        .run();
    let after = std::fs::read(&journal).unwrap();
    assert_eq!(
        &after[..whole],
        &bytes[..whole],
        "the records before it hold"
    );
    assert!(
        !String::from_utf8_lossy(&after).contains("torn"),
        "cut off before appending"
    );
    let requests = resumed.requests();
    let last = requests.last().unwrap().body["messages"].to_string();
    assert!(last.contains("notes.txt"), "{last}");
}

/// A session saved before the journal (a `checkpoint.json` without a journal position,
/// `steps/<N>.json`, no `journal.jsonl`) still resumes, and its steps can be branched from.
#[test]
fn a_session_saved_before_the_journal_resumes_and_branches() {
    let paused = Test::new()
        .agent("name: worker\nmodel: $MODEL\nprompt: Go\ntools:\n  - builtin: ask_user\n")
        .reply(Reply::tool_call(
            "ask_user",
            json!({"question": "Which file?"}),
        ))
        .args(["--session", "old"])
        .status(4)
        .any_stderr()
        .run();
    let dir = paused.path(".runner/sessions/old");
    let mut checkpoint = read_json(&dir.join("checkpoint.json"));
    checkpoint.as_object_mut().unwrap().remove("journal");
    let legacy = serde_json::to_string_pretty(&checkpoint).unwrap();
    std::fs::write(dir.join("checkpoint.json"), &legacy).unwrap();
    std::fs::create_dir_all(dir.join("steps")).unwrap();
    std::fs::write(dir.join("steps/1.json"), &legacy).unwrap();
    let mut metadata = read_json(&dir.join("metadata.json"));
    metadata.as_object_mut().unwrap().remove("journalOffset");
    std::fs::write(dir.join("metadata.json"), metadata.to_string()).unwrap();
    std::fs::remove_file(dir.join("journal.jsonl")).unwrap();

    paused
        .then()
        .reply(Reply::text("resumed"))
        .command(["resume", "old", "--answer", "a.txt", "--run-dir", "after"])
        .stdout("resumed\n")
        .run();
    let journal = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap();
    assert!(!journal.is_empty(), "the resumed run journals");
    paused
        .then()
        .reply(Reply::text("branched"))
        .command([
            "resume",
            "old",
            "--from-checkpoint",
            "1",
            "--branch",
            "b",
            "--answer",
            "b.txt",
            "--run-dir",
            "branch",
        ])
        .stdout("branched\n")
        .run();
}

/// Between snapshots the metadata file lags behind the journal: `sessions show` and `list`
/// read the newer records, so a killed run's session shows the steps it really saved.
#[test]
fn sessions_show_reads_the_steps_the_journal_saved_after_the_metadata() {
    let stall = Arc::new(AtomicBool::new(false));
    let running = two_appends(stall.clone()).args(["--session", "s1"]).spawn();
    let dir = running.path("");
    std::fs::write(dir.join("release-line-1"), "").unwrap();
    let appended = |n: usize| {
        std::fs::read_to_string(dir.join("side-effects.log")).map_or(0, |l| l.lines().count()) >= n
    };
    wait_until("the second tool runs", || appended(2));
    stall.store(true, Ordering::SeqCst);
    std::fs::write(dir.join("release-line-2"), "").unwrap();
    wait_until("the third model call", || running.requests_made() > 2);
    let killed = running.kill();
    let on_disk = read_json(&killed.path(".runner/sessions/s1/metadata.json"));
    let shown = killed.then().command(["sessions", "show", "s1"]).run();
    let shown: serde_json::Value =
        serde_json::from_str(shown.stdout.split("\nthread tree:").next().unwrap()).unwrap();
    assert!(
        shown["steps"].as_u64() > on_disk["steps"].as_u64(),
        "shown {} steps, the file says {}",
        shown["steps"],
        on_disk["steps"]
    );
}

/// The ids of the tool results a request sends back, in order.
fn result_ids(request: &runner::testing::mock_server::MockRequest) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["tool_call_id"].as_str().unwrap().to_string())
        .collect()
}

/// `docs/running.md`: "Results go back to the model in the order the model made the calls",
/// on resume too. Calls 1, 2, 4 and 5 run before the pause; 3 (approved) and 6 (denied)
/// are settled on resume, and were once sent after the others: 1, 2, 4, 5, 6, 3.
#[test]
fn results_settled_on_resume_go_back_in_the_order_the_model_made_the_calls() {
    let write = |name: &str| json!({"path": format!("{name}.txt"), "content": name});
    let ran = Test::new()
        .agent(
            "prompt: Go\ntools:\n  - builtin: read_file\n  - builtin: write_file\n\
             permissions:\n  ask: [write_file]\n",
        )
        .file("notes.txt", NOTES)
        .reply(
            read_notes()
                .with_tool_call("read_file", json!({"path": "notes.txt"}))
                .with_tool_call("write_file", write("c"))
                .with_tool_call("read_file", json!({"path": "notes.txt"}))
                .with_tool_call("read_file", json!({"path": "notes.txt"}))
                .with_tool_call("write_file", write("f")),
        )
        .status(4)
        .any_stderr()
        .run();
    let session = ran.session();
    let resumed = ran
        .then()
        .reply(Reply::text("done"))
        .command([
            "resume",
            &session,
            "--approve",
            "call_mock1_2",
            "--deny",
            "call_mock1_5",
            "--reason",
            "not f",
            "--run-dir",
            "run2",
        ])
        .stdout("done\n")
        .run();
    assert!(resumed.path("c.txt").exists());
    assert!(!resumed.path("f.txt").exists());
    let ids: Vec<String> = (0..6).map(|n| format!("call_mock1_{n}")).collect();
    assert_eq!(result_ids(&resumed.requests().pop().unwrap()), ids);
}

/// A scripted model's place in its script is the session's, as any model's history is:
/// `runner resume` goes on after the reply that paused the run. It once started the script
/// again, so a resumed `ask_user` run asked its question again (and paused again).
#[test]
fn a_resumed_scripted_model_goes_on_where_its_script_was() {
    let agent = "name: asker
model:
  provider: scripted
  script:
    - tool_calls: [{ name: ask_user, arguments: { question: Which colour? } }]
    - tool_calls: [{ name: ask_user, arguments: { question: Which shade? } }]
    - text: Noted.
prompt: Go
tools:
  - builtin: ask_user
";
    let paused = Test::new()
        .file("agent.yaml", agent)
        .status(4)
        .stderr_contains("Which colour?")
        .run();
    let session = paused.session();
    let again = paused
        .then()
        .command(["resume", &session, "--answer", "blue", "--run-dir", "run2"])
        .status(4)
        .stderr_contains("Which shade?")
        .run();
    let asked: Vec<String> = again
        .events_of("agent.tool.execution.started")
        .iter()
        .map(|e| e["data"]["input"]["question"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(asked, ["Which shade?"]);
    paused
        .then()
        .command(["resume", &session, "--answer", "navy", "--run-dir", "run3"])
        .stdout("Noted.\n")
        .run();
}

/// `docs/checkpoints.md`: a torn record is reported at its byte of the journal file, by
/// every command that reads the journal. The byte was once counted from the snapshot's
/// place in the journal, and `sessions list` and `show` said nothing at all.
#[test]
fn a_torn_record_is_reported_at_its_byte_of_the_file_by_every_command() {
    let paused = Test::new()
        .agent("name: worker\nmodel: $MODEL\nprompt: Go\ntools:\n  - builtin: ask_user\n")
        .reply(Reply::tool_call(
            "ask_user",
            json!({"question": "Which file?"}),
        ))
        .args(["--session", "s1"])
        .status(4)
        .any_stderr()
        .run();
    let journal = paused.path(".runner/sessions/s1/journal.jsonl");
    let mut bytes = std::fs::read(&journal).unwrap();
    let whole = bytes.len();
    assert!(whole > 0);
    bytes.extend_from_slice(b"0badc0de {\"seq\":99,\"checkpointId\":\"torn");
    std::fs::write(&journal, &bytes).unwrap();
    let warning = format!("a record cut off at byte {whole}; it and what follows are dropped");
    paused
        .then()
        .command(["sessions", "list"])
        .stdout_contains("s1")
        .stderr_contains(&warning)
        .run();
    paused
        .then()
        .command(["sessions", "show", "s1"])
        .stdout_contains("s1")
        .stderr_contains(&warning)
        .run();
    paused
        .then()
        .reply(Reply::text("notes.txt it is"))
        .command([
            "resume",
            "s1",
            "--answer",
            "notes.txt",
            "--run-dir",
            "after",
        ])
        .stdout("notes.txt it is\n")
        .stderr_contains(&warning)
        .run();
}

/// A checkpoint whose resume data (`pending`) is corrupted is refused, naming the session
/// and the field, instead of resuming without it (a lost `engine` field would forget the
/// question the session waits on).
#[test]
fn a_checkpoint_with_unreadable_resume_data_is_refused_naming_the_session_and_the_field() {
    let paused = Test::new()
        .agent("name: worker\nmodel: $MODEL\nprompt: Go\ntools:\n  - builtin: ask_user\n")
        .reply(Reply::tool_call(
            "ask_user",
            json!({"question": "Which file?"}),
        ))
        .args(["--session", "bad"])
        .status(4)
        .any_stderr()
        .run();
    // The checkpoint as a session saved before the journal keeps it: one file to corrupt.
    let dir = paused.path(".runner/sessions/bad");
    let mut checkpoint = read_json(&dir.join("checkpoint.json"));
    checkpoint.as_object_mut().unwrap().remove("journal");
    checkpoint["pending"]["engine"] = json!({"waiting": "on nothing known"});
    std::fs::write(dir.join("checkpoint.json"), checkpoint.to_string()).unwrap();
    let mut metadata = read_json(&dir.join("metadata.json"));
    metadata.as_object_mut().unwrap().remove("journalOffset");
    std::fs::write(dir.join("metadata.json"), metadata.to_string()).unwrap();
    std::fs::remove_file(dir.join("journal.jsonl")).unwrap();

    let refused = paused
        .then()
        .reply(Reply::text("resumed without the question"))
        .command(["resume", "bad", "--answer", "a.txt", "--run-dir", "after"])
        .status(2)
        .stderr_contains(
            "session `bad`: its checkpoint's resume data is unreadable: field `engine`",
        )
        .run();
    assert_eq!(
        refused.requests().len(),
        paused.requests().len(),
        "no model call"
    );
}

/// A session waits for an answer or for decisions on calls, never both: given both, the
/// command says so instead of silently using one of them.
#[test]
fn an_answer_and_decisions_together_are_refused_at_the_command_line() {
    Test::new()
        .command(["resume", "any", "--answer", "yes", "--approve", "all"])
        .status(2)
        .stderr_contains("cannot be used with")
        .run();
}

/// UAP §12.4.5: every step ends with a checkpoint, the final one too: its
/// `agent.checkpoint.saved` event and its transcript block, after the step and before the
/// answer (a single-step run keeps its flag).
#[test]
fn the_final_step_gets_its_checkpoint_event_and_transcript_block() {
    let ran = Test::new()
        .agent(READER)
        .file("notes.txt", NOTES)
        .reply(read_notes())
        .reply(Reply::text("done"))
        .run();
    let saved: Vec<u64> = ran
        .events_of("agent.checkpoint.saved")
        .iter()
        .map(|e| e["data"]["step"].as_u64().unwrap())
        .collect();
    assert_eq!(saved, [1, 2], "one per step, the final one included");
    let transcript = ran.transcript();
    let blocks = transcript.matches("<<CHECKPOINT_START>>").count();
    assert_eq!(blocks, 2, "{transcript}");
    let after_last_step = &transcript[transcript.rfind("<<STEP_END>>").unwrap()..];
    assert!(
        after_last_step.contains("<<CHECKPOINT_START>>") && after_last_step.ends_with("done\n"),
        "{transcript}"
    );

    let single = Test::new()
        .agent(READER)
        .reply(Reply::text("at once"))
        .run();
    let transcript = single.transcript();
    assert!(transcript.contains("<<SINGLE_STEP_FLAG>>"), "{transcript}");
    assert_eq!(single.events_of("agent.checkpoint.saved").len(), 1);
    assert!(transcript.contains("<<CHECKPOINT_START>>"), "{transcript}");
    runner::output::transcript::parse(&transcript).expect("parses");
}

/// UAP §12.4.5: a step that hands the conversation over ends with its checkpoint like any
/// other step: the `agent.checkpoint.saved` event, the CHECKPOINT block after the step, and
/// a checkpoint that knows who has control.
#[test]
fn a_handoff_step_gets_its_checkpoint_event_and_transcript_block() {
    let ran = Test::new()
        .agent(
            "system: You are AGENT-A.\nprompt: My invoice is wrong.\nhandoffs:\n  - name: transfer_to_b\n    description: To B.\n    agent: { name: agent-b, system: You are AGENT-B. }\n",
        )
        .reply(Reply::tool_call("transfer_to_b", json!({"reason": "billing"})))
        .reply(Reply::text("B answers."))
        .run();
    let saved: Vec<u64> = ran
        .events_of("agent.checkpoint.saved")
        .iter()
        .map(|e| e["data"]["step"].as_u64().unwrap())
        .collect();
    assert_eq!(saved, [1, 2], "the handoff step's and the final step's");
    let transcript = ran.transcript();
    let first_end = transcript.find("<<STEP_END>>").unwrap();
    let next_start = first_end + transcript[first_end..].find("<<STEP_START").unwrap();
    assert!(
        transcript[first_end..next_start].contains("<<CHECKPOINT_START>>"),
        "{transcript}"
    );
    runner::output::transcript::parse(&transcript).expect("parses");
    // The handoff step's record says who has control.
    let journal = std::fs::read_to_string(ran.session_file("journal.jsonl")).unwrap();
    let first = journal
        .lines()
        .map(|line| serde_json::from_str::<Value>(line.split_once(' ').unwrap().1).unwrap())
        .find(|record| record["step"] == 1 && record["state"]["rest"]["handoffs"].is_array())
        .unwrap_or_else(|| panic!("no step-1 record with the handoff: {journal}"));
    assert_eq!(first["state"]["rest"]["handoffs"], json!(["transfer_to_b"]));
}

/// UAP §3.4: the session's id is in the state's metadata (`sessionId`), and each agent has
/// a stable id, from its file relative to the project directory and its name, in every
/// event beside its name and in the session's metadata.
#[test]
fn the_session_and_each_agent_have_stable_ids_in_state_events_and_metadata() {
    let agent = "name: lead\nmodel: $MODEL\nprompt: Go\ntools:\n  - name: helper\n    description: Helps.\n    parameters: { type: object }\n    agent: { name: helper, system: You help. }\n";
    let run = || {
        Test::new()
            // The project directory: the one holding `.git`.
            .file(".git/HEAD", "ref: refs/heads/main\n")
            .file("agents/lead.yaml", agent)
            .command(["exec", "agents/lead.yaml", "--run-dir", "run"])
            .reply(Reply::tool_call("helper", json!({})))
            .reply(Reply::text("helped"))
            .reply(Reply::text("done"))
            .run()
    };
    // The documented derivation: SHA-256 of `PATH#NAME` as a version-8 UUID.
    let expected = |written: &str| {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(written.as_bytes());
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest[..16]);
        bytes[6] = (bytes[6] & 0x0f) | 0x80;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        uuid::Uuid::from_bytes(bytes).to_string()
    };
    let (lead, helper) = (
        expected("agents/lead.yaml#lead"),
        expected("agents/lead.yaml#helper"),
    );
    for ran in [run(), run()] {
        let events = ran.events();
        for event in &events {
            let id = match event["depth"].as_u64().unwrap() {
                0 => &lead,
                _ => &helper,
            };
            assert_eq!(event["agentId"], json!(id), "{event}");
        }
        let metadata = read_json(&ran.session_file("metadata.json"));
        assert_eq!(metadata["agentId"], json!(lead));
        let checkpoint = read_json(&ran.session_file("checkpoint.json"));
        assert_eq!(
            checkpoint["state"]["metadata"]["sessionId"],
            json!(ran.session())
        );
    }
}

/// UAP §7: the thread tree you can walk. `runner sessions tree` shows a session's branches
/// (each with the step of its parent it started from, its status and steps), `runner
/// sessions checkout ID` makes a branch the one `runner resume` (without an id) continues,
/// and the library gives a node's history from the root.
#[test]
fn sessions_tree_shows_the_branches_and_checkout_chooses_the_one_resume_continues() {
    let agent = "name: worker\nmodel: $MODEL\nprompt: Go\ntools:\n  - builtin: read_file\n  - builtin: ask_user\n";
    let ran = Test::new()
        .agent(agent)
        .file("notes.txt", NOTES)
        .reply(read_notes())
        .reply(Reply::text("first ending"))
        .stdout("first ending\n")
        .run();
    let root = ran.session();
    let branch = |name: &str, reply: Reply, run_dir: &str| {
        let branched = ran
            .then()
            .reply(reply)
            .command([
                "resume",
                &root,
                "--from-checkpoint",
                "1",
                "--branch",
                name,
                "--output",
                "json",
                "--run-dir",
                run_dir,
            ])
            .status_any()
            .any_stderr()
            .run();
        branched.json()["session_id"].as_str().unwrap().to_string()
    };
    let asking = branch(
        "ask",
        Reply::tool_call("ask_user", json!({"question": "Which file?"})),
        "run2",
    );
    let other = branch("other", Reply::text("second ending"), "run3");

    // Without a checkout, `resume` needs an id.
    ran.then()
        .command(["resume", "--answer", "notes.txt"])
        .status(2)
        .stderr_contains("none is checked out")
        .run();
    ran.then()
        .command(["sessions", "checkout", &asking])
        .stdout(&format!("{asking}\n"))
        .run();
    let tree = ran
        .then()
        .command(["sessions", "tree", &other])
        .run()
        .stdout;
    let lines: Vec<&str> = tree.lines().collect();
    assert_eq!(lines.len(), 3, "{tree}");
    assert_eq!(lines[0], format!("{root}  completed, 2 steps"));
    assert_eq!(
        lines[1],
        format!("  {asking} [ask] (from step 1 of {root})  input_required, 2 steps  *")
    );
    assert_eq!(
        lines[2],
        format!("  {other} [other] (from step 1 of {root})  completed, 2 steps")
    );

    // `resume` without an id continues the checked-out branch.
    let resumed = ran
        .then()
        .reply(Reply::text("answered"))
        .command([
            "resume",
            "--answer",
            "notes.txt",
            "--output",
            "json",
            "--run-dir",
            "run4",
        ])
        .run();
    assert_eq!(resumed.json()["session_id"], json!(asking));
    assert_eq!(resumed.json()["output"], "answered");

    // A node's history: its messages from the root, the branch point's included.
    let store =
        runner::checkpoint::FileCheckpointStore::create(ran.path(".runner/sessions")).unwrap();
    let history = runner::session::thread::history(&store, &asking)
        .unwrap()
        .unwrap();
    let texts: Vec<String> = history
        .iter()
        .map(|message| serde_json::to_string(message).unwrap())
        .collect();
    assert!(texts.first().unwrap().contains("Go"), "{texts:?}");
    assert!(texts.last().unwrap().contains("answered"), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("read_file")), "{texts:?}");
}
