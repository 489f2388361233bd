//! A child process run to its end, bounded: under a reaper of its own (`reaper`: killed
//! with everything it started, even what left its process group, when it ends, times out,
//! when the run is interrupted, or when the caller gives up), unable to read the runner's
//! environment (`isolate`), stdout and stderr captured separately up to a cap, and an
//! optional stdin written and closed; under a kernel sandbox when the caller has one (the
//! program only, not its reaper). `shell` runs its commands with it, and hooks their
//! programs.

use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::sync::watch;

use super::live_output::{LiveOutput, Stream};
use super::stopped;
use crate::sandbox::Prepared;
use crate::sync::lock;

/// After the child ended (or was killed), how long to wait for its output pipes to close
/// (a grandchild may still hold them).
const PIPE_GRACE: Duration = Duration::from_secs(2);
/// How long the reaper may take to clear a call's tree once asked, before the runner kills
/// the reaper's process group itself.
const REAPER_GRACE: Duration = Duration::from_secs(5);

/// How a child's run ended.
#[derive(Debug)]
pub enum End {
    Exited(ExitStatus),
    WaitFailed(std::io::Error),
    TimedOut,
    Cancelled,
}

/// What a child did: how it ended, what it wrote (the first `cap` bytes of each stream
/// and the total), and how long it took.
#[derive(Debug)]
pub struct Finished {
    pub end: End,
    pub stdout: Vec<u8>,
    pub stdout_total: u64,
    pub stderr: Vec<u8>,
    pub stderr_total: u64,
    pub elapsed: Duration,
}

impl Finished {
    /// The exit code, when the child exited by itself with one.
    pub fn exit_code(&self) -> Option<i32> {
        match &self.end {
            End::Exited(status) => status.code(),
            _ => None,
        }
    }
}

/// How a child is run besides its command: its input, its confinement, its bounds, and
/// who watches its output as it arrives.
pub struct ChildRun<'a> {
    /// Written to its stdin, which is then closed; `None`: stdin is empty.
    pub stdin: Option<Vec<u8>>,
    pub sandbox: Option<Prepared>,
    pub timeout: Duration,
    /// How much of each of stdout and stderr is kept.
    pub cap: usize,
    pub cancel: &'a watch::Receiver<bool>,
    /// Sees stdout and stderr as they arrive (lines shown live); the result keeps them.
    pub live: Option<LiveOutput>,
}

