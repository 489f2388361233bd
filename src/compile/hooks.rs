//! `hooks:` compiled: each command's program found (a path from the agent file's
//! directory), its patterns parsed, its timeout and `on_error` settled. A `command`
//! middleware's program is compiled the same way: it runs as a hook does.

use std::path::{Path, PathBuf};

use super::{CompileError, CompileInput, secret_env_names};
use crate::engine::middleware::CommandMiddleware;
use crate::policy::hooks::{DEFAULT_TIMEOUT, Hook, HookRunner, Hooks, OnError, ToolHook};
use crate::policy::{Pattern, Redactor};
use crate::spec::duration::HumanDuration;
use crate::spec::hooks::{HookCommand, HooksSpec, OnHookError, ToolHookSpec};
use crate::spec::middleware::{CommandMiddlewareConfig, OnMiddlewareError};

/// The agent's hooks, their programs running in the workspace with the environment
/// `shell` gets, their stderr redacted by `redactor`.
pub fn build_hooks(
    input: &CompileInput<'_>,
    spec: &HooksSpec,
    redactor: &Redactor,
) -> Result<Hooks, CompileError> {
    let hook = |command: &HookCommand, timeout: Option<HumanDuration>, on_error| Hook {
        command: command.0.clone(),
        program: program(input, command),
        timeout: timeout.map_or(DEFAULT_TIMEOUT, |t| t.0),
        on_error,
    };
    let tool_hooks = |hooks: &[ToolHookSpec]| -> Result<Vec<ToolHook>, CompileError> {
        hooks
            .iter()
            .map(|spec| {
                let on_error = on_error(spec.on_error, OnError::Deny);
                Ok(ToolHook {
                    hook: hook(&spec.command, spec.timeout, on_error),
                    matches: patterns(spec)?,
                })
            })
            .collect()
    };
    Ok(Hooks {
        pre_tool_use: tool_hooks(&spec.pre_tool_use)?,
        post_tool_use: tool_hooks(&spec.post_tool_use)?,
        run_start: spec
            .run_start
            .iter()
            .map(|s| hook(&s.command, s.timeout, on_error(s.on_error, OnError::Allow)))
            .collect(),
        run_end: notices(&spec.run_end, &hook),
        user_input: notices(&spec.user_input, &hook),
        runner: HookRunner {
            workspace: input.workspace.dir.clone(),
            env: input.child_env(secret_env_names(input.spec)),
            redactor: redactor.clone(),
            protected: input.workspace.protected.clone(),
        },
    })
}

fn notices(
    specs: &[crate::spec::hooks::NoticeHookSpec],
    hook: &dyn Fn(&HookCommand, Option<HumanDuration>, OnError) -> Hook,
) -> Vec<Hook> {
    // Nothing to allow or deny: a failure is a warning.
    specs
        .iter()
        .map(|s| hook(&s.command, s.timeout, OnError::Allow))
        .collect()
}

fn on_error(written: Option<OnHookError>, default: OnError) -> OnError {
    match written {
        Some(OnHookError::Deny) => OnError::Deny,
        Some(OnHookError::Allow) => OnError::Allow,
        None => default,
    }
}

fn patterns(spec: &ToolHookSpec) -> Result<Vec<Pattern>, CompileError> {
    spec.matches
        .iter()
        .map(|p| Pattern::parse(&p.0))
        .collect::<Result<_, _>>()
        .map_err(|message| CompileError::Policy {
            key: "hooks",
            message,
        })
}

/// A `command` middleware: its program run as a hook's is, failing the call unless it
/// says `on_error: continue`.
pub fn command_middleware(
    input: &CompileInput<'_>,
    config: &CommandMiddlewareConfig,
) -> Result<CommandMiddleware, CompileError> {
    let redactor = Redactor::new(&input.spec.redact).map_err(|message| CompileError::Policy {
        key: "redact",
        message,
    })?;
    let on_error = match config.on_error {
        Some(OnMiddlewareError::Continue) => OnError::Allow,
        Some(OnMiddlewareError::Fail) | None => OnError::Deny,
    };
    Ok(CommandMiddleware {
        hook: Hook {
            command: config.command.0.clone(),
            program: program(input, &config.command),
            timeout: config.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0),
            on_error,
        },
        runner: HookRunner {
            workspace: input.workspace.dir.clone(),
            env: input.child_env(secret_env_names(input.spec)),
            redactor,
            protected: input.workspace.protected.clone(),
        },
    })
}

/// The program of a command: a relative path (one with a `/`) is taken from the agent
/// file's directory, since hooks ship beside the file; a bare name is left for `PATH`.
pub(super) fn program(input: &CompileInput<'_>, command: &HookCommand) -> PathBuf {
    let written = command.0.first().map(String::as_str).unwrap_or_default();
    let path = Path::new(written);
    if !written.contains('/') || path.is_absolute() {
        return path.to_path_buf();
    }
    let joined = input.file_dir.join(path);
    std::path::absolute(&joined).unwrap_or(joined)
}
