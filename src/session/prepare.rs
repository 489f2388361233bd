//! One preparation path for every run and every command that inspects an agent (`exec`,
//! `resume`, `chat`, `tools`, `RunFile`): load and validate the file, resolve its inputs,
//! build the template context, start the MCP servers (on the caller's runtime, watching
//! the run's own stop signal), and compile — each problem reported the same way, compile
//! problems at their `file:line:col` like `runner validate`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::watch;

use super::files::SessionFiles;
use super::servers::RunningServers;
use crate::compile::BuildOptions;
use crate::compile::{
    CompileError, CompileInput, EnvLookup, HumanInput, Sandbox, TemplateContext, check_models,
    compile_agent, file_dir,
};
use crate::engine::ErrorCode;
use crate::engine::budget::Budget;
use crate::engine::checkpointing::Checkpointer;
use crate::engine::clock::now_rfc3339;
use crate::engine::events::Emitter;
use crate::engine::{Agent, RunContext};
use crate::mcp::McpServers;
use crate::output::result::Status;
use crate::spec::AgentSpec;
use crate::spec::inputs::{Vars, parse_var, read_vars_file, resolve_inputs};
use crate::spec::load::load_agent;
use crate::spec::model::ModelRef;
use crate::spec::tree::AgentTree;
use crate::spec::yaml::load_yaml;
use crate::tools::Protected;
use crate::trace_env::ChildTrace;

/// Why a command stopped before its run started.
#[derive(Debug, Clone)]
pub struct Stop {
    /// `invalid` (exit 2) for the file or the command line; `failed` or `interrupted`
    /// when MCP servers could not start.
    pub status: Status,
    /// The result's error code.
    pub code: ErrorCode,
    pub message: String,
    /// What to print instead of `error: {message}`: the located diagnostics.
    pub printed: Option<String>,
    /// The agent's name, once the file has been read.
    pub agent: String,
}

impl Stop {
    pub fn invalid(code: ErrorCode, message: impl Into<String>) -> Self {
        Stop {
            status: Status::Invalid,
            code,
            message: message.into(),
            printed: None,
            agent: String::new(),
        }
    }

    pub fn named(mut self, agent: &str) -> Self {
        self.agent = agent.to_string();
        self
    }

    /// Prints the problem on stderr.
    pub fn print(&self) {
        match &self.printed {
            Some(text) => eprintln!("{text}"),
            None => eprintln!("error: {}", self.message),
        }
    }
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.printed.as_deref().unwrap_or(&self.message))
    }
}

impl std::error::Error for Stop {}

/// Loads an agent file, printing its warnings; an invalid file prints its diagnostics.
pub fn load(agent_file: &Path) -> Result<AgentSpec, Stop> {
    if !agent_file.exists() {
        return Err(no_such_file(agent_file));
    }
    match load_agent(agent_file) {
        Ok((spec, warnings)) => {
            for warning in &warnings {
                eprintln!("{warning}");
            }
            Ok(spec)
        }
        Err(diagnostics) => {
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            let lines: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
            let message = format!(
                "{} is not a valid agent file ({errors} error(s))",
                agent_file.display()
            );
            let mut stop = Stop::invalid(ErrorCode::InvalidAgent, message);
            stop.printed = Some(lines.join("\n"));
            Err(stop)
        }
    }
}

/// A missing agent file: a plain message (a typo is the usual cause), with the agent file
/// of the same directory whose name is closest, if one is close.
fn no_such_file(agent_file: &Path) -> Stop {
    let parent = agent_file.parent().unwrap_or(Path::new(""));
    let dir = match parent.as_os_str().is_empty() {
        true => Path::new("."),
        false => parent,
    };
    let name = agent_file.file_name().unwrap_or_default().to_string_lossy();
    let agents: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|file| file.ends_with(".yaml") || file.ends_with(".yml"))
        .collect();
    let guess = crate::spec::diagnostic::did_you_mean(&name, agents.iter().map(String::as_str));
    let hint = match guess {
        Some(guess) => format!(" (did you mean {}?)", parent.join(guess).display()),
        None => String::new(),
    };
    Stop::invalid(
        ErrorCode::InvalidAgent,
        format!("no such file: {}{hint}", agent_file.display()),
    )
}

