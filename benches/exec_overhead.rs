//! End-to-end overhead of `runner exec` against a zero-latency mock model: the runner's own
//! CPU per model call (one tool call per step), and its peak memory as runs grow.
//!
//! Run: `cargo bench --bench exec_overhead` (strace for the syscall and sync counts). CPU
//! and peak RSS are the runner process's own (`--measure`, below), so neither the mock
//! server (in this process) nor the bench is counted. The series: checkpoints on (the
//! default) against a mock that keeps the connection alive, the same against a mock that
//! answers `Connection: close` and closes after each reply (as many servers do),
//! checkpoints off, OpenTelemetry export on (checkpoints on; a stand-in collector in
//! this process), and a model whose context window is known (the history's size is
//! estimated before each call). The runs are interleaved (each round runs every series at every size
//! once), `RUNNER_BENCH_ROUNDS` rounds (default 5), and each figure is the median over the
//! rounds, so a burst of load from elsewhere on the machine hits every series alike. The
//! per-call figures are slopes between sizes (10→60 and 300→1000), which cancel start-up
//! costs, and their ratio shows whether the cost per call grows with the run. Also printed:
//! a one-step run's CPU, the session's bytes on disk, the wall time per step, the syscalls
//! per step (`strace -c -f`, the slope between a 10- and a 60-step run) and the syncs of a
//! 10-step run. `RUNNER_BENCH_BASELINE=BIN` adds the first two series run by another build,
//! interleaved with this one's (before/after figures). Each build runs from a copy written
//! at the start ([`fresh_copy`]), so the page cache holds both the same way.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use runner::testing::mock_server::{MockResponse, MockServer, Reply};
use serde_json::json;

/// The runner's own CPU time (user + system, ms) and peak RSS (KiB), from the
/// `runner-usage CPU RSS` line that [`measure`] prints.
fn measured(stderr: &str) -> (f64, i64) {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("runner-usage "))
        .expect("the usage line of --measure");
    let fields: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    (fields[0], fields[1] as i64)
}

/// `--measure PROGRAM ARGS...`: runs the program as this process's only child, prints its
/// CPU time (user + system, ms, to the microsecond) and peak RSS (KiB) from `wait4` as
/// `runner-usage CPU RSS` on stderr, and exits as it did. Runs are started through this
/// small process (this binary, started anew): a program started from the bench itself would
/// report the bench's peak RSS as its own floor (Linux carries it across `exec`), and
/// `/usr/bin/time`, which did this before, prints CPU in 10 ms steps and its own CPU (about
/// 0.9 ms) was counted with the runner's.
fn measure(args: &[String]) -> ! {
    let at = args.iter().position(|a| a == "--measure").unwrap();
    let (program, rest) = (&args[at + 1], &args[at + 2..]);
    let child = Command::new(program)
        .args(rest)
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    let (status, usage) = wait4(child.id());
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    let cpu = ms(usage.ru_utime) + ms(usage.ru_stime);
    eprintln!("runner-usage {cpu:.3} {}", usage.ru_maxrss);
    let code = match libc::WIFEXITED(status) {
        true => libc::WEXITSTATUS(status),
        false => 1,
    };
    std::process::exit(code)
}

/// Waits for process `pid`: its wait status and the resources it and its children used.
fn wait4(pid: u32) -> (i32, libc::rusage) {
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid, and wait4 writes into both out-parameters.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid as libc::pid_t, "wait4");
    (status, usage)
}

/// What one run measured.
#[derive(Debug, Clone, Copy)]
struct Measured {
    cpu_ms: f64,
    rss_kib: i64,
    wall_ms: f64,
}

/// `steps` model calls of one tool call each, run as `series` says.
fn run(steps: usize, series: &Series, dir: &Path) -> Measured {
    let replies = (0..steps).map(|_| Reply::tool_call("list_dir", json!({"path": "."})));
    exec(replies.collect(), series, dir)
}

