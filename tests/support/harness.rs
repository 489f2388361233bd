//! `Test`: one user session with the real binary, in the style of casey/just's harness.
//!
//! ```ignore
//! Test::new()
//!     .agent("prompt: Go\ntools:\n  - builtin: read_file\n")
//!     .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
//!     .reply(Reply::text("Done."))
//!     .stdout("Done.\n")
//!     .run();
//! ```
//!
//! An agent file gets a model on the mock server (OpenAI wire, one attempt) unless it
//! names its own. In any file written, `$MODEL` is replaced by that model, and
//! `$OPENAI_URL` and `$ANTHROPIC_URL` by the mock server's base URLs (for files with a
//! model of their own). The default command is `runner exec agent.yaml --run-dir run`;
//! `.args(..)` appends to it, `.command(..)` replaces it. Strict by default: the exit code
//! must be 0 and stderr empty unless the test says otherwise. `Ran::snapshot` compares
//! what the user saw with a snapshot under `tests/snapshots/`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use runner::testing::mock_server::{MockRequest, MockResponse, MockServer, Reply};
use runner::testing::strict;
use serde_json::Value;

use super::{read_events, root, tempdir};

pub const KEY_ENV: &str = "RUNNER_TEST_KEY";
pub const KEY: &str = "sk-test-not-a-real-key-1234";

/// What stderr must be.
enum Expect {
    Exactly(String),
    Contains(Vec<String>),
    Anything,
}

pub struct Test {
    dir: PathBuf,
    mock: Arc<MockServer>,
    command: Vec<String>,
    extra: Vec<String>,
    env: Vec<(String, String)>,
    env_removed: Vec<String>,
    stdin: Option<String>,
    /// Run under a pseudo-terminal (`script`): stdout then holds the whole screen.
    terminal: bool,
    /// Killed past this, and the test fails (`Test::time_limit`).
    time_limit: Option<Duration>,
    /// The working directory, relative to the workspace (default: the workspace).
    cwd: Option<String>,
    /// Started in a process group of its own, for `Running::kill_group`.
    own_group: bool,
    /// Run under `strace -f -y -e trace=THESE`, its log in `strace.log` (`Test::traced`).
    traced: Option<String>,
    /// The expected exit code; `None`: any (the test looks at the result itself).
    status: Option<i32>,
    stdout: Option<String>,
    stdout_contains: Vec<String>,
    stderr: Expect,
}

impl Default for Test {
    fn default() -> Self {
        Self::new()
    }
}

impl Test {
    pub fn new() -> Self {
        Self::in_dir(tempdir("test"), Arc::new(MockServer::start()))
    }

    fn in_dir(dir: PathBuf, mock: Arc<MockServer>) -> Self {
        Test {
            dir,
            mock,
            command: ["exec", "agent.yaml", "--run-dir", "run"]
                .map(String::from)
                .to_vec(),
            extra: Vec::new(),
            env: vec![
                (KEY_ENV.into(), KEY.into()),
                ("NO_COLOR".into(), "1".into()),
            ],
            env_removed: Vec::new(),
            stdin: None,
            terminal: false,
            time_limit: None,
            cwd: None,
            own_group: false,
            traced: None,
            status: Some(0),
            stdout: None,
            stdout_contains: Vec::new(),
            stderr: Expect::Exactly(String::new()),
        }
    }

    /// Writes `agent.yaml`: `name: test-agent` and the mock model, then `body` (a body
    /// that starts with `name:` is written as it is).
    pub fn agent(self, body: &str) -> Self {
        let text = if body.starts_with("name:") {
            body.to_string()
        } else {
            format!("name: test-agent\nmodel: $MODEL\n{body}")
        };
        self.file("agent.yaml", &text)
    }

    /// Writes a file into the workspace (with `$MODEL` and the URLs replaced).
    pub fn file(self, path: &str, text: &str) -> Self {
        write(&self.dir.join(path), &expand(text, &self.mock));
        self
    }

    /// Writes an executable file (`$MODEL` and the URLs replaced): a script for the
    /// shell tool to run.
    pub fn executable(self, path: &str, text: &str) -> Self {
        use std::os::unix::fs::PermissionsExt;
        let test = self.file(path, text);
        let permissions = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(test.dir.join(path), permissions).unwrap();
        test
    }

