//! Compiles an agent file into an engine `Agent`: providers built, tools registered,
//! templates rendered. This is the only place where the spec meets the engine.

mod build_options;
mod hooks;
mod mcp;
mod model;
mod prompts;
mod remote;
mod remote_agent;
mod subagents;
mod tree;

pub use build_options::BuildOptions;
pub use mcp::start_servers as start_mcp_servers;
pub use model::{ModelError, check_models, provider_config};
pub use prompts::{TemplateContext, render_field};

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::engine::Agent;
use crate::engine::agent::{AgentTool, AnswerPolicy, ExecutionStrategy};
use crate::engine::budget::PricedModel;
use crate::engine::budget::{Price, RunLimits};
use crate::engine::builder::{DEFAULT_MAX_CALLS_PER_TURN, DEFAULT_STRUCTURED_RETRIES};
use crate::engine::context::{ContextPolicy, DEFAULT_THRESHOLD};
use crate::engine::middleware::{Logging, Middleware, PruneToolOutputs, SlidingWindow, Summarize};
use crate::engine::stop_when::StopWhen;
use crate::engine::strategy::{LoopStrategy, PlanStrategy, ReactStrategy};
use crate::engine::xml_turn::{DEFAULT_FORMAT_RETRIES, XmlTools};
use crate::mcp::McpServers;
use crate::policy::{Permissions, Redactor, ToolPolicy};
use crate::spec::AgentSpec;
use crate::spec::agent::OnProblem;
use crate::spec::context::{ContextSpec, ContextStrategy};
use crate::spec::execution::Strategy;
use crate::spec::limits::Limits;
use crate::spec::middleware::MiddlewareEntry;
use crate::spec::model::ModelRef;
use crate::spec::permissions::PermissionsSpec;
use crate::spec::sandbox::SandboxSpec;
use crate::spec::tools::ToolEntry;
use crate::spec::tree::AgentTree;
use crate::tools::{ChildEnv, Protected};

/// Why an agent file cannot be turned into a runnable agent (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error("{0}")]
    Model(#[from] ModelError),
    /// A template of `field` (`system`, `prompt`, `reasoning_prompt`) failed to render.
    #[error("cannot render `{field}`: {message}")]
    Template { field: String, message: String },
    #[error("{0}")]
    StopWhen(String),
    #[error("{0}")]
    SubAgentFile(String),
    #[error("tool `{name}`: {message}")]
    Tool { name: String, message: String },
    #[error("{0}")]
    Mcp(crate::mcp::StartError),
    /// A `permissions` pattern or `redact` expression that does not compile.
    #[error("{message}")]
    Policy { key: &'static str, message: String },
    /// A problem at a key other than the one its kind belongs to: a `summarize` model, an
    /// agent of the tree (`/handoffs/0/agent`).
    #[error("{error}")]
    At {
        pointer: String,
        error: Box<CompileError>,
    },
}

impl CompileError {
    /// The JSON pointer of the agent file's key the problem belongs to.
    pub fn pointer(&self) -> String {
        match self {
            CompileError::At { pointer, .. } => pointer.clone(),
            CompileError::Model(_) => "/model".into(),
            CompileError::Template { field, .. } if field == "reasoning_prompt" => {
                "/execution/reasoning_prompt".into()
            }
            CompileError::Template { field, .. } => format!("/{field}"),
            CompileError::StopWhen(_) => "/stop_when".into(),
            CompileError::SubAgentFile(_) | CompileError::Tool { .. } | CompileError::Mcp(_) => {
                "/tools".into()
            }
            CompileError::Policy { key, .. } => format!("/{key}"),
        }
    }

    /// The same problem, pointing at `pointer` (a problem placed already keeps its place:
    /// the deepest key is the most precise).
    pub fn at(self, pointer: String) -> CompileError {
        match self {
            CompileError::At { .. } => self,
            error => CompileError::At {
                pointer,
                error: Box::new(error),
            },
        }
    }

    /// The problem itself, wherever it points.
    pub fn kind(&self) -> &CompileError {
        match self {
            CompileError::At { error, .. } => error.kind(),
            error => error,
        }
    }

    /// A short stable code, as `runner validate` prints them.
    pub fn code(&self) -> &'static str {
        match self {
            CompileError::At { error, .. } => error.code(),
            CompileError::Model(_) => "model",
            CompileError::Template { .. } => "template",
            CompileError::StopWhen(_) => "stop-when",
            CompileError::SubAgentFile(_) => "sub-agent",
            CompileError::Tool { .. } => "tool",
            CompileError::Mcp(_) => "mcp",
            CompileError::Policy { .. } => "permission",
        }
    }
}

