//! MCP tool servers end to end: the real binary, the mock model server, and the official
//! reference server `@modelcontextprotocol/server-everything` (installed by `.ci/run` with
//! `npm ci --prefix tests/mcp-server`), over stdio and over Streamable HTTP; plus servers
//! that are missing, exit at once, or never answer.

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use runner::testing::mock_server::{MockRequest, MockResponse, Reply};
use serde_json::{Value, json};
use support::http::free_port;
use support::{KEY, Ran, Test, read_json, wait_until};

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

/// Asserts the server whose pid the run left in `file` is no longer running.
fn assert_stopped(ran: &Ran, file: &str) {
    let pid = ran.read(file).trim().to_string();
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let deadline = Instant::now() + Duration::from_secs(5);
    while proc.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!proc.exists(), "the server (pid {pid}) is still running");
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
    let ran = Test::new()
        .agent(&format!(
            "prompt: Use the tools.\ntools:\n{}",
            stdio_entry(
                "      tools: [echo, get-sum, get-tiny-image, get-resource-reference, get-structured-content]\n      prefix: ev_\n"
            )
        ))
        .reply(
            Reply::tool_call("ev_echo", json!({"message": "hello"}))
                .with_tool_call("ev_get-sum", json!({"a": 2, "b": 3}))
                .with_tool_call("ev_get-sum", json!({"a": "two"}))
                .with_tool_call("ev_get-tiny-image", json!({}))
                .with_tool_call("ev_get-resource-reference", json!({}))
                .with_tool_call("ev_get-structured-content", json!({"location": "Chicago"})),
        )
        .reply(Reply::text("All done."))
        .args(["--output", "json"])
        .run();
    assert_eq!(ran.json()["output"], "All done.");

    // The model sees only the allowlisted tools, prefixed, with the server's own schemas.
    let requests = ran.requests();
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

    // Structured content: the text goes to the model; the value is not kept beside it, since
    // the server's text is its JSON (a large result would be written twice).
    let events = ran.events();
    let structured = events
        .iter()
        .find(|e| {
            e["type"] == "agent.tool.execution.completed"
                && e["data"]["toolName"] == "ev_get-structured-content"
        })
        .unwrap();
    let result = &structured["data"]["result"];
    assert_eq!(result["success"], true);
    assert!(result["metadata"].get("structured").is_none(), "{result}");
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
    assert_stopped(&ran, "server.pid");
}

#[test]
fn the_server_gets_its_env_but_not_the_runners_keys() {
    let ran = Test::new()
        .agent(&format!(
            "env: [GREETING]\nprompt: Look.\ntools:\n{}",
            stdio_entry(
                "      env: { GREETING: \"{{ env.GREETING }}!\", LOG_LEVEL: warn }\n      tools: [get-env]\n"
            )
        ))
        .reply(Reply::tool_call("get-env", json!({})))
        .reply(Reply::text("Seen."))
        .env("GREETING", "hi-there")
        .env("OPENAI_API_KEY", "sk-openai-must-not-leak")
        .env("DEPLOY_TOKEN", "tok-must-not-leak")
        .args(["--output", "json"])
        .run();
    let result = &tool_results(&ran.requests()[1])[0];
    assert!(result.contains("\"GREETING\": \"hi-there!\""), "{result}");
    assert!(result.contains("\"LOG_LEVEL\": \"warn\""), "{result}");
    for secret in ["sk-openai-must-not-leak", "tok-must-not-leak", KEY] {
        assert!(!result.contains(secret), "{secret} reached the server");
    }
    assert_stopped(&ran, "server.pid");
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
    let ran = Test::new()
        .agent(&format!(
            "env: [MCP_TOKEN]\nprompt: Add.\ntools:\n  - mcp:\n      url: http://127.0.0.1:{proxy}/mcp\n      headers: {{ Authorization: \"Bearer {{{{ env.MCP_TOKEN }}}}\" }}\n      tools: [get-sum, echo]\n"
        ))
        .reply(Reply::tool_call("get-sum", json!({"a": 20, "b": 22})))
        .reply(Reply::text("42 it is."))
        .env("MCP_TOKEN", "tok-http-4711")
        .args(["--output", "json"])
        .run();
    let result = &tool_results(&ran.requests()[1])[0];
    assert!(result.contains("42"), "{result}");

    let wire = String::from_utf8_lossy(&seen.lock().unwrap()).to_ascii_lowercase();
    assert!(
        wire.contains("authorization: bearer tok-http-4711"),
        "the rendered header reached the server"
    );
    let run_files =
        ["run/transcript.txt", "run/events.jsonl", "run/result.json"].map(|f| ran.read(f));
    for place in [&ran.stdout, &ran.stderr].into_iter().chain(&run_files) {
        assert!(!place.contains("tok-http-4711"), "the token leaked");
    }
    assert_eq!(
        completed_tools(&ran.events()),
        [("get-sum".to_string(), true)]
    );
}

#[test]
fn runner_tools_lists_every_tool_with_its_origin_and_schema() {
    let ran = Test::new()
        .agent(&format!(
            "tools:\n  - builtin: read_file\n{}",
            stdio_entry("      prefix: ev_\n")
        ))
        .command(["tools", "agent.yaml", "--format", "json"])
        .run();
    let listed = ran.json();
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

    ran.then()
        .command(["tools", "agent.yaml"])
        .stdout_contains("ev_echo")
        .stdout_contains("Echoes back the input string")
        .run();
    assert_stopped(&ran, "server.pid");
}

