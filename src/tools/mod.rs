//! Tools: the [`Tool`] trait the engine calls, the result type every tool returns, and the
//! built-in tools of SPEC §2.3 (`read_file`, `write_file`, `list_dir`, `search_files`,
//! `shell`, `http_get`), and `ask_user`, whose unanswered questions the engine turns into a
//! pause of the run.
//!
//! A tool never ends a run: every failure, including invalid arguments, a refused path or
//! a program that exits non-zero, is a [`ToolOutput`] with `success: false` that is fed
//! back to the model. See `docs/tools.md` for the confinement, shell and limit rules.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::sync::lock;

mod ask_user;
mod builtin;
mod child;
mod child_env;
mod form;
mod http_get;
mod isolate;
mod list_dir;
mod live_output;
mod protected;
mod read_file;
mod reaper;
mod search_files;
mod shell;
mod text;
mod workspace;
mod write_file;

pub use ask_user::{AnswerSource, AnswersFile, AskUserTool, Asked, Terminal};
#[cfg(any(test, feature = "testing"))]
pub use builtin::build_builtin;
pub use builtin::build_builtin_in;
pub use child::{ChildRun, End, Finished, run_child};
pub use child_env::ChildEnv;
pub use form::{FormAnswer, FormRequest};
pub use http_get::HttpGetTool;
// For the crate's own tests and benchmarks (the `testing` feature).
#[cfg(any(test, feature = "testing"))]
pub use http_get::host_allowed;
pub use isolate::hide_this_process;
pub use list_dir::ListDirTool;
pub use live_output::{LiveOutput, OutputLine, OutputSink, Stream};
pub use protected::Protected;
pub use read_file::ReadFileTool;
pub use search_files::SearchFilesTool;
pub use shell::{ShellTool, scrub_env};
pub use workspace::Workspace;
pub use write_file::WriteFileTool;

/// A boxed, sendable future: what [`Tool::call`] returns, so the trait stays object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Something the model can call. Used as `Arc<dyn Tool>`.
pub trait Tool: Send + Sync {
    /// The name the model calls the tool by.
    fn name(&self) -> &str;
    /// What the tool does, for the model.
    fn description(&self) -> &str;
    /// The JSON Schema (`type: object`) of the arguments, as the model sees it.
    fn parameters(&self) -> &Value;
    /// `true`: the tool must run alone; other calls of the same turn wait for it.
    fn sequential(&self) -> bool {
        false
    }
    /// `true`: running the call again after a crash is safe (read-only tools, idempotent writes).
    fn idempotent(&self) -> bool {
        false
    }
    /// Metadata every result of this tool carries, a call the engine cut off (a timeout,
    /// an interrupt) included: an MCP tool's `mcp_server`.
    fn origin(&self) -> Map<String, Value> {
        Map::new()
    }
    /// The arguments as `permissions` patterns see them, when they differ from the model's
    /// (a path resolved in the workspace, a command's words): `None` keeps them as given.
    fn policy_arguments(&self, _arguments: &Value) -> Option<Value> {
        None
    }
    /// Runs one call. Failures are returned as `ToolOutput { success: false, .. }`, never panics.
    fn call<'a>(&'a self, arguments: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput>;
}

/// How far a running call has got, as its tool reports it (an MCP server's
/// `notifications/progress`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolProgress {
    /// Grows as the work goes on, even when the total is unknown.
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// Where a call's progress goes (the engine turns it into `agent.tool.progress` events).
#[derive(Clone)]
pub struct ProgressSink(Arc<dyn Fn(ToolProgress) + Send + Sync>);

impl ProgressSink {
    pub fn new(sink: impl Fn(ToolProgress) + Send + Sync + 'static) -> Self {
        ProgressSink(Arc::new(sink))
    }
}

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// What a tool call gets besides its arguments.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The id of the tool call (from the model, or made up by the engine).
    pub call_id: String,
    /// Flips to `true` when the run is interrupted (SIGINT/SIGTERM). Long-running tools
    /// (shell, http_get, search_files) stop, kill their children and return an error.
    pub cancel: watch::Receiver<bool>,
    /// Where the call's progress goes, when someone listens.
    progress: Option<ProgressSink>,
    /// Where the lines a running program prints go, when someone listens.
    output: Option<OutputSink>,
    /// A form the call's service needed filled in and nobody could: the run pauses on it.
    form: std::sync::Arc<std::sync::Mutex<Option<FormRequest>>>,
}

