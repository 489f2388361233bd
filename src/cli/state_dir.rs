//! `.runner/`, where runs, sessions, batches and bundles are kept, stays out of git: after
//! any command, a `.runner/` in the working directory without a `.gitignore` gets one that
//! ignores everything in it (`*`), so a run in a repository leaves nothing to commit.

use std::path::Path;

/// The state directory of the working directory.
pub const STATE_DIR: &str = ".runner";

/// Writes `dir/.gitignore` (`*`) when `dir` exists and has none; a failure is a warning.
pub fn keep_out_of_git(dir: &Path) {
    if !dir.is_dir() {
        return;
    }
    let ignore = dir.join(".gitignore");
    if ignore.symlink_metadata().is_ok() {
        return; // the user's own, or ours from before
    }
    if let Err(error) = std::fs::write(&ignore, "*\n") {
        eprintln!("warning: cannot write {}: {error}", ignore.display());
    }
}