#[test]
fn servers_that_cannot_start_are_clear_errors_before_any_model_call() {
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
        let test = Test::new()
            .agent(&format!("prompt: Hi\ntools:\n  - mcp:\n      {entry}"))
            .args(["--output", "json"])
            .status(code);
        let test = phrases
            .iter()
            .fold(test, |test, phrase| test.stderr_contains(phrase));
        let started = Instant::now();
        let ran = test.run();
        assert!(started.elapsed() < Duration::from_secs(20), "bounded");
        let envelope = ran.json();
        assert_eq!(envelope["status"], status);
        assert_eq!(envelope["error"]["code"], "mcp_server");
        let message = envelope["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("MCP server `"), "{message}");
        for phrase in phrases {
            assert!(message.contains(phrase), "{phrase:?} not in {message}");
        }
        if entry.contains("hang.pid") {
            assert_stopped(&ran, "hang.pid");
        }
        assert!(ran.requests().is_empty(), "no model call was made: {entry}");
    }
}

#[test]
fn unknown_allowlisted_tools_and_name_collisions_are_configuration_errors() {
    let typo = Test::new()
        .agent(&format!(
            "prompt: Hi\ntools:\n{}",
            stdio_entry("      tools: [ecko]\n")
        ))
        .args(["--output", "json"])
        .status(2)
        .stderr_contains("did you mean `echo`?")
        .run();
    let message = typo.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("`tools` lists `ecko`") && message.contains("did you mean `echo`?"),
        "{message}"
    );
    assert_stopped(&typo, "server.pid");
    assert!(typo.requests().is_empty());

    // The same server twice without a prefix: `echo` would be two tools.
    let twice = Test::new()
        .agent(&format!(
            "prompt: Hi\ntools:\n{}{}",
            stdio_entry("      tools: [echo]\n"),
            stdio_entry("      tools: [echo, get-sum]\n")
        ))
        .args(["--output", "json"])
        .status(2)
        .stderr_contains("tool `echo`: two tools have this name")
        .stderr_contains("`prefix`")
        .run();
    assert_stopped(&twice, "server.pid");
    assert!(twice.requests().is_empty());
}

#[test]
fn servers_stop_on_failure_limit_and_interrupt() {
    let echo_server = || {
        format!(
            "prompt: Hi\ntools:\n{}",
            stdio_entry("      tools: [echo]\n")
        )
    };

    // A provider failure: exit 1.
    let failed = Test::new()
        .agent(&echo_server())
        .respond(MockResponse::error(400, "bad request"))
        .args(["--output", "json"])
        .status(1)
        .stderr_contains("bad request")
        .run();
    assert_stopped(&failed, "server.pid");

    // A limit: exit 3.
    let limited = Test::new()
        .agent(&format!(
            "limits: {{ max_llm_calls: 1 }}\n{}",
            echo_server()
        ))
        .reply(Reply::tool_call("echo", json!({"message": "x"})))
        .args(["--output", "json"])
        .status(3)
        .stderr_contains("max_llm_calls")
        .run();
    assert_stopped(&limited, "server.pid");

    // SIGINT while the model answers: exit 130.
    let running = Test::new()
        .agent(&echo_server())
        .respond(MockResponse::text("a b c d e f g h").chunk_delay(Duration::from_millis(500)))
        .args(["--output", "json"])
        .status(130)
        .stderr_contains("interrupted")
        .spawn();
    wait_until("the run calls the model", || running.requests_made() > 0);
    running.interrupt();
    let interrupted = running.wait();
    assert_stopped(&interrupted, "server.pid");
}

#[test]
fn a_sub_agent_has_its_own_server() {
    let ran = Test::new()
        .agent(
            "system: You are ROOT.\nprompt: Go.\ntools:\n  - name: helper\n    description: Has an echo server.\n    parameters: { type: object, properties: { task: { type: string } }, required: [task] }\n    agent: ./helper.yaml\n",
        )
        .file(
            "helper.yaml",
            &format!(
                "name: helper\nmodel: $MODEL\nsystem: You are HELPER.\ntools:\n{}",
                stdio_entry("      tools: [echo]\n")
            ),
        )
        .route(|request: &MockRequest| {
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
        })
        .args(["--output", "json"])
        .run();
    assert_eq!(ran.json()["output"], "Root done.");
    let root_requests: Vec<MockRequest> = ran
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
    let events = ran.events();
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
    assert_stopped(&ran, "server.pid");
}

#[test]
fn the_reference_server_is_pinned() {
    let package = read_json(&support::root().join("tests/mcp-server/package.json"));
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
    let slow = |reply: Reply| MockResponse::reply(reply).chunk_delay(Duration::from_millis(150));
    let agent = |system: &str, entry: &str| {
        format!(
            "name: test-agent\nmodel: $MODEL\nsystem: {system}\nprompt: Go\ntools:\n{}",
            stdio_entry(entry)
        )
    };
    let running = Test::new()
        .agent(&agent("You are OLD.", "      tools: [echo]\n"))
        .respond(slow(Reply::tool_call("echo", json!({"message": "one"}))))
        .respond(slow(Reply::tool_call("get-sum", json!({"a": 1, "b": 1}))))
        .reply(Reply::text("done"))
        // The person widens the allowlist while the agent runs: they opt in to that.
        .args(["--output", "json", "--watch", "--allow-widening"])
        .stderr_contains("was not started with the run")
        .spawn();
    wait_until("the first model request", || running.requests_made() >= 1);
    // Same server, a wider allowlist: applied at the next step.
    running.save(
        "agent.yaml",
        &agent("You are NEW.", "      tools: [echo, get-sum]\n"),
    );
    wait_until("the second model request", || running.requests_made() >= 2);
    // A different server (its env changed): refused, the run goes on as it was.
    running.save(
        "agent.yaml",
        &agent(
            "You are NEWER.",
            "      tools: [echo, get-sum]\n      env: { LOG_LEVEL: debug }\n",
        ),
    );
    let ran = running.wait();

    let requests = ran.requests();
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
    assert_stopped(&ran, "server.pid");
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
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - mcp:\n      command: sh\n      args: [crash.sh]\n")
        .file("crash.sh", CRASHING_SERVER)
        .reply(Reply::tool_call("boom", json!({})))
        .reply(Reply::text("The tool crashed; stopping here."))
        .args(["--output", "json"])
        .run();
    let result = &tool_results(&ran.requests()[1])[0];
    assert!(
        result.starts_with("Error: MCP server `sh crash.sh`:")
            && result.contains("the server exited (exit status: 7)")
            && result.contains("panic: boom went wrong"),
        "{result}"
    );
    assert_eq!(
        completed_tools(&ran.events()),
        [("boom".to_string(), false)]
    );
}

#[test]
fn an_interrupt_while_a_server_starts_stops_it_with_exit_130() {
    let started = Instant::now();
    let running = Test::new()
        .agent(
            "prompt: Hi\ntools:\n  - mcp:\n      command: sh\n      args: [\"-c\", \"echo $$ > hang.pid; exec sleep 60\"]\n",
        )
        .args(["--output", "json"])
        .status(130)
        .stderr_contains("interrupted")
        .spawn();
    wait_until("the server starts", || running.path("hang.pid").exists());
    running.interrupt();
    let ran = running.wait();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "not the 30s start-up timeout"
    );
    let envelope = ran.json();
    assert_eq!(envelope["status"], "interrupted");
    assert_eq!(envelope["error"]["code"], "mcp_server");
    assert_stopped(&ran, "hang.pid");
    assert!(ran.requests().is_empty());
}

#[test]
fn the_mcp_example_runs_offline() {
    everything();
    let ran = Test::new()
        .repo_path("examples/mcp.yaml")
        .repo_path("tests/mcp-server")
        .command(["exec", "examples/mcp.yaml", "--run-dir", "run"])
        .stdout("The server says 19 + 23 = 42.\n")
        .run();
    let events = ran.events_of("agent.tool.execution.completed");
    let done = &events[0];
    assert_eq!(done["data"]["toolName"], "ev_get-sum");
    assert_eq!(
        done["data"]["result"]["data"],
        "The sum of 19 and 23 is 42."
    );
}

/// The minimal server that records what runner sends (`tests/mcp-server/handshake-server.js`)
/// as an agent's only tools, after `head` (the agent's other keys); it writes the requests
/// to `requests.jsonl` and answers `initialize` with `version`, or the one asked for.
fn handshake_agent(head: &str, version: Option<&str>) -> String {
    let server = support::root().join("tests/mcp-server/handshake-server.js");
    let version = version.map(|v| format!(", \"{v}\"")).unwrap_or_default();
    format!(
        "{head}tools:\n  - mcp:\n      command: node\n      args: [\"{}\", \"requests.jsonl\"{version}]\n",
        server.display()
    )
}

/// runner asks for MCP 2025-11-25, the newest version with an `initialize` handshake (the
/// SDK's newest, 2026-07-28, has none, and servers that do not know it refuse), and works
/// with a server that answers with an older version it knows.
#[test]
fn the_handshake_asks_for_a_version_with_initialize() {
    let ran = Test::new()
        .agent(&handshake_agent("prompt: Echo.\n", Some("2025-06-18")))
        .reply(Reply::tool_call("echo", json!({"text": "hi"})))
        .reply(Reply::text("done"))
        .stdout("done\n")
        .run();
    let requests: Vec<Value> = ran
        .read("requests.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(requests[0]["method"], "initialize");
    assert_eq!(requests[0]["params"]["protocolVersion"], "2025-11-25");
    let calls = requests
        .iter()
        .filter(|r| r["method"] == "tools/call")
        .count();
    assert_eq!(calls, 1);
}

/// A server that answers every request with 401 Unauthorized (an MCP server behind OAuth).
/// The thread ends after `count` connections.
fn unauthorized_server(count: usize) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming().take(count) {
            let Ok(mut client) = client else { return };
            client
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut buf = [0u8; 8192];
            let _ = client.read(&mut buf);
            let _ = client.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource\"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    port
}

/// A server that wants credentials gets a plain message saying what to do (runner has no
/// OAuth): a token in `headers`. No Rust type names.
#[test]
fn a_server_that_wants_credentials_says_how_to_give_them() {
    let port = unauthorized_server(4);
    let ran = Test::new()
        .agent(&format!(
            "prompt: Go\ntools:\n  - mcp:\n      url: http://127.0.0.1:{port}/mcp\n"
        ))
        .status(1)
        .stderr_contains("401 Unauthorized")
        .stderr_contains("headers: { Authorization:")
        .run();
    assert!(!ran.stderr.contains("rmcp::"), "{}", ran.stderr);
}

/// A call cut off by `tool_timeout` still names its server, like the server's own results.
#[test]
fn a_call_cut_off_by_the_tool_timeout_names_its_server() {
    let ran = Test::new()
        .agent(&handshake_agent(
            "prompt: Wait.\nlimits: { tool_timeout: 300ms }\n",
            None,
        ))
        .reply(Reply::tool_call("hang", json!({})))
        .reply(Reply::text("done"))
        .stdout("done\n")
        .run();
    let completed = ran.events_of("agent.tool.execution.completed");
    let result = &completed[0]["data"]["result"];
    assert_eq!(result["success"], false);
    assert!(
        result["error"].as_str().unwrap().contains("timed out"),
        "{result}"
    );
    let server = support::root().join("tests/mcp-server/handshake-server.js");
    let label = format!("node {} requests.jsonl", server.display());
    assert_eq!(result["metadata"]["mcp_server"], json!(label));
}

/// The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
/// tests/mcp-server with the Node 22 it needs) runs its client scenarios against the
/// binary: `tests/mcp-server/conformance-client.sh` writes an agent whose tool is the
/// scenario's server, and accepts the elicitation scenario's form through `--answers`. The
/// OAuth scenarios are not supported (docs/mcp.md).
#[test]
fn the_conformance_suites_client_scenarios_pass() {
    let modules = support::root().join("tests/mcp-server/node_modules");
    let suite = modules.join("@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        suite.exists(),
        "the conformance suite is not installed: run `npm ci --prefix tests/mcp-server` (.ci/run does)"
    );
    let client = support::root().join("tests/mcp-server/conformance-client.sh");
    let scenarios = [
        "initialize",
        "tools_call",
        "sse-retry",
        "elicitation-sep1034-client-defaults",
    ];
    for scenario in scenarios {
        let output = Command::new(modules.join(".bin/node"))
            .arg(&suite)
            .args(["client", "--timeout", "20000", "--scenario", scenario])
            .arg("--command")
            .arg(&client)
            .env("RUNNER_BIN", env!("CARGO_BIN_EXE_runner"))
            .env("NO_COLOR", "1")
            .current_dir(support::tempdir("conformance"))
            .output()
            .unwrap();
        // The checks go to stdout, the verdict to stderr.
        let report = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            output.status.success()
                && report.contains("OVERALL: PASSED")
                && report.contains(" 0 failed"),
            "scenario {scenario}:\n{report}"
        );
    }
}

/// A server's progress notifications for a call become `agent.tool.progress` events, in
/// order and at most four a second, and progress lines (the reference server's long-running operation reports each
/// of its steps).
#[test]
fn a_servers_progress_reaches_the_events_and_the_progress_lines() {
    let ran = Test::new()
        .agent(&format!(
            "prompt: Run it.\ntools:\n{}",
            stdio_entry("      prefix: ev_\n")
        ))
        .reply(Reply::tool_call(
            "ev_trigger-long-running-operation",
            json!({"duration": 0.4, "steps": 4}),
        ))
        .reply(Reply::text("done"))
        .args(["--progress", "plain"])
        .stdout("done\n")
        .stderr_contains("… ev_trigger-long-running-operation 1/4")
        .run();
    let reports = ran.events_of("agent.tool.progress");
    let steps: Vec<(f64, f64)> = reports
        .iter()
        .map(|e| {
            let data = &e["data"];
            (
                data["progress"].as_f64().unwrap(),
                data["total"].as_f64().unwrap(),
            )
        })
        .collect();
    // The first report at once, then at most one per 250 ms, the latest of those that
    // came meanwhile (the steps are 100 ms apart), in order. The last report races the
    // answer through the SDK's handler, so it is not required.
    let expected = [(1.0, 4.0), (2.0, 4.0), (3.0, 4.0), (4.0, 4.0)];
    let mut left = expected.iter();
    assert!(
        steps.len() >= 2
            && steps[0] == expected[0]
            && steps.iter().all(|step| left.any(|e| e == step)),
        "{steps:?}"
    );
    assert_eq!(
        reports[0]["data"]["toolName"],
        "ev_trigger-long-running-operation"
    );
}

/// `--record` keeps the servers' tool lists and calls in the cassette beside the model's
/// exchanges; `--replay` runs the same agent from it with no server started and no model
/// reached, and the tool results are the recorded ones. An `env` value stays out of it.
#[test]
fn an_mcp_agent_records_once_and_replays_with_the_servers_absent() {
    let agent = format!(
        "env: [MCP_TOKEN]\nprompt: Add.\ntools:\n{}",
        stdio_entry(
            "      env: { API_TOKEN: \"{{ env.MCP_TOKEN }}\", LOG_LEVEL: warn }\n      tools: [get-sum, echo]\n"
        )
    );
    let recorded = Test::new()
        .agent(&agent)
        .reply(
            Reply::tool_call("get-sum", json!({"a": 20, "b": 22}))
                .with_tool_call("echo", json!({"message": "hi"})),
        )
        .reply(Reply::text("42 it is."))
        .env("MCP_TOKEN", "tok-mcp-4711")
        .command([
            "exec",
            "agent.yaml",
            "--record",
            "cassette.jsonl",
            "--run-dir",
            "live",
        ])
        .stdout("42 it is.\n")
        .run();
    assert_stopped(&recorded, "server.pid");
    let cassette = recorded.read("cassette.jsonl");
    assert!(!cassette.contains("tok-mcp-4711"), "{cassette}");
    let lines: Vec<Value> = cassette
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mcp: Vec<&str> = lines.iter().filter_map(|l| l["mcp"].as_str()).collect();
    assert_eq!(
        mcp,
        ["tools/list", "tools/call", "tools/call"],
        "{cassette}"
    );
    // The server's whole list: each entry's `tools` allowlist applies on replay as it did.
    let tools = lines.iter().find(|l| l["mcp"] == "tools/list").unwrap();
    let listed: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        listed.contains(&"get-sum") && listed.contains(&"get-env"),
        "{listed:?}"
    );

    std::fs::remove_file(recorded.path("server.pid")).unwrap();
    let replay = |cassette: &str, run_dir: &str| {
        recorded.then().env("MCP_TOKEN", "not-the-token").command([
            "exec",
            "agent.yaml",
            "--replay",
            cassette,
            "--run-dir",
            run_dir,
        ])
    };
    let replayed = replay("cassette.jsonl", "replayed")
        .stdout("42 it is.\n")
        .run();
    assert!(
        !replayed.path("server.pid").exists(),
        "a server was started"
    );
    assert_eq!(
        replayed.requests().len(),
        2,
        "no model request beyond the recording's"
    );
    let results = |ran: &Ran, dir: &str| -> Vec<Value> {
        let mut results = ran
            .read(&format!("{dir}/events.jsonl"))
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["type"] == "agent.tool.execution.completed")
            .map(|e| e["data"]["result"].clone())
            .collect::<Vec<Value>>();
        // The two calls run at once: completed in either order.
        results.sort_by_key(|r| r.to_string());
        results
    };
    assert_eq!(results(&replayed, "replayed"), results(&recorded, "live"));

    // A call the recording never made is a failed tool result naming server, tool and
    // arguments; a server it never started stops the run before any model call.
    let edited: String = cassette
        .lines()
        .map(|line| match line.contains(r#""mcp":"tools/call""#) {
            true => line.replace(r#""a":20"#, r#""a":21"#) + "\n",
            false => line.to_string() + "\n",
        })
        .collect();
    std::fs::write(recorded.path("edited.jsonl"), edited).unwrap();
    let missed = replay("edited.jsonl", "missed")
        .status_any()
        .any_stderr()
        .run();
    let results = results(&missed, "missed");
    let miss = results
        .iter()
        .find(|r| r["success"] == false)
        .unwrap_or_else(|| panic!("{results:?}\n{}", missed.stderr));
    let text = miss.to_string();
    assert_eq!(miss["success"], false, "{text}");
    let parts = [
        "get-sum",
        r#"{\"a\":20,\"b\":22}"#,
        r#"the recording called it with {\"a\":21,\"b\":22}"#,
        "server.pid",
    ];
    for part in parts {
        assert!(text.contains(part), "{part} missing from {text}");
    }
    let other = agent.replace("tools: [get-sum, echo]", "tools: [echo]\n      prefix: x_");
    recorded
        .then()
        .env("MCP_TOKEN", "not-the-token")
        .file(
            "other.yaml",
            &format!(
                "name: other\nmodel: $MODEL\n{}",
                other.replace("server.pid", "other.pid")
            ),
        )
        .command(["exec", "other.yaml", "--replay", "cassette.jsonl"])
        .status(2)
        .stderr_contains("has no recording of this server (it recorded: `sh -c")
        .run();
}

/// `permissions` patterns apply to MCP tools: by the entry's prefix, and on their
/// arguments. A denied call never reaches the server.
#[test]
fn permissions_match_mcp_tools_by_prefix_and_argument() {
    let ran = Test::new()
        .agent(&format!(
            "prompt: Use the tools.\ntools:\n{}permissions:\n  default: deny\n  deny: ['ev_echo:message=secret*']\n  allow: ['ev_*']\n",
            stdio_entry("      tools: [echo]\n      prefix: ev_\n")
        ))
        .reply(
            Reply::tool_call("ev_echo", json!({"message": "hello"}))
                .with_tool_call("ev_echo", json!({"message": "secret plans"})),
        )
        .reply(Reply::text("done"))
        .run();
    let results = tool_results(&ran.requests()[1]);
    assert!(results[0].contains("hello"), "{results:?}");
    assert!(
        results[1].contains("denied by the agent's permissions (`deny: ev_echo:message=secret*`)"),
        "{results:?}"
    );
    let rules: Vec<Value> = ran
        .events_of("agent.tool.permission.decided")
        .iter()
        .map(|e| e["data"]["rule"].clone())
        .collect();
    assert_eq!(
        rules,
        [json!("allow: ev_*"), json!("deny: ev_echo:message=secret*")]
    );
}

#[test]
fn a_form_nobody_can_fill_in_pauses_the_run_and_resume_makes_the_call_again_with_the_answer() {
    let paused = Test::new()
        .agent(&format!(
            "prompt: Sign me up.\ntools:\n{}",
            stdio_entry("      tools: [trigger-elicitation-request]\n")
        ))
        .reply(Reply::tool_call("trigger-elicitation-request", json!({})))
        .status(4)
        .stderr_contains("answer with `runner resume")
        .run();
    let action = &paused.events_of("thread.run.requires_action")[0]["data"]["required_action"];
    assert_eq!(action["type"], "user_input");
    let question = action["question"].as_str().unwrap();
    assert!(question.starts_with("MCP server `"), "{question}");
    assert!(question.contains("Please provide inputs for the following fields:"));
    assert!(paused.transcript().contains("INPUT_REQUIRED"));
    assert_stopped(&paused, "server.pid");
    let session = paused.session();

    // An answer that does not fit the form is refused before anything runs again.
    paused
        .then()
        .command([
            "resume",
            &session,
            "--answer",
            r#"{"integer": 500}"#,
            "--run-dir",
            "run2",
        ])
        .status(2)
        .stderr_contains("does not fit the form")
        .stderr_contains("\"name\" is a required property")
        .run();

    let answer = r#"{"name": "Ada Lovelace", "check": true}"#;
    let resumed = paused
        .then()
        .reply(Reply::text("You are signed up."))
        .command(["resume", &session, "--answer", answer, "--run-dir", "run3"])
        .run();
    let results = tool_results(resumed.requests().last().unwrap());
    let result = results.last().unwrap();
    assert!(result.contains("- Name: Ada Lovelace"), "{result}");
    assert!(result.contains("- Agreed to terms: true"), "{result}");
    let provided = &resumed.events_of("agent.user_input.provided")[0]["data"];
    assert_eq!(provided["answer"], answer);
    assert_eq!(resumed.result()["status"], "completed");
}

/// An `mcpServers` file (Claude Code's `.mcp.json` shape) with the reference server, which
/// writes its pid to `server.pid` and the `API_TOKEN` it got, upper-cased (so a search for
/// the token does not find it), to `token.seen`; and a server runner cannot read (`cwd`),
/// which matters only if imported.
fn mcp_json() -> String {
    let check = "echo $$ > server.pid; printf %s \"$API_TOKEN\" | tr a-z A-Z > token.seen; exec \"$0\" stdio";
    let file = json!({
        "mcpServers": {
            "everything": {
                "command": "sh",
                "args": ["-c", check, everything()],
                "env": {"API_TOKEN": "Bearer ${MCP_TOKEN}", "LOG_LEVEL": "warn"}
            },
            "editor-only": {"command": "code-helper", "cwd": "/tmp"}
        }
    });
    serde_json::to_string_pretty(&file).unwrap()
}

/// Every file under `dir` whose content contains `secret`.
fn files_containing(dir: &std::path::Path, secret: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_containing(&path, secret));
        } else if std::fs::read(&path)
            .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(secret))
        {
            found.push(path);
        }
    }
    found
}

