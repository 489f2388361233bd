//! `runner worker --nats URL`: runs the jobs `runner submit` published, until SIGINT or
//! SIGTERM (then its runs are interrupted, their sessions saved, and their jobs handed back
//! for another worker to go on with). `docs/scale.md` has how to run several.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use tokio::sync::watch;

use super::Exit;
use super::nats_runtime::nats_runtime;
use crate::nats::buckets::Timing;
use crate::nats::worker::{self, WorkerOptions};
use crate::spec::duration::parse_duration;

/// Options of `runner worker`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The NATS server, e.g. nats://127.0.0.1:4222 (credentials: NATS_CREDS, a `.creds`
    /// file; or NATS_USER and NATS_PASSWORD; or NATS_TOKEN).
    #[arg(long, value_name = "URL")]
    pub nats: String,
    /// Jobs run at once.
    #[arg(short = 'j', long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: u16,
    /// How long a job may go without a word from its worker before it goes to another
    /// (its worker says it is alive a third of this apart). Set by the first worker on a
    /// server; later ones use it.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration)]
    pub ack_wait: Duration,
    /// How long a session stays held by a worker that died before another may take it.
    /// Set by the first process on a server; later ones use it.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = duration)]
    pub lease_ttl: Duration,
    /// Where the jobs' agent files and run directories go.
    #[arg(long, value_name = "DIR", default_value = ".runner/worker")]
    pub dir: PathBuf,
}

fn duration(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

pub fn run(args: WorkerArgs) -> Exit {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(error) => {
            eprintln!("error: cannot find the runner binary: {error}");
            return Exit::Failed;
        }
    };
    let options = WorkerOptions {
        url: args.nats,
        jobs: usize::from(args.jobs),
        timing: Timing {
            ack_wait: args.ack_wait,
            lease_ttl: args.lease_ttl,
        },
        exe,
        dir: args.dir,
    };
    let Ok(runtime) = nats_runtime().inspect_err(|message| eprintln!("error: {message}")) else {
        return Exit::Failed;
    };
    let (stop, stopped) = watch::channel(false);
    super::signals::on_stop_signal(move || {
        let _ = stop.send(true);
    });
    runtime.block_on(async {
        match worker::run(options, stopped).await {
            Ok(()) => Exit::Interrupted,
            Err(error) => {
                eprintln!("error: {error}");
                Exit::Failed
            }
        }
    })
}
