//! A run's directory and the subscribers of its event stream: `events.jsonl`, the
//! transcript (and `--transcript`), `--events`, progress on a terminal, and the result
//! fold that becomes `result.json`.
//!
//! A write to one of these files that fails (a full disk) does not stop the run, but it is
//! never silent: each file's failure is printed once on stderr and is in the `warnings` of
//! every result after it, and a failed `result.json` is in the envelope printed on stdout.

use std::fmt;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::prepare::Stop;
use super::run_options::RunOptions;
use crate::engine::ErrorCode;
use crate::engine::events::{Emitter, EventBus, EventSink, JsonlSink};
use crate::fsutil::write_atomically;
use crate::output::ci_report::{in_github_actions, run_annotation};
use crate::output::progress::{Progress, ProgressStyle};
use crate::output::result::{ResultFold, RunResult};
use crate::output::summary::summary_line;
use crate::output::transcript::TranscriptWriter;
use crate::output::transcript_events::TranscriptEvents;

/// Where runs go without `--run-dir`: `.runner/runs/<run_id>`.
pub fn runs_dir() -> PathBuf {
    Path::new(".runner").join("runs")
}

/// An open run directory.
pub struct RunDir {
    pub dir: PathBuf,
    pub bus: EventBus,
    fold: Arc<ResultFold>,
    /// The files the subscribers append to, asked after each run whether a write failed.
    files: Vec<AppendedFile>,
    /// The progress shown on stderr, which a run's summary line ends.
    progress: Option<ProgressStyle>,
}

impl RunDir {
    /// Creates the directory (`--run-dir`, or `.runner/runs/<run_id>`) and its files.
    pub fn open(options: &RunOptions, run_id: &str) -> Result<Self, Stop> {
        let dir = options
            .run_dir
            .clone()
            .unwrap_or_else(|| runs_dir().join(run_id));
        let cannot = |path: &Path, error: std::io::Error| {
            Stop::invalid(
                ErrorCode::RunDir,
                format!("cannot create {}: {error}", path.display()),
            )
        };
        std::fs::create_dir_all(&dir).map_err(|error| cannot(&dir, error))?;
        let fold = Arc::new(ResultFold::default());
        let mut subscribers = Subscribers::default();
        subscribers.add(fold.clone());
        let events = dir.join("events.jsonl");
        let file = File::create(&events).map_err(|error| cannot(&events, error))?;
        subscribers.add_file(events, JsonlSink::file(file));
        for path in std::iter::once(&dir.join("transcript.txt")).chain(options.transcript.as_ref())
        {
            let file = File::create(path).map_err(|error| cannot(path, error))?;
            let transcript = TranscriptEvents::new(TranscriptWriter::file(file));
            subscribers.add_file(path.clone(), transcript);
        }
        match options.events.as_deref() {
            Some("-") => subscribers.add(Arc::new(JsonlSink::new(std::io::stdout()))),
            Some(path) => {
                let file = File::create(path).map_err(|error| {
                    Stop::invalid(
                        ErrorCode::InvalidEvents,
                        format!("cannot create --events {path}: {error}"),
                    )
                })?;
                subscribers.add_file(path.into(), JsonlSink::file(file));
            }
            None => {}
        }
        let progress = options.progress();
        if let Some(style) = progress {
            subscribers.add(Arc::new(Progress::new(style, options.stream)));
        }
        Ok(RunDir {
            dir,
            bus: EventBus::new(subscribers.sinks),
            fold,
            files: subscribers.files,
            progress,
        })
    }

    /// The last root run's result, folded from its events, with this directory's files
    /// and the writes to them that failed so far.
    pub fn result(&self) -> Option<RunResult> {
        let mut result = self.fold.result()?;
        result.transcript = Some(self.dir.join("transcript.txt").display().to_string());
        result.events = Some(self.dir.join("events.jsonl").display().to_string());
        let failures = self.files.iter().filter_map(AppendedFile::failure);
        result
            .warnings
            .extend(failures.map(|failure| failure.to_string()));
        Some(result)
    }

