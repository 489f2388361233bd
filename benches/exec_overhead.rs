//! End-to-end overhead of `runner exec` against a zero-latency mock model: the runner's own
//! CPU per model call (one tool call per step), and its peak memory as runs grow.
//!
//! Run: `cargo bench --bench exec_overhead` (needs /usr/bin/time; strace for the sync
//! count). CPU and peak RSS are the runner process's own, so the mock server (in this
//! process) is not counted. Each size runs with checkpoints on (the default) and off, and
//! with OpenTelemetry export on (checkpoints on; a stand-in collector in this process); the
//! per-call figures are slopes between sizes (10→60 and 300→1000), which cancel start-up
//! costs, and their ratio shows whether the cost per call grows with the run. Also printed:
//! the session's bytes on disk, the wall time per step, and the syncs per step (strace).

use std::path::Path;
use std::process::Command;

use runner::testing::mock_server::{MockResponse, MockServer, Reply};
use serde_json::json;

/// The runner's own CPU time (user + system, ms, in 10 ms steps) and peak RSS (KiB), read
/// from `/usr/bin/time`, which measures exactly its child. (The RSS wait4 reports from this
/// process would count the pages a fork copies from it, and this process holds the mock's
/// recorded requests.)
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

/// What one run measured.
#[derive(Debug, Clone, Copy)]
struct Measured {
    cpu_ms: f64,
    rss_kib: i64,
    wall_ms: f64,
}

/// `steps` model calls of one tool call each; `extra` goes into the agent file, `env` into
/// the runner's environment.
fn run(steps: usize, extra: &str, env: &[(String, String)], dir: &Path) -> Measured {
    let replies = (0..steps).map(|_| Reply::tool_call("list_dir", json!({"path": "."})));
    exec(replies.collect(), extra, env, dir)
}

/// One reply with `calls` tool calls, all allowed to run: the bookkeeping of a turn
/// (scheduling, events, transcript) must stay linear in its calls.
fn run_wide(calls: usize, dir: &Path) -> Measured {
    let reply = (1..calls).fold(
        Reply::tool_call("list_dir", json!({"path": "."})),
        |reply, _| reply.with_tool_call("list_dir", json!({"path": "."})),
    );
    let execution = format!("execution: {{ max_calls_per_turn: {calls} }}\n");
    exec(vec![reply], &execution, &[], dir)
}

/// Runs `runner exec` over these replies, then "done"; `extra` goes into the agent file.
fn exec(replies: Vec<Reply>, extra: &str, env: &[(String, String)], dir: &Path) -> Measured {
    let mock = MockServer::start();
    // Keeping a thousand parsed requests of a whole history each made the mock, not the
    // runner, the slow side, and its work (a gigabyte) evicted the runner's from the caches.
    mock.answer_only();
    for reply in replies {
        mock.push(MockResponse::reply(reply));
    }
    mock.push(MockResponse::text("done"));
    let agent = format!(
        "name: bench\nmodel: {{ provider: openai, name: m, base_url: \"{}\", api_key_env: BENCH_KEY }}\nprompt: Go\n{extra}tools:\n  - builtin: list_dir\n",
        mock.openai_base_url()
    );
    std::fs::write(dir.join("agent.yaml"), agent).unwrap();
    // RUNNER_BENCH_WRAP="valgrind --tool=callgrind" profiles the runner.
    let wrap = std::env::var("RUNNER_BENCH_WRAP").unwrap_or_default();
    let _ = std::fs::remove_dir_all(dir.join(".runner"));
    let started = std::time::Instant::now();
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait4 in `reap`, which also reads its CPU time"
    )]
    let mut child = Command::new("/usr/bin/time")
        .args(["-f", "runner-usage %U %S %M"])
        .args(wrap.split_whitespace())
        .arg(env!("CARGO_BIN_EXE_runner"))
        .args(["exec", "agent.yaml", "--quiet", "--run-dir", "run"])
        .current_dir(dir)
        .env("BENCH_KEY", "not-a-key")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("/usr/bin/time runs (Debian package `time`)");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    let (success, cpu_ms) = reap(child.id());
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    assert!(success, "the run failed: {stderr}");
    assert!(
        !stderr.contains("OpenTelemetry"),
        "the export failed: {stderr}"
    );
    // /usr/bin/time prints CPU in 10 ms steps; wait4 counts microseconds (of the runner and
    // of /usr/bin/time itself, which is negligible). The peak RSS is the runner's own.
    let (_, rss_kib) = measured(&stderr);
    Measured {
        cpu_ms,
        rss_kib,
        wall_ms,
    }
}

