//! Reading the files of a definition: every file the loader opens (agent files, sub-agent
//! and handoff files, included templates, the JSON files MCP servers are imported from)
//! goes through [`read_bounded`].
//!
//! A definition may come from a pull request, and `runner validate` in a CI job must end
//! whatever it holds. So a file is opened without blocking (a FIFO would wait for a
//! writer), refused unless it is a regular file (`/dev/stdin`, `/dev/stdout`, a FIFO, a
//! socket or a device never ends, or blocks), read up to one byte past the size bound, and
//! all of that within [`READ_DEADLINE`] (a file on a hung network or FUSE mount).

use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use super::yaml::MAX_INPUT_BYTES;

/// How long opening and reading one file may take.
pub const READ_DEADLINE: Duration = Duration::from_secs(10);

/// The file's bytes, at most one past `MAX_INPUT_BYTES`: enough to tell a file is too
/// large without holding all of it. An error for a file that is not a regular file, or
/// that cannot be read within [`READ_DEADLINE`].
pub fn read_bounded(path: &Path) -> io::Result<Vec<u8>> {
    let (sender, receiver) = mpsc::channel();
    let owned = path.to_path_buf();
    // The read runs on a thread of its own so that a read the kernel never completes
    // leaves that thread behind, not the caller.
    let spawned = std::thread::Builder::new()
        .name("read-definition".into())
        .spawn(move || {
            let _ = sender.send(read_regular(&owned));
        });
    if let Err(error) = spawned {
        return Err(io::Error::other(format!(
            "cannot start reading it: {error}"
        )));
    }
    match receiver.recv_timeout(READ_DEADLINE) {
        Ok(result) => result,
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "reading it took longer than {}s",
                READ_DEADLINE.as_secs_f64()
            ),
        )),
    }
}

/// [`read_bounded`] as text: an error when the file is larger than `MAX_INPUT_BYTES` or
/// not UTF-8.
pub fn read_text_bounded(path: &Path) -> io::Result<String> {
    let bytes = read_bounded(path)?;
    if bytes.len() > MAX_INPUT_BYTES {
        return Err(io::Error::other(format!(
            "it is larger than {} MiB",
            MAX_INPUT_BYTES / (1024 * 1024)
        )));
    }
    String::from_utf8(bytes).map_err(|_| io::Error::other("it is not UTF-8"))
}

fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {}, not a regular file", describe(kind)),
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_INPUT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// What a file that is not a regular one is, for the message.
fn describe(kind: std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a pipe (FIFO)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read() {
        let error = read_bounded(Path::new("/dev/null")).unwrap_err();
        assert!(error.to_string().contains("character device"), "{error}");
        let error = read_bounded(Path::new("/")).unwrap_err();
        assert!(error.to_string().contains("a directory"), "{error}");
        let missing = read_bounded(Path::new("/no/such/file")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }
}