#[test]
fn servers_imported_from_an_mcp_json_run_record_and_replay_like_inline_ones() {
    // The agent lives in `agents/`: `config` is relative to it, not to the workspace.
    let agent = "name: importer\nmodel: $MODEL\nenv: [MCP_TOKEN]\nprompt: Use the tools.\ntools:\n  - builtin: write_file\n  - mcp:\n      config: mcp.json\n      servers: [everything]\n      tools: [echo, get-sum]\n      prefix: ev_\n";
    let recorded = Test::new()
        .file("agents/importer.yaml", agent)
        .file("agents/mcp.json", &mcp_json())
        .reply(
            Reply::tool_call("ev_echo", json!({"message": "hello"}))
                .with_tool_call("ev_get-sum", json!({"a": 2, "b": 3}))
                .with_tool_call(
                    "write_file",
                    json!({"path": "agents/mcp.json", "content": "{}"}),
                ),
        )
        .reply(Reply::text("Done."))
        .env("MCP_TOKEN", "tok-mcp-4711")
        .command([
            "exec",
            "agents/importer.yaml",
            "--record",
            "cassette.jsonl",
            "--run-dir",
            "live",
            "--debug",
        ])
        .stdout("Done.\n")
        .any_stderr()
        .run();
    let requests = recorded.requests();
    let names: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["write_file", "ev_echo", "ev_get-sum"]);
    let results = tool_results(&requests[1]);
    assert_eq!(results[0], "Echo: hello");
    assert!(results[1].contains('5'), "{}", results[1]);
    // The model cannot rewrite the file its servers come from.
    assert!(
        results[2].contains("agent definition file"),
        "{}",
        results[2]
    );
    assert!(recorded.read("agents/mcp.json").contains("mcpServers"));
    // `${MCP_TOKEN}` reached the server, and nothing the run wrote holds it: events,
    // transcript, result, checkpoints, cassette, the `--debug` log.
    assert_eq!(recorded.read("token.seen"), "BEARER TOK-MCP-4711");
    assert!(!recorded.stdout.contains("tok-mcp-4711") && !recorded.stderr.contains("tok-mcp-4711"));
    assert_eq!(
        files_containing(&recorded.path(""), "tok-mcp-4711"),
        Vec::<PathBuf>::new()
    );
    assert!(
        recorded
            .read("cassette.jsonl")
            .contains(r#""mcp":"tools/list""#)
    );
    assert_stopped(&recorded, "server.pid");

    // `runner tools` names the imported server by its command line, as an inline one.
    let listed = recorded
        .then()
        .env("MCP_TOKEN", "tok-mcp-4711")
        .command(["tools", "agents/importer.yaml", "--format", "json"])
        .run()
        .json();
    let echo = &listed["tools"][1];
    assert_eq!(echo["name"], "ev_echo");
    assert!(
        echo["server"].as_str().unwrap().starts_with("sh -c"),
        "{echo}"
    );

    // Replayed with no server started: the cassette knows the imported server.
    std::fs::remove_file(recorded.path("server.pid")).unwrap();
    recorded
        .then()
        .env("MCP_TOKEN", "not-the-token")
        .command([
            "exec",
            "agents/importer.yaml",
            "--replay",
            "cassette.jsonl",
            "--run-dir",
            "replayed",
        ])
        .stdout("Done.\n")
        .run();
    assert!(
        !recorded.path("server.pid").exists(),
        "a server was started"
    );
}

