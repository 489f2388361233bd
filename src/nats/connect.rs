//! Connecting to NATS. Credentials come from the environment, as the `nats` command line
//! tool takes them (`NATS_CREDS`: a `.creds` file; `NATS_USER` and `NATS_PASSWORD`;
//! `NATS_TOKEN`), or from the URL (`nats://user:pass@host`): never from a job, which any
//! submitter can write.

use std::time::Duration;

use async_nats::{Client, ConnectOptions};

/// A NATS operation that failed: what was being done, and why.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{what}: {reason}")]
pub struct NatsError {
    pub what: String,
    pub reason: String,
}

impl NatsError {
    pub fn new(what: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        NatsError {
            what: what.into(),
            reason: reason.to_string(),
        }
    }
}

/// How long connecting may take before the command gives up (a server that is down is
/// said at once; one that does not answer, after this).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connects to the server at `url` as `name` (shown by the server's monitoring). Once
/// connected, the client reconnects by itself for as long as the process runs: a server
/// restart pauses the work, it does not end it.
pub async fn connect(url: &str, name: &str) -> Result<Client, NatsError> {
    let what = || format!("cannot connect to NATS at {url}");
    let mut options = match std::env::var_os("NATS_CREDS") {
        Some(path) => ConnectOptions::with_credentials_file(&path)
            .await
            .map_err(|e| NatsError::new(what(), format!("NATS_CREDS {}: {e}", path.display())))?,
        None => ConnectOptions::new(),
    };
    if let (Ok(user), Ok(password)) = (std::env::var("NATS_USER"), std::env::var("NATS_PASSWORD")) {
        options = options.user_and_password(user, password);
    }
    if let Ok(token) = std::env::var("NATS_TOKEN") {
        options = options.token(token);
    }
    options
        .name(name)
        .connection_timeout(CONNECT_TIMEOUT)
        .max_reconnects(None)
        .connect(url)
        .await
        .map_err(|e| {
            NatsError::new(
                what(),
                format!("{e} (is nats-server running there with JetStream, `nats-server -js`?)"),
            )
        })
}