    /// Brings a path of the repository into the workspace at the same place, for the
    /// examples users are told to try from the repository root: a file is copied (the
    /// tools refuse links that leave the workspace), a directory is linked (the MCP
    /// reference server's `node_modules` is large).
    pub fn repo_path(self, path: &str) -> Self {
        let source = root().join(path);
        let target = self.dir.join(path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        if source.is_dir() {
            std::os::unix::fs::symlink(&source, &target).unwrap();
        } else {
            std::fs::copy(&source, &target)
                .unwrap_or_else(|e| panic!("cannot copy {}: {e}", source.display()));
        }
        self
    }

    /// Queues a reply of the mock model.
    pub fn reply(self, reply: Reply) -> Self {
        self.respond(MockResponse::reply(reply))
    }

    /// Queues a raw response of the mock model (errors, faults).
    pub fn respond(self, response: MockResponse) -> Self {
        self.mock.push(response);
        self
    }

    /// The mock model enforces `response_format` as a grammar, as llama.cpp does: under a
    /// schema its queued tool calls are skipped (`MockServer::enforce_response_format`).
    pub fn enforce_response_format(self) -> Self {
        self.mock.enforce_response_format();
        self
    }

    /// The mock model answers `Connection: keep-alive` but closes each connection after a
    /// reply, losing the next request sent on it (`MockServer::close_after_each_reply`).
    pub fn close_after_each_reply(self) -> Self {
        self.mock.close_after_each_reply();
        self
    }

    /// The mock model answers `Connection: close` and closes each connection after its
    /// reply, as many servers do (`MockServer::connection_close`).
    pub fn connection_close(self) -> Self {
        self.mock.connection_close();
        self
    }

    /// Runs the binary under `strace -f -y`, tracing `syscalls` (`write,getrandom`), for a
    /// test of what the runner asks of the kernel (`Ran::syscalls`). Needs strace (Debian's
    /// package `strace`, which `.ci/run` installs).
    pub fn traced(mut self, syscalls: &str) -> Self {
        self.traced = Some(syscalls.to_string());
        self
    }

    /// Answers the requests for which `route` returns `Some` (the others take from the
    /// queue): for runs whose order of requests is not fixed, like sub-agents running
    /// in parallel, each answered by its system prompt.
    pub fn route(
        self,
        route: impl Fn(&MockRequest) -> Option<MockResponse> + Send + Sync + 'static,
    ) -> Self {
        self.mock.route(route);
        self
    }

    /// Starts the command in a process group of its own, so that `Running::kill_group`
    /// kills it with every process it started (a machine losing its power).
    pub fn own_process_group(mut self) -> Self {
        self.own_group = true;
        self
    }

    /// Runs the command in a directory of the workspace (created if needed): another
    /// machine's working directory, say.
    pub fn cwd(mut self, relative: &str) -> Self {
        std::fs::create_dir_all(self.dir.join(relative)).unwrap();
        self.cwd = Some(relative.to_string());
        self
    }

    /// Arguments appended to the command.
    pub fn args<const N: usize>(mut self, args: [&str; N]) -> Self {
        self.extra.extend(args.map(String::from));
        self
    }

    /// Replaces the whole command (`exec agent.yaml --run-dir run` by default).
    pub fn command<const N: usize>(mut self, args: [&str; N]) -> Self {
        self.command = args.map(String::from).to_vec();
        self
    }

    /// Replaces the whole command with arguments built at run time.
    pub fn command_vec(mut self, args: Vec<String>) -> Self {
        self.command = args;
        self
    }

    /// A path in the workspace, for a test that lays it out with tools of its own (`git`).
    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.join(relative)
    }

    /// The mock model server's address, `http://127.0.0.1:PORT`.
    pub fn mock_url(&self) -> String {
        self.mock.url()
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Leaves `key` out of the environment (the API key is set by default), to see what
    /// the binary does without it.
    /// Runs the binary in a pseudo-terminal (`script`, from util-linux): what it draws, stdout
    /// and stderr together, is then the run's stdout. See [`terminal_available`].
    /// Fails the test (killing the command) when the command runs longer than `limit`:
    /// for sessions that would hang without the behaviour under test. Also measures the
    /// command's peak memory (`Ran::peak_memory_kib`).
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = Some(limit);
        self
    }