/// The agent's input values: `--vars FILE`, then each `--var NAME=VALUE`, typed and checked
/// by the file's `inputs`.
pub fn inputs(
    spec: &AgentSpec,
    vars_file: Option<&Path>,
    vars: &[String],
) -> Result<Map<String, Value>, Stop> {
    let invalid =
        |message: String| Stop::invalid(ErrorCode::InvalidInput, message).named(&spec.name);
    let file_values = match vars_file {
        Some(path) => read_vars_file(path).map_err(|e| invalid(e.to_string()))?,
        None => Vars::default(),
    };
    let vars = vars
        .iter()
        .map(|text| parse_var(text))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(e.to_string()))?;
    resolve_inputs(&spec.inputs, file_values, &vars).map_err(|e| invalid(e.to_string()))
}

/// The state a new run starts from: empty, with the file's `metadata`.
pub fn initial_state(spec: &AgentSpec) -> crate::engine::AgentState {
    let mut state = crate::engine::AgentState::initial();
    for (key, value) in &spec.metadata {
        state = state.with_metadata(key.clone(), value.clone());
    }
    state
}

/// What a command brings to the preparation.
pub struct Request {
    pub agent_file: PathBuf,
    pub spec: AgentSpec,
    pub inputs: Map<String, Value>,
    pub input_text: String,
    pub ids: (String, String),
    pub model_override: Option<ModelRef>,
    pub build: BuildOptions,
    pub human: HumanInput,
    /// Where `runner` keeps its state (`.runner/`, the run directory, the sessions
    /// directory): the file tools never write there, and listings skip it.
    pub state_dirs: Vec<PathBuf>,
    /// Files beyond the definition the file tools never write: `runner test`'s set-up
    /// scripts (`exec --protect`).
    pub protect: Vec<PathBuf>,
    /// The agent tree when the command has read it already (`resume`, which checked it
    /// against the session's): the run uses it rather than reading the files again.
    pub tree: Option<AgentTree>,
}

impl Request {
    /// A request with the cassette and the answer sources of `settings`.
    pub fn new(
        agent_file: &Path,
        spec: AgentSpec,
        inputs: (Map<String, Value>, String),
        ids: (String, String),
        settings: &super::RunSettings,
    ) -> Result<Self, Stop> {
        let invalid =
            |code: ErrorCode, message: String| Stop::invalid(code, message).named(&spec.name);
        let mut build = super::sources::build_options(settings)
            .map_err(|m| invalid(ErrorCode::InvalidCassette, m))?;
        // The run's own trace context, for what it starts (never another run's).
        if let Some(telemetry) = &settings.telemetry {
            build.trace = telemetry.child_trace(settings.caller_trace.as_ref());
        }
        let human = super::sources::human_input(settings)
            .map_err(|m| invalid(ErrorCode::InvalidAnswers, m))?;
        let run_dir = settings.run_dir.as_ref().and_then(|o| o.dir.as_deref());
        let state_dirs = state_dirs(&spec, run_dir);
        Ok(Request {
            agent_file: agent_file.to_path_buf(),
            spec,
            inputs: inputs.0,
            input_text: inputs.1,
            ids,
            model_override: None,
            build,
            human,
            state_dirs,
            protect: Vec::new(),
            tree: None,
        })
    }
}

