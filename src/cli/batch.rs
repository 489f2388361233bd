//! `runner batch AGENT.yaml --inputs FILE.jsonl`: the agent once per line of the inputs
//! file, `-j N` at once, each run's envelope in the batch directory's `results.jsonl`, and
//! a summary; run again, it goes on where it stopped (`docs/scale.md`).

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::Args;

use super::Exit;
use super::job_summary;
use super::run_options::{SharedRunOptions, progress_style};
use crate::batch::budget::Budget;
use crate::batch::children::Children;
use crate::batch::dir::{BatchDir, MAX_BATCH_ID_LEN, Manifest};
use crate::batch::inputs::{InputsReader, count_entries};
use crate::batch::job::{ChildSessions, Launcher, Sessions};
use crate::batch::progress::BatchProgress;
use crate::batch::results::ResultsFile;
use crate::batch::scheduler::{self, Batch, StopSignal, Stopped};
use crate::batch::summary::{Summary, name};
use crate::engine::clock::new_id;
use crate::nats::SessionsAt;
use crate::output::safe_markdown::{Document, Table, Text};
use crate::output::summary::status_label;
use crate::session::files::sessions_dir;
use crate::session::prepare::load;
use crate::spec::project::check_model_option;
use crate::telemetry::Telemetry;

/// How long an input whose session another process holds is tried again: a child of a
/// batch that was killed may still be stopping.
const LOCAL_WAIT_HELD: std::time::Duration = std::time::Duration::from_secs(10);

/// `runner batch AGENT --inputs FILE`, or `runner batch status|results ID --nats URL` for
/// a batch submitted to NATS (`batch_nats.rs`).
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BatchCommand {
    #[command(subcommand)]
    pub on_nats: Option<super::batch_nats::NatsBatch>,
    #[command(flatten)]
    pub local: BatchArgs,
}

/// Options of `runner batch`.
#[derive(Debug, Args)]
pub struct BatchArgs {
    /// The agent file.
    #[arg(required = true)]
    pub agent: Option<PathBuf>,
    /// The inputs: one JSON object of input values per line (`"id"` names the input), or
    /// `-` for stdin.
    #[arg(long, value_name = "FILE|-", required = true)]
    pub inputs: Option<PathBuf>,
    /// Inputs run at once (default: the number of cores).
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// The batch's id (default: AGENT-INPUTS, from the agent's name and the inputs file's;
    /// a new one for stdin). Running a batch id again goes on where it stopped.
    #[arg(long, value_name = "ID")]
    pub batch_id: Option<String>,
    /// The model of every input's run instead of the file's (as `runner exec --model`); an
    /// input resumed by a rerun goes on with the model its session started with.
    #[arg(long, value_name = "PROVIDER/NAME")]
    pub model: Option<String>,
    /// The batch directory (default: .runner/batches/<batch id>).
    #[arg(long, value_name = "DIR")]
    pub batch_dir: Option<PathBuf>,
    /// Start no new input once the batch has spent this much (models with `pricing`).
    #[arg(long, value_name = "USD")]
    pub max_cost_usd: Option<f64>,
    /// Start no new input once the batch has spent this many tokens.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// For every run of the batch, as for `runner exec`; an input resumed by a rerun uses
    /// `--allow-widening` too.
    /// Append a Markdown summary (the counts by status, the spend, where the results are)
    /// to this file, as to `GITHUB_STEP_SUMMARY` in GitHub Actions.
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,
    #[command(flatten)]
    pub run: SharedRunOptions,
}

pub fn run(command: BatchCommand) -> Exit {
    if let Some(on_nats) = command.on_nats {
        return super::batch_nats::run(on_nats);
    }
    let args = command.local;
    let (Some(agent), Some(inputs)) = (args.agent.clone(), args.inputs.clone()) else {
        eprintln!("error: runner batch needs an agent file and --inputs FILE");
        return Exit::Invalid;
    };
    match start(&args, (&agent, &inputs)) {
        Ok(exit) => exit,
        Err(message) => {
            eprintln!("error: {message}");
            Exit::Invalid
        }
    }
}

