//! One A2A task: a run of an agent, and the runs that continue it after a pause (each
//! answer to an `input-required` resumes the session in a new run of the same task). Its
//! status, artifacts and history, and its updates in order (the stream a client follows:
//! `SendStreamingMessage` from where its message started them, `SubscribeToTask` from now).

use std::sync::Mutex;

use tokio::sync::watch;

use crate::a2a::{
    Artifact, Message, StreamResponse, Task as TaskView, TaskArtifactUpdateEvent, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};
use crate::engine::events::RequiredAction;
use crate::session::Cancel;
use crate::sync::lock;

/// The agent a task runs.
#[derive(Debug, Clone)]
pub struct Agent {
    pub name: String,
    /// Its answer is structured (`output.schema`): the artifact is a data part.
    pub structured: bool,
}

pub struct Task {
    pub id: String,
    /// The session.
    pub context_id: String,
    pub agent: Agent,
    kept: Mutex<Kept>,
    /// Bumped at each update: wakes the readers.
    changed: watch::Sender<usize>,
}

struct Kept {
    status: TaskStatus,
    artifacts: Vec<Artifact>,
    history: Vec<Message>,
    updates: Vec<StreamResponse>,
    /// What the paused session waits for, while `input-required`.
    waits_for: Option<RequiredAction>,
    /// The stop signal of the run going, while one is.
    cancel: Option<Cancel>,
    /// The runs of the task, first to last.
    run_ids: Vec<String>,
}

impl Task {
    /// A new task, `submitted` (its first run adds the client's message).
    pub fn new(id: String, context_id: String, agent: Agent) -> Self {
        Task {
            id,
            context_id,
            agent,
            kept: Mutex::new(Kept {
                status: TaskStatus::of(TaskState::Submitted),
                artifacts: Vec::new(),
                history: Vec::new(),
                updates: Vec::new(),
                waits_for: None,
                cancel: None,
                run_ids: Vec::new(),
            }),
            changed: watch::Sender::new(0),
        }
    }

    pub fn state(&self) -> TaskState {
        lock(&self.kept).status.state
    }

    /// What the paused session waits for, when the task is `input-required`.
    pub fn waits_for(&self) -> Option<RequiredAction> {
        lock(&self.kept).waits_for.clone()
    }

    /// A client's follow-up message, kept in the history.
    pub fn add_message(&self, message: Message) {
        lock(&self.kept).history.push(message);
    }

    /// A run of the task starts: it is `working` until the run ends.
    pub fn run_started(&self, run_id: String, cancel: Cancel) {
        {
            let mut kept = lock(&self.kept);
            kept.run_ids.push(run_id);
            kept.cancel = Some(cancel);
            kept.waits_for = None;
        }
        self.status(TaskStatus {
            state: TaskState::Working,
            message: None,
            timestamp: Some(crate::engine::clock::now_rfc3339()),
        });
    }

    /// The run going ended (its last updates are given after this).
    pub fn run_ended(&self, waits_for: Option<RequiredAction>) {
        let mut kept = lock(&self.kept);
        kept.cancel = None;
        kept.waits_for = waits_for;
    }

    /// Stops the run going, if one is; `false` when none is.
    pub fn cancel_run(&self) -> bool {
        match &lock(&self.kept).cancel {
            Some(cancel) => {
                cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// A new status, as an update. The message of a settled status (a question, an error)
    /// joins the history; a `working` one (a step, a tool call) is progress, not kept there.
    pub fn status(&self, status: TaskStatus) {
        if let Some(message) = status.message.as_ref().filter(|_| settled(status.state)) {
            lock(&self.kept).history.push(message.clone());
        }
        let update = TaskStatusUpdateEvent {
            task_id: self.id.clone(),
            context_id: self.context_id.clone(),
            status,
            metadata: None,
        };
        self.push(StreamResponse::StatusUpdate(update));
    }

    /// An artifact, whole, as an update.
    pub fn artifact(&self, artifact: Artifact) {
        let update = TaskArtifactUpdateEvent {
            task_id: self.id.clone(),
            context_id: self.context_id.clone(),
            artifact,
            append: false,
            last_chunk: true,
            metadata: None,
        };
        self.push(StreamResponse::ArtifactUpdate(update));
    }

    fn push(&self, update: StreamResponse) {
        {
            let mut kept = lock(&self.kept);
            match &update {
                StreamResponse::StatusUpdate(status) => kept.status = status.status.clone(),
                StreamResponse::ArtifactUpdate(artifact) => {
                    kept.artifacts.push(artifact.artifact.clone())
                }
                StreamResponse::Task(_) | StreamResponse::Message(_) => {}
            }
            kept.updates.push(update);
        }
        self.changed.send_modify(|count| *count += 1);
    }

    /// The task as a client sees it, with the last `history_length` messages (all when
    /// `None`).
    pub fn view(&self, history_length: Option<u32>) -> TaskView {
        let kept = lock(&self.kept);
        let keep = history_length.map_or(kept.history.len(), |n| n as usize);
        let skip = kept.history.len().saturating_sub(keep);
        let metadata = serde_json::json!({"runner": {
            "agent": self.agent.name,
            "runIds": kept.run_ids,
        }});
        TaskView {
            id: self.id.clone(),
            context_id: self.context_id.clone(),
            status: kept.status.clone(),
            artifacts: kept.artifacts.clone(),
            history: kept.history[skip..].to_vec(),
            metadata: metadata.as_object().cloned(),
        }
    }

    /// Where the next update will be.
    pub fn position(&self) -> usize {
        lock(&self.kept).updates.len()
    }

    /// A reader of the updates from `from`, which ends after the first that leaves the
    /// task settled (in a terminal or an interrupted state).
    pub fn updates(self: &std::sync::Arc<Self>, from: usize) -> Updates {
        Updates {
            task: self.clone(),
            next: from,
            changed: self.changed.subscribe(),
            done: false,
        }
    }

    fn update_at(&self, index: usize) -> Option<StreamResponse> {
        lock(&self.kept).updates.get(index).cloned()
    }
}

/// Settled: the task will not change until a client sends it a message (or never).
pub fn settled(state: TaskState) -> bool {
    state.is_terminal() || state.is_interrupted()
}

/// One reader's place in a task's updates.
pub struct Updates {
    task: std::sync::Arc<Task>,
    next: usize,
    changed: watch::Receiver<usize>,
    done: bool,
}

impl Updates {
    /// The next update, waiting for it; `None` after the one that settled the task.
    pub async fn next(&mut self) -> Option<StreamResponse> {
        if self.done {
            return None;
        }
        loop {
            // Marked seen before reading: an update that lands after the read wakes us.
            self.changed.borrow_and_update();
            if let Some(update) = self.task.update_at(self.next) {
                self.next += 1;
                if let StreamResponse::StatusUpdate(status) = &update {
                    self.done = settled(status.status.state);
                }
                return Some(update);
            }
            // The sender lives in the task, which this reader holds: never closed.
            let _ = self.changed.changed().await;
        }
    }

    /// Reads to the update that settles the task.
    pub async fn settle(&mut self) {
        while self.next().await.is_some() {}
    }
}
