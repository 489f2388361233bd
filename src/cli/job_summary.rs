//! Where a command's job summary goes: appended to `GITHUB_STEP_SUMMARY` in GitHub Actions
//! (`GITHUB_ACTIONS=true`), and to the file of `--summary` (GitLab, Buildkite, anywhere).
//! A summary that cannot be written is a warning: the command's exit code stands.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::output::ci_report::in_github_actions;

/// Appends the summary `markdown` makes to every file a summary goes to (once to a file
/// named twice); made only when there is one.
pub fn write(markdown: impl FnOnce() -> String, file: Option<&Path>) {
    let targets = targets(file);
    if targets.is_empty() {
        return;
    }
    let markdown = markdown();
    for target in targets {
        if let Err(error) = append(&target, &markdown) {
            eprintln!(
                "warning: cannot write the job summary to {}: {error}",
                target.display()
            );
        }
    }
}

/// The files a summary goes to: `--summary`'s, and GitHub's step summary in a workflow.
fn targets(file: Option<&Path>) -> Vec<PathBuf> {
    let mut targets: Vec<PathBuf> = file.map(Path::to_path_buf).into_iter().collect();
    if in_github_actions()
        && let Some(github) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty())
    {
        let github = PathBuf::from(github);
        if !targets.contains(&github) {
            targets.push(github);
        }
    }
    targets
}

fn append(path: &Path, markdown: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(markdown.as_bytes())?;
    // Summaries of several commands (or steps) in one file stay separate blocks.
    file.write_all(b"\n")
}