/// Two servers of one file that offer the same tools.
fn two_servers_json() -> String {
    let file = json!({
        "servers": {
            "first": {"type": "stdio", "command": everything(), "args": ["stdio"]},
            "second": {"command": "sh", "args": ["-c", "exec \"$0\" stdio", everything()]}
        }
    });
    serde_json::to_string_pretty(&file).unwrap()
}

#[test]
fn servers_picks_servers_by_name_and_their_tool_names_may_collide() {
    let tools = |ran: &Ran| -> Vec<(String, String)> {
        ran.json()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let field = |key: &str| t[key].as_str().unwrap().to_string();
                (field("name"), field("server"))
            })
            .collect()
    };
    // VS Code's `servers` key; only the named server is started.
    let second = Test::new()
        .agent("tools:\n  - mcp: { config: mcp.json, servers: [second], tools: [echo] }\n")
        .file("mcp.json", &two_servers_json())
        .command(["tools", "agent.yaml", "--format", "json"])
        .run();
    let listed = tools(&second);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].0, "echo");
    assert!(listed[0].1.starts_with("sh -c"), "{listed:?}");

    // Without `servers`, every server: both offer `echo`, which the start refuses.
    second
        .then()
        .agent("tools:\n  - mcp: { config: mcp.json }\n")
        .command(["tools", "agent.yaml"])
        .status(2)
        .stderr_contains("two tools have this name: MCP server `")
        .stderr_contains("`prefix`")
        .run();

    // One entry per server, each with its prefix.
    let prefixed = second
        .then()
        .agent("tools:\n  - mcp: { config: mcp.json, servers: [first], tools: [echo], prefix: a_ }\n  - mcp: { config: mcp.json, servers: [second], tools: [echo], prefix: b_ }\n")
        .command(["tools", "agent.yaml", "--format", "json"])
        .run();
    let names: Vec<String> = tools(&prefixed).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["a_echo", "b_echo"]);
}

