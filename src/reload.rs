//! Hot reload: a watcher on the agent file and every file it pulls in (sub-agent and handoff
//! files, template includes, the project file). Editors save by writing in place, by truncating, by writing a
//! temp file and renaming it over, or by deleting and creating; watching the files'
//! directories (not the files) sees all of these. Bursts are debounced: a change is reported
//! once the files have been quiet for `DEBOUNCE`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, ModifyKind};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use serde_json::Value;

use crate::spec::template::included_files;
use crate::spec::yaml::load_yaml;
use crate::sync::lock;

/// How long the files must be quiet before a change is reported.
pub const DEBOUNCE: Duration = Duration::from_millis(40);

/// Watches a set of files.
pub struct FileWatcher {
    watcher: Mutex<RecommendedWatcher>,
    events: Mutex<Receiver<PathBuf>>,
    files: Arc<Mutex<HashSet<PathBuf>>>,
    dirs: Mutex<HashSet<PathBuf>>,
}

fn absolute(path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    crate::spec::validate::normalize(&joined)
}

impl FileWatcher {
    pub fn new(files: &[PathBuf]) -> notify::Result<Self> {
        let (tx, rx) = channel();
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if let Ok(event) = event
                && changes_content(&event.kind)
            {
                for path in event.paths {
                    let _ = tx.send(path);
                }
            }
        })?;
        let watcher = FileWatcher {
            watcher: Mutex::new(watcher),
            events: Mutex::new(rx),
            files: Arc::default(),
            dirs: Mutex::default(),
        };
        watcher.set_files(files)?;
        Ok(watcher)
    }

    /// Replaces the watched set (after a reload the includes may have changed).
    pub fn set_files(&self, files: &[PathBuf]) -> notify::Result<()> {
        let absolute: HashSet<PathBuf> = files.iter().map(|f| absolute(f)).collect();
        let (mut watcher, mut dirs) = (lock(&self.watcher), lock(&self.dirs));
        for file in &absolute {
            if let Some(dir) = file.parent()
                && dirs.insert(dir.to_path_buf())
            {
                watcher.watch(dir, RecursiveMode::NonRecursive)?;
            }
        }
        *lock(&self.files) = absolute;
        Ok(())
    }

    fn relevant(&self, path: &Path) -> bool {
        let path = absolute(path);
        lock(&self.files).contains(&path)
    }

    /// Without blocking: whether a watched file changed since the last call. When one did,
    /// waits until the burst of writes is over (at most a second).
    pub fn changed(&self) -> bool {
        let events = lock(&self.events);
        let mut seen = false;
        while let Ok(path) = events.try_recv() {
            seen |= self.relevant(&path);
        }
        if seen {
            let deadline = Instant::now() + Duration::from_secs(1);
            loop {
                match events.recv_timeout(DEBOUNCE) {
                    Ok(_) if Instant::now() < deadline => continue,
                    Ok(_)
                    | Err(RecvTimeoutError::Timeout)
                    | Err(RecvTimeoutError::Disconnected) => break,
                }
            }
        }
        seen
    }

    /// Blocks until a watched file changed (and the burst is over).
    pub fn wait(&self) {
        loop {
            let path = lock(&self.events).recv().ok();
            let Some(path) = path else { return };
            if self.relevant(&path) {
                // Let the burst finish, then drain it.
                std::thread::sleep(DEBOUNCE);
                let _ = self.changed();
                return;
            }
        }
    }
}

/// Whether an event can mean new content. Reading a file is an event too (inotify reports
/// its opening and closing), and validating reads the files it watches: counting those
/// made `validate --watch` validate again and again with no edit at all.
fn changes_content(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(_)) => false,
        _ => true,
    }
}

/// The agent file and every file it pulls in: sub-agent and handoff files (recursively),
/// template includes, and the JSON files MCP servers are imported from, each where opening
/// it leads (a `..` after a symlinked directory follows the link). Files that do not parse
/// contribute only themselves. `validate --watch` watches these, and NATS bundles carry
/// them; a run uses its `spec::tree::AgentTree`, which also protects them.
pub fn agent_files(path: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![path.to_path_buf()];
    while let Some(file) = pending.pop() {
        let file = crate::spec::validate::resolved(&file);
        if files.contains(&file) {
            continue;
        }
        files.push(file.clone());
        // The project file its model names resolve through: watched, not read as an agent.
        if let Some(project) = crate::spec::project::find_project(&file) {
            let project = crate::spec::validate::resolved(&project);
            if !files.contains(&project) {
                files.push(project);
            }
        }
        let Ok(bytes) = crate::spec::validate::read_bounded(&file) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        let Ok(document) = load_yaml(&text) else {
            continue;
        };
        let dir = crate::compile::file_dir(&file);
        collect_refs(&document.value, &dir, &mut pending, &mut files);
    }
    files
}

fn collect_refs(agent: &Value, dir: &Path, pending: &mut Vec<PathBuf>, files: &mut Vec<PathBuf>) {
    let reasoning = agent
        .get("execution")
        .and_then(|e| e.get("reasoning_prompt"));
    let sources = [agent.get("system"), agent.get("prompt"), reasoning];
    for source in sources.into_iter().flatten() {
        if let Value::String(source) = source {
            files.extend(included_files(source, dir));
        }
    }
    let entries = agent
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    let handoffs = agent
        .get("handoffs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for entry in entries.chain(handoffs) {
        if let Some(Value::String(source)) = entry.get("prompt") {
            files.extend(included_files(source, dir));
        }
        if let Some(Value::String(config)) = entry.get("mcp").and_then(|m| m.get("config")) {
            files.push(crate::spec::validate::resolved(&dir.join(config)));
        }
        match entry.get("agent") {
            Some(Value::String(relative)) => pending.push(dir.join(relative)),
            Some(inline @ Value::Object(_)) => collect_refs(inline, dir, pending, files),
            _ => {}
        }
    }
}
