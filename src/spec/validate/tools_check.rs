//! Checks of `tools` and `handoffs`: unique names, `depends_on`, sub-agent parameter
//! schemas and prompts, MCP headers, and the agent files they refer to (with cycles).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use serde_json::{Map, Value};

use super::super::diagnostic::{Code, Diagnostic, did_you_mean};
use super::super::template::{BUILTIN_VARIABLES, TemplateScope};
use super::super::yaml::pointer_push;
use super::{FileContext, Validator, canonical, file_name, resolved};

impl Validator {
    pub(super) fn check_tools(
        &mut self,
        file: &FileContext<'_>,
        at: &str,
        agent: &Map<String, Value>,
        env: &BTreeSet<String>,
    ) {
        let tools_at = pointer_push(at, "tools");
        let handoffs_at = pointer_push(at, "handoffs");
        let tools = agent
            .get("tools")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let handoffs = agent
            .get("handoffs")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();

        // Names first, so duplicates and depends_on can be checked against all of them.
        let mut seen: HashMap<String, String> = HashMap::new();
        let named = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (pointer_push(&tools_at, &i.to_string()), t))
            .chain(
                handoffs
                    .iter()
                    .enumerate()
                    .map(|(i, t)| (pointer_push(&handoffs_at, &i.to_string()), t)),
            );
        for (pointer, tool) in named {
            // An external tool's keys are under `external`.
            let (tool, pointer) = match tool.get("external") {
                Some(external) => (external, pointer_push(&pointer, "external")),
                None => (tool, pointer),
            };
            let (name, name_at) = match (tool.get("builtin"), tool.get("name")) {
                (Some(Value::String(builtin)), _) => {
                    (builtin.clone(), pointer_push(&pointer, "builtin"))
                }
                (_, Some(Value::String(name))) => (name.clone(), pointer_push(&pointer, "name")),
                _ => continue,
            };
            if let Some(first) = seen.get(&name) {
                let first_line = file.doc.value_position(first).line;
                self.diagnostics.push(
                    Diagnostic::error(
                        file.path,
                        file.doc.value_position(&name_at),
                        Code::DuplicateTool,
                        &name_at,
                        format!("tool name `{name}` is already used on line {first_line}"),
                    )
                    .with_hint("tool names must be unique per agent; rename one of them"),
                );
            } else {
                seen.insert(name, name_at);
            }
        }

