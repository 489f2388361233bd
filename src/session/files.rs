//! The CLI's checkpointer: saves the root agent's state into the file store after every
//! step, with what `runner resume` needs to rebuild the run (the inputs, the input text,
//! and the engine's pending data), and keeps the session's metadata current. It holds the
//! session's lock for as long as it lives, so no other process runs the session meanwhile.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use super::resume_data::ResumeData;
use crate::checkpoint::{
    CheckpointError, CheckpointRef, CheckpointStore, PendingFields, SessionHold, SessionMetadata,
    SessionStatus,
};
use crate::engine::AgentState;
pub use crate::engine::checkpointing::SaveError;
use crate::engine::checkpointing::{Checkpointer, Durability};
use crate::engine::clock::{new_id, now_rfc3339};
use crate::engine::outcome::RunStatus;
use crate::engine::pending::Pending;
use crate::nats::SessionsAt;
use crate::spec::AgentSpec;
use crate::spec::agent::Checkpoints;
use crate::spec::model::ModelRef;
use crate::spec::tree::AgentTree;
use crate::sync::lock;
use crate::trace_env::Carried;

/// Where an agent's sessions live: `checkpoints: {dir}`, or `.runner/sessions`; `None` when
/// the agent turned checkpoints off.
pub fn sessions_dir(spec: &AgentSpec) -> Option<PathBuf> {
    match &spec.checkpoints {
        Some(Checkpoints::Enabled(false)) => None,
        Some(Checkpoints::Dir(dir)) => Some(PathBuf::from(&dir.dir)),
        _ => Some(default_sessions_dir()),
    }
}

pub fn default_sessions_dir() -> PathBuf {
    Path::new(".runner").join("sessions")
}

/// Where `spec`'s sessions go: where the command line says (`remote`: NATS), else its
/// directory; `None` when the agent keeps no checkpoints.
pub fn sessions_at(spec: &AgentSpec, remote: Option<&SessionsAt>) -> Option<SessionsAt> {
    let dir = sessions_dir(spec)?;
    Some(remote.cloned().unwrap_or(SessionsAt::Dir(dir)))
}

/// Saves one session's checkpoints.
pub struct SessionFiles {
    store: Box<dyn CheckpointStore>,
    metadata: Mutex<SessionMetadata>,
    /// A checkpoint's `pending`: the [`ResumeData`], encoded once; each save sets only
    /// `engine`, `keep_model` and `keep_tree` add theirs.
    pending: Mutex<PendingFields>,
    /// Held until these files are dropped, at the end of the command.
    hold: SessionHold,
    /// Begun by this process and not saved yet: nothing of the session is stored.
    unsaved: AtomicBool,
}

impl SessionFiles {
    /// Starts a new session's files for `spec` (`None` when it keeps no checkpoints), in
    /// NATS when `remote` says so, holding it; refused when the session exists already or
    /// another process holds it.
    pub fn create(
        (spec, remote): (&AgentSpec, Option<&SessionsAt>),
        agent_file: &Path,
        session_id: &str,
        inputs: Map<String, Value>,
        input_text: String,
    ) -> Result<Option<Arc<Self>>, CheckpointError> {
        let Some(at) = sessions_at(spec, remote) else {
            return Ok(None);
        };
        let store = at.open()?;
        let lock = store.hold(session_id)?;
        // Under the lock, so no other run can be creating the session meanwhile.
        store.begin_new(session_id)?;
        let now = now_rfc3339();
        let metadata = SessionMetadata {
            version: 1,
            session_id: session_id.to_string(),
            agent: spec.name.clone(),
            agent_id: Some(crate::spec::agent_id::agent_id(agent_file, &spec.name)),
            agent_file: agent_file.display().to_string(),
            created: now.clone(),
            updated: now,
            status: SessionStatus::Running,
            steps: 0,
            run_ids: Vec::new(),
            parent: None,
            branch_name: None,
            thread_tree: crate::checkpoint::ThreadTree::new(session_id),
            journal_offset: None,
        };
        let kept = ResumeData {
            inputs,
            input_text,
            definition: Some(spec.clone()),
            ..ResumeData::default()
        };
        let files = Self::new(store, metadata, &kept, lock);
        files.unsaved.store(true, Ordering::SeqCst);
        Ok(Some(files))
    }

    /// [`SessionFiles::create`] for callers that report only a message (`chat` and
    /// `RunFile`, whose session ids are new ones).
    pub fn open(
        spec: &AgentSpec,
        agent_file: &Path,
        session_id: &str,
        inputs: Map<String, Value>,
        input_text: String,
    ) -> Result<Option<Arc<Self>>, String> {
        Self::create((spec, None), agent_file, session_id, inputs, input_text)
            .map_err(|error| format!("cannot use the checkpoint directory: {error}"))
    }

    /// The files of a session held by `hold` (a resume's, or a new branch's), keeping
    /// `kept` (the inputs, the input text and the definition) in each checkpoint.
    pub fn new(
        store: Box<dyn CheckpointStore>,
        metadata: SessionMetadata,
        kept: &ResumeData,
        hold: SessionHold,
    ) -> Arc<Self> {
        Arc::new(SessionFiles {
            store,
            metadata: Mutex::new(metadata),
            pending: Mutex::new(PendingFields::from_value(kept.to_value())),
            hold,
            unsaved: AtomicBool::new(false),
        })
    }