    /// The root emitter of run `run_id` of `agent`, publishing to this directory's files.
    pub fn emitter(&self, agent: &str, run_id: String, session_id: &str) -> Emitter {
        Emitter::root(self.bus.clone(), agent, run_id, session_id.to_string())
    }

    /// After a run: its result written to `result.json`, and on stderr its error and each
    /// write that failed (once; the result's `warnings` have them too).
    pub fn finish(&self) -> Option<RunResult> {
        let mut result = self.result()?;
        for file in &self.files {
            if let Some(failure) = file.failure()
                && !file.warned.swap(true, Ordering::Relaxed)
            {
                eprintln!("warning: {failure}");
            }
        }
        if let Err(failure) = self.write_result(&result) {
            eprintln!("warning: {failure}");
            result.warnings.push(failure.to_string());
        }
        if let Some(error) = &result.error {
            eprintln!("error[{}]: {}", error.code, error.message);
            if in_github_actions() {
                eprintln!("{}", run_annotation(&result, error));
            }
        }
        if self.progress.is_some() {
            eprintln!("{}", summary_line(&result, &self.dir));
        }
        Some(result)
    }

    /// Writes `result.json`; a failure is a warning (the run itself is over).
    fn write_result(&self, result: &RunResult) -> Result<(), WriteFailure> {
        let path = self.dir.join("result.json");
        let bytes = serde_json::to_vec_pretty(result).map_err(io::Error::from);
        bytes
            .and_then(|bytes| write_atomically(&path, &bytes))
            .map_err(|error| WriteFailure {
                path,
                error,
                appended: false,
            })
    }
}

/// The subscribers of a run directory, gathered in order, and which of them write files.
#[derive(Default)]
struct Subscribers {
    sinks: Vec<Arc<dyn EventSink>>,
    files: Vec<AppendedFile>,
}

impl Subscribers {
    fn add(&mut self, sink: Arc<dyn EventSink>) {
        self.sinks.push(sink);
    }

    /// A subscriber appending to `path`, whose failed write the run reports.
    fn add_file(&mut self, path: PathBuf, sink: impl EventSink + Appends + 'static) {
        let sink = Arc::new(sink);
        self.sinks.push(sink.clone());
        self.files.push(AppendedFile::new(path, sink));
    }
}

/// A subscriber that appends to a file and stops at its first failed write.
trait Appends: Send + Sync {
    fn failure(&self) -> Option<io::Error>;
}

impl Appends for JsonlSink<File> {
    fn failure(&self) -> Option<io::Error> {
        JsonlSink::failure(self)
    }
}

impl Appends for TranscriptEvents<TranscriptWriter<File>> {
    fn failure(&self) -> Option<io::Error> {
        TranscriptEvents::failure(self)
    }
}

/// A file of the run, the subscriber writing it, and whether its failure was printed.
struct AppendedFile {
    path: PathBuf,
    writer: Arc<dyn Appends>,
    warned: AtomicBool,
}

/// A write to a file of the run that failed. The run went on without it.
#[derive(Debug)]
struct WriteFailure {
    path: PathBuf,
    error: io::Error,
    /// The file stopped at the failure (events, transcript) rather than not being written
    /// at all (`result.json`).
    appended: bool,
}

impl fmt::Display for WriteFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot write {}: {}", self.path.display(), self.error)?;
        if self.appended {
            f.write_str("; it holds only what came before")?;
        }
        Ok(())
    }
}

impl AppendedFile {
    fn new(path: PathBuf, writer: Arc<dyn Appends>) -> Self {
        AppendedFile {
            path,
            writer,
            warned: AtomicBool::new(false),
        }
    }

    fn failure(&self) -> Option<WriteFailure> {
        let error = self.writer.failure()?;
        Some(WriteFailure {
            path: self.path.clone(),
            error,
            appended: true,
        })
    }
}
