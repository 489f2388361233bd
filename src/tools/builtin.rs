//! From a `builtin:` entry of the agent file to a ready tool.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::sandbox::Sandbox;
use crate::spec::sandbox::SandboxSpec;
use crate::spec::tools::BuiltinTool;

use super::{
    ChildEnv, HttpGetTool, ListDirTool, Protected, ReadFileTool, SearchFilesTool, ShellTool, Tool,
    Workspace, WriteFileTool,
};

/// Builds the tool a `builtin:` entry declares.
///
/// * `root:` is resolved against `base_dir` when relative (an absolute `root` is used as
///   is); no `root` means `base_dir` itself. The engine passes the process working
///   directory, so `root: src` in an agent file means `./src` from where `runner` was
///   started, as SPEC §2.3 says ("default the current directory"). The root must exist.
/// * `protected`: `runner`'s own files, which the file tools never write and listings skip.
/// * `deny_env`: extra variable names the `shell` tool keeps from its children, on top of
///   the built-in rules (every `*_API_KEY` / `*_TOKEN`); pass each agent's `api_key_env`.
///   [`build_builtin_in`] takes them with the run's trace, as a [`ChildEnv`].
/// * `ask_user` is an error here: the engine provides it, since it needs the human-input flow.
#[cfg(any(test, feature = "testing"))]
pub fn build_builtin(
    spec: &BuiltinTool,
    base_dir: &Path,
    protected: &Arc<Protected>,
    deny_env: &[String],
) -> Result<Arc<dyn Tool>, String> {
    let env = ChildEnv::withholding(deny_env.to_vec());
    build_builtin_in(spec, base_dir, protected, &env, &[])
}

/// [`build_builtin`] for an agent under `sandboxes` (its own `sandbox:` and its callers',
/// outermost first), which hold for `shell` on top of the tool's own. A sandbox that is
/// `required` and that the kernel cannot enforce is an error here, at the start of a run.
pub fn build_builtin_in(
    spec: &BuiltinTool,
    base_dir: &Path,
    protected: &Arc<Protected>,
    env: &ChildEnv,
    sandboxes: &[&SandboxSpec],
) -> Result<Arc<dyn Tool>, String> {
    let workspace = |root: &Option<String>| -> Result<Workspace, String> {
        let dir: PathBuf = match root {
            None => base_dir.to_path_buf(),
            Some(root) => base_dir.join(root),
        };
        Workspace::new(&dir)
            .map(|workspace| workspace.protecting(protected.clone()))
            .map_err(|e| format!("{}: {e}", spec.name()))
    };
    Ok(match spec {
        BuiltinTool::ReadFile { root, .. } => Arc::new(ReadFileTool::new(workspace(root)?)),
        BuiltinTool::WriteFile { root, .. } => Arc::new(WriteFileTool::new(workspace(root)?)),
        BuiltinTool::ListDir { root, .. } => Arc::new(ListDirTool::new(workspace(root)?)),
        BuiltinTool::SearchFiles { root, .. } => Arc::new(SearchFilesTool::new(workspace(root)?)),
        BuiltinTool::Shell {
            allow,
            timeout,
            root,
            sandbox,
            ..
        } => {
            if allow.is_empty() {
                return Err(
                    "shell: `allow` is empty, so no program could run; list the programs \
                            the agent may use, e.g. allow: [git]"
                        .to_string(),
                );
            }
            let workspace = workspace(root)?;
            let specs: Vec<&SandboxSpec> =
                sandboxes.iter().copied().chain(sandbox.as_ref()).collect();
            let sandbox = Sandbox::new(&specs, workspace.root());
            if let Some(sandbox) = &sandbox {
                sandbox.check_at_start()?;
            }
            Arc::new(
                ShellTool::new(
                    workspace,
                    allow.clone(),
                    timeout.map(|t| t.as_duration()),
                    env.clone(),
                )
                .sandboxed(sandbox),
            )
        }
        BuiltinTool::HttpGet {
            allow_hosts,
            timeout,
            ..
        } => Arc::new(HttpGetTool::new(
            allow_hosts.clone(),
            timeout.map(|t| t.as_duration()),
        )?),
        BuiltinTool::AskUser { .. } => {
            return Err(
                "ask_user is provided by the engine (it needs the human-input flow), not by \
                 build_builtin"
                    .to_string(),
            );
        }
    })
}
