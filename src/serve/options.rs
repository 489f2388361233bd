//! What `runner serve` is told: the agent files, where to listen, how many runs at once,
//! who may call it.

use std::net::SocketAddr;
use std::path::PathBuf;

/// The server's settings (the CLI's `runner serve` arguments).
#[derive(Debug, Clone)]
pub struct Options {
    /// Agent files, or directories searched for them (as `runner validate`).
    pub paths: Vec<PathBuf>,
    pub listen: SocketAddr,
    /// Runs at once.
    pub jobs: usize,
    /// Requests for a run that may wait for one of the `jobs` slots; past them, 429.
    pub queue: usize,
    /// The environment variable holding the bearer token every request must carry.
    pub token_env: Option<String>,
    /// Origins allowed to call the API from a browser (CORS); none: no CORS headers.
    pub allow_origin: Vec<String>,
    /// The NATS server keeping the sessions (`--nats URL`); `None`: `.runner/sessions`.
    pub nats: Option<String>,
    /// Connections open at once; the next one waits until one closes.
    pub max_connections: usize,
    /// How long a request's head (its line and headers) may take from its first byte.
    pub header_timeout: std::time::Duration,
    /// Export OpenTelemetry spans (`--otel`; also on when `OTEL_EXPORTER_OTLP_ENDPOINT` is set).
    pub otel: bool,
}

/// The token, read from its variable: required unless the server listens on loopback.
pub fn token(options: &Options) -> Result<Option<String>, String> {
    let Some(name) = &options.token_env else {
        if options.listen.ip().is_loopback() {
            return Ok(None);
        }
        return Err(format!(
            "listening on {} needs a token: set one in an environment variable and give its \
             name with --token-env NAME (requests then carry `Authorization: Bearer TOKEN`)",
            options.listen
        ));
    };
    match std::env::var(name) {
        Ok(token) if token.trim().len() >= 16 => {
            // Never echoed: an answer that held it would have it replaced.
            crate::secrets::remember(token.trim());
            Ok(Some(token.trim().to_string()))
        }
        Ok(_) => Err(format!(
            "--token-env {name}: the token must be at least 16 characters"
        )),
        Err(_) => Err(format!("--token-env {name}: the variable is not set")),
    }
}
