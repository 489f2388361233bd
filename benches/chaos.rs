//! A batch under chaos (not in CI): `runner submit` of N one-step inputs to four `runner
//! worker`s, one of them killed (SIGKILL) every few seconds and started again, and the NATS
//! server restarted every minute, until `runner batch status --wait` returns by itself.
//! Each input's one `shell` call appends `line-<n>` to a log, so a line written twice is an
//! effect repeated; the model says `appended` once the call has a result.
//!
//! Reports: the throughput (inputs over the time from the submit to the wait's end), the
//! inputs lost (not `completed`), the effects repeated, the calls answered as
//! "interrupted" (the at-most-once window: a kill between a call's start record and its
//! end), and the peak RSS of a worker process (its `VmHWM`, read just before each kill and
//! at the end).
//!
//! Needs `nats-server` on the PATH. Run: `cargo bench --bench chaos`. Settings (env):
//! `RUNNER_BENCH_INPUTS` (20000), `RUNNER_BENCH_KILL_EVERY` (seconds, 2),
//! `RUNNER_BENCH_RESTART_EVERY` (seconds, 60), `RUNNER_TEST_BIN` (the binary, default
//! cargo's).

use std::collections::HashSet;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use runner::testing::mock_server::{MockRequest, MockResponse, MockServer, Reply};
use serde_json::{Value, json};