/// One way of running the workload.
struct Series {
    label: &'static str,
    /// Goes into the agent file.
    extra: String,
    /// Goes into the agent file's `model` mapping.
    model_extra: String,
    /// More entries of the agent file's `tools`, after `list_dir`.
    tools_extra: String,
    /// The runner's environment.
    env: Vec<(String, String)>,
    /// Whether the mock answers `Connection: close` and closes after each reply.
    closing: bool,
    /// The runner binary.
    bin: String,
}

impl Series {
    fn new(label: &'static str, extra: &str, closing: bool) -> Self {
        Series {
            label,
            extra: extra.to_string(),
            model_extra: String::new(),
            tools_extra: String::new(),
            env: Vec::new(),
            closing,
            bin: runner_bin(),
        }
    }

    /// The same series run by another binary.
    fn with_bin(mut self, label: &'static str, bin: &str) -> Self {
        self.label = label;
        self.bin = bin.to_string();
        self
    }
}

/// Twenty external tools the model never calls, each with a schema of three parameters:
/// an agent offering the tools of an MCP server or two.
fn twenty_tools() -> String {
    (1..=20)
        .map(|n| {
            format!(
                "  - external:\n      name: ticket_tool_{n}\n      description: Looks up a ticket in the tracker and returns its title, state, assignee, labels and last comments.\n      parameters:\n        type: object\n        properties:\n          ticket: {{ type: string, description: \"The ticket's key, such as PROJ-123.\" }}\n          fields: {{ type: array, items: {{ type: string, enum: [title, state, assignee, labels, comments] }} }}\n          comments: {{ type: integer, minimum: 0, maximum: 50 }}\n        required: [ticket]\n"
            )
        })
        .collect()
}

/// One reply with `calls` tool calls, all allowed to run: the bookkeeping of a turn
/// (scheduling, events, transcript) must stay linear in its calls.
fn run_wide(calls: usize, dir: &Path) -> Measured {
    let reply = (1..calls).fold(
        Reply::tool_call("list_dir", json!({"path": "."})),
        |reply, _| reply.with_tool_call("list_dir", json!({"path": "."})),
    );
    let execution = format!("execution: {{ max_calls_per_turn: {calls} }}\n");
    exec(vec![reply], &Series::new("wide", &execution, false), dir)
}

/// A mock that answers these replies, then "done", and the agent file that points at it.
fn mock_and_agent(replies: Vec<Reply>, series: &Series, dir: &Path) -> MockServer {
    let mock = MockServer::start();
    // Keeping a thousand parsed requests of a whole history each made the mock, not the
    // runner, the slow side, and its work (a gigabyte) evicted the runner's from the caches.
    mock.answer_only();
    if series.closing {
        mock.connection_close();
    }
    for reply in replies {
        mock.push(MockResponse::reply(reply));
    }
    mock.push(MockResponse::text("done"));
    let agent = format!(
        "name: bench\nmodel: {{ provider: openai, name: m, base_url: \"{}\", api_key_env: BENCH_KEY{} }}\nprompt: Go\n{}tools:\n  - builtin: list_dir\n{}",
        mock.openai_base_url(),
        series.model_extra,
        series.extra,
        series.tools_extra
    );
    std::fs::write(dir.join("agent.yaml"), agent).unwrap();
    let _ = std::fs::remove_dir_all(dir.join(".runner"));
    mock
}