    /// Keeps the model `--model` chose in each checkpoint, so the session's runs all use it.
    pub fn keep_model(&self, model: &ModelRef) {
        keep(&mut lock(&self.pending), "model", model);
    }

    /// Keeps `span`, the `invoke_agent` span of the session's first run that exported spans,
    /// in each checkpoint, unless one is kept already: later runs link to it.
    pub fn keep_first_trace(&self, span: &Carried) {
        let mut pending = lock(&self.pending);
        if pending.get("trace").is_none_or(|kept| kept.get() == "null") {
            keep(&mut pending, "trace", span);
        }
    }

    /// The span [`SessionFiles::keep_first_trace`] kept (or the checkpoint resumed had).
    pub fn first_trace(&self) -> Option<Carried> {
        let pending = lock(&self.pending);
        pending.read("trace")
    }

    /// Keeps the agent files of the tree the session runs under in each checkpoint, so a
    /// resume applies the widening rule to sub-agent and handoff files too.
    pub fn keep_tree(&self, tree: &AgentTree) {
        keep(&mut lock(&self.pending), "tree", &tree.kept());
    }

    /// Lists run `run_id` in the session's metadata as the run starts, so a run that
    /// crashes is listed too. A session that has no files yet gets them, this run listed,
    /// with its first checkpoint: before that there is nothing to resume.
    pub fn begin(&self, run_id: &str) {
        let metadata = {
            let mut metadata = lock(&self.metadata);
            list_run(&mut metadata, run_id);
            metadata.status = SessionStatus::Running;
            metadata.updated = now_rfc3339();
            metadata.clone()
        };
        let saved = match self.unsaved.load(Ordering::SeqCst) {
            true => Ok(()),
            false => match self.store.exists(&metadata.session_id) {
                Ok(true) => self.store.save_metadata(&metadata),
                other => other.map(|_| ()),
            },
        };
        // Not fatal: the run's first checkpoint writes the metadata again, this run listed.
        if let Err(error) = saved {
            eprintln!("warning: the session does not list this run yet: {error}");
        }
    }

    fn write(
        &self,
        state: &AgentState,
        status: SessionStatus,
        pending: Option<&Pending>,
        durability: Durability,
    ) -> Result<String, SaveError> {
        if self.hold.is_lost() {
            return Err(SaveError::Lost);
        }
        let session_id = self.session_id();
        let (checkpoint_id, timestamp, agent) = (new_id(), now_rfc3339(), self.agent());
        let mut kept = lock(&self.pending);
        kept.set("engine", &pending)?;
        let pending = &*kept;
        let checkpoint = CheckpointRef {
            version: 1,
            session_id: &session_id,
            checkpoint_id: &checkpoint_id,
            timestamp: &timestamp,
            step: state.step,
            agent: &agent,
            status,
            state,
            pending: Some(pending),
            journal: None,
        };
        let saved = self
            .store
            .save(&session_id, &checkpoint, durability)
            .map_err(store_error)?;
        // The journal's records say the steps and status of a run in progress: the metadata
        // is rewritten when the store says (with each snapshot, not at every step). It goes
        // before the snapshot: a crash between the two must not leave a checkpoint without
        // the metadata (the agent file) a resume needs.
        if saved.metadata_due {
            let metadata = {
                let mut metadata = lock(&self.metadata);
                metadata.updated = timestamp.clone();
                metadata.steps = state.step;
                metadata.status = status;
                metadata.journal_offset = Some(saved.position.offset);
                metadata.clone()
            };
            self.store.save_metadata(&metadata).map_err(store_error)?;
            self.unsaved.store(false, Ordering::SeqCst);
        }
        if saved.snapshot_due {
            self.store
                .snapshot(&session_id, &checkpoint, saved.position)
                .map_err(store_error)?;
        }
        Ok(format!("step-{}", state.step))
    }

    fn session_id(&self) -> String {
        lock(&self.metadata).session_id.clone()
    }

    fn agent(&self) -> String {
        lock(&self.metadata).agent.clone()
    }
}

impl Checkpointer for SessionFiles {
    fn save(
        &self,
        state: &AgentState,
        pending: Option<&Pending>,
        durability: Durability,
    ) -> Result<String, SaveError> {
        self.write(state, SessionStatus::Running, pending, durability)
    }

    fn finish(
        &self,
        state: &AgentState,
        status: RunStatus,
        pending: Option<&Pending>,
        run_id: &str,
    ) -> Result<String, SaveError> {
        // A run that did not `begin` (a library caller's own context) is listed as it ends.
        list_run(&mut lock(&self.metadata), run_id);
        self.write(state, status.into(), pending, Durability::Now)
    }

    fn session_lost(&self) -> bool {
        self.hold.is_lost() || self.store.lost()
    }
}

/// A store's error, kept whole.
fn store_error(error: CheckpointError) -> SaveError {
    SaveError::Store(Box::new(error))
}

/// Adds `run_id` to the session's runs, once.
fn list_run(metadata: &mut SessionMetadata, run_id: &str) {
    if !metadata.run_ids.iter().any(|r| r == run_id) {
        metadata.run_ids.push(run_id.to_string());
    }
}

/// Keeps `value` under `key` in each checkpoint; one that cannot be written as JSON is
/// kept as `null`, as nothing kept.
fn keep(pending: &mut PendingFields, key: &str, value: &impl serde::Serialize) {
    if pending.set(key, value).is_err() {
        let _ = pending.set(key, &Value::Null);
    }
}
