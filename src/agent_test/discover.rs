//! Which files `runner test PATH...` runs: files given by name, and every `*.test.yaml`
//! (or `*.test.yml`) under the directories given, as `runner validate` walks them.

use std::path::{Path, PathBuf};

use crate::spec::paths::{expand_paths_where, is_test_file};

/// The test files of `paths` (the current directory when none), sorted within each
/// directory; a path that does not exist is an error.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let default = [PathBuf::from(".")];
    let paths = if paths.is_empty() {
        &default[..]
    } else {
        paths
    };
    let mut files: Vec<PathBuf> = expand_paths_where(paths, is_test_file)?
        .into_iter()
        .map(|file| clean(&file))
        .collect();
    files.dedup();
    Ok(files)
}

/// `./agents/x.test.yaml` as `agents/x.test.yaml`, for reports.
fn clean(path: &Path) -> PathBuf {
    path.strip_prefix(".").unwrap_or(path).to_path_buf()
}
