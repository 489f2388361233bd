//! A network namespace of the program's own: `network: none` (no interface up) and
//! `network: loopback` (only `lo` up, a loopback of its own, not the host's). Made in the
//! child between `fork` and `exec`, with raw system calls only; a user namespace comes
//! with it when the runner is not root (an unprivileged user may create a network
//! namespace only inside one of its own).

use std::io;

/// What the child does to its network, decided in the parent.
#[derive(Debug, Clone, Default)]
pub struct NetSetup {
    /// Enter a new network namespace.
    unshare: bool,
    /// Bring `lo` up in it.
    loopback: bool,
    /// Not root: a user namespace too, mapping the runner's ids to themselves.
    maps: Option<IdMaps>,
}

#[derive(Debug, Clone)]
struct IdMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl NetSetup {
    /// The host's network, untouched.
    pub fn host() -> Self {
        NetSetup::default()
    }

    /// A namespace of its own, `lo` up when `loopback`.
    pub fn isolated(loopback: bool) -> Self {
        // SAFETY: plain getters.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let maps = (uid != 0).then(|| IdMaps {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        });
        NetSetup {
            unshare: true,
            loopback,
            maps,
        }
    }

    /// Applies the setup to the calling process.
    ///
    /// # Safety
    /// Only between `fork` and `exec`: raw system calls on memory prepared by the parent.
    pub unsafe fn enter(&self) -> io::Result<()> {
        if !self.unshare {
            return Ok(());
        }
        let mut flags = libc::CLONE_NEWNET;
        if self.maps.is_some() {
            flags |= libc::CLONE_NEWUSER;
        }
        // SAFETY: raw system calls; see the function's note.
        unsafe {
            if libc::unshare(flags) != 0 {
                return Err(io::Error::last_os_error());
            }
            if let Some(maps) = &self.maps {
                // The runner is not dumpable (`tools::isolate`), so its fork's `/proc/self`
                // files belong to root and the maps cannot be opened: the child is made
                // dumpable for the three writes (it holds a copy of the runner's memory
                // until `exec`, so not for longer), then not again.
                libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
                let written = write_maps(maps);
                libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
                written?;
            }
            if self.loopback {
                loopback_up()?;
            }
        }
        Ok(())
    }
}

/// Maps the runner's user and group to themselves in the new user namespace.
unsafe fn write_maps(maps: &IdMaps) -> io::Result<()> {
    // SAFETY: see `write_proc`.
    unsafe {
        write_proc(c"/proc/self/setgroups", b"deny")?;
        write_proc(c"/proc/self/uid_map", &maps.uid_map)?;
        write_proc(c"/proc/self/gid_map", &maps.gid_map)
    }
}

/// Writes `bytes` to a `/proc/self` file in one `write`.
unsafe fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: open/write/close on a NUL-terminated path and a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let error = io::Error::last_os_error();
        libc::close(fd);
        if written != bytes.len() as isize {
            return Err(error);
        }
    }
    Ok(())
}

/// `ip link set lo up`, by `SIOCSIFFLAGS` on a datagram socket.
unsafe fn loopback_up() -> io::Result<()> {
    // SAFETY: socket/ioctl/close on a zeroed `ifreq` of this frame.
    unsafe {
        let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if socket < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = *byte as libc::c_char;
        }
        let mut result = libc::ioctl(socket, libc::SIOCGIFFLAGS, &mut request);
        if result == 0 {
            request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            result = libc::ioctl(socket, libc::SIOCSIFFLAGS, &request);
        }
        let error = io::Error::last_os_error();
        libc::close(socket);
        if result != 0 {
            return Err(error);
        }
    }
    Ok(())
}