#[test]
fn validate_locates_import_problems_at_the_config_key() {
    let agent = "env: [DECLARED]\nprompt: Hi\ntools:\n  - mcp:\n      config: .mcp.json\n      servers: [github, remote, githb]\n  - mcp: { config: missing.json }\n  - mcp: { config: broken.json }\n";
    let mcp_json = r#"{
  "mcpServers": {
    "github": {
      "command": "github-mcp",
      "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "OK": "${env:DECLARED}"}
    },
    "remote": {"type": "sse", "url": "http://127.0.0.1:1/sse"}
  }
}"#;
    let ran = Test::new()
        .agent(agent)
        .file(".mcp.json", mcp_json)
        .file(
            "broken.json",
            "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}\n",
        )
        .command(["validate", "agent.yaml"])
        .status(2)
        .stderr_contains("5 error(s)")
        .run();
    let expected = [
        "agent.yaml:7:15: error[mcp-config]: `.mcp.json` has no server `githb` (at /tools/0/mcp/config)\n  help: did you mean `github`? its servers: `github`, `remote`",
        "agent.yaml:7:15: error[undeclared-variable]: server `github` of `.mcp.json` reads `${GITHUB_TOKEN}` in `env.GITHUB_TOKEN`, a variable this agent does not declare (at /tools/0/mcp/config)\n  help: add `GITHUB_TOKEN` to the agent's `env:` list",
        "agent.yaml:7:15: error[mcp-config]: server `remote` of `.mcp.json`: `type: sse` is the legacy HTTP+SSE transport, which runner does not support",
        "agent.yaml:9:20: error[missing-file]: MCP config file `missing.json` does not exist (at /tools/1/mcp/config)",
        "agent.yaml:10:20: error[mcp-config]: `broken.json` is not valid JSON: trailing comma (line 3, column 26) (at /tools/2/mcp/config)",
    ];
    for diagnostic in expected {
        assert!(
            ran.stdout.contains(diagnostic),
            "{diagnostic}\nnot in\n{}",
            ran.stdout
        );
    }
    // `runner exec` refuses the file the same way, before starting anything.
    ran.then()
        .status(2)
        .stderr_contains("error[undeclared-variable]")
        .run();
}

