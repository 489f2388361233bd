//! `runner serve` under load, through the binary, against the mock model, on loopback only:
//!
//! * (a) 100 runs in flight: 100 clients each start runs one after another and follow each
//!   to its end over SSE (`-j 100`); runs per second and the server's peak RSS (`VmHWM`).
//!   Twice: with a zero-latency mock (the server's own throughput), and with a mock whose
//!   reply streams over about 0.4 s (so the 100 runs really are in flight together).
//! * (b) 200 SSE clients on one run (its reply streamed 100 words, 20 ms apart): every
//!   client gets every event; the server's RSS; the latency below, under that load.
//! * (c) the time from an event's emission to its arrival at an SSE client, p50/p99, one
//!   client. Emission time is the event's own `timestamp` (the runner's clock, taken when
//!   the event is made, before it is written or sent; milliseconds, truncated), arrival the
//!   client's clock (the same machine's) when the event is parsed. The truncation makes
//!   each figure 0–1 ms longer than the truth. Only events emitted after the client's
//!   stream opened count (the ones before are replayed, not live).
//! * (d) RSS with 1,000 idle sessions: 1,000 runs that each pause for an approval (an
//!   `ask` rule), their sessions left waiting; RSS after 100 and after 1,000, and the time of
//!   `GET /api/sessions` then.
//!
//! * (e) SIGTERM with 100 runs in flight (each streaming a long reply, one SSE client
//!   each): the time to exit, and every stream ending `interrupted`; and SIGTERM while a
//!   client holds a connection on which it sent half a request.
//! * (f) the A2A round trip: `SendMessage` to `/a2a/{agent}` of a one-step agent against the
//!   zero-latency mock, answered once the task has completed (its answer the artifact), one
//!   request after another; beside it, the same run through the API (`POST /api/runs`, then
//!   its event stream to its end).
//!
//! Each part has a server of its own (so one part's peak is not the next one's floor),
//! stopped with SIGTERM at its end: the time from the signal, and from its `stopped` line,
//! to the process's exit is printed too.
//!
//! Run: `cargo bench --bench serve` (`RUNNER_BENCH_RUNS=N` for another number of runs than
//! 1,000 in (a) and (d); `RUNNER_BENCH_PARTS=ad` for some parts only;
//! `cargo bench --bench serve -- a2a` for (f) alone).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use runner::testing::mock_server::{MockResponse, MockServer, Reply};
use serde_json::json;

/// Waits (bounded) for `condition` (what the tests' HTTP client below waits with).
fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The tests' plain HTTP/SSE client (every read bounded).
#[allow(dead_code)]
#[path = "../tests/support/http.rs"]
mod http;

use http::{Api, Sse, free_port};

