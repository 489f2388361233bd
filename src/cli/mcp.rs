//! `runner mcp [PATH...] [-j N]`: the agents under the paths as MCP tools over stdio
//! (`docs/mcp.md`). The server is `crate::serve::mcp`; this is its command line.

use std::path::PathBuf;

use clap::Args;

use super::Exit;

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Agent files, or directories searched recursively for them (as `runner validate`).
    #[arg(default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// Runs at once (default: the number of cores); further calls wait for one to end.
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,
}

/// Calls that may wait for a run slot; past them a call is refused at once.
const QUEUE: usize = 64;

pub fn run(args: McpArgs) -> Exit {
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |jobs| jobs as usize,
    );
    match crate::serve::mcp::stdio::run(args.paths, (jobs, QUEUE)) {
        Ok(()) => Exit::Completed,
        Err(message) => {
            eprintln!("error: {message}");
            Exit::Invalid
        }
    }
}
