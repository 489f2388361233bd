//! Running `runner exec` as a child process with a time limit.
//!
//! Each case runs in its own process, the very `exec` a user would run: the same contract
//! (files, exit codes, result), and nothing shared between cases that run at once.

use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long an interrupted run gets to stop before it is killed.
const GRACE: Duration = Duration::from_secs(5);

/// Why the child left no output.
#[derive(Debug)]
pub enum ChildError {
    /// It could not start.
    Spawn(std::io::Error),
    /// It ran past the limit and was stopped.
    TimedOut(Duration),
}

/// Runs `command` to its end, or stops it after `limit`: SIGTERM first, so the run ends as
/// `interrupted` and stops its own tools, then SIGKILL after a grace period.
pub fn run_with_limit(mut command: Command, limit: Duration) -> Result<Output, ChildError> {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(ChildError::Spawn)?;
    let pid = child.id() as libc::pid_t;
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    let output = match finished.recv_timeout(limit) {
        Ok(output) => output,
        Err(_) => {
            // The waiting thread has not reaped the child (it would have sent its output),
            // so `pid` is still ours.
            signal(pid, libc::SIGTERM);
            if finished.recv_timeout(GRACE).is_err() {
                signal(pid, libc::SIGKILL);
                let _ = finished.recv();
            }
            return Err(ChildError::TimedOut(limit));
        }
    };
    output.map_err(ChildError::Spawn)
}

fn signal(pid: libc::pid_t, signal: libc::c_int) {
    // SAFETY: kill(2) with a pid this process started and has not reaped.
    unsafe {
        libc::kill(pid, signal);
    }
}