/// Where the file tools work, and the files in it they must leave alone.
#[derive(Debug, Clone)]
pub struct Sandbox {
    pub dir: PathBuf,
    pub protected: Arc<Protected>,
    /// The callers' `sandbox:` entries, outermost first: a sub-agent's programs stay under
    /// them whatever its own says.
    pub sandboxes: Vec<SandboxSpec>,
}

impl Sandbox {
    /// The workspace of `spec`'s sub-agents and handoff targets: under its `sandbox` too.
    pub fn below(&self, spec: &AgentSpec) -> Sandbox {
        let mut below = self.clone();
        below.sandboxes.extend(spec.sandbox.clone());
        below
    }

    /// Every `sandbox:` over `spec`'s programs: its callers', then its own.
    pub fn over<'s>(&'s self, spec: &'s AgentSpec) -> Vec<&'s SandboxSpec> {
        self.sandboxes.iter().chain(spec.sandbox.as_ref()).collect()
    }
}

/// What compiling needs besides the file.
pub struct CompileInput<'a> {
    pub spec: &'a AgentSpec,
    /// The file the agent is written in (an inline agent's: the file holding it).
    pub agent_file: PathBuf,
    /// The agent file's directory (templates and sub-agent paths resolve from it).
    pub file_dir: PathBuf,
    /// The workspace of file tools (the working directory, `runner`'s own files protected).
    pub workspace: Sandbox,
    pub context: &'a TemplateContext,
    /// `--model`, or the caller's model for a sub-agent without one.
    pub model_override: Option<ModelRef>,
    pub build: &'a BuildOptions,
    pub env: EnvLookup,
    /// The caller's model, for a sub-agent or handoff target without one (UAP §8.4).
    pub inherited: Option<PricedModel>,
    /// Where a person's answers and approvals come from.
    pub human: HumanInput,
    /// The run's MCP servers, started by [`start_mcp_servers`] before compiling.
    pub mcp: Arc<McpServers>,
    /// The run's agent files and templates, read when it started: sub-agents and includes
    /// come from here, never from the disk again.
    pub tree: Arc<AgentTree>,
}

impl<'a> CompileInput<'a> {
    /// What the run's programs are started with: the environment without the usual
    /// secrets and `deny`, in the run's trace.
    pub fn child_env(&self, deny: Vec<String>) -> ChildEnv {
        ChildEnv {
            deny,
            trace: self.build.trace.clone(),
        }
    }

    /// Where this agent's templates resolve their includes.
    pub fn templates(&self) -> (&Path, &Arc<AgentTree>) {
        (&self.file_dir, &self.tree)
    }

    /// The same input with the run's started MCP servers.
    pub fn with_mcp(&self, mcp: Arc<McpServers>) -> CompileInput<'a> {
        CompileInput {
            spec: self.spec,
            agent_file: self.agent_file.clone(),
            file_dir: self.file_dir.clone(),
            workspace: self.workspace.clone(),
            context: self.context,
            model_override: self.model_override.clone(),
            build: self.build,
            env: self.env.clone(),
            inherited: self.inherited.clone(),
            human: self.human.clone(),
            mcp,
            tree: self.tree.clone(),
        }
    }
}

