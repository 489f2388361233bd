//! `runner submit AGENT --inputs FILE.jsonl --nats URL`: publishes a batch for `runner
//! worker`s (`nats::submit`), prints its id on stdout, and says how to follow it.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use clap::Args;

use super::Exit;
use super::batch::{default_batch_id, open};
use super::nats_runtime::nats_runtime;
use crate::batch::dir::check_batch_id;
use crate::batch::inputs::InputsReader;
use crate::nats::bundle::Bundle;
use crate::nats::submit::{Submission, SubmitError, submit};
use crate::session::prepare::load;
use crate::spec::project::check_model_option;
use crate::trace_env::Carried;

/// Options of `runner submit`.
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The agent file (it and every file it loads go with the jobs).
    pub agent: PathBuf,
    /// The inputs: one JSON object of input values per line, or `-` for stdin.
    #[arg(long, value_name = "FILE|-")]
    pub inputs: PathBuf,
    /// The NATS server, e.g. nats://127.0.0.1:4222 (credentials: NATS_CREDS, NATS_USER and
    /// NATS_PASSWORD, or NATS_TOKEN).
    #[arg(long, value_name = "URL")]
    pub nats: String,
    /// The batch's id (default: AGENT-INPUTS; a new one for stdin).
    #[arg(long, value_name = "ID")]
    pub batch_id: Option<String>,
    /// The model of every job instead of the file's.
    #[arg(long, value_name = "PROVIDER/NAME")]
    pub model: Option<String>,
    /// No job starts once the batch has spent this much (models with `pricing`).
    #[arg(long, value_name = "USD")]
    pub max_cost_usd: Option<f64>,
    /// No job starts once the batch has spent this many tokens.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
}

pub fn run(args: SubmitArgs) -> Exit {
    match start(&args) {
        Ok(exit) => exit,
        Err(message) => {
            eprintln!("error: {message}");
            Exit::Invalid
        }
    }
}

fn start(args: &SubmitArgs) -> Result<Exit, String> {
    // A project model's name resolves on the worker too: the bundle carries the project file.
    let checked = args
        .model
        .as_deref()
        .map(|m| check_model_option(&args.agent, m));
    if let Some(Err(message)) = checked {
        return Err(format!("--model: {message}"));
    }
    let spec = match load(&args.agent) {
        Ok(spec) => spec,
        Err(stop) => {
            stop.print();
            return Ok(Exit::Invalid);
        }
    };
    let batch_id = args
        .batch_id
        .clone()
        .unwrap_or_else(|| default_batch_id(&args.inputs, &spec.name));
    check_batch_id(&batch_id)?;
    let entries: Box<dyn BufRead + Send> = match args.inputs.as_os_str() == "-" {
        true => Box::new(BufReader::new(std::io::stdin())),
        false => Box::new(BufReader::new(open(&args.inputs)?)),
    };
    let submission = Submission {
        url: args.nats.clone(),
        batch_id: batch_id.clone(),
        bundle: Bundle::of(&args.agent)?,
        agent_name: spec.name.clone(),
        declared: spec.inputs.clone(),
        model: args.model.clone(),
        max_cost_usd: args.max_cost_usd,
        max_tokens: args.max_tokens,
        // The caller's trace (CI, an orchestrator): each job's run joins it.
        trace: Carried::from_env(),
    };
    let runtime = nats_runtime()?;
    match runtime.block_on(submit(submission, InputsReader::new(entries))) {
        Ok(submitted) => {
            eprintln!(
                "submitted batch {batch_id}: {} jobs, {} invalid lines recorded; follow it with `runner batch status {batch_id} --nats {} --wait`",
                submitted.jobs, submitted.invalid, args.nats
            );
            outln!("{batch_id}");
            Ok(Exit::Completed)
        }
        Err(SubmitError::Nats(error)) => {
            eprintln!("error: {error}");
            Ok(Exit::Failed)
        }
        Err(refused) => Err(refused.to_string()),
    }
}
