//! The session layer through the library API (`runner::session`), as a server hosting many
//! runs in one process would use it: runs on one tokio runtime, each with its own MCP
//! server, budget, checkpoints and stop signal; a run cancelled and resumed; a subscriber
//! that joins late; and `RunFile`, which runs the `run_start` hooks like `runner exec`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

use runner::session::{
    self, Answer, Denial, Inputs, ResumeRequest, RunDirOptions, RunHandle, RunRequest, RunSettings,
    SessionsAt, SubmittedOutput,
};
use runner::testing::mock_server::{MockResponse, MockServer, Reply};
use runner::{Event, EventData, RunStatus};
use serde_json::{Map, Value, json};

const KEY_ENV: &str = "RUNNER_LIBRARY_TEST_KEY";

/// The mock model's key, in the environment the agents' `api_key_env` names. Set once,
/// before any run of this process reads it.
fn key() {
    static SET: Once = Once::new();
    // SAFETY: set once, to the same value, before the first run reads it.
    SET.call_once(|| unsafe { std::env::set_var(KEY_ENV, "sk-library-test-not-a-key") });
}

/// A fresh directory of its own for `name`.
fn workspace(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "runner-library-{}-{name}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The reference MCP server over stdio, its `echo` tool as `ev_echo`.
fn echo_server() -> String {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp-server/node_modules/.bin/mcp-server-everything");
    assert!(
        bin.exists(),
        "the reference MCP server is not installed: run `npm ci --prefix tests/mcp-server`"
    );
    format!(
        "tools:\n  - mcp:\n      command: {}\n      args: [stdio]\n      tools: [echo]\n      prefix: ev_\n",
        bin.display()
    )
}

/// Writes `dir/agent.yaml`: agent `name` on the mock model, its sessions in `dir/sessions`.
fn agent_file(dir: &Path, name: &str, mock: &MockServer, body: &str) -> PathBuf {
    let text = format!(
        "name: {name}\nsystem: You are {name}.\nmodel: {{ provider: openai, name: mock-model, base_url: \"{}\", api_key_env: {KEY_ENV}, retry: {{ max_attempts: 1 }} }}\ncheckpoints: {{ dir: \"{}\" }}\n{body}",
        mock.openai_base_url(),
        dir.join("sessions").display()
    );
    let path = dir.join("agent.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The agent whose system prompt names `who`, or `None`.
fn who(request: &runner::testing::mock_server::MockRequest) -> Option<&'static str> {
    let system = request.system_prompt()?;
    ["alpha", "beta", "gamma", "delta"]
        .into_iter()
        .find(|name| system.contains(&format!("You are {name}.")))
}

/// Whether the request carries a tool's result.
fn after_a_tool(request: &runner::testing::mock_server::MockRequest) -> bool {
    request.conversation().iter().any(|m| m["role"] == "tool")
}

/// Alpha and beta call their MCP server's `echo` once, then answer; 50 tokens a call.
fn echo_then_answer(mock: &MockServer) {
    mock.route(|request| {
        let who = who(request).filter(|w| ["alpha", "beta"].contains(w))?;
        let reply = match after_a_tool(request) {
            false => Reply::tool_call("ev_echo", json!({"message": format!("from {who}")})),
            true => Reply::text(format!("{who} done")),
        };
        Some(MockResponse::reply(reply.with_usage(40, 10)))
    });
}

/// A run of `agent` with the input `who` as a JSON value.
fn request(agent: PathBuf, who: &str, settings: RunSettings) -> RunRequest {
    let values = Map::from_iter([("who".to_string(), json!(who))]);
    RunRequest {
        inputs: Inputs::Values(values),
        settings,
        ..RunRequest::new(agent)
    }
}

const BODY: &str =
    "inputs:\n  who: { type: string }\nprompt: \"Echo {{ who }}, then say you are done.\"\n";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Every event of a handle's stream, to the end of the run.
async fn all_events(handle: &RunHandle) -> Vec<Event> {
    let mut stream = handle.events();
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    events
}

fn as_json(events: &[Event]) -> String {
    serde_json::to_string(events).unwrap()
}

#[test]
fn two_agent_files_run_concurrently_on_one_runtime_and_their_runs_do_not_mix() {
    key();
    let mock = MockServer::start();
    echo_then_answer(&mock);
    let (alpha_dir, beta_dir) = (workspace("alpha"), workspace("beta"));
    // Each budget holds its own run's 100 tokens, not both runs' 200.
    let limits = "limits: { max_tokens: 150 }\n";
    let body = format!("{BODY}{limits}{}", echo_server());
    let alpha = agent_file(&alpha_dir, "alpha", &mock, &body);
    let beta = agent_file(&beta_dir, "beta", &mock, &body);
    let alpha_settings = RunSettings {
        run_dir: Some(RunDirOptions {
            dir: Some(alpha_dir.join("run")),
            ..RunDirOptions::default()
        }),
        ..RunSettings::default()
    };

    let (alpha, beta) = runtime().block_on(async {
        let alpha = session::start(request(alpha, "alpha", alpha_settings))
            .await
            .expect("alpha starts");
        let beta = session::start(request(beta, "beta", RunSettings::default()))
            .await
            .expect("beta starts");
        let (alpha_events, beta_events) = tokio::join!(all_events(&alpha), all_events(&beta));
        let (alpha_ended, beta_ended) = tokio::join!(alpha.outcome(), beta.outcome());
        (
            (alpha_ended.unwrap(), alpha_events),
            (beta_ended.unwrap(), beta_events),
        )
    });

    for ((ended, events), name, other) in [(&alpha, "alpha", "beta"), (&beta, "beta", "alpha")] {
        let result = &ended.result;
        assert_eq!(result.status, RunStatus::Completed, "{name}: {result:?}");
        assert_eq!(
            result.output.as_deref(),
            Some(format!("{name} done").as_str())
        );
        assert_eq!(result.agent, name);
        assert_eq!(result.llm_calls, 2, "{name}: its own calls only");
        assert_eq!(result.tool_calls, 1, "{name}: its own call only");
        assert!(
            events
                .iter()
                .all(|e| *e.run_id == result.run_id && *e.thread_id == result.session_id),
            "{name}: every event is its run's"
        );
        let text = as_json(events);
        assert!(
            text.contains(&format!("Echo: from {name}")),
            "{name}: {text}"
        );
        assert!(!text.contains(other), "{name} saw {other}'s events: {text}");
    }
    assert_ne!(alpha.0.result.session_id, beta.0.result.session_id);

    // Each session's checkpoints are in its agent's directory, with its own inputs.
    for (dir, ended, name, other) in [
        (&alpha_dir, &alpha.0, "alpha", "beta"),
        (&beta_dir, &beta.0, "beta", "alpha"),
    ] {
        let sessions = dir.join("sessions");
        let kept: Vec<_> = std::fs::read_dir(&sessions)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| !name.starts_with('.'))
            .collect();
        assert_eq!(
            kept,
            std::slice::from_ref(&ended.result.session_id),
            "{name}: {kept:?}"
        );
        let checkpoint = std::fs::read_to_string(
            sessions
                .join(&ended.result.session_id)
                .join("checkpoint.json"),
        )
        .unwrap();
        assert!(
            checkpoint.contains(&format!("\"who\":\"{name}\"")),
            "{checkpoint}"
        );
        assert!(
            !checkpoint.contains(other),
            "{name}'s checkpoint: {checkpoint}"
        );
    }

    // Alpha has a run directory, whose result.json is the handle's result; beta has none.
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(alpha_dir.join("run/result.json")).unwrap())
            .unwrap();
    assert_eq!(written, serde_json::to_value(&alpha.0.result).unwrap());
    assert_eq!(
        alpha.0.run_dir.as_deref(),
        Some(alpha_dir.join("run").as_path())
    );
    assert!(beta.0.run_dir.is_none());
}