/// Runs `runner exec` over these replies, then "done".
fn exec(replies: Vec<Reply>, series: &Series, dir: &Path) -> Measured {
    let _mock = mock_and_agent(replies, series, dir);
    // RUNNER_BENCH_WRAP="valgrind --tool=callgrind" profiles the runner.
    let wrap = std::env::var("RUNNER_BENCH_WRAP").unwrap_or_default();
    let started = std::time::Instant::now();
    let output = Command::new(std::env::current_exe().expect("the bench's own path"))
        .arg("--measure")
        .args(wrap.split_whitespace())
        .arg(&series.bin)
        .args(["exec", "agent.yaml", "--quiet", "--run-dir", "run"])
        .current_dir(dir)
        .env("BENCH_KEY", "not-a-key")
        .envs(series.env.iter().map(|(k, v)| (k, v)))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("the bench runs itself with --measure");
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the run failed: {stderr}");
    assert!(
        !stderr.contains("OpenTelemetry"),
        "the export failed: {stderr}"
    );
    let (cpu_ms, rss_kib) = measured(&stderr);
    Measured {
        cpu_ms,
        rss_kib,
        wall_ms,
    }
}

/// The runner measured: this build's, or `RUNNER_BENCH_BIN` (another build), as a fresh copy.
fn runner_bin() -> String {
    static COPY: OnceLock<String> = OnceLock::new();
    let bin = || {
        std::env::var("RUNNER_BENCH_BIN")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_runner").to_string())
    };
    COPY.get_or_init(|| fresh_copy(&bin(), "runner")).clone()
}

/// `bin` copied to a file just written under the bench's directory; its path. Peak RSS
/// counts the binary's pages a run maps, and how many a page fault maps along with the one
/// it needs depends on how the file's pages came into the page cache: an older build's
/// file measured over 1 MiB less than the same bytes just written (with the cache dropped,
/// the two measured alike). Both builds written anew the same way compare on their own
/// memory.
fn fresh_copy(bin: &str, name: &str) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-bin");
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join(name);
    let _ = std::fs::remove_file(&copy);
    let bytes = std::fs::read(bin).unwrap_or_else(|e| panic!("{bin}: {e}"));
    std::fs::write(&copy, bytes).unwrap();
    std::fs::set_permissions(&copy, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    copy.display().to_string()
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

/// Each system call of a run of `steps` steps and how often the runner made it (its
/// threads included), counted by `strace -c -f` (`None` without strace).
fn syscalls(steps: usize, series: &Series, dir: &Path) -> Option<Vec<(String, u64)>> {
    let replies = (0..steps).map(|_| Reply::tool_call("list_dir", json!({"path": "."})));
    let _mock = mock_and_agent(replies.collect(), series, dir);
    // Beside the directory the agent lists, not in it: a file more to list is a `statx` more
    // per step.
    let log_path = dir.with_extension("strace.log");
    let output = Command::new("strace")
        .args(["-c", "-f", "-o"])
        .arg(&log_path)
        .arg(&series.bin)
        .args(["exec", "agent.yaml", "--quiet", "--run-dir", "run"])
        .current_dir(dir)
        .env("BENCH_KEY", "not-a-key")
        .envs(series.env.iter().map(|(k, v)| (k, v)))
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let log = std::fs::read_to_string(&log_path).ok()?;
    Some(strace_counts(&log))
}

/// The (syscall, calls) rows of an `strace -c` table.
fn strace_counts(table: &str) -> Vec<(String, u64)> {
    table
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // % time, seconds, usecs/call, calls, [errors,] syscall
            let name = *fields.last()?;
            let calls = fields.get(3)?.parse().ok()?;
            (name != "total" && fields[0].parse::<f64>().is_ok()).then(|| (name.to_string(), calls))
        })
        .collect()
}