#[test]
fn a_change_to_the_imported_file_reaches_a_running_agent_as_a_reload() {
    let slow = |reply: Reply| MockResponse::reply(reply).chunk_delay(Duration::from_millis(150));
    let running = Test::new()
        .agent("env: [MCP_TOKEN]\nprompt: Go\ntools:\n  - mcp: { config: .mcp.json, servers: [everything], tools: [echo] }\n")
        .file(".mcp.json", &mcp_json())
        .env("MCP_TOKEN", "tok-mcp-4711")
        .respond(slow(Reply::tool_call("echo", json!({"message": "one"}))))
        .reply(Reply::text("done"))
        .args(["--watch", "--allow-widening"])
        .stderr_contains("was not started with the run")
        .spawn();
    wait_until("the first model request", || running.requests_made() >= 1);
    // Only the JSON file changes: the server's `env` is another, so another server.
    running.save(".mcp.json", &mcp_json().replace("\"warn\"", "\"debug\""));
    let ran = running.wait();
    assert_eq!(ran.stdout, "done\n");
    assert_stopped(&ran, "server.pid");
}

/// A stdio MCP server written to misbehave (`python3 hostile.py MODE`): it answers
/// `initialize` and lists one tool, `read_log`, whose call it answers according to MODE:
/// `large` with a result over the SDK's 16 MiB line bound, `flood` with 100,000 progress
/// notifications and then its result, `silent` never.
const HOSTILE_SERVER: &str = r#"import json, sys
mode = sys.argv[1]
def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    message = json.loads(line)
    method, id = message.get("method"), message.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": message["params"]["protocolVersion"],
              "capabilities": {"tools": {}}, "serverInfo": {"name": "hostile", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": [{"name": "read_log",
              "description": "Reads the log.", "inputSchema": {"type": "object", "properties": {}}}]}})
    elif method == "tools/call" and mode == "large":
        text = "x" * (17 * 1024 * 1024)
        send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})
    elif method == "tools/call" and mode == "flood":
        token = message["params"]["_meta"]["progressToken"]
        for n in range(1, 100001):
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": n, "total": 100000}}) + "\n")
        send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "flooded"}]}})
"#;

/// An agent with the hostile server in `mode`, and `extra` lines for its entry.
fn hostile_agent(mode: &str, extra: &str) -> Test {
    Test::new()
        .agent(&format!(
            "prompt: Read the log.\ntools:\n  - mcp:\n      command: python3\n      args: [hostile.py, {mode}]\n{extra}"
        ))
        .file("hostile.py", HOSTILE_SERVER)
        .reply(Reply::tool_call("read_log", json!({})))
        .reply(Reply::text("done"))
        .stdout("done\n")
        .time_limit(Duration::from_secs(120))
}

/// A result over the SDK's 16 MiB line bound is dropped by the SDK; the call fails at once
/// with a result that says so (it used to wait forever), and the run goes on.
#[test]
fn a_result_too_large_for_the_sdk_fails_the_call_at_once() {
    let ran = hostile_agent("large", "").run();
    let results = completed_tools(&ran.events());
    assert_eq!(results, [("read_log".to_string(), false)]);
    let sent = tool_results(&ran.requests()[1]);
    assert!(
        sent[0].contains("over the 16 MiB a message may have; it was dropped"),
        "{sent:?}"
    );
}

/// A server that never answers a call: the call fails after the entry's `call_timeout`
/// (300 s when the entry sets none), the server hears it was cancelled, and the run goes on.
#[test]
fn a_call_the_server_never_answers_fails_after_call_timeout() {
    let ran = hostile_agent("silent", "      call_timeout: 1s\n").run();
    let sent = tool_results(&ran.requests()[1]);
    assert!(
        sent[0].contains("did not answer within 1s (call_timeout)"),
        "{sent:?}"
    );
}

/// 100,000 progress notifications in one call become a bounded number of
/// `agent.tool.progress` events (at most four a second and 1,001 a call), in order.
#[test]
fn a_flood_of_progress_notifications_is_coalesced() {
    let ran = hostile_agent("flood", "").run();
    let reports: Vec<f64> = ran
        .events_of("agent.tool.progress")
        .iter()
        .map(|e| e["data"]["progress"].as_f64().unwrap())
        .collect();
    assert!(
        !reports.is_empty() && reports.len() <= 1001,
        "{} progress events",
        reports.len()
    );
    assert!(reports.windows(2).all(|w| w[0] < w[1]), "{reports:?}");
    assert_eq!(
        completed_tools(&ran.events()),
        [("read_log".to_string(), true)]
    );
}