/// Everything before the first input runs is checked here; a problem is exit 2.
fn start(args: &BatchArgs, (agent_file, inputs_file): (&Path, &Path)) -> Result<Exit, String> {
    // Checked here, so a wrong `--model` stops the batch before any input runs; each run
    // resolves it again when it starts.
    let checked = args
        .model
        .as_deref()
        .map(|m| check_model_option(agent_file, m));
    if let Some(Err(message)) = checked {
        return Err(format!("--model: {message}"));
    }
    let spec = match load(agent_file) {
        Ok(spec) => spec,
        Err(stop) => {
            stop.print();
            return Ok(Exit::Invalid);
        }
    };
    let agent = absolute(agent_file)?;
    let stdin = inputs_file.as_os_str() == "-";
    let inputs = match stdin {
        true => PathBuf::from("-"),
        false => absolute(inputs_file)?,
    };
    let batch_id = batch_id(args, inputs_file, &spec.name)?;
    let root = args
        .batch_dir
        .clone()
        .unwrap_or_else(|| Path::new(".runner").join("batches").join(&batch_id));
    let sessions = sessions_dir(&spec).map(|dir| absolute(&dir)).transpose()?;
    let dir = BatchDir::open(&root, &batch_id, (&agent, &inputs), sessions.as_deref())?;
    let (mut results, ledger, warnings) = ResultsFile::open(&dir.results())
        .map_err(|e| format!("cannot open {}: {e}", dir.results().display()))?;
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
    if sessions.is_none() {
        eprintln!(
            "warning: {} keeps no checkpoints (`checkpoints: false`): an input interrupted now starts again from the beginning on the next run",
            agent_file.display()
        );
    }
    // Declared before the launcher, which holds the batch's span: the span ends first, then
    // the export flushes.
    let telemetry = Telemetry::from_env(false);
    let trace = telemetry
        .as_ref()
        .and_then(|t| t.batch(spec.telemetry.as_ref(), &spec.name, &batch_id));
    let launcher = Launcher {
        exe: std::env::current_exe().map_err(|e| format!("cannot find the runner binary: {e}"))?,
        agent,
        agent_name: spec.name.clone(),
        declared: spec.inputs.clone(),
        sessions: sessions
            .map(|dir| {
                SessionsAt::Dir(dir.clone()).open().map(|store| Sessions {
                    at: ChildSessions::Dir(dir),
                    store: store.into(),
                })
            })
            .transpose()
            .map_err(|e| format!("cannot use the sessions directory: {e}"))?,
        wait_held: LOCAL_WAIT_HELD,
        passed: passed_options(args)?,
        model: args.model.clone(),
        trace: trace.map(Arc::new),
    };
    let entries: Box<dyn BufRead + Send> = match stdin {
        true => Box::new(BufReader::new(std::io::stdin())),
        false => Box::new(BufReader::new(open(&inputs)?)),
    };
    let to_run = match stdin {
        true => None,
        false => Some(
            count_entries(BufReader::new(open(&inputs)?))
                .map_err(|e| format!("cannot read {}: {e}", inputs.display()))?
                .saturating_sub(ledger.final_lines().count() as u64),
        ),
    };
    let style = progress_style(args.run.progress, args.run.quiet, args.run.color);
    let mut progress = BatchProgress::new(style, to_run, &ledger);
    progress.note(&format!(
        "batch {batch_id}: {} already over, results in {}",
        ledger.final_lines().count(),
        dir.results().display()
    ));
    let children = Arc::new(Children::new());
    let stop = Arc::new(StopSignal::default());
    let (stopping, interrupted) = (stop.clone(), children.clone());
    super::signals::on_stop_signal(move || {
        stopping.stop(Stopped::Interrupted);
        interrupted.stop();
    });
    let batch = Batch {
        dir: &dir,
        launcher: &launcher,
        jobs: args.jobs.map_or_else(cores, usize::from),
        budget: Budget {
            max_cost_usd: args.max_cost_usd,
            max_tokens: args.max_tokens,
        },
        children: &children,
        stop,
    };
    let started = Instant::now();
    let ran = scheduler::run(
        &batch,
        InputsReader::new(entries),
        &mut results,
        ledger,
        &mut progress,
    );
    progress.finish();
    let summary = Summary::new(&batch_id, dir.results(), &ran, started.elapsed());
    if let Some(note) = summary.stopped_note() {
        eprintln!("{note}");
    }
    outln!("{summary}");
    job_summary::write(|| markdown_summary(&summary), args.summary.as_deref());
    Ok(summary.exit())
}

