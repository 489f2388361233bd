//! The MCP methods: `initialize` (tools only), `tools/list` (the agents, and
//! `runner_resume` for a client that cannot elicit) and `tools/call` (a run). `ping` and
//! `notifications/cancelled` are the SDK's: a cancelled call's token is what
//! `call` watches.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{ElicitationMode, Peer, RequestContext, RoleServer};
use serde_json::{Map, Value};

use super::call::Call;
use super::host::Host;
use super::tools::{self, Arguments, RESUME};
use super::{MAX_ARGUMENTS, reply};
use crate::engine::events::RequiredAction;
use crate::serve::agents::AgentEntry;
use crate::session::files::{default_sessions_dir, sessions_at};
use crate::session::{self, InputText, Inputs, RunRequest, SessionsAt};
use crate::spec::load::load_agent;

/// How many paused sessions the server remembers for `runner_resume` (what each waits
/// for, and where it is kept); an older one is found in `.runner/sessions`.
const KEEP_PAUSED: usize = 256;

/// The agents under the served paths, as MCP tools. One per connection (clones share the
/// paused sessions).
#[derive(Clone)]
pub struct Agents {
    host: Host,
    paused: Arc<Mutex<VecDeque<Paused>>>,
}

struct Paused {
    session_id: String,
    sessions: Option<SessionsAt>,
    action: RequiredAction,
}

impl Agents {
    pub fn new(host: Host) -> Self {
        Agents {
            host,
            paused: Arc::default(),
        }
    }

    async fn entries(&self) -> Result<Vec<AgentEntry>, ErrorData> {
        let host = self.host.clone();
        tokio::task::spawn_blocking(move || host.catalog().list())
            .await
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?
            .map_err(|error| ErrorData::internal_error(error, None))
    }

    fn remember(&self, session_id: &str, sessions: Option<&SessionsAt>, action: &RequiredAction) {
        let mut paused = crate::sync::lock(&self.paused);
        paused.retain(|p| p.session_id != session_id);
        paused.push_back(Paused {
            session_id: session_id.to_string(),
            sessions: sessions.cloned(),
            action: action.clone(),
        });
        while paused.len() > KEEP_PAUSED {
            paused.pop_front();
        }
    }

    fn call(&self, context: &RequestContext<RoleServer>, sessions: Option<SessionsAt>) -> Call {
        Call {
            host: self.host.clone(),
            peer: context.peer.clone(),
            progress: context.meta.get_progress_token(),
            cancelled: context.ct.clone(),
            elicit: can_elicit(&context.peer),
            sessions,
            object_output: None,
        }
    }

    /// A call of an agent's tool: a new run with the call's arguments.
    async fn run_agent(
        &self,
        entry: AgentEntry,
        arguments: Option<Map<String, Value>>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let file = PathBuf::from(&entry.file);
        let loaded = {
            let file = file.clone();
            tokio::task::spawn_blocking(move || load_agent(&file)).await
        };
        let Ok(Ok((spec, _))) = loaded else {
            return reply::error(&format!("{}: {}", entry.name, entry.diagnostics.join("\n")));
        };
        let arguments = match tools::arguments_of(!spec.inputs.is_empty(), arguments) {
            Ok(arguments) => arguments,
            Err(message) => return reply::error(&format!("invalid_input: {message}")),
        };
        let remote = self.host.new_run_sessions();
        let mut call = self.call(context, sessions_at(&spec, remote.as_ref()));
        call.object_output = entry.output_schema.as_ref().map(tools::is_object_schema);
        let slot = match self.host.slot().await {
            Ok(slot) => slot,
            Err(message) => return reply::error(&message),
        };
        let (inputs, input) = match arguments {
            Arguments::Inputs(values) => (Inputs::Values(values), String::new()),
            Arguments::Text(text) => (Inputs::Values(Map::new()), text),
        };
        let started = session::start(RunRequest {
            inputs,
            input: InputText::Text(input),
            sessions: remote,
            settings: self.host.settings_for(context),
            ..RunRequest::new(file)
        })
        .await;
        let handle = match started {
            Ok(handle) => handle,
            Err(stop) => return reply::error(&format!("{}: {}", stop.code.name(), stop.message)),
        };
        let going = self.host.host(handle, slot);
        let sessions = call.sessions.clone();
        call.follow(going, |id, action| {
            self.remember(id, sessions.as_ref(), action)
        })
        .await
    }

