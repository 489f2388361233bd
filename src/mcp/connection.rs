//! One live MCP server: connected, initialised, its tools listed, ready for calls, and
//! closed at the end of the run. The rmcp types stay inside this file.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitationCapability,
    FormElicitationCapability, Implementation, ProtocolVersion,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{Peer, RoleClient, ServiceExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;

use super::cassette::{McpRecorder, McpReplay};
use super::client::{CallOutcome, RunnerClient, call_with_progress};
use super::endpoint::Endpoint;
use super::oversized::{MAX_MESSAGE_BYTES, Oversized};
use super::process::{ServerProcess, spawn};
use super::progress::ProgressBoard;
use crate::provider::CassetteRecorder;
use crate::sandbox::{self, Confine, Sandbox};
use crate::spec::sandbox::SandboxSpec;
use crate::sync::lock;
use crate::tools::{AnswerSource, ChildEnv, FormRequest, Protected, ToolContext, stopped};
use crate::trace_env::ChildTrace;

/// A tool as the server lists it (and as a cassette records it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The server's own JSON Schema of the arguments.
    pub input_schema: Value,
    /// The server says calling it twice with the same arguments does no more harm.
    #[serde(default)]
    pub idempotent: bool,
}

/// Why a server could not be used.
#[derive(Debug, Clone)]
pub struct StartError {
    /// The server, as messages name it (command line or URL).
    pub server: String,
    pub kind: StartErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartErrorKind {
    /// The agent file is wrong (no such program, a bad URL or header, an unknown tool
    /// name): exit 2.
    Config,
    /// The server started but failed, or never answered: exit 1.
    Failed,
    /// The run was interrupted while connecting: exit 130.
    Interrupted,
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MCP server `{}`: {}", self.server, self.message)
    }
}

/// What opening a connection needs besides the endpoint.
pub struct OpenOptions<'a> {
    /// Bound on start-up: spawning or connecting, `initialize` and `tools/list`.
    pub timeout: Duration,
    /// The working directory of stdio servers.
    pub workspace: &'a Path,
    /// What a sandboxed server may not write or read.
    pub protected: &'a Protected,
    /// What a stdio server is started with, and the run's trace (a header over HTTP).
    pub env: &'a ChildEnv,
    /// The run's stop signal.
    pub cancel: watch::Receiver<bool>,
    /// Who answers the server's forms (`elicitation/create`).
    pub answers: &'a [Arc<dyn AnswerSource>],
    /// Live, recorded into a cassette, or replayed from one.
    pub cassette: &'a McpCassette,
}

/// What `--record` and `--replay` make of MCP servers.
#[derive(Clone, Default)]
pub enum McpCassette {
    /// The servers run, and nothing is kept.
    #[default]
    Live,
    /// The servers run, and their tool lists and calls go into the run's cassette.
    Record(Arc<CassetteRecorder>),
    /// No server runs: tool lists and results come from the cassette.
    Replay(Arc<McpReplay>),
}

/// A server ready for calls: connected, or replayed from a cassette.
pub struct Connection {
    pub label: String,
    pub tools: Vec<ServerTool>,
    backend: Backend,
    /// With `--record`: where its exchanges go.
    recorder: Option<McpRecorder>,
}

enum Backend {
    Live(Box<Session>),
    Replayed(Arc<McpReplay>),
}

/// A live server's session and, for a stdio server, its process.
struct Session {
    peer: Peer<RoleClient>,
    /// Routes the server's progress notifications to the calls they are about.
    progress: ProgressBoard,
    /// A form the server asked during a call that nobody could answer.
    unanswered: Arc<std::sync::Mutex<Option<FormRequest>>>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, RunnerClient>>>,
    process: Option<ServerProcess>,
}

impl Connection {
    /// The server ready for calls: started or reached, initialised and its tools listed,
    /// all within `options.timeout`, and recorded with `--record`; with `--replay`, its
    /// recorded tools, and no server at all.
    pub async fn open(endpoint: &Endpoint, options: OpenOptions<'_>) -> Result<Self, StartError> {
        let label = endpoint.label();
        let mut connection = match options.cassette {
            McpCassette::Replay(replay) => {
                let tools = replay.tools(&label).map_err(|message| StartError {
                    server: label.clone(),
                    kind: StartErrorKind::Config,
                    message,
                })?;
                return Ok(Connection {
                    label,
                    tools,
                    backend: Backend::Replayed(replay.clone()),
                    recorder: None,
                });
            }
            McpCassette::Live | McpCassette::Record(_) => Self::start(endpoint, &options).await?,
        };
        if let McpCassette::Record(cassette) = options.cassette {
            let recorder = McpRecorder::new(cassette.clone(), &label, endpoint.settings());
            recorder.tools(&connection.tools);
            connection.recorder = Some(recorder);
        }
        Ok(connection)
    }

