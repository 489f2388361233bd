//! The batch directory (`--batch-dir`, default `.runner/batches/<batch id>`), where the
//! batch's state lives:
//!
//! * `batch.json`: the batch id, the agent file and the inputs file it was started with;
//!   a rerun with another agent or inputs file is refused, so that line N always means
//!   the same input.
//! * `results.jsonl`: the envelopes (see `results.rs`).
//! * `inputs/<line>/`: one directory per input: `vars.json` (the values its run was given)
//!   and one run directory per run of it (`1/`, `2/` after a resume, ...), each with the
//!   run's `events.jsonl`, `transcript.txt`, `result.json` and `stderr.log`.
//! * `lock`: held by the batch process, so two processes never run one batch.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::checkpoint::check_session_id;
use crate::engine::clock::now_rfc3339;

/// The longest batch id: the session ids of its inputs (`<batch id>-<line>`) must fit in
/// the 128 characters of a session id.
pub const MAX_BATCH_ID_LEN: usize = 100;

/// What `batch.json` says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    pub batch_id: String,
    /// The agent file, as an absolute path.
    pub agent: PathBuf,
    /// The inputs file, as an absolute path, or `-` for stdin.
    pub inputs: PathBuf,
    pub created: String,
}

/// An open batch directory, held by this process.
pub struct BatchDir {
    pub root: PathBuf,
    pub manifest: Manifest,
    /// Holds the flock; released when dropped or when the process dies.
    _lock: File,
}

impl BatchDir {
    /// Opens the batch directory, creating it for a new batch; refused when another
    /// process runs the batch, when the batch was started with another agent or inputs
    /// file, or when a new batch's id already names sessions in `sessions` (another batch
    /// directory ran a batch of that id: its inputs' sessions are not this batch's).
    pub fn open(
        root: &Path,
        batch_id: &str,
        (agent, inputs): (&Path, &Path),
        sessions: Option<&Path>,
    ) -> Result<Self, String> {
        check_batch_id(batch_id)?;
        std::fs::create_dir_all(root.join("inputs"))
            .map_err(|e| format!("cannot create {}: {e}", root.display()))?;
        let lock = take_lock(root)?;
        let path = root.join("batch.json");
        let wanted = Manifest {
            version: 1,
            batch_id: batch_id.to_string(),
            agent: agent.to_path_buf(),
            inputs: inputs.to_path_buf(),
            created: now_rfc3339(),
        };
        let manifest = match std::fs::read(&path) {
            Ok(bytes) => {
                let found: Manifest = serde_json::from_slice(&bytes)
                    .map_err(|e| format!("{} cannot be read: {e}", path.display()))?;
                same_batch(&found, &wanted, root)?;
                found
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                refuse_taken_id(batch_id, sessions)?;
                let text = serde_json::to_vec_pretty(&wanted).map_err(|e| e.to_string())?;
                crate::fsutil::write_atomically(&path, &text)
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                wanted
            }
            Err(error) => return Err(format!("cannot read {}: {error}", path.display())),
        };
        Ok(BatchDir {
            root: root.to_path_buf(),
            manifest,
            _lock: lock,
        })
    }

    pub fn results(&self) -> PathBuf {
        self.root.join("results.jsonl")
    }

    /// The directory of the input on this line.
    pub fn input_dir(&self, line: u64) -> PathBuf {
        self.root.join("inputs").join(line.to_string())
    }

    /// The session of the input on this line: `<batch id>-<line>`, the same on every run
    /// of the batch, so a rerun finds it. The line, not the input's id, names it: ids
    /// may repeat and hold any character, line numbers do neither.
    pub fn session_id(&self, line: u64) -> String {
        format!("{}-{line}", self.manifest.batch_id)
    }
}

/// A new batch whose id already names sessions (`<batch id>-<line>`) would resume another
/// batch's runs as its own: refused, with how to go on.
fn refuse_taken_id(batch_id: &str, sessions: Option<&Path>) -> Result<(), String> {
    let Some(Ok(entries)) = sessions.map(std::fs::read_dir) else {
        return Ok(());
    };
    let prefix = format!("{batch_id}-");
    let taken = entries
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .any(|name| {
            name.strip_prefix(&prefix)
                .is_some_and(|line| line.parse::<u64>().is_ok())
        });
    match taken {
        false => Ok(()),
        true => Err(format!(
            "batch id `{batch_id}` already names sessions in {} (a batch of that id ran in another batch directory); give this batch its own --batch-id, or run it again in that batch's --batch-dir",
            sessions
                .map(Path::display)
                .map(|d| d.to_string())
                .unwrap_or_default()
        )),
    }
}

/// A batch id is a session id (letters, digits, `-`, `_`) of at most 100 characters.
pub fn check_batch_id(id: &str) -> Result<(), String> {
    if id.len() > MAX_BATCH_ID_LEN {
        return Err(format!(
            "a batch id has at most {MAX_BATCH_ID_LEN} characters, `{id}` has {}",
            id.len()
        ));
    }
    check_session_id(id).map_err(|_| {
        format!("`{id}` is not a batch id: use 1 to {MAX_BATCH_ID_LEN} ASCII letters, digits, `-` and `_`")
    })
}

fn same_batch(found: &Manifest, wanted: &Manifest, root: &Path) -> Result<(), String> {
    let differs = |what: &str, before: &Path, now: &Path| {
        format!(
            "batch `{}` in {} was started with the {what} {}, not {}: give another --batch-id (or --batch-dir) for a new batch",
            found.batch_id,
            root.display(),
            before.display(),
            now.display()
        )
    };
    if found.agent != wanted.agent {
        return Err(differs("agent file", &found.agent, &wanted.agent));
    }
    if found.inputs != wanted.inputs {
        return Err(differs("inputs file", &found.inputs, &wanted.inputs));
    }
    Ok(())
}

/// Takes `lock` in the batch directory without waiting.
fn take_lock(root: &Path) -> Result<File, String> {
    let path = root.join("lock");
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    // SAFETY: flock(2) on a descriptor this function owns.
    let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if taken != 0 {
        return Err(format!(
            "the batch in {} is being run by another runner process",
            root.display()
        ));
    }
    Ok(file)
}