    /// `runner_resume`: continues a paused (or interrupted) session.
    async fn resume(
        &self,
        arguments: Option<Map<String, Value>>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let arguments = arguments.unwrap_or_default();
        let Some(session_id) = arguments.get("session_id").and_then(Value::as_str) else {
            return reply::error("invalid_input: `session_id` (a string) is required");
        };
        if let Err(error) = crate::checkpoint::check_session_id(session_id) {
            return reply::error(&format!("invalid_input: {error}"));
        }
        let known = {
            let paused = crate::sync::lock(&self.paused);
            let found = paused.iter().find(|p| p.session_id == session_id);
            found.map(|p| (p.sessions.clone(), p.action.clone()))
        };
        let (sessions, action) = match known {
            Some((sessions, action)) => (sessions, Some(action)),
            None => (Some(SessionsAt::Dir(default_sessions_dir())), None),
        };
        let answer = match answer_of(&arguments, action.as_ref()) {
            Ok(answer) => answer,
            Err(message) => return reply::error(&format!("invalid_input: {message}")),
        };
        let call = self.call(context, sessions.clone());
        let going = match call.resume(session_id.to_string(), answer).await {
            Ok(going) => going,
            Err(message) => return reply::error(&message),
        };
        call.follow(going, |id, action| {
            self.remember(id, sessions.as_ref(), action)
        })
        .await
    }
}

/// `runner_resume`'s `answer`, `approve` (with `reason`), or `tool_outputs`, as the
/// session's answer.
fn answer_of(
    arguments: &Map<String, Value>,
    action: Option<&RequiredAction>,
) -> Result<Option<session::Answer>, String> {
    if let Some(outputs) = arguments.get("tool_outputs").and_then(Value::as_object) {
        if arguments.contains_key("answer") || arguments.contains_key("approve") {
            return Err("give `tool_outputs` alone".into());
        }
        let each = outputs
            .iter()
            .map(|(id, output)| session::SubmittedOutput::new(id.clone(), output.clone()));
        return Ok(Some(session::Answer::Outputs(each.collect())));
    }
    let text = arguments.get("answer").and_then(Value::as_str);
    let approve = arguments.get("approve").and_then(Value::as_bool);
    let reason = arguments
        .get("reason")
        .and_then(Value::as_str)
        .map(str::to_string);
    match (text, approve, action) {
        (Some(_), Some(_), _) => Err("give `answer` or `approve`, not both".into()),
        (Some(text), None, _) => Ok(Some(session::Answer::Text(text.to_string()))),
        (None, Some(approve), Some(action)) => Ok(Some(super::pause::decide(approve, action, reason))),
        (None, Some(true), None) => Ok(Some(session::Answer::Decide {
            approve: vec!["all".into()],
            deny: Vec::new(),
        })),
        (None, Some(false), None) => Err(
            "this server does not know which calls the session waits on: deny them with `runner resume --deny`".into(),
        ),
        (None, None, _) => Ok(None),
    }
}

/// Whether the client declared form elicitation.
fn can_elicit(peer: &Peer<RoleServer>) -> bool {
    peer.supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
}

impl ServerHandler for Agents {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("runner", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Each tool runs an agent (a YAML agent file) to its answer. A run that pauses \
                 on a question or an approval asks you through elicitation, or, if you cannot \
                 elicit, says so and is continued with `runner_resume`.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let entries = self.entries().await?;
        let mut tools = tokio::task::spawn_blocking(move || tools::agent_tools(&entries))
            .await
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        if !can_elicit(&context.peer) {
            tools.push(tools::resume_tool());
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let size = serde_json::to_vec(&request.arguments).map_or(0, |json| json.len());
        if size > MAX_ARGUMENTS {
            return Err(ErrorData::invalid_params(
                format!("the arguments are {size} bytes: at most {MAX_ARGUMENTS} are taken"),
                None,
            ));
        }
        if request.name == RESUME && !can_elicit(&context.peer) {
            return Ok(self.resume(request.arguments, &context).await.into());
        }
        let entries = self.entries().await?;
        let entry = tools::agent_tools_entry(&entries, &request.name).ok_or_else(|| {
            ErrorData::invalid_params(format!("no tool `{}`", request.name), None)
        })?;
        Ok(self
            .run_agent(entry, request.arguments, &context)
            .await
            .into())
    }
}
