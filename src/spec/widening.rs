//! What a new version of an agent file would let the agent do that the old one did not:
//! tools, programs, hosts, sub-agents, handoffs, MCP servers, environment variables, a
//! looser or dropped `sandbox`, raised or removed limits, and a model endpoint or key
//! variable its calls did not go to. A reload (and a resume) refuses a widened definition unless
//! the person opted in when starting the run, so a model that finds a way to edit its file
//! still cannot grant itself more than it was given.

use super::AgentSpec;
use super::destination::{Destination, destinations_of};
use super::hooks::{HookEntry, HooksSpec};
use super::limits::Limits;
use super::middleware::{CommandMiddlewareConfig, MiddlewareEntry};
use super::permissions::{PermissionPattern, PermissionsSpec, Verdict};
use super::tools::{BuiltinTool, ToolEntry};

/// Each way `new` allows more than `old`, said for a person; empty when it allows no more.
pub fn widenings(old: &AgentSpec, new: &AgentSpec) -> Vec<String> {
    let mut found = Vec::new();
    for entry in &new.tools {
        found.extend(tool_widening(&old.tools, entry));
    }
    for handoff in &new.handoffs {
        let same = old
            .handoffs
            .iter()
            .any(|h| h.name == handoff.name && h.agent == handoff.agent);
        if !same {
            found.push(format!("adds or changes handoff `{}`", handoff.name));
        }
    }
    for name in &new.env {
        if !old.env.contains(name) {
            found.push(format!("reads the environment variable `{}`", name.0));
        }
    }
    if let Some(sandbox) = &old.sandbox {
        found.extend(sandbox.loosened_by(new.sandbox.as_ref(), "the agent's programs"));
    }
    found.extend(raised_limits(&old.limits, &new.limits));
    found.extend(new_destinations(old, new));
    found.extend(loosened_permissions(
        old.permissions.as_ref(),
        new.permissions.as_ref(),
    ));
    found.extend(changed_commands(&old.middleware, &new.middleware));
    found.extend(changed_hooks(
        old.hooks.as_ref().unwrap_or(&HooksSpec::default()),
        new.hooks.as_ref().unwrap_or(&HooksSpec::default()),
    ));
    found.extend(
        old.redact
            .iter()
            .filter(|pattern| !new.redact.contains(pattern))
            .map(|pattern| format!("stops redacting `{pattern}`")),
    );
    found
}

/// Where `new`'s models send the conversation, or which key goes with it, that `old`'s did
/// not: the agent's model, each fallback, a `summarize` model. A file that names a model of
/// the project file has it resolved here, so a changed project file is compared the same
/// way. Another model name, parameters or prices on the same endpoint are not widenings.
fn new_destinations(old: &AgentSpec, new: &AgentSpec) -> Vec<String> {
    let before = destinations(old);
    let mut found: Vec<Destination> = Vec::new();
    for destination in destinations(new) {
        if !before.contains(&destination) && !found.contains(&destination) {
            found.push(destination);
        }
    }
    found
        .into_iter()
        .map(|destination| format!("sends the conversation to {destination}"))
        .collect()
}

/// The destination of every model an agent's calls may go to.
fn destinations(spec: &AgentSpec) -> Vec<Destination> {
    let summarizers = spec.middleware.iter().filter_map(|entry| match entry {
        MiddlewareEntry::Summarize(config) => config.model.as_ref(),
        _ => None,
    });
    spec.model
        .iter()
        .chain(summarizers)
        .flat_map(destinations_of)
        .collect()
}

/// Hooks added or changed (a new program the runner starts, with the workspace and its
/// environment) and hooks dropped (a guard removed): both widen what can happen.
fn changed_hooks(old: &HooksSpec, new: &HooksSpec) -> Vec<String> {
    let mut found = Vec::new();
    changed(
        "pre_tool_use",
        &old.pre_tool_use,
        &new.pre_tool_use,
        &mut found,
    );
    changed(
        "post_tool_use",
        &old.post_tool_use,
        &new.post_tool_use,
        &mut found,
    );
    changed("run_start", &old.run_start, &new.run_start, &mut found);
    changed("run_end", &old.run_end, &new.run_end, &mut found);
    changed("user_input", &old.user_input, &new.user_input, &mut found);
    found
}

