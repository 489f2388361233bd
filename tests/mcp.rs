//! MCP tool servers end to end: the real binary, the mock model server, and the official
//! reference server `@modelcontextprotocol/server-everything` (installed by `.ci/run` with
//! `npm ci --prefix tests/mcp-server`), over stdio and over Streamable HTTP; plus servers
//! that are missing, exit at once, or never answer.

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use runner::testing::mock_server::{MockRequest, MockResponse, MockServer, Reply};
use serde_json::{Value, json};
use support::{Outcome, Run, tempdir};

const KEY_ENV: &str = "RUNNER_TEST_KEY";

/// The reference server's executable.
fn everything() -> PathBuf {
    let bin = support::root().join("tests/mcp-server/node_modules/.bin/mcp-server-everything");
    assert!(
        bin.exists(),
        "the reference MCP server is not installed: run `npm ci --prefix tests/mcp-server` (.ci/run does)"
    );
    bin
}

/// A stdio entry for the reference server that writes its pid to `server.pid` first, so
/// tests can check it was stopped.
fn stdio_entry(extra: &str) -> String {
    format!(
        "  - mcp:\n      command: sh\n      args: [\"-c\", \"echo $$ > server.pid; exec \\\"$0\\\" stdio\", \"{}\"]\n{extra}",
        everything().display()
    )
}

struct Case {
    dir: PathBuf,
}

impl Case {
    fn new(mock: &MockServer, body: &str) -> Self {
        Self::named("agent.yaml", mock, body)
    }

    fn named(file: &str, mock: &MockServer, body: &str) -> Self {
        let dir = tempdir("mcp");
        let case = Case { dir };
        case.write(file, mock, body);
        case
    }

    fn write(&self, file: &str, mock: &MockServer, body: &str) {
        std::fs::write(
            self.dir.join(file),
            format!(
                "name: {}\nmodel: {{ provider: openai, name: mock-model, base_url: \"{}\", api_key_env: {KEY_ENV}, retry: {{ max_attempts: 1 }} }}\n{body}",
                file.split('.').next().unwrap_or(file),
                mock.openai_base_url()
            ),
        )
        .unwrap();
    }

    fn command(&self, args: &[&str]) -> Run {
        Run::new(
            ["exec", "agent.yaml", "--run-dir", "run", "--output", "json"]
                .iter()
                .chain(args),
        )
        .current_dir(&self.dir)
        .env(KEY_ENV, "sk-test-key")
    }

    fn run(&self) -> Outcome {
        self.command(&[]).run()
    }

    fn events(&self) -> Vec<Value> {
        support::read_events(&self.dir.join("run/events.jsonl"))
    }

    /// Everything the run left on disk, for leak checks.
    fn run_files(&self) -> String {
        ["transcript.txt", "events.jsonl", "result.json"]
            .iter()
            .map(|f| std::fs::read_to_string(self.dir.join("run").join(f)).unwrap_or_default())
            .collect()
    }

    /// Asserts the server whose pid is in `file` is no longer running.
    fn assert_stopped(&self, file: &str) {
        let pid = std::fs::read_to_string(self.dir.join(file))
            .unwrap_or_else(|_| panic!("the server wrote {file}"))
            .trim()
            .to_string();
        let proc = PathBuf::from(format!("/proc/{pid}"));
        let deadline = Instant::now() + Duration::from_secs(5);
        while proc.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!proc.exists(), "the server (pid {pid}) is still running");
    }
}

/// Polls `condition` until it holds; fails the test after 20 s.
fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends SIGINT to a running `runner`.
fn interrupt(child: &Child) {
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
}

