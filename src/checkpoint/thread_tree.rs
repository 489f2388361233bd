//! Thread trees (UAP §7): which session branched from which step of which other session.
//! Serialised as ThreadTreeJSON (`rootId`, `currentId`, `nodes`).

use serde::{Deserialize, Serialize};

/// One session in the tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadNode {
    /// The node id is the session id.
    pub id: String,
    pub parent_id: Option<String>,
    /// The parent's step this branch started after.
    pub step: Option<u64>,
    pub name: Option<String>,
    pub children: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTree {
    pub root_id: String,
    pub current_id: String,
    pub nodes: Vec<ThreadNode>,
}

impl ThreadTree {
    /// A tree of one session.
    pub fn new(root_session: &str) -> Self {
        ThreadTree {
            root_id: root_session.to_string(),
            current_id: root_session.to_string(),
            nodes: vec![ThreadNode {
                id: root_session.to_string(),
                parent_id: None,
                step: None,
                name: None,
                children: Vec::new(),
            }],
        }
    }

    /// Adds `new_session` as a branch of `from_session` after `from_step`, and makes it
    /// current. Returns its node id.
    pub fn branch(
        &mut self,
        from_session: &str,
        from_step: u64,
        new_session: &str,
        name: Option<String>,
    ) -> String {
        if let Some(parent) = self.nodes.iter_mut().find(|n| n.id == from_session) {
            parent.children.push(new_session.to_string());
        }
        self.nodes.push(ThreadNode {
            id: new_session.to_string(),
            parent_id: Some(from_session.to_string()),
            step: Some(from_step),
            name,
            children: Vec::new(),
        });
        self.current_id = new_session.to_string();
        new_session.to_string()
    }

    /// An indented tree for `runner sessions show`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_node(&self.root_id, 0, &mut out);
        out
    }

    fn render_node(&self, id: &str, depth: usize, out: &mut String) {
        let Some(node) = self.nodes.iter().find(|n| n.id == id) else {
            return;
        };
        let mut line = format!("{}{}", "  ".repeat(depth), node.id);
        if let Some(name) = &node.name {
            line.push_str(&format!(" [{name}]"));
        }
        if let Some(step) = node.step {
            line.push_str(&format!(" (from step {step})"));
        }
        if node.id == self.current_id {
            line.push_str(" *");
        }
        out.push_str(&line);
        out.push('\n');
        // Depth is bounded by the number of nodes, so a malformed cycle cannot recurse forever.
        if depth < self.nodes.len() {
            for child in &node.children {
                self.render_node(child, depth + 1, out);
            }
        }
    }
}