/// Waits for process `pid`: whether it succeeded, and the CPU (user + system, ms) it and
/// its children used.
fn reap(pid: u32) -> (bool, f64) {
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid, and wait4 writes into both out-parameters.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid as libc::pid_t, "wait4");
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    let success = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    (success, ms(usage.ru_utime) + ms(usage.ru_stime))
}

/// The bytes under `dir` (a session's files).
fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => bytes_under(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

/// The fsync and fdatasync calls of a run of `steps` steps, counted by strace (`None`
/// without strace).
fn syncs(steps: usize, dir: &Path) -> Option<usize> {
    let mock = MockServer::start();
    for _ in 0..steps {
        mock.push(MockResponse::reply(Reply::tool_call(
            "list_dir",
            json!({"path": "."}),
        )));
    }
    mock.push(MockResponse::text("done"));
    let agent = format!(
        "name: bench\nmodel: {{ provider: openai, name: m, base_url: \"{}\", api_key_env: BENCH_KEY }}\nprompt: Go\ntools:\n  - builtin: list_dir\n",
        mock.openai_base_url()
    );
    std::fs::write(dir.join("agent.yaml"), agent).unwrap();
    let _ = std::fs::remove_dir_all(dir.join(".runner"));
    let output = Command::new("strace")
        .args(["-f", "-e", "trace=fsync,fdatasync", "-o", "strace.log"])
        .arg(env!("CARGO_BIN_EXE_runner"))
        .args(["exec", "agent.yaml", "--quiet", "--run-dir", "run"])
        .current_dir(dir)
        .env("BENCH_KEY", "not-a-key")
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let log = std::fs::read_to_string(dir.join("strace.log")).ok()?;
    Some(log.lines().filter(|l| l.contains("sync(")).count())
}

/// A stand-in OTLP/HTTP collector on loopback that answers every request `200 OK` (its
/// work is not the runner's, which is what is measured); its address.
fn collector() -> std::net::SocketAddr {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut stream = stream;
                // One request after another on the connection: head, body, answer.
                loop {
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(value) = lower.strip_prefix("content-length:") {
                            length = value.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if stream.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    address
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
    let sizes: Vec<usize> = match std::env::var("RUNNER_BENCH_STEPS") {
        Ok(list) => list
            .split(',')
            .filter_map(|n| n.trim().parse().ok())
            .collect(),
        Err(_) => vec![10, 60, 300, 1000],
    };
    // OpenTelemetry export (checkpoints on) to a collector that takes every batch.
    let otel = [(
        "OTEL_EXPORTER_OTLP_ENDPOINT".to_string(),
        format!("http://{}", collector()),
    )];
    for (label, extra, env) in [
        ("checkpoints on ", "", &[][..]),
        ("checkpoints off", "checkpoints: false\n", &[][..]),
        ("otel export on ", "", &otel[..]),
    ] {
        let mut results = Vec::new();
        for &steps in &sizes {
            // Best of three: the machine is shared.
            let best = (0..3)
                .map(|_| run(steps, extra, env, &dir))
                .min_by(|a, b| a.cpu_ms.total_cmp(&b.cpu_ms))
                .unwrap();
            let disk = bytes_under(&dir.join(".runner/sessions"));
            println!(
                "{label} {steps:>5} steps: cpu {:>8.1} ms ({:.3} ms/step), wall {:>8.1} ms ({:.3} ms/step), \
                 peak rss {:>6} KiB, session {:>9} bytes ({} per step)",
                best.cpu_ms,
                best.cpu_ms / steps as f64,
                best.wall_ms,
                best.wall_ms / steps as f64,
                best.rss_kib,
                disk,
                disk / steps as u64
            );
            results.push((steps, best.cpu_ms));
        }
        let slope = |a: (usize, f64), b: (usize, f64)| (b.1 - a.1) / (b.0 - a.0) as f64;
        for pair in results.windows(2) {
            println!(
                "{label} cpu per model call {}→{}: {:.3} ms",
                pair[0].0,
                pair[1].0,
                slope(pair[0], pair[1])
            );
        }
    }
    match syncs(10, &dir) {
        Some(count) => println!("syncs in a 10-step run (checkpoints on): {count}"),
        None => println!("syncs: strace is not available"),
    }
    for calls in [1_000, 10_000] {
        let wide = run_wide(calls, &dir);
        println!(
            "one reply with {calls:>6} tool calls: cpu {:>8.1} ms ({:.3} ms per call), peak rss {:>7} KiB",
            wide.cpu_ms,
            wide.cpu_ms / calls as f64,
            wide.rss_kib
        );
    }
}
