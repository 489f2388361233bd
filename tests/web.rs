//! The web view of `runner serve` in a real browser: headless Chromium (Debian's `chromium`
//! and `chromium-driver`), driven by tests/web/drive.py over WebDriver, against a server
//! started through the binary with the mock model and a token the page asks for. Every
//! wait is bounded.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use runner::testing::mock_server::{MockResponse, Reply};
use serde_json::{Value, json};
use support::http::Api;
use support::{Test, read_json, root};

/// An agent with an input, a sub-agent and a call that asks for approval.
const AGENT: &str = "name: web-agent
description: Finds a note, then files it.
model: $MODEL
inputs:
  topic: { type: string, required: true, description: What to look for }
prompt: \"Look for {{ topic }}\"
tools:
  - name: helper
    description: Reads the notes.
    parameters: { type: object, properties: { task: { type: string } }, required: [task] }
    agent: ./helper.yaml
  - builtin: shell
    allow: [touch]
permissions:
  ask: [shell]
";

const HELPER: &str = "name: helper
model: $MODEL
prompt: Go
tools:
  - builtin: read_file
";

/// An agent that hands the conversation over to one that asks a question.
const DESK: &str = "name: desk
description: Hands a note over to be filed.
model: $MODEL
prompt: File the note
handoffs:
  - name: transfer_to_filer
    description: Files notes.
    agent: ./filer.yaml
";

const FILER: &str = "name: filer
model: $MODEL
tools:
  - builtin: ask_user
";

/// The server's token: the page asks for it.
const TOKEN: &str = "a-token-typed-into-the-page";

/// How long the browser's whole script may take.
const DRIVE_LIMIT: Duration = Duration::from_secs(180);

#[test]
fn the_web_view_starts_follows_answers_and_reopens_a_run() {
    let test = Test::new()
        .file("agent.yaml", AGENT)
        .file("helper.yaml", HELPER)
        .file("notes.txt", "remember the milk")
        .file("desk.yaml", DESK)
        .file("filer.yaml", FILER)
        .reply(Reply::tool_call("helper", json!({"task": "find the note"})))
        .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
        // Streamed slowly: the run is live while the page shows its calls.
        .respond(
            MockResponse::text("The note says: remember the milk, and nothing else at all.")
                .chunk_delay(Duration::from_millis(700)),
        )
        .reply(Reply::tool_call(
            "shell",
            json!({"command": "touch APPROVED"}),
        ))
        .reply(Reply::text("All done: the milk is noted."))
        .reply(Reply::tool_call(
            "transfer_to_filer",
            json!({"reason": "filing"}),
        ))
        .reply(Reply::tool_call(
            "ask_user",
            json!({"question": "Which shelf?"}),
        ))
        .reply(Reply::text("Filed on the top shelf."));
    let mut running = test
        .env("SERVE_TOKEN", TOKEN)
        .command_vec(
            [
                "serve",
                ".",
                "--listen",
                "127.0.0.1:0",
                "--token-env",
                "SERVE_TOKEN",
            ]
            .map(String::from)
            .to_vec(),
        )
        .any_stderr()
        .time_limit(Duration::from_secs(240))
        .spawn();
    let port = running.listening_port();
    Api::new(port).wait_up();
    let shots = root().join("target/web-screenshots");
    let seen = drive(&format!("http://127.0.0.1:{port}/"), &shots);
    let runs: Vec<&str> = seen["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run.as_str().unwrap())
        .collect();
    assert_eq!(runs.len(), 2, "{seen}");
    let result = |run: &str| read_json(&running.path(&format!(".runner/runs/{run}/result.json")));
    assert_eq!(result(runs[0])["status"], "input_required");
    assert_eq!(result(runs[1])["status"], "completed");
    assert_eq!(result(runs[1])["output"], "All done: the milk is noted.");
    assert!(
        running.path("APPROVED").exists(),
        "the call approved in the page ran"
    );
    let desk: Vec<&str> = seen["desk"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run.as_str().unwrap())
        .collect();
    assert_eq!(desk.len(), 2, "{seen}");
    assert_eq!(result(desk[0])["status"], "input_required");
    assert_eq!(result(desk[1])["output"], "Filed on the top shelf.");
    for shot in ["live-run.png", "past-run.png"] {
        let png = std::fs::read(shots.join(shot)).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{shot} is a PNG");
    }
}

/// Runs tests/web/drive.py against the page; what it saw (its JSON line).
fn drive(url: &str, shots: &Path) -> Value {
    let mut child = Command::new("python3")
        .arg(root().join("tests/web/drive.py"))
        .args([url, &shots.display().to_string(), "web-agent", TOKEN])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs tests/web/drive.py");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > DRIVE_LIMIT {
            let _ = child.kill();
            panic!("the browser's script ran over {DRIVE_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the browser's script failed (see {}/failure.png): {}{}",
        shots.display(),
        stdout,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}
