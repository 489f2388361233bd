//! The agent tree of a file: the agent and every agent it can reach through sub-agent
//! tools and handoffs, visited before the run so that what would fail deep in the tree
//! (an MCP server, a missing API key) fails at start.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::subagents::SpecAgent;
use super::{CompileError, CompileInput};
use crate::spec::paths::canonical;
use crate::spec::tools::{AgentRef, ToolEntry};

/// What a walk does with each agent.
pub type Visit<'v> = dyn FnMut(&CompileInput<'_>, &Place<'_>) -> Result<(), CompileError> + 'v;

/// Where an agent of the tree is, for a problem of it to point at.
pub struct Place<'a> {
    /// The file it came from (`None`: the root, or an agent inline in the root file).
    pub file: Option<&'a Path>,
    /// The key of the root file that holds it (`""`: the root), as a JSON pointer: its
    /// own keys when it is written inline there (`/handoffs/0/agent`), else the
    /// reference that leads to its file.
    pub pointer: String,
    /// Whether it is written in the root file, so that its keys are under `pointer`.
    pub inline: bool,
}

impl Place<'_> {
    /// The pointer of the agent's key `key` (`/model`), or of the reference to its file.
    pub fn key(&self, key: &str) -> String {
        match self.inline {
            true => format!("{}{key}", self.pointer),
            false => self.pointer.clone(),
        }
    }
}

/// Calls `visit` for the agent and every agent it can reach through sub-agent tools and
/// handoffs, with its place (the file it came from, the key of the root file that holds
/// it or leads to it); an agent file reached twice (recursion) is visited once more, not
/// forever.
pub fn for_each_agent(input: &CompileInput<'_>, visit: &mut Visit<'_>) -> Result<(), CompileError> {
    let mut seen = HashSet::new();
    let root = Place {
        file: None,
        pointer: String::new(),
        inline: true,
    };
    walk(input, &root, visit, &mut seen)
}

fn walk(
    input: &CompileInput<'_>,
    place: &Place<'_>,
    visit: &mut Visit<'_>,
    seen: &mut HashSet<PathBuf>,
) -> Result<(), CompileError> {
    visit(input, place)?;
    let tools = input
        .spec
        .tools
        .iter()
        .enumerate()
        .filter_map(|(index, entry)| match entry {
            ToolEntry::SubAgent(tool) => Some((format!("/tools/{index}/agent"), &tool.agent)),
            _ => None,
        });
    let handoffs = (input.spec.handoffs.iter().enumerate())
        .map(|(index, handoff)| (format!("/handoffs/{index}/agent"), &handoff.agent));
    for (key, reference) in tools.chain(handoffs) {
        let path = match reference {
            AgentRef::Path(relative) => Some(input.file_dir.join(relative)),
            AgentRef::Inline(_) => None,
        };
        if let Some(path) = &path
            && !seen.insert(canonical(path))
        {
            continue;
        }
        let child_place = Place {
            file: path.as_deref().or(place.file),
            pointer: place.key(&key),
            inline: place.inline && path.is_none(),
        };
        let at = |error: CompileError| error.at(child_place.pointer.clone());
        let child = SpecAgent::resolve(input, reference).map_err(at)?;
        let context = child
            .context()
            .map_err(|error| at(CompileError::SubAgentFile(error.to_string())))?;
        walk(&child.input(&context, None), &child_place, visit, seen)?;
    }
    Ok(())
}