        self.check_ordering(file, &tools_at, &tools, &seen);
        for (index, tool) in tools.iter().enumerate() {
            let pointer = pointer_push(&tools_at, &index.to_string());
            if let Some(Value::Object(server)) = tool.get("mcp") {
                self.check_mcp(file, &pointer_push(&pointer, "mcp"), server, env);
                continue;
            }
            if tool.get("builtin").is_some() {
                continue;
            }
            if let Some(external) = tool.get("external") {
                self.check_external(file, &pointer_push(&pointer, "external"), external);
                continue;
            }
            let Some(tool) = tool.as_object() else {
                continue;
            };
            let remote = tool.get("a2a");
            if let Some(Value::Object(a2a)) = remote {
                self.check_a2a(file, &pointer, tool, a2a, env);
            }
            let parameters = tool.get("parameters");
            if let Some(parameters) = parameters {
                self.user_schema(
                    file,
                    &pointer_push(&pointer, "parameters"),
                    parameters,
                    true,
                    Code::ParameterSchema,
                );
            }
            if let Some(parameters) = parameters {
                self.check_parameter_names(file, &pointer_push(&pointer, "parameters"), parameters);
            }
            if let Some(Value::String(prompt)) = tool.get("prompt") {
                let declared = parameters
                    .and_then(|p| p.get("properties"))
                    .and_then(Value::as_object)
                    .map(|p| p.keys().cloned().collect());
                // A remote agent without `parameters` takes one: `message`.
                let default = match remote {
                    Some(_) => BTreeSet::from(["message".to_string()]),
                    None => BTreeSet::new(),
                };
                let scope = TemplateScope {
                    variables: declared.unwrap_or(default),
                    env: env.clone(),
                    declare_hint: "a sub-agent prompt can read only the tool's parameters: add it to `parameters.properties`",
                };
                self.template(file, &pointer_push(&pointer, "prompt"), prompt, &scope);
            }
            self.check_agent_ref(file, &pointer_push(&pointer, "agent"), tool.get("agent"));
        }
        for (index, handoff) in handoffs.iter().enumerate() {
            let pointer = pointer_push(&handoffs_at, &index.to_string());
            self.check_agent_ref(file, &pointer_push(&pointer, "agent"), handoff.get("agent"));
        }
    }

    /// An external tool's `parameters`: a JSON Schema of an object, as a sub-agent's.
    fn check_external(&mut self, file: &FileContext<'_>, pointer: &str, external: &Value) {
        if let Some(parameters) = external.get("parameters") {
            let at = pointer_push(pointer, "parameters");
            self.user_schema(file, &at, parameters, true, Code::ParameterSchema);
        }
    }

    /// Every entry's `depends_on` (built-ins, MCP servers, sub-agents, remote agents) names
    /// tools of the agent, and no tool waits for itself through them. The names of an MCP
    /// server's tools are known only from its `tools` list: with a server that has none,
    /// a name no other tool has may be one of its tools, and is not an error.
    fn check_ordering(
        &mut self,
        file: &FileContext<'_>,
        tools_at: &str,
        tools: &[Value],
        seen: &HashMap<String, String>,
    ) {
        let mut known: BTreeSet<String> = seen.keys().cloned().collect();
        let mut hidden = false;
        // Tool name → (its entry's pointer, the names it waits for).
        let mut waits: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
        for (index, tool) in tools.iter().enumerate() {
            let pointer = pointer_push(tools_at, &index.to_string());
            let names = match mcp_tool_names(tool) {
                Some(Some(names)) => names,
                Some(None) => {
                    hidden = true;
                    Vec::new()
                }
                None => entry_name(tool).into_iter().collect(),
            };
            known.extend(names.iter().cloned());
            let Some(Value::Array(dependencies)) = tool.get("depends_on") else {
                continue;
            };
            let dependencies: Vec<String> = dependencies
                .iter()
                .filter_map(|d| d.as_str().map(String::from))
                .collect();
            for name in names {
                waits.insert(name, (pointer.clone(), dependencies.clone()));
            }
        }
        for (index, tool) in tools.iter().enumerate() {
            let pointer = pointer_push(tools_at, &index.to_string());
            let Some(Value::Array(dependencies)) = tool.get("depends_on") else {
                continue;
            };
            for (i, name) in dependencies.iter().enumerate() {
                let Some(name) = name.as_str() else {
                    continue;
                };
                if known.contains(name) || hidden {
                    continue;
                }
                let dep_at = pointer_push(&pointer_push(&pointer, "depends_on"), &i.to_string());
                let hint = did_you_mean(name, known.iter().map(String::as_str))
                    .map(|close| format!("did you mean `{close}`?"));
                self.diagnostics.push(
                    Diagnostic::error(
                        file.path,
                        file.doc.value_position(&dep_at),
                        Code::UnknownTool,
                        &dep_at,
                        format!("`depends_on` names `{name}`, which is not a tool of this agent"),
                    )
                    .with_optional_hint(hint),
                );
            }
        }
        self.check_ordering_cycles(file, &waits);
    }

    /// A `depends_on` that leads back to its own tool: its calls would wait for themselves.
    /// Each cycle is reported once, at the first entry on it.
    fn check_ordering_cycles(
        &mut self,
        file: &FileContext<'_>,
        waits: &BTreeMap<String, (String, Vec<String>)>,
    ) {
        let mut reported: BTreeSet<BTreeSet<String>> = BTreeSet::new();
        for (name, (pointer, dependencies)) in waits {
            for (i, dependency) in dependencies.iter().enumerate() {
                let Some(mut path) = wait_path(waits, dependency, name) else {
                    continue;
                };
                path.insert(0, name.clone());
                let members: BTreeSet<String> = path.iter().cloned().collect();
                if !reported.insert(members) {
                    continue;
                }
                let dep_at = pointer_push(&pointer_push(pointer, "depends_on"), &i.to_string());
                self.diagnostics.push(
                    Diagnostic::error(
                        file.path,
                        file.doc.value_position(&dep_at),
                        Code::Cycle,
                        &dep_at,
                        format!(
                            "`depends_on` makes `{name}` wait for itself: {}",
                            path.join(" → ")
                        ),
                    )
                    .with_hint("remove one `depends_on` of the cycle"),
                );
            }
        }
    }

    /// `env` values and `headers` values are templates over declared env vars and the
    /// built-ins; an import's file is read and checked.
    fn check_mcp(
        &mut self,
        file: &FileContext<'_>,
        at: &str,
        server: &Map<String, Value>,
        env: &BTreeSet<String>,
    ) {
        if server.contains_key("config") {
            self.check_mcp_import(file, at, server, env);
            return;
        }
        let scope = TemplateScope {
            variables: BTreeSet::new(),
            env: env.clone(),
            declare_hint: "an MCP entry's `env` and `headers` can read declared `env` vars and the built-ins",
        };
        for key in ["env", "headers"] {
            let Some(Value::Object(values)) = server.get(key) else {
                continue;
            };
            let values_at = pointer_push(at, key);
            for (name, value) in values {
                if let Value::String(source) = value {
                    let value_at = pointer_push(&values_at, name);
                    self.shell_variable(file, &value_at, source);
                    self.template(file, &value_at, source, &scope);
                }
            }
        }
    }

    /// A remote agent: `agent` and `a2a` exclude each other, the URL is http or https, and
    /// each header value is a template that reads a declared `env` var (a token written in
    /// the file would be committed with it).
    fn check_a2a(
        &mut self,
        file: &FileContext<'_>,
        at: &str,
        tool: &Map<String, Value>,
        a2a: &Map<String, Value>,
        env: &BTreeSet<String>,
    ) {
        let a2a_at = pointer_push(at, "a2a");
        if tool.contains_key("agent") {
            let agent_at = pointer_push(at, "agent");
            self.diagnostics.push(
                Diagnostic::error(
                    file.path,
                    file.doc.key_position(&agent_at),
                    Code::InvalidValue,
                    &agent_at,
                    "a sub-agent tool has `agent` (an agent file) or `a2a` (a remote agent), not both".to_string(),
                )
                .with_hint("keep `agent:` to run the agent here, or `a2a:` to call it over A2A"),
            );
        }
        if let Some(problem) = a2a.get("url").and_then(Value::as_str).and_then(url_problem) {
            let url_at = pointer_push(&a2a_at, "url");
            let position = file.doc.value_position(&url_at);
            self.diagnostics.push(
                Diagnostic::error(file.path, position, Code::InvalidValue, &url_at, problem)
                    .with_hint("the agent's JSON-RPC endpoint, e.g. https://host/a2a/reviewer"),
            );
        }
        let Some(Value::Object(headers)) = a2a.get("headers") else {
            return;
        };
        if let Some(host) = a2a
            .get("url")
            .and_then(Value::as_str)
            .and_then(cleartext_host)
            && !headers.is_empty()
        {
            let url_at = pointer_push(&a2a_at, "url");
            self.diagnostics.push(
                Diagnostic::warning(
                    file.path,
                    file.doc.value_position(&url_at),
                    Code::InvalidValue,
                    &url_at,
                    format!(
                        "the headers would travel to `{host}` in clear text (`http`, off loopback)"
                    ),
                )
                .with_hint("use an https URL for a remote agent that takes a token"),
            );
        }
        let scope = TemplateScope {
            variables: BTreeSet::new(),
            env: env.clone(),
            declare_hint: "an `a2a` entry's `headers` can read declared `env` vars",
        };
        let headers_at = pointer_push(&a2a_at, "headers");
        for (name, value) in headers {
            let Value::String(source) = value else {
                continue;
            };
            let value_at = pointer_push(&headers_at, name);
            self.shell_variable(file, &value_at, source);
            self.template(file, &value_at, source, &scope);
            if !reads_env(source) {
                self.diagnostics.push(
                    Diagnostic::error(
                        file.path,
                        file.doc.value_position(&value_at),
                        Code::InvalidValue,
                        &value_at,
                        format!("header `{name}` does not come from `env`: a remote agent's headers are read from the environment only"),
                    )
                    .with_hint(format!("write `{name}: \"Bearer {{{{ env.TOKEN }}}}\"` and list `TOKEN` under the agent's `env:`")),
                );
            }
        }
    }

    /// `${NAME}`, as pasted from other tools' MCP configuration, would be sent as it is:
    /// runner's values are templates, and nothing expands shell variables in them.
    fn shell_variable(&mut self, file: &FileContext<'_>, at: &str, source: &str) {
        let Some(start) = source.find("${") else {
            return;
        };
        let name: String = source[start + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() || !source[start + 2 + name.len()..].starts_with('}') {
            return;
        }
        let position = file.doc.value_position(at);
        self.diagnostics.push(
            Diagnostic::error(
                file.path,
                position,
                Code::InvalidValue,
                at,
                format!("`${{{name}}}` would be sent as it is: values here are templates, and shell variables are not expanded"),
            )
            .with_hint(format!(
                "write `{{{{ env.{name} }}}}` and list `{name}` under the agent's `env:`"
            )),
        );
    }

    /// A parameter may not take the name of a template built-in: the sub-agent's `prompt`
    /// could not tell the model's argument from the run's value, so a model could replace
    /// `env` or `run` in it.
    fn check_parameter_names(&mut self, file: &FileContext<'_>, at: &str, parameters: &Value) {
        let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
            return;
        };
        let properties_at = pointer_push(at, "properties");
        for name in properties.keys() {
            if name != "env" && !BUILTIN_VARIABLES.contains(&name.as_str()) {
                continue;
            }
            let name_at = pointer_push(&properties_at, name);
            self.diagnostics.push(
                Diagnostic::error(
                    file.path,
                    file.doc.key_position(&name_at),
                    Code::ParameterSchema,
                    &name_at,
                    format!(
                        "parameter `{name}` has the name of a template built-in; in the tool's `prompt` it would replace the run's `{name}`"
                    ),
                )
                .with_hint("rename the parameter (built-ins: env, agent, now, input, run)"),
            );
        }
    }

    fn check_agent_ref(&mut self, file: &FileContext<'_>, pointer: &str, agent: Option<&Value>) {
        match agent {
            Some(Value::String(relative)) => self.check_reference(file, pointer, relative),
            Some(inline @ Value::Object(_)) => self.check_agent(file, inline, pointer),
            _ => {}
        }
    }

    fn check_reference(&mut self, file: &FileContext<'_>, pointer: &str, relative: &str) {
        let target = resolved(&file.base_dir.join(relative));
        let at = file.doc.value_position(pointer);
        if !target.is_file() {
            // A FIFO or a device would never be read to its end (`spec::read`).
            let problem = match target.exists() {
                true => "is not a regular file",
                false => "does not exist",
            };
            self.diagnostics.push(
                Diagnostic::error(
                    file.path,
                    at,
                    Code::MissingFile,
                    pointer,
                    format!("agent file `{relative}` {problem}"),
                )
                .with_hint(format!(
                    "paths are relative to this file; looked for {}",
                    target.display()
                )),
            );
            return;
        }
        let key = canonical(&target);
        if let Some(index) = self.stack.iter().position(|(path, _)| *path == key) {
            let bounded = self.stack[index..].iter().any(|(_, bounded)| *bounded);
            if !bounded {
                let chain: Vec<String> = self.stack[index..]
                    .iter()
                    .map(|(path, _)| file_name(path))
                    .chain([file_name(&key)])
                    .collect();
                self.diagnostics.push(
                    Diagnostic::error(
                        file.path,
                        at,
                        Code::Cycle,
                        pointer,
                        format!(
                            "sub-agent cycle without a depth bound: {}",
                            chain.join(" → ")
                        ),
                    )
                    .with_hint(
                        "set `limits.max_depth` in one of these agents to bound the recursion",
                    ),
                );
            }
            return;
        }
        self.validate_file(&target);
    }
}