/// The job summary of a batch: its counts by status, what it spent, where the results are.
fn markdown_summary(summary: &Summary) -> String {
    let mut doc = Document::new();
    let exit = summary.exit();
    doc.heading(
        3,
        Text::plain(&format!(
            "runner batch {}: {} (exit {})",
            summary.batch_id,
            status_label(exit),
            exit.exit_code()
        )),
    );
    let mut table = Table::new(&["Status", "Inputs"]);
    for (status, count) in summary.counts() {
        table.row(vec![name(*status).into(), count.to_string().into()]);
    }
    match summary.not_started() {
        Some(0) => {}
        Some(count) => table.row(vec!["not started".into(), count.to_string().into()]),
        None => table.row(vec!["not started".into(), "the rest".into()]),
    }
    doc.table(&table);
    let (tokens, cost) = summary.spent();
    let mut facts = vec![Text::plain(&format!("{tokens} tokens"))];
    if let Some(cost) = cost {
        facts.push(Text::plain(&format!("${cost:.4}")));
    }
    facts.push(Text::plain(&format!(
        "{:.1} s",
        summary.elapsed().as_secs_f64()
    )));
    facts.push(Text::plain(&format!(
        "results: {}",
        summary.results.display()
    )));
    if let Some(note) = summary.stopped_note() {
        facts.push(Text::plain(&note));
    }
    doc.list(&facts);
    doc.finish()
}

/// `--batch-id`; else the id in `--batch-dir`'s `batch.json`; else [`default_batch_id`].
fn batch_id(args: &BatchArgs, inputs: &Path, agent_name: &str) -> Result<String, String> {
    if let Some(id) = &args.batch_id {
        return Ok(id.clone());
    }
    if let Some(root) = &args.batch_dir
        && let Ok(bytes) = std::fs::read(root.join("batch.json"))
    {
        let manifest: Manifest = serde_json::from_slice(&bytes)
            .map_err(|e| format!("{}/batch.json cannot be read: {e}", root.display()))?;
        return Ok(manifest.batch_id);
    }
    Ok(default_batch_id(inputs, agent_name))
}

/// `AGENT-INPUTS` (letters, digits, `-` and `_` kept, others `_`), or a new id for stdin.
pub fn default_batch_id(inputs: &Path, agent_name: &str) -> String {
    if inputs.as_os_str() == "-" {
        return new_id();
    }
    let stem = inputs
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let id: String = format!("{agent_name}-{stem}")
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                true => c,
                false => '_',
            },
        )
        .take(MAX_BATCH_ID_LEN)
        .collect();
    id
}

/// The options every run of the batch gets.
fn passed_options(args: &BatchArgs) -> Result<Vec<OsString>, String> {
    let mut passed = Vec::new();
    if let Some(answers) = &args.run.answers {
        passed.extend(["--answers".into(), absolute(answers)?.into_os_string()]);
    }
    if let Some(replay) = &args.run.replay {
        passed.extend(["--replay".into(), absolute(replay)?.into_os_string()]);
    }
    if args.run.yes {
        passed.push("--yes".into());
    }
    if args.run.allow_widening {
        passed.push("--allow-widening".into());
    }
    Ok(passed)
}

pub fn absolute(path: &Path) -> Result<PathBuf, String> {
    std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn open(path: &Path) -> Result<std::fs::File, String> {
    std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