/// Where a person's input comes from, for every agent of a run: answers to `ask_user`
/// (and MCP forms), and decisions on calls that `permissions` sends to `ask`.
#[derive(Clone, Default)]
pub struct HumanInput {
    /// Asked in order: the terminal when there is one, then `--answers`.
    pub answers: Vec<Arc<dyn crate::tools::AnswerSource>>,
    pub approvals: Arc<crate::policy::Approvals>,
}

/// Reads environment variables (the process environment, or a map in tests).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Builds the agent.
pub fn compile_agent(input: &CompileInput<'_>) -> Result<Agent, CompileError> {
    let spec = input.spec;
    let (provider, prices, windows, request_params) = match (
        input.model_override.clone().or_else(|| spec.model.clone()),
        &input.inherited,
    ) {
        (Some(model), _) => {
            let built =
                model::build_model(&model, &input.build.models, &*input.env).map_err(|error| {
                    let pointer = format!("/model{}", error.key_in_model());
                    CompileError::Model(error).at(pointer)
                })?;
            (
                built.provider,
                built.prices,
                model::chain_windows(&model),
                built.params,
            )
        }
        // An inherited model keeps its prices, its parameters and its fallbacks: the
        // sub-agent's calls cost what its caller's do.
        (None, Some(inherited)) => (
            inherited.provider.clone(),
            inherited.prices.clone(),
            inherited.windows.clone(),
            inherited.params.clone(),
        ),
        (None, None) => return Err(ModelError::NoModel.into()),
    };

    let system = spec
        .system
        .as_deref()
        .map(|source| render_field(input.templates(), "system", source, input.context))
        .transpose()?;
    let listings = build_tools(input)?;
    let sequential: HashSet<String> = listings
        .iter()
        .filter(|listing| listing.sequential)
        .map(|listing| listing.tool.name().to_string())
        .collect();
    let depends_on: HashMap<String, Vec<String>> = listings
        .iter()
        .filter(|listing| !listing.depends_on.is_empty())
        .map(|listing| (listing.tool.name().to_string(), listing.depends_on.clone()))
        .collect();
    let tools: Vec<AgentTool> = listings.into_iter().map(|t| t.tool).collect();
    let model_order = spec.execution.model_order;
    let xml_tools = (spec.tool_protocol == crate::spec::agent::ToolProtocol::Xml).then(|| {
        let specs: Vec<_> = tools.iter().map(|tool| tool.offered(model_order)).collect();
        let retries = spec.execution.format_retries;
        XmlTools::new(&specs, retries.unwrap_or(DEFAULT_FORMAT_RETRIES))
    });
    let strategy = build_strategy(input)?;
    let middleware = build_middleware(
        input,
        &PricedModel {
            provider: provider.clone(),
            prices: prices.clone(),
            windows: windows.clone(),
            params: request_params.clone(),
        },
    )?;
    let stop_when = spec
        .stop_when
        .as_deref()
        .map(StopWhen::new)
        .transpose()
        .map_err(CompileError::StopWhen)?;
    Ok(Agent {
        id: crate::spec::agent_id::agent_id(&input.agent_file, &spec.name),
        name: spec.name.clone(),
        description: spec.description.clone(),
        system,
        provider,
        prices,
        request_params,
        context: Some(context_policy(spec, windows)),
        limits: run_limits(&spec.limits),
        tools,
        depends_on,
        sequential,
        model_order,
        strategy,
        middleware,
        xml_tools,
        output_schema: spec.output.as_ref().map(|o| o.schema.0.clone()),
        parallel_tools: spec.execution.parallel_tools.and_then(|p| p.limit()),
        max_calls_per_turn: spec
            .execution
            .max_calls_per_turn
            .map_or(DEFAULT_MAX_CALLS_PER_TURN, |max| max as usize),
        stop_when,
        answer_policy: AnswerPolicy {
            fail_truncated: spec.answer.truncated == OnProblem::Fail,
            fail_empty: spec.answer.empty == OnProblem::Fail,
        },
        structured_retries: spec
            .output
            .as_ref()
            .and_then(|output| output.retries)
            .unwrap_or(DEFAULT_STRUCTURED_RETRIES),
        policy: build_policy(input)?,
        offered: Default::default(),
        handoffs: input
            .spec
            .handoffs
            .iter()
            .map(|h| subagents::handoff_target(input, h).map(|target| (h.name.clone(), target)))
            .collect::<Result<_, _>>()?,
    })
}

