//! A session is held by one process at a time: an advisory lock (`flock`) on the file
//! `<session>/lock`, taken before the run's first model call and held until the process is
//! done with the session. Two processes writing one session would run the same pending
//! tool calls twice and overwrite each other's history.
//!
//! The OS drops the lock when its holder exits, however it exits (kill -9 included), so a
//! crash never leaves a session locked. The holder writes its pid into the file, so a
//! refused command can say which process to look at. `File::try_lock` is `flock(LOCK_EX |
//! LOCK_NB)` on Unix: the lock belongs to the open file, not to the process.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Read;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::error::CheckpointError;

/// The lock file's name in the session's directory.
pub const LOCK_FILE: &str = "lock";

/// How many times to try when the lock file keeps being removed under us (by `sessions rm`,
/// or a holder tidying up a session that never saved anything) before giving up.
const ATTEMPTS: usize = 8;

/// The lock on one session, held until dropped.
#[derive(Debug)]
pub struct SessionLock {
    /// Open for as long as the lock is held: closing it releases the lock.
    file: File,
    dir: PathBuf,
}

impl SessionLock {
    /// Takes the lock of the session in `dir` (creating the directory when needed), or
    /// says which process holds it. Never waits.
    pub(super) fn acquire(dir: &Path, session_id: &str) -> Result<Self, CheckpointError> {
        for _ in 0..ATTEMPTS {
            if let Some(lock) = Self::try_acquire(dir, session_id)? {
                return Ok(lock);
            }
        }
        Err(CheckpointError::Io {
            path: dir.join(LOCK_FILE),
            source: std::io::Error::other("the lock file kept being removed while taking it"),
        })
    }

    /// One attempt; `None` when the lock file was removed before it was locked, so the
    /// lock taken would guard a file nobody else can find.
    fn try_acquire(dir: &Path, session_id: &str) -> Result<Option<Self>, CheckpointError> {
        let path = dir.join(LOCK_FILE);
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| CheckpointError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        // Opened close-on-exec (as std always does), so tools and MCP servers started by
        // the run do not inherit the lock and keep it after the run dies.
        let opened = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path);
        let mut file = match opened {
            Ok(file) => file,
            // The directory was removed between creating it and opening the file.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(io(&path)(source)),
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(CheckpointError::Held {
                    session_id: session_id.to_string(),
                    pid: read_pid(&mut file),
                });
            }
            Err(TryLockError::Error(source)) => return Err(io(&path)(source)),
        }
        if !is_at(&file, &path) {
            return Ok(None);
        }
        write_pid(&file).map_err(io(&path))?;
        Ok(Some(SessionLock {
            file,
            dir: dir.to_path_buf(),
        }))
    }
}

impl Drop for SessionLock {
    /// A session directory holding nothing but the lock (a run that stopped before its
    /// first checkpoint, a resume of a session that does not exist) is removed, so failed
    /// starts do not pile up empty directories. Done while the lock is still held, and
    /// only to our own lock file: a lock file is only ever removed by its holder.
    fn drop(&mut self) {
        let path = self.dir.join(LOCK_FILE);
        let only_the_lock = std::fs::read_dir(&self.dir)
            .map(|entries| {
                entries
                    .flatten()
                    .all(|entry| entry.file_name() == LOCK_FILE)
            })
            .unwrap_or(false);
        if only_the_lock && is_at(&self.file, &path) {
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

/// Whether `path` still names the open `file` (and not a newer file, or nothing).
fn is_at(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

/// Writes this process's pid over the previous holder's. Written before being cut to
/// length, so a reader sees the old pid or the new one, never an empty file (except
/// in the moment after the file was first created).
fn write_pid(file: &File) -> std::io::Result<()> {
    let pid = format!("{}\n", std::process::id());
    file.write_all_at(pid.as_bytes(), 0)?;
    file.set_len(pid.len() as u64)
}

/// The holder's pid, from its lock file; `None` when it has not written it yet.
fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    text.lines().next()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("runner-lock-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_held_session_is_refused_with_the_holders_pid_until_it_is_released() {
        let dir = temp_dir("held");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("metadata.json"), "{}").unwrap();
        let held = SessionLock::acquire(&dir, "s").unwrap();
        match SessionLock::acquire(&dir, "s") {
            Err(CheckpointError::Held { session_id, pid }) => {
                assert_eq!(session_id, "s");
                assert_eq!(pid, Some(std::process::id()));
            }
            other => panic!("not refused: {other:?}"),
        }
        drop(held);
        let again = SessionLock::acquire(&dir, "s").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join(LOCK_FILE)).unwrap(),
            format!("{}\n", std::process::id())
        );
        drop(again);
        assert!(
            dir.join(LOCK_FILE).exists(),
            "a saved session keeps its lock file"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_directory_holding_only_the_lock_is_removed_on_release() {
        let dir = temp_dir("empty");
        let lock = SessionLock::acquire(&dir, "s").unwrap();
        assert!(dir.join(LOCK_FILE).is_file());
        drop(lock);
        assert!(!dir.exists());
    }

    #[test]
    fn a_lock_file_removed_while_waiting_is_not_taken() {
        let dir = temp_dir("removed");
        let lock = SessionLock::acquire(&dir, "s").unwrap();
        // Someone opened the old file; then the holder removed the session.
        let stale = File::open(dir.join(LOCK_FILE)).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        drop(lock);
        assert!(stale.try_lock().is_ok(), "the old file is free");
        assert!(
            !is_at(&stale, &dir.join(LOCK_FILE)),
            "but no longer the session's"
        );
        let fresh = SessionLock::acquire(&dir, "s").unwrap();
        assert!(is_at(&fresh.file, &dir.join(LOCK_FILE)));
        drop(fresh);
    }
}
