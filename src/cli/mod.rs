//! The command line: one file per subcommand. `main` maps every outcome to the exit codes
//! of SPEC §3.1, so scripts can rely on them.

/// `println!` for the commands' stdout, which may be a closed pipe (`runner … | head -1`):
/// a write that fails is dropped instead of panicking, and the exit code stays the run's.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::stdout::print_text(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` for the commands' stdout, as [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::stdout::print_text(&format!($($arg)*))
    };
}

mod batch;
mod batch_nats;
pub(crate) mod binary;
mod chat;
mod exec;
mod exit;
mod init;
mod job_summary;
mod launch;
mod mcp;
mod nats_runtime;
mod render;
mod resume;
mod run_options;
mod runs;
mod schema;
mod serve;
mod sessions;
mod signals;
mod state_dir;
mod stdout;
mod style;
mod submit;
mod test;
mod tools;
mod validate;
mod worker;

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

pub use exit::Exit;

/// A declarative agent runner: validate, run and inspect agents written in YAML.
#[derive(Debug, Parser)]
#[command(name = "runner", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log what happens inside on stderr (HTTP exchanges, retries, MCP servers, checkpoint
    /// records), keys scrubbed; `RUNNER_LOG=LEVEL|TARGET=LEVEL,...` chooses what.
    #[arg(long, global = true)]
    debug: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check agent files (and the files they refer to) without calling any model.
    Validate {
        /// Agent files, or directories searched recursively for .yaml/.yml files.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// `text`: one `file:line:col: error[code]: message` per problem; `json`: a list;
        /// `github`: GitHub Actions annotations; `junit`: JUnit XML, a test case per file;
        /// `gitlab`: GitLab's Code Quality JSON.
        #[arg(long, value_enum, default_value_t = validate::ValidateFormat::Text)]
        format: validate::ValidateFormat,
        /// Validate again on every save (until interrupted).
        #[arg(long)]
        watch: bool,
        /// Append a Markdown summary (the problems at their `file:line`) to this file, as
        /// to `GITHUB_STEP_SUMMARY` in GitHub Actions.
        #[arg(long, value_name = "FILE", conflicts_with = "watch")]
        summary: Option<PathBuf>,
    },
    /// Run an agent.
    Exec(Box<exec::ExecArgs>),
    /// Write a first agent file, NAME.yaml (default agent.yaml), that runs offline.
    Init {
        /// The agent's name and the file's (letters, digits, `-`, `_`).
        name: Option<String>,
    },
    /// Render a transcript as markdown, text for terminals, or its parsed tree as JSON.
    Render {
        /// A transcript file, a run directory, a run id or a session id (its last run) from
        /// `.runner`, or `last` for the latest run there.
        transcript: PathBuf,
        #[arg(long, value_enum, default_value_t = render::RenderFormat::Markdown)]
        format: render::RenderFormat,
        /// Accept only the runner's own transcript grammar (its JSON shapes and spacing);
        /// without it any transcript of the reference format is read.
        #[arg(long)]
        strict: bool,
    },
    /// Talk with an agent, a line at a time (stdin may be a pipe).
    Chat(chat::ChatArgs),
    /// Continue a session: after a crash, an interrupt, a limit, or with an answer.
    Resume(Box<resume::ResumeArgs>),
    /// Serve the agents under the paths over HTTP: runs, live events, sessions, answers.
    Serve(Box<serve::ServeArgs>),
    /// Serve the agents under the paths as MCP tools over stdio (an editor's `mcpServers`).
    Mcp(mcp::McpArgs),
    /// List, show or delete sessions.
    Sessions(sessions::SessionsArgs),
    /// List or show the runs under .runner/runs, or prune old ones.
    Runs(runs::RunsArgs),
    /// List the tools an agent's model would see (starting its MCP servers to ask them).
    Tools {
        /// The agent file.
        agent: PathBuf,
        /// `text`: one line per tool; `json`: names, kinds, servers and parameter schemas.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Run an agent once per line of an inputs file (JSON objects of input values), `-j N`
    /// at once; run again, it goes on where it stopped.
    Batch(Box<batch::BatchCommand>),
    /// Publish a batch to NATS JetStream for `runner worker`s: one job per line of the
    /// inputs file, the agent's files carried with them.
    Submit(Box<submit::SubmitArgs>),
    /// Run the jobs of NATS JetStream (`runner submit`), keeping their sessions there, until
    /// interrupted.
    Worker(Box<worker::WorkerArgs>),
    /// Run agent test files (`*.test.yaml`): each case a run checked against its assertions.
    Test(Box<test::TestArgs>),
    /// Print a completion script for a shell, e.g. `runner completions bash > ~/.local/share/bash-completion/completions/runner`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the JSON Schema of agent files.
    Schema {
        /// Write it to this file instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
        /// The schema of events.jsonl lines instead.
        #[arg(long, conflicts_with_all = ["test", "project"])]
        events: bool,
        /// The schema of test files (`*.test.yaml`) instead.
        #[arg(long, conflicts_with = "project")]
        test: bool,
        /// The schema of the project file (`runner.yaml`) instead.
        #[arg(long)]
        project: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

/// Runs the command line and returns the process exit code.
pub fn main() -> std::process::ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() {
                Exit::Invalid.into()
            } else {
                Exit::Completed.into()
            };
        }
    };
    crate::log::init(cli.debug);
    let exit = match cli.command {
        Command::Validate {
            paths,
            format,
            watch: false,
            summary,
        } => validate::run(&paths, format, summary.as_deref()),
        Command::Validate {
            paths,
            format,
            watch: true,
            ..
        } => validate::watch(&paths, format),
        Command::Schema {
            out,
            events,
            test,
            project,
        } => schema::run(out.as_deref(), events, test, project),
        Command::Exec(args) => exec::run(*args),
        Command::Init { name } => init::run(name.as_deref()),
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut command, "runner", &mut script);
            out!("{}", String::from_utf8_lossy(&script));
            Exit::Completed
        }
        Command::Resume(args) => resume::run(*args),
        Command::Chat(args) => chat::run(args),
        Command::Serve(args) => serve::run(*args),
        Command::Mcp(args) => mcp::run(args),
        Command::Sessions(args) => sessions::run(args),
        Command::Runs(args) => runs::run(args),
        Command::Tools { agent, format } => tools::run(&agent, format),
        Command::Render {
            transcript,
            format,
            strict,
        } => render::run(&transcript, format, strict),
        Command::Test(args) => test::run(*args),
        Command::Batch(args) => batch::run(*args),
        Command::Submit(args) => submit::run(*args),
        Command::Worker(args) => worker::run(*args),
    };
    state_dir::keep_out_of_git(std::path::Path::new(state_dir::STATE_DIR));
    exit.into()
}
