//! The session store in NATS JetStream: the bucket `runner_sessions` holds, per session,
//! `<id>.meta` (the metadata), `<id>.snap` (the snapshot) and `<id>.rec.<n>` (journal record
//! n: what changed since record n-1, as in `journal.jsonl`). A save writes one record and
//! waits for JetStream to have stored it; a snapshot is due, as in the file store, when the
//! records since the last one weigh three times as much, so a load reads a snapshot and a
//! tail of at most three times its size.
//! The session is held through a lease (`lease.rs`). The entries are reached through a
//! [`SessionKv`]: this process's own connection, or the worker's that started it. Offsets in `JournalPosition` and in the
//! metadata's `journalOffset` count records here, not bytes.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::buckets::SESSIONS;
use super::session_kv::{DirectKv, SessionKv};
use crate::checkpoint::delta::Written;
use crate::checkpoint::file_store::snapshot_outweighed;
use crate::checkpoint::journal::{JournalPosition, Record, RecordHeader, parse};
use crate::checkpoint::replay::Replay;
use crate::checkpoint::store::{CHECKPOINT_VERSION, summaries};
use crate::checkpoint::{
    Checkpoint, CheckpointError, CheckpointRef, CheckpointStore, Saved, SessionHold,
    SessionMetadata, SessionStatus, SessionSummary, check_session_id,
};
use crate::engine::checkpointing::Durability;
use crate::sync::lock;

pub struct NatsCheckpointStore {
    /// Where the entries are read and written: this process's connection, or the worker's.
    kv: Arc<dyn SessionKv>,
    /// The journals this process appends to, by session.
    journals: Mutex<HashMap<String, KvJournal>>,
}

/// Where a session's journal stands, for the process appending to it.
struct KvJournal {
    seq: u64,
    written: Written,
    /// The snapshot's size, and the bytes of the records written since.
    snapshot: Option<u64>,
    since_snapshot: u64,
}

impl KvJournal {
    /// When the records since the snapshot call for a new one ([`snapshot_outweighed`]).
    /// Unlike the file store, a short session has no snapshot at its first record or at its
    /// end: each would be one more write per run, and reading the few records back costs
    /// what reading it would.
    fn compaction_due(&self) -> bool {
        snapshot_outweighed(self.since_snapshot, self.snapshot.unwrap_or(0))
    }
}

impl NatsCheckpointStore {
    /// Connects to the server at `url`, creating the buckets when they do not exist.
    pub fn connect(url: &str) -> Result<Self, CheckpointError> {
        let kv = DirectKv::connect(url).map_err(|error| CheckpointError::Io {
            path: PathBuf::from(url),
            source: std::io::Error::other(error.to_string()),
        })?;
        Ok(Self::over(Arc::new(kv)))
    }

    /// The store over `kv`.
    pub fn over(kv: Arc<dyn SessionKv>) -> Self {
        NatsCheckpointStore {
            kv,
            journals: Mutex::default(),
        }
    }

    /// Where an entry is, for messages: `nats:runner_sessions/<key>`.
    fn place(&self, key: &str) -> PathBuf {
        PathBuf::from(format!("nats:{SESSIONS}/{key}"))
    }

    fn failed(&self, key: &str, error: impl std::fmt::Display) -> CheckpointError {
        CheckpointError::Io {
            path: self.place(key),
            source: std::io::Error::other(error.to_string()),
        }
    }

    fn get(&self, key: &str) -> Result<Option<Bytes>, CheckpointError> {
        self.kv.get(key).map_err(|e| self.failed(key, e))
    }

    fn put(&self, key: &str, value: Vec<u8>) -> Result<(), CheckpointError> {
        self.kv.put(key, value).map_err(|e| self.failed(key, e))
    }