/// The agent's own guardrails; `None` when it declares none of `permissions`, `redact`
/// and `hooks` (it follows its caller's, and at the top only the built-in redaction applies).
fn build_policy(input: &CompileInput<'_>) -> Result<Option<Arc<ToolPolicy>>, CompileError> {
    let spec = input.spec;
    if spec.permissions.is_none() && spec.redact.is_empty() && spec.hooks.is_none() {
        return Ok(None);
    }
    let permissions = spec
        .permissions
        .as_ref()
        .map(|p| {
            let texts = PermissionsSpec::texts;
            Permissions::parse(&texts(&p.deny), &texts(&p.allow), &texts(&p.ask), p.default)
        })
        .transpose()
        .map_err(|message| CompileError::Policy {
            key: "permissions",
            message,
        })?;
    let redactor = Redactor::new(&spec.redact).map_err(|message| CompileError::Policy {
        key: "redact",
        message,
    })?;
    let hooks = match &spec.hooks {
        Some(hooks) => hooks::build_hooks(input, hooks, &redactor)?,
        None => Default::default(),
    };
    Ok(Some(Arc::new(ToolPolicy {
        permissions,
        redactor,
        approvals: input.human.approvals.clone(),
        hooks,
    })))
}

/// The prices a model mapping declares (`pricing`), if any.
fn model_price(model: &ModelRef) -> Option<Price> {
    model.to_config().pricing.map(|p| Price {
        input_per_mtok: p.input_per_mtok,
        output_per_mtok: p.output_per_mtok,
    })
}

/// The agent's `context`, with the windows of its model's chain.
fn context_policy(spec: &AgentSpec, windows: Vec<Option<u64>>) -> ContextPolicy {
    let context = spec.context.clone().unwrap_or(ContextSpec {
        threshold: None,
        strategy: ContextStrategy::default(),
    });
    ContextPolicy {
        windows,
        threshold: context.threshold.unwrap_or(DEFAULT_THRESHOLD),
        strategy: context.strategy,
    }
}

/// The run's bounds from `limits`.
pub fn run_limits(limits: &Limits) -> RunLimits {
    RunLimits {
        max_llm_calls: limits.max_llm_calls,
        max_tool_calls: limits.max_tool_calls,
        max_tokens: limits.max_tokens,
        max_cost_usd: limits.max_cost_usd,
        timeout: limits.timeout.map(|d| d.0),
        tool_timeout: limits.tool_timeout.map(|d| d.0),
        max_depth: limits.max_depth,
        max_output_chars: limits.max_output_chars,
    }
}

/// One of an agent's tools and where it comes from (for messages and `runner tools`).
pub struct ToolListing {
    /// `builtin`, `sub-agent`, `remote`, `external`, `handoff` or `mcp`.
    pub kind: &'static str,
    /// The MCP server's command line or URL, for `mcp` tools.
    pub server: Option<String>,
    /// The kernel sandbox its programs run in (`shell`, stdio MCP servers), summarised.
    pub sandbox: Option<String>,
    pub tool: AgentTool,
    /// Its entry's `sequential`: it runs alone within a turn.
    pub sequential: bool,
    /// Its entry's `depends_on`: the tools whose calls of the turn it waits for.
    pub depends_on: Vec<String>,
}

impl ToolListing {
    fn new(kind: &'static str, tool: AgentTool) -> Self {
        ToolListing {
            kind,
            server: None,
            sandbox: None,
            tool,
            sequential: false,
            depends_on: Vec::new(),
        }
    }