/// Prints the syscalls per step of `series`: the difference between a `long` and a
/// `short` run, per step, the largest first.
fn report_syscalls(series: &Series, dir: &Path) {
    let (short, long) = (10, 60);
    let (Some(a), Some(b)) = (syscalls(short, series, dir), syscalls(long, series, dir)) else {
        println!("{} syscalls: strace is not available", series.label);
        return;
    };
    let count = |rows: &[(String, u64)], name: &str| {
        rows.iter().find(|(n, _)| n == name).map_or(0, |(_, c)| *c) as f64
    };
    let mut per_step: Vec<(String, f64)> = b
        .iter()
        .map(|(name, _)| {
            let delta = count(&b, name) - count(&a, name);
            (name.clone(), delta / (long - short) as f64)
        })
        .filter(|(_, n)| *n >= 0.05)
        .collect();
    per_step.sort_by(|x, y| y.1.total_cmp(&x.1));
    let total: f64 = per_step.iter().map(|(_, n)| n).sum();
    let top: Vec<String> = per_step
        .iter()
        .take(12)
        .map(|(name, n)| format!("{name} {n:.1}"))
        .collect();
    println!(
        "{} syscalls per step ({short}→{long} steps, strace -c -f): {total:.1}: {}",
        series.label,
        top.join(", ")
    );
    let syncs = count(&a, "fsync") + count(&a, "fdatasync");
    println!("{} syncs in a {short}-step run: {syncs}", series.label);
}

/// The median of `values` (not empty).
/// The runs of one series: `[size][round]`, each with its session's bytes on disk.
type Runs = [Vec<(Measured, u64)>];