/// `command` middleware added or changed (a program that runs, and sees every request),
/// or dropped (a guard removed, like a redacting one), as for hooks.
fn changed_commands(old: &[MiddlewareEntry], new: &[MiddlewareEntry]) -> Vec<String> {
    let commands = |entries: &[MiddlewareEntry]| -> Vec<CommandMiddlewareConfig> {
        let configs = entries.iter().filter_map(|entry| match entry {
            MiddlewareEntry::Command(config) => Some(config.clone()),
            _ => None,
        });
        configs.collect()
    };
    let (old, new) = (commands(old), commands(new));
    let show = |config: &CommandMiddlewareConfig| shell_words::join(&config.command.0);
    let added = new.iter().filter(|config| !old.contains(config));
    let dropped = old.iter().filter(|config| !new.contains(config));
    added
        .map(|c| format!("adds or changes a `command` middleware `{}`", show(c)))
        .chain(dropped.map(|c| format!("drops a `command` middleware `{}`", show(c))))
        .collect()
}

/// The hooks of one point that `new` adds or changes, and those it drops.
fn changed<T: PartialEq + HookEntry>(point: &str, old: &[T], new: &[T], found: &mut Vec<String>) {
    let show = |hook: &T| shell_words::join(&hook.command().0);
    for hook in new.iter().filter(|hook| !old.contains(hook)) {
        found.push(format!("adds or changes a `{point}` hook `{}`", show(hook)));
    }
    for hook in old.iter().filter(|hook| !new.contains(hook)) {
        found.push(format!("drops a `{point}` hook `{}`", show(hook)));
    }
}

/// How `new`'s permissions let through a call `old`'s would have stopped or asked about:
/// a deny or ask rule dropped, an allow rule added, a more permissive default. Added deny
/// and ask rules, and dropped allow rules, only tighten.
fn loosened_permissions(
    old: Option<&PermissionsSpec>,
    new: Option<&PermissionsSpec>,
) -> Vec<String> {
    let Some(old) = old else {
        return Vec::new();
    };
    let open = PermissionsSpec::default();
    let new = new.unwrap_or(&open);
    let strictness = |verdict: Verdict| match verdict {
        Verdict::Allow => 0,
        Verdict::Ask => 1,
        Verdict::Deny => 2,
    };
    let mut found = Vec::new();
    if strictness(new.default) < strictness(old.default) {
        found.push(format!(
            "loosens `permissions.default` from {} to {}",
            old.default, new.default
        ));
    }
    let dropped = |list: &'static str, old: &[PermissionPattern], new: &[PermissionPattern]| {
        old.iter()
            .filter(|p| !new.contains(p))
            .map(move |p| format!("drops `permissions.{list}` rule `{}`", p.0))
            .collect::<Vec<_>>()
    };
    found.extend(dropped("deny", &old.deny, &new.deny));
    found.extend(dropped("ask", &old.ask, &new.ask));
    found.extend(
        new.allow
            .iter()
            .filter(|p| !old.allow.contains(p))
            .map(|p| format!("adds `permissions.allow` rule `{}`", p.0)),
    );
    found
}