/// Whether a template reads an `env` var (`{{ env.NAME }}`, with any spacing or filter).
fn reads_env(source: &str) -> bool {
    source.split("{{").skip(1).any(|expression| {
        let expression = expression.split("}}").next().unwrap_or_default();
        expression.trim_start().starts_with("env.")
    })
}

/// Why `url` cannot be a remote agent's endpoint: not a URL, or not http or https.
fn url_problem(url: &str) -> Option<String> {
    match reqwest::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => None,
        Ok(parsed) => Some(format!(
            "`url` must be http or https, not `{}`",
            parsed.scheme()
        )),
        Err(error) => Some(format!("`url` is not a valid URL: {error}")),
    }
}

/// The host of an `http` URL that is not on loopback (a token sent there can be read on
/// the way).
fn cleartext_host(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed.host_str()?.to_string();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    (parsed.scheme() == "http" && !loopback).then_some(host)
}

/// The name a tool entry gives its tool (a built-in's, a sub-agent's, a remote agent's).
fn entry_name(tool: &Value) -> Option<String> {
    match (tool.get("builtin"), tool.get("name")) {
        (Some(Value::String(builtin)), _) => Some(builtin.clone()),
        (_, Some(Value::String(name))) => Some(name.clone()),
        _ => None,
    }
}