    fn origin(&self) -> String {
        match &self.server {
            Some(server) => format!("MCP server `{server}`"),
            None => format!("the {} tool", self.kind),
        }
    }
}

/// The agent's tools, in file order (handoffs last). Two tools with one name are an error:
/// the model could not tell them apart.
pub fn build_tools(input: &CompileInput<'_>) -> Result<Vec<ToolListing>, CompileError> {
    let mut tools: Vec<ToolListing> = Vec::new();
    for entry in &input.spec.tools {
        let first = tools.len();
        match entry {
            ToolEntry::Builtin(crate::spec::tools::BuiltinTool::AskUser { .. }) => {
                let ask = crate::tools::AskUserTool::new(input.human.answers.clone());
                tools.push(ToolListing::new(
                    "builtin",
                    AgentTool::AskUser(Arc::new(ask)),
                ));
            }
            ToolEntry::Builtin(builtin) => {
                let env = input.child_env(secret_env_names(input.spec));
                let workspace = &input.workspace;
                let sandboxes = workspace.over(input.spec);
                let tool = crate::tools::build_builtin_in(
                    builtin,
                    &workspace.dir,
                    &workspace.protected,
                    &env,
                    &sandboxes,
                )
                .map_err(|message| CompileError::Tool {
                    name: builtin.name().to_string(),
                    message,
                })?;
                let mut listing = ToolListing::new("builtin", AgentTool::Plain(tool));
                if let crate::spec::tools::BuiltinTool::Shell { sandbox, .. } = builtin {
                    listing.sandbox = sandbox_summary(&sandboxes, sandbox.as_ref());
                }
                tools.push(listing);
            }
            ToolEntry::SubAgent(tool) => tools.push(ToolListing::new(
                "sub-agent",
                AgentTool::SubAgent(subagents::sub_agent_tool(input, tool)?),
            )),
            ToolEntry::Remote(tool) => tools.push(ToolListing::new(
                "remote",
                AgentTool::Remote(remote::remote_tool(input, tool)?),
            )),
            ToolEntry::External(entry) => tools.push(ToolListing::new(
                "external",
                AgentTool::External(external_tool(&entry.external)?),
            )),
            ToolEntry::Mcp(entry) => {
                let server = Some(crate::mcp::Endpoint::label_of(&entry.mcp));
                let sandbox = match &entry.mcp {
                    crate::spec::tools::McpServer::Stdio(stdio) => {
                        sandbox_summary(&input.workspace.over(input.spec), stdio.sandbox.as_ref())
                    }
                    crate::spec::tools::McpServer::Http(_) => None,
                };
                for tool in mcp::entry_tools(input, &entry.mcp)? {
                    tools.push(ToolListing {
                        kind: "mcp",
                        server: server.clone(),
                        sandbox: sandbox.clone(),
                        tool: AgentTool::Plain(tool),
                        sequential: false,
                        depends_on: Vec::new(),
                    });
                }
            }
        }
        let (sequential, depends_on) = entry.ordering();
        for listing in &mut tools[first..] {
            listing.sequential = sequential;
            listing.depends_on = depends_on.to_vec();
        }
    }
    for handoff in &input.spec.handoffs {
        tools.push(ToolListing::new(
            "handoff",
            AgentTool::Handoff(subagents::handoff_tool(input, handoff)?),
        ));
    }
    for (index, tool) in tools.iter().enumerate() {
        let name = tool.tool.name();
        if let Some(first) = tools[..index].iter().find(|t| t.tool.name() == name) {
            return Err(CompileError::Tool {
                name: name.to_string(),
                message: format!(
                    "two tools have this name: {} and {}; give the MCP entry a `prefix`, or list only the tools you need in its `tools`",
                    first.origin(),
                    tool.origin()
                ),
            });
        }
    }
    Ok(tools)
}

