//! The thread tree you can walk (UAP §7): the sessions of a directory that branched from
//! one another, the one checked out (which `runner resume` without an id continues), and a
//! node's history.
//!
//! A node is a session: a branch (`runner resume ID --from-checkpoint N --branch NAME`)
//! starts a new session from the state after step N of its parent, so every node keeps
//! what a resume needs, and its own latest state holds its history from the root. The
//! tree is read from each session's `parent` (its metadata), so a branch made from any
//! node shows in it, whichever session's copy of `threadTree` was written last.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::checkpoint::{CheckpointError, CheckpointStore, SessionMetadata, SessionStatus};
use crate::engine::AgentState;
use crate::provider::Message;

/// The file of a sessions directory naming its checked-out session.
pub const CHECKED_OUT: &str = "HEAD";

/// One node of a thread tree.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadNodeView {
    /// The node's session id.
    pub id: String,
    /// The session it branched from, and after which of its steps.
    pub parent: Option<(String, u64)>,
    /// The branch's name.
    pub name: Option<String>,
    pub status: SessionStatus,
    pub steps: u64,
    /// The sessions that branched from it, oldest first.
    pub children: Vec<String>,
}

/// The tree holding session `id`, root first, each node before its children (depth
/// first, children oldest first), with each node's depth. `None` when there is no such
/// session.
pub fn tree_of(
    store: &dyn CheckpointStore,
    id: &str,
) -> Result<Option<Vec<(usize, ThreadNodeView)>>, CheckpointError> {
    let nodes = all_nodes(store)?;
    if !nodes.contains_key(id) {
        return Ok(None);
    }
    let root = root_of(&nodes, id);
    Ok(Some(walk(&nodes, &root)))
}

/// Every tree of the directory, each as [`tree_of`] gives it, most recent root first.
pub fn all_trees(
    store: &dyn CheckpointStore,
) -> Result<Vec<Vec<(usize, ThreadNodeView)>>, CheckpointError> {
    let nodes = all_nodes(store)?;
    let roots = store
        .list()?
        .into_iter()
        .map(|summary| summary.session_id)
        .filter(|id| root_of(&nodes, id) == *id);
    Ok(roots.map(|root| walk(&nodes, &root)).collect())
}

/// The messages of node `id` from the root of its tree (UAP §7.3): its latest state's
/// history, which a branch took over from its parent. `None` when the session has no
/// checkpoint.
pub fn history(
    store: &dyn CheckpointStore,
    id: &str,
) -> Result<Option<Vec<Message>>, CheckpointError> {
    let Some(checkpoint) = store.load(id)? else {
        return Ok(None);
    };
    let state: AgentState =
        serde_json::from_value(checkpoint.state).map_err(|e| CheckpointError::Corrupt {
            path: PathBuf::from(id),
            reason: format!("its state: {e}"),
        })?;
    Ok(Some(state.messages.to_vec()))
}

/// Makes session `id` of the directory `dir` the one `runner resume` without an id
/// continues. The session must exist.
pub fn checkout(store: &dyn CheckpointStore, dir: &Path, id: &str) -> Result<(), String> {
    match store.metadata(id) {
        Ok(Some(_)) => {}
        Ok(None) => return Err(format!("no session `{id}` in {}", dir.display())),
        Err(error) => return Err(error.to_string()),
    }
    let path = dir.join(CHECKED_OUT);
    let temporary = dir.join(format!(".{CHECKED_OUT}.tmp"));
    std::fs::write(&temporary, format!("{id}\n"))
        .and_then(|()| std::fs::rename(&temporary, &path))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The session checked out in `dir`, if any.
pub fn checked_out(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(CHECKED_OUT)).ok()?;
    let id = text.trim();
    crate::checkpoint::check_session_id(id).ok()?;
    Some(id.to_string())
}

/// Every session of the store as a node, its children filled in.
fn all_nodes(
    store: &dyn CheckpointStore,
) -> Result<BTreeMap<String, ThreadNodeView>, CheckpointError> {
    let mut nodes: BTreeMap<String, ThreadNodeView> = BTreeMap::new();
    let mut created: BTreeMap<String, String> = BTreeMap::new();
    for summary in store.list()? {
        let Some(metadata) = store.metadata(&summary.session_id)? else {
            continue;
        };
        created.insert(summary.session_id.clone(), metadata.created.clone());
        nodes.insert(summary.session_id.clone(), node(metadata, &summary));
    }
    let mut children: Vec<(String, String)> = nodes
        .values()
        .filter_map(|n| Some((n.parent.as_ref()?.0.clone(), n.id.clone())))
        .collect();
    children.sort_by(|a, b| created.get(&a.1).cmp(&created.get(&b.1)));
    for (parent, child) in children {
        if let Some(parent) = nodes.get_mut(&parent) {
            parent.children.push(child);
        }
    }
    Ok(nodes)
}

fn node(metadata: SessionMetadata, summary: &crate::checkpoint::SessionSummary) -> ThreadNodeView {
    ThreadNodeView {
        id: metadata.session_id,
        parent: metadata.parent.map(|p| (p.session_id, p.step)),
        name: metadata.branch_name,
        // The summary's are the journal's newest.
        status: summary.status,
        steps: summary.steps,
        children: Vec::new(),
    }
}

/// The root of `id`'s tree: up through the parents the directory still has. Bounded by
/// the number of sessions, so metadata that makes a loop cannot hold it.
fn root_of(nodes: &BTreeMap<String, ThreadNodeView>, id: &str) -> String {
    let mut at = id.to_string();
    for _ in 0..nodes.len() {
        match nodes.get(&at).and_then(|n| n.parent.as_ref()) {
            Some((parent, _)) if nodes.contains_key(parent) => at = parent.clone(),
            _ => break,
        }
    }
    at
}

/// The nodes under `root`, depth first; each node once, whatever the metadata says.
fn walk(nodes: &BTreeMap<String, ThreadNodeView>, root: &str) -> Vec<(usize, ThreadNodeView)> {
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut stack = vec![(0, root.to_string())];
    while let Some((depth, id)) = stack.pop() {
        let Some(node) = nodes.get(&id) else {
            continue;
        };
        if !seen.insert(id) {
            continue;
        }
        for child in node.children.iter().rev() {
            stack.push((depth + 1, child.clone()));
        }
        out.push((depth, node.clone()));
    }
    out
}