    fn json<T: serde::de::DeserializeOwned>(
        &self,
        key: &str,
    ) -> Result<Option<T>, CheckpointError> {
        let Some(bytes) = self.get(key)? else {
            return Ok(None);
        };
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| CheckpointError::Corrupt {
                path: self.place(key),
                reason: e.to_string(),
            })?;
        let version = value.get("version").cloned().unwrap_or_default();
        if version != CHECKPOINT_VERSION {
            return Err(CheckpointError::Version {
                path: self.place(key),
                found: version.to_string(),
            });
        }
        serde_json::from_value(value)
            .map(Some)
            .map_err(|e| CheckpointError::Corrupt {
                path: self.place(key),
                reason: e.to_string(),
            })
    }

    fn snapshot_of(&self, session_id: &str) -> Result<Option<Checkpoint>, CheckpointError> {
        self.json::<Checkpoint>(&key(session_id, "snap"))
    }

    /// The records after record `after`, in order, as stored.
    fn records_after(&self, session_id: &str, after: u64) -> Result<Vec<Bytes>, CheckpointError> {
        let mut found = Vec::new();
        while let Some(bytes) = self.get(&record_key(session_id, after + 1 + found.len() as u64))? {
            found.push(bytes);
        }
        Ok(found)
    }

    /// Takes in the records after `position` up to the last one `want` picks, and returns
    /// the checkpoint it ends at (`None`: no record is picked).
    fn replay(
        &self,
        session_id: &str,
        after: u64,
        replay: &mut Replay,
        want: impl Fn(&Record<'_>) -> bool,
    ) -> Result<Option<Checkpoint>, CheckpointError> {
        let stored = self.records_after(session_id, after)?;
        let place = self.place(&record_key(session_id, after + 1));
        let tail = stored
            .iter()
            .map(|bytes| parse(bytes, &place))
            .collect::<Result<Vec<_>, _>>()?;
        let Some(last) = tail.iter().rposition(want) else {
            return Ok(None);
        };
        for record in &tail[..=last] {
            replay.apply(record, &place)?;
        }
        Ok(Some(replay.checkpoint(&tail[last], session_id)))
    }

    /// The journal of a session this process has not appended to yet: its last record and
    /// what was written since the snapshot.
    fn open_journal(&self, session_id: &str) -> Result<KvJournal, CheckpointError> {
        let snapshot = self.get(&key(session_id, "snap"))?;
        let after = match &snapshot {
            Some(bytes) => serde_json::from_slice::<Checkpoint>(bytes)
                .ok()
                .and_then(|c| c.journal)
                .map_or(0, |p| p.seq),
            None => 0,
        };
        let tail = self.records_after(session_id, after)?;
        Ok(KvJournal {
            seq: after + tail.len() as u64,
            written: Written::default(),
            snapshot: snapshot.map(|bytes| bytes.len() as u64),
            since_snapshot: tail.iter().map(|bytes| bytes.len() as u64).sum(),
        })
    }
}

fn key(session_id: &str, part: &str) -> String {
    format!("{session_id}.{part}")
}

fn record_key(session_id: &str, seq: u64) -> String {
    format!("{session_id}.rec.{seq}")
}

impl CheckpointStore for NatsCheckpointStore {
    fn lost(&self) -> bool {
        self.kv.lost()
    }

    fn save(
        &self,
        session_id: &str,
        checkpoint: &CheckpointRef<'_>,
        _durability: Durability,
    ) -> Result<Saved, CheckpointError> {
        // Every write is stored by JetStream before it is acknowledged: the durability
        // asked for is always had.
        check_session_id(session_id)?;
        let mut journals = lock(&self.journals);
        let journal = match journals.entry(session_id.to_string()) {
            Entry::Occupied(open) => open.into_mut(),
            Entry::Vacant(slot) => slot.insert(self.open_journal(session_id)?),
        };
        let header = RecordHeader {
            checkpoint_id: checkpoint.checkpoint_id,
            timestamp: checkpoint.timestamp,
            agent: checkpoint.agent,
            status: checkpoint.status,
        };
        let record = Record::next(
            &journal.written,
            journal.seq,
            header,
            checkpoint.state,
            checkpoint.pending,
        );
        let key = record_key(session_id, record.seq);
        let json = serde_json::to_vec(&record).map_err(|e| self.failed(&key, e))?;
        let bytes = json.len() as u64;
        self.put(&key, json)?;
        journal
            .written
            .wrote(checkpoint.state, &record.state, checkpoint.pending)
            .map_err(|reason| CheckpointError::Corrupt {
                path: self.place(&key),
                reason,
            })?;
        journal.seq = record.seq;
        journal.since_snapshot += bytes;
        let snapshot_due = journal.compaction_due();
        Ok(Saved {
            position: JournalPosition {
                seq: journal.seq,
                offset: journal.seq,
            },
            metadata_due: snapshot_due
                || journal.seq == 1
                || checkpoint.status != SessionStatus::Running,
            snapshot_due,
        })
    }

