//! The sandbox a case's `setup:` command runs under: the agent's own `sandbox:` (its
//! top-level key), so a set-up is bounded like the programs the agent runs (the
//! workspace writable, secrets hidden, the network as the key says). A case of an agent
//! without one runs its set-up unconfined, as before.

use std::path::{Path, PathBuf};

use super::workspace::CaseDir;
use crate::sandbox::{self, Confine, Prepared, Sandbox};
use crate::spec::load::load_agent;

/// What the set-up of a case applies to itself before it starts, when the agent at
/// `agent` declares a sandbox the kernel can enforce. An error when the agent file cannot
/// be loaded, or its sandbox is `required` and cannot be enforced.
pub fn setup_sandbox(
    agent: &Path,
    dir: &CaseDir,
    read_only: Vec<PathBuf>,
) -> Result<Option<Prepared>, String> {
    // The run itself reports an invalid agent file, with every diagnostic; here it only
    // means there is no sandbox to read.
    let Ok((spec, _)) = load_agent(agent) else {
        return Ok(None);
    };
    let Some(declared) = spec.sandbox.as_ref() else {
        return Ok(None);
    };
    let Some(sandbox) = Sandbox::new(&[declared], &dir.workspace) else {
        return Ok(None);
    };
    sandbox
        .check_at_start()
        .map_err(|why| format!("setup: {why}"))?;
    let confine = Confine {
        workspace: sandbox::canonical(&dir.workspace),
        hidden: sandbox::hidden_paths(std::slice::from_ref(&dir.run)),
        read_only: read_only.iter().map(|p| sandbox::canonical(p)).collect(),
    };
    let prepared = sandbox
        .prepare(&confine)
        .map_err(|e| format!("setup: {e}"))?;
    if prepared.is_none() {
        sandbox::unavailable(&sandbox);
    }
    Ok(prepared)
}
