//! The file store: `<dir>/<session_id>/journal.jsonl` (a record per checkpoint, appended,
//! synced where a save needs it: `journal.rs`), `checkpoint.json` (a snapshot of the latest
//! state, rewritten now and then so a resume replays only a short tail), `metadata.json`,
//! and `lock`, which holds the session for one process at a time. Sessions saved before
//! the journal have `steps/<step>.json` files, still read for branching. The snapshot and
//! the metadata are written atomically (temp file, fsync, rename); every load checks the
//! JSON, the version, the state inside and each record's checksum, and names the file when
//! it refuses it.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::de::DeserializeOwned;

use super::error::CheckpointError;
use super::hold::SessionHold;
use super::journal::{
    JOURNAL_FILE, JournalPosition, JournalWriter, Record, RecordHeader, parse, records,
};
use super::lock::SessionLock;
use super::replay::Replay;
use super::session_id::check_session_id;
use super::store::{
    CHECKPOINT_VERSION, Checkpoint, CheckpointRef, CheckpointStore, Saved, SessionMetadata,
    SessionStatus, SessionSummary, summaries,
};
use crate::engine::AgentState;
use crate::engine::checkpointing::{Durability, MAX_UNSYNCED};
use crate::fsutil::write_atomically;
use crate::sync::lock;

/// The snapshot's file name.
const SNAPSHOT_FILE: &str = "checkpoint.json";

/// The journal may grow past the snapshot by this much before a new snapshot, at least:
/// small sessions are not rewritten at every step.
const MIN_TAIL: u64 = 64 * 1024;

/// How many times the snapshot's size the records after it may weigh before a new one. At
/// 1, snapshots cost as much as the journal (the whole state written each time the tail
/// caught up with it: a tenth of a step's instructions); at 3, a third of that, and a resume
/// reads at most about four times the state.
const TAIL_PER_SNAPSHOT: u64 = 3;

/// Whether records weighing `tail` bytes, written after a snapshot of `snapshot` bytes (0:
/// none), call for a new snapshot. Both stores follow this rule.
pub(crate) fn snapshot_outweighed(tail: u64, snapshot: u64) -> bool {
    tail >= (snapshot * TAIL_PER_SNAPSHOT).max(MIN_TAIL)
}

pub struct FileCheckpointStore {
    dir: PathBuf,
    /// The journals this process appends to, by session.
    journals: Mutex<HashMap<String, OpenJournal>>,
    /// What loading had to drop (a torn journal tail), for the caller to report.
    warnings: Mutex<Vec<String>>,
}

/// A session's journal open for appending, and where its snapshot stands.
struct OpenJournal {
    writer: JournalWriter,
    /// The snapshot's size, and the journal's length when it was written.
    snapshot: Option<(u64, u64)>,
}

impl OpenJournal {
    fn open(dir: &Path) -> Result<Self, CheckpointError> {
        std::fs::create_dir_all(dir).map_err(|source| CheckpointError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let writer = JournalWriter::open(dir)?;
        let snapshot = std::fs::metadata(dir.join(SNAPSHOT_FILE))
            .ok()
            .map(|file| (file.len(), writer.end));
        Ok(OpenJournal { writer, snapshot })
    }

    /// A new snapshot is due when the run ends, or when the records since the last one (or
    /// since the journal's start) outweigh it ([`snapshot_outweighed`]): resume then reads
    /// a bounded multiple of the state, and the bytes written in all stay proportional to
    /// the journal. A session's first record needs none: the journal replays from its start
    /// alone, and a snapshot there cost a one-step run two syncs and a rename.
    fn compaction_due(&self, status: SessionStatus) -> bool {
        let (bytes, at) = self.snapshot.unwrap_or((0, 0));
        status != SessionStatus::Running || snapshot_outweighed(self.writer.end - at, bytes)
    }
}

/// The bytes of `path` from `offset` on (none when the file does not exist).
fn read_from(path: &Path, offset: u64) -> Result<Vec<u8>, CheckpointError> {
    let io = |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(io(error)),
    };
    file.seek(SeekFrom::Start(offset)).map_err(io)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(io)?;
    Ok(bytes)
}