    fn snapshot(
        &self,
        session_id: &str,
        checkpoint: &CheckpointRef<'_>,
        position: JournalPosition,
    ) -> Result<(), CheckpointError> {
        let key = key(session_id, "snap");
        let snapshot = CheckpointRef {
            journal: Some(position),
            ..*checkpoint
        };
        let json = serde_json::to_vec(&snapshot).map_err(|e| self.failed(&key, e))?;
        let bytes = json.len() as u64;
        self.put(&key, json)?;
        let mut journals = lock(&self.journals);
        if let Some(journal) = journals.get_mut(session_id) {
            journal.snapshot = Some(bytes);
            journal.since_snapshot = 0;
        }
        Ok(())
    }

    fn load(&self, session_id: &str) -> Result<Option<Checkpoint>, CheckpointError> {
        check_session_id(session_id)?;
        let snapshot = self.snapshot_of(session_id)?;
        let after = snapshot
            .as_ref()
            .and_then(|c| c.journal)
            .map_or(0, |p| p.seq);
        let mut replay = match &snapshot {
            Some(checkpoint) => {
                Replay::from_checkpoint(checkpoint, &self.place(&key(session_id, "snap")))?
            }
            None => Replay::new(),
        };
        let latest = self.replay(session_id, after, &mut replay, |_| true)?;
        Ok(latest.or(snapshot))
    }

    fn load_step(
        &self,
        session_id: &str,
        step: u64,
    ) -> Result<Option<Checkpoint>, CheckpointError> {
        check_session_id(session_id)?;
        let mut replay = Replay::new();
        self.replay(session_id, 0, &mut replay, |record| record.step == step)
    }

    /// Refused while a process holds the session.
    fn delete(&self, session_id: &str) -> Result<(), CheckpointError> {
        check_session_id(session_id)?;
        let _held = self.hold(session_id)?;
        let records = self.records_after(session_id, 0)?.len() as u64;
        let keys = (1..=records)
            .map(|seq| record_key(session_id, seq))
            .chain([key(session_id, "snap"), key(session_id, "meta")]);
        for key in keys {
            self.kv.purge(&key).map_err(|e| self.failed(&key, e))?;
        }
        Ok(())
    }

    fn list(&self) -> Result<Vec<SessionSummary>, CheckpointError> {
        let keys = self.kv.keys().map_err(|e| self.failed("", e))?;
        let ids = keys.iter().filter_map(|k| k.strip_suffix(".meta"));
        Ok(summaries(ids, |id| self.metadata(id)))
    }

    /// The metadata, with the steps, status and time of the last record when the journal
    /// went on after it was written.
    fn metadata(&self, session_id: &str) -> Result<Option<SessionMetadata>, CheckpointError> {
        check_session_id(session_id)?;
        let Some(mut metadata) = self.json::<SessionMetadata>(&key(session_id, "meta"))? else {
            return Ok(None);
        };
        let Some(after) = metadata.journal_offset else {
            return Ok(Some(metadata));
        };
        if let Some(bytes) = self.records_after(session_id, after)?.last() {
            let record = parse(bytes, &self.place(&key(session_id, "rec")))?;
            metadata.steps = record.step;
            metadata.status = record.status;
            metadata.updated = record.timestamp.into_owned();
        }
        Ok(Some(metadata))
    }

    fn save_metadata(&self, metadata: &SessionMetadata) -> Result<(), CheckpointError> {
        check_session_id(&metadata.session_id)?;
        let key = key(&metadata.session_id, "meta");
        let json = serde_json::to_vec(metadata).map_err(|e| self.failed(&key, e))?;
        self.put(&key, json)
    }

    fn exists(&self, session_id: &str) -> Result<bool, CheckpointError> {
        check_session_id(session_id)?;
        Ok(self.get(&key(session_id, "meta"))?.is_some())
    }

    /// Knowing the session is new spares the reads that find where its journal stands.
    /// A session without metadata has at most its first record (the first save writes it,
    /// then the metadata): this session's first record takes its place.
    fn begin_new(&self, session_id: &str) -> Result<(), CheckpointError> {
        if self.exists(session_id)? {
            return Err(CheckpointError::Exists(session_id.to_string()));
        }
        let fresh = KvJournal {
            seq: 0,
            written: Written::default(),
            snapshot: None,
            since_snapshot: 0,
        };
        let mut journals = lock(&self.journals);
        journals.insert(session_id.to_string(), fresh);
        Ok(())
    }

    fn hold(&self, session_id: &str) -> Result<SessionHold, CheckpointError> {
        check_session_id(session_id)?;
        self.kv.hold(session_id)
    }
}