impl ToolContext {
    /// A context whose cancellation follows `cancel`.
    pub fn new(call_id: impl Into<String>, cancel: watch::Receiver<bool>) -> Self {
        ToolContext {
            call_id: call_id.into(),
            cancel,
            progress: None,
            output: None,
            form: Default::default(),
        }
    }

    /// The same context, its progress going to `sink`.
    pub fn with_progress(mut self, sink: ProgressSink) -> Self {
        self.progress = Some(sink);
        self
    }

    /// The same context, the lines its program prints going to `sink`.
    pub fn with_output(mut self, sink: OutputSink) -> Self {
        self.output = Some(sink);
        self
    }

    /// The bounded line reader for a program the call runs, when someone listens.
    pub fn live_output(&self) -> Option<LiveOutput> {
        self.output.clone().map(LiveOutput::new)
    }

    /// Reports how far the call has got (nothing, when no one listens).
    pub fn report(&self, progress: ToolProgress) {
        if let Some(sink) = &self.progress {
            (sink.0)(progress);
        }
    }

    /// Says the call could not finish: its service needs `form` filled in, and nobody
    /// could. The engine pauses the run on the form instead of using the call's result.
    pub fn wait_for_form(&self, form: FormRequest) {
        lock(&self.form).get_or_insert(form);
    }

    /// The form the call waits for, if it does.
    pub fn waiting_form(&self) -> Option<FormRequest> {
        lock(&self.form).take()
    }

    /// A context that is never cancelled (tests, one-off calls).
    pub fn detached(call_id: impl Into<String>) -> Self {
        let (_sender, cancel) = watch::channel(false);
        ToolContext::new(call_id, cancel)
    }

    /// Whether the run has been interrupted.
    pub fn is_cancelled(&self) -> bool {
        *self.cancel.borrow()
    }

    /// Resolves when the run is interrupted; never, if the sender is gone without cancelling.
    pub async fn cancelled(&self) {
        stopped(&self.cancel).await
    }
}

/// Resolves when `cancel` turns true; never, if its sender is dropped without cancelling
/// (a run whose signal handler could not be installed must not stop at once).
pub async fn stopped(cancel: &watch::Receiver<bool>) {
    let mut cancel = cancel.clone();
    loop {
        if *cancel.borrow_and_update() {
            return;
        }
        if cancel.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// The result of a tool call, serialised as
/// `{"success": bool, "data": …, "error": string|null, "metadata": {…}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolOutput {
    /// Whether the call did what was asked.
    pub success: bool,
    /// The result (may be present on failure too, e.g. a failed command's output).
    pub data: Value,
    /// Why the call failed, for the model.
    pub error: Option<String>,
    /// Facts about the call (line counts, truncation, duration, …).
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(data: impl Into<Value>) -> Self {
        ToolOutput {
            success: true,
            data: data.into(),
            error: None,
            metadata: Map::new(),
        }
    }

    /// A failed result with no data.
    pub fn error(message: impl Into<String>) -> Self {
        ToolOutput {
            success: false,
            data: Value::Null,
            error: Some(message.into()),
            metadata: Map::new(),
        }
    }

    /// Adds (or replaces) one metadata entry.
    pub fn with_meta(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.to_string(), value.into());
        self
    }

    /// Replaces the data.
    pub fn with_data(mut self, data: impl Into<Value>) -> Self {
        self.data = data.into();
        self
    }
}

/// A compiled argument schema. Every built-in checks its arguments with one before acting.
pub struct ArgsValidator {
    validator: Compiled,
}

enum Compiled {
    Now(jsonschema::Validator),
    /// A schema validation has compiled already, compiled again at the tool's first call.
    AtFirstCall {
        schema: Value,
        validator: OnceLock<Result<jsonschema::Validator, String>>,
    },
}

impl ArgsValidator {
    /// Compiles `schema`. Fails when it is not a valid JSON Schema.
    pub fn new(schema: &Value) -> Result<Self, String> {
        Ok(ArgsValidator {
            validator: Compiled::Now(compile_user_schema(schema)?),
        })
    }

    /// The validator of a schema from an agent file, which validation has checked and
    /// compiled (`spec::user_schema`): compiled when the tool is first called. An agent
    /// offers many tools its model never calls, and compiling each schema at start cost
    /// about a third of a million instructions a tool; one that no longer compiles makes
    /// each call a tool error.
    pub(crate) fn at_first_call(schema: Value) -> Self {
        ArgsValidator {
            validator: Compiled::AtFirstCall {
                schema,
                validator: OnceLock::new(),
            },
        }
    }