/// Runs `command` (program, arguments, directory and environment already set) until it
/// ends, `timeout` passes or `cancel` turns true, under `sandbox` when given. An error: it
/// could not be started.
pub async fn run_child(mut command: Command, run: ChildRun<'_>) -> std::io::Result<Finished> {
    let ChildRun {
        stdin,
        sandbox,
        timeout,
        cap,
        cancel,
        live,
    } = run;
    command
        .stdin(match stdin {
            Some(_) => Stdio::piped(),
            None => Stdio::null(),
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Not killed outright when dropped: its reaper is told (`Call`), and must live to
        // clear the tree; tokio reaps it when it has.
        .kill_on_drop(false);
    // Its own process group: a Ctrl-C at the terminal reaches the runner, which then
    // stops the child, rather than the child directly.
    command.process_group(0);
    // SAFETY: both run between fork and exec and make only raw system calls.
    unsafe {
        command.pre_exec(move || {
            super::reaper::split()?;
            super::isolate::drop_peeking_capabilities();
            // After the split, so only the program is confined and the reaper stays
            // outside its sandbox: with Landlock's signal scoping the program cannot kill
            // the reaper, which would let what it started escape (docs/security.md).
            if let Some(sandbox) = &sandbox {
                sandbox.enter()?;
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let mut child = command.spawn()?;
    // Stopped with everything it started if this future is dropped before the child ends:
    // a run that is interrupted must not leave the command's children behind.
    let mut call = Call::of(&child);
    let writer = child.stdin.take().zip(stdin).map(|(mut pipe, bytes)| {
        tokio::spawn(async move {
            // A child that does not read its input closes the pipe: that is its business.
            let _ = pipe.write_all(&bytes).await;
        })
    });
    let out_buf = Captured::default();
    let err_buf = Captured::default();
    let watch = |stream| live.clone().map(|live| (live, stream));
    let stdout = child.stdout.take();
    let stdout = tokio::spawn(read_capped(
        stdout,
        cap,
        out_buf.clone(),
        watch(Stream::Stdout),
    ));
    let stderr = child.stderr.take();
    let stderr = tokio::spawn(read_capped(
        stderr,
        cap,
        err_buf.clone(),
        watch(Stream::Stderr),
    ));
    let end = tokio::select! {
        waited = tokio::time::timeout(timeout, child.wait()) => match waited {
            Ok(Ok(status)) => End::Exited(status),
            Ok(Err(e)) => End::WaitFailed(e),
            Err(_) => End::TimedOut,
        },
        _ = stopped(cancel) => End::Cancelled,
    };
    match &end {
        // The reaper ended: it cleared the tree first.
        End::Exited(_) => call.release(),
        _ => {
            // The reaper kills the program and everything it started (rustc under cargo,
            // a test binary, a daemon that left the group), then ends.
            call.stop();
            if tokio::time::timeout(REAPER_GRACE, child.wait())
                .await
                .is_err()
            {
                call.kill();
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
            // Reaped: its pid may be another process's now.
            call.release();
        }
    }
    if let Some(writer) = writer {
        writer.abort();
    }
    let elapsed = started.elapsed();
    let (stdout, stdout_total) = collect(stdout, out_buf).await;
    let (stderr, stderr_total) = collect(stderr, err_buf).await;
    if let Some(live) = &live {
        live.finish();
    }
    Ok(Finished {
        end,
        stdout,
        stdout_total,
        stderr,
        stderr_total,
        elapsed,
    })
}

/// A running call, seen from the runner: its reaper, which leads the call's process
/// group. Stopped (the reaper told to clear the tree) when the call gives up on it or is
/// dropped while it runs.
struct Call {
    reaper: Option<i32>,
}

impl Call {
    fn of(child: &tokio::process::Child) -> Self {
        Call {
            reaper: child.id().and_then(|pid| i32::try_from(pid).ok()),
        }
    }

    /// Asks the reaper to kill everything of the call and end (`SIGTERM`).
    fn stop(&mut self) {
        if let Some(pid) = self.reaper {
            // SAFETY: kill only sends a signal; the child is not reaped yet, so the pid is
            // still the reaper's.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
    }

    /// The reaper did not end in time: its whole process group is killed (`SIGKILL`).
    fn kill(&mut self) {
        if let Some(pid) = self.reaper.take() {
            // SAFETY: killpg only sends a signal; a stale group id makes it fail harmlessly.
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
            }
        }
    }

    /// The reaper ended by itself, its tree cleared.
    fn release(&mut self) {
        self.reaper = None;
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What has been read from one pipe: the first bytes (up to the cap) and the total size.
type Captured = Arc<Mutex<(Vec<u8>, u64)>>;

/// Reads all of `reader` into `into`, keeping the first `cap` bytes and counting the rest;
/// `live` sees every byte as it arrives.
async fn read_capped<R: AsyncRead + Unpin>(
    reader: Option<R>,
    cap: usize,
    into: Captured,
    live: Option<(LiveOutput, Stream)>,
) {
    let Some(mut reader) = reader else {
        return;
    };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if let Some((live, stream)) = &live {
                    live.push(*stream, &buf[..n]);
                }
                let mut captured = lock(&into);
                captured.1 += n as u64;
                let room = cap.saturating_sub(captured.0.len());
                captured.0.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

/// Waits (briefly) for a pipe reader to finish, then returns what it captured. A pipe still
/// held open by a grandchild after the grace period is abandoned with what was read so far.
async fn collect(task: tokio::task::JoinHandle<()>, captured: Captured) -> (Vec<u8>, u64) {
    let abort = task.abort_handle();
    if tokio::time::timeout(PIPE_GRACE, task).await.is_err() {
        abort.abort();
    }
    let mut captured = lock(&captured);
    (std::mem::take(&mut captured.0), captured.1)
}
