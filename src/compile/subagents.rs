//! Sub-agent tools and handoff targets from the agent file: the child agent comes from the
//! run's agent tree (read once when the run started, never from the disk again), and is
//! compiled each time it runs (so it picks up the caller's model, and a recursive agent
//! only unfolds as deep as it actually goes).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::BuildOptions;
use super::{
    CompileError, CompileInput, EnvLookup, Sandbox, TemplateContext, compile_agent, file_dir,
    render_field,
};
use crate::engine::Agent;
use crate::engine::agent::{
    AgentFactory, BuildError, HandoffTool, PromptRenderer, RenderError, SubAgentTool,
};
use crate::engine::budget::PricedModel;
use crate::mcp::McpServers;
use crate::spec::AgentSpec;
use crate::spec::inputs::{InputError, resolve_inputs};
use crate::spec::template::BUILTIN_VARIABLES;
use crate::spec::tools::{AgentRef, Handoff, SubAgentTool as SubAgentSpec};
use crate::spec::tree::AgentTree;
use crate::tools::ArgsValidator;

/// An agent from the agent file, built on demand.
pub struct SpecAgent {
    spec: AgentSpec,
    /// The file it is written in (for an inline agent, the caller's).
    file: PathBuf,
    file_dir: PathBuf,
    workspace: Sandbox,
    /// The run's built-ins (`run`, `now`, `input`), shared by the whole tree.
    context: TemplateContext,
    build: BuildOptions,
    env: EnvLookup,
    human: super::HumanInput,
    /// The run's MCP servers (the child's own `mcp` entries were started with the run).
    mcp: Arc<McpServers>,
    tree: Arc<AgentTree>,
}

impl SpecAgent {
    pub fn resolve(input: &CompileInput<'_>, agent: &AgentRef) -> Result<Self, CompileError> {
        let (spec, file, dir) = match agent {
            AgentRef::Inline(spec) => (
                (**spec).clone(),
                input.agent_file.clone(),
                input.file_dir.clone(),
            ),
            AgentRef::Path(relative) => {
                let path = input.file_dir.join(relative);
                let (file, spec) = input.tree.agent(&path).ok_or_else(|| {
                    CompileError::SubAgentFile(format!(
                        "sub-agent file {} is not part of the agent tree read when the run started",
                        path.display()
                    ))
                })?;
                (spec.clone(), file.to_path_buf(), file_dir(file))
            }
        };
        Ok(SpecAgent {
            spec,
            file,
            file_dir: dir,
            workspace: input.workspace.below(input.spec),
            context: input.context.clone(),
            build: input.build.clone(),
            env: input.env.clone(),
            human: input.human.clone(),
            mcp: input.mcp.clone(),
            tree: input.tree.clone(),
        })
    }

    /// The child's template context: its own inputs take their defaults; its templates see
    /// those, its declared env vars and the run's built-ins.
    pub fn context(&self) -> Result<TemplateContext, InputError> {
        let inputs = resolve_inputs(&self.spec.inputs, Map::new(), &[])?;
        let declared_env: Vec<String> = self.spec.env.iter().map(|e| e.0.clone()).collect();
        Ok(self.context.for_agent(
            &self.spec.name,
            self.spec.description.as_deref(),
            &inputs,
            &declared_env,
            &*self.env,
        ))
    }

    /// What compiling the child needs.
    pub fn input<'a>(
        &'a self,
        context: &'a TemplateContext,
        inherited: Option<PricedModel>,
    ) -> CompileInput<'a> {
        CompileInput {
            spec: &self.spec,
            agent_file: self.file.clone(),
            file_dir: self.file_dir.clone(),
            workspace: self.workspace.clone(),
            context,
            model_override: None,
            build: &self.build,
            env: self.env.clone(),
            inherited,
            human: self.human.clone(),
            mcp: self.mcp.clone(),
            tree: self.tree.clone(),
        }
    }
}

impl AgentFactory for SpecAgent {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn build(&self, inherited: &PricedModel) -> Result<Agent, BuildError> {
        let context = self
            .context()
            .map_err(|error| BuildError::Inputs(Box::new(error)))?;
        compile_agent(&self.input(&context, Some(inherited.clone())))
            .map_err(|error| BuildError::Compile(Box::new(error)))
    }
}

/// Renders a sub-agent tool's `prompt` over the call's arguments (default: the arguments
/// as JSON). The template sees the arguments its `parameters` declare, under their names;
/// they never replace a built-in (`env`, `agent`, `now`, `input`, `run`), which
/// `runner validate` refuses as a parameter name, and arguments the schema does not declare
/// are not variables at all.
struct ToolPrompt {
    source: Option<String>,
    file_dir: PathBuf,
    tree: Arc<AgentTree>,
    context: TemplateContext,
    /// The parameter names the prompt may read.
    declared: Vec<String>,
}

impl PromptRenderer for ToolPrompt {
    fn render(&self, arguments: &Value) -> Result<String, RenderError> {
        let Some(source) = &self.source else {
            return Ok(arguments.to_string());
        };
        let values: Map<String, Value> = arguments
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(name, _)| self.declared.contains(name) && !is_builtin(name))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        render_field(
            (&self.file_dir, &self.tree),
            "prompt",
            source,
            &self.context.with_values(&values),
        )
        .map_err(|error| RenderError(Box::new(error)))
    }
}

/// Whether a name is a template built-in (or `env`), which an argument may not replace.
fn is_builtin(name: &str) -> bool {
    name == "env" || BUILTIN_VARIABLES.contains(&name)
}

/// The renderer of a tool's `prompt` (a sub-agent's, or a remote agent's message).
pub(super) fn tool_prompt(
    input: &CompileInput<'_>,
    source: Option<String>,
    parameters: &Value,
) -> Arc<dyn PromptRenderer> {
    Arc::new(ToolPrompt {
        source,
        file_dir: input.file_dir.clone(),
        tree: input.tree.clone(),
        context: input.context.clone(),
        declared: declared_parameters(parameters),
    })
}

pub fn sub_agent_tool(
    input: &CompileInput<'_>,
    spec: &SubAgentSpec,
) -> Result<Arc<SubAgentTool>, CompileError> {
    let validator = ArgsValidator::at_first_call(spec.parameters.0.clone());
    let agent = SpecAgent::resolve(input, &spec.agent)?;
    Ok(Arc::new(SubAgentTool {
        name: spec.name.clone(),
        description: spec.description.clone(),
        parameters: spec.parameters.0.clone(),
        sequential: spec.sequential,
        validator,
        prompt: Arc::new(ToolPrompt {
            source: spec.prompt.clone(),
            file_dir: input.file_dir.clone(),
            tree: input.tree.clone(),
            context: input.context.clone(),
            declared: declared_parameters(&spec.parameters.0),
        }),
        agent: Arc::new(agent),
    }))
}

/// The names under a parameter schema's `properties`.
fn declared_parameters(schema: &Value) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
}

pub fn handoff_target(
    input: &CompileInput<'_>,
    spec: &Handoff,
) -> Result<Arc<dyn AgentFactory>, CompileError> {
    Ok(Arc::new(SpecAgent::resolve(input, &spec.agent)?))
}

pub fn handoff_tool(
    input: &CompileInput<'_>,
    spec: &Handoff,
) -> Result<Arc<HandoffTool>, CompileError> {
    Ok(Arc::new(HandoffTool::new(
        spec.name.clone(),
        spec.description.clone(),
        handoff_target(input, spec)?,
    )))
}