/// Where `runner` keeps the state of a run of `spec`: `.runner/`, the run directory when
/// it is elsewhere, and the sessions directory.
pub fn state_dirs(spec: &AgentSpec, run_dir: Option<&Path>) -> Vec<PathBuf> {
    let sessions = super::files::sessions_dir(spec);
    [
        Some(PathBuf::from(".runner")),
        run_dir.map(Path::to_path_buf),
        sessions,
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// An agent ready to run. [`Prepared::shutdown`] stops its MCP servers (dropping it kills
/// them).
pub struct Prepared {
    servers: RunningServers,
    /// The run's id and its session's.
    pub ids: (String, String),
    pub cancel: watch::Receiver<bool>,
    pub spec: AgentSpec,
    pub agent_file: PathBuf,
    pub input_text: String,
    pub context: TemplateContext,
    env: EnvLookup,
    model_override: Option<ModelRef>,
    build: BuildOptions,
    human: HumanInput,
    /// Where the file tools work, the run's definition and state files protected.
    sandbox: Sandbox,
    /// The agent files and templates of the run, read once at its start.
    pub tree: Arc<AgentTree>,
}

impl Prepared {
    /// Starts the agent tree's MCP servers on the current runtime; `cancel` (the run's own
    /// stop signal) stops them while they start too.
    pub async fn start(request: Request, cancel: watch::Receiver<bool>) -> Result<Self, Stop> {
        let name = request.spec.name.clone();
        let env: EnvLookup = Arc::new(|name: &str| std::env::var(name).ok());
        let spec = &request.spec;
        let declared_env: Vec<String> = spec.env.iter().map(|e| e.0.clone()).collect();
        let context = TemplateContext::new(
            &request.inputs,
            &declared_env,
            &*env,
            (&spec.name, spec.description.as_deref()),
            &request.input_text,
            (&request.ids.0, &request.ids.1),
            &now_rfc3339(),
        );
        let dir = workspace();
        let tree = match request.tree {
            Some(tree) => tree,
            None => resolve_tree(&request.agent_file, spec)?,
        };
        let tree = Arc::new(tree);
        let protected = Protected::new(tree.files(), request.state_dirs.iter().cloned())
            .with_fixed(request.protect.iter().cloned());
        let input = CompileInput {
            spec,
            agent_file: request.agent_file.clone(),
            file_dir: file_dir(&request.agent_file),
            workspace: Sandbox {
                dir,
                protected: Arc::new(protected),
                sandboxes: Vec::new(),
            },
            context: &context,
            model_override: request.model_override.clone(),
            build: &request.build,
            env: env.clone(),
            inherited: None,
            human: request.human.clone(),
            mcp: McpServers::none(),
            tree: tree.clone(),
        };
        let sandbox = input.workspace.clone();
        let servers = RunningServers::start(&input, cancel.clone())
            .await
            .map_err(|failure| {
                Stop {
                    status: failure.status,
                    ..Stop::invalid(failure.code, failure.message)
                }
                .named(&name)
            })?;
        Ok(Prepared {
            servers,
            ids: request.ids,
            cancel,
            spec: request.spec,
            agent_file: request.agent_file,
            input_text: request.input_text,
            context,
            env,
            model_override: request.model_override,
            build: request.build,
            human: request.human,
            sandbox,
            tree,
        })
    }

    /// Stops the MCP servers, waiting for them.
    pub async fn shutdown(self) {
        self.servers.stop().await;
    }

    /// The context of one run of this agent: its events, its budget, this command's stop
    /// signal, where its checkpoints go (the session lists the run from here on, so a
    /// run that crashes is listed too) and its run directory, if it has one.
    pub fn context(
        &self,
        emitter: Emitter,
        budget: Arc<Budget>,
        (checkpoints, run_dir): (Option<Arc<SessionFiles>>, Option<&Path>),
    ) -> RunContext {
        if let Some(files) = &checkpoints {
            files.keep_tree(&self.tree);
            files.begin(&emitter.run_id);
        }
        let mut ctx = RunContext::new(emitter, budget, self.cancel.clone());
        ctx.checkpoints = checkpoints.map(|files| files as Arc<dyn Checkpointer>);
        ctx.run_dir = run_dir.map(Path::to_path_buf);
        ctx
    }

    /// The run's trace context, which its programs and servers are given (and its spans'
    /// subscriber sets to the run's span).
    pub fn child_trace(&self) -> &ChildTrace {
        &self.build.trace
    }

    /// What compiling the root agent needs.
    pub fn compile_input(&self) -> CompileInput<'_> {
        CompileInput {
            spec: &self.spec,
            agent_file: self.agent_file.clone(),
            file_dir: file_dir(&self.agent_file),
            workspace: self.sandbox.clone(),
            context: &self.context,
            model_override: self.model_override.clone(),
            build: &self.build,
            env: self.env.clone(),
            inherited: None,
            human: self.human.clone(),
            mcp: self.servers.servers(),
            tree: self.tree.clone(),
        }
    }

    /// Compiles the root agent (a problem points at its key in the file), then checks that
    /// every model of the tree can be built.
    pub fn compile(&self) -> Result<Agent, Stop> {
        let input = self.compile_input();
        let agent = compile_agent(&input).map_err(|error| self.located(&error))?;
        check_models(&input).map_err(|error| self.located(&error))?;
        Ok(agent)
    }

    /// A warning when the `--input` text changes nothing the agent is told: its `prompt`
    /// and `system` render the same without it (neither reads `{{ input }}`, even through
    /// an include), so the text would be dropped without a word.
    pub fn ignored_input(&self) -> Option<String> {
        if self.input_text.is_empty() || self.spec.prompt.is_none() {
            return None;
        }
        let empty = Map::from_iter([("input".to_string(), Value::String(String::new()))]);
        let without = self.context.with_values(&empty);
        let dir = file_dir(&self.agent_file);
        let fields = [("prompt", &self.spec.prompt), ("system", &self.spec.system)];
        let reads_input = fields.into_iter().any(|(field, source)| {
            source.as_deref().is_some_and(|source| {
                let render = |context| {
                    crate::compile::render_field((&dir, &self.tree), field, source, context).ok()
                };
                render(&self.context) != render(&without)
            })
        });
        (!reads_input).then(|| {
            format!(
                "--input is ignored: neither `prompt` nor `system` of {} reads `{{{{ input }}}}`; \
                 use `{{{{ input }}}}` in its prompt, or give the text to one of its inputs (`--var NAME=TEXT`)",
                self.agent_file.display()
            )
        })
    }

    /// The opening message: the rendered `prompt`, else the `--input` text.
    pub fn opening(&self) -> Result<String, Stop> {
        match &self.spec.prompt {
            Some(source) => crate::compile::render_field(
                (&file_dir(&self.agent_file), &self.tree),
                "prompt",
                source,
                &self.context,
            )
            .map_err(|error| self.located(&error)),
            None if !self.input_text.is_empty() => Ok(self.input_text.clone()),
            None => Err(Stop::invalid(
                ErrorCode::InvalidInput,
                "nothing to say: the agent has no `prompt` and no --input was given",
            )
            .named(&self.spec.name)),
        }
    }

    /// A compile problem as a stop, printed as `file:line:col: error[code]: message`.
    pub fn located(&self, error: &CompileError) -> Stop {
        located(&self.agent_file, &self.spec.name, error)
    }

    /// The sandbox of the file tools (a reload updates the files it protects).
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }
}

