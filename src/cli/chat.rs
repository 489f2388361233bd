//! `runner chat AGENT.yaml`: an interactive multi-turn session. Lines come from stdin (a
//! terminal or a pipe); answers go to stdout. Each line is one run of the engine's driver
//! over the kept history (UAP `ask`), in one run directory: the transcript and events grow
//! turn by turn, and `result.json` is the last turn's. The agent file is reloaded between
//! turns; the session is checkpointed so `runner resume` can pick it up. Commands: `/reset`
//! clears the history, `/save` checkpoints now and prints the session id, `/exit` ends.
//! The session layer holds the chat (`session::Conversation`); this is its command line.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use clap::Args;

use super::Exit;
use super::run_options::RunOptions;
use super::signals::cancelled_by_signals;
use crate::output::result::Status;
use crate::session::{Conversation, Inputs, RunRequest, Stop, blocking};

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// The agent file.
    pub agent: PathBuf,
    /// An input value, NAME=VALUE (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
    /// A YAML file of input values.
    #[arg(long = "vars", value_name = "FILE")]
    pub vars_file: Option<PathBuf>,
    #[command(flatten)]
    pub run: RunOptions,
}

/// Exits with the last turn's status (0 when there was none).
pub fn run(args: ChatArgs) -> Exit {
    chat(&args).unwrap_or_else(|stop| {
        stop.print();
        stop.status
    })
}

fn chat(args: &ChatArgs) -> Result<Exit, Stop> {
    let runtime = blocking::runtime()?;
    let request = RunRequest {
        inputs: Inputs::Vars {
            file: args.vars_file.clone(),
            vars: args.vars.clone(),
        },
        settings: args.run.settings(cancelled_by_signals()),
        ..RunRequest::new(&args.agent)
    };
    let mut chat = runtime.block_on(Conversation::open(request))?;
    let (name, session_id) = (chat.agent_name(), chat.session_id());
    eprintln!("chat with {name} (session {session_id}); /reset, /save, /exit");
    let mut exit = Exit::Completed;
    for line in std::io::stdin().lock().lines().map_while(Result::ok) {
        match line.trim() {
            "" => continue,
            "/exit" => break,
            "/reset" => {
                chat.reset();
                eprintln!("(history cleared)");
            }
            "/save" => match chat.save() {
                Some(Ok(_)) => outln!("saved session {}", chat.session_id()),
                Some(Err(error)) => eprintln!("error: {error}"),
                None => eprintln!("this agent keeps no checkpoints (`checkpoints: false`)"),
            },
            line => match runtime.block_on(chat.turn(line)) {
                Err(refused) => {
                    refused.print();
                    exit = refused.status;
                    continue;
                }
                Ok(None) => break,
                Ok(Some(result)) => {
                    args.run.print_result(&result);
                    exit = result.status;
                    if result.status == Status::Interrupted {
                        break;
                    }
                }
            },
        }
        let _ = std::io::stdout().flush();
    }
    runtime.block_on(chat.close());
    Ok(exit)
}
