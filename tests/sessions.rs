//! Checkpoints, `runner resume` and `runner sessions` end to end.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use runner::testing::mock_server::{MockResponse, MockServer, Reply};
use serde_json::{Value, json};
use support::{Outcome, Run, tempdir};

const KEY_ENV: &str = "RUNNER_TEST_KEY";

struct Project {
    dir: PathBuf,
}

impl Project {
    fn new(mock: &MockServer, body: &str) -> Self {
        let dir = tempdir("sessions");
        let model = format!(
            "model: {{ provider: openai, name: m, base_url: \"{}\", api_key_env: {KEY_ENV}, retry: {{ max_attempts: 1 }} }}",
            mock.openai_base_url()
        );
        std::fs::write(
            dir.join("agent.yaml"),
            format!("name: worker\n{model}\n{body}"),
        )
        .unwrap();
        std::fs::write(dir.join("notes.txt"), "a\nb\n").unwrap();
        Project { dir }
    }

    fn run(&self, args: &[&str]) -> Outcome {
        Run::new(args)
            .current_dir(&self.dir)
            .env(KEY_ENV, "sk-test")
            .run()
    }

    fn exec(&self) -> (Outcome, String) {
        let outcome = self.run(&[
            "exec",
            "agent.yaml",
            "--output",
            "json",
            "--run-dir",
            "run1",
        ]);
        let session = outcome.json()["session_id"].as_str().unwrap().to_string();
        (outcome, session)
    }

    fn session_file(&self, session: &str, name: &str) -> PathBuf {
        self.dir.join(".runner/sessions").join(session).join(name)
    }
}

