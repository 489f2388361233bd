//! MCP benchmarks against the reference server (`npm ci --prefix tests/mcp-server` first).
//!
//! * `mcp/start_list_stop`: spawn the stdio server, `initialize`, `tools/list`, shut it
//!   down (stdin closed, then wait): what an `mcp` entry adds to a run's start and end.
//! * `mcp/call_echo/stdio` and `mcp/call_echo/http`: one `tools/call` round trip through
//!   the tool the model calls, result mapping included.
//! * runner as the server: `mcp/agent_call/stdio` (`runner mcp`) and `mcp/agent_call/http`
//!   (`/mcp` of `runner serve`): one `tools/call` of a one-step agent answered by the
//!   zero-latency mock model, from call to result; `mcp/agent_run/session`: the same run
//!   through the session layer in this process, what the call adds its overhead to.
//!
//! Run: `cargo bench --bench mcp`

use std::hint::black_box;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use runner::mcp::{Endpoint, McpServers, StartOptions};
use runner::session::{self, RunDirOptions, RunRequest, RunSettings};
use runner::testing::mock_server::{MockResponse, MockServer, Reply};
use runner::tools::{Tool, ToolContext};
use serde_json::json;
use tokio::runtime::Runtime;

fn everything() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp-server/node_modules/.bin/mcp-server-everything");
    assert!(bin.exists(), "run `npm ci --prefix tests/mcp-server` first");
    bin
}

fn stdio() -> Endpoint {
    Endpoint::Stdio {
        command: everything().display().to_string(),
        args: vec!["stdio".into()],
        env: Vec::new(),
        sandbox: Vec::new(),
    }
}

fn options() -> StartOptions {
    let (sender, cancel) = tokio::sync::watch::channel(false);
    std::mem::forget(sender); // never cancelled
    StartOptions {
        workspace: std::env::temp_dir(),
        protected: Default::default(),
        env: Default::default(),
        cancel,
        answers: Vec::new(),
        cassette: Default::default(),
    }
}

fn start(runtime: &Runtime, endpoint: Endpoint) -> Arc<McpServers> {
    runtime
        .block_on(McpServers::start(
            vec![(endpoint, Duration::from_secs(30))],
            &options(),
        ))
        .expect("the reference server starts")
}

fn echo(runtime: &Runtime, servers: &McpServers, endpoint: &Endpoint) -> Arc<dyn Tool> {
    let _guard = runtime.enter();
    servers
        .tools(
            endpoint,
            "",
            Some(&["echo".to_string()]),
            runner::spec::tools::DEFAULT_MCP_CALL_TIMEOUT,
        )
        .expect("echo is offered")
        .remove(0)
}

struct HttpServer(Child, u16);

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http_server() -> HttpServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(everything())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the HTTP server never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    HttpServer(child, port)
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("mcp");
    group.sample_size(10);
    group.bench_function("start_list_stop", |b| {
        b.iter(|| {
            let servers = start(&runtime, stdio());
            runtime.block_on(servers.shutdown());
        })
    });

    let ctx = ToolContext::detached("bench");
    let arguments = json!({"message": "hello"});
    let stdio_servers = start(&runtime, stdio());
    let tool = echo(&runtime, &stdio_servers, &stdio());
    group.sample_size(50);
    group.bench_function("call_echo/stdio", |b| {
        b.iter(|| black_box(runtime.block_on(tool.call(arguments.clone(), &ctx))))
    });
    runtime.block_on(stdio_servers.shutdown());

    let server = http_server();
    let endpoint = Endpoint::Http {
        url: format!("http://127.0.0.1:{}/mcp", server.1),
        headers: Vec::new(),
    };
    let http_servers = start(&runtime, endpoint.clone());
    let tool = echo(&runtime, &http_servers, &endpoint);
    group.bench_function("call_echo/http", |b| {
        b.iter(|| black_box(runtime.block_on(tool.call(arguments.clone(), &ctx))))
    });
    runtime.block_on(http_servers.shutdown());
    group.finish();
}

