//! A stdio MCP server's process: started in its own process group with the secrets scrubbed
//! from its environment, its stderr drained into a short tail for error messages, and
//! stopped for sure, the whole group, however the run ends.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::sandbox::Prepared;
use crate::sync::lock;
use crate::tools::ChildEnv;

/// How much of the server's stderr is kept: enough for a stack trace's first lines.
const STDERR_TAIL: usize = 4 * 1024;
/// How long a server gets to exit by itself once its stdin is closed (the MCP stdio
/// shutdown sequence), and then after SIGTERM, before SIGKILL.
const EXIT_GRACE: Duration = Duration::from_secs(2);
const TERM_GRACE: Duration = Duration::from_secs(1);

/// A started server process and the pipes the MCP client speaks over.
pub struct Spawned {
    pub process: ServerProcess,
    pub stdout: ChildStdout,
    pub stdin: ChildStdin,
}

/// The server process. Dropping it without [`ServerProcess::stop`] kills its group at once.
pub struct ServerProcess {
    child: tokio::sync::Mutex<Child>,
    /// The process id, which is also its process group id.
    group: Option<i32>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// The task draining stderr; it ends when the pipe closes.
    stderr_reader: tokio::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    stopped: AtomicBool,
}

/// Starts `command` with `args` in `workspace`. The environment is the runner's without
/// key variables (`base.deny` and the usual `*_API_KEY`/`*_TOKEN` names), in the run's
/// trace (`base.trace`), plus `env`. Under a
/// `sandbox` the server confines itself before its `exec`.
pub fn spawn(
    command: &str,
    args: &[String],
    env: &[(String, String)],
    workspace: &Path,
    base: &ChildEnv,
    sandbox: Option<Prepared>,
) -> std::io::Result<Spawned> {
    let mut child = Command::new(command);
    child
        .args(args)
        .current_dir(workspace)
        .env_clear()
        .envs(base.vars())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so `npx`-style launchers and their children go down together.
        .process_group(0)
        .kill_on_drop(true);
    if let Some(sandbox) = sandbox {
        // SAFETY: `enter` makes only raw system calls, between fork and exec.
        unsafe {
            child.pre_exec(move || sandbox.enter());
        }
    }
    let mut child = child.spawn()?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other(
            "the server's stdin/stdout were not piped",
        ));
    };
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let stderr_reader = child
        .stderr
        .take()
        .map(|pipe| tokio::spawn(keep_tail(pipe, stderr.clone())));
    let group = child.id().and_then(|id| i32::try_from(id).ok());
    Ok(Spawned {
        process: ServerProcess {
            child: tokio::sync::Mutex::new(child),
            group,
            stderr,
            stderr_reader: tokio::sync::Mutex::new(stderr_reader),
            stopped: AtomicBool::new(false),
        },
        stdout,
        stdin,
    })
}

/// Reads the pipe to its end (so the server never blocks on a full pipe), keeping the last
/// [`STDERR_TAIL`] bytes.
async fn keep_tail(mut pipe: impl AsyncRead + Unpin, tail: Arc<Mutex<Vec<u8>>>) {
    let mut buf = [0u8; 4096];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let mut tail = lock(&tail);
                tail.extend_from_slice(&buf[..n]);
                let excess = tail.len().saturating_sub(STDERR_TAIL);
                tail.drain(..excess);
            }
        }
    }
}

impl ServerProcess {
    /// The end of what the server wrote to stderr, trimmed; empty when it wrote nothing.
    /// Waits a moment for the pipe to be drained (a server that just died may have written
    /// its last words a moment ago); a pipe kept open by a grandchild does not block it.
    pub async fn stderr_tail(&self) -> String {
        let mut reader = self.stderr_reader.lock().await;
        if let Some(handle) = reader.as_mut()
            && tokio::time::timeout(Duration::from_millis(300), handle)
                .await
                .is_ok()
        {
            *reader = None;
        }
        let tail = lock(&self.stderr);
        String::from_utf8_lossy(&tail).trim().to_string()
    }

    /// The exit status, if the process has exited (waiting at most `within` for it).
    pub async fn exited_within(&self, within: Duration) -> Option<ExitStatus> {
        let mut child = self.child.lock().await;
        tokio::time::timeout(within, child.wait())
            .await
            .ok()
            .and_then(Result::ok)
    }

    /// Stops the server after its stdin was closed: it gets [`EXIT_GRACE`] to exit, then
    /// SIGTERM, then SIGKILL. Whatever else is left in its process group is killed too.
    pub async fn stop(&self) {
        if self.exited_within(EXIT_GRACE).await.is_none() {
            self.signal_group(libc::SIGTERM);
            if self.exited_within(TERM_GRACE).await.is_none() {
                self.kill_now().await;
            }
        }
        self.signal_group(libc::SIGKILL);
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// Kills the whole group and reaps the process.
    pub async fn kill_now(&self) {
        self.signal_group(libc::SIGKILL);
        let mut child = self.child.lock().await;
        let _ = child.kill().await;
        self.stopped.store(true, Ordering::SeqCst);
    }

    fn signal_group(&self, signal: i32) {
        if let Some(group) = self.group {
            // SAFETY: killpg only sends a signal; a group that is gone makes it fail harmlessly.
            unsafe {
                libc::killpg(group, signal);
            }
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // Every exit path that skipped `stop` (an early error, a panic) still takes the
        // server and its children down; `kill_on_drop` reaps the leader.
        if !self.stopped.load(Ordering::SeqCst) {
            self.signal_group(libc::SIGKILL);
        }
    }
}