/// The tool results the model got back in `request`, by tool call id order.
fn tool_results(request: &MockRequest) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn completed_tools(events: &[Value]) -> Vec<(String, bool)> {
    events
        .iter()
        .filter(|e| e["type"] == "agent.tool.execution.completed")
        .map(|e| {
            (
                e["data"]["toolName"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                e["data"]["result"]["success"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

#[test]
fn stdio_server_tools_are_called_with_the_servers_schemas_and_results_mapped() {
    let mock = MockServer::start();
    mock.push(MockResponse::reply(
        Reply::tool_call("ev_echo", json!({"message": "hello"}))
            .with_tool_call("ev_get-sum", json!({"a": 2, "b": 3}))
            .with_tool_call("ev_get-sum", json!({"a": "two"}))
            .with_tool_call("ev_get-tiny-image", json!({}))
            .with_tool_call("ev_get-resource-reference", json!({}))
            .with_tool_call("ev_get-structured-content", json!({"location": "Chicago"})),
    ));
    mock.push(MockResponse::text("All done."));
    let case = Case::new(
        &mock,
        &format!(
            "prompt: Use the tools.\ntools:\n{}",
            stdio_entry(
                "      tools: [echo, get-sum, get-tiny-image, get-resource-reference, get-structured-content]\n      prefix: ev_\n"
            )
        ),
    );
    let outcome = case.run();
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(outcome.json()["output"], "All done.");

    // The model sees only the allowlisted tools, prefixed, with the server's own schemas.
    let requests = mock.requests();
    let tools = requests[0].body["tools"].as_array().unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "ev_echo",
            "ev_get-sum",
            "ev_get-tiny-image",
            "ev_get-resource-reference",
            "ev_get-structured-content"
        ]
    );
    let echo = &tools[0]["function"];
    assert_eq!(echo["description"], "Echoes back the input string");
    assert_eq!(
        echo["parameters"]["properties"]["message"]["type"],
        "string"
    );
    assert_eq!(echo["parameters"]["required"], json!(["message"]));

    // Text, isError, image and embedded resource content, in the model's call order.
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 6, "{results:?}");
    assert_eq!(results[0], "Echo: hello");
    assert!(results[1].contains('5'), "{}", results[1]);
    assert!(
        results[2].starts_with("Error: ") && results[2].contains("Invalid arguments"),
        "{}",
        results[2]
    );
    assert!(
        results[3].contains("[image content: image/png,") && results[3].contains("not shown"),
        "{}",
        results[3]
    );
    assert!(
        !results[3].contains("iVBOR"),
        "base64 never reaches the model"
    );
    assert!(
        results[4].contains("[resource demo://resource/") && results[4].contains("(text/plain)]"),
        "{}",
        results[4]
    );

    // Structured content: the text goes to the model, the value is kept in the metadata.
    let events = case.events();
    let structured = events
        .iter()
        .find(|e| {
            e["type"] == "agent.tool.execution.completed"
                && e["data"]["toolName"] == "ev_get-structured-content"
        })
        .unwrap();
    let result = &structured["data"]["result"];
    assert_eq!(result["success"], true);
    assert!(
        result["metadata"]["structured"]["temperature"].is_number(),
        "{result}"
    );
    assert!(results[5].contains("temperature"), "{}", results[5]);

    // The calls ran concurrently over the one connection; completions come in any order.
    let mut completed = completed_tools(&events);
    completed.sort();
    assert_eq!(
        completed,
        [
            ("ev_echo".to_string(), true),
            ("ev_get-resource-reference".to_string(), true),
            ("ev_get-structured-content".to_string(), true),
            ("ev_get-sum".to_string(), false),
            ("ev_get-sum".to_string(), true),
            ("ev_get-tiny-image".to_string(), true),
        ]
    );
    case.assert_stopped("server.pid");
}

#[test]
fn the_server_gets_its_env_but_not_the_runners_keys() {
    let mock = MockServer::start();
    mock.push(MockResponse::reply(Reply::tool_call("get-env", json!({}))));
    mock.push(MockResponse::text("Seen."));
    let case = Case::new(
        &mock,
        &format!(
            "env: [GREETING]\nprompt: Look.\ntools:\n{}",
            stdio_entry(
                "      env: { GREETING: \"{{ env.GREETING }}!\", LOG_LEVEL: warn }\n      tools: [get-env]\n"
            )
        ),
    );
    let outcome = case
        .command(&[])
        .env("GREETING", "hi-there")
        .env("OPENAI_API_KEY", "sk-openai-must-not-leak")
        .env("DEPLOY_TOKEN", "tok-must-not-leak")
        .run();
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let result = &tool_results(&mock.requests()[1])[0];
    assert!(result.contains("\"GREETING\": \"hi-there!\""), "{result}");
    assert!(result.contains("\"LOG_LEVEL\": \"warn\""), "{result}");
    for secret in [
        "sk-openai-must-not-leak",
        "tok-must-not-leak",
        "sk-test-key",
    ] {
        assert!(!result.contains(secret), "{secret} reached the server");
    }
    case.assert_stopped("server.pid");
}

/// The reference server over Streamable HTTP on a free port; killed when dropped.
struct HttpServer {
    child: Child,
    port: u16,
}

impl HttpServer {
    fn start() -> Self {
        let port = free_port();
        let child = Command::new(everything())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the reference server starts");
        let server = HttpServer { child, port };
        wait_until("the HTTP server listens", || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        server
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A TCP proxy in front of `upstream` that keeps every byte the client sent, so the test
/// can see the request headers on the wire. Its threads end with their connections.
fn recording_proxy(upstream: u16) -> (u16, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Arc<Mutex<Vec<u8>>> = Arc::default();
    let record = seen.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                return;
            };
            let (mut client_read, mut server_write) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (mut server_read, mut client_write) = (server, client);
            let record = record.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n @ 1..) = client_read.read(&mut buf) {
                    record.lock().unwrap().extend_from_slice(&buf[..n]);
                    if server_write.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = server_write.shutdown(std::net::Shutdown::Write);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut server_read, &mut client_write);
                let _ = client_write.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    (port, seen)
}

#[test]
fn streamable_http_server_gets_rendered_headers_and_the_token_stays_out_of_the_record() {
    let server = HttpServer::start();
    let (proxy, seen) = recording_proxy(server.port);
    let mock = MockServer::start();
    mock.push(MockResponse::reply(Reply::tool_call(
        "get-sum",
        json!({"a": 20, "b": 22}),
    )));
    mock.push(MockResponse::text("42 it is."));
    let case = Case::new(
        &mock,
        &format!(
            "env: [MCP_TOKEN]\nprompt: Add.\ntools:\n  - mcp:\n      url: http://127.0.0.1:{proxy}/mcp\n      headers: {{ Authorization: \"Bearer {{{{ env.MCP_TOKEN }}}}\" }}\n      tools: [get-sum, echo]\n"
        ),
    );
    let outcome = case.command(&[]).env("MCP_TOKEN", "tok-http-4711").run();
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let result = &tool_results(&mock.requests()[1])[0];
    assert!(result.contains("42"), "{result}");

    let wire = String::from_utf8_lossy(&seen.lock().unwrap()).to_ascii_lowercase();
    assert!(
        wire.contains("authorization: bearer tok-http-4711"),
        "the rendered header reached the server"
    );
    for place in [&outcome.stdout, &outcome.stderr, &case.run_files()] {
        assert!(!place.contains("tok-http-4711"), "the token leaked");
    }
    assert_eq!(
        completed_tools(&case.events()),
        [("get-sum".to_string(), true)]
    );
}

#[test]
fn runner_tools_lists_every_tool_with_its_origin_and_schema() {
    let case = Case::named(
        "agent.yaml",
        &MockServer::start(),
        &format!(
            "tools:\n  - builtin: read_file\n{}",
            stdio_entry("      prefix: ev_\n")
        ),
    );
    let outcome = Run::new(["tools", "agent.yaml", "--format", "json"])
        .current_dir(&case.dir)
        .run();
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let listed = outcome.json();
    let tools = listed["tools"].as_array().unwrap();
    assert_eq!(tools[0]["name"], "read_file");
    assert_eq!(tools[0]["kind"], "builtin");
    let sum = tools
        .iter()
        .find(|t| t["name"] == "ev_get-sum")
        .expect("the server's tools are listed");
    assert_eq!(sum["kind"], "mcp");
    assert!(sum["server"].as_str().unwrap().starts_with("sh -c"));
    assert_eq!(sum["parameters"]["required"], json!(["a", "b"]));
    assert!(tools.len() > 5, "every tool of the server: {tools:?}");

    let text = Run::new(["tools", "agent.yaml"])
        .current_dir(&case.dir)
        .run();
    assert_eq!(text.code, 0);
    assert!(
        text.stdout.contains("ev_echo") && text.stdout.contains("Echoes back the input string"),
        "{}",
        text.stdout
    );
    case.assert_stopped("server.pid");
}

#[test]
fn servers_that_cannot_start_are_clear_errors_before_any_model_call() {
    let mock = MockServer::start();
    let cases = [
        (
            "command: no-such-mcp-server-x\n",
            2,
            "invalid",
            vec!["no-such-mcp-server-x", "program not found"],
        ),
        (
            "command: sh\n      args: [\"-c\", \"echo 'fatal: bad --flag' >&2; exit 3\"]\n",
            1,
            "failed",
            vec!["exited (exit status: 3)", "fatal: bad --flag"],
        ),
        (
            "command: sh\n      args: [\"-c\", \"echo $$ > hang.pid; exec sleep 60\"]\n      startup_timeout: 1s\n",
            1,
            "failed",
            vec!["did not answer `initialize`", "within 1s"],
        ),
    ];
    // A listener that never accepts: the kernel completes the handshake, nobody answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_entry = format!(
        "url: http://127.0.0.1:{}/mcp\n      startup_timeout: 1s\n",
        silent.local_addr().unwrap().port()
    );
    let cases = cases.into_iter().chain([(
        silent_entry.as_str(),
        1,
        "failed",
        vec!["did not answer `initialize`", "within 1s"],
    )]);
    for (entry, code, status, phrases) in cases {
        let case = Case::new(
            &mock,
            &format!("prompt: Hi\ntools:\n  - mcp:\n      {entry}"),
        );
        let started = Instant::now();
        let outcome = case.run();
        assert_eq!(outcome.code, code, "{entry}: {}", outcome.stderr);
        assert!(started.elapsed() < Duration::from_secs(20), "bounded");
        let envelope = outcome.json();
        assert_eq!(envelope["status"], status);
        assert_eq!(envelope["error"]["code"], "mcp_server");
        let message = envelope["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("MCP server `"), "{message}");
        for phrase in phrases {
            assert!(message.contains(phrase), "{phrase:?} not in {message}");
            assert!(outcome.stderr.contains(phrase));
        }
        if entry.contains("hang.pid") {
            case.assert_stopped("hang.pid");
        }
    }
    assert_eq!(mock.request_count(), 0, "no model call was made");
}

#[test]
fn unknown_allowlisted_tools_and_name_collisions_are_configuration_errors() {
    let mock = MockServer::start();
    let typo = Case::new(
        &mock,
        &format!(
            "prompt: Hi\ntools:\n{}",
            stdio_entry("      tools: [ecko]\n")
        ),
    );
    let outcome = typo.run();
    assert_eq!(outcome.code, 2, "{}", outcome.stderr);
    let message = outcome.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("`tools` lists `ecko`") && message.contains("did you mean `echo`?"),
        "{message}"
    );
    typo.assert_stopped("server.pid");

    // The same server twice without a prefix: `echo` would be two tools.
    let twice = Case::new(
        &mock,
        &format!(
            "prompt: Hi\ntools:\n{}{}",
            stdio_entry("      tools: [echo]\n"),
            stdio_entry("      tools: [echo, get-sum]\n")
        ),
    );
    let outcome = twice.run();
    assert_eq!(outcome.code, 2, "{}", outcome.stderr);
    assert!(
        outcome
            .stderr
            .contains("tool `echo`: two tools have this name")
            && outcome.stderr.contains("`prefix`"),
        "{}",
        outcome.stderr
    );
    twice.assert_stopped("server.pid");
    assert_eq!(mock.request_count(), 0);
}

#[test]
fn servers_stop_on_failure_limit_and_interrupt() {
    // A provider failure: exit 1.
    let mock = MockServer::start();
    mock.push(MockResponse::error(400, "bad request"));
    let failed = Case::new(
        &mock,
        &format!(
            "prompt: Hi\ntools:\n{}",
            stdio_entry("      tools: [echo]\n")
        ),
    );
    assert_eq!(failed.run().code, 1);
    failed.assert_stopped("server.pid");

    // A limit: exit 3.
    let mock = MockServer::start();
    mock.push(MockResponse::reply(Reply::tool_call(
        "echo",
        json!({"message": "x"}),
    )));
    let limited = Case::new(
        &mock,
        &format!(
            "prompt: Hi\nlimits: {{ max_llm_calls: 1 }}\ntools:\n{}",
            stdio_entry("      tools: [echo]\n")
        ),
    );
    assert_eq!(limited.run().code, 3);
    limited.assert_stopped("server.pid");

    // SIGINT while the model answers: exit 130.
    let mock = MockServer::start();
    mock.push(MockResponse::text("a b c d e f g h").chunk_delay(Duration::from_millis(500)));
    let interrupted = Case::new(
        &mock,
        &format!(
            "prompt: Hi\ntools:\n{}",
            stdio_entry("      tools: [echo]\n")
        ),
    );
    let child = interrupted.command(&[]).spawn();
    wait_until("the run calls the model", || mock.request_count() > 0);
    interrupt(&child);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130));
    interrupted.assert_stopped("server.pid");
}

#[test]
fn a_sub_agent_has_its_own_server() {
    let mock = MockServer::start();
    mock.route(|request: &MockRequest| {
        let system = request.system_prompt().unwrap_or_default();
        let has_tool_result = request.body["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        let reply = match (system.contains("HELPER"), has_tool_result) {
            (true, false) => Reply::tool_call("echo", json!({"message": "from the helper"})),
            (true, true) => Reply::text("The helper heard: Echo: from the helper"),
            (false, false) => Reply::tool_call("helper", json!({"task": "echo something"})),
            (false, true) => Reply::text("Root done."),
        };
        Some(MockResponse::reply(reply))
    });
    let case = Case::new(
        &mock,
        "system: You are ROOT.\nprompt: Go.\ntools:\n  - name: helper\n    description: Has an echo server.\n    parameters: { type: object, properties: { task: { type: string } }, required: [task] }\n    agent: ./helper.yaml\n",
    );
    case.write(
        "helper.yaml",
        &mock,
        &format!(
            "system: You are HELPER.\ntools:\n{}",
            stdio_entry("      tools: [echo]\n")
        ),
    );
    let outcome = case.run();
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(outcome.json()["output"], "Root done.");
    let root_requests: Vec<MockRequest> = mock
        .requests()
        .into_iter()
        .filter(|r| r.system_prompt().unwrap_or_default().contains("ROOT"))
        .collect();
    let root_tools: Vec<&str> = root_requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        root_tools,
        ["helper"],
        "the root does not get the helper's tools"
    );
    let events = case.events();
    let echo = events
        .iter()
        .find(|e| e["type"] == "agent.tool.execution.completed" && e["data"]["toolName"] == "echo")
        .expect("the helper called its server");
    assert_eq!(echo["depth"], 1);
    assert_eq!(echo["data"]["result"]["success"], true);
    assert_eq!(
        echo["data"]["result"]["metadata"]["mcp_server"]
            .as_str()
            .map(|s| s.starts_with("sh -c")),
        Some(true)
    );
    case.assert_stopped("server.pid");
}

#[test]
fn the_reference_server_is_pinned() {
    let package: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-server/package.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let version = package["dependencies"]["@modelcontextprotocol/server-everything"]
        .as_str()
        .unwrap();
    assert!(
        version.chars().all(|c| c.is_ascii_digit() || c == '.'),
        "an exact version, not a range: {version}"
    );
}

#[test]
fn a_reload_keeps_the_running_server_and_refuses_a_changed_one() {
    let mock = MockServer::start();
    let slow = |reply: Reply| MockResponse::reply(reply).chunk_delay(Duration::from_millis(150));
    mock.push(slow(Reply::tool_call("echo", json!({"message": "one"}))));
    mock.push(slow(Reply::tool_call("get-sum", json!({"a": 1, "b": 1}))));
    mock.push(MockResponse::text("done"));
    let body = |system: &str, entry: &str| {
        format!(
            "system: {system}\nprompt: Go\ntools:\n{}",
            stdio_entry(entry)
        )
    };
    let case = Case::new(&mock, &body("You are OLD.", "      tools: [echo]\n"));
    let save = |text: String| {
        let temp = case.dir.join("agent.yaml.swp");
        std::fs::write(&temp, text).unwrap();
        std::fs::rename(&temp, case.dir.join("agent.yaml")).unwrap();
    };
    let wait_for = |n: usize| wait_until("the next model request", || mock.request_count() >= n);
    let child = case.command(&["--watch"]).spawn();
    wait_for(1);
    // Same server, a wider allowlist: applied at the next step.
    case.write(
        "agent.yaml.next",
        &mock,
        &body("You are NEW.", "      tools: [echo, get-sum]\n"),
    );
    save(std::fs::read_to_string(case.dir.join("agent.yaml.next")).unwrap());
    wait_for(2);
    // A different server (its env changed): refused, the run goes on as it was.
    case.write(
        "agent.yaml.next",
        &mock,
        &body(
            "You are NEWER.",
            "      tools: [echo, get-sum]\n      env: { LOG_LEVEL: debug }\n",
        ),
    );
    save(std::fs::read_to_string(case.dir.join("agent.yaml.next")).unwrap());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("was not started with the run"), "{stderr}");

    let requests = mock.requests();
    let tool_names = |r: &MockRequest| -> Vec<String> {
        r.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(tool_names(&requests[0]), ["echo"]);
    assert_eq!(requests[1].system_prompt().as_deref(), Some("You are NEW."));
    assert_eq!(tool_names(&requests[1]), ["echo", "get-sum"]);
    assert_eq!(requests[2].system_prompt().as_deref(), Some("You are NEW."));
    assert!(tool_results(&requests[2]).iter().any(|r| r.contains('2')));
    case.assert_stopped("server.pid");
}

/// A stdio server (a shell script) that starts properly, then dies on its first call.
const CRASHING_SERVER: &str = r#"id() { printf '%s' "$1" | sed -n 's/.*"id":\([0-9]*\).*/\1/p'; }
read -r line
printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"crashy","version":"1"}}}\n' "$(id "$line")"
read -r line
read -r line
printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"boom","description":"Crashes.","inputSchema":{"type":"object"}}]}}\n' "$(id "$line")"
read -r line
echo "panic: boom went wrong" >&2
exit 7
"#;

#[test]
fn a_server_that_dies_during_a_call_is_a_failed_tool_result_and_the_run_goes_on() {
    let mock = MockServer::start();
    mock.push(MockResponse::reply(Reply::tool_call("boom", json!({}))));
    mock.push(MockResponse::text("The tool crashed; stopping here."));
    let case = Case::new(
        &mock,
        "prompt: Go\ntools:\n  - mcp:\n      command: sh\n      args: [crash.sh]\n",
    );
    std::fs::write(case.dir.join("crash.sh"), CRASHING_SERVER).unwrap();
    let outcome = case.run();
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let result = &tool_results(&mock.requests()[1])[0];
    assert!(
        result.starts_with("Error: MCP server `sh crash.sh`:")
            && result.contains("the server exited (exit status: 7)")
            && result.contains("panic: boom went wrong"),
        "{result}"
    );
    assert_eq!(
        completed_tools(&case.events()),
        [("boom".to_string(), false)]
    );
}

#[test]
fn an_interrupt_while_a_server_starts_stops_it_with_exit_130() {
    let mock = MockServer::start();
    let case = Case::new(
        &mock,
        "prompt: Hi\ntools:\n  - mcp:\n      command: sh\n      args: [\"-c\", \"echo $$ > hang.pid; exec sleep 60\"]\n",
    );
    let started = Instant::now();
    let child = case.command(&[]).spawn();
    wait_until("the server starts", || case.dir.join("hang.pid").exists());
    interrupt(&child);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "not the 30s start-up timeout"
    );
    let envelope: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(envelope["status"], "interrupted");
    assert_eq!(envelope["error"]["code"], "mcp_server");
    case.assert_stopped("hang.pid");
    assert_eq!(mock.request_count(), 0);
}

#[test]
fn the_mcp_example_runs_offline() {
    everything();
    let dir = tempdir("mcp-example");
    let outcome = Run::new([
        "exec",
        "examples/mcp.yaml",
        "--run-dir",
        dir.to_str().unwrap(),
    ])
    .run();
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(outcome.stdout, "The server says 19 + 23 = 42.\n");
    let events = support::read_events(&dir.join("events.jsonl"));
    let done = events
        .iter()
        .find(|e| e["type"] == "agent.tool.execution.completed")
        .unwrap();
    assert_eq!(done["data"]["toolName"], "ev_get-sum");
    assert_eq!(
        done["data"]["result"]["data"],
        "The sum of 19 and 23 is 42."
    );
}
