//! The runner's secrets are out of reach of the programs it runs: its environment holds
//! the model keys and NATS credentials, and `/proc/<runner>/environ` (or `mem`) would
//! hand them to any program of the same user.
//!
//! * The runner makes itself not dumpable (`PR_SET_DUMPABLE` 0): the kernel then lets
//!   only a process with `CAP_SYS_PTRACE` (or, for reading, `CAP_SYS_ADMIN` or
//!   `CAP_PERFMON`) read those files. The setting is the process's own: every child starts
//!   dumpable again at its `exec`.
//! * A child running as root has those capabilities, so each command and hook drops them
//!   from its bounding, inheritable and ambient sets before its `exec`: a root program the
//!   agent runs cannot take them back. Without `CAP_SETPCAP` (not root) there is nothing
//!   to drop, and the calls fail harmlessly.
//!
//! What this cannot do (docs/security.md): hide a secret held by another process of the
//! same user (the shell that started `runner`, an MCP server given a token), or stop a root
//! program from reading memory by the other ways root has. The redactor is the second
//! line there: every secret value the runner knows is replaced in what a tool returns.

/// The capabilities that let a process read another's `/proc/<pid>/environ` and `mem`
/// whatever its dumpable flag says (`ptrace_may_access`).
const PEEKING: [u32; 3] = [
    19, /* SYS_PTRACE */
    21, /* SYS_ADMIN */
    38, /* PERFMON */
];

/// Makes this process's environment and memory unreadable to its children (see the
/// module's note). Called once, at the start of the `runner` binary.
pub fn hide_this_process() {
    // SAFETY: prctl on this process with integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// Drops [`PEEKING`] for good, between `fork` and `exec` of a command or hook.
///
/// # Safety
/// Only between `fork` and `exec`: raw system calls, no allocation.
pub unsafe fn drop_peeking_capabilities() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    // SAFETY: prctl and capget/capset on this process, on values of this frame.
    unsafe {
        for cap in PEEKING {
            libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0);
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_LOWER as libc::c_ulong,
                cap as libc::c_ulong,
                0,
                0,
            );
        }
        let mut header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let mut data = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) != 0 {
            return;
        }
        for cap in PEEKING {
            let (word, bit) = ((cap / 32) as usize, 1u32 << (cap % 32));
            data[word].inheritable &= !bit;
        }
        libc::syscall(libc::SYS_capset, &mut header, data.as_ptr());
    }
}
