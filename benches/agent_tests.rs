//! `runner test` on 100 replayed cases of a 5-step agent: the whole command, wall time.
//! The target is under 2 s on the development machine (2 cores).
//!
//! Run: `cargo bench --bench agent_tests`. The cassette is recorded once against the mock
//! model (four `read_file` steps and an answer: five model calls, five steps); then
//! `runner test` replays it in 100 cases, each a `runner exec` child in a fresh workspace
//! with its files laid in and its assertions checked. Prints each of five runs and their
//! median.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use runner::testing::mock_server::{MockServer, Reply};
use serde_json::json;

const CASES: usize = 100;
const RUNS: usize = 5;

fn main() {
    let dir = std::env::temp_dir().join(format!("runner-bench-agent-tests-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mock = MockServer::start();
    std::fs::write(
        dir.join("agent.yaml"),
        format!(
            "name: bench\nmodel: {{ provider: openai, name: mock-model, base_url: \"{}\", api_key_env: BENCH_KEY, retry: {{ max_attempts: 1 }} }}\nprompt: Read the four notes, then answer.\ntools:\n  - builtin: read_file\n",
            mock.openai_base_url()
        ),
    )
    .unwrap();
    record(&mock, &dir);
    std::fs::write(dir.join("bench.test.yaml"), test_file()).unwrap();
    let mut times: Vec<Duration> = (0..RUNS).map(|_| run_tests(&dir)).collect();
    for (run, time) in times.iter().enumerate() {
        println!(
            "run {}: {CASES} cases in {:.3} s",
            run + 1,
            time.as_secs_f64()
        );
    }
    times.sort();
    println!(
        "runner test, {CASES} replayed cases of a 5-step agent: median {:.3} s (target < 2 s)",
        times[RUNS / 2].as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The four notes every case lays into its workspace.
const NOTES: [&str; 4] = ["a.txt", "b.txt", "c.txt", "d.txt"];

/// Records `cassette.jsonl`: one `runner exec --record` in a workspace like a case's.
fn record(mock: &MockServer, dir: &Path) {
    for note in NOTES {
        mock.push(runner::testing::mock_server::MockResponse::reply(
            Reply::tool_call("read_file", json!({ "path": note })),
        ));
    }
    mock.push(runner::testing::mock_server::MockResponse::reply(
        Reply::text("The four notes say: one, two, three, four."),
    ));
    let workspace = dir.join("recording");
    std::fs::create_dir_all(&workspace).unwrap();
    for (index, note) in NOTES.iter().enumerate() {
        std::fs::write(workspace.join(note), format!("note {}", index + 1)).unwrap();
    }
    let status = Command::new(env!("CARGO_BIN_EXE_runner"))
        .arg("exec")
        .arg(dir.join("agent.yaml"))
        .arg("--record")
        .arg(dir.join("cassette.jsonl"))
        .arg("--run-dir")
        .arg(dir.join("recording-run"))
        .arg("--quiet")
        .current_dir(&workspace)
        .env("BENCH_KEY", "not-a-real-key")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "the recording run failed");
}

fn test_file() -> String {
    let mut text = String::from("agent: agent.yaml\ncases:\n");
    for case in 0..CASES {
        text.push_str(&format!(
            "  - name: case-{case}\n    cassette: cassette.jsonl\n    files:\n"
        ));
        for (index, note) in NOTES.iter().enumerate() {
            text.push_str(&format!("      {note}: note {}\n", index + 1));
        }
        text.push_str(
            "    expect:\n      - status: completed\n      - tool_calls: { exactly: [read_file, read_file, read_file, read_file] }\n      - output_contains: four\n      - max_steps: 5\n      - no_tool_errors: true\n",
        );
    }
    text
}

/// One `runner test` of the file, its wall time; every case must pass.
fn run_tests(dir: &Path) -> Duration {
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["test", "bench.test.yaml"])
        .current_dir(dir)
        .env_remove("GITHUB_ACTIONS")
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains(&format!("{CASES} passed, 0 failed")),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    elapsed
}
