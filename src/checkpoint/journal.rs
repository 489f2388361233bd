//! A session's journal (`journal.jsonl`): one record per checkpoint, appended, and synced
//! when the caller needs it durable (`sync`), holding only what changed since the record
//! before it (`delta.rs`).
//!
//! A record is one line: the CRC-32 of its JSON as 8 hex digits, a space, the compact JSON.
//! Reading stops at the first line that is not whole or whose checksum does not match: a
//! record torn by a crash mid-append (or damaged later) and anything after it are dropped,
//! with a warning; everything before it holds. Appending is the only write, so a torn
//! record can only be the last.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::delta::{StateDelta, Written};
use super::error::CheckpointError;
use super::pending_fields::{PendingChanges, PendingFields};
use super::store::SessionStatus;
use crate::engine::AgentState;

/// The journal's file name in a session directory.
pub const JOURNAL_FILE: &str = "journal.jsonl";

/// One checkpoint, as what changed.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record<'a> {
    /// 1, 2, ... within the session.
    pub seq: u64,
    #[serde(borrow)]
    pub checkpoint_id: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    pub timestamp: std::borrow::Cow<'a, str>,
    pub step: u64,
    #[serde(borrow)]
    pub agent: std::borrow::Cow<'a, str>,
    pub status: SessionStatus,
    #[serde(borrow)]
    pub state: StateDelta<'a>,
    /// The keys of `pending` whose values changed.
    #[serde(default, skip_serializing_if = "PendingChanges::is_empty")]
    pub(crate) pending: PendingChanges<'a>,
}

impl<'a> Record<'a> {
    /// The record after record `seq`, of a checkpoint: what changed since `written`.
    pub fn next(
        written: &Written,
        seq: u64,
        header: RecordHeader<'a>,
        state: &'a AgentState,
        pending: Option<&'a PendingFields>,
    ) -> Self {
        let (delta, changed) = written.delta(state, pending);
        Record {
            seq: seq + 1,
            checkpoint_id: header.checkpoint_id.into(),
            timestamp: header.timestamp.into(),
            step: state.step,
            agent: header.agent.into(),
            status: header.status,
            state: delta,
            pending: changed,
        }
    }
}

/// Where a snapshot stands in the journal: it holds every record up to `seq`, and the
/// records after it start at byte `offset`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalPosition {
    pub seq: u64,
    pub offset: u64,
}

/// A record's line: checksum, space, JSON, newline. It is made in `line` (emptied first):
/// the JSON goes in place after room for the checksum, which is filled in once the JSON is
/// there, so the record is neither serialised into a buffer of its own nor copied.
fn frame_into(line: &mut Vec<u8>, record: &Record<'_>) -> serde_json::Result<()> {
    line.clear();
    line.extend_from_slice(b"00000000 ");
    serde_json::to_writer(&mut *line, record)?;
    let sum = crc32(&line[CHECKSUM_LEN..]);
    write!(&mut line[..8], "{sum:08x}").map_err(serde_json::Error::io)?;
    line.push(b'\n');
    Ok(())
}

/// The checksum and the space after it.
const CHECKSUM_LEN: usize = 9;

/// A line buffer larger than this is let go after its record rather than kept.
const KEPT_LINE_CAPACITY: usize = 256 * 1024;

/// The records of `bytes`, a journal read from byte `start` of its file: each with the
/// offset (in `bytes`) just past it, and why reading stopped early, if it did, with the
/// byte of the file where (what a person opening the file counts).
pub fn records(bytes: &[u8], start: u64) -> (Vec<(&[u8], u64)>, Option<String>) {
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let byte = start + at as u64;
        let Some(end) = memchr::memchr(b'\n', &bytes[at..]).map(|n| at + n) else {
            return (found, Some(format!("a record cut off at byte {byte}")));
        };
        match unframe(&bytes[at..end]) {
            Some(json) => found.push((json, end as u64 + 1)),
            None => return (found, Some(format!("a damaged record at byte {byte}"))),
        }
        at = end + 1;
    }
    (found, None)
}

/// The JSON of a line whose checksum matches.
fn unframe(line: &[u8]) -> Option<&[u8]> {
    let (sum, json) = (line.get(..8)?, line.get(CHECKSUM_LEN..)?);
    let sum = u32::from_str_radix(std::str::from_utf8(sum).ok()?, 16).ok()?;
    (line[8] == b' ' && crc32(json) == sum).then_some(json)
}