impl FileCheckpointStore {
    /// Opens (creating it when needed) the sessions directory.
    pub fn create(dir: impl AsRef<Path>) -> Result<Self, CheckpointError> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|source| CheckpointError::Io {
            path: dir.clone(),
            source,
        })?;
        Ok(FileCheckpointStore {
            dir,
            journals: Mutex::default(),
            warnings: Mutex::default(),
        })
    }

    /// Keeps the warning for a journal whose reading stopped at a torn or damaged record,
    /// for the command to print.
    fn note_torn(&self, path: &Path, torn: Option<String>) {
        if let Some(why) = torn {
            let warning = format!("{}: {why}; it and what follows are dropped", path.display());
            let mut warnings = lock(&self.warnings);
            if !warnings.contains(&warning) {
                warnings.push(warning);
            }
        }
    }

    /// Takes in the journal records of `dir` after `position`, up to the last one `want`
    /// picks, and returns the checkpoint it ends at (`None`: no record is picked).
    fn replay(
        &self,
        dir: &Path,
        position: JournalPosition,
        replay: &mut Replay,
        want: impl Fn(&Record<'_>) -> bool,
    ) -> Result<Option<Checkpoint>, CheckpointError> {
        let path = dir.join(JOURNAL_FILE);
        let bytes = read_from(&path, position.offset)?;
        let (found, torn) = records(&bytes, position.offset);
        self.note_torn(&path, torn);
        let mut tail = Vec::with_capacity(found.len());
        for (json, _) in found {
            let record = parse(json, &path)?;
            if record.seq > position.seq {
                tail.push(record);
            }
        }
        let Some(last) = tail.iter().rposition(want) else {
            return Ok(None);
        };
        for record in &tail[..=last] {
            replay.apply(record, &path)?;
        }
        let session_id = dir.file_name().unwrap_or_default().to_string_lossy();
        Ok(Some(replay.checkpoint(&tail[last], &session_id)))
    }

    /// Takes the session's lock, for this process only (see `lock.rs`); refused while
    /// another process holds it.
    pub fn lock(&self, session_id: &str) -> Result<SessionLock, CheckpointError> {
        SessionLock::acquire(&self.session_dir(session_id)?, session_id)
    }

    fn session_dir(&self, session_id: &str) -> Result<PathBuf, CheckpointError> {
        check_session_id(session_id)?;
        Ok(self.dir.join(session_id))
    }

    fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), CheckpointError> {
        let bytes = serde_json::to_vec_pretty(value).map_err(|e| CheckpointError::Corrupt {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        Self::write_bytes(path, &bytes)
    }

    fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| CheckpointError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        write_atomically(path, bytes).map_err(|source| CheckpointError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Reads a JSON file; `None` when it does not exist.
    fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, CheckpointError> {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(CheckpointError::Io {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| CheckpointError::Corrupt {
                path: path.to_path_buf(),
                reason: format!("{e} (the file may be truncated)"),
            })?;
        let version = value
            .get("version")
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        if version != CHECKPOINT_VERSION {
            return Err(CheckpointError::Version {
                path: path.to_path_buf(),
                found: version.to_string(),
            });
        }
        serde_json::from_value(value)
            .map(Some)
            .map_err(|e| CheckpointError::Corrupt {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })
    }

    fn read_checkpoint(path: &Path) -> Result<Option<Checkpoint>, CheckpointError> {
        let Some(checkpoint) = Self::read_json::<Checkpoint>(path)? else {
            return Ok(None);
        };
        AgentState::from_json(&checkpoint.state).map_err(|e| CheckpointError::Corrupt {
            path: path.to_path_buf(),
            reason: format!("the saved state: {e}"),
        })?;
        Ok(Some(checkpoint))
    }
}

impl CheckpointStore for FileCheckpointStore {
    /// Appends the checkpoint's record to the journal (one sync), and says whether a new
    /// snapshot is due (`compaction_due`).
    fn save(
        &self,
        session_id: &str,
        checkpoint: &CheckpointRef<'_>,
        durability: Durability,
    ) -> Result<Saved, CheckpointError> {
        let mut journals = lock(&self.journals);
        // Looked up by the id first: the session's directory and an owned key are made
        // only when its journal is opened, not at every save.
        if !journals.contains_key(session_id) {
            let journal = OpenJournal::open(&self.session_dir(session_id)?)?;
            journals.insert(session_id.to_string(), journal);
        }
        let journal = journals.get_mut(session_id).expect("opened above");
        let header = RecordHeader {
            checkpoint_id: checkpoint.checkpoint_id,
            timestamp: checkpoint.timestamp,
            agent: checkpoint.agent,
            status: checkpoint.status,
        };
        journal
            .writer
            .append(header, checkpoint.state, checkpoint.pending)?;
        // The metadata is written at the session's first record (it makes the session
        // exist), and rewritten with each snapshot, which is due at the end.
        let snapshot_due = journal.compaction_due(checkpoint.status);
        let metadata_due = snapshot_due || journal.writer.seq == 1;
        // Both name this record: it is synced first, so neither ever points past what is
        // on disk.
        if durability == Durability::Now
            || metadata_due
            || journal.writer.unsynced_longer_than(MAX_UNSYNCED)
        {
            journal.writer.sync()?;
        }
        Ok(Saved {
            position: JournalPosition {
                seq: journal.writer.seq,
                offset: journal.writer.end,
            },
            metadata_due,
            snapshot_due,
        })
    }

    fn snapshot(
        &self,
        session_id: &str,
        checkpoint: &CheckpointRef<'_>,
        position: JournalPosition,
    ) -> Result<(), CheckpointError> {
        let path = self.session_dir(session_id)?.join(SNAPSHOT_FILE);
        let snapshot = CheckpointRef {
            journal: Some(position),
            ..*checkpoint
        };
        let bytes = serde_json::to_vec(&snapshot).map_err(|e| CheckpointError::Corrupt {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        Self::write_bytes(&path, &bytes)?;
        let mut journals = lock(&self.journals);
        if let Some(journal) = journals.get_mut(session_id) {
            journal.snapshot = Some((bytes.len() as u64, position.offset));
        }
        Ok(())
    }

    /// The snapshot and the journal records after it.
    fn load(&self, session_id: &str) -> Result<Option<Checkpoint>, CheckpointError> {
        let dir = self.session_dir(session_id)?;
        let snapshot = Self::read_checkpoint(&dir.join(SNAPSHOT_FILE))?;
        let position = snapshot
            .as_ref()
            .and_then(|c| c.journal)
            .unwrap_or_default();
        let mut replay = match &snapshot {
            Some(checkpoint) => Replay::from_checkpoint(checkpoint, &dir.join(SNAPSHOT_FILE))?,
            None => Replay::new(),
        };
        let latest = self.replay(&dir, position, &mut replay, |_| true)?;
        Ok(latest.or(snapshot))
    }

    /// The last checkpoint of `step`, replayed from the journal's start; a session saved
    /// before the journal keeps it in `steps/<step>.json`.
    fn load_step(
        &self,
        session_id: &str,
        step: u64,
    ) -> Result<Option<Checkpoint>, CheckpointError> {
        let dir = self.session_dir(session_id)?;
        let mut replay = Replay::new();
        let start = JournalPosition::default();
        let found = self.replay(&dir, start, &mut replay, |record| record.step == step)?;
        match found {
            Some(checkpoint) => Ok(Some(checkpoint)),
            None => Self::read_checkpoint(&dir.join("steps").join(format!("{step}.json"))),
        }
    }

    /// Refused while a process holds the session: its run would write the session again.
    fn delete(&self, session_id: &str) -> Result<(), CheckpointError> {
        let dir = self.session_dir(session_id)?;
        if !dir.exists() {
            return Err(CheckpointError::Io {
                path: dir,
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such session"),
            });
        }
        // Held while the directory (lock file included) goes, so no one takes it meanwhile.
        let _lock = self.lock(session_id)?;
        std::fs::remove_dir_all(&dir).map_err(|source| CheckpointError::Io { path: dir, source })
    }

    fn list(&self) -> Result<Vec<SessionSummary>, CheckpointError> {
        let entries = std::fs::read_dir(&self.dir).map_err(|source| CheckpointError::Io {
            path: self.dir.clone(),
            source,
        })?;
        let ids = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string());
        Ok(summaries(ids, |id| self.metadata(id)))
    }

    /// `metadata.json`, with the steps, status and time of the journal's last record when
    /// the journal went on after the file was written (a run in progress, or killed).
    fn metadata(&self, session_id: &str) -> Result<Option<SessionMetadata>, CheckpointError> {
        let dir = self.session_dir(session_id)?;
        let Some(mut metadata) = Self::read_json::<SessionMetadata>(&dir.join("metadata.json"))?
        else {
            return Ok(None);
        };
        let Some(offset) = metadata.journal_offset else {
            return Ok(Some(metadata));
        };
        let path = dir.join(JOURNAL_FILE);
        let tail = read_from(&path, offset)?;
        let (found, torn) = records(&tail, offset);
        self.note_torn(&path, torn);
        if let Some((json, _)) = found.last() {
            let record = parse(json, &path)?;
            metadata.steps = record.step;
            metadata.status = record.status;
            metadata.updated = record.timestamp.into_owned();
        }
        Ok(Some(metadata))
    }

    fn save_metadata(&self, metadata: &SessionMetadata) -> Result<(), CheckpointError> {
        Self::write_json(
            &self
                .session_dir(&metadata.session_id)?
                .join("metadata.json"),
            metadata,
        )
    }

    fn exists(&self, session_id: &str) -> Result<bool, CheckpointError> {
        Ok(self
            .session_dir(session_id)?
            .join("metadata.json")
            .is_file())
    }

    fn hold(&self, session_id: &str) -> Result<SessionHold, CheckpointError> {
        self.lock(session_id).map(SessionHold::Lock)
    }

    fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut lock(&self.warnings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_is_due_once_the_records_after_it_weigh_three_times_as_much() {
        // No snapshot yet: the journal alone, until it is worth one.
        assert!(!snapshot_outweighed(MIN_TAIL - 1, 0));
        assert!(snapshot_outweighed(MIN_TAIL, 0));
        // A small snapshot waits for the least tail.
        assert!(!snapshot_outweighed(MIN_TAIL - 1, 1_000));
        // A large one for three times its size.
        assert!(!snapshot_outweighed(300_000 - 1, 100_000));
        assert!(snapshot_outweighed(300_000, 100_000));
    }
}
