//! The server: its state, its routes, and its life from binding the address to SIGTERM.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, header};
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower_http::cors::CorsLayer;

use super::agents::Catalog;
use super::body::MAX_BODY;
use super::guard::{Guarded, Timeouts};
use super::options::{Options, token};
use super::runs::Runs;
use super::slots::Slots;
use super::{api_agents, api_runs, api_sessions, auth, events, openapi, web};
use crate::checkpoint::CheckpointStore;
use crate::session::files::{default_sessions_dir, sessions_dir};
use crate::session::{RunDirOptions, RunSettings, SessionsAt};
use crate::spec::AgentSpec;
use crate::telemetry::Telemetry;
use crate::trace_env::Carried;

/// How long runs in flight get to end, checkpointed, after SIGTERM.
const INTERRUPT_WAIT: Duration = Duration::from_secs(10);

/// How long connections still open get, once the runs have ended, to finish their answers
/// (the streams' last events). A client that sent half a request, or reads slowly, does
/// not hold the exit longer than that.
const CONNECTIONS_GRACE: Duration = Duration::from_secs(1);

/// How long a connection may stay open with no request, after its accept or its last
/// answer (an event stream writes at least every 15 seconds, so it is never idle that long).
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// What every handler shares.
pub struct Server {
    pub catalog: Catalog,
    pub runs: Arc<Runs>,
    pub slots: Slots,
    /// Where sessions are kept: `.runner/sessions`, or NATS (`--nats`), shared with the
    /// other servers that use it.
    pub sessions: SessionsAt,
    /// The store at `sessions`, opened once, for the session routes (each run opens its
    /// own, as `runner exec` does).
    pub store: Arc<dyn CheckpointStore>,
    /// OpenTelemetry export of every run's spans (`--otel`, `OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub telemetry: Option<Arc<Telemetry>>,
}

impl Server {
    /// A server of the agents under `paths`, `jobs` runs at once and `queue` waiting, its
    /// sessions at `sessions`. Called before any runtime starts: connecting to NATS blocks.
    pub fn at(
        paths: Vec<std::path::PathBuf>,
        jobs: usize,
        queue: usize,
        sessions: SessionsAt,
    ) -> Result<Self, String> {
        let store = sessions.open().map_err(|error| {
            format!(
                "cannot open the sessions in {}: {error}",
                sessions.describe()
            )
        })?;
        Ok(Server {
            catalog: Catalog::new(paths),
            runs: Arc::default(),
            slots: Slots::new(jobs, queue),
            sessions,
            store: Arc::from(store),
            telemetry: None,
        })
    }

    /// How a run is hosted here: a run directory under `.runner/runs` (its result, events
    /// and transcript stay readable after the server forgets it); no terminal, no answers
    /// file — a question or an approval pauses the run until `POST …/answer`.
    pub fn settings(&self) -> RunSettings {
        RunSettings {
            run_dir: Some(RunDirOptions::default()),
            telemetry: self.telemetry.clone(),
            ..RunSettings::default()
        }
    }

    /// [`Server::settings`] for a request that may name its caller's span (W3C Trace
    /// Context headers): the run's spans are its children.
    pub fn settings_for(&self, headers: &HeaderMap) -> RunSettings {
        let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
        RunSettings {
            caller_trace: header("traceparent")
                .and_then(|parent| Carried::parse(parent, header("tracestate"))),
            ..self.settings()
        }
    }
}

impl Server {
    /// Where a new run keeps its session: NATS when the server uses it (whatever the file
    /// says, as `runner exec --nats`); else where the file says, which
    /// [`Server::refuse_unreachable_sessions`] checked is the server's directory.
    pub fn new_run_sessions(&self) -> Option<SessionsAt> {
        match &self.sessions {
            SessionsAt::Dir(_) => None,
            remote => Some(remote.clone()),
        }
    }

    /// A file whose `checkpoints: {dir: ...}` keeps its sessions outside the server's
    /// sessions directory is not run: its session could not be listed, answered or
    /// resumed here. (Under `--nats` the session goes to NATS, so it is run.)
    pub fn refuse_unreachable_sessions(&self, spec: &AgentSpec, file: &str) -> Result<(), String> {
        let SessionsAt::Dir(served) = &self.sessions else {
            return Ok(());
        };
        let Some(dir) = sessions_dir(spec) else {
            return Ok(());
        };
        let plain = |path: &Path| path.strip_prefix(".").unwrap_or(path).to_path_buf();
        if plain(&dir) == plain(served) {
            return Ok(());
        }
        Err(format!(
            "{file} keeps its sessions in `{}` (`checkpoints: {{dir: ...}}`), and this server \
             serves the sessions of `{}` only: the run's session could not be listed, answered \
             or resumed here. Remove `dir` from the file's `checkpoints`, or run it with \
             `runner exec` (and `runner resume --dir`)",
            dir.display(),
            served.display()
        ))
    }
}

pub type Shared = Arc<Server>;