#[test]
fn every_step_is_checkpointed_and_sessions_lists_shows_and_removes() {
    let mock = MockServer::start();
    mock.push(MockResponse::reply(Reply::tool_call(
        "read_file",
        json!({"path": "notes.txt"}),
    )));
    mock.push(MockResponse::text("done"));
    let project = Project::new(&mock, "prompt: Go\ntools:\n  - builtin: read_file\n");
    let (outcome, session) = project.exec();
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(project.session_file(&session, "checkpoint.json").is_file());
    assert!(project.session_file(&session, "steps/1.json").is_file());
    let metadata: Value = serde_json::from_str(
        &std::fs::read_to_string(project.session_file(&session, "metadata.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(metadata["status"], "completed");
    assert_eq!(metadata["agent"], "worker");
    let events = support::read_events(&project.dir.join("run1/events.jsonl"));
    assert!(events.iter().any(|e| e["type"] == "agent.checkpoint.saved"));
    let transcript = std::fs::read_to_string(project.dir.join("run1/transcript.txt")).unwrap();
    assert!(transcript.contains("<<CHECKPOINT_START>>"), "{transcript}");
    runner::output::transcript::parse(&transcript).expect("parses");

    let list = project.run(&["sessions", "list"]);
    assert_eq!(list.code, 0);
    assert!(
        list.stdout.contains(&session) && list.stdout.contains("completed"),
        "{}",
        list.stdout
    );
    let show = project.run(&["sessions", "show", &session]);
    assert!(show.stdout.contains("thread tree"), "{}", show.stdout);
    assert_eq!(project.run(&["sessions", "rm", &session]).code, 0);
    assert!(!project.session_file(&session, "metadata.json").exists());
}

#[test]
fn input_required_then_resume_with_the_answer() {
    let mock = MockServer::start();
    mock.push(MockResponse::reply(Reply::tool_call(
        "ask_user",
        json!({"question": "Which file?"}),
    )));
    mock.push(MockResponse::text("Reading notes.txt as asked."));
    let project = Project::new(&mock, "prompt: Go\ntools:\n  - builtin: ask_user\n");
    let (outcome, session) = project.exec();
    assert_eq!(outcome.code, 4, "{}", outcome.stderr);
    let waiting = project.run(&["resume", &session]);
    assert_eq!(waiting.code, 2, "no answer given");
    assert!(waiting.stderr.contains("Which file?"), "{}", waiting.stderr);
    let resumed = project.run(&[
        "resume",
        &session,
        "--answer",
        "notes.txt",
        "--run-dir",
        "run2",
        "--output",
        "json",
    ]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(resumed.json()["output"], "Reading notes.txt as asked.");
    assert_eq!(resumed.json()["session_id"], session.as_str());
    let last = mock.requests().pop().unwrap();
    let tool = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    assert_eq!(tool["content"], "notes.txt");
    let transcript = std::fs::read_to_string(project.dir.join("run2/transcript.txt")).unwrap();
    assert!(transcript.contains("USER_INPUT_PROVIDED"), "{transcript}");
}

#[test]
fn a_limit_raised_in_the_file_lets_the_session_finish() {
    let mock = MockServer::start();
    for _ in 0..3 {
        mock.push(MockResponse::reply(Reply::tool_call(
            "read_file",
            json!({"path": "notes.txt"}),
        )));
    }
    mock.push(MockResponse::text("finally"));
    let project = Project::new(
        &mock,
        "prompt: Go\ntools:\n  - builtin: read_file\nlimits: { max_llm_calls: 2 }\n",
    );
    let (outcome, session) = project.exec();
    assert_eq!(outcome.code, 3);
    let file = project.dir.join("agent.yaml");
    std::fs::write(
        &file,
        std::fs::read_to_string(&file)
            .unwrap()
            .replace("max_llm_calls: 2", "max_llm_calls: 10"),
    )
    .unwrap();
    let resumed = project.run(&["resume", &session, "--run-dir", "run2", "--output", "json"]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let envelope = resumed.json();
    assert_eq!(envelope["output"], "finally");
    assert_eq!(envelope["llm_calls"], 4, "the session keeps counting");
    let history = mock.requests().pop().unwrap().body["messages"]
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
    let mock = MockServer::start();
    mock.push(MockResponse::reply(Reply::tool_call(
        "read_file",
        json!({"path": "notes.txt"}),
    )));
    mock.push(
        MockResponse::text("slow words that never arrive").chunk_delay(Duration::from_millis(800)),
    );
    mock.push(MockResponse::text("resumed answer"));
    let project = Project::new(&mock, "prompt: Go\ntools:\n  - builtin: read_file\n");
    let child = Run::new([
        "exec",
        "agent.yaml",
        "--output",
        "json",
        "--run-dir",
        "run1",
    ])
    .current_dir(&project.dir)
    .env(KEY_ENV, "sk-test")
    .spawn();
    for _ in 0..200 {
        if mock.request_count() >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130));
    let session = serde_json::from_slice::<Value>(&output.stdout).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let resumed = project.run(&["resume", &session, "--run-dir", "run2"]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(resumed.stdout, "resumed answer\n");
}

#[test]
fn corrupt_and_truncated_checkpoints_are_refused_by_name() {
    let mock = MockServer::start();
    mock.push(MockResponse::text("done"));
    let project = Project::new(&mock, "prompt: Go\nlimits: { max_llm_calls: 1 }\n");
    let (_, session) = project.exec();
    let checkpoint = project.session_file(&session, "checkpoint.json");
    let text = std::fs::read_to_string(&checkpoint).unwrap();
    std::fs::write(&checkpoint, &text[..text.len() / 2]).unwrap();
    let from_step = project.run(&[
        "resume",
        &session,
        "--from-checkpoint",
        "1",
        "--branch",
        "x",
    ]);
    assert_eq!(
        from_step.code, 3,
        "the step file is intact and loads (then the bound stops it): {}",
        from_step.stderr
    );
    let refused = project.run(&["resume", &session]);
    assert_eq!(refused.code, 2);
    assert!(
        refused.stderr.contains("checkpoint.json") && refused.stderr.contains("truncated"),
        "{}",
        refused.stderr
    );
    std::fs::write(&checkpoint, "garbage, not JSON").unwrap();
    let garbage = project.run(&["resume", &session]);
    assert_eq!(garbage.code, 2);
    assert!(
        garbage
            .stderr
            .contains("checkpoint.json: not a valid checkpoint file"),
        "{}",
        garbage.stderr
    );
    std::fs::write(
        &checkpoint,
        text.replace("\"version\": 1", "\"version\": 7"),
    )
    .unwrap();
    let version = project.run(&["resume", &session]);
    assert_eq!(version.code, 2);
    assert!(version.stderr.contains("version 7"), "{}", version.stderr);
}

#[test]
fn a_checkpoint_directory_that_cannot_be_created_is_exit_2_with_its_path() {
    let mock = MockServer::start();
    let project = Project::new(
        &mock,
        "prompt: Go\ncheckpoints: { dir: notes.txt/sessions }\n",
    );
    let outcome = project.run(&["exec", "agent.yaml"]);
    assert_eq!(outcome.code, 2);
    assert!(
        outcome.stderr.contains("notes.txt/sessions"),
        "{}",
        outcome.stderr
    );
    assert_eq!(mock.request_count(), 0);
}

#[test]
fn branching_from_a_step_starts_a_new_session_in_the_tree() {
    let mock = MockServer::start();
    mock.push(MockResponse::reply(Reply::tool_call(
        "read_file",
        json!({"path": "notes.txt"}),
    )));
    mock.push(MockResponse::text("first ending"));
    mock.push(MockResponse::text("second ending"));
    let project = Project::new(&mock, "prompt: Go\ntools:\n  - builtin: read_file\n");
    let (_, session) = project.exec();
    let branch = project.run(&[
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
    ]);
    assert_eq!(branch.code, 0, "{}", branch.stderr);
    let envelope = branch.json();
    assert_eq!(envelope["output"], "second ending");
    let new_session = envelope["session_id"].as_str().unwrap().to_string();
    assert_ne!(new_session, session);
    let show = project.run(&["sessions", "show", &session]);
    assert!(
        show.stdout.contains(&new_session) && show.stdout.contains("[alt]"),
        "{}",
        show.stdout
    );
    let requests = mock.requests();
    assert_eq!(
        requests[2].body["messages"], requests[1].body["messages"],
        "the branch starts from the state after step 1"
    );
}

/// Kills the run with SIGKILL at many points of a five-step run whose tool appends to a
/// file, resuming after each kill: the run finishes, and no call ever ran twice.
#[test]
fn killed_at_any_point_the_session_resumes_without_repeating_a_tool_call() {
    const CALLS: usize = 5;
    let mock = MockServer::start();
    mock.route(|request| {
        let done = request.body["messages"]
            .as_array()
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
        let reply = if done >= CALLS {
            Reply::text("all appended")
        } else {
            Reply::tool_call(
                "shell",
                json!({"command": format!("./append.sh call-{}", done + 1)}),
            )
        };
        Some(MockResponse::reply(reply).chunk_delay(Duration::from_millis(15)))
    });
    let project = Project::new(
        &mock,
        "prompt: Append five lines.\ntools:\n  - builtin: shell\n    allow: [./append.sh]\n",
    );
    let script = project.dir.join("append.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nsleep 0.03\necho \"$1\" >> side-effects.log\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .args(["+x", script.to_str().unwrap()])
        .status()
        .unwrap();

    let delays = [40u64, 90, 25, 140, 60, 110, 35, 75, 160, 50];
    let mut finished = false;
    for attempt in 0..40 {
        let started_before = project
            .session_file("crash-test", "checkpoint.json")
            .exists();
        let args: Vec<String> = if started_before {
            vec![
                "resume".into(),
                "crash-test".into(),
                "--run-dir".into(),
                format!("run-{attempt}"),
            ]
        } else {
            ["exec", "agent.yaml", "--session", "crash-test", "--run-dir"]
                .iter()
                .map(|s| s.to_string())
                .chain([format!("run-{attempt}")])
                .collect()
        };
        let mut child = Run::new(&args)
            .current_dir(&project.dir)
            .env(KEY_ENV, "sk-test")
            .spawn();
        let kill_after = delays.get(attempt).copied();
        if let Some(delay) = kill_after {
            std::thread::sleep(Duration::from_millis(delay));
            let _ = child.kill();
        }
        let output = child.wait_with_output().unwrap();
        // Every run's transcript holds its completed steps, whatever happened to the process.
        let transcript =
            std::fs::read_to_string(project.dir.join(format!("run-{attempt}/transcript.txt")))
                .unwrap_or_default();
        let partial = runner::output::transcript::parse_partial(&transcript);
        assert!(
            partial.tail.is_none() || kill_after.is_some(),
            "a finished run has a complete transcript"
        );
        if output.status.code() == Some(0) {
            finished = true;
            break;
        }
    }
    assert!(finished, "the session never finished");
    eprintln!(
        "crash test: {} runs",
        std::fs::read_dir(&project.dir)
            .unwrap()
            .filter(|e| e
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("run-"))
            .count()
    );
    let log = std::fs::read_to_string(project.dir.join("side-effects.log")).unwrap_or_default();
    let mut lines: Vec<&str> = log.lines().collect();
    let total = lines.len();
    lines.sort();
    lines.dedup();
    assert_eq!(lines.len(), total, "a tool call ran twice: {log}");
    assert!(total <= CALLS, "{log}");
}
