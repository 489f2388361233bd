//! Paths: which files a `runner validate PATH...` means, and readable normalised paths.

use std::path::{Component, Path, PathBuf};

/// Removes `.` and folds `..` lexically, so reported paths stay readable.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// The path with symlinks resolved, so one file reached two ways is recognised; the
/// normalised path when it does not exist.
pub fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| normalize(path))
}

/// The file opening `path` reaches, shown readably: the lexically normalised path when it
/// names that file, else the canonical path. They differ when a symlinked directory comes
/// before a `..` (`agents -> deep/agents` makes `agents/../x` open `deep/x`, not `x`).
pub fn resolved(path: &Path) -> PathBuf {
    let readable = normalize(path);
    match path.canonicalize() {
        Ok(real) if readable.canonicalize().ok().as_ref() != Some(&real) => real,
        _ => readable,
    }
}

/// Expands files and directories (recursively: `.yaml` and `.yml`, skipping hidden
/// directories, `target` and `node_modules`, and the test files `*.test.yaml` that sit
/// beside agents, which `runner test` reads) into a sorted list of agent files.
pub fn expand_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    expand_paths_where(paths, is_agent_file)
}

/// Expands files (kept whatever their name) and directories, searched recursively for the
/// files whose name is `wanted`, skipping hidden directories, `target` and `node_modules`;
/// sorted within each directory. A path that does not exist is an error.
pub fn expand_paths_where(
    paths: &[PathBuf],
    wanted: fn(&str) -> bool,
) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            collect_dir(path, wanted, &mut files)
                .map_err(|e| format!("{}: {e}", path.display()))?;
        } else if path.exists() {
            files.push(path.clone());
        } else {
            return Err(format!("{}: no such file or directory", path.display()));
        }
    }
    Ok(files)
}

fn collect_dir(
    dir: &Path,
    wanted: fn(&str) -> bool,
    files: &mut Vec<PathBuf>,
) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    entries.sort();
    for entry in entries {
        let name = entry
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if entry.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "node_modules" {
                collect_dir(&entry, wanted, files)?;
            }
        } else if wanted(&name) {
            files.push(entry);
        }
    }
    Ok(())
}

/// Whether a file name is one `runner validate` checks: YAML, and not a test file (a
/// `runner.yaml` among them is checked as the project file).
fn is_agent_file(name: &str) -> bool {
    (name.ends_with(".yaml") || name.ends_with(".yml")) && !is_test_file(name)
}

/// Whether a file name is the project file's (`runner.yaml`), not an agent's.
pub fn is_project_file(name: &str) -> bool {
    name == super::project::PROJECT_FILE
}

/// Whether a file name is a test file's (`x.test.yaml`, `x.test.yml`), not an agent's.
pub fn is_test_file(name: &str) -> bool {
    name.ends_with(".test.yaml") || name.ends_with(".test.yml")
}