/// CRC-32 (IEEE), eight bytes at a time ("slicing-by-8"): every record is checksummed as it
/// is written (two per step) and again when the journal is read. The bitwise loop was about
/// 8 % of a step's instructions (callgrind, one `list_dir` call per step); a byte at a time
/// through one table was still 1 % of a step's CPU (perf, a 300-step run).
fn crc32(bytes: &[u8]) -> u32 {
    let mut chunks = bytes.chunks_exact(8);
    let mut crc = !0u32;
    for chunk in &mut chunks {
        let mut word: [u8; 8] = chunk.try_into().expect("chunks of 8 bytes");
        for (byte, sum) in word.iter_mut().zip(crc.to_le_bytes()) {
            *byte ^= sum;
        }
        crc = word.iter().enumerate().fold(0, |sum, (at, &byte)| {
            sum ^ CRC_TABLES[7 - at][usize::from(byte)]
        });
    }
    let crc = chunks.remainder().iter().fold(crc, |crc, &byte| {
        CRC_TABLES[0][usize::from((crc as u8) ^ byte)] ^ (crc >> 8)
    });
    !crc
}

/// `CRC_TABLES[0]`: the CRC of each byte value; `CRC_TABLES[k]`: of that byte followed by
/// `k` zero bytes, so eight bytes are folded in with eight lookups and no dependency between
/// them. Made at compile time.
static CRC_TABLES: [[u32; 256]; 8] = {
    let mut tables = [[0u32; 256]; 8];
    let mut n = 0;
    while n < 256 {
        let mut crc = n as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
            bit += 1;
        }
        tables[0][n] = crc;
        n += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut n = 0;
        while n < 256 {
            let previous = tables[k - 1][n];
            tables[k][n] = (previous >> 8) ^ tables[0][(previous & 0xFF) as usize];
            n += 1;
        }
        k += 1;
    }
    tables
};

/// Appends records to one session's journal, syncing each.
#[derive(Debug)]
pub struct JournalWriter {
    path: PathBuf,
    file: File,
    /// The journal's length: where the next record starts.
    pub end: u64,
    /// The last record's number.
    pub seq: u64,
    /// What a reader of the journal has, to diff the next state against.
    written: Written,
    /// Where the journal ended, and its last record, at the last sync (or when opened).
    synced: (u64, u64),
    /// When the oldest record not yet synced was written.
    unsynced_since: Option<Instant>,
    /// The line of the record being written, kept from one record to the next.
    line: Vec<u8>,
}

