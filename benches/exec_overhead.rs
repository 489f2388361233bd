//! End-to-end overhead of `runner exec` against a zero-latency mock model: the runner's own
//! CPU per model call (one tool call per step), and its peak memory as runs grow.
//!
//! Run: `cargo bench --bench exec_overhead` (needs /usr/bin/time). CPU and peak RSS are the
//! runner process's own, so the mock server (in this process) is not counted. The per-call figure is the
//! slope between a 10-step and a 100-step run, which cancels start-up costs. Longer runs
//! cost more per call because every request carries the whole history (the wire format
//! sends it each time); their figures are printed too.

use std::path::Path;
use std::process::Command;

use runner::testing::mock_server::{MockResponse, MockServer, Reply};
use serde_json::json;

/// The runner's own CPU time (user + system, ms) and peak RSS (KiB), read from
/// `/usr/bin/time`, which measures exactly its child. (wait4 from this process would count
/// the pages a fork copies from it, and this process holds the mock's recorded requests.)
fn measured(stderr: &str) -> (f64, i64) {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("runner-usage "))
        .expect("/usr/bin/time output");
    let fields: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    ((fields[0] + fields[1]) * 1000.0, fields[2] as i64)
}

/// `steps` model calls of one tool call each.
fn run(steps: usize, dir: &Path) -> (f64, i64) {
    let replies = (0..steps).map(|_| Reply::tool_call("read_file", json!({"path": "notes.txt"})));
    exec(replies.collect(), "", dir)
}

/// One reply with `calls` tool calls, all allowed to run: the bookkeeping of a turn
/// (scheduling, events, transcript) must stay linear in its calls.
fn run_wide(calls: usize, dir: &Path) -> (f64, i64) {
    let reply = (1..calls).fold(
        Reply::tool_call("read_file", json!({"path": "notes.txt"})),
        |reply, _| reply.with_tool_call("read_file", json!({"path": "notes.txt"})),
    );
    let execution = format!("execution: {{ max_calls_per_turn: {calls} }}\n");
    exec(vec![reply], &execution, dir)
}

/// Runs `runner exec` over these replies, then "done"; `extra` goes into the agent file.
fn exec(replies: Vec<Reply>, extra: &str, dir: &Path) -> (f64, i64) {
    let mock = MockServer::start();
    for reply in replies {
        mock.push(MockResponse::reply(reply));
    }
    mock.push(MockResponse::text("done"));
    let agent = format!(
        "name: bench\nmodel: {{ provider: openai, name: m, base_url: \"{}\", api_key_env: BENCH_KEY }}\nprompt: Go\n{extra}tools:\n  - builtin: read_file\n",
        mock.openai_base_url()
    );
    std::fs::write(dir.join("agent.yaml"), agent).unwrap();
    // RUNNER_BENCH_WRAP="valgrind --tool=callgrind" profiles the runner.
    let wrap = std::env::var("RUNNER_BENCH_WRAP").unwrap_or_default();
    let output = Command::new("/usr/bin/time")
        .args(["-f", "runner-usage %U %S %M"])
        .args(wrap.split_whitespace())
        .arg(env!("CARGO_BIN_EXE_runner"))
        .args(["exec", "agent.yaml", "--quiet", "--run-dir", "run"])
        .current_dir(dir)
        .env("BENCH_KEY", "not-a-key")
        .output()
        .expect("/usr/bin/time runs (Debian package `time`)");
    assert!(output.status.success(), "the run failed");
    measured(&String::from_utf8_lossy(&output.stderr))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("exec_overhead: bench");
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-exec");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    let mut results = Vec::new();
    let sizes: Vec<usize> = match std::env::var("RUNNER_BENCH_STEPS") {
        Ok(list) => list
            .split(',')
            .filter_map(|n| n.trim().parse().ok())
            .collect(),
        Err(_) => vec![10, 100, 300, 1000],
    };
    for &steps in &sizes {
        // Best of three: the machine is shared.
        let best = (0..3)
            .map(|_| run(steps, &dir))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .unwrap();
        println!(
            "exec {steps:>5} steps: cpu {:>8.1} ms ({:.3} ms per step), peak rss {:>7} KiB",
            best.0,
            best.0 / steps as f64,
            best.1
        );
        results.push((steps, best.0));
    }
    let (short_steps, short_cpu) = results[0];
    let (long_steps, long_cpu) = results[results.len().min(2) - 1];
    let per_call = (long_cpu - short_cpu) / (long_steps - short_steps) as f64;
    println!(
        "runner CPU per model call (slope {short_steps}→{long_steps} steps): {:.3} ms",
        per_call
    );
    for calls in [1_000, 10_000] {
        let (cpu, rss) = run_wide(calls, &dir);
        println!(
            "one reply with {calls:>6} tool calls: cpu {cpu:>8.1} ms ({:.3} ms per call), peak rss {rss:>7} KiB",
            cpu / calls as f64
        );
    }
}
