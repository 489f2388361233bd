//! A run's directory and the subscribers of its event stream: `events.jsonl`, the
//! transcript (and `--transcript`), `--events`, progress on a terminal, the caller's own
//! subscribers, and the result fold that becomes `result.json`. A run without a directory
//! (`RunFile`) has the fold and the caller's subscribers only.
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
use super::request::{Report, RunDirOptions};
use crate::engine::ErrorCode;
use crate::engine::events::{Emitter, EventBus, EventSink, JsonlSink};
use crate::fsutil::write_atomically;
use crate::output::progress::Progress;
use crate::output::result::{ResultFold, RunResult};
use crate::output::transcript::TranscriptWriter;
use crate::output::transcript_events::TranscriptEvents;

/// Where runs go without `--run-dir`: `.runner/runs/<run_id>`.
pub fn runs_dir() -> PathBuf {
    Path::new(".runner").join("runs")
}

/// An open run directory.
pub struct RunDir {
    /// `None` for a run that keeps no files.
    pub dir: Option<PathBuf>,
    pub bus: EventBus,
    fold: Arc<ResultFold>,
    /// The files the subscribers append to, asked after each run whether a write failed.
    files: Vec<AppendedFile>,
    /// Told of each run's result once its files are written.
    report: Option<Report>,
}

impl RunDir {
    /// The subscribers of a run: the directory's (when `options` asks for one) and `sinks`.
    pub fn open(
        options: Option<&RunDirOptions>,
        run_id: &str,
        sinks: &[Arc<dyn EventSink>],
    ) -> Result<Self, Stop> {
        let fold = Arc::new(ResultFold::default());
        let Some(options) = options else {
            let mut all: Vec<Arc<dyn EventSink>> = vec![fold.clone()];
            all.extend(sinks.iter().cloned());
            return Ok(RunDir {
                dir: None,
                bus: EventBus::new(all),
                fold,
                files: Vec::new(),
                report: None,
            });
        };
        Self::create(options, run_id, fold, sinks)
    }

    /// Creates the directory (`--run-dir`, or `.runner/runs/<run_id>`) and its files.
    fn create(
        options: &RunDirOptions,
        run_id: &str,
        fold: Arc<ResultFold>,
        sinks: &[Arc<dyn EventSink>],
    ) -> Result<Self, Stop> {
        let dir = options
            .dir
            .clone()
            .unwrap_or_else(|| runs_dir().join(run_id));
        let cannot = |path: &Path, error: std::io::Error| {
            Stop::invalid(
                ErrorCode::RunDir,
                format!("cannot create {}: {error}", path.display()),
            )
        };
        std::fs::create_dir_all(&dir).map_err(|error| cannot(&dir, error))?;
        let mut subscribers = Subscribers::default();
        subscribers.add(fold.clone());
        let events = dir.join("events.jsonl");
        let file = File::create(&events).map_err(|error| cannot(&events, error))?;
        subscribers.add_file(events, JsonlSink::file(file));
        for path in std::iter::once(&dir.join("transcript.txt")).chain(options.transcript.as_ref())
        {
            let file = File::create(path).map_err(|error| cannot(path, error))?;
            let transcript = TranscriptEvents::new(TranscriptWriter::file(file).holding());
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
        // Always attached: with no progress style it still prints the engine's notices.
        subscribers.add(Arc::new(Progress::new(options.progress, options.stream)));
        for sink in sinks {
            subscribers.add(sink.clone());
        }
        Ok(RunDir {
            dir: Some(dir),
            bus: EventBus::new(subscribers.sinks),
            fold,
            files: subscribers.files,
            report: options.report.clone(),
        })
    }

    /// The last root run's result, folded from its events, with this directory's files
    /// and the writes to them that failed so far.
    pub fn result(&self) -> Option<RunResult> {
        let mut result = self.fold.result()?;
        if let Some(dir) = &self.dir {
            result.transcript = Some(dir.join("transcript.txt").display().to_string());
            result.events = Some(dir.join("events.jsonl").display().to_string());
        }
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

    /// After a run: its result written to `result.json`, each write that failed on stderr
    /// (once; the result's `warnings` have them too), then the report told.
    pub fn finish(&self) -> Option<RunResult> {
        let mut result = self.result()?;
        for file in &self.files {
            if let Some(failure) = file.failure()
                && !file.warned.swap(true, Ordering::Relaxed)
            {
                eprintln!("warning: {failure}");
            }
        }
        let Some(dir) = &self.dir else {
            return Some(result);
        };
        if let Err(failure) = self.write_result(dir, &result) {
            eprintln!("warning: {failure}");
            result.warnings.push(failure.to_string());
        }
        if let Some(report) = &self.report {
            report(&result, dir);
        }
        Some(result)
    }

    /// Writes `result.json`; a failure is a warning (the run itself is over).
    fn write_result(&self, dir: &Path, result: &RunResult) -> Result<(), WriteFailure> {
        let path = dir.join("result.json");
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