fn tool_widening(old: &[ToolEntry], entry: &ToolEntry) -> Vec<String> {
    match entry {
        ToolEntry::Builtin(tool) => {
            let before = old.iter().find_map(|e| match e {
                ToolEntry::Builtin(b) if b.name() == tool.name() => Some(b),
                _ => None,
            });
            match before {
                Some(before) => builtin_widening(before, tool),
                None => vec![format!("adds tool `{}`", tool.name())],
            }
        }
        ToolEntry::SubAgent(tool) => {
            let same = old.iter().any(|e| {
                matches!(e, ToolEntry::SubAgent(b) if b.name == tool.name && b.agent == tool.agent)
            });
            (!same)
                .then(|| format!("adds or changes sub-agent tool `{}`", tool.name))
                .into_iter()
                .collect()
        }
        ToolEntry::Remote(tool) => {
            let same = old.iter().any(
                |e| matches!(e, ToolEntry::Remote(b) if b.name == tool.name && b.a2a == tool.a2a),
            );
            (!same)
                .then(|| format!("adds or changes remote agent tool `{}`", tool.name))
                .into_iter()
                .collect()
        }
        // The program running the agent runs it: the file grants nothing new by naming it,
        // but a tool the model did not have is still more than the session started with.
        ToolEntry::External(entry) => {
            let name = &entry.external.name;
            let same = old
                .iter()
                .any(|e| matches!(e, ToolEntry::External(b) if b.external.name == *name));
            (!same)
                .then(|| format!("adds external tool `{name}`"))
                .into_iter()
                .collect()
        }
        ToolEntry::Mcp(entry) => {
            let same = old
                .iter()
                .any(|e| matches!(e, ToolEntry::Mcp(b) if b == entry));
            (!same)
                .then(|| "adds or changes an MCP server".to_string())
                .into_iter()
                .collect()
        }
    }
}

fn builtin_widening(old: &BuiltinTool, new: &BuiltinTool) -> Vec<String> {
    let added = |old: &[String], new: &[String], what: &str| -> Vec<String> {
        new.iter()
            .filter(|item| !old.contains(item))
            .map(|item| format!("allows {what} `{item}`"))
            .collect()
    };
    match (old, new) {
        (
            BuiltinTool::Shell {
                allow: a,
                sandbox: old_sandbox,
                ..
            },
            BuiltinTool::Shell {
                allow: b,
                sandbox: new_sandbox,
                ..
            },
        ) => {
            let mut found = added(a, b, "program");
            if root_of(old) != root_of(new) {
                found.push("moves the root of `shell`".into());
            }
            if let Some(sandbox) = old_sandbox {
                found.extend(sandbox.loosened_by(new_sandbox.as_ref(), "`shell`"));
            }
            found
        }
        (
            BuiltinTool::HttpGet { allow_hosts: a, .. },
            BuiltinTool::HttpGet { allow_hosts: b, .. },
        ) => added(a, b, "host"),
        _ if root_of(old) != root_of(new) => {
            vec![format!("moves the root of `{}`", new.name())]
        }
        _ => Vec::new(),
    }
}

fn root_of(tool: &BuiltinTool) -> Option<&str> {
    match tool {
        BuiltinTool::ReadFile { root, .. }
        | BuiltinTool::WriteFile { root, .. }
        | BuiltinTool::ListDir { root, .. }
        | BuiltinTool::SearchFiles { root, .. }
        | BuiltinTool::Shell { root, .. } => root.as_deref(),
        _ => None,
    }
}

/// Bounds that `new` raises or removes.
fn raised_limits(old: &Limits, new: &Limits) -> Vec<String> {
    fn raised<T: PartialOrd>(old: Option<T>, new: Option<T>) -> bool {
        match (old, new) {
            (Some(_), None) => true,
            (Some(old), Some(new)) => new > old,
            (None, _) => false,
        }
    }
    let checks = [
        (
            "max_llm_calls",
            raised(old.max_llm_calls, new.max_llm_calls),
        ),
        (
            "max_tool_calls",
            raised(old.max_tool_calls, new.max_tool_calls),
        ),
        ("max_tokens", raised(old.max_tokens, new.max_tokens)),
        ("max_cost_usd", raised(old.max_cost_usd, new.max_cost_usd)),
        ("timeout", raised(old.timeout, new.timeout)),
        ("tool_timeout", raised(old.tool_timeout, new.tool_timeout)),
        ("max_depth", raised(old.max_depth, new.max_depth)),
        (
            "max_output_chars",
            raised(old.max_output_chars, new.max_output_chars),
        ),
    ];
    checks
        .into_iter()
        .filter(|(_, raised)| *raised)
        .map(|(name, _)| format!("raises or removes `limits.{name}`"))
        .collect()
}
