//! Which files `runner test PATH...` runs: files given by name, and every `*.test.yaml`
//! (or `*.test.yml`) under the directories given, as `runner validate` walks them.

use std::path::{Path, PathBuf};

use crate::spec::paths::is_test_file;

/// The test files of `paths` (the current directory when none), sorted within each
/// directory; a path that does not exist is an error.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let default = [PathBuf::from(".")];
    let paths = if paths.is_empty() {
        &default[..]
    } else {
        paths
    };
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut files).map_err(|e| format!("{}: {e}", path.display()))?;
        } else if path.exists() {
            files.push(path.clone());
        } else {
            return Err(format!("{}: no such file or directory", path.display()));
        }
    }
    files.dedup();
    Ok(files)
}

/// Skips hidden directories, `target` and `node_modules`, like `runner validate`.
fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    entries.sort();
    for entry in entries {
        let name = entry.file_name().unwrap_or_default().to_string_lossy();
        if entry.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "node_modules" {
                walk(&entry, files)?;
            }
        } else if is_test_file(&name) {
            files.push(clean(&entry));
        }
    }
    Ok(())
}

/// `./agents/x.test.yaml` as `agents/x.test.yaml`, for reports.
fn clean(path: &Path) -> PathBuf {
    path.strip_prefix(".").unwrap_or(path).to_path_buf()
}