    /// Starts or reaches the server, initialises the session and lists its tools.
    async fn start(endpoint: &Endpoint, options: &OpenOptions<'_>) -> Result<Self, StartError> {
        let label = endpoint.label();
        // `env` and `headers` values carry tokens: no log line may show them.
        for (_, value) in endpoint.settings() {
            crate::log::secret(value);
        }
        tracing::debug!(server = %label, "starting the MCP server");
        let fail = |kind, message: String| StartError {
            server: label.clone(),
            kind,
            message,
        };
        match endpoint {
            Endpoint::Stdio {
                command,
                args,
                env,
                sandbox,
            } => {
                let confined =
                    confine(sandbox, options).map_err(|m| fail(StartErrorKind::Config, m))?;
                let spawned = spawn(command, args, env, options.workspace, options.env, confined)
                    .map_err(|error| {
                    fail(StartErrorKind::Config, spawn_problem(command, &error))
                })?;
                // An answer too large for the SDK fails its call instead of being lost.
                let transport =
                    AsyncRwTransport::new_client(Oversized::new(spawned.stdout), spawned.stdin)
                        .with_max_line_length(MAX_MESSAGE_BYTES);
                let process = spawned.process;
                match handshake(transport, &label, options).await {
                    Ok((service, tools)) => {
                        Ok(Connection::live(label, service, tools, Some(process)))
                    }
                    Err(problem) => {
                        let message = stdio_problem(&process, problem, options.timeout).await;
                        Err(fail(StartErrorKind::Failed, message).interrupted_if(options))
                    }
                }
            }
            Endpoint::Http { url, headers } => {
                let config = http_config(url, headers, &options.env.trace)
                    .map_err(|m| fail(StartErrorKind::Config, m))?;
                let client = crate::provider::http_client(options.timeout, url)
                    .map_err(|m| fail(StartErrorKind::Config, m))?;
                let transport = StreamableHttpClientTransport::with_client(client, config);
                match handshake(transport, &label, options).await {
                    Ok((service, tools)) => Ok(Connection::live(label, service, tools, None)),
                    Err(problem) => {
                        let message = problem.describe(options.timeout);
                        Err(fail(StartErrorKind::Failed, message).interrupted_if(options))
                    }
                }
            }
        }
    }

    fn live(
        label: String,
        service: RunningService<RoleClient, RunnerClient>,
        tools: Vec<ServerTool>,
        process: Option<ServerProcess>,
    ) -> Self {
        let session = Session {
            peer: service.peer().clone(),
            progress: service.service().progress.clone(),
            unanswered: service.service().unanswered.clone(),
            service: tokio::sync::Mutex::new(Some(service)),
            process,
        };
        Connection {
            label,
            tools,
            backend: Backend::Live(Box::new(session)),
            recorder: None,
        }
    }

    /// Calls a tool: `Ok` with the `tools/call` result as JSON (including results with
    /// `isError`), `Err` when the server could not be asked or did not answer properly. The
    /// progress the server reports for the call goes to `context`. Recorded with `--record`;
    /// answered from the cassette with `--replay`.
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        context: &ToolContext,
    ) -> Result<Value, String> {
        let outcome = match &self.backend {
            Backend::Live(session) => match &self.recorder {
                Some(_) => session.call(name, arguments.clone(), context).await,
                None => return session.call(name, arguments, context).await,
            },
            Backend::Replayed(replay) => return replay.call(&self.label, name, &arguments),
        };
        if let Some(recorder) = &self.recorder {
            recorder.call(name, &arguments, &outcome);
        }
        outcome
    }

    /// Ends the session and stops the server process (stdin closed, then SIGTERM, then
    /// SIGKILL for its whole process group). Safe to call twice.
    pub async fn close(&self) {
        if let Backend::Live(session) = &self.backend {
            session.close().await;
        }
    }
}