/// Series `a` against series `b`, round by round: for each pair of sizes, the median over
/// the rounds of the ratio of their CPU per model call. Far steadier than the ratio of the
/// medians when the load changes from round to round, as the two runs of a round share it.
fn report_paired(label: &str, a: &Runs, b: &Runs, sizes: &[usize]) {
    for i in 0..sizes.len().saturating_sub(1) {
        let (from, to) = (sizes[i], sizes[i + 1]);
        if from < 10 {
            continue;
        }
        let slope = |runs: &Runs, round: usize| {
            (runs[i + 1][round].0.cpu_ms - runs[i][round].0.cpu_ms) / (to - from) as f64
        };
        let ratios = (0..a[i].len()).map(|round| slope(a, round) / slope(b, round));
        let change = (median(ratios.collect()) - 1.0) * 100.0;
        println!("{label}, cpu per model call {from}→{to}: {change:+.0} % (median of the rounds)");
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n % 2 {
        1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
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

/// `--mock STEPS [--closing]`: serves the workload's mock (STEPS tool-call replies, then
/// "done", again and again for as many runs as ask) and prints its OpenAI base URL, until
/// stdin closes: for strace, perf and the peers in `benches/peers/`.
fn serve_mock(args: &[String]) {
    let steps: usize = args
        .iter()
        .skip_while(|a| *a != "--mock")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("--mock STEPS");
    let mock = MockServer::start();
    mock.forget_requests();
    if args.iter().any(|a| a == "--closing") {
        mock.connection_close();
    }
    // A request whose history holds STEPS tool results gets "done"; any other a tool call.
    mock.route(move |request| {
        let results = request
            .body
            .get("messages")
            .and_then(|m| m.as_array())
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
        Some(match results >= steps {
            true => MockResponse::text("done"),
            false => MockResponse::reply(Reply::tool_call("list_dir", json!({"path": "."}))),
        })
    });
    println!("{}", mock.openai_base_url());
    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new());
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        println!("exec_overhead: bench");
        return;
    }
    if args.iter().any(|a| a == "--mock") {
        return serve_mock(&args);
    }
    if args.iter().any(|a| a == "--measure") {
        measure(&args);
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
        Err(_) => vec![1, 10, 60, 300, 1000],
    };
    let rounds: usize = std::env::var("RUNNER_BENCH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5)
        .max(1);
    // OpenTelemetry export (checkpoints on) to a collector that takes every batch.
    let mut otel = Series::new("otel export on  ", "", false);
    otel.env = vec![(
        "OTEL_EXPORTER_OTLP_ENDPOINT".to_string(),
        format!("http://{}", collector()),
    )];
    // A model whose context window is known: the history is estimated before each call.
    let mut window = Series::new("window known    ", "", false);
    window.model_extra = ", context_window: 1000000".to_string();
    // An agent that offers twenty more tools, which the model never calls.
    let mut tools = Series::new("twenty tools    ", "", false);
    tools.tools_extra = twenty_tools();
    let mut series = vec![
        Series::new("keep-alive      ", "", false),
        Series::new("closing         ", "", true),
        Series::new("checkpoints off ", "checkpoints: false\n", false),
        otel,
        window,
        tools,
    ];
    // RUNNER_BENCH_BASELINE=BIN: the first two series again with another build, each of its
    // runs next to this build's, so both see the same load.
    if let Ok(baseline) = std::env::var("RUNNER_BENCH_BASELINE") {
        let baseline = fresh_copy(&baseline, "runner-baseline");
        let keep_alive = Series::new("", "", false).with_bin("baseline keep-al", &baseline);
        let closing = Series::new("", "", true).with_bin("baseline closing", &baseline);
        series.extend([keep_alive, closing]);
    }
    // measured[series][size]: one run per round.
    let mut measured = vec![vec![Vec::new(); sizes.len()]; series.len()];
    for _ in 0..rounds {
        for (s, one) in series.iter().enumerate() {
            for (i, &steps) in sizes.iter().enumerate() {
                let result = run(steps, one, &dir);
                let disk = bytes_under(&dir.join(".runner/sessions"));
                measured[s][i].push((result, disk));
            }
        }
    }
    for (s, one) in series.iter().enumerate() {
        let label = one.label;
        let mut results = Vec::new();
        for (i, &steps) in sizes.iter().enumerate() {
            let runs = &measured[s][i];
            let cpu = median(runs.iter().map(|(m, _)| m.cpu_ms).collect());
            let wall = median(runs.iter().map(|(m, _)| m.wall_ms).collect());
            let rss = median(runs.iter().map(|(m, _)| m.rss_kib as f64).collect());
            let disk = runs[0].1;
            println!(
                "{label} {steps:>5} steps: cpu {cpu:>8.1} ms ({:.3} ms/step), wall {wall:>8.1} ms ({:.3} ms/step), \
                 peak rss {rss:>6} KiB, session {disk:>9} bytes ({} per step)  [medians of {rounds}]",
                cpu / steps as f64,
                wall / steps as f64,
                disk / steps as u64
            );
            results.push((steps, cpu));
        }
        let slope = |a: (usize, f64), b: (usize, f64)| (b.1 - a.1) / (b.0 - a.0) as f64;
        let slopes: Vec<(usize, usize, f64)> = results
            .windows(2)
            .filter(|pair| pair[0].0 >= 10)
            .map(|pair| (pair[0].0, pair[1].0, slope(pair[0], pair[1])))
            .collect();
        for (from, to, per_call) in &slopes {
            println!("{label} cpu per model call {from}→{to}: {per_call:.3} ms");
        }
        if let (Some(first), Some(last)) = (slopes.first(), slopes.last()) {
            println!(
                "{label} flatness: the {}→{} slope is {:.2}× the {}→{} slope",
                last.0,
                last.1,
                last.2 / first.2,
                first.0,
                first.1
            );
        }
    }
    // Paired: each run of one series was made next to the other's, under the same load.
    report_paired(
        "otel export on against keep-alive",
        &measured[3],
        &measured[0],
        &sizes,
    );
    report_paired(
        "window known against keep-alive",
        &measured[4],
        &measured[0],
        &sizes,
    );
    report_paired(
        "twenty tools against keep-alive",
        &measured[5],
        &measured[0],
        &sizes,
    );
    if measured.len() > 7 {
        report_paired(
            "keep-alive against its baseline",
            &measured[0],
            &measured[6],
            &sizes,
        );
        report_paired(
            "closing against its baseline",
            &measured[1],
            &measured[7],
            &sizes,
        );
    }
    for one in series
        .iter()
        .filter(|one| one.env.is_empty() && one.extra.is_empty())
    {
        report_syscalls(one, &dir);
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
