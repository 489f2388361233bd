//! The child's side: the session store's entries, asked of the worker that started it.

use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::wire::{Call, Reply, read_frame, write_frame};
use crate::checkpoint::{CheckpointError, RemoteHold, SessionHold};
use crate::nats::NatsError;
use crate::nats::buckets::LEASES;
use crate::nats::session_kv::SessionKv;
use crate::sync::lock;

/// The session store, through the worker.
#[derive(Clone)]
pub struct RelayedKv {
    /// One call at a time: a call is its frame and the answer's.
    line: Arc<Mutex<UnixStream>>,
    /// Set when the session is lost to this run for good: the relay broke (the worker
    /// died), or the worker lost the session's lease to another process.
    lost: Arc<AtomicBool>,
}

impl std::fmt::Debug for RelayedKv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RelayedKv")
    }
}

impl RelayedKv {
    /// Takes the end of the relay the worker gave this process at `fd`, and keeps it from
    /// the processes this one starts (tools, hooks, servers): they never reach the store.
    pub fn adopt(fd: i32) -> Result<Self, String> {
        let not_given = || format!("--sessions-fd {fd}: not a socket a worker gave this run");
        // SAFETY: fstat(2) and fcntl(2) on a descriptor number, writing into a zeroed stat
        // we own; neither takes ownership.
        unsafe {
            let mut stat: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut stat) != 0 || stat.st_mode & libc::S_IFMT != libc::S_IFSOCK {
                return Err(not_given());
            }
            if libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) != 0 {
                return Err(not_given());
            }
        }
        // SAFETY: the worker gave this process the descriptor, and nothing else in it owns
        // it: it is taken once, when the command line is read.
        Ok(Self::over(unsafe { UnixStream::from_raw_fd(fd) }))
    }

    pub(super) fn over(stream: UnixStream) -> Self {
        RelayedKv {
            line: Arc::new(Mutex::new(stream)),
            lost: Arc::new(AtomicBool::new(false)),
        }
    }

    fn call(&self, call: &Call, body: &[u8]) -> Result<(Reply, Vec<u8>), NatsError> {
        let broken = |reason: String| {
            self.lost.store(true, Ordering::SeqCst);
            NatsError::new(
                "cannot reach the session store through the worker",
                format!("{reason} (the worker that started this run stopped?)"),
            )
        };
        let mut line = lock(&self.line);
        write_frame(&mut *line, call, body).map_err(|e| broken(e.to_string()))?;
        match read_frame::<Reply>(&mut *line) {
            Ok(Some((Reply::Failed { what, reason }, _))) => Err(NatsError { what, reason }),
            Ok(Some((Reply::Lost { what, reason }, _))) => {
                self.lost.store(true, Ordering::SeqCst);
                Err(NatsError { what, reason })
            }
            Ok(Some(answer)) => Ok(answer),
            Ok(None) => Err(broken("the worker closed the relay".into())),
            Err(error) => Err(broken(error.to_string())),
        }
    }

    fn done(&self, call: &Call, body: &[u8]) -> Result<(), NatsError> {
        match self.call(call, body)? {
            (Reply::Done, _) => Ok(()),
            (other, _) => Err(unexpected(&other)),
        }
    }
}

fn unexpected(reply: &Reply) -> NatsError {
    NatsError::new(
        "the worker's session relay",
        format!("unexpected answer {reply:?}"),
    )
}

impl SessionKv for RelayedKv {
    fn get(&self, key: &str) -> Result<Option<Bytes>, NatsError> {
        let call = Call::Get { key: key.into() };
        match self.call(&call, &[])? {
            (Reply::Found, body) => Ok(Some(body.into())),
            (Reply::Missing, _) => Ok(None),
            (other, _) => Err(unexpected(&other)),
        }
    }

    fn put(&self, key: &str, value: Vec<u8>) -> Result<(), NatsError> {
        self.done(&Call::Put { key: key.into() }, &value)
    }

    fn purge(&self, key: &str) -> Result<(), NatsError> {
        self.done(&Call::Purge { key: key.into() }, &[])
    }

    fn keys(&self) -> Result<Vec<String>, NatsError> {
        Err(NatsError::new(
            "cannot list the sessions",
            "a run started by a worker reaches only its own session",
        ))
    }

    fn lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    fn hold(&self, session_id: &str) -> Result<SessionHold, CheckpointError> {
        let call = Call::Hold {
            session_id: session_id.into(),
        };
        let failed = |error: NatsError| CheckpointError::Io {
            path: format!("nats:{LEASES}/{session_id}").into(),
            source: std::io::Error::other(error.to_string()),
        };
        match self.call(&call, &[]).map_err(failed)? {
            (Reply::Done, _) => Ok(SessionHold::Remote(Box::new(RelayedHold {
                kv: self.clone(),
                session_id: session_id.to_string(),
            }))),
            (Reply::Leased { holder }, _) => Err(CheckpointError::Leased {
                session_id: session_id.to_string(),
                holder,
            }),
            (other, _) => Err(failed(unexpected(&other))),
        }
    }
}

/// A session the worker holds for this process, until dropped.
pub struct RelayedHold {
    kv: RelayedKv,
    session_id: String,
}

/// Never found lost here: the worker refuses the writes instead.
impl RemoteHold for RelayedHold {
    fn is_lost(&self) -> bool {
        false
    }
}

impl Drop for RelayedHold {
    /// The worker lets go of the lease (it would at this process's exit anyway).
    fn drop(&mut self) {
        let call = Call::Release {
            session_id: std::mem::take(&mut self.session_id),
        };
        let _ = self.kv.done(&call, &[]);
    }
}