    fn validator(&self) -> Result<&jsonschema::Validator, &str> {
        match &self.validator {
            Compiled::Now(validator) => Ok(validator),
            Compiled::AtFirstCall { schema, validator } => validator
                .get_or_init(|| compile_user_schema(schema))
                .as_ref()
                .map_err(String::as_str),
        }
    }

    /// Compiles the schema of one of runner's own tools. They use only keywords that mean
    /// the same in every draft, and are compiled as draft-07, the draft of the agent
    /// file's schema: a process sets up each draft it meets once, and draft 2020-12 (the
    /// default, for the schemas users write) costs about 2.5 ms of start-up on its own.
    pub(crate) fn of_built_in(schema: &Value) -> Result<Self, String> {
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft7)
            .build(schema)
            .map_err(|e| format!("invalid parameter schema: {e}"))?;
        Ok(ArgsValidator {
            validator: Compiled::Now(validator),
        })
    }

    /// `Ok` when `arguments` match; otherwise the tool error to return, naming every
    /// violation and where: `invalid arguments: "path" is a required property at /`.
    // The error is the tool's answer, returned as is: boxing it would only add noise.
    #[allow(clippy::result_large_err)]
    pub fn check(&self, arguments: &Value) -> Result<(), ToolOutput> {
        let validator = self.validator().map_err(ToolOutput::error)?;
        let problems: Vec<String> = validator
            .iter_errors(arguments)
            .map(|e| {
                let at = e.instance_path().as_str();
                let at = if at.is_empty() { "/" } else { at };
                format!("{e} at {at}")
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ToolOutput::error(format!(
                "invalid arguments: {}",
                problems.join("; ")
            )))
        }
    }
}

fn compile_user_schema(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::validator_for(schema).map_err(|e| format!("invalid parameter schema: {e}"))
}

#[cfg(any(test, feature = "testing"))]
/// Checks `arguments` against `schema` (compiling it each time; built-ins keep an
/// [`ArgsValidator`] instead).
#[allow(clippy::result_large_err)]
pub fn validate_arguments(schema: &Value, arguments: &Value) -> Result<(), ToolOutput> {
    match ArgsValidator::new(schema) {
        Ok(validator) => validator.check(arguments),
        Err(message) => Err(ToolOutput::error(message)),
    }
}

/// The name, description and compiled schema every built-in carries.
pub(crate) struct Signature {
    pub name: &'static str,
    pub description: String,
    pub parameters: Value,
    pub args: ArgsValidator,
}

impl Signature {
    pub fn new(name: &'static str, description: impl Into<String>, parameters: Value) -> Self {
        let args = ArgsValidator::of_built_in(&parameters)
            .unwrap_or_else(|e| panic!("built-in tool {name} has a bad schema: {e}"));
        Signature {
            name,
            description: description.into(),
            parameters,
            args,
        }
    }
}

impl Signature {
    /// The arguments to act on, or the tool error. A missing argument object (`null`, as
    /// some models send for a call without parameters) counts as `{}`.
    #[allow(clippy::result_large_err)]
    pub fn accept(&self, arguments: Value) -> Result<Value, ToolOutput> {
        let arguments = if arguments.is_null() {
            Value::Object(Map::new())
        } else {
            arguments
        };
        self.args.check(&arguments)?;
        Ok(arguments)
    }
}

/// Reads an optional string argument, `default` when absent.
pub(crate) fn str_arg<'v>(arguments: &'v Value, key: &str, default: &'v str) -> &'v str {
    arguments
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or(default)
}

/// Reads an optional non-negative integer argument.
pub(crate) fn u64_arg(arguments: &Value, key: &str) -> Option<u64> {
    arguments.get(key).and_then(Value::as_u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_schema_compiled_at_the_first_call_checks_as_one_compiled_at_once() {
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        let (now, later) = (
            ArgsValidator::new(&schema).unwrap(),
            ArgsValidator::at_first_call(schema),
        );
        for arguments in [json!({"n": 1}), json!({}), json!({"n": "one"})] {
            let error = |checked: Result<(), ToolOutput>| checked.map_err(|output| output.error);
            assert_eq!(error(later.check(&arguments)), error(now.check(&arguments)));
        }
        assert!(later.check(&json!({})).is_err());
    }

    #[test]
    fn a_schema_that_no_longer_compiles_makes_each_call_a_tool_error() {
        let broken = ArgsValidator::at_first_call(json!({"type": "object", "pattern": "("}));
        for _ in 0..2 {
            let output = broken.check(&json!({})).unwrap_err();
            let error = output.error.unwrap();
            assert!(error.starts_with("invalid parameter schema"), "{error}");
        }
    }
}