#[test]
fn a_cancelled_run_ends_interrupted_while_another_goes_on_and_it_resumes() {
    key();
    let mock = MockServer::start();
    let gamma_calls = Arc::new(AtomicUsize::new(0));
    let calls = gamma_calls.clone();
    mock.route(move |request| match who(request)? {
        // Gamma's first call hangs until the run is cancelled; after the resume it answers.
        "gamma" => Some(match calls.fetch_add(1, Ordering::SeqCst) {
            0 => MockResponse::reply(Reply::text("too late"))
                .split_every(1)
                .chunk_delay(Duration::from_secs(30)),
            _ => MockResponse::reply(Reply::text("gamma resumed")),
        }),
        "alpha" => Some(MockResponse::reply(Reply::text("alpha done"))),
        _ => None,
    });
    let (gamma_dir, alpha_dir) = (workspace("gamma"), workspace("alpha"));
    let gamma = agent_file(&gamma_dir, "gamma", &mock, BODY);
    let alpha = agent_file(&alpha_dir, "alpha", &mock, BODY);

    runtime().block_on(async {
        let gamma = session::start(request(gamma, "gamma", RunSettings::default()))
            .await
            .expect("gamma starts");
        for _ in 0..500 {
            if gamma_calls.load(Ordering::SeqCst) > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            gamma_calls.load(Ordering::SeqCst),
            1,
            "gamma called its model"
        );
        let alpha = session::start(request(alpha, "alpha", RunSettings::default()))
            .await
            .expect("alpha starts");
        gamma.cancel();
        let interrupted = gamma.outcome().await.unwrap();
        assert_eq!(interrupted.result.status, RunStatus::Interrupted);
        assert!(interrupted.resumable);
        let completed = alpha.outcome().await.unwrap();
        assert_eq!(
            completed.result.status,
            RunStatus::Completed,
            "alpha was not cancelled"
        );
        assert_eq!(completed.result.output.as_deref(), Some("alpha done"));

        let session_id = interrupted.result.session_id.clone();
        let resumed = session::resume(ResumeRequest {
            session_id: session_id.clone(),
            run_id: None,
            answer: None,
            branch: None,
            sessions: SessionsAt::Dir(gamma_dir.join("sessions")),
            settings: RunSettings::default(),
        })
        .await
        .expect("the session resumes");
        assert_eq!(resumed.session_id(), session_id);
        let ended = resumed.outcome().await.unwrap();
        assert_eq!(ended.result.status, RunStatus::Completed);
        assert_eq!(ended.result.output.as_deref(), Some("gamma resumed"));
        assert_eq!(ended.result.session_id, session_id);
        assert_ne!(ended.result.run_id, interrupted.result.run_id);
    });
}

