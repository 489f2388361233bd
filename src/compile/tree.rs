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
pub type Visit<'v> = dyn FnMut(&CompileInput<'_>, Option<&Path>) -> Result<(), CompileError> + 'v;

/// Calls `visit` for the agent and every agent it can reach through sub-agent tools and
/// handoffs, with the file it came from (`None`: the root, or an inline agent); an agent
/// file reached twice (recursion) is visited once more, not forever.
pub fn for_each_agent(input: &CompileInput<'_>, visit: &mut Visit<'_>) -> Result<(), CompileError> {
    let mut seen = HashSet::new();
    walk(input, None, visit, &mut seen)
}

fn walk(
    input: &CompileInput<'_>,
    file: Option<&Path>,
    visit: &mut Visit<'_>,
    seen: &mut HashSet<PathBuf>,
) -> Result<(), CompileError> {
    visit(input, file)?;
    let references = input
        .spec
        .tools
        .iter()
        .filter_map(|entry| match entry {
            ToolEntry::SubAgent(tool) => Some(&tool.agent),
            _ => None,
        })
        .chain(input.spec.handoffs.iter().map(|h| &h.agent));
    for reference in references {
        let path = match reference {
            AgentRef::Path(relative) => Some(input.file_dir.join(relative)),
            AgentRef::Inline(_) => None,
        };
        if let Some(path) = &path
            && !seen.insert(canonical(path))
        {
            continue;
        }
        let child = SpecAgent::resolve(input, reference)?;
        let context = child.context().map_err(CompileError::SubAgentFile)?;
        walk(&child.input(&context, None), path.as_deref(), visit, seen)?;
    }
    Ok(())
}