    pub fn in_terminal(mut self) -> Self {
        self.terminal = true;
        self
    }

    pub fn env_remove(mut self, key: &str) -> Self {
        self.env.retain(|(k, _)| k != key);
        self.env_removed.push(key.into());
        self
    }

    pub fn stdin(mut self, text: &str) -> Self {
        self.stdin = Some(text.into());
        self
    }

    /// The expected exit code (default 0).
    pub fn status(mut self, code: i32) -> Self {
        self.status = Some(code);
        self
    }

    /// Any exit code will do: the test looks at what the run left.
    pub fn status_any(mut self) -> Self {
        self.status = None;
        self
    }

    pub fn stdout(mut self, text: &str) -> Self {
        self.stdout = Some(text.into());
        self
    }

    pub fn stdout_contains(mut self, text: &str) -> Self {
        self.stdout_contains.push(text.into());
        self
    }

    pub fn stderr(mut self, text: &str) -> Self {
        self.stderr = Expect::Exactly(text.into());
        self
    }

    /// stderr must contain `text` (repeatable); anything else may be there too.
    pub fn stderr_contains(mut self, text: &str) -> Self {
        match &mut self.stderr {
            Expect::Contains(texts) => texts.push(text.into()),
            _ => self.stderr = Expect::Contains(vec![text.into()]),
        }
        self
    }

    pub fn any_stderr(mut self) -> Self {
        self.stderr = Expect::Anything;
        self
    }

    /// Runs the binary and checks the expectations.
    pub fn run(self) -> Ran {
        self.spawn().wait()
    }

    /// Starts the binary without waiting for it, for tests that act while it runs
    /// (signals, saves under `--watch`); `Running::wait` checks the expectations.
    pub fn spawn(self) -> Running {
        let args = [&self.command[..], &self.extra[..]].concat();
        let mut command = if self.terminal {
            // `script` gives the runner a terminal for stdin, stdout and stderr, and copies
            // what it draws to its own stdout.
            let runner = std::iter::once(env!("CARGO_BIN_EXE_runner").to_string());
            let line = shell_words::join(runner.chain(args));
            let mut command = Command::new("script");
            command.args(["-q", "-e", "-c", &line, "/dev/null"]);
            command
        } else if let Some(syscalls) = &self.traced {
            let mut command = Command::new("strace");
            command
                .args(["-f", "-y", "-qq", "-o", "strace.log", "-e"])
                .arg(format!("trace={syscalls}"))
                .arg(env!("CARGO_BIN_EXE_runner"))
                .args(&args);
            command
        } else {
            let mut command = Command::new(env!("CARGO_BIN_EXE_runner"));
            command.args(&args);
            command
        };
        let cwd = match &self.cwd {
            Some(relative) => self.dir.join(relative),
            None => self.dir.clone(),
        };
        // The runner's own temporary directories (a failed `runner test` case's kept
        // workspace, among others) go where the tests' directories go, swept with them
        // once the test process has ended, not in /tmp for good.
        command
            .current_dir(cwd)
            .env("TMPDIR", tempdir("tmp"))
            .env_remove("RUST_BACKTRACE")
            // A session reads the same in a CI job as at a desk: progress, annotations and
            // job summaries are asked for by the tests that check them.
            .env_remove("CI")
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITHUB_STEP_SUMMARY")
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in &self.env {
            command.env(key, value);
        }
        for key in &self.env_removed {
            command.env_remove(key);
        }
        if self.own_group {
            use std::os::unix::process::CommandExt;
            command.process_group(0);
        }
        let mut child = command.spawn().expect("the runner binary starts");
        if let Some(text) = &self.stdin {
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(text.as_bytes()).unwrap();
        }
        Running {
            test: self,
            child: Some(child),
            stderr_read: Vec::new(),
        }
    }

    /// The command line, as the user typed it.
    fn line(&self) -> String {
        format!(
            "runner {}",
            [&self.command[..], &self.extra[..]].concat().join(" ")
        )
    }

