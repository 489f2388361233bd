//! An agent's stable id (UAP §3.4): the same agent gets the same id in every run, on every
//! machine, wherever the run starts, so events and checkpoints of different runs can be
//! told apart by agent even when two agents share a name.
//!
//! The id is derived from where the agent is written and its name: the path of its file
//! relative to the project directory (the nearest directory at or above the file that holds
//! a `runner.yaml` or a `.git`; without one, the file's absolute path), with `/` between
//! the parts, then `#` and the agent's name. An inline agent is written in the file that
//! holds it. The SHA-256 of that text, shaped as a UUID (version 8, RFC 9562: the
//! "custom" version, since UAP's UUIDv4 would not be stable), is the id.

use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use super::project::PROJECT_FILE;

/// The id of the agent named `name` written in `file`.
pub fn agent_id(file: &Path, name: &str) -> String {
    id_of(&format!("{}#{name}", written_at(file)))
}

/// The id of an agent built in code (the library's `Agent::builder`), written in no file:
/// derived from its name alone.
pub fn unwritten_agent_id(name: &str) -> String {
    id_of(&format!("#{name}"))
}

/// Where the agent is written, as the id sees it: the file relative to its project
/// directory (`/`-separated), else its absolute path.
pub fn written_at(file: &Path) -> String {
    let file = file
        .canonicalize()
        .or_else(|_| std::path::absolute(file))
        .unwrap_or_else(|_| file.to_path_buf());
    let relative = project_dir(&file)
        .and_then(|dir| file.strip_prefix(&dir).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| file.clone());
    let parts: Vec<String> = relative
        .components()
        .filter_map(|part| match part {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    parts.join("/")
}

/// The nearest directory at or above `file`'s that holds a project file or a `.git`.
fn project_dir(file: &Path) -> Option<PathBuf> {
    let mut dir = file.parent();
    while let Some(at) = dir {
        if at.join(PROJECT_FILE).is_file() || at.join(".git").exists() {
            return Some(at.to_path_buf());
        }
        dir = at.parent();
    }
    None
}

/// `text`'s SHA-256 as a UUID of version 8.
fn id_of(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    uuid::Uuid::from_bytes(bytes).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_a_version_8_uuid_of_the_place_and_the_name() {
        let id = id_of("agents/a.yaml#a");
        assert_eq!(id, id_of("agents/a.yaml#a"));
        assert_ne!(id, id_of("agents/a.yaml#b"));
        assert_eq!(&id[14..15], "8");
    }
}