impl JournalWriter {
    /// Opens the journal of `dir` for appending after its last whole record (a torn tail
    /// is cut off first, so no record follows it). The first record it appends holds the
    /// whole state, so the journal replays from its start alone.
    pub fn open(dir: &Path) -> Result<Self, CheckpointError> {
        let path = dir.join(JOURNAL_FILE);
        let io = |source| CheckpointError::Io {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(io)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        let (found, _torn) = records(&bytes, 0);
        let end = found.last().map_or(0, |(_, end)| *end);
        if end < bytes.len() as u64 {
            file.set_len(end).map_err(io)?;
        }
        file.seek(SeekFrom::End(0)).map_err(io)?;
        let seq = match found.last() {
            Some((json, _)) => parse(json, &path)?.seq,
            None => 0,
        };
        Ok(JournalWriter {
            path,
            file,
            end,
            seq,
            written: Written::default(),
            synced: (end, seq),
            unsynced_since: None,
            line: Vec::new(),
        })
    }

    /// Appends the record of a checkpoint with one `write`: when this returns, the record
    /// survives the process; [`JournalWriter::sync`] makes it survive the machine.
    pub fn append(
        &mut self,
        header: RecordHeader<'_>,
        state: &AgentState,
        pending: Option<&PendingFields>,
    ) -> Result<(), CheckpointError> {
        let record = Record::next(&self.written, self.seq, header, state, pending);
        let line = &mut self.line;
        frame_into(line, &record).map_err(|e| CheckpointError::Corrupt {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        if let Err(error) = self.file.write_all(line) {
            // A record the disk took only part of is cut off again: the journal ends whole.
            let _ = self.file.set_len(self.end);
            let path = self.path.clone();
            return Err(CheckpointError::Io {
                path,
                source: error,
            });
        }
        self.written
            .wrote(state, &record.state, pending)
            .map_err(|reason| CheckpointError::Corrupt {
                path: self.path.clone(),
                reason,
            })?;
        self.seq = record.seq;
        self.end += line.len() as u64;
        self.unsynced_since.get_or_insert_with(Instant::now);
        tracing::debug!(
            seq = self.seq,
            bytes = line.len(),
            step = state.step,
            "checkpoint record written"
        );
        // The buffer is kept for the next record, unless an unusually large one grew it.
        if line.capacity() > KEPT_LINE_CAPACITY {
            *line = Vec::new();
        }
        Ok(())
    }

    /// Syncs the records appended since the last sync (`fdatasync`; nothing when there
    /// are none). When the sync fails, what it covered may or may not be on disk: those
    /// records are cut off, and the next record holds the whole state again.
    pub fn sync(&mut self) -> Result<(), CheckpointError> {
        if self.synced == (self.end, self.seq) {
            return Ok(());
        }
        self.unsynced_since = None;
        if let Err(error) = self.file.sync_data() {
            let (end, seq) = self.synced;
            let _ = self.file.set_len(end);
            (self.end, self.seq, self.written) = (end, seq, Written::default());
            return Err(self.io(error));
        }
        self.synced = (self.end, self.seq);
        tracing::debug!(seq = self.seq, "journal synced");
        Ok(())
    }

    /// Whether a record has waited longer than `age` for a sync.
    pub fn unsynced_longer_than(&self, age: Duration) -> bool {
        self.unsynced_since
            .is_some_and(|since| since.elapsed() > age)
    }

    fn io(&self, source: std::io::Error) -> CheckpointError {
        CheckpointError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

/// The fields of a record besides the state.
#[derive(Debug, Clone, Copy)]
pub struct RecordHeader<'a> {
    pub checkpoint_id: &'a str,
    pub timestamp: &'a str,
    pub agent: &'a str,
    pub status: SessionStatus,
}

/// A record's JSON, read.
pub fn parse<'a>(json: &'a [u8], path: &Path) -> Result<Record<'a>, CheckpointError> {
    serde_json::from_slice(json).map_err(|e| CheckpointError::Corrupt {
        path: path.to_path_buf(),
        reason: format!("a journal record: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_is_the_ieee_one() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        // Across the eight-byte chunks and the tail, against the bitwise definition.
        let bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        for len in [1, 7, 8, 9, 15, 16, 17, 1000] {
            assert_eq!(crc32(&bytes[..len]), bitwise(&bytes[..len]), "{len} bytes");
        }
    }

    fn bitwise(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &byte in bytes {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
            }
        }
        !crc
    }

    /// A line of `json`, as [`frame_into`] makes it of a record.
    fn frame(json: &[u8]) -> Vec<u8> {
        let mut line = format!("{:08x} ", crc32(json)).into_bytes();
        line.extend_from_slice(json);
        line.push(b'\n');
        line
    }

    #[test]
    fn a_record_is_framed_with_the_checksum_of_its_json() {
        let state = AgentState::initial();
        let header = RecordHeader {
            checkpoint_id: "c1",
            timestamp: "t",
            agent: "a",
            status: SessionStatus::Running,
        };
        let record = Record::next(&Written::default(), 0, header, &state, None);
        let mut line = b"left from the record before".to_vec();
        frame_into(&mut line, &record).unwrap();
        assert_eq!(line, frame(&serde_json::to_vec(&record).unwrap()));
        let (found, torn) = records(&line, 0);
        assert_eq!((found.len(), torn), (1, None));
    }

    #[test]
    fn reading_stops_at_a_torn_or_damaged_record() {
        let mut bytes = frame(br#"{"a":1}"#);
        bytes.extend(frame(br#"{"a":2}"#));
        let whole = bytes.len();
        let (found, torn) = records(&bytes, 0);
        assert_eq!((found.len(), torn), (2, None));
        assert_eq!(found[1].1, whole as u64);
        let mut torn_tail = bytes.clone();
        torn_tail.extend_from_slice(b"0000abcd {\"a\":");
        let (found, torn) = records(&torn_tail, 0);
        assert_eq!(found.len(), 2);
        assert_eq!(torn.unwrap(), format!("a record cut off at byte {whole}"));
        let (_, torn) = records(&torn_tail[found[0].1 as usize..], found[0].1);
        assert_eq!(torn.unwrap(), format!("a record cut off at byte {whole}"));
        bytes[12] = b'9'; // inside the first record's JSON
        let (found, torn) = records(&bytes, 0);
        assert_eq!(found.len(), 0);
        assert!(torn.unwrap().contains("damaged"));
    }
}