/// For an MCP entry, the names of its tools when its `tools` list gives them (with its
/// `prefix`), `Some(None)` when only the server knows them; `None` for other entries.
fn mcp_tool_names(tool: &Value) -> Option<Option<Vec<String>>> {
    let server = tool.get("mcp")?;
    let prefix = server.get("prefix").and_then(Value::as_str).unwrap_or("");
    let names = match (server.get("config"), server.get("tools")) {
        (None, Some(Value::Array(names))) => names
            .iter()
            .map(|name| name.as_str().map(|name| format!("{prefix}{name}")))
            .collect::<Option<Vec<String>>>(),
        _ => None,
    };
    Some(names)
}

/// The names from `from` to `to` following `depends_on` (both included), shortest first.
fn wait_path(
    waits: &BTreeMap<String, (String, Vec<String>)>,
    from: &str,
    to: &str,
) -> Option<Vec<String>> {
    let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue: VecDeque<&str> = VecDeque::from([from]);
    let mut visited: BTreeSet<&str> = BTreeSet::from([from]);
    while let Some(node) = queue.pop_front() {
        if node == to {
            let mut path = vec![to.to_string()];
            let mut at = to;
            while let Some(&previous) = parent.get(at) {
                path.push(previous.to_string());
                at = previous;
            }
            path.reverse();
            return Some(path);
        }
        for next in waits.get(node).into_iter().flat_map(|(_, d)| d) {
            if visited.insert(next.as_str()) {
                parent.insert(next.as_str(), node);
                queue.push_back(next.as_str());
            }
        }
    }
    None
}