    fn check(&self, ran: &Ran) {
        let session = format!(
            "{}\n--- exit code {}\n--- stdout\n{}--- stderr\n{}",
            self.line(),
            ran.code,
            ran.stdout,
            ran.stderr
        );
        if let Some(status) = self.status {
            assert_eq!(ran.code, status, "unexpected exit code\n{session}");
        }
        if let Some(stdout) = &self.stdout {
            assert_eq!(&ran.stdout, stdout, "unexpected stdout\n{session}");
        }
        for text in &self.stdout_contains {
            assert!(
                ran.stdout.contains(text),
                "stdout lacks {text:?}\n{session}"
            );
        }
        match &self.stderr {
            Expect::Exactly(text) => assert_eq!(&ran.stderr, text, "unexpected stderr\n{session}"),
            Expect::Contains(texts) => {
                for text in texts {
                    assert!(
                        ran.stderr.contains(text),
                        "stderr lacks {text:?}\n{session}"
                    );
                }
            }
            Expect::Anything => {}
        }
        strict_servers_take(ran, &session);
    }
}

/// Every request the run sent is one a strict server accepts (`runner::testing::strict`):
/// checked for every test, so each feature a test exercises is covered.
fn strict_servers_take(ran: &Ran, session: &str) {
    for request in ran.requests() {
        let faults = strict::violations(&request);
        assert!(
            faults.is_empty(),
            "request {} would be refused by a strict server: {faults:#?}\n{:#}\n{session}",
            request.number,
            request.body["messages"]
        );
    }
}

/// A command still running (`Test::spawn`); killed if dropped unwaited, so a failed test
/// leaves no process behind.
pub struct Running {
    test: Test,
    child: Option<Child>,
    /// What `listening_port` read of stderr, put back in front of the rest at the end.
    stderr_read: Vec<u8>,
}

impl Running {
    /// How many requests the mock model has received so far.
    pub fn requests_made(&self) -> usize {
        self.test.mock.request_count()
    }

    /// The requests the mock model has received so far.
    pub fn requests(&self) -> Vec<MockRequest> {
        self.test.mock.requests()
    }

    /// Another command in the same workspace, against the same mock model, while this one
    /// runs (a second server, say).
    pub fn alongside(&self) -> Test {
        Test::in_dir(self.test.dir.clone(), self.test.mock.clone())
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.test.dir.join(relative)
    }

    /// Saves a file the way many editors do, a temporary file renamed over it, so a
    /// `--watch` run never reads half a file (`$MODEL` and the URLs replaced).
    pub fn save(&self, path: &str, text: &str) {
        let path = self.path(path);
        let temp = path.with_extension("swp");
        write(&temp, &expand(text, &self.test.mock));
        std::fs::rename(&temp, &path).unwrap();
    }

    /// The process id of the command (for a test that plays a program looking for it).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Sends SIGINT, as Ctrl-C does.
    pub fn interrupt(&self) {
        let pid = self.child.as_ref().unwrap().id();
        let status = Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -INT failed");
    }

    /// Sends SIGTERM, as a service manager stopping it does.
    pub fn terminate(&self) {
        let pid = self.child.as_ref().unwrap().id();
        let status = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -TERM failed");
    }

    /// Waits for the command to end and checks the expectations.
    pub fn wait(mut self) -> Ran {
        let child = self.child.take().unwrap();
        let ran = match self.test.time_limit {
            None => {
                let output = self.whole(child.wait_with_output().unwrap());
                Ran::new(&self.test, output)
            }
            Some(limit) => {
                let (output, peak) = wait_within(child, limit, &self.test.line());
                let output = self.whole(output);
                let mut ran = Ran::new(&self.test, output);
                ran.peak_memory_kib = Some(peak);
                ran
            }
        };
        self.test.check(&ran);
        ran
    }

    /// Kills the command with SIGKILL (a crash) and returns what it left, checking
    /// nothing: it may have ended on its own first, and a killed process has no exit
    /// code (`Ran::code` is then -1).
    pub fn kill(mut self) -> Ran {
        let mut child = self.child.take().unwrap();
        let _ = child.kill();
        let output = self.whole(child.wait_with_output().unwrap());
        Ran::new(&self.test, output)
    }
}