const WORKERS: usize = 4;

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let inputs = setting("RUNNER_BENCH_INPUTS", 20_000);
    let kill_every = Duration::from_secs(setting("RUNNER_BENCH_KILL_EVERY", 2));
    let restart_every = Duration::from_secs(setting("RUNNER_BENCH_RESTART_EVERY", 60));
    let dir = std::env::temp_dir().join(format!("runner-bench-chaos-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let interrupted = Arc::new(Mutex::new(HashSet::new()));
    let mock = MockServer::start();
    mock.forget_requests().route({
        let interrupted = interrupted.clone();
        move |request| Some(append_once(request, &interrupted))
    });
    write_workspace(&dir, &mock, inputs);

    let mut server = Server::start(&dir.join("nats"));
    let url = server.url();
    let mut workers: Vec<Worker> = (0..WORKERS).map(|n| Worker::start(&dir, n, &url)).collect();
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    let submitted = runner(&dir)
        .args(["submit", "agent.yaml", "--inputs", "inputs.jsonl"])
        .args(["--nats", &url, "--batch-id", "chaos"])
        .stderr(Stdio::null())
        .status()
        .expect("runner submit starts");
    assert!(submitted.success(), "submit failed");
    let mut waiting = runner(&dir)
        .args(["batch", "status", "chaos", "--nats", &url, "--wait"])
        .stderr(Stdio::null())
        .spawn()
        .expect("runner batch status starts");
    let (mut kills, mut restarts, mut peak_rss) = (0usize, 0usize, 0u64);
    let mut last_restart = Instant::now();
    let waited = loop {
        if let Some(status) = waiting.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(kill_every);
        let victim = &mut workers[kills % WORKERS];
        peak_rss = peak_rss.max(victim.peak_rss());
        victim.restart(&dir, &url);
        kills += 1;
        if last_restart.elapsed() >= restart_every {
            server.restart();
            restarts += 1;
            last_restart = Instant::now();
        }
    };
    let elapsed = started.elapsed();
    for worker in &mut workers {
        peak_rss = peak_rss.max(worker.peak_rss());
        worker.kill();
    }
    let results = runner(&dir)
        .args(["batch", "results", "chaos", "--nats", &url])
        .stdout(Stdio::piped())
        .output()
        .expect("runner batch results starts");
    let completed = String::from_utf8_lossy(&results.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|envelope| envelope["status"] == "completed")
        .count() as u64;
    let log = std::fs::read_to_string(dir.join("side-effects.log")).unwrap_or_default();
    let effects = log.lines().count();
    let distinct = log.lines().collect::<HashSet<_>>().len();
    println!(
        "{inputs} one-step inputs on {WORKERS} workers, a kill every {}s, a NATS restart every {}s: {:.1} s, {:.1} inputs/s; {kills} kills, {restarts} NATS restarts; `batch status --wait` exit {}; inputs lost {}; effects {effects}, repeated {}; calls answered as interrupted {}; worker peak RSS {:.1} MiB",
        kill_every.as_secs(),
        restart_every.as_secs(),
        elapsed.as_secs_f64(),
        inputs as f64 / elapsed.as_secs_f64(),
        waited.code().unwrap_or(-1),
        inputs - completed,
        effects - distinct,
        interrupted.lock().unwrap().len(),
        peak_rss as f64 / 1024.0,
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The model: append the input's line once through `shell`, then answer. Notes the inputs
/// whose conversation holds a call answered as interrupted.
fn append_once(request: &MockRequest, interrupted: &Mutex<HashSet<String>>) -> MockResponse {
    let prompt = request.last_user_text().unwrap_or_default();
    let n = prompt.trim_start_matches("Append ").to_string();
    let results: Vec<&Value> = request
        .conversation()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    if results
        .iter()
        .any(|m| m["content"].to_string().contains("interrupted"))
    {
        interrupted.lock().unwrap().insert(n.clone());
    }
    let reply = match results.is_empty() {
        true => Reply::tool_call("shell", json!({"command": format!("./append.sh line-{n}")})),
        false => Reply::text("appended"),
    };
    MockResponse::reply(reply)
}

fn write_workspace(dir: &Path, mock: &MockServer, inputs: u64) {
    std::fs::write(
        dir.join("agent.yaml"),
        format!(
            "name: chaos\nmodel: {{ provider: openai, name: mock-model, base_url: \"{}\", api_key_env: BENCH_KEY, retry: {{ max_attempts: 1 }} }}\ninputs:\n  n: {{ type: integer, required: true }}\nprompt: \"Append {{{{ n }}}}\"\ntools:\n  - builtin: shell\n    allow: [./append.sh]\n",
            mock.openai_base_url()
        ),
    )
    .unwrap();
    let lines: String = (1..=inputs).map(|n| format!("{{\"n\": {n}}}\n")).collect();
    std::fs::write(dir.join("inputs.jsonl"), lines).unwrap();
    let script = format!(
        "#!/bin/sh\necho \"$1\" >> {}\n",
        dir.join("side-effects.log").display()
    );
    for n in 0..WORKERS {
        let home = dir.join(format!("worker-{n}"));
        std::fs::create_dir_all(&home).unwrap();
        let path = home.join("append.sh");
        std::fs::write(&path, &script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

fn runner(dir: &Path) -> Command {
    let exe = std::env::var("RUNNER_TEST_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_runner").to_string());
    let mut command = Command::new(exe);
    command
        .current_dir(dir)
        .env("BENCH_KEY", "not-a-real-key")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    command
}

/// One worker of one slot, in a directory of its own (`worker-<n>`).
struct Worker {
    n: usize,
    child: Child,
}

impl Worker {
    fn start(dir: &Path, n: usize, url: &str) -> Self {
        let child = runner(&dir.join(format!("worker-{n}")))
            .args([
                "worker",
                "--nats",
                url,
                "--ack-wait",
                "5s",
                "--lease-ttl",
                "5s",
            ])
            .stderr(Stdio::null())
            .spawn()
            .expect("runner worker starts");
        Worker { n, child }
    }

    /// SIGKILL, then the same worker again (same directory).
    fn restart(&mut self, dir: &Path, url: &str) {
        self.kill();
        *self = Worker::start(dir, self.n, url);
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The process's peak resident set so far, in KiB (`VmHWM`).
    fn peak_rss(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default()
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

/// `nats-server -js` on a free port of 127.0.0.1, its store kept across restarts.
struct Server {
    port: u16,
    child: Option<Child>,
    store: PathBuf,
}

impl Server {
    fn start(store: &Path) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let mut server = Server {
            port,
            child: None,
            store: store.to_path_buf(),
        };
        server.launch();
        server
    }

    fn launch(&mut self) {
        let child = Command::new("nats-server")
            .args([
                "-js",
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-sd",
            ])
            .arg(&self.store)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server is on the PATH (apt-get install nats-server)");
        self.child = Some(child);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM (as a supervisor stops it), then started again on the same port and store.
    fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) of our own child, not yet reaped.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            let _ = child.wait();
        }
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.store);
    }
}