#[test]
fn a_subscriber_that_joins_late_gets_every_event_from_the_first() {
    key();
    let mock = MockServer::start();
    mock.route(|request| {
        (who(request)? == "delta").then(|| MockResponse::reply(Reply::text("delta done")))
    });
    let dir = workspace("delta");
    let agent = agent_file(&dir, "delta", &mock, BODY);
    runtime().block_on(async {
        let handle = session::start(request(agent, "delta", RunSettings::default()))
            .await
            .unwrap();
        let mut early = handle.events();
        let first = early.next().await.expect("the run's first event");
        assert_eq!(first.kind(), "agent.run.created");
        // Joins after the first event was delivered, and reads only once the run is over.
        let mut late = handle.events();
        let mut seen = vec![first];
        while let Some(event) = early.next().await {
            seen.push(event);
        }
        let mut replayed = Vec::new();
        while let Some(event) = late.next().await {
            replayed.push(event);
        }
        assert_eq!(replayed, seen);
        assert_eq!(
            seen.last().map(Event::kind),
            Some("thread.run.completed"),
            "{:?}",
            seen.iter().map(Event::kind).collect::<Vec<_>>()
        );
        let ended = handle.outcome().await.unwrap();
        assert_eq!(ended.result.output.as_deref(), Some("delta done"));
        assert_eq!(ended.result.status, RunStatus::Completed);
    });
}

#[test]
fn a_run_that_pauses_for_a_person_is_answered_through_its_handle() {
    key();
    let mock = MockServer::start();
    mock.route(|request| {
        (who(request)? == "alpha").then(|| match after_a_tool(request) {
            false => MockResponse::reply(Reply::tool_call(
                "ask_user",
                json!({"question": "Which file?"}),
            )),
            true => MockResponse::reply(Reply::text("reading the file you named")),
        })
    });
    let dir = workspace("asking");
    let body = format!("{BODY}tools:\n  - builtin: ask_user\n");
    let agent = agent_file(&dir, "alpha", &mock, &body);
    runtime().block_on(async {
        let handle = session::start(request(agent, "alpha", RunSettings::default()))
            .await
            .unwrap();
        let session_id = handle.session_id().to_string();
        // No person and no answers file: the run ends waiting, and the answer resumes it.
        let resumed = handle
            .answer(Answer::Text("notes.txt".into()))
            .await
            .expect("the paused session resumes with the answer");
        assert_eq!(resumed.session_id(), session_id);
        let ended = resumed.outcome().await.unwrap();
        assert_eq!(ended.result.status, RunStatus::Completed);
        assert_eq!(
            ended.result.output.as_deref(),
            Some("reading the file you named")
        );
    });
    let last = mock.requests().pop().unwrap();
    let answered = last
        .conversation()
        .iter()
        .any(|m| m["role"] == "tool" && m["content"].as_str() == Some("notes.txt"));
    assert!(answered, "{:?}", last.conversation());
}