// ---- runner as an MCP server: `runner mcp` (stdio) and `/mcp` of `runner serve` ----

/// The official TypeScript SDK's client (`tests/mcp-server/agents-client.mjs`) run with
/// `plan` in the test's `workspace`, with the mock model's key; one JSON value per step.
fn mcp_client(workspace: &std::path::Path, plan: Value) -> Vec<Value> {
    let modules = support::root().join("tests/mcp-server/node_modules");
    let output = Command::new(modules.join(".bin/node"))
        .arg(support::root().join("tests/mcp-server/agents-client.mjs"))
        .arg(plan.to_string())
        .env(support::KEY_ENV, KEY)
        .env("NO_COLOR", "1")
        .current_dir(workspace)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the client failed\n--- stdout\n{stdout}--- stderr\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// A plan that starts `runner mcp .` in the workspace over stdio.
fn over_stdio(test: &Test, elicit: Value, steps: Value) -> Value {
    json!({
        "stdio": {
            "command": env!("CARGO_BIN_EXE_runner"),
            "args": ["mcp", "."],
            "cwd": test.path(".").display().to_string(),
        },
        "elicit": elicit,
        "steps": steps,
    })
}

/// `runner serve` in the workspace (with ARGS); its `/mcp` URL.
fn serve_mcp(test: Test, args: &[&str]) -> (support::Running, String) {
    let (running, api) = test.serve(args);
    (running, format!("http://{}/mcp", api.address()))
}

fn tool<'a>(tools: &'a Value, name: &str) -> &'a Value {
    let tools = tools["tools"].as_array().unwrap();
    tools
        .iter()
        .find(|tool| tool["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name} in {tools:#?}"))
}

