//! A case's directory: a fresh workspace (the tools' root: the run's working directory)
//! with the case's files laid in, and beside it the run directory and the files `exec`
//! is given (input values, answers, script). The run cannot see anything but its workspace
//! through its file tools, and no two cases share one.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use super::spec::Case;
use crate::sandbox::Prepared;

/// The directories of one run of a case.
#[derive(Debug, Clone)]
pub struct CaseDir {
    /// Holds the rest; removed when the run passes.
    pub root: PathBuf,
    /// The run's working directory.
    pub workspace: PathBuf,
    /// `--run-dir`: result.json, events.jsonl, transcript.txt.
    pub run: PathBuf,
}

impl CaseDir {
    /// Creates `root` with an empty workspace in it.
    pub fn create(root: PathBuf) -> std::io::Result<Self> {
        let workspace = root.join("workspace");
        std::fs::create_dir_all(&workspace)?;
        Ok(CaseDir {
            run: root.join("run"),
            workspace,
            root,
        })
    }

    /// Writes the case's `files:` into the workspace (paths were checked to stay inside).
    pub fn lay_files(&self, case: &Case) -> Result<(), String> {
        for (name, text) in &case.files {
            let path = self.workspace.join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
            std::fs::write(&path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok(())
    }

    /// Writes `value` as JSON beside the workspace (JSON is YAML, which `exec` reads).
    pub fn write_json(&self, name: &str, value: &impl Serialize) -> Result<PathBuf, String> {
        let path = self.root.join(name);
        let text = serde_json::to_string(value).map_err(|e| e.to_string())?;
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(path)
    }

    /// Runs the case's `setup` command in the workspace: `sh -c COMMAND`, with
    /// `$RUNNER_TEST_DIR` the test file's directory, under `sandbox` (the agent's) when
    /// there is one.
    pub fn setup(
        &self,
        command: &str,
        test_dir: &Path,
        env: &[(String, Option<String>)],
        sandbox: Option<Prepared>,
    ) -> Result<(), String> {
        let mut shell = Command::new("sh");
        shell
            .arg("-c")
            .arg(command)
            .current_dir(&self.workspace)
            .env("RUNNER_TEST_DIR", test_dir);
        apply_env(&mut shell, env);
        let sandboxed = sandbox.is_some();
        if let Some(prepared) = sandbox {
            // SAFETY: `enter` makes only raw system calls, between fork and exec.
            unsafe {
                shell.pre_exec(move || prepared.enter());
            }
        }
        let output = shell
            .output()
            .map_err(|e| format!("setup: cannot run sh: {e}"))?;
        if output.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let under = match sandboxed {
            true => {
                " under the agent's sandbox, which lets it write only the workspace and the `fs.write` paths and reach only its `network` (docs/security.md)"
            }
            false => "",
        };
        Err(format!(
            "setup failed{under} ({}): {}",
            output.status,
            stderr.trim()
        ))
    }

    /// The files a `setup` command names outside the workspace: each of its words, with
    /// `$RUNNER_TEST_DIR` expanded, taken from the workspace as `sh` would. These are the
    /// test file's set-up scripts, which every case runs again; the run may not write them
    /// (`exec --protect`), or a model whose file tools reach them (a `root:` outside the
    /// workspace) would run its own code in the next case's set-up. Files inside the
    /// workspace are this case's own.
    pub fn setup_scripts(&self, command: &str, test_dir: &Path) -> Vec<PathBuf> {
        let words = shell_words::split(command)
            .unwrap_or_else(|_| command.split_whitespace().map(String::from).collect());
        let dir = test_dir.to_string_lossy();
        let workspace = self.workspace.canonicalize().unwrap_or_default();
        let mut scripts: Vec<PathBuf> = words
            .iter()
            .map(|word| {
                let word = word
                    .replace("${RUNNER_TEST_DIR}", &dir)
                    .replace("$RUNNER_TEST_DIR", &dir);
                self.workspace.join(word)
            })
            .filter(|path| path.is_file())
            .filter_map(|path| path.canonicalize().ok())
            .filter(|path| !path.starts_with(&workspace))
            .collect();
        scripts.sort();
        scripts.dedup();
        scripts
    }

    /// Removes everything the run left.
    pub fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Sets (`Some`) or removes (`None`) each variable.
pub fn apply_env(command: &mut Command, env: &[(String, Option<String>)]) {
    for (name, value) in env {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
}