#[test]
fn calls_waiting_for_approval_are_decided_through_the_handle() {
    key();
    let mock = MockServer::start();
    mock.route(|request| {
        (who(request)? == "beta").then(|| match after_a_tool(request) {
            false => MockResponse::reply(Reply::tool_call(
                "write_file",
                json!({"path": "never-written.txt", "content": "no"}),
            )),
            true => MockResponse::reply(Reply::text("understood")),
        })
    });
    let dir = workspace("approving");
    let body =
        format!("{BODY}tools:\n  - builtin: write_file\npermissions:\n  ask: [write_file]\n");
    let agent = agent_file(&dir, "beta", &mock, &body);
    runtime().block_on(async {
        let handle = session::start(request(agent, "beta", RunSettings::default()))
            .await
            .unwrap();
        let waiting = all_events(&handle).await;
        let call = waiting
            .iter()
            .find_map(|event| match &event.data {
                EventData::RequiresAction(action) => {
                    Some(action.required_action.tool_call_id.clone())
                }
                _ => None,
            })
            .expect("the run asks for a decision");
        let decided = Answer::Decide {
            approve: Vec::new(),
            deny: vec![Denial::new(call, Some("not today".into()))],
        };
        let resumed = handle
            .answer(decided)
            .await
            .expect("the decision resumes it");
        let ended = resumed.outcome().await.unwrap();
        assert_eq!(ended.result.status, RunStatus::Completed);
        assert_eq!(ended.result.output.as_deref(), Some("understood"));
    });
    let last = mock.requests().pop().unwrap();
    let denied = last.conversation().iter().any(|m| {
        m["role"] == "tool" && m["content"].as_str() == Some("Error: denied by the user: not today")
    });
    assert!(denied, "{:?}", last.conversation());
    let workspace_file = Path::new(env!("CARGO_MANIFEST_DIR")).join("never-written.txt");
    assert!(!workspace_file.exists());
}

/// A program embedding runner gives the model a tool of its own: the run pauses on the
/// call, and the program submits the output through the handle.
#[test]
fn an_external_tools_output_is_submitted_through_the_handle() {
    key();
    let mock = MockServer::start();
    mock.route(|request| {
        (who(request)? == "gamma").then(|| match after_a_tool(request) {
            false => MockResponse::reply(Reply::tool_call("weather", json!({"city": "Oslo"}))),
            true => MockResponse::reply(Reply::text("Oslo is cold")),
        })
    });
    let dir = workspace("external");
    let body = format!(
        "{BODY}tools:\n  - external:\n      name: weather\n      description: The weather in a city.\n      parameters: {{type: object, properties: {{city: {{type: string}}}}}}\n"
    );
    let agent = agent_file(&dir, "gamma", &mock, &body);
    runtime().block_on(async {
        let handle = session::start(request(agent, "gamma", RunSettings::default()))
            .await
            .unwrap();
        let waiting = all_events(&handle).await;
        let calls = waiting
            .iter()
            .find_map(|event| match &event.data {
                EventData::RequiresAction(action) => {
                    action.required_action.submit_tool_outputs.clone()
                }
                _ => None,
            })
            .expect("the run waits for the tool's output");
        let call = &calls.tool_calls[0];
        assert_eq!(
            (call.name.as_str(), &call.arguments),
            ("weather", &json!({"city": "Oslo"}))
        );
        let output = SubmittedOutput::new(call.id.clone(), json!({"celsius": -3}));
        let resumed = handle
            .answer(Answer::Outputs(vec![output]))
            .await
            .expect("the output resumes it");
        let ended = resumed.outcome().await.unwrap();
        assert_eq!(ended.result.status, RunStatus::Completed);
        assert_eq!(ended.result.output.as_deref(), Some("Oslo is cold"));
    });
    let last = mock.requests().pop().unwrap();
    let told = last
        .conversation()
        .iter()
        .any(|m| m["role"] == "tool" && m["content"].as_str() == Some(r#"{"celsius":-3}"#));
    assert!(told, "{:?}", last.conversation());
}

#[test]
fn a_run_start_hook_refuses_a_run_file_run() {
    key();
    let mock = MockServer::start();
    mock.push(MockResponse::reply(Reply::text("ran anyway")));
    let dir = workspace("hooked");
    let hook = dir.join("start.sh");
    std::fs::write(
        &hook,
        "#!/bin/sh\ncat > /dev/null\nprintf '%s' '{\"decision\": \"deny\", \"reason\": \"the freeze is on\"}'\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let body = format!(
        "prompt: Go\nhooks:\n  run_start:\n    - command: [{}]\n",
        hook.display()
    );
    let agent = agent_file(&dir, "hooked", &mock, &body);

    let refused = runner::RunFile::new(&agent)
        .run()
        .expect_err("the hook refuses the run");
    assert_eq!(refused.code, "hook");
    assert!(
        refused.message.contains("the freeze is on"),
        "{}",
        refused.message
    );
    assert_eq!(mock.request_count(), 0, "no model call");
}
