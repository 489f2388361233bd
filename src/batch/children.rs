//! The runs going on, as child processes, and stopping them.
//!
//! Each input runs as a child `runner exec` or `runner resume`. A child dies with the
//! batch (SIGTERM when the batch process dies, even by SIGKILL: Linux's parent-death
//! signal), so it ends as `interrupted` with its session saved, ready for the next run of
//! the batch to resume. An interrupt of the batch (SIGINT, SIGTERM) is passed on to every
//! child running.

use std::collections::HashSet;
use std::io::{self, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;

use crate::sync::lock;

/// The children running, by pid.
#[derive(Debug, Default)]
pub struct Children {
    /// The pids of children not yet reaped; `None` once the batch stops, when no child
    /// may start.
    running: Mutex<Option<HashSet<libc::pid_t>>>,
}

/// What a child left: its stdout, and how it ended.
pub struct Finished {
    pub stdout: Vec<u8>,
    pub status: ExitStatus,
}

impl Children {
    pub fn new() -> Self {
        Children {
            running: Mutex::new(Some(HashSet::new())),
        }
    }

    /// Runs `command` to its end, its stdout captured, its stdin closed. `Ok(None)` when
    /// the batch was stopped before it could start.
    pub fn run(&self, mut command: Command) -> io::Result<Option<Finished>> {
        command.stdin(Stdio::null()).stdout(Stdio::piped());
        die_with_parent(&mut command);
        let mut child = {
            let mut running = lock(&self.running);
            let Some(pids) = running.as_mut() else {
                return Ok(None);
            };
            let child = command.spawn()?;
            pids.insert(child.id() as libc::pid_t);
            child
        };
        // The command owns the parent's copies of what it gave the child (a worker's
        // relay end): closed now, so the child's exit closes them for good.
        drop(command);
        let mut stdout = Vec::new();
        let read = child
            .stdout
            .take()
            .map_or(Ok(0), |mut out| out.read_to_end(&mut stdout));
        let status = self.reap(&mut child);
        read?;
        Ok(Some(Finished {
            stdout,
            status: status?,
        }))
    }

    /// Stops the batch: no child starts any more, and every child running gets SIGTERM
    /// (it ends as `interrupted`, its session saved).
    pub fn stop(&self) {
        let mut running = lock(&self.running);
        for pid in running.take().unwrap_or_default() {
            // SAFETY: kill(2) of a child that is not reaped yet (see `reap`), so the pid
            // is still this child's.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
    }

    /// Waits for the child to exit, and forgets its pid before reaping it: `stop` never
    /// signals a pid that could belong to another process by then.
    fn reap(&self, child: &mut Child) -> io::Result<ExitStatus> {
        let pid = child.id() as libc::pid_t;
        wait_exited(pid)?;
        if let Some(pids) = lock(&self.running).as_mut() {
            pids.remove(&pid);
        }
        child.wait()
    }
}

/// Waits until the child has exited, leaving it to be reaped (`WNOWAIT`).
fn wait_exited(pid: libc::pid_t) -> io::Result<()> {
    loop {
        // SAFETY: waitid(2) on our own child, writing into a zeroed siginfo_t we own.
        let waited = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if waited == 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// The child gets SIGTERM when the thread that started it ends, which for a batch's
/// worker thread is when the batch process dies: a batch killed with SIGKILL leaves no
/// run going on.
#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec, only async-signal-safe calls (prctl, getppid) and no
    // allocation.
    let parent = unsafe { libc::getpid() };
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) == -1 {
                return Err(io::Error::last_os_error());
            }
            // The batch died before the prctl: nobody would send the signal, so the run
            // does not start.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}