/// A one-step agent in a fresh directory, its model the mock (which always answers).
fn agent_dir(mock: &MockServer) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("runner-bench-mcp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let agent = format!(
        "name: bench\ndescription: Answers.\nmodel: {{ provider: openai, name: m, base_url: \"{}\", api_key_env: BENCH_KEY, retry: {{ max_attempts: 1 }} }}\nprompt: Go\n",
        mock.openai_base_url()
    );
    std::fs::write(dir.join("agent.yaml"), agent).unwrap();
    dir
}

fn agent_call(runtime: &Runtime, endpoint: &Endpoint) -> Arc<dyn Tool> {
    let _guard = runtime.enter();
    let servers = start(runtime, endpoint.clone());
    let tool = servers
        .tools(
            endpoint,
            "",
            Some(&["bench".to_string()]),
            runner::spec::tools::DEFAULT_MCP_CALL_TIMEOUT,
        )
        .expect("runner offers the agent as a tool")
        .remove(0);
    std::mem::forget(servers); // stopped with the process
    tool
}

fn bench_agents(c: &mut Criterion) {
    // SAFETY: the first thing this function does, while no other thread runs (the
    // runtime of `bench` has ended): the run in this process reads the key from here.
    unsafe { std::env::set_var("BENCH_KEY", "not-a-key") };
    let mock = MockServer::start();
    mock.answer_only()
        .forget_requests()
        .route(|_| Some(MockResponse::reply(Reply::text("done"))));
    let dir = agent_dir(&mock);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("mcp");
    group.sample_size(50);
    let ctx = ToolContext::detached("bench");
    let arguments = json!({"input": "hello"});
    let call = |tool: &Arc<dyn Tool>| {
        let output = runtime.block_on(tool.call(arguments.clone(), &ctx));
        assert!(output.success, "{:?}", output.error);
        black_box(output)
    };

    let stdio = Endpoint::Stdio {
        command: env!("CARGO_BIN_EXE_runner").into(),
        args: vec!["mcp".into(), dir.display().to_string()],
        env: vec![("BENCH_KEY".into(), "not-a-key".into())],
        sandbox: Vec::new(),
    };
    let tool = agent_call(&runtime, &stdio);
    group.bench_function("agent_call/stdio", |b| b.iter(|| call(&tool)));

    let server = RunnerServe::start(&dir);
    let http = Endpoint::Http {
        url: format!("http://127.0.0.1:{}/mcp", server.1),
        headers: Vec::new(),
    };
    let tool = agent_call(&runtime, &http);
    group.bench_function("agent_call/http", |b| b.iter(|| call(&tool)));

    // The same run in this process (its run directory under `dir`, as the servers').
    let run = || {
        let request = RunRequest {
            settings: RunSettings {
                run_dir: Some(RunDirOptions::default()),
                ..RunSettings::default()
            },
            ..RunRequest::new(dir.join("agent.yaml"))
        };
        let ended = runtime.block_on(async { session::start(request).await?.outcome().await });
        black_box(ended.expect("the run ends"))
    };
    std::env::set_current_dir(&dir).unwrap();
    group.bench_function("agent_run/session", |b| b.iter(run));
    group.finish();
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `runner serve` on a free loopback port, in `dir`.
struct RunnerServe(Child, u16);

impl RunnerServe {
    fn start(dir: &std::path::Path) -> RunnerServe {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_runner"))
            .args(["serve", ".", "--listen", &format!("127.0.0.1:{port}")])
            .current_dir(dir)
            .env("BENCH_KEY", "not-a-key")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "runner serve never listened");
            std::thread::sleep(Duration::from_millis(50));
        }
        RunnerServe(child, port)
    }
}

impl Drop for RunnerServe {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

criterion_group!(benches, bench, bench_agents);
criterion_main!(benches);
