//! `runner serve [PATH...] [--listen ADDR] [-j N] [--nats URL]`: the agents under the paths, over HTTP
//! (`docs/serve.md`). The server is `crate::serve`; this is its command line.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use super::Exit;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Agent files, or directories searched recursively for them (as `runner validate`).
    #[arg(default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// The address to listen on. Any but a loopback address needs --token-env.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Runs at once (default: the number of cores).
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,
    /// Requests for a run that may wait for one of the -j slots; past them, 429.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub queue: usize,
    /// The environment variable holding the token requests must carry
    /// (`Authorization: Bearer TOKEN`, at least 16 characters).
    #[arg(long, value_name = "NAME")]
    pub token_env: Option<String>,
    /// An origin allowed to call the API from a browser (repeatable); none: no CORS.
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// Keep sessions in the NATS server at this URL (JetStream's key-value store), so
    /// several servers share them, instead of `.runner/sessions`.
    #[arg(long, value_name = "URL")]
    pub nats: Option<String>,
    /// Connections open at once; past them a client waits until one closes.
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Seconds a request's head (its line and headers) may take from its first byte; a
    /// client slower than that is disconnected.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_timeout: u64,
    /// Export OpenTelemetry spans of every run over OTLP/HTTP (default endpoint
    /// http://localhost:4318); also on when OTEL_EXPORTER_OTLP_ENDPOINT is set; a request's
    /// `traceparent` header makes its run a child of the caller's span (docs/telemetry.md).
    #[arg(long)]
    pub otel: bool,
}

pub fn run(args: ServeArgs) -> Exit {
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |jobs| jobs as usize,
    );
    let options = crate::serve::Options {
        paths: args.paths,
        listen: args.listen,
        jobs,
        queue: args.queue,
        token_env: args.token_env,
        allow_origin: args.allow_origin,
        nats: args.nats,
        max_connections: args.max_connections as usize,
        header_timeout: std::time::Duration::from_secs(args.header_timeout),
        otel: args.otel,
    };
    match crate::serve::run(options) {
        Ok(()) => Exit::Completed,
        Err(message) => {
            eprintln!("error: {message}");
            Exit::Invalid
        }
    }
}
