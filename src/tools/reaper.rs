//! Nothing a command or a hook started outlives its call.
//!
//! A process group is not enough: a program can leave it (`setsid`, a daemon's double
//! fork), and once its parent has exited it belongs to init, out of reach. So each call
//! runs under a reaper of its own: between `fork` and `exec` the child marks itself a
//! child subreaper (`PR_SET_CHILD_SUBREAPER`) and forks again; the grandchild goes on to
//! `exec` the program, and the child stays behind as the reaper, running none of the
//! runner's code but this file. Every process the program starts that loses its parent is
//! re-parented to the reaper, not to init. When the program ends, or the runner asks
//! (`SIGTERM`: the call timed out or the run was interrupted), the reaper kills what is left
//! of the tree, child by child, reaps it, and exits with the program's status.
//!
//! The reaper is a process of the runner's own, one per call, so the runner itself never
//! adopts anything: its other children (MCP servers, sub-runs) and their exit statuses are
//! untouched, and nothing has to tell its children from adopted ones.
//!
//! Everything here runs in a forked child of a multi-threaded process: only
//! async-signal-safe calls (raw system calls), no allocation, no locks.

use std::io;

/// How many times the reaper kills what is left before it gives up (each round kills the
/// children it has, whose own children it then adopts; a tree deeper than this, forking
/// as fast as it is killed, is out of bounds).
const ROUNDS: usize = 1000;

/// The children the reaper reads in one round (more are taken in the next round).
const BATCH: usize = 256;

/// Called between `fork` and `exec` (`pre_exec`): returns in the process that goes on to
/// run the program; the reaper never returns. An error: the call cannot run confined.
///
/// # Safety
/// Only between `fork` and `exec` of a command (it forks, and exits the process).
pub unsafe fn split() -> io::Result<()> {
    // SAFETY: raw system calls on values of this stack frame; see the module's note.
    unsafe {
        // Blocked before the fork, so a SIGTERM sent to the reaper at once is kept for it
        // rather than ending it with the program running; the program gets the mask back.
        let mut waited: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut waited);
        libc::sigaddset(&mut waited, libc::SIGTERM);
        libc::sigaddset(&mut waited, libc::SIGCHLD);
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &waited, &mut before);
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        let reaper = libc::getpid();
        match libc::fork() {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                // The program: it dies with its reaper (which a program can kill: then
                // what it left is out of reach, see docs/security.md).
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                if libc::getppid() != reaper {
                    libc::_exit(137);
                }
                libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
                Ok(())
            }
            program => reap(program, &waited),
        }
    }
}

/// The reaper: waits for the program (or the runner's SIGTERM), then clears the tree and
/// exits as the program did.
unsafe fn reap(program: libc::pid_t, waited: &libc::sigset_t) -> ! {
    // SAFETY: raw system calls; see the module's note.
    unsafe {
        // The runner's descriptors are not the reaper's: above all the pipe through which
        // the runner learns that `exec` happened (it waits until every copy is closed),
        // and the program's output pipes, which then end when the program's tree ends.
        close_all();
        // If the runner dies (killed), the tree goes with it.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        let mut status: Option<libc::c_int> = None;
        loop {
            reap_ended(program, &mut status);
            if status.is_some() {
                break;
            }
            let mut info: libc::siginfo_t = std::mem::zeroed();
            if libc::sigwaitinfo(waited, &mut info) == libc::SIGTERM {
                break;
            }
        }
        // Not reaped yet, so its pid is still its own.
        if status.is_none() {
            libc::kill(program, libc::SIGKILL);
        }
        kill_tree(program, &mut status);
        exit_as(status)
    }
}

/// Reaps every child that has ended; the program's status goes into `status`.
unsafe fn reap_ended(program: libc::pid_t, status: &mut Option<libc::c_int>) {
    loop {
        let mut code = 0;
        // SAFETY: waitpid on our own children.
        let pid = unsafe { libc::waitpid(-1, &mut code, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
        if pid == program {
            *status = Some(code);
        }
    }
}

/// Kills the reaper's children until it has none: each one killed hands its own children
/// to the reaper, which kills them in the next round.
unsafe fn kill_tree(program: libc::pid_t, status: &mut Option<libc::c_int>) {
    let mut pids = [0 as libc::pid_t; BATCH];
    for _ in 0..ROUNDS {
        // SAFETY: reads /proc into a buffer of this frame.
        let found = unsafe { children(&mut pids) };
        for &pid in &pids[..found] {
            // SAFETY: a signal to our own child, not yet reaped (so its pid is not reused).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        for &pid in &pids[..found] {
            let mut code = 0;
            // SAFETY: waitpid on our own child, killed just now.
            if unsafe { libc::waitpid(pid, &mut code, 0) } == program {
                *status = Some(code);
            }
        }
        if found == 0 {
            // No /proc, or nothing left but zombies.
            unsafe { reap_ended(program, status) };
            return;
        }
    }
}

/// The reaper's children (`/proc/thread-self/children`), up to `pids.len()`; how many.
unsafe fn children(pids: &mut [libc::pid_t]) -> usize {
    // SAFETY: open/read/close on a buffer of this frame.
    unsafe {
        let fd = libc::open(
            c"/proc/thread-self/children".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return 0;
        }
        let mut buffer = [0u8; 1024];
        let (mut found, mut number, mut digits) = (0, 0 as libc::pid_t, false);
        'reading: loop {
            let read = libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len());
            if read <= 0 {
                break;
            }
            for &byte in &buffer[..read as usize] {
                if byte.is_ascii_digit() {
                    number = number
                        .saturating_mul(10)
                        .saturating_add((byte - b'0') as i32);
                    digits = true;
                } else if digits {
                    pids[found] = number;
                    found += 1;
                    (number, digits) = (0, false);
                    if found == pids.len() {
                        break 'reading;
                    }
                }
            }
        }
        if digits && found < pids.len() {
            pids[found] = number;
            found += 1;
        }
        libc::close(fd);
        found
    }
}

/// Closes every descriptor.
unsafe fn close_all() {
    // SAFETY: closing descriptors of this process only.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) == 0 {
            return;
        }
        // Kernels before 5.9: one by one, up to the limit on open descriptors.
        let mut limit: libc::rlimit = std::mem::zeroed();
        let top = match libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) {
            0 => limit.rlim_cur.min(65_536) as libc::c_int,
            _ => 1024,
        };
        for fd in 0..top {
            libc::close(fd);
        }
    }
}

/// Ends the reaper as the program ended: its exit code, or its signal.
unsafe fn exit_as(status: Option<libc::c_int>) -> ! {
    // SAFETY: ends this process.
    unsafe {
        let Some(status) = status else {
            libc::_exit(128 + libc::SIGKILL);
        };
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        let signal = libc::WTERMSIG(status);
        libc::signal(signal, libc::SIG_DFL);
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal)
    }
}