/// An external tool: its interface, the schema compiled to check the model's arguments.
fn external_tool(
    tool: &crate::spec::tools::ExternalTool,
) -> Result<Arc<crate::engine::external::ExternalTool>, CompileError> {
    let parameters = tool.parameters.0.clone();
    let validator = crate::tools::ArgsValidator::at_first_call(parameters.clone());
    Ok(Arc::new(crate::engine::external::ExternalTool {
        name: tool.name.clone(),
        description: tool.description.clone(),
        parameters,
        validator,
    }))
}

/// `runner tools`' line for programs under `over` and `own`: each layer's summary.
fn sandbox_summary(over: &[&SandboxSpec], own: Option<&SandboxSpec>) -> Option<String> {
    let layers: Vec<String> = over
        .iter()
        .copied()
        .chain(own)
        .map(SandboxSpec::summary)
        .collect();
    (!layers.is_empty()).then(|| layers.join(" | "))
}

/// Env var names whose values must never reach a child process: the agent's key variable
/// and the default key variables.
fn secret_env_names(spec: &AgentSpec) -> Vec<String> {
    let mut names = vec![
        "OPENAI_API_KEY".to_string(),
        "ANTHROPIC_API_KEY".to_string(),
    ];
    if let Some(ModelRef::Config(config)) = &spec.model
        && let Some(name) = &config.api_key_env
    {
        names.push(name.clone());
    }
    names
}

fn build_strategy(input: &CompileInput<'_>) -> Result<Arc<dyn ExecutionStrategy>, CompileError> {
    let execution = &input.spec.execution;
    Ok(match execution.strategy {
        Strategy::Loop => Arc::new(LoopStrategy {
            max_iterations: execution.max_iterations,
        }),
        Strategy::React => Arc::new(ReactStrategy {
            max_steps: execution.max_steps,
            reasoning_prompt: execution
                .reasoning_prompt
                .as_deref()
                .map(|source| {
                    render_field(input.templates(), "reasoning_prompt", source, input.context)
                })
                .transpose()?,
        }),
        Strategy::Plan => Arc::new(PlanStrategy {
            max_plan_steps: execution.max_plan_steps,
            allow_replan: execution.allow_replan.unwrap_or(true),
            plan_schema: execution.plan_schema.as_ref().map(|s| s.0.clone()),
            max_plans: execution.max_plans,
            max_step_calls: execution.max_step_calls,
        }),
    })
}

fn build_middleware(
    input: &CompileInput<'_>,
    model: &PricedModel,
) -> Result<Vec<Arc<dyn Middleware>>, CompileError> {
    let mut chain: Vec<Arc<dyn Middleware>> = Vec::new();
    for (index, entry) in input.spec.middleware.iter().enumerate() {
        let layer: Arc<dyn Middleware> = match entry {
            MiddlewareEntry::Logging(config) => Arc::new(Logging::new(config.clone())),
            MiddlewareEntry::SlidingWindow(config) => {
                Arc::new(SlidingWindow::new(config.max_messages))
            }
            MiddlewareEntry::PruneToolOutputs(config) => {
                Arc::new(PruneToolOutputs::new(config.clone()))
            }
            MiddlewareEntry::Summarize(config) => {
                let summarizer = match &config.model {
                    Some(model) => model::build_model(model, &input.build.models, &*input.env)
                        .map_err(|error| {
                            let key = model::summarize_model_key(index);
                            let pointer = format!("{key}{}", error.key_in_model());
                            CompileError::Model(error).at(pointer)
                        })?,
                    None => model.clone(),
                };
                Arc::new(Summarize::new(
                    config.threshold,
                    config.keep_recent,
                    summarizer,
                ))
            }
            MiddlewareEntry::Command(config) => Arc::new(hooks::command_middleware(input, config)?),
        };
        chain.push(layer);
    }
    Ok(chain)
}

/// The directory of an agent file ("." for a bare file name).
pub fn file_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