const WAITING_AGENT: &str =
    "tools:\n  - builtin: shell\n    allow: [touch]\npermissions:\n  ask: [shell]\n";

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("serve: bench");
        return;
    }
    let runs: usize = std::env::var("RUNNER_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let dir = std::env::temp_dir().join(format!("runner-bench-serve-{}", std::process::id()));
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let parts = match filter.as_deref() {
        Some("a2a") => "f".into(),
        _ => std::env::var("RUNNER_BENCH_PARTS").unwrap_or_else(|_| "abcdef".into()),
    };
    if parts.contains('c') {
        latency_one_client(&dir);
    }
    if parts.contains('b') {
        many_clients(&dir, 200);
    }
    if parts.contains('a') {
        in_flight(&dir, runs, Duration::ZERO);
        in_flight(&dir, runs, Duration::from_millis(100));
    }
    if parts.contains('d') {
        idle_sessions(&dir, runs);
    }
    if parts.contains('e') {
        stop_in_flight(&dir, 100);
        stop_with_half_a_request(&dir);
    }
    if parts.contains('f') {
        a2a_round_trip(&dir, 300);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `runner serve` process in a fresh directory, its stderr lines timed as they come.
struct Server {
    child: Child,
    api: Api,
    lines: mpsc::Receiver<(Instant, String)>,
    dir: PathBuf,
}

impl Server {
    fn start(dir: &Path, mock: &MockServer, extra: &str, jobs: usize) -> Server {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).unwrap();
        let agent = format!(
            "name: bench\nmodel: {{ provider: openai, name: m, base_url: \"{}\", api_key_env: BENCH_KEY, retry: {{ max_attempts: 1 }} }}\nprompt: Go\n{extra}",
            mock.openai_base_url()
        );
        std::fs::write(dir.join("agent.yaml"), agent).unwrap();
        let port = free_port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_runner"))
            .args(["serve", ".", "--listen", &format!("127.0.0.1:{port}")])
            .args(["-j", &jobs.to_string(), "--queue", "1000"])
            .current_dir(dir)
            .env("BENCH_KEY", "not-a-key")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                let _ = sender.send((Instant::now(), line));
            }
        });
        let server = Server {
            child,
            api: Api::new(port),
            lines,
            dir: dir.to_path_buf(),
        };
        server.api.wait_up();
        server
    }

    /// (current RSS, peak RSS) in KiB, from /proc.
    fn rss(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("/proc/PID/status");
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// Starts a run of the bench agent; its id.
    fn start_run(&self) -> String {
        let started = self.api.post("/api/runs", &json!({"agent": "bench"}));
        assert_eq!(started.status, 201, "{}", started.body);
        started.json()["run_id"].as_str().unwrap().to_string()
    }

    /// SIGTERM, then the time to exit from the signal and from the `stopped` line.
    fn stop(mut self, part: &str) {
        let signalled = Instant::now();
        // SAFETY: a plain kill(2) of our own child, not yet reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = signalled + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(Duration::from_millis(1));
        };
        let exited = Instant::now();
        assert!(status.success(), "{part}: the server exited {status}");
        let stopped = self
            .lines
            .try_iter()
            .find(|(_, line)| line.contains("runner serve: stopped"))
            .map(|(at, _)| at);
        println!(
            "{part}: SIGTERM → exit {:.0} ms; `stopped` line → exit {}",
            ms(exited - signalled),
            stopped.map_or("(no line)".into(), |at| format!(
                "{:.0} ms",
                ms(exited.saturating_duration_since(at))
            ))
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Microseconds since the Unix epoch, now.
fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

/// `2026-11-21T10:00:00.123Z` as microseconds since the epoch.
fn timestamp_us(text: &str) -> u64 {
    let number = |range: std::ops::Range<usize>| -> i64 { text[range].parse().unwrap() };
    let (year, month, day) = (number(0..4), number(5..7), number(8..10));
    let (hour, minute, second, milli) = (
        number(11..13),
        number(14..16),
        number(17..19),
        number(20..23),
    );
    // Days since 1970-01-01 (Howard Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second;
    (seconds * 1000 + milli) as u64 * 1000
}

/// One client's stream of run `run`: the ids it got, and the latency (µs) of each event
/// emitted after the stream opened.
fn follow(api: &Api, run: &str) -> (Vec<u64>, Vec<u64>, String) {
    let mut events = api.events(run, None);
    let opened = now_us();
    let (mut ids, mut latencies) = (Vec::new(), Vec::new());
    loop {
        let event: Sse = events.next().expect("the stream ends with `event: end`");
        let arrived = now_us();
        if event.event.as_deref() == Some("end") {
            return (ids, latencies, event.data);
        }
        ids.push(event.id.unwrap());
        let emitted = timestamp_us(event.json()["timestamp"].as_str().unwrap());
        if emitted > opened {
            latencies.push(arrived.saturating_sub(emitted));
        }
    }
}

/// A reply of `words` words streamed `gap` apart.
fn streamed(words: usize, gap: Duration) -> MockResponse {
    let text: Vec<String> = (0..words).map(|n| format!("word{n}")).collect();
    MockResponse::text(text.join(" ")).chunk_delay(gap)
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index] as f64 / 1000.0
}

fn describe(latencies: &mut [u64]) -> String {
    latencies.sort_unstable();
    format!(
        "p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} events)",
        percentile(latencies, 0.5),
        percentile(latencies, 0.99),
        percentile(latencies, 1.0),
        latencies.len()
    )
}

/// (c): one client on a run whose reply streams 200 words, 10 ms apart.
fn latency_one_client(dir: &Path) {
    let mock = MockServer::start();
    mock.answer_only()
        .forget_requests()
        .route(|_| Some(streamed(200, Duration::from_millis(10))));
    let server = Server::start(&dir.join("latency"), &mock, "", 2);
    let mut all = Vec::new();
    for _ in 0..3 {
        let run = server.start_run();
        let (_, latencies, end) = follow(&server.api, &run);
        assert_eq!(end, r#"{"status":"completed"}"#);
        all.extend(latencies);
    }
    println!(
        "(c) emission → arrival at one SSE client, 3 runs of 200 streamed words 10 ms apart: {}",
        describe(&mut all)
    );
    server.stop("(c)");
}

/// (b): `clients` SSE clients on one run whose reply streams 100 words, 20 ms apart.
fn many_clients(dir: &Path, clients: usize) {
    let mock = MockServer::start();
    mock.answer_only()
        .forget_requests()
        .route(|_| Some(streamed(100, Duration::from_millis(20))));
    let server = Server::start(&dir.join("clients"), &mock, "", 2);
    let (rss_before, _) = server.rss();
    let run = server.start_run();
    let started = Instant::now();
    let followers: Vec<_> = (0..clients)
        .map(|_| {
            let (api, run) = (server.api.clone(), run.clone());
            std::thread::spawn(move || follow(&api, &run))
        })
        .collect();
    let results: Vec<_> = followers.into_iter().map(|f| f.join().unwrap()).collect();
    let took = started.elapsed();
    let (rss, peak) = server.rss();
    let expected: Vec<u64> = (1..=results[0].0.len() as u64).collect();
    let complete = results
        .iter()
        .filter(|(ids, _, end)| *ids == expected && end == r#"{"status":"completed"}"#)
        .count();
    let mut latencies: Vec<u64> = results.into_iter().flat_map(|(_, l, _)| l).collect();
    println!(
        "(b) {clients} SSE clients on one run of {} events: {complete} got every event once, in order, and the end; \
         all done {:.0} ms after the start; server RSS {:.1} MiB before, {:.1} MiB after (peak {:.1} MiB)",
        expected.len(),
        ms(took),
        mib(rss_before),
        mib(rss),
        mib(peak)
    );
    println!(
        "(b) emission → arrival, live events, over the {clients} clients: {}",
        describe(&mut latencies)
    );
    server.stop("(b)");
}

/// (a): 100 clients, each starting `runs / 100` runs one after another and following each
/// over SSE to its end; the mock's reply is 5 words `gap` apart.
fn in_flight(dir: &Path, runs: usize, gap: Duration) {
    const CLIENTS: usize = 100;
    let mock = MockServer::start();
    mock.answer_only()
        .forget_requests()
        .route(move |_| Some(streamed(5, gap)));
    let server = Server::start(&dir.join("in-flight"), &mock, "", CLIENTS);
    let (rss_before, _) = server.rss();
    let started = Instant::now();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let api = server.api.clone();
            let mine = runs / CLIENTS + usize::from(client < runs % CLIENTS);
            std::thread::spawn(move || {
                for _ in 0..mine {
                    let started = api.post("/api/runs", &json!({"agent": "bench"}));
                    assert_eq!(started.status, 201, "{}", started.body);
                    let run = started.json()["run_id"].as_str().unwrap().to_string();
                    let (_, end) = api.events(&run, None).until_end();
                    assert_eq!(end.data, r#"{"status":"completed"}"#);
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    let took = started.elapsed();
    let (rss, peak) = server.rss();
    println!(
        "(a) {runs} runs, {CLIENTS} in flight, mock reply 5 words {} ms apart: {:.2} s, {:.0} runs/s; \
         server RSS {:.1} MiB at start, peak {:.1} MiB, {:.1} MiB after",
        gap.as_millis(),
        took.as_secs_f64(),
        runs as f64 / took.as_secs_f64(),
        mib(rss_before),
        mib(peak),
        mib(rss)
    );
    server.stop("(a)");
}

/// (d): `runs` sessions left waiting for an approval.
fn idle_sessions(dir: &Path, runs: usize) {
    let mock = MockServer::start();
    mock.answer_only().forget_requests().route(|_| {
        Some(MockResponse::reply(Reply::tool_call(
            "shell",
            json!({"command": "touch x"}),
        )))
    });
    let server = Server::start(&dir.join("idle"), &mock, WAITING_AGENT, 2);
    let (rss_start, _) = server.rss();
    let mut rss_at = Vec::new();
    for n in 1..=runs {
        let run = server.start_run();
        let (_, end) = server.api.events(&run, None).until_end();
        assert_eq!(end.data, r#"{"status":"input_required"}"#);
        if n == 100 || n == runs {
            rss_at.push((n, server.rss().0));
        }
    }
    let listed = Instant::now();
    let sessions = server.api.get("/api/sessions");
    let list_took = listed.elapsed();
    let count = sessions.json().as_array().map_or(0, Vec::len);
    let waiting = sessions
        .json()
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["status"] == "input_required")
        .count();
    let (_, peak) = server.rss();
    let at: Vec<String> = rss_at
        .iter()
        .map(|(n, rss)| format!("{:.1} MiB after {n}", mib(*rss)))
        .collect();
    println!(
        "(d) idle sessions (each paused for an approval): RSS {:.1} MiB at start, {} (peak {:.1} MiB); \
         GET /api/sessions lists {count} ({waiting} input_required) in {:.0} ms",
        mib(rss_start),
        at.join(", "),
        mib(peak),
        ms(list_took)
    );
    server.stop("(d)");
}

/// (e): SIGTERM while `count` runs stream a long reply, each followed by one client.
fn stop_in_flight(dir: &Path, count: usize) {
    let mock = MockServer::start();
    mock.answer_only()
        .forget_requests()
        .route(|_| Some(streamed(100, Duration::from_millis(100))));
    let server = Server::start(&dir.join("stop"), &mock, "", count);
    let runs: Vec<String> = (0..count).map(|_| server.start_run()).collect();
    let followers: Vec<_> = runs
        .iter()
        .map(|run| {
            let (api, run) = (server.api.clone(), run.clone());
            std::thread::spawn(move || follow(&api, &run).2)
        })
        .collect();
    wait_until("every run streams", || mock.request_count() >= count);
    std::thread::sleep(Duration::from_millis(500));
    server.stop(&format!("(e) {count} runs in flight"));
    let interrupted = followers
        .into_iter()
        .map(|f| f.join().unwrap())
        .filter(|end| end == r#"{"status":"interrupted"}"#)
        .count();
    println!("(e) streams that ended `interrupted`: {interrupted} of {count}");
}

/// (e): SIGTERM while a client holds a connection with half a request sent on it.
fn stop_with_half_a_request(dir: &Path) {
    use std::io::Write;
    let mock = MockServer::start();
    let server = Server::start(&dir.join("half"), &mock, "", 2);
    let mut half = std::net::TcpStream::connect(server.api.address()).unwrap();
    half.write_all(b"POST /api/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        .unwrap();
    // Accepted in order: once a later connection is answered, this one is being served.
    assert_eq!(server.api.get("/api/agents").status, 200);
    server.stop("(e) a client holding half a request");
    drop(half);
}

/// (f): `rounds` A2A `SendMessage` round trips of a one-step agent (the zero-latency mock),
/// one after another, and as many runs through the API for comparison.
fn a2a_round_trip(dir: &Path, rounds: usize) {
    let mock = MockServer::start();
    mock.answer_only()
        .forget_requests()
        .route(|_| Some(MockResponse::text("Done.")));
    let server = Server::start(&dir.join("a2a"), &mock, "", 2);
    let send = |n: usize| {
        json!({"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": {"message": {
            "messageId": format!("m{n}"), "role": "ROLE_USER", "parts": [{"text": "Go"}]}}})
    };
    let mut a2a = Vec::with_capacity(rounds);
    let mut api = Vec::with_capacity(rounds);
    for n in 0..rounds {
        let started = Instant::now();
        let answer = server.api.post("/a2a/bench", &send(n)).json();
        a2a.push(started.elapsed().as_micros() as u64);
        let task = &answer["result"]["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
        assert_eq!(task["artifacts"][0]["parts"][0]["text"], "Done.");

        let started = Instant::now();
        let run = server.start_run();
        let mut events = server.api.events(&run, None);
        let (_, end) = events.until_end();
        api.push(started.elapsed().as_micros() as u64);
        assert_eq!(end.data, r#"{"status":"completed"}"#);
    }
    let summary = |times: &mut Vec<u64>| {
        times.sort_unstable();
        format!(
            "p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms",
            percentile(times, 0.5),
            percentile(times, 0.9),
            percentile(times, 0.99)
        )
    };
    println!(
        "(f) A2A SendMessage → completed task, one-step agent, {rounds} round trips: {}",
        summary(&mut a2a)
    );
    println!(
        "(f) the same run through the API (POST /api/runs, its events to the end): {}",
        summary(&mut api)
    );
    server.stop("(f)");
}