fn messages(progress: &Value) -> Vec<String> {
    progress
        .as_array()
        .unwrap()
        .iter()
        .map(|note| note["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

const REVIEWER: &str = "name: reviewer
description: Reviews a file and says what it thinks.
model: $MODEL
inputs:
  file: { type: string, description: The file to review, required: true }
prompt: Review {{ file }}.
output:
  schema: { type: object, required: [verdict], properties: { verdict: { type: string } } }
tools:
  - builtin: write_file
";

/// `runner mcp` over stdio, to the official SDK client: each agent file is a tool (its
/// name, description, inputs as the input schema, `{input}` for free text, its output
/// schema, read-only when it cannot write); a call runs it against the model, with
/// progress from its steps; the answer is the text, `structuredContent` for an output
/// schema; bad arguments, and a run that reaches a limit, are error results with their code.
#[test]
fn runner_mcp_serves_each_agent_as_a_tool_over_stdio() {
    let test = Test::new()
        .agent("description: Greets people.\nprompt: Greet {{ input }}.\n")
        .file("reviewer.yaml", REVIEWER)
        .file(
            "busy.yaml",
            "name: busy\nmodel: $MODEL\nprompt: Go\ntools:\n  - builtin: list_dir\nlimits: { max_llm_calls: 1 }\n",
        )
        .reply(Reply::text("Hello, Ann!"))
        .reply(Reply::text(r#"{"verdict": "fine"}"#))
        .reply(Reply::tool_call("list_dir", json!({})));
    let steps = json!([
        {"list": true},
        {"call": "test-agent", "arguments": {"input": "Ann"}, "progress": true},
        {"call": "reviewer", "arguments": {"file": "a.txt"}},
        {"call": "reviewer", "arguments": {"path": "a.txt"}},
        {"call": "busy", "arguments": {"input": ""}},
    ]);
    let answers = mcp_client(&test.path("."), over_stdio(&test, json!([]), steps));
    let tools = &answers[0];
    let greeter = tool(tools, "test-agent");
    assert_eq!(greeter["description"], "Greets people.");
    assert_eq!(
        greeter["inputSchema"]["properties"]["input"]["type"],
        "string"
    );
    assert_eq!(greeter["annotations"]["readOnlyHint"], true);
    let reviewer = tool(tools, "reviewer");
    assert_eq!(reviewer["inputSchema"]["required"], json!(["file"]));
    assert_eq!(reviewer["outputSchema"]["required"], json!(["verdict"]));
    assert_eq!(reviewer["annotations"]["readOnlyHint"], false);
    // The client declared elicitation: questions are asked through it.
    assert!(!tools["tools"].to_string().contains("runner_resume"));

    let greeted = &answers[1];
    assert_eq!(greeted["result"]["content"][0]["text"], "Hello, Ann!");
    assert_eq!(greeted["result"]["isError"], false);
    assert_eq!(messages(&greeted["progress"]), ["step 1"]);

    let reviewed = &answers[2]["result"];
    assert_eq!(reviewed["structuredContent"], json!({"verdict": "fine"}));
    assert_eq!(reviewed["isError"], false);

    let refused = &answers[3]["result"];
    assert_eq!(refused["isError"], true);
    let text = refused["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("invalid_input: "), "{text}");

    let limited = &answers[4]["result"];
    assert_eq!(limited["isError"], true);
    let text = limited["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("limit_reached: "), "{text}");
}

/// A question (`ask_user`) and an approval (an `ask` rule) become elicitation requests of
/// a client that declared the capability, and the run goes on with the answers; a client's
/// `notifications/cancelled` interrupts the run, checkpointed.
#[test]
fn runner_mcp_asks_through_elicitation_and_a_cancel_interrupts_the_run() {
    let test = Test::new()
        .agent(
            "description: Asks, then writes.\nprompt: Go\ntools:\n  - builtin: ask_user\n  - builtin: write_file\n  - builtin: shell\n    allow: [sleep]\npermissions:\n  ask: [write_file]\n",
        )
        .reply(Reply::tool_call("ask_user", json!({"question": "Which colour?"})))
        .reply(Reply::tool_call(
            "write_file",
            json!({"path": "colour.txt", "content": "blue"}),
        ))
        .reply(Reply::text("Written."))
        .reply(Reply::tool_call("shell", json!({"command": "sleep 30"})));
    let elicit = json!([
        {"action": "accept", "content": {"answer": "blue"}},
        {"action": "accept", "content": {"approve": true}},
    ]);
    let steps = json!([
        {"call": "test-agent", "arguments": {"input": ""}, "progress": true},
        {"call": "test-agent", "arguments": {"input": ""}, "cancelOn": "shell"},
        {"waitStatus": "interrupted", "dir": test.path(".runner/runs").display().to_string()},
    ]);
    let answers = mcp_client(&test.path("."), over_stdio(&test, elicit, steps));
    let asked = &answers[0];
    assert_eq!(asked["result"]["content"][0]["text"], "Written.");
    assert_eq!(asked["elicited"][0]["message"], "Which colour?");
    let approval = asked["elicited"][1]["message"].as_str().unwrap();
    assert!(
        approval.contains(
            "- write_file {\"path\":\"colour.txt\",\"content\":\"blue\"} (ask: write_file)"
        ),
        "{approval}"
    );
    assert_eq!(
        std::fs::read_to_string(test.path("colour.txt")).unwrap(),
        "blue"
    );
    assert_eq!(
        messages(&asked["progress"]),
        // The approved call runs in a step of its own, as after `runner resume --approve`.
        [
            "step 1",
            "ask_user",
            "step 2",
            "step 3",
            "write_file",
            "step 4"
        ]
    );

    let cancelled = &answers[1];
    assert_eq!(cancelled["cancelled"], true, "{cancelled}");
    assert_eq!(answers[2]["status"], "interrupted");
}

/// `/mcp` of `runner serve`, over Streamable HTTP, to the official SDK client that cannot
/// elicit: a paused run's result says what it waits for and its session, `runner_resume`
/// (listed for such a client only) continues it with the answer; a cancel interrupts.
#[test]
fn runner_serve_mcp_pauses_for_a_client_that_cannot_elicit_and_runner_resume_goes_on() {
    let test = Test::new()
        .agent("description: Asks.\nprompt: Go\ntools:\n  - builtin: ask_user\n  - builtin: shell\n    allow: [sleep]\n")
        .reply(Reply::tool_call("ask_user", json!({"question": "Which colour?"})))
        .reply(Reply::text("Red it is."))
        .reply(Reply::tool_call("shell", json!({"command": "sleep 30"})));
    let runs = test.path(".runner/runs").display().to_string();
    let (running, url) = serve_mcp(test, &[]);
    let plan = |steps: Value| json!({"http": url, "elicit": null, "steps": steps});
    let first = mcp_client(
        &running.path("."),
        plan(json!([
            {"list": true},
            {"call": "test-agent", "arguments": {"input": ""}},
        ])),
    );
    assert_eq!(
        tool(&first[0], "runner_resume")["inputSchema"]["required"],
        json!(["session_id"])
    );
    let paused = &first[1]["result"];
    assert_eq!(paused["isError"], true);
    let text = paused["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("waits for an answer") && text.contains("Which colour?"),
        "{text}"
    );
    let session = text
        .split("(session ")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap();
    let second = mcp_client(
        &running.path("."),
        plan(json!([
            {"call": "runner_resume", "arguments": {"session_id": session, "answer": "red"}},
            {"call": "test-agent", "arguments": {"input": ""}, "cancelOn": "shell"},
            {"waitStatus": "interrupted", "dir": runs},
        ])),
    );
    assert_eq!(second[0]["result"]["content"][0]["text"], "Red it is.");
    assert_eq!(second[1]["cancelled"], true, "{}", second[1]);
    assert_eq!(second[2]["status"], "interrupted");
    running.terminate();
    let ran = running.wait();
    let answered = tool_results(&ran.requests()[1]);
    assert!(answered[0].contains("red"), "{answered:?}");
}

/// Agent files for the conformance suite's server scenarios: each declares the tool a
/// scenario calls, with a scripted model (the suite checks the protocol, not the answers).
const CONFORMANCE_AGENTS: [(&str, &str); 4] = [
    (
        "test_simple_text",
        "description: Answers with a fixed text.\nmodel: { provider: scripted, name: c, script: [{ text: This is a simple text response for testing. }] }\nprompt: Go\n",
    ),
    (
        "test_error_handling",
        "description: Always fails, its model having no second answer.\nmodel: { provider: scripted, name: c, script: [{ tool_calls: [{ name: list_dir, arguments: { path: . } }] }] }\nprompt: Go\ntools:\n  - builtin: list_dir\n",
    ),
    (
        "test_tool_with_progress",
        "description: Lists a directory, then answers.\nmodel: { provider: scripted, name: c, script: [{ tool_calls: [{ name: list_dir, arguments: { path: . } }] }, { text: done }] }\nprompt: Go\ntools:\n  - builtin: list_dir\n",
    ),
    (
        "test_elicitation",
        "description: Asks the person, then thanks them.\nmodel: { provider: scripted, name: c, script: [{ tool_calls: [{ name: ask_user, arguments: { question: Who are you? } }] }, { text: Thank you. }] }\ninputs:\n  message: { type: string, description: The question }\nprompt: \"{{ message }}\"\ntools:\n  - builtin: ask_user\n",
    ),
];

/// The official MCP conformance suite's server scenarios that apply to a server of agents
/// pass against `/mcp` of `runner serve` (docs/mcp.md lists the others and why not).
#[test]
fn the_conformance_suites_server_scenarios_pass_against_serve_mcp() {
    let modules = support::root().join("tests/mcp-server/node_modules");
    let suite = modules.join("@modelcontextprotocol/conformance/dist/index.js");
    let mut test = Test::new();
    for (name, body) in CONFORMANCE_AGENTS {
        test = test.file(&format!("{name}.yaml"), &format!("name: {name}\n{body}"));
    }
    let (running, url) = serve_mcp(test, &[]);
    let scenarios = [
        "server-initialize",
        "ping",
        "tools-list",
        "tools-call-simple-text",
        "tools-call-error",
        "tools-call-with-progress",
        "tools-call-elicitation",
        "dns-rebinding-protection",
        "server-sse-polling",
        "server-sse-multiple-streams",
    ];
    for scenario in scenarios {
        let output = Command::new(modules.join(".bin/node"))
            .arg(&suite)
            .args(["server", "--url", &url, "--scenario", scenario])
            .env("NO_COLOR", "1")
            .current_dir(support::tempdir("conformance"))
            .output()
            .unwrap();
        let report = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            output.status.success() && report.contains(" 0 failed"),
            "scenario {scenario}:\n{report}"
        );
    }
    running.terminate();
    running.wait();
}

/// `/mcp` follows `runner serve`'s token rule: without the token a request is answered
/// 401; the official client that sends it lists the tools.
#[test]
fn serve_mcp_needs_the_servers_token() {
    let token = "a-token-of-some-length-42";
    let test = Test::new()
        .agent("description: Greets.\nprompt: Go\n")
        .env("SERVE_TOKEN", token);
    let (running, url) = serve_mcp(test, &["--token-env", "SERVE_TOKEN"]);
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp");
    let port: u16 = port.parse().unwrap();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    let refused = support::http::Api::new(port).post("/mcp", &initialize);
    assert_eq!(refused.status, 401, "{}", refused.body);
    let headers = json!({"Authorization": format!("Bearer {token}")});
    let listed = mcp_client(
        &running.path("."),
        json!({"http": url, "headers": headers, "elicit": null, "steps": [{"list": true}]}),
    );
    assert_eq!(tool(&listed[0], "test-agent")["description"], "Greets.");
}

/// `runner mcp` with a path that does not exist says so at once (exit 2), before any
/// client speaks, rather than at the first `tools/list`.
#[test]
fn runner_mcp_refuses_a_path_that_does_not_exist() {
    Test::new()
        .command(["mcp", "agents"])
        .status(2)
        .stderr("error: agents: no such file or directory\n")
        .run();
}
