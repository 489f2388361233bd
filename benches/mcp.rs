//! MCP benchmarks against the reference server (`npm ci --prefix tests/mcp-server` first).
//!
//! * `mcp/start_list_stop`: spawn the stdio server, `initialize`, `tools/list`, shut it
//!   down (stdin closed, then wait): what an `mcp` entry adds to a run's start and end.
//! * `mcp/call_echo/stdio` and `mcp/call_echo/http`: one `tools/call` round trip through
//!   the tool the model calls, result mapping included.
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
        deny_env: Vec::new(),
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

criterion_group!(benches, bench);
criterion_main!(benches);
