//! A chat (`runner chat`): one prepared agent and one run directory for many turns, each
//! turn a run of the engine's driver over the kept history, with the `run_start` and
//! `run_end` hooks around it as for any run. Limits hold for the whole chat, as for a
//! session; the agent file is reloaded between turns; the session is checkpointed.

use std::sync::Arc;

use super::files::SessionFiles;
use super::hooks::RunHooks;
use super::new_run::resolve_inputs_of;
use super::prepare::{Prepared, Request, Stop, load};
use super::run_dir::RunDir;
use super::watch::{SpecReloader, reloader, swap_between_runs};
use super::{RunRequest, RunSettings};
use crate::compile::run_limits;
use crate::engine::ErrorCode;
use crate::engine::budget::Budget;
use crate::engine::checkpointing::{Checkpointer, Durability};
use crate::engine::clock::new_id;
use crate::engine::run::{RunStart, drive};
use crate::engine::{Agent, AgentState};
use crate::output::result::RunResult;
use crate::provider::Message;
use crate::telemetry::Telemetry;

/// An open chat.
pub struct Conversation {
    prepared: Prepared,
    agent: Agent,
    reloader: Arc<SpecReloader>,
    run_dir: RunDir,
    budget: Arc<Budget>,
    files: Option<Arc<SessionFiles>>,
    state: AgentState,
    /// The export of the turns' spans: held as long as the chat, which flushes it at its end.
    _telemetry: Option<Arc<Telemetry>>,
}

impl Conversation {
    /// Prepares the agent of `request` for a chat (its input text, model and session id
    /// are not used: a chat starts a new session, and each turn's line is its input).
    pub async fn open(request: RunRequest) -> Result<Self, Stop> {
        let spec = load(&request.agent_file)?;
        let inputs = resolve_inputs_of(&spec, &request.inputs)?;
        let (chat_id, session_id) = (new_id(), new_id());
        let files = SessionFiles::open(
            &spec,
            &request.agent_file,
            &session_id,
            inputs.clone(),
            String::new(),
        )
        .map_err(|message| Stop::invalid(ErrorCode::CheckpointDir, message))?;
        let ids = (chat_id, session_id);
        let settings = &request.settings;
        let prepared = Request::new(
            &request.agent_file,
            spec,
            (inputs, String::new()),
            ids,
            settings,
        )?;
        let prepared = Prepared::start(prepared, settings.cancel.receiver()).await?;
        match Self::ready(&prepared, files.as_ref(), settings) {
            Ok((agent, reloader, run_dir, budget)) => Ok(Conversation {
                prepared,
                agent,
                reloader,
                run_dir,
                budget,
                files,
                state: AgentState::initial(),
                _telemetry: settings.telemetry.clone(),
            }),
            Err(stop) => {
                prepared.shutdown().await;
                Err(stop)
            }
        }
    }

    #[allow(clippy::type_complexity)]
    fn ready(
        prepared: &Prepared,
        files: Option<&Arc<SessionFiles>>,
        settings: &RunSettings,
    ) -> Result<(Agent, Arc<SpecReloader>, RunDir, Arc<Budget>), Stop> {
        // Before any turn: `/save` may checkpoint first.
        if let Some(files) = files {
            files.keep_tree(&prepared.tree);
        }
        let agent = prepared.compile()?;
        let reloader = reloader(prepared, settings.allow_widening)?;
        let mut sinks = settings.sinks.clone();
        let spec = &prepared.spec;
        // One subscriber for every turn: each turn's trace links to the first's.
        let spans = settings.telemetry.as_ref();
        let trace = super::run::run_trace(settings, prepared, files);
        sinks
            .extend(spans.and_then(|t| t.subscriber(spec.telemetry.as_ref(), &spec.redact, trace)));
        let run_dir = RunDir::open(settings.run_dir.as_ref(), &prepared.ids.0, &sinks)?;
        // Limits hold for the whole chat, as for a session.
        let budget = Arc::new(Budget::new(run_limits(&prepared.spec.limits)));
        Ok((agent, reloader, run_dir, budget))
    }

    pub fn agent_name(&self) -> &str {
        &self.prepared.spec.name
    }

    pub fn session_id(&self) -> &str {
        &self.prepared.ids.1
    }

    /// One turn: `line` as the next user message. A refusing `run_start` hook is the
    /// stop (the chat goes on); `Ok(None)`: the turn left no result.
    pub async fn turn(&mut self, line: &str) -> Result<Option<RunResult>, Stop> {
        let (chat_id, session_id) = self.prepared.ids.clone();
        let name = self.prepared.spec.name.clone();
        let emitter = self.run_dir.emitter(&name, chat_id, &session_id);
        swap_between_runs(&*self.reloader, &mut self.agent, &emitter, self.state.step);
        let run_id = new_id();
        let hooks = RunHooks::new(
            &self.agent,
            &self.prepared.cancel,
            self.run_dir.dir.as_deref(),
        );
        hooks.start((&run_id, &session_id), &name).await?;
        let emitter = self.run_dir.emitter(&name, run_id, &session_id);
        let ctx = self.prepared.context(
            emitter,
            self.budget.clone(),
            (self.files.clone(), self.run_dir.dir.as_deref()),
        );
        let start = RunStart {
            opening: vec![Message::user(line)],
            settle: None,
            session_id: Some(session_id),
        };
        let mut state = std::mem::take(&mut self.state);
        // UAP §3.4: a conversation that keeps checkpoints says its session in the state.
        if self.files.is_some() {
            let session_id = serde_json::Value::from(self.prepared.ids.1.as_str());
            state = state.with_metadata("sessionId", session_id);
        }
        self.state = drive(&self.agent, start, state, &ctx).await.state;
        let Some(result) = self.run_dir.finish() else {
            return Ok(None);
        };
        hooks.end(&result).await;
        Ok(Some(result))
    }

    /// Clears the history.
    pub fn reset(&mut self) {
        self.state = AgentState::initial();
    }

    /// Checkpoints the history now; `None` when the agent keeps no checkpoints.
    pub fn save(&self) -> Option<Result<String, super::files::SaveError>> {
        let files = self.files.as_ref()?;
        Some(files.save(&self.state, None, Durability::Now))
    }

    /// Stops the agent's MCP servers.
    pub async fn close(self) {
        self.prepared.shutdown().await;
    }
}