impl Running {
    /// The port a server told to listen on port 0 chose, from the line it writes to
    /// stderr when it listens. A port picked free beforehand could be taken by another
    /// test's server before this one binds it; port 0 leaves no such window.
    pub fn listening_port(&mut self) -> u16 {
        const ANNOUNCED: &str = "runner serve: listening on http://127.0.0.1:";
        let child = self.child.as_mut().unwrap();
        let stderr = child.stderr.take().expect("stderr is piped");
        let (found, announced) = std::sync::mpsc::channel();
        // Byte by byte, so nothing after the line is taken from the pipe.
        std::thread::spawn(move || {
            use std::io::Read;
            let (mut stderr, mut read, mut port) = (stderr, Vec::new(), None);
            let mut byte = [0u8];
            while port.is_none() && matches!(stderr.read(&mut byte), Ok(1)) {
                read.push(byte[0]);
                if byte[0] == b'\n' {
                    let text = String::from_utf8_lossy(&read);
                    let line = text.lines().last().unwrap_or_default();
                    port = line.strip_prefix(ANNOUNCED).and_then(|rest| {
                        let digits = rest.split(|c: char| !c.is_ascii_digit()).next()?;
                        digits.parse::<u16>().ok()
                    });
                }
            }
            let _ = found.send((stderr, read, port));
        });
        let (stderr, read, port) = announced
            .recv_timeout(Duration::from_secs(60))
            .expect("the server says where it listens within a minute");
        child.stderr = Some(stderr);
        let port = port.unwrap_or_else(|| {
            panic!(
                "the server ended without listening:\n{}",
                String::from_utf8_lossy(&read)
            )
        });
        self.stderr_read = read;
        port
    }

    /// The command's output with what `listening_port` read of stderr put back.
    fn whole(&mut self, mut output: Output) -> Output {
        let mut stderr = std::mem::take(&mut self.stderr_read);
        stderr.append(&mut output.stderr);
        output.stderr = stderr;
        output
    }

