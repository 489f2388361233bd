//! Checks of `permissions`, `hooks` and `redact`: every pattern (of `permissions` and of
//! a tool hook's `match`) parses, names a tool the agent has (unless an MCP server may
//! provide it) and an argument that tool takes; a hook's program path exists; every
//! `redact` expression is a regular expression.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::super::diagnostic::{Code, Diagnostic, did_you_mean};
use super::super::yaml::pointer_push;
use super::{FileContext, Validator};
use crate::spec::pattern::Pattern;

/// The arguments of each built-in tool, for conditions on them.
const BUILTIN_ARGUMENTS: &[(&str, &[&str])] = &[
    ("read_file", &["path", "offset", "limit"]),
    ("write_file", &["path", "content"]),
    ("list_dir", &["path"]),
    ("search_files", &["pattern", "path", "glob"]),
    ("shell", &["command"]),
    ("http_get", &["url"]),
    ("ask_user", &["question", "id"]),
];

/// Tool name → the arguments it takes (`None`: not known before it runs).
type KnownTools = BTreeMap<String, Option<Vec<String>>>;

impl Validator {
    pub(super) fn check_permissions(
        &mut self,
        file: &FileContext<'_>,
        at: &str,
        agent: &Map<String, Value>,
    ) {
        let mut tools = KnownTools::new();
        // Sub-agents and handoff targets without rules of their own follow these, so their
        // tools count too; tools that only appear at run time (MCP servers, agents in other
        // files) leave unknown names unchecked.
        let hidden = collect_tools(agent, &mut tools);
        let permissions_at = pointer_push(at, "permissions");
        for list in ["deny", "allow", "ask"] {
            let list_at = pointer_push(&permissions_at, list);
            let patterns = agent
                .get("permissions")
                .and_then(|p| p.get(list))
                .and_then(Value::as_array);
            for (index, text) in patterns.into_iter().flatten().enumerate() {
                if let Some(text) = text.as_str() {
                    let pointer = pointer_push(&list_at, &index.to_string());
                    self.check_pattern(file, &pointer, text, (&tools, hidden));
                }
            }
        }
        let hooks_at = pointer_push(at, "hooks");
        for point in ["pre_tool_use", "post_tool_use"] {
            let hooks = agent.get("hooks").and_then(|h| h.get(point));
            for (index, hook) in hooks
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let hook_at = pointer_push(&pointer_push(&hooks_at, point), &index.to_string());
                let patterns = hook.get("match").and_then(Value::as_array);
                for (n, text) in patterns.into_iter().flatten().enumerate() {
                    if let Some(text) = text.as_str() {
                        let pointer =
                            pointer_push(&pointer_push(&hook_at, "match"), &n.to_string());
                        self.check_pattern(file, &pointer, text, (&tools, hidden));
                    }
                }
            }
        }
        self.check_hook_programs(file, &hooks_at, agent.get("hooks"));
        self.check_middleware_programs(file, &pointer_push(at, "middleware"), agent);
        if !at.is_empty() {
            self.run_hooks_of_a_sub_agent(file, &hooks_at, agent.get("hooks"));
        }
        let redact_at = pointer_push(at, "redact");
        let expressions = agent.get("redact").and_then(Value::as_array);
        for (index, text) in expressions.into_iter().flatten().enumerate() {
            if let Some(text) = text.as_str()
                && let Err(error) = regex::Regex::new(text)
            {
                let pointer = pointer_push(&redact_at, &index.to_string());
                // The parser's last line says what is wrong; the lines above draw the spot.
                let detail = error.to_string();
                let detail = detail.lines().last().unwrap_or_default().trim();
                let message = format!("`{text}` is not a regular expression: {detail}");
                self.permission_error(file, &pointer, Code::Permission, message, None);
            }
        }
    }

    fn check_pattern(
        &mut self,
        file: &FileContext<'_>,
        pointer: &str,
        text: &str,
        (tools, from_mcp): (&KnownTools, bool),
    ) {
        let pattern = match Pattern::parse(text) {
            Ok(pattern) => pattern,
            Err(message) => {
                self.permission_error(file, pointer, Code::Permission, message, None);
                return;
            }
        };
        let Some(tool) = pattern.literal_tool() else {
            return;
        };
        match tools.get(tool) {
            None if from_mcp => {}
            None => {
                let hint = did_you_mean(tool, tools.keys().map(String::as_str))
                    .map(|close| format!("did you mean `{close}`?"));
                let message = match text == tool {
                    true => format!("`{tool}` is not a tool of this agent"),
                    false => format!("`{text}` names `{tool}`, which is not a tool of this agent"),
                };
                self.permission_error(file, pointer, Code::UnknownTool, message, hint);
            }
            Some(Some(arguments)) => {
                let Some(argument) = pattern.argument() else {
                    return;
                };
                if arguments.iter().any(|a| a == argument) {
                    return;
                }
                let hint = did_you_mean(argument, arguments.iter().map(String::as_str))
                    .map(|close| format!("did you mean `{close}`?"))
                    .or_else(|| Some(format!("`{tool}` takes {}", arguments.join(", "))));
                let message = format!("`{tool}` has no argument `{argument}`");
                self.permission_error(file, pointer, Code::Permission, message, hint);
            }
            Some(None) => {}
        }
    }

    /// A hook's program given as a path (with a `/`) must exist, from the file's directory.
    fn check_hook_programs(&mut self, file: &FileContext<'_>, at: &str, hooks: Option<&Value>) {
        let Some(Value::Object(points)) = hooks else {
            return;
        };
        for (point, list) in points {
            for (index, hook) in list.as_array().into_iter().flatten().enumerate() {
                let Some(program) = hook.pointer("/command/0").and_then(Value::as_str) else {
                    continue;
                };
                let path = std::path::Path::new(program);
                if !program.contains('/') || file.base_dir.join(path).exists() {
                    continue;
                }
                let pointer = format!("{at}/{point}/{index}/command/0");
                let message = format!(
                    "no such file: `{program}` (a hook's program path is taken from the agent file's directory)"
                );
                self.permission_error(file, &pointer, Code::MissingFile, message, None);
            }
        }
    }

    /// A `command` middleware's program given as a path must exist, as a hook's.
    fn check_middleware_programs(
        &mut self,
        file: &FileContext<'_>,
        at: &str,
        agent: &Map<String, Value>,
    ) {
        let entries = agent.get("middleware").and_then(Value::as_array);
        for (index, entry) in entries.into_iter().flatten().enumerate() {
            let Some(program) = entry.pointer("/command/command/0").and_then(Value::as_str) else {
                continue;
            };
            if !program.contains('/') || file.base_dir.join(program).exists() {
                continue;
            }
            let pointer = format!("{at}/{index}/command/command/0");
            let message = format!(
                "no such file: `{program}` (a middleware's program path is taken from the agent file's directory)"
            );
            self.permission_error(file, &pointer, Code::MissingFile, message, None);
        }
    }

    /// Run hooks written inside a sub-agent or handoff target: only the root agent's run.
    fn run_hooks_of_a_sub_agent(
        &mut self,
        file: &FileContext<'_>,
        at: &str,
        hooks: Option<&Value>,
    ) {
        for point in ["run_start", "run_end", "user_input"] {
            if hooks.and_then(|h| h.get(point)).is_none() {
                continue;
            }
            let pointer = pointer_push(at, point);
            let message = format!(
                "`{point}` hooks of a sub-agent or handoff target never run: the run is the root agent's"
            );
            self.diagnostics.push(
                Diagnostic::warning(
                    file.path,
                    file.doc.key_position(&pointer),
                    Code::NoEffect,
                    &pointer,
                    message,
                )
                .with_hint("declare them in the root agent's file"),
            );
        }
    }

    fn permission_error(
        &mut self,
        file: &FileContext<'_>,
        pointer: &str,
        code: Code,
        message: String,
        hint: Option<String>,
    ) {
        self.diagnostics.push(
            Diagnostic::error(
                file.path,
                file.doc.value_position(pointer),
                code,
                pointer,
                message,
            )
            .with_optional_hint(hint),
        );
    }
}

