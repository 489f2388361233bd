//! `results.jsonl`: one line per input that ended, appended as it ends. Each line is the
//! result envelope of `runner exec --output json` with `"input": {"line", "id"}` in front,
//! so the inputs' order is recoverable (`jq -s 'sort_by(.input.line)'`) however they
//! finished. A rerun may append a second line for an input (one that was interrupted and
//! then resumed): the last line of an input is the one that counts.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ledger::Ledger;
use crate::engine::ErrorCode;
use crate::output::result::{RunResult, Status};

/// Which input an envelope is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputRef {
    /// Its line in the inputs file (1-based).
    pub line: u64,
    /// Its `"id"`, or its line number when it has none.
    pub id: String,
}

/// One line of `results.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub input: InputRef,
    #[serde(flatten)]
    pub result: RunResult,
}

/// [`Envelope::is_final`] of a bare result.
pub fn is_final(result: &RunResult) -> bool {
    result.status != Status::Interrupted && !session_was_held(result)
}

/// Whether the run was refused because another process held its session.
pub fn session_was_held(result: &RunResult) -> bool {
    error_code(result) == Some(ErrorCode::SessionInUse)
}

/// Whether a new run was refused because its session exists.
pub fn session_existed(result: &RunResult) -> bool {
    error_code(result) == Some(ErrorCode::SessionExists)
}

fn error_code(result: &RunResult) -> Option<ErrorCode> {
    result.error.as_ref().map(|error| error.code)
}

/// `results.jsonl`, open for appending.
pub struct ResultsFile {
    path: PathBuf,
    file: File,
}

impl ResultsFile {
    /// Opens (or creates) the file and reads what earlier runs of the batch recorded. A
    /// torn last line (a crash mid-append) is cut off, with a warning, so the next
    /// append starts on a line of its own; a line that does not read as an envelope is
    /// skipped with a warning.
    pub fn open(path: &Path) -> io::Result<(Self, Ledger, Vec<String>)> {
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)?;
        let mut ledger = Ledger::default();
        let mut warnings = Vec::new();
        let mut whole = 0u64;
        let mut reader = BufReader::new(&file);
        let mut line = Vec::new();
        for number in 1.. {
            line.clear();
            let read = reader.read_until(b'\n', &mut line)?;
            if read == 0 {
                break;
            }
            if line.last() != Some(&b'\n') {
                warnings.push(format!(
                    "{}: line {number} was cut off (a crash while it was written); it is dropped",
                    path.display()
                ));
                break;
            }
            whole += read as u64;
            match serde_json::from_slice::<Envelope>(&line) {
                Ok(envelope) => ledger.record(&envelope),
                Err(error) => warnings.push(format!(
                    "{}: line {number} is not a result envelope ({error}); it is ignored",
                    path.display()
                )),
            }
        }
        if file.metadata()?.len() > whole {
            file.set_len(whole)?;
            file.seek(SeekFrom::End(0))?;
        }
        let results = ResultsFile {
            path: path.to_path_buf(),
            file,
        };
        Ok((results, ledger, warnings))
    }

    /// Appends an envelope as one line, in one write: a crash leaves it whole or torn at
    /// the end, never interleaved. Not synced: a power cut that loses it loses nothing
    /// else, since the next run finds the input's `result.json` and records it again.
    pub fn append(&mut self, envelope: &Envelope) -> io::Result<()> {
        let mut line = serde_json::to_vec(envelope).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(line: u64, status: Status) -> Envelope {
        Envelope {
            input: InputRef {
                line,
                id: line.to_string(),
            },
            result: RunResult::not_started(
                status,
                "agent",
                ("run", "session"),
                crate::engine::ErrorCode::Internal,
                "y".into(),
            ),
        }
    }

    #[test]
    fn a_rerun_reads_what_was_appended_and_cuts_a_torn_tail() {
        let dir = std::env::temp_dir().join(format!("runner-results-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("results.jsonl");
        let _ = std::fs::remove_file(&path);
        let (mut results, ledger, _) = ResultsFile::open(&path).unwrap();
        assert_eq!(ledger.inputs(), 0);
        results.append(&envelope(1, Status::Completed)).unwrap();
        results.append(&envelope(2, Status::Interrupted)).unwrap();
        drop(results);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"input\": {\"line\": 3");
        std::fs::write(&path, &text).unwrap();

        let (mut results, ledger, warnings) = ResultsFile::open(&path).unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(ledger.is_final(1));
        assert!(!ledger.is_final(2), "interrupted inputs are resumed");
        results.append(&envelope(2, Status::Failed)).unwrap();
        drop(results);
        let (_, ledger, warnings) = ResultsFile::open(&path).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(ledger.is_final(2), "the last envelope of an input counts");
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 3);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