    /// Kills the command's process group with SIGKILL (`Test::own_process_group`): the
    /// command and every process it started die at once, with no chance to save anything.
    pub fn kill_group(mut self) -> Ran {
        let child = self.child.take().unwrap();
        assert!(self.test.own_group, "started without own_process_group");
        // SAFETY: kill(2) of the process group our own child leads, not yet reaped.
        unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
        let output = self.whole(child.wait_with_output().unwrap());
        Ran::new(&self.test, output)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Waits for `child` (its output read meanwhile), killing it and failing the test past
/// `limit`; reaped with `wait4`, which tells its peak resident memory (KiB).
fn wait_within(mut child: Child, limit: Duration, line: &str) -> (Output, u64) {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    drop(child.stdin.take());
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let pid = child.id() as libc::pid_t;
    let ended = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let ended = ended.clone();
        std::thread::spawn(move || {
            let deadline = Instant::now() + limit;
            while !ended.load(Ordering::SeqCst) {
                if Instant::now() > deadline {
                    // SAFETY: a plain kill(2) of our own child, not yet reaped.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    return true;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            false
        })
    };
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for the child it reaps.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    ended.store(true, Ordering::SeqCst);
    let killed = watchdog.join().unwrap();
    assert_eq!(
        reaped,
        pid,
        "wait4 failed: {}",
        std::io::Error::last_os_error()
    );
    assert!(!killed, "`{line}` was still running after {limit:?}");
    let output = Output {
        status: std::process::ExitStatus::from_raw(status),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    (output, usage.ru_maxrss as u64)
}

/// Polls `condition` until it holds; fails the test after 20 s.
pub fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What a finished invocation left behind.
pub struct Ran {
    pub dir: PathBuf,
    mock: Arc<MockServer>,
    /// The command line, `runner ...`.
    line: String,
    /// The `--run-dir` the command was given.
    run_dir: Option<String>,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// The command's peak resident memory in KiB, measured under `Test::time_limit`.
    pub peak_memory_kib: Option<u64>,
}

impl Ran {
    fn new(test: &Test, output: Output) -> Self {
        let args = [&test.command[..], &test.extra[..]].concat();
        let run_dir = args
            .iter()
            .position(|arg| arg == "--run-dir")
            .and_then(|at| args.get(at + 1))
            .cloned();
        Ran {
            dir: test.dir.clone(),
            mock: test.mock.clone(),
            line: test.line(),
            run_dir,
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            peak_memory_kib: None,
        }
    }

    /// The next command in the same workspace, against the same mock model.
    pub fn then(&self) -> Test {
        Test::in_dir(self.dir.clone(), self.mock.clone())
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.join(relative)
    }

    /// A file of the workspace, as text.
    pub fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path(relative))
            .unwrap_or_else(|e| panic!("cannot read {relative}: {e}"))
    }

    /// The lines of `strace.log` (`Test::traced`) that record a call of `syscall` (which
    /// `-y` shows with the path of each file descriptor: `write(5</…/events.jsonl>, …`).
    pub fn syscalls(&self, syscall: &str) -> Vec<String> {
        self.traced_calls(syscall)
            .map(|(_thread, call)| call.to_string())
            .collect()
    }

    /// The threads (their ids) that made a call of `syscall`.
    pub fn threads_calling(&self, syscall: &str) -> std::collections::BTreeSet<String> {
        self.traced_calls(syscall)
            .map(|(thread, _call)| thread.to_string())
            .collect()
    }

    /// Each call of `syscall` in `strace.log`: the thread that made it, and the call.
    fn traced_calls(&self, syscall: &str) -> impl Iterator<Item = (String, String)> {
        let prefix = format!("{syscall}(");
        let log = self.read("strace.log");
        let calls: Vec<(String, String)> = log
            .lines()
            .filter_map(|line| line.split_once(' '))
            .map(|(thread, call)| (thread.to_string(), call.trim_start().to_string()))
            .filter(|(_thread, call)| call.starts_with(&prefix))
            .collect();
        calls.into_iter()
    }

    /// A file in the run directory the command was given (`--run-dir`).
    fn run_file(&self, name: &str) -> PathBuf {
        let run_dir = self
            .run_dir
            .as_deref()
            .unwrap_or_else(|| panic!("`{}` was given no --run-dir", self.line));
        self.dir.join(run_dir).join(name)
    }

    /// `result.json` of the run directory.
    pub fn result(&self) -> Value {
        read_json(&self.run_file("result.json"))
    }

    /// stdout as JSON (`--output json`).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }

    /// `events.jsonl` of the run directory, each line checked against
    /// `schemas/events.schema.json`.
    pub fn events(&self) -> Vec<Value> {
        read_events(&self.run_file("events.jsonl"))
    }

    /// The tool calls' `agent.tool.execution.started` and `.completed` events in the order
    /// they came: (`started` or `completed`, the event's data).
    pub fn tool_executions(&self) -> Vec<(String, Value)> {
        let events = self.events().into_iter();
        events
            .filter_map(|mut e| {
                let kind = e["type"].as_str()?.strip_prefix("agent.tool.execution.")?;
                Some((kind.to_string(), e["data"].take()))
            })
            .collect()
    }

    /// The events of one type.
    pub fn events_of(&self, kind: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["type"] == kind)
            .collect()
    }

    /// `transcript.txt` of the run directory.
    pub fn transcript(&self) -> String {
        std::fs::read_to_string(self.run_file("transcript.txt")).expect("the run left a transcript")
    }

    /// The requests the mock model received so far.
    pub fn requests(&self) -> Vec<MockRequest> {
        self.mock.requests()
    }

    /// The id of the session the run belongs to (from the result).
    pub fn session(&self) -> String {
        self.result()["session_id"].as_str().unwrap().to_string()
    }

    /// A file of the run's session: `.runner/sessions/<id>/<name>`.
    pub fn session_file(&self, name: &str) -> PathBuf {
        self.path(".runner/sessions")
            .join(self.session())
            .join(name)
    }
}

impl Ran {
    /// Snapshots what the user saw: the command, its exit code, stdout (with `--output
    /// json`, the result envelope, the same as `result.json`) and stderr, compared with
    /// `tests/snapshots/<test file>__<name>.snap`. What changes from run to run (ids,
    /// timestamps, durations, the workspace's path, the mock server's port) is replaced
    /// by placeholders. A changed snapshot fails the test and leaves a `.snap.new` beside
    /// it: review with `cargo insta review`, or rerun with `INSTA_UPDATE=always`.
    pub fn snapshot(&self, name: &str) {
        let text = format!(
            "{}\n--- exit code {}\n--- stdout\n{}--- stderr\n{}",
            self.line, self.code, self.stdout, self.stderr
        );
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(root().join("tests/snapshots"));
        settings.set_prepend_module_to_snapshot(false);
        settings.set_omit_expression(true);
        for (pattern, replacement) in placeholders(&self.dir) {
            settings.add_filter(&pattern, replacement);
        }
        let name = format!("{}__{name}", env!("CARGO_CRATE_NAME"));
        settings.bind(|| insta::assert_snapshot!(name, text));
    }
}

/// The snapshot filters: what varies between runs, and its placeholder. Paths come first,
/// as they may contain anything.
fn placeholders(workspace: &Path) -> Vec<(String, &'static str)> {
    let mut filters = Vec::new();
    let canonical = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.into());
    for dir in [canonical.as_path(), workspace] {
        filters.push((regex::escape(&dir.display().to_string()), "[WORKSPACE]"));
    }
    filters.push((regex::escape(env!("CARGO_TARGET_TMPDIR")), "[TMP]"));
    let rest = [
        // Run, session and other generated ids.
        (
            r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
            "[ID]",
        ),
        (
            r#""(run_id|session_id|runId|sessionId|parentRunId)": "[^"]+""#,
            r#""${1}": "[ID]""#,
        ),
        // RFC 3339 timestamps.
        (
            r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
            "[TIMESTAMP]",
        ),
        (
            r#""(durationMs|duration_ms)": \d+"#,
            r#""${1}": [DURATION]"#,
        ),
        // Elapsed time on stderr: the progress lines' `  1.2s ` and logging's `in 12 ms`.
        (r"(?m)^ *\d+\.\ds ", "[ELAPSED] "),
        (r" in \d+ ms\b", " in [ELAPSED]"),
        // The mock server's port.
        (r"(127\.0\.0\.1|localhost):\d+", "${1}:[PORT]"),
    ];
    filters.extend(rest.map(|(pattern, placeholder)| (pattern.to_string(), placeholder)));
    filters
}

pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The mock model, as an inline `model:` mapping.
fn model(mock: &MockServer) -> String {
    format!(
        "{{ provider: openai, name: mock-model, base_url: \"{}\", api_key_env: {KEY_ENV}, retry: {{ max_attempts: 1 }} }}",
        mock.openai_base_url()
    )
}

/// The mock model on the Anthropic wire, as an inline `model:` mapping.
fn anthropic_model(mock: &MockServer) -> String {
    format!(
        "{{ provider: anthropic, name: mock-model, base_url: \"{}\", api_key_env: {KEY_ENV}, retry: {{ max_attempts: 1 }} }}",
        mock.anthropic_base_url()
    )
}

/// The mock model on the OpenAI Responses API, as an inline `model:` mapping.
fn responses_model(mock: &MockServer) -> String {
    format!(
        "{{ provider: openai, api: responses, name: mock-model, base_url: \"{}\", api_key_env: {KEY_ENV}, retry: {{ max_attempts: 1 }} }}",
        mock.openai_base_url()
    )
}

/// `text` with `$MODEL`, `$ANTHROPIC_MODEL`, `$RESPONSES_MODEL`, `$OPENAI_URL` and
/// `$ANTHROPIC_URL` replaced.
fn expand(text: &str, mock: &MockServer) -> String {
    text.replace("$MODEL", &model(mock))
        .replace("$ANTHROPIC_MODEL", &anthropic_model(mock))
        .replace("$RESPONSES_MODEL", &responses_model(mock))
        .replace("$OPENAI_URL", &mock.openai_base_url())
        .replace("$ANTHROPIC_URL", &mock.anthropic_base_url())
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, text).unwrap();
}

/// Whether tests can run the binary in a pseudo-terminal (`script` is installed); a test
/// that needs one prints why it skips when not.
pub fn terminal_available() -> bool {
    let found = Command::new("script")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !found {
        eprintln!(
            "skipped: `script` (util-linux) is not installed, so there is no pseudo-terminal to test in"
        );
    }
    found
}

impl Test {
    /// Starts `runner serve . --listen 127.0.0.1:0 ARGS...` in the test's workspace, and
    /// waits until it answers on the port it chose.
    pub fn serve(self, args: &[&str]) -> (Running, super::http::Api) {
        let mut command: Vec<String> = ["serve", ".", "--listen", "127.0.0.1:0"]
            .map(String::from)
            .to_vec();
        command.extend(args.iter().map(|arg| arg.to_string()));
        let mut running = self
            .command_vec(command)
            .any_stderr()
            .time_limit(Duration::from_secs(120))
            .spawn();
        let api = super::http::Api::new(running.listening_port());
        api.wait_up();
        (running, api)
    }
}
