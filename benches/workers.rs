//! `runner worker` on NATS JetStream against `runner batch` on one machine: the same one-step
//! jobs (one model call each, answered at once by the mock), four at a time both ways —
//! four workers of one job each, or `runner batch -j 4`. Reports jobs per second of the
//! NATS path (from `runner submit` to `runner batch status --wait` returning) and its
//! per-job overhead over the local batch: the difference of the two wall times, times the
//! four jobs running at once, over the jobs. Each job is a child `runner exec` both ways,
//! so the difference is what NATS adds: the job's delivery and acknowledgement, the
//! session's lease, its checkpoints and the result in JetStream, the worker's bookkeeping.
//! Seven runs, each a local run then a NATS one (so both see the same load), a fresh NATS
//! server each run; the overhead is the median of the runs' own, which cancels most of
//! the machine's drift from run to run. Also reported: the CPU time per job of each path,
//! every process included (with the wall times of two shared cores, it is the steadier
//! figure).
//!
//! Needs `nats-server` on the PATH. Run: `cargo bench --bench workers`
//! (`RUNNER_BENCH_JOBS=N` for another number of jobs than 1000).

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use runner::testing::mock_server::{MockResponse, MockServer, Reply};

const RUNS: usize = 7;
const AT_ONCE: usize = 4;

fn main() {
    let jobs: usize = std::env::var("RUNNER_BENCH_JOBS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let dir = std::env::temp_dir().join(format!("runner-bench-workers-{}", std::process::id()));
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
    let inputs: String = (0..jobs).map(|n| format!("{{\"n\": {n}}}\n")).collect();
    std::fs::write(dir.join("inputs.jsonl"), inputs).unwrap();
    let mut runs = Vec::new();
    for run in 0..RUNS {
        let pair = Pair {
            local: local_batch(&dir, run),
            nats: on_nats(&dir, run),
        };
        println!("run {}: {}", run + 1, pair.describe(jobs));
        runs.push(pair);
    }
    let median = |of: &dyn Fn(&Pair) -> f64| {
        let mut values: Vec<f64> = runs.iter().map(of).collect();
        values.sort_by(f64::total_cmp);
        values[RUNS / 2]
    };
    let (local, nats) = (
        median(&|p| p.local.wall.as_secs_f64()),
        median(&|p| p.nats.wall.as_secs_f64()),
    );
    println!(
        "{jobs} one-step jobs, {AT_ONCE} at once, medians of {RUNS} runs: runner batch {local:.3} s ({:.0} jobs/s), {:.1} ms CPU per job; 4 NATS workers {nats:.3} s ({:.0} jobs/s), {:.1} ms CPU per job; NATS overhead {:.2} ms per job (run by run), {:.2} ms of CPU per job",
        jobs as f64 / local,
        median(&|p| per_job(p.local.cpu, jobs)),
        jobs as f64 / nats,
        median(&|p| per_job(p.nats.cpu, jobs)),
        median(&|p| p.overhead(jobs)),
        median(&|p| per_job(p.nats.cpu, jobs) - per_job(p.local.cpu, jobs)),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// One path's run: its wall time, and the CPU time of every process it ran (the batch or
/// the workers, their children, nats-server, submit and status).
#[derive(Clone, Copy)]
struct Ran {
    wall: Duration,
    cpu: Duration,
}

/// A local run, then a NATS one: both see the same load, so their difference is kept
/// run by run.
struct Pair {
    local: Ran,
    nats: Ran,
}

impl Pair {
    fn overhead(&self, jobs: usize) -> f64 {
        overhead(
            self.local.wall.as_secs_f64(),
            self.nats.wall.as_secs_f64(),
            jobs,
        )
    }

    fn describe(&self, jobs: usize) -> String {
        format!(
            "local {:.3} s ({:.1} ms CPU per job), NATS {:.3} s ({:.1} ms CPU per job), overhead {:.2} ms per job",
            self.local.wall.as_secs_f64(),
            per_job(self.local.cpu, jobs),
            self.nats.wall.as_secs_f64(),
            per_job(self.nats.cpu, jobs),
            self.overhead(jobs)
        )
    }
}

fn per_job(cpu: Duration, jobs: usize) -> f64 {
    cpu.as_secs_f64() * 1000.0 / jobs as f64
}

/// The CPU time (user and system) of the processes this one has waited for, and theirs.
fn children_cpu() -> Duration {
    // SAFETY: getrusage(2) writing into a zeroed struct we own.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// What NATS adds to each job, in ms: the extra wall time, times the jobs running at once,
/// over the jobs.
fn overhead(local: f64, nats: f64, jobs: usize) -> f64 {
    (nats - local) * AT_ONCE as f64 / jobs as f64 * 1000.0
}

fn runner(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_runner"));
    command
        .current_dir(dir)
        .env("BENCH_KEY", "not-a-real-key")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    command
}

fn local_batch(dir: &Path, run: usize) -> Ran {
    let cpu = children_cpu();
    let started = Instant::now();
    let status = runner(dir)
        .args(["batch", "agent.yaml", "--inputs", "inputs.jsonl", "-j", "4"])
        .args(["--progress", "none", "--batch-dir", &format!("local-{run}")])
        .args(["--batch-id", &format!("local-{run}")])
        .status()
        .expect("runner batch starts");
    assert!(status.success(), "the local batch failed: {status}");
    Ran {
        wall: started.elapsed(),
        cpu: children_cpu() - cpu,
    }
}

/// Four workers started and pulling, then the clock: submit, and wait for every result.
fn on_nats(dir: &Path, run: usize) -> Ran {
    let cpu = children_cpu();
    let server = Server::start(&dir.join(format!("nats-{run}")));
    let url = server.url();
    let mut workers: Vec<Child> = (0..AT_ONCE)
        .map(|n| {
            let home = dir.join(format!("worker-{run}-{n}"));
            std::fs::create_dir_all(&home).unwrap();
            runner(&home)
                .args(["worker", "--nats", &url])
                .stderr(Stdio::null())
                .spawn()
                .expect("runner worker starts")
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let batch = format!("nats-{run}");
    let started = Instant::now();
    let submitted = runner(dir)
        .args([
            "submit",
            "agent.yaml",
            "--inputs",
            "inputs.jsonl",
            "--nats",
            &url,
        ])
        .args(["--batch-id", &batch])
        .stderr(Stdio::null())
        .status()
        .expect("runner submit starts");
    assert!(submitted.success(), "submit failed");
    let waited = runner(dir)
        .args(["batch", "status", &batch, "--nats", &url, "--wait"])
        .stderr(Stdio::null())
        .status()
        .expect("runner batch status starts");
    let elapsed = started.elapsed();
    assert!(waited.success(), "a job did not complete: {waited}");
    for worker in &mut workers {
        let _ = worker.kill();
        let _ = worker.wait();
    }
    drop(server);
    Ran {
        wall: elapsed,
        cpu: children_cpu() - cpu,
    }
}

/// `nats-server -js` on a free port of 127.0.0.1, stopped when dropped.
struct Server {
    port: u16,
    child: Child,
    store: PathBuf,
}

impl Server {
    fn start(store: &Path) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let child = Command::new("nats-server")
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(store)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server is on the PATH (apt-get install nats-server)");
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            std::thread::sleep(Duration::from_millis(20));
        }
        Server {
            port,
            child,
            store: store.to_path_buf(),
        }
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.store);
    }
}
