//! `runner sessions [list | show ID | tree [ID] | checkout ID | rm ID]`: the sessions kept
//! under `.runner/sessions`. `rm` is refused while a process holds the session (its run
//! would write it again).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::Exit;
use crate::checkpoint::{CheckpointStore, FileCheckpointStore, check_session_id};
use crate::session::files::default_sessions_dir;
use crate::session::thread::{self, ThreadNodeView};

#[derive(Debug, Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    pub command: Option<SessionsCommand>,
    /// The sessions directory.
    #[arg(long, default_value_os_t = default_sessions_dir(), global = true)]
    pub dir: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Every session: id, agent, status, steps, last update (the default).
    List,
    /// One session's metadata and its thread tree.
    Show { id: String },
    /// The thread tree of a session (every tree without one): each branch with the step
    /// of its parent it started from, its status and steps; `*` marks the checked-out one.
    Tree { id: Option<String> },
    /// Makes a session the one `runner resume` without an id continues.
    Checkout { id: String },
    /// Delete a session and its checkpoints.
    Rm { id: String },
}

pub fn run(args: SessionsArgs) -> Exit {
    let store = match FileCheckpointStore::create(&args.dir) {
        Ok(store) => store,
        Err(error) => {
            eprintln!("error: {error}");
            return Exit::Invalid;
        }
    };
    let command = args.command.unwrap_or(SessionsCommand::List);
    let given = match &command {
        SessionsCommand::Show { id }
        | SessionsCommand::Rm { id }
        | SessionsCommand::Checkout { id }
        | SessionsCommand::Tree { id: Some(id) } => Some(id),
        _ => None,
    };
    if let Some(id) = given
        && let Err(error) = check_session_id(id)
    {
        eprintln!("error: {error}");
        return Exit::Invalid;
    }
    let exit = match command {
        SessionsCommand::List => match store.list() {
            Ok(sessions) => {
                outln!(
                    "{:<36}  {:<20}  {:<14}  {:>5}  UPDATED",
                    "SESSION",
                    "AGENT",
                    "STATUS",
                    "STEPS"
                );
                for s in sessions {
                    let status = serde_json::to_value(s.status)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default();
                    outln!(
                        "{:<36}  {:<20}  {:<14}  {:>5}  {}",
                        s.session_id,
                        s.agent,
                        status,
                        s.steps,
                        s.updated
                    );
                }
                Exit::Completed
            }
            Err(error) => {
                eprintln!("error: {error}");
                Exit::Failed
            }
        },
        SessionsCommand::Show { id } => match store.metadata(&id) {
            Ok(Some(metadata)) => {
                if let Ok(text) = serde_json::to_string_pretty(&metadata) {
                    outln!("{text}");
                }
                outln!("\nthread tree:\n{}", metadata.thread_tree.render());
                Exit::Completed
            }
            Ok(None) => {
                eprintln!("error: no session `{id}` in {}", args.dir.display());
                Exit::Invalid
            }
            Err(error) => {
                eprintln!("error: {error}");
                Exit::Failed
            }
        },
        SessionsCommand::Tree { id } => show_tree(&store, &args.dir, id.as_deref()),
        SessionsCommand::Checkout { id } => match thread::checkout(&store, &args.dir, &id) {
            Ok(()) => {
                outln!("{id}");
                Exit::Completed
            }
            Err(error) => {
                eprintln!("error: {error}");
                Exit::Invalid
            }
        },
        SessionsCommand::Rm { id } => match remove(&store, &id) {
            Ok(()) => Exit::Completed,
            Err(error) => {
                eprintln!("error: {error}");
                Exit::Invalid
            }
        },
    };
    // A torn journal is shown as what a resume would see; say what was dropped.
    for warning in store.take_warnings() {
        eprintln!("warning: {warning}");
    }
    exit
}

/// Deletes session `id` and the directories of its runs under `.runner/runs` (a run given
/// `--run-dir` elsewhere stays where it was put).
fn remove(store: &FileCheckpointStore, id: &str) -> Result<(), crate::checkpoint::CheckpointError> {
    let runs = store
        .metadata(id)
        .ok()
        .flatten()
        .map(|metadata| metadata.run_ids)
        .unwrap_or_default();
    store.delete(id)?;
    for run in runs {
        let dir = crate::session::run_dir::runs_dir().join(&run);
        // A run id is one plain name, like a session id: metadata that says otherwise
        // cannot point the deletion elsewhere.
        if crate::checkpoint::check_session_id(&run).is_ok() && dir.is_dir() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    Ok(())
}

/// `runner sessions tree [ID]`: one line per node, indented under its parent.
fn show_tree(store: &FileCheckpointStore, dir: &std::path::Path, id: Option<&str>) -> Exit {
    let trees = match id {
        Some(id) => match thread::tree_of(store, id) {
            Ok(Some(tree)) => vec![tree],
            Ok(None) => {
                eprintln!("error: no session `{id}` in {}", dir.display());
                return Exit::Invalid;
            }
            Err(error) => {
                eprintln!("error: {error}");
                return Exit::Failed;
            }
        },
        None => match thread::all_trees(store) {
            Ok(trees) => trees,
            Err(error) => {
                eprintln!("error: {error}");
                return Exit::Failed;
            }
        },
    };
    let current = thread::checked_out(dir);
    for (depth, node) in trees.iter().flatten() {
        outln!("{}", tree_line(*depth, node, current.as_deref()));
    }
    Exit::Completed
}

/// `  ID [NAME] (from step N of PARENT) STATUS, N steps *`
fn tree_line(depth: usize, node: &ThreadNodeView, current: Option<&str>) -> String {
    let mut line = format!("{}{}", "  ".repeat(depth), node.id);
    if let Some(name) = &node.name {
        line.push_str(&format!(" [{name}]"));
    }
    if let Some((parent, step)) = &node.parent {
        line.push_str(&format!(" (from step {step} of {parent})"));
    }
    let status = serde_json::to_value(node.status)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    line.push_str(&format!("  {status}, {} steps", node.steps));
    if current == Some(node.id.as_str()) {
        line.push_str("  *");
    }
    line
}
