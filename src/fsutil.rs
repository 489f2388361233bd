//! File writes that a crash or a full disk cannot leave half-done.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// Writes `bytes` to `path` through a temp file in the same directory, fsync and rename, so
/// readers see either the old file or the new one, never a torn one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    // Unique per write: two threads saving the same file must not share a temp file.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = dir.join(format!(".{name}.tmp.{}.{n}", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        if let Ok(dir) = std::fs::File::open(dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// Appends records (a JSON line, a transcript block) so that the file always ends with a
/// whole one, even when the disk fills up.
///
/// Writing each record with one `write_all` is not enough: a write to a full disk can land
/// part of a record and then fail. So the length up to the last whole record is
/// remembered, and a failed write is cut off again (`File::set_len`); shrinking a file
/// frees space, so that works on a full disk. After the first failure nothing more is
/// written, not even a smaller record that would fit: a file with a hole in the middle
/// would read as complete, one that stops early is a true beginning of what was written.
///
/// Records can be held ([`hold`](Self::hold)) and written together ([`write_held`](Self::write_held)):
/// one `write` for the records of a moment of the run rather than one each. What is held
/// is written by itself once it reaches [`HELD_BYTES`], so holding is bounded in memory;
/// the owner writes the rest before it lets go (the event and transcript subscribers do
/// when they are dropped).
#[derive(Debug)]
pub struct WholeRecords<W: Write> {
    out: W,
    /// Records not written yet, whole.
    held: Vec<u8>,
    /// The length of what is written, up to the end of the last whole record.
    whole: u64,
    /// Cuts `out` back to a length (`None`: it cannot be, like stdout).
    cut: Option<fn(&mut W, u64) -> io::Result<()>>,
    /// The first failed write; nothing is written after it.
    failure: Option<io::Error>,
}

/// Held records are written once they reach this size.
pub const HELD_BYTES: usize = 64 * 1024;

impl<W: Write> WholeRecords<W> {
    /// Records to a writer that cannot be cut back (stdout, a pipe, memory): a record a
    /// failed write tore stays torn, but nothing follows it.
    pub fn new(out: W) -> Self {
        WholeRecords {
            out,
            held: Vec::new(),
            whole: 0,
            cut: None,
            failure: None,
        }
    }

    /// Appends `record` and flushes it, with any records held before it. On failure what
    /// the write tore is taken back where the writer allows, and every later append fails
    /// with the same error.
    pub fn append(&mut self, record: &[u8]) -> io::Result<()> {
        self.hold(record)?;
        self.write_held()
    }

    /// Keeps `record` to be written with the next [`write_held`](Self::write_held) (or
    /// [`append`](Self::append)), or at once when what is held reaches [`HELD_BYTES`].
    pub fn hold(&mut self, record: &[u8]) -> io::Result<()> {
        if let Some(failure) = &self.failure {
            return Err(copy(failure));
        }
        self.held.extend_from_slice(record);
        match self.held.len() >= HELD_BYTES {
            true => self.write_held(),
            false => Ok(()),
        }
    }

    /// Writes the held records with one `write_all`, then flushes the writer.
    pub fn write_held(&mut self) -> io::Result<()> {
        if let Some(failure) = &self.failure {
            return Err(copy(failure));
        }
        if self.held.is_empty() {
            return Ok(());
        }
        let written = self
            .out
            .write_all(&self.held)
            .and_then(|()| self.out.flush());
        let length = self.held.len() as u64;
        self.held.clear();
        if self.held.capacity() > HELD_BYTES {
            // One wide turn should not keep its buffer for the rest of the run.
            self.held.shrink_to(HELD_BYTES);
        }
        match written {
            Ok(()) => {
                self.whole += length;
                Ok(())
            }
            Err(error) => {
                if let Some(cut) = self.cut {
                    // If even this fails, the file is torn; the failure is reported anyway.
                    let _ = cut(&mut self.out, self.whole);
                }
                self.failure = Some(copy(&error));
                Err(error)
            }
        }
    }

    /// The write that failed, if one did.
    pub fn failure(&self) -> Option<io::Error> {
        self.failure.as_ref().map(copy)
    }

    /// The writer, after the held records are written.
    #[cfg(any(test, feature = "testing"))]
    pub fn into_inner(mut self) -> W {
        let _ = self.write_held();
        self.out
    }
}

impl WholeRecords<File> {
    /// Records to a file written from its start (as `File::create` leaves it); a record a
    /// failed write tore is cut off.
    pub fn file(file: File) -> Self {
        let mut records = WholeRecords::new(file);
        records.cut = Some(|file, len| file.set_len(len));
        records
    }
}

/// `io::Error` is not `Clone`; an OS error is rebuilt from its code, so it prints the same
/// ("No space left on device (os error 28)").
fn copy(error: &io::Error) -> io::Error {
    match error.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::new(error.kind(), error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disk with room for `room` bytes: a write beyond it lands what fits, then fails
    /// with ENOSPC, as write(2) does.
    struct SmallDisk {
        bytes: Vec<u8>,
        room: usize,
    }

    impl Write for SmallDisk {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let fits = buf.len().min(self.room - self.bytes.len());
            if fits == 0 && !buf.is_empty() {
                return Err(io::Error::from_raw_os_error(28));
            }
            self.bytes.extend_from_slice(&buf[..fits]);
            Ok(fits)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn small_disk(room: usize, cut: bool) -> WholeRecords<SmallDisk> {
        let disk = SmallDisk {
            bytes: Vec::new(),
            room,
        };
        WholeRecords {
            cut: cut.then_some(|disk: &mut SmallDisk, len| {
                disk.bytes.truncate(len as usize);
                Ok(())
            }),
            ..WholeRecords::new(disk)
        }
    }

    #[test]
    fn a_record_that_does_not_fit_is_taken_back_and_nothing_follows() {
        let mut records = small_disk(10, true);
        records.append(b"one\n").unwrap();
        let error = records.append(b"second\n").unwrap_err();
        assert_eq!(error.raw_os_error(), Some(28));
        assert!(
            records.append(b"3\n").is_err(),
            "a smaller record would fit"
        );
        assert_eq!(records.failure().unwrap().to_string(), error.to_string());
        assert_eq!(records.into_inner().bytes, b"one\n");
    }

    #[test]
    fn a_writer_that_cannot_be_cut_keeps_the_torn_record_and_stops() {
        let mut records = small_disk(10, false);
        records.append(b"one\n").unwrap();
        assert!(records.append(b"second\n").is_err());
        assert!(records.append(b"3\n").is_err());
        assert_eq!(records.into_inner().bytes, b"one\nsecond");
    }
}