fn routes(server: Shared, options: &Options) -> Router {
    let mcp = super::mcp::http::service(server.clone(), options.listen, &options.allow_origin);
    Router::new()
        .route_service("/mcp", mcp)
        .route("/api/openapi.json", get(openapi::document))
        .route("/api/agents", get(api_agents::list))
        .route("/api/runs", post(api_runs::start))
        .route("/api/runs/{id}", get(api_runs::show))
        .route("/api/runs/{id}/events", get(events::stream))
        .route("/api/runs/{id}/transcript", get(api_runs::transcript))
        .route("/api/runs/{id}/cancel", post(api_runs::cancel))
        .route("/api/sessions", get(api_sessions::list))
        .route(
            "/api/sessions/{id}",
            get(api_sessions::show).delete(api_sessions::delete),
        )
        .route("/api/sessions/{id}/answer", post(api_sessions::answer))
        .route("/api/sessions/{id}/resume", post(api_sessions::resume))
        .merge(super::a2a::routes(server.clone(), options))
        .fallback(api_agents::no_route)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(server)
}

/// The whole app: the web view's files, and the API's routes behind the token when there
/// is one; CORS when origins are allowed.
fn app(server: Shared, options: &Options, token: Option<String>) -> Result<Router, String> {
    let mut app = routes(server, options);
    if let Some(token) = token {
        app = app.layer(axum::middleware::from_fn_with_state(
            Arc::new(token),
            auth::require_token,
        ));
    }
    let mut app = web::routes().merge(app);
    if !options.allow_origin.is_empty() {
        let origins = options
            .allow_origin
            .iter()
            .map(|origin| {
                HeaderValue::from_str(origin)
                    .map_err(|_| format!("--allow-origin `{origin}` is not a valid origin"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let cors = CorsLayer::new()
            .allow_origin(origins)
            .allow_methods([Method::GET, Method::POST, Method::DELETE])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                HeaderName::from_static("last-event-id"),
                // What an A2A client's page sends (`/a2a/{agent}`).
                HeaderName::from_static("a2a-version"),
                HeaderName::from_static("a2a-extensions"),
            ]);
        app = app.layer(cors);
    }
    Ok(app)
}

/// Serves until SIGINT or SIGTERM, then stops accepting, interrupts the runs in flight
/// (they end `interrupted`, checkpointed) and returns once they have.
pub fn run(options: Options) -> Result<(), String> {
    let token = token(&options)?;
    let sessions = match &options.nats {
        Some(url) => SessionsAt::Nats(url.clone()),
        None => SessionsAt::Dir(default_sessions_dir()),
    };
    let mut server = Server::at(options.paths.clone(), options.jobs, options.queue, sessions)?;
    server.telemetry = Telemetry::from_env(options.otel);
    let server = Arc::new(server);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start the runtime: {error}"))?;
    runtime.block_on(serve(server, options, token))
}

async fn serve(server: Shared, options: Options, token: Option<String>) -> Result<(), String> {
    let (stop, stopping) = watch::channel(false);
    let app = app(server.clone(), &options, token)?;
    let listener = TcpListener::bind(options.listen)
        .await
        .map_err(|error| format!("cannot listen on {}: {error}", options.listen))?;
    let address = listener
        .local_addr()
        .map_err(|error| format!("cannot listen on {}: {error}", options.listen))?;
    watch_signals(stop)?;
    eprintln!(
        "runner serve: listening on http://{address} (-j {}; sessions in {})",
        options.jobs,
        server.sessions.describe()
    );
    // On the signal: no new connections (the graceful shutdown), no new runs, and the runs
    // in flight interrupted; their streams end with them, and the shutdown with the streams.
    let signalled = {
        let mut stopping = stopping.clone();
        async move {
            let _ = stopping.wait_for(|stop| *stop).await;
        }
    };
    let (runs_ended, mut interrupted) = watch::channel(false);
    let interrupting = {
        let server = server.clone();
        let mut stopping = stopping;
        tokio::spawn(async move {
            let _ = stopping.wait_for(|stop| *stop).await;
            eprintln!("runner serve: stopping: interrupting the runs in flight");
            server.slots.close();
            server.runs.interrupt_all(INTERRUPT_WAIT).await;
            runs_ended.send_replace(true);
        })
    };
    let timeouts = Timeouts {
        header: options.header_timeout,
        idle: IDLE_TIMEOUT,
    };
    let listener = Guarded::new(listener, options.max_connections, timeouts);
    let serving = axum::serve(listener, app).with_graceful_shutdown(signalled);
    // A connection still open once the runs have ended (and their streams with them) gets
    // a short grace, then is dropped: a client does not hold the process.
    tokio::select! {
        served = serving => served.map_err(|error| format!("the server failed: {error}"))?,
        () = async {
            let _ = interrupted.wait_for(|ended| *ended).await;
            tokio::time::sleep(CONNECTIONS_GRACE).await;
        } => {}
    }
    let _ = interrupting.await;
    eprintln!("runner serve: stopped");
    Ok(())
}

/// Flips `stop` on the first SIGINT or SIGTERM.
fn watch_signals(stop: watch::Sender<bool>) -> Result<(), String> {
    use tokio::signal::unix::{SignalKind, signal};
    let cannot = |error: std::io::Error| format!("cannot watch signals: {error}");
    let mut interrupt = signal(SignalKind::interrupt()).map_err(cannot)?;
    let mut terminate = signal(SignalKind::terminate()).map_err(cannot)?;
    tokio::spawn(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        stop.send_replace(true);
    });
    Ok(())
}
