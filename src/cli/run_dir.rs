//! A run's directory and the subscribers of its event stream: `events.jsonl`, the
//! transcript (and `--transcript`), `--events`, progress on a terminal, and the result
//! fold that becomes `result.json`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::prepare::Stop;
use super::run_options::RunOptions;
use crate::engine::events::{Emitter, EventBus, EventSink, JsonlSink};
use crate::fsutil::write_atomically;
use crate::output::progress::Progress;
use crate::output::result::{ResultFold, RunResult};
use crate::output::transcript::TranscriptWriter;
use crate::output::transcript_events::TranscriptEvents;

/// An open run directory.
pub struct RunDir {
    pub dir: PathBuf,
    pub bus: EventBus,
    fold: Arc<ResultFold>,
}

impl RunDir {
    /// Creates the directory (`--run-dir`, or `.runner/runs/<run_id>`) and its files.
    pub fn open(options: &RunOptions, run_id: &str) -> Result<Self, Stop> {
        let dir = options
            .run_dir
            .clone()
            .unwrap_or_else(|| Path::new(".runner").join("runs").join(run_id));
        let cannot = |path: &Path, error: std::io::Error| {
            Stop::invalid(
                "run_dir",
                format!("cannot create {}: {error}", path.display()),
            )
        };
        std::fs::create_dir_all(&dir).map_err(|error| cannot(&dir, error))?;
        let fold = Arc::new(ResultFold::default());
        let mut sinks: Vec<Arc<dyn EventSink>> = vec![fold.clone()];
        let events = dir.join("events.jsonl");
        let file = std::fs::File::create(&events).map_err(|error| cannot(&events, error))?;
        sinks.push(Arc::new(JsonlSink::new(file)));
        for path in std::iter::once(&dir.join("transcript.txt")).chain(options.transcript.as_ref())
        {
            let file = std::fs::File::create(path).map_err(|error| cannot(path, error))?;
            sinks.push(Arc::new(TranscriptEvents::new(TranscriptWriter::new(file))));
        }
        match options.events.as_deref() {
            Some("-") => sinks.push(Arc::new(JsonlSink::new(std::io::stdout()))),
            Some(path) => {
                let file = std::fs::File::create(path).map_err(|error| {
                    Stop::invalid(
                        "invalid_events",
                        format!("cannot create --events {path}: {error}"),
                    )
                })?;
                sinks.push(Arc::new(JsonlSink::new(file)));
            }
            None => {}
        }
        if !options.quiet && std::io::stderr().is_terminal() {
            sinks.push(Arc::new(Progress::new(options.stderr_colored())));
        }
        Ok(RunDir {
            dir,
            bus: EventBus::new(sinks),
            fold,
        })
    }

    /// The last root run's result, folded from its events, with this directory's files.
    pub fn result(&self) -> Option<RunResult> {
        let mut result = self.fold.result()?;
        result.transcript = Some(self.dir.join("transcript.txt").display().to_string());
        result.events = Some(self.dir.join("events.jsonl").display().to_string());
        Some(result)
    }

    /// The root emitter of run `run_id` of `agent`, publishing to this directory's files.
    pub fn emitter(&self, agent: &str, run_id: String, session_id: &str) -> Emitter {
        Emitter::root(self.bus.clone(), agent, run_id, session_id.to_string())
    }

    /// After a run: its result written to `result.json`, and its error on stderr.
    pub fn finish(&self) -> Option<RunResult> {
        let result = self.result()?;
        self.write_result(&result);
        if let Some(error) = &result.error {
            eprintln!("error[{}]: {}", error.code, error.message);
        }
        Some(result)
    }

    /// Writes `result.json`; a failure is a warning (the run itself is over).
    pub fn write_result(&self, result: &RunResult) {
        let path = self.dir.join("result.json");
        let written = serde_json::to_vec_pretty(result)
            .map_err(|error| error.to_string())
            .and_then(|bytes| write_atomically(&path, &bytes).map_err(|error| error.to_string()));
        if let Err(error) = written {
            eprintln!("warning: cannot write {}: {error}", path.display());
        }
    }
}