/// Adds the tools of `agent` and of the agents written inside it, by name: built-ins and
/// handoffs with their arguments, sub-agents with their declared parameters. Returns
/// whether some tools cannot be known from the file (MCP servers, agents in other files).
fn collect_tools(agent: &Map<String, Value>, known: &mut KnownTools) -> bool {
    let mut hidden = false;
    let tools = agent.get("tools").and_then(Value::as_array);
    for tool in tools.into_iter().flatten() {
        hidden |= tool.get("mcp").is_some();
        // An external tool is named and has parameters like a sub-agent, one level down.
        let tool = tool.get("external").unwrap_or(tool);
        match tool.get("agent") {
            Some(Value::Object(inline)) => hidden |= collect_tools(inline, known),
            Some(Value::String(_)) => hidden = true,
            _ => {}
        }
        if let Some(builtin) = tool.get("builtin").and_then(Value::as_str) {
            let arguments = BUILTIN_ARGUMENTS
                .iter()
                .find(|(name, _)| *name == builtin)
                .map(|(_, args)| args.iter().map(|a| a.to_string()).collect());
            known.insert(builtin.to_string(), arguments);
        } else if let Some(name) = tool.get("name").and_then(Value::as_str) {
            let parameters = tool
                .get("parameters")
                .and_then(|p| p.get("properties"))
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect());
            known.insert(name.to_string(), parameters);
        }
    }
    let handoffs = agent.get("handoffs").and_then(Value::as_array);
    for handoff in handoffs.into_iter().flatten() {
        if let Some(name) = handoff.get("name").and_then(Value::as_str) {
            known.insert(name.to_string(), Some(vec!["reason".to_string()]));
        }
        match handoff.get("agent") {
            Some(Value::Object(inline)) => hidden |= collect_tools(inline, known),
            Some(Value::String(_)) => hidden = true,
            _ => {}
        }
    }
    hidden
}