/// A compile problem at its key's `file:line:col` in the agent file, as `runner validate`
/// prints it.
fn located(agent_file: &Path, agent: &str, error: &CompileError) -> Stop {
    let pointer = error.pointer();
    let at = std::fs::read_to_string(agent_file)
        .ok()
        .and_then(|source| load_yaml(&source).ok())
        .map(|document| document.value_position(&pointer))
        .unwrap_or_default();
    let printed = format!(
        "{}:{}:{}: error[{}]: {error} (at {pointer})",
        agent_file.display(),
        at.line,
        at.column,
        error.code()
    );
    let code = match error.kind() {
        CompileError::Mcp(_) => ErrorCode::McpServer,
        _ => ErrorCode::InvalidAgent,
    };
    let mut stop = Stop::invalid(code, error.to_string()).named(agent);
    stop.printed = Some(printed);
    stop
}

/// Reads the agent tree of `spec`, loaded from `agent_file`, from the working directory;
/// a sub-agent file that is missing or invalid is located in `agent_file`.
pub fn resolve_tree(agent_file: &Path, spec: &AgentSpec) -> Result<AgentTree, Stop> {
    AgentTree::resolve(agent_file, spec, &workspace())
        .map_err(|message| located(agent_file, &spec.name, &CompileError::SubAgentFile(message)))
}

/// The workspace root of file tools: the working directory.
fn workspace() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}