impl Session {
    async fn call(
        &self,
        name: &str,
        arguments: Value,
        context: &ToolContext,
    ) -> Result<Value, String> {
        let arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => Default::default(),
            other => return Err(format!("the arguments must be a JSON object, not {other}")),
        };
        let params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments);
        let outcome = call_with_progress(&self.peer, &self.progress, params, context).await;
        // A form nobody answered during the call: the run pauses on it (the server heard
        // "cancel", so its result says nothing the model needs).
        let form = lock(&self.unanswered).take();
        if let Some(form) = form {
            context.wait_for_form(form);
        }
        match outcome {
            Ok(CallOutcome::Done(result)) => {
                serde_json::to_value(&result).map_err(|e| format!("unreadable result: {e}"))
            }
            Ok(CallOutcome::Other(problem)) => Err(problem.into()),
            Err(error) => Err(self.call_problem(error.to_string()).await),
        }
    }

    /// A failed call's message; for a stdio server that has gone, how it ended and the end
    /// of its stderr.
    async fn call_problem(&self, error: String) -> String {
        let Some(process) = &self.process else {
            return error;
        };
        if !self.peer.is_transport_closed() {
            return error;
        }
        let message = match process.exited_within(Duration::from_millis(200)).await {
            Some(status) => format!("{error}; the server exited ({status})"),
            None => format!("{error}; the server closed the connection"),
        };
        with_stderr(message, &process.stderr_tail().await)
    }

    async fn close(&self) {
        if let Some(mut service) = self.service.lock().await.take() {
            let _ = service.close_with_timeout(Duration::from_secs(2)).await;
        }
        if let Some(process) = &self.process {
            process.stop().await;
        }
    }
}

/// Why a handshake failed.
enum Problem {
    TimedOut,
    Interrupted,
    Protocol(String),
}

impl Problem {
    fn describe(&self, timeout: Duration) -> String {
        match self {
            Problem::TimedOut => format!(
                "did not answer `initialize` and `tools/list` within {}s (raise `startup_timeout` if it is just slow)",
                timeout.as_secs_f64()
            ),
            Problem::Interrupted => "interrupted while starting".into(),
            Problem::Protocol(message) => message.clone(),
        }
    }
}

impl StartError {
    fn interrupted_if(mut self, options: &OpenOptions<'_>) -> Self {
        if *options.cancel.borrow() {
            self.kind = StartErrorKind::Interrupted;
        }
        self
    }
}

/// `initialize` then `tools/list`, bounded by the start-up timeout and the stop signal.
async fn handshake<T, E, A>(
    transport: T,
    server: &str,
    options: &OpenOptions<'_>,
) -> Result<(RunningService<RoleClient, RunnerClient>, Vec<ServerTool>), Problem>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    // The newest version that still has the `initialize` handshake: rmcp's `LATEST`
    // (2026-07-28) has none, and servers that do not know it fail the handshake.
    // Forms only: a form is put to the person (or the answers file); a URL to open is not.
    let mut capabilities = ClientCapabilities::default();
    capabilities.elicitation =
        Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
    let info = ClientConfig::new(
        capabilities,
        Implementation::new("runner", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
    let client = RunnerClient {
        info,
        progress: ProgressBoard::default(),
        server: server.to_string(),
        answers: options.answers.to_vec(),
        unanswered: Arc::default(),
    };
    let work =
        async {
            let service = client.serve(transport).await.map_err(|e| {
                Problem::Protocol(format!("`initialize` failed: {}", init_problem(&e)))
            })?;
            let tools =
                service.peer().list_all_tools().await.map_err(|e| {
                    Problem::Protocol(format!("`tools/list` failed: {}", chain(&e)))
                })?;
            Ok((service, tools.into_iter().map(server_tool).collect()))
        };
    tokio::select! {
        outcome = tokio::time::timeout(options.timeout, work) => {
            outcome.unwrap_or(Err(Problem::TimedOut))
        }
        _ = stopped(&options.cancel) => Err(Problem::Interrupted),
    }
}

fn server_tool(tool: rmcp::model::Tool) -> ServerTool {
    ServerTool {
        description: tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or_default()
            .to_string(),
        input_schema: Value::Object((*tool.input_schema).clone()),
        idempotent: tool
            .annotations
            .as_ref()
            .and_then(|a| a.idempotent_hint)
            .unwrap_or(false),
        name: tool.name.into_owned(),
    }
}

/// The message for a stdio server that failed its handshake: whether it exited, and what
/// it said on stderr. The server is killed first, so its stderr is complete.
async fn stdio_problem(process: &ServerProcess, problem: Problem, timeout: Duration) -> String {
    let exited = match problem {
        Problem::TimedOut | Problem::Interrupted => None,
        Problem::Protocol(_) => process.exited_within(Duration::from_millis(200)).await,
    };
    process.kill_now().await;
    let mut message = match exited {
        Some(status) => format!("exited ({status}) before answering `initialize`"),
        None => problem.describe(timeout),
    };
    let tail = process.stderr_tail().await;
    if tail.is_empty() {
        message.push_str(" (it wrote nothing to stderr)");
        return message;
    }
    with_stderr(message, &tail)
}

/// The message followed by the end of the server's stderr, when it wrote any.
fn with_stderr(mut message: String, tail: &str) -> String {
    if !tail.is_empty() {
        message.push_str(&format!(". Its stderr ends with:\n{tail}"));
    }
    message
}

/// What a stdio server under `specs` applies to itself before it starts: `None` without a
/// sandbox, or where the kernel cannot enforce one that is not `required` (a warning then).
fn confine(
    specs: &[SandboxSpec],
    options: &OpenOptions<'_>,
) -> Result<Option<sandbox::Prepared>, String> {
    let specs: Vec<&SandboxSpec> = specs.iter().collect();
    let Some(sandbox) = Sandbox::new(&specs, options.workspace) else {
        return Ok(None);
    };
    sandbox.check_at_start()?;
    let confine = Confine {
        workspace: sandbox::canonical(options.workspace),
        hidden: sandbox::hidden_paths(options.protected.state_dirs()),
        read_only: options.protected.files(),
    };
    let prepared = sandbox.prepare(&confine)?;
    if prepared.is_none() {
        sandbox::unavailable(&sandbox);
    }
    Ok(prepared)
}

fn spawn_problem(command: &str, error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => format!(
            "cannot start `{command}`: program not found (check `command`; it is looked up on PATH)"
        ),
        std::io::ErrorKind::PermissionDenied => {
            format!("cannot start `{command}`: permission denied (is it executable?)")
        }
        _ => format!("cannot start `{command}`: {error}"),
    }
}

