//! The worker's side: a thread per child answers its calls with the worker's session store.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::Arc;
use std::thread::JoinHandle;

use super::wire::{Call, Reply, read_frame, write_frame};
use crate::checkpoint::{CheckpointError, SessionHold};
use crate::nats::NatsError;
use crate::nats::session_kv::SessionKv;

/// A relay given to a child: end it with [`Given::finish`] once the child has exited.
pub struct Given {
    ours: UnixStream,
    serving: JoinHandle<()>,
}

/// Gives the child `command` starts an end of a relay to `kv` for the session
/// `session_id`, and starts answering it.
pub fn give(command: &mut Command, kv: Arc<dyn SessionKv>, session_id: &str) -> io::Result<Given> {
    let (ours, theirs) = UnixStream::pair()?;
    let theirs = OwnedFd::from(theirs);
    command
        .arg("--sessions-fd")
        .arg(theirs.as_raw_fd().to_string());
    // SAFETY: between fork and exec, one fcntl(2), which is async-signal-safe. It clears
    // close-on-exec in this child only: every other child started meanwhile (the worker
    // runs several) gets no copy. The closure owns the parent's copy, which is closed
    // when the command is dropped.
    unsafe {
        command.pre_exec(move || {
            if libc::fcntl(theirs.as_raw_fd(), libc::F_SETFD, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Given::start(ours, kv, session_id)
}

/// What a worker gives its batch's children: a relay to its session store.
pub struct Relayed(pub Arc<dyn SessionKv>);

impl crate::batch::job::GiveSessions for Relayed {
    fn give(
        &self,
        command: &mut Command,
        session: &str,
    ) -> io::Result<Box<dyn crate::batch::job::Given>> {
        Ok(Box::new(give(command, self.0.clone(), session)?))
    }
}

impl crate::batch::job::Given for Given {
    fn finish(self: Box<Self>) {
        Given::finish(*self);
    }
}

impl Given {
    /// Answers the calls that come on `ours` with `kv`, for the session `session_id`.
    fn start(ours: UnixStream, kv: Arc<dyn SessionKv>, session_id: &str) -> io::Result<Given> {
        let mut relay = Relay {
            kv,
            session_id: session_id.to_string(),
            hold: None,
        };
        let line = ours.try_clone()?;
        let serving = std::thread::Builder::new()
            .name("runner-relay".into())
            .spawn(move || relay.serve(line))?;
        Ok(Given { ours, serving })
    }

    /// Stops answering (a descendant that kept the child's end open cannot keep the relay
    /// going) and lets go of the session's lease.
    pub fn finish(self) {
        let _ = self.ours.shutdown(std::net::Shutdown::Both);
        let _ = self.serving.join();
    }
}

/// One child's relay.
struct Relay {
    kv: Arc<dyn SessionKv>,
    /// The only session the child may reach: its job's.
    session_id: String,
    /// Taken for the child; dropped (the lease deleted) when it lets go or its end closes.
    hold: Option<SessionHold>,
}

impl Relay {
    fn serve(&mut self, mut line: UnixStream) {
        loop {
            let (call, body) = match read_frame::<Call>(&mut line) {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(error) => {
                    tracing::debug!(%error, session = %self.session_id, "the relay's child sent a broken frame");
                    break;
                }
            };
            tracing::trace!(session = %self.session_id, ?call, "relay call");
            let (reply, value) = self.answer(call, body);
            if write_frame(&mut line, &reply, &value).is_err() {
                break;
            }
        }
        self.hold = None;
    }

    fn answer(&mut self, call: Call, body: Vec<u8>) -> (Reply, Vec<u8>) {
        let done = |written: Result<(), NatsError>| written.map(|()| (Reply::Done, Vec::new()));
        let answered = match call {
            Call::Get { key } => {
                self.reachable(&key)
                    .and_then(|()| self.kv.get(&key))
                    .map(|found| match found {
                        Some(value) => (Reply::Found, value.into()),
                        None => (Reply::Missing, Vec::new()),
                    })
            }
            Call::Put { key } | Call::Purge { key } if self.lease_lost() => {
                let reason = "this run no longer holds the session: its lease lapsed (not renewed in time), and another process may have taken it over";
                let what = format!("cannot write {key}");
                return (
                    Reply::Lost {
                        what,
                        reason: reason.into(),
                    },
                    Vec::new(),
                );
            }
            Call::Put { key } => done(self.writable(&key).and_then(|()| self.kv.put(&key, body))),
            Call::Purge { key } => done(self.writable(&key).and_then(|()| self.kv.purge(&key))),
            Call::Hold { session_id } => Ok((self.take(&session_id), Vec::new())),
            Call::Release { session_id } => {
                if session_id == self.session_id {
                    self.hold = None;
                }
                Ok((Reply::Done, Vec::new()))
            }
        };
        answered.unwrap_or_else(|NatsError { what, reason }| {
            (Reply::Failed { what, reason }, Vec::new())
        })
    }

    /// The key is one of the job's session: `<id>.meta`, `<id>.snap`, `<id>.rec.<n>`.
    fn reachable(&self, key: &str) -> Result<(), NatsError> {
        let within = key
            .strip_prefix(self.session_id.as_str())
            .is_some_and(|rest| rest.starts_with('.'));
        match within {
            true => Ok(()),
            false => Err(self.foreign(format!("cannot reach {key}"))),
        }
    }

    fn foreign(&self, what: String) -> NatsError {
        let reason = format!(
            "this run may reach only its own session, {}",
            self.session_id
        );
        NatsError::new(what, reason)
    }

    /// The key is the session's, and the worker holds the session for the child: a write
    /// after the lease was lost would go over the new holder's.
    fn writable(&self, key: &str) -> Result<(), NatsError> {
        self.reachable(key)?;
        let refused = |reason: &str| Err(NatsError::new(format!("cannot write {key}"), reason));
        match &self.hold {
            None => refused("the session is not held for this run"),
            Some(_) => Ok(()),
        }
    }

    /// The worker held the session for the child, and lost it (`Reply::Lost`).
    fn lease_lost(&self) -> bool {
        self.hold.as_ref().is_some_and(SessionHold::is_lost)
    }

    /// Takes the session's lease for the child.
    fn take(&mut self, session_id: &str) -> Reply {
        if session_id != self.session_id {
            let NatsError { what, reason } = self.foreign(format!("cannot hold {session_id}"));
            return Reply::Failed { what, reason };
        }
        if self.hold.is_some() {
            return Reply::Done;
        }
        match self.kv.hold(session_id) {
            Ok(hold) => {
                self.hold = Some(hold);
                Reply::Done
            }
            Err(CheckpointError::Leased { holder, .. }) => Reply::Leased { holder },
            Err(error) => Reply::Failed {
                what: format!("cannot hold the session {session_id}"),
                reason: error.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use bytes::Bytes;

    use super::*;
    use crate::checkpoint::{CheckpointStore, FileCheckpointStore};
    use crate::nats::relay::RelayedKv;

    /// Entries in memory; sessions held through the file store's locks, so a test can see
    /// whether one is still held. The session `taken` is another process's.
    struct Memory {
        entries: Mutex<HashMap<String, Bytes>>,
        locks: FileCheckpointStore,
    }

    impl SessionKv for Memory {
        fn get(&self, key: &str) -> Result<Option<Bytes>, NatsError> {
            Ok(self.entries.lock().unwrap().get(key).cloned())
        }
        fn put(&self, key: &str, value: Vec<u8>) -> Result<(), NatsError> {
            self.entries
                .lock()
                .unwrap()
                .insert(key.into(), value.into());
            Ok(())
        }
        fn purge(&self, key: &str) -> Result<(), NatsError> {
            self.entries.lock().unwrap().remove(key);
            Ok(())
        }
        fn keys(&self) -> Result<Vec<String>, NatsError> {
            Ok(self.entries.lock().unwrap().keys().cloned().collect())
        }
        fn hold(&self, session_id: &str) -> Result<SessionHold, CheckpointError> {
            match session_id {
                "taken" => Err(CheckpointError::Leased {
                    session_id: session_id.into(),
                    holder: Some("another worker".into()),
                }),
                _ => self.locks.hold(session_id),
            }
        }
    }

    fn relay(session_id: &str, name: &str) -> (RelayedKv, Given, Arc<Memory>) {
        let dir = std::env::temp_dir().join(format!("runner-relay-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let memory = Arc::new(Memory {
            entries: Mutex::default(),
            locks: FileCheckpointStore::create(&dir).unwrap(),
        });
        let (ours, theirs) = UnixStream::pair().unwrap();
        let given = Given::start(ours, memory.clone(), session_id).unwrap();
        (RelayedKv::over(theirs), given, memory)
    }

    #[test]
    fn a_child_reads_and_writes_its_session_while_the_worker_holds_it_for_it() {
        let (child, given, memory) = relay("s1", "own");
        let refused = child.put("s1.rec.1", b"{}".to_vec()).unwrap_err();
        assert_eq!(refused.reason, "the session is not held for this run");
        let hold = child.hold("s1").unwrap();
        assert!(memory.locks.hold("s1").is_err(), "the worker holds it");
        child.put("s1.rec.1", b"{\"seq\":1}".to_vec()).unwrap();
        assert_eq!(child.get("s1.rec.1").unwrap().unwrap(), &b"{\"seq\":1}"[..]);
        assert_eq!(child.get("s1.meta").unwrap(), None);
        child.purge("s1.rec.1").unwrap();
        assert_eq!(memory.get("s1.rec.1").unwrap(), None);
        drop(hold);
        assert!(
            memory.locks.hold("s1").is_ok(),
            "let go when the child lets go"
        );
        given.finish();
    }

    #[test]
    fn a_child_reaches_no_other_session() {
        let (child, given, memory) = relay("s1", "other");
        memory.put("s2.meta", b"{}".to_vec()).unwrap();
        let _hold = child.hold("s1").unwrap();
        for refused in [
            child.get("s2.meta").unwrap_err(),
            child.get("s1x.meta").unwrap_err(),
            child.put("s2.rec.1", Vec::new()).unwrap_err(),
            child.purge("s2.meta").unwrap_err(),
        ] {
            assert_eq!(
                refused.reason,
                "this run may reach only its own session, s1"
            );
        }
        let held = child.hold("s2").map(drop).unwrap_err();
        assert!(
            held.to_string().contains("only its own session, s1"),
            "{held}"
        );
        assert!(child.keys().is_err());
        given.finish();
    }

    #[test]
    fn a_session_held_elsewhere_is_refused_as_held_and_a_closed_child_lets_go() {
        let (child, given, _) = relay("taken", "taken");
        match child.hold("taken").map(drop) {
            Err(CheckpointError::Leased { holder, .. }) => {
                assert_eq!(holder.as_deref(), Some("another worker"));
            }
            other => panic!("{:?}", other.err()),
        }
        given.finish();

        let (child, given, memory) = relay("s1", "closed");
        let hold = child.hold("s1").unwrap();
        // The child dies without letting go: the worker lets go once it has exited.
        std::mem::forget(hold);
        given.finish();
        assert!(memory.locks.hold("s1").is_ok());
    }
}
