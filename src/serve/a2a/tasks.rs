//! The tasks this server knows, in memory: the last [`KEEP_TASKS`] (an older one is
//! forgotten, its session is not: a message with its context id continues it, as after a
//! restart).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use super::task::Task;
use crate::sync::lock;

/// How many tasks stay in memory.
const KEEP_TASKS: usize = 1024;

#[derive(Default)]
pub struct Tasks {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    by_id: HashMap<String, Arc<Task>>,
    order: VecDeque<String>,
}

impl Tasks {
    pub fn add(&self, task: Arc<Task>) {
        let mut kept = lock(&self.kept);
        kept.order.push_back(task.id.clone());
        kept.by_id.insert(task.id.clone(), task);
        while kept.order.len() > KEEP_TASKS {
            if let Some(old) = kept.order.pop_front() {
                kept.by_id.remove(&old);
            }
        }
    }

    pub fn get(&self, id: &str) -> Option<Arc<Task>> {
        lock(&self.kept).by_id.get(id).cloned()
    }

    /// The newest task of a context (session).
    pub fn latest_in(&self, context_id: &str) -> Option<Arc<Task>> {
        let kept = lock(&self.kept);
        kept.order.iter().rev().find_map(|id| {
            let task = kept.by_id.get(id)?;
            (task.context_id == context_id).then(|| task.clone())
        })
    }
}
