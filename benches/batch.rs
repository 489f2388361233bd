//! `runner batch` on one machine: 200 one-step inputs (one model call each, answered at
//! once by the mock), `-j 2` on the development machine's two cores. Reports the whole
//! command's wall time and inputs per second, the median of five runs, each in a fresh
//! batch directory. Each input is a `runner exec` child, so this is mostly process start,
//! the run, and the batch's bookkeeping (`results.jsonl`, its ledger, progress).
//!
//! Run: `cargo bench --bench batch`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use runner::testing::mock_server::{MockResponse, MockServer, Reply};

const INPUTS: usize = 200;
const RUNS: usize = 5;

fn main() {
    let dir = std::env::temp_dir().join(format!("runner-bench-batch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mock = MockServer::start();
    mock.answer_only()
        .route(|_| Some(MockResponse::reply(Reply::text("done"))));
    std::fs::write(
        dir.join("agent.yaml"),
        format!(
            "name: bench\nmodel: {{ provider: openai, name: mock-model, base_url: \"{}\", api_key_env: BENCH_KEY, retry: {{ max_attempts: 1 }} }}\ninputs:\n  n: {{ type: integer }}\nprompt: Say done to {{{{ n }}}}.\n",
            mock.openai_base_url()
        ),
    )
    .unwrap();
    let inputs: String = (0..INPUTS).map(|n| format!("{{\"n\": {n}}}\n")).collect();
    std::fs::write(dir.join("inputs.jsonl"), inputs).unwrap();
    let mut times: Vec<Duration> = (0..RUNS).map(|run| batch(&dir, run)).collect();
    for (run, time) in times.iter().enumerate() {
        println!(
            "run {}: {INPUTS} inputs in {:.3} s",
            run + 1,
            time.as_secs_f64()
        );
    }
    times.sort();
    let median = times[RUNS / 2].as_secs_f64();
    println!(
        "runner batch, {INPUTS} one-step inputs, -j 2: median {median:.3} s, {:.0} inputs/s",
        INPUTS as f64 / median
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// One whole `runner batch`, in batch directory `run-N`; panics unless every input completed.
fn batch(dir: &std::path::Path, run: usize) -> Duration {
    let started = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["batch", "agent.yaml", "--inputs", "inputs.jsonl", "-j", "2"])
        .args(["--progress", "none", "--batch-dir", &format!("run-{run}")])
        .args(["--batch-id", &format!("bench-{run}")])
        .current_dir(dir)
        .env("BENCH_KEY", "not-a-real-key")
        .stdout(Stdio::null())
        .status()
        .expect("runner batch starts");
    let elapsed = started.elapsed();
    if !status.success() {
        let results = std::fs::read_to_string(dir.join(format!("run-{run}/results.jsonl")));
        let failed = results.unwrap_or_default();
        let first = failed.lines().find(|line| !line.contains("\"completed\""));
        panic!("the batch failed ({status}); first input that did not complete: {first:?}");
    }
    elapsed
}