/// The transport's settings: the URL checked, the headers as sensitive values, and the
/// run's trace as `traceparent`.
fn http_config(
    url: &str,
    headers: &[(String, String)],
    trace: &ChildTrace,
) -> Result<StreamableHttpClientTransportConfig, String> {
    use reqwest::header::{HeaderName, HeaderValue};
    match reqwest::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => {}
        Ok(parsed) => {
            return Err(format!(
                "`url` must be http or https, not `{}`",
                parsed.scheme()
            ));
        }
        Err(error) => return Err(format!("`url` is not a valid URL: {error}")),
    }
    let mut map = HashMap::new();
    for (name, value) in headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("header `{name}` is not a valid header name"))?;
        // The message never repeats the value: it usually carries a token.
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            format!("the value of header `{name}` is not a valid header value (after rendering)")
        })?;
        value.set_sensitive(true);
        map.insert(header, value);
    }
    // With OpenTelemetry export on, the server's spans join the run's trace; a header the
    // file sets wins.
    for (name, value) in trace.headers() {
        if let Ok(value) = HeaderValue::from_str(&value) {
            map.entry(HeaderName::from_static(name)).or_insert(value);
        }
    }
    Ok(StreamableHttpClientTransportConfig::with_uri(url).custom_headers(map))
}

/// What went wrong in `initialize`, without the SDK's type names: for a transport error, the
/// underlying (HTTP or I/O) error and its causes.
fn init_problem(error: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError;
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    match error {
        ClientInitializeError::TransportError { error, .. } => {
            match error
                .error
                .downcast_ref::<StreamableHttpError<reqwest::Error>>()
            {
                Some(StreamableHttpError::Client(http)) => chain(http),
                Some(StreamableHttpError::AuthRequired(_)) => AUTH_REQUIRED.into(),
                Some(StreamableHttpError::InsufficientScope(_)) => {
                    "the server answered 403 Forbidden: the credentials in `headers` lack a scope it needs".into()
                }
                // A 401 or 403 without a `WWW-Authenticate` challenge means the same.
                Some(StreamableHttpError::UnexpectedServerResponse(message)) => {
                    match message.split_whitespace().nth(1) {
                        Some("401") => AUTH_REQUIRED.into(),
                        Some("403") => FORBIDDEN.into(),
                        _ => format!("unexpected server response: {message}"),
                    }
                }
                Some(other) => chain(other),
                None => chain(&*error.error),
            }
        }
        ClientInitializeError::ExpectedInitResponse(None) => {
            "the server closed the connection without answering".into()
        }
        other => chain(other),
    }
}

/// A 403 without a challenge: the credentials given are refused.
const FORBIDDEN: &str = "the server answered 403 Forbidden: the credentials in the entry's `headers` are refused or lack a scope it needs (runner does not do OAuth; give a token with `headers: { Authorization: \"Bearer {{ env.MCP_TOKEN }}\" }`, with MCP_TOKEN listed under the agent's `env:`)";

/// What a 401 means for an agent file: runner has no OAuth flow, so the token goes in the
/// entry's headers, from the environment.
const AUTH_REQUIRED: &str = "the server answered 401 Unauthorized: it wants credentials, and runner does not do OAuth. Give a token in the entry's `headers`, e.g. `headers: { Authorization: \"Bearer {{ env.MCP_TOKEN }}\" }`, with MCP_TOKEN listed under the agent's `env:`";

/// An error and its sources, `: `-joined (reqwest hides the cause, e.g. "connection
/// refused", one level down).
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
