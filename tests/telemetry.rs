//! OpenTelemetry export end to end: the real binary, the mock model, and a real OTLP
//! receiver, Arize Phoenix (`phoenix serve`, installed into /opt/phoenix-venv by .ci/run;
//! `PHOENIX` names another executable). One Phoenix serves the whole test binary, on free
//! loopback ports with a working directory of its own, and dies with the binary; each test
//! sends its spans to a project of its own and reads them back over Phoenix's REST API.

mod support;

use std::collections::HashMap;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValueKind;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::trace::v1::Span as OtlpSpan;
use prost::Message as _;
use runner::testing::mock_server::{MockRequest, MockResponse, Reply};
use serde_json::{Value, json};
use support::http::{Api, free_port};
use support::{Ran, Test, tempdir};

/// The Phoenix this test binary sends its spans to.
struct Phoenix {
    api: Api,
    endpoint: String,
}

/// Starts Phoenix once, waits (at most two minutes: its first start migrates a database)
/// until it answers, and returns it.
fn phoenix() -> &'static Phoenix {
    static PHOENIX: OnceLock<Phoenix> = OnceLock::new();
    PHOENIX.get_or_init(|| {
        let bin = std::env::var_os("PHOENIX")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/opt/phoenix-venv/bin/phoenix"));
        assert!(
            bin.exists(),
            "Arize Phoenix is not installed at {}: run .ci/run (it installs it), or set PHOENIX",
            bin.display()
        );
        let (port, grpc) = (free_port(), free_port());
        let dir = tempdir("phoenix");
        let log = std::fs::File::create(dir.join("phoenix.log")).unwrap();
        let mut command = Command::new(bin);
        command
            .arg("serve")
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc.to_string())
            .env("PHOENIX_WORKING_DIR", &dir)
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        // SAFETY: prctl is async-signal-safe; it only asks for a signal when the thread
        // that started the child ends.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        // The thread that starts Phoenix lives as long as the test binary, so Phoenix is
        // killed when the binary ends, whichever test started it.
        let (started, child) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            started
                .send(command.spawn().map(|child| child.id()))
                .unwrap();
            loop {
                std::thread::park();
            }
        });
        child.recv().unwrap().expect("start phoenix serve");
        let api = Api::new(port);
        let deadline = Instant::now() + Duration::from_secs(120);
        while !up(&api) {
            let log = std::fs::read_to_string(dir.join("phoenix.log")).unwrap_or_default();
            assert!(
                Instant::now() < deadline,
                "Phoenix did not answer on port {port} within 2 minutes:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        Phoenix {
            api,
            endpoint: format!("http://127.0.0.1:{port}"),
        }
    })
}

fn up(api: &Api) -> bool {
    std::net::TcpStream::connect(api.address()).is_ok() && api.get("/healthz").status == 200
}

impl Phoenix {
    /// The spans of `project`, once `complete` says all have arrived (Phoenix stores what
    /// it receives in the background); fails the test after 30 s.
    fn spans(&self, project: &str, complete: impl Fn(&Spans) -> bool) -> Spans {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let response = self
                .api
                .get(&format!("/v1/projects/{project}/spans?limit=1000"));
            let spans = match response.status {
                200 => Spans(response.json()["data"].as_array().unwrap().clone()),
                _ => Spans(Vec::new()),
            };
            if complete(&spans) {
                return spans;
            }
            assert!(
                Instant::now() < deadline,
                "the spans of {project} did not all arrive: {:#?}",
                spans.0
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// Spans as Phoenix returns them: `name`, `context: {trace_id, span_id}`, `parent_id`,
/// `status_code`, `attributes`, `events`.
struct Spans(Vec<Value>);

impl Spans {
    fn named(&self, name: &str) -> Vec<&Value> {
        self.0.iter().filter(|s| s["name"] == name).collect()
    }

    /// The one span named `name`.
    fn one(&self, name: &str) -> &Value {
        let found = self.named(name);
        assert_eq!(found.len(), 1, "one `{name}` span: {:#?}", self.0);
        found[0]
    }

    fn has(&self, name: &str) -> bool {
        !self.named(name).is_empty()
    }

    /// The spans whose parent is `parent`, by name.
    fn children(&self, parent: &Value) -> Vec<String> {
        let mut names: Vec<String> = self
            .0
            .iter()
            .filter(|s| s["parent_id"] == parent["context"]["span_id"])
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    }
}

fn id(span: &Value) -> &Value {
    &span["context"]["span_id"]
}

/// Scripted answers per agent, chosen by a marker in the request's system prompt.
fn script(
    script: Vec<(&'static str, Vec<Reply>)>,
) -> impl Fn(&MockRequest) -> Option<MockResponse> + Send + Sync + 'static {
    let script: HashMap<&'static str, Vec<Reply>> = script.into_iter().collect();
    let used: Arc<Mutex<HashMap<&'static str, usize>>> = Arc::default();
    move |request: &MockRequest| {
        let system = request.system_prompt().unwrap_or_default();
        let (marker, replies) = script.iter().find(|(marker, _)| system.contains(*marker))?;
        let mut used = used.lock().unwrap();
        let n = used.entry(marker).or_insert(0);
        let reply = replies
            .get(*n)
            .cloned()
            .unwrap_or_else(|| Reply::text("(script exhausted)"));
        *n += 1;
        Some(MockResponse::reply(reply))
    }
}

/// The reference MCP server over stdio, its tools `tools` (a YAML list) prefixed `ev_`.
fn everything(tools: &str) -> String {
    let bin = support::root().join("tests/mcp-server/node_modules/.bin/mcp-server-everything");
    assert!(
        bin.exists(),
        "the reference MCP server is not installed: run `npm ci --prefix tests/mcp-server` (.ci/run does)"
    );
    format!(
        "  - mcp:\n      command: {}\n      args: [stdio]\n      tools: {tools}\n      prefix: ev_\n",
        bin.display()
    )
}

/// A root agent that calls a sub-agent, a tool that fails and an MCP server's tool in one
/// turn, then hands over to `agent-b`, which answers.
fn team(project: &str) -> Test {
    Test::new()
        .agent(&format!(
            "name: root
model: $MODEL
system: You are ROOT.
prompt: Study the topic.
telemetry:
  resource:
    openinference.project.name: {project}
    team: search
tools:
  - builtin: read_file
  - name: research
    description: Researches a topic.
    parameters: {{ type: object, properties: {{ topic: {{ type: string }} }}, required: [topic] }}
    agent: {{ name: researcher, system: You are RESEARCHER. }}
    prompt: \"Research {{{{ topic }}}}\"
{}handoffs:
  - name: transfer_to_b
    description: To B.
    agent: {{ name: agent-b, system: You are AGENT-B. }}
",
            everything("[echo]")
        ))
        .route(script(vec![
            (
                "ROOT",
                vec![
                    Reply::tool_call("research", json!({"topic": "otel"}))
                        .with_tool_call("read_file", json!({"path": "missing.txt"}))
                        .with_tool_call("ev_echo", json!({"message": "hello"}))
                        .with_usage(100, 20),
                    Reply::tool_call("transfer_to_b", json!({})),
                ],
            ),
            (
                "RESEARCHER",
                vec![Reply::text("Found it.").with_usage(7, 3)],
            ),
            ("AGENT-B", vec![Reply::text("B answers.")]),
        ]))
        .args(["--output", "json"])
}

#[test]
fn a_run_with_a_sub_agent_a_handoff_a_failed_tool_and_an_mcp_call_is_one_tree_of_genai_spans() {
    let phoenix = phoenix();
    let ran = team("tree")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &phoenix.endpoint)
        .run();
    assert_eq!(ran.json()["output"], "B answers.");
    let spans = phoenix.spans("tree", |s| {
        s.has("invoke_agent root") && s.has("invoke_agent agent-b") && s.has("tools/call ev_echo")
    });

    // The run: the root of the trace, with its agent, session and status.
    let root = spans.one("invoke_agent root");
    assert_eq!(root["parent_id"], Value::Null);
    assert_eq!(root["status_code"], "OK");
    let attributes = &root["attributes"];
    assert_eq!(attributes["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(attributes["gen_ai.agent.name"], "root");
    assert_eq!(
        attributes["gen_ai.conversation.id"],
        ran.json()["session_id"]
    );
    assert_eq!(attributes["gen_ai.agent.id"], ran.json()["run_id"]);
    assert_eq!(attributes["runner.run.status"], "completed");
    // The whole tree's tokens, as the result counts them.
    let usage = &ran.json()["usage"];
    assert_eq!(
        attributes["gen_ai.usage.input_tokens"],
        usage["input_tokens"]
    );
    assert_eq!(
        attributes["gen_ai.usage.output_tokens"],
        usage["output_tokens"]
    );
    let trace = &root["context"]["trace_id"];
    assert!(spans.0.iter().all(|s| &s["context"]["trace_id"] == trace));
    assert_eq!(
        spans.children(root),
        [
            "chat mock-model",
            "chat mock-model",
            "execute_tool ev_echo",
            "execute_tool read_file",
            "execute_tool research",
            "execute_tool transfer_to_b",
            "invoke_agent agent-b",
        ]
    );

    // The model calls: provider, models, usage, finish reasons.
    let first = spans
        .named("chat mock-model")
        .into_iter()
        .find(|s| s["attributes"]["gen_ai.usage.input_tokens"] == 100)
        .expect("the root's first call");
    let chat = &first["attributes"];
    assert_eq!(chat["gen_ai.operation.name"], "chat");
    assert_eq!(chat["gen_ai.provider.name"], "openai");
    assert_eq!(chat["gen_ai.request.model"], "mock-model");
    assert_eq!(chat["gen_ai.response.model"], "mock-model");
    assert_eq!(chat["gen_ai.usage.output_tokens"], 20);
    assert_eq!(
        chat["gen_ai.response.finish_reasons"],
        json!(["tool_calls"])
    );
    assert_eq!(
        first["span_kind"], "LLM",
        "a client span Phoenix reads as an LLM call"
    );

    // The sub-agent's run, under the tool call that started it.
    let research = spans.one("execute_tool research");
    let researcher = spans.one("invoke_agent researcher");
    assert_eq!(researcher["parent_id"], *id(research));
    assert_eq!(spans.children(researcher), ["chat mock-model"]);
    assert_eq!(researcher["attributes"]["gen_ai.agent.name"], "researcher");

    // The failed tool call: an error, with its type.
    let failed = spans.one("execute_tool read_file");
    assert_eq!(failed["status_code"], "ERROR");
    assert_eq!(failed["attributes"]["error.type"], "tool_error");
    assert_eq!(failed["attributes"]["gen_ai.tool.name"], "read_file");
    assert_eq!(failed["attributes"]["gen_ai.tool.type"], "function");
    assert!(failed["attributes"]["gen_ai.tool.call.id"].is_string());

    // The MCP call: a client span under the tool call.
    let echo = spans.one("execute_tool ev_echo");
    assert_eq!(echo["status_code"], "OK");
    assert_eq!(echo["attributes"]["gen_ai.tool.type"], "extension");
    let call = spans.one("tools/call ev_echo");
    assert_eq!(call["parent_id"], *id(echo));
    assert_eq!(call["attributes"]["mcp.method.name"], "tools/call");

    // The handoff continues the trace: the target's agent span, its model call under it.
    let b = spans.one("invoke_agent agent-b");
    assert_eq!(b["attributes"]["gen_ai.agent.name"], "agent-b");
    assert_eq!(spans.children(b), ["chat mock-model"]);
    let handoff = root["events"].as_array().unwrap();
    assert!(
        handoff.iter().any(|e| e["name"] == "runner.handoff"),
        "{handoff:#?}"
    );

    // No content unless asked for.
    for span in &spans.0 {
        let keys = span["attributes"].as_object().unwrap();
        for key in [
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
        ] {
            assert!(!keys.contains_key(key), "{key} recorded: {span:#?}");
        }
    }
}

/// The mock model on one wire, with sampling parameters, as an inline `model:` mapping.
fn model_with_params(wire: &str, params: &str) -> String {
    let (provider, url) = match wire {
        "anthropic" => ("provider: anthropic", "$ANTHROPIC_URL"),
        "responses" => ("provider: openai, api: responses", "$OPENAI_URL"),
        _ => ("provider: openai", "$OPENAI_URL"),
    };
    format!(
        "{{ {provider}, name: mock-model, base_url: \"{url}\", api_key_env: {}, retry: {{ max_attempts: 1 }}, params: {{ {params} }} }}",
        support::KEY_ENV
    )
}

#[test]
fn chat_spans_carry_each_wires_response_id_and_the_request_parameters_that_were_set() {
    let phoenix = phoenix();
    let wires = [
        (
            "openai",
            "temperature: 0.25, top_p: 0.5, max_tokens: 300, seed: 7, n: 1, stop: [STOP-HERE]",
            "chatcmpl-",
        ),
        (
            "responses",
            "temperature: 0.25, top_p: 0.5, max_output_tokens: 300",
            "resp_",
        ),
        (
            "anthropic",
            "temperature: 0.25, top_k: 40, max_tokens: 300, stop_sequences: [STOP-HERE]",
            "msg_",
        ),
    ];
    for (wire, params, prefix) in wires {
        let project = format!("params-{wire}");
        let ran = Test::new()
            .agent(&format!(
                "name: test-agent\nmodel: {}\nprompt: Hi.\ntelemetry: {{ resource: {{ openinference.project.name: {project} }} }}\n",
                model_with_params(wire, params)
            ))
            .reply(Reply::text("Hello."))
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &phoenix.endpoint)
            .run();
        assert_eq!(ran.result()["output"], "Hello.");
        // The events say it first: the id in the reply's event, the parameters in the call's.
        let completed = ran.events_of("thread.message.completed");
        let id = completed[0]["data"]["responseId"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(id.starts_with(prefix), "{wire}: {id}");
        let created = ran.events_of("thread.message.created");
        let call = created
            .iter()
            .find(|e| e["data"]["message"]["role"] == "assistant");
        let created = &call.unwrap()["data"]["params"];
        assert_eq!(created["temperature"], 0.25, "{wire}: {created}");

        let spans = phoenix.spans(&project, |s| s.has("chat mock-model"));
        let chat = &spans.one("chat mock-model")["attributes"];
        assert_eq!(chat["gen_ai.response.id"], id.as_str(), "{wire}");
        assert_eq!(chat["gen_ai.request.temperature"], 0.25, "{wire}");
        assert_eq!(chat["gen_ai.request.max_tokens"], 300, "{wire}");
        match wire {
            "openai" => {
                assert_eq!(chat["gen_ai.request.top_p"], 0.5);
                assert_eq!(chat["gen_ai.request.seed"], 7);
                assert_eq!(chat["gen_ai.request.choice.count"], 1);
                assert_eq!(chat["gen_ai.request.stop_sequences"], json!(["STOP-HERE"]));
            }
            "anthropic" => {
                assert_eq!(chat["gen_ai.request.top_k"], 40.0);
                assert_eq!(chat["gen_ai.request.stop_sequences"], json!(["STOP-HERE"]));
                assert!(
                    chat.get("gen_ai.request.top_p").is_none(),
                    "not set: {chat}"
                );
            }
            _ => assert!(chat.get("gen_ai.request.seed").is_none(), "not set: {chat}"),
        }
    }
}

#[test]
fn traceparent_in_the_environment_makes_the_run_a_child_of_the_callers_trace() {
    let phoenix = phoenix();
    let ran = Test::new()
        .agent("prompt: Hi.")
        .reply(Reply::text("Hello."))
        .env(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            &format!("{}/v1/traces", phoenix.endpoint),
        )
        .env(
            "OTEL_RESOURCE_ATTRIBUTES",
            "openinference.project.name=joined",
        )
        .env(
            "TRACEPARENT",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )
        .run();
    assert_eq!(ran.result()["output"], "Hello.");
    let spans = phoenix.spans("joined", |s| s.has("invoke_agent test-agent"));
    let run = spans.one("invoke_agent test-agent");
    assert_eq!(
        run["context"]["trace_id"],
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(run["parent_id"], "00f067aa0ba902b7");
}

#[test]
fn the_programs_a_run_starts_get_its_span_as_their_traceparent() {
    let phoenix = phoenix();
    let ran = Test::new()
        .agent(&format!(
            "prompt: Go.\ntools:\n  - builtin: shell\n    allow: [env]\n{}",
            everything("[get-env]")
        ))
        .reply(
            Reply::tool_call("shell", json!({"command": "env"}))
                .with_tool_call("ev_get-env", json!({})),
        )
        .reply(Reply::text("Done."))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &phoenix.endpoint)
        .env(
            "OTEL_RESOURCE_ATTRIBUTES",
            "openinference.project.name=children",
        )
        .env(
            "TRACEPARENT",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        )
        .run();
    let spans = phoenix.spans("children", |s| s.has("invoke_agent test-agent"));
    let run = spans.one("invoke_agent test-agent");
    let expected = format!(
        "00-0af7651916cd43dd8448eb211c80319c-{}-01",
        run["context"]["span_id"].as_str().unwrap()
    );
    // A command, and an MCP server started before the run's span was.
    let results = ran.events_of("agent.tool.execution.completed");
    assert_eq!(results.len(), 2);
    for result in results {
        let text = result["data"]["result"].to_string();
        assert!(
            text.contains("TRACEPARENT") && text.contains(&expected),
            "{} lacks TRACEPARENT {expected}: {text}",
            result["data"]["toolName"]
        );
    }
}

#[test]
fn message_content_is_recorded_only_when_asked_and_then_redacted() {
    let phoenix = phoenix();
    let secret = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345";
    let ran = Test::new()
        .agent(
            "prompt: \"Look up order acme-123456.\"
redact: [\"acme-[0-9]{6}\"]
tools:
  - builtin: read_file
telemetry: { resource: { openinference.project.name: content } }
",
        )
        .file("order.txt", &format!("key {secret}"))
        .reply(Reply::tool_call("read_file", json!({"path": "order.txt"})))
        .reply(Reply::text(format!("Order acme-654321 uses {secret}.")))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &phoenix.endpoint)
        .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        .run();
    assert_eq!(ran.code, 0);
    let spans = phoenix.spans("content", |s| s.has("invoke_agent test-agent"));
    let recorded = |name: &str, key: &str| -> String {
        let span = spans.named(name);
        let values = span.iter().filter_map(|s| s["attributes"][key].as_str());
        values.collect::<Vec<_>>().join("\n")
    };
    let input = recorded("invoke_agent test-agent", "gen_ai.input.messages");
    assert!(input.contains("Look up order [REDACTED]."), "{input}");
    let output = recorded("chat mock-model", "gen_ai.output.messages");
    assert!(
        output.contains("Order [REDACTED] uses [REDACTED]."),
        "{output}"
    );
    assert!(output.contains("\"name\":\"read_file\""), "{output}");
    let result = recorded("execute_tool read_file", "gen_ai.tool.call.result");
    assert!(result.contains("key [REDACTED]"), "{result}");
    let arguments = recorded("execute_tool read_file", "gen_ai.tool.call.arguments");
    assert_eq!(arguments, r#"{"path":"order.txt"}"#);
    let everything = serde_json::to_string(&spans.0).unwrap();
    assert!(!everything.contains(secret), "the key reached a span");
    assert!(
        !everything.contains("acme-"),
        "a `redact:` match reached a span"
    );
}

/// The same session with export off, then to `endpoint`: same exit, same answer, the
/// export's stderr.
fn against(endpoint: &str) -> (Ran, Ran) {
    let session = |test: Test| {
        test.agent("prompt: Hi.\ntools:\n  - builtin: read_file\n")
            .reply(Reply::tool_call("read_file", json!({"path": "nope"})))
            .reply(Reply::text("Done."))
            .time_limit(Duration::from_secs(60))
    };
    let off = session(Test::new()).run();
    let on = session(Test::new())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .any_stderr()
        .run();
    assert_eq!(on.code, off.code);
    assert_eq!(on.result()["output"], off.result()["output"]);
    assert_eq!(on.result()["status"], "completed");
    (off, on)
}

fn warnings(ran: &Ran) -> Vec<String> {
    ran.stderr
        .lines()
        .filter(|line| !line.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn a_collector_that_refuses_costs_one_warning_and_nothing_else() {
    let endpoint = format!("http://127.0.0.1:{}", free_port());
    let (_, on) = against(&endpoint);
    let warnings = warnings(&on);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with(&format!(
            "warning: OpenTelemetry export to {endpoint}/v1/traces failed"
        )),
        "{warnings:?}"
    );
    assert!(warnings[0].ends_with("spans are dropped, the run goes on"));
}

#[test]
fn a_collector_that_never_answers_is_given_two_seconds_at_exit_then_one_warning() {
    // Connections are accepted by the kernel (the backlog) and never answered.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", silent.local_addr().unwrap());
    let (_, on) = against(&endpoint);
    let warnings = warnings(&on);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with(&format!(
            "warning: OpenTelemetry export to {endpoint}/v1/traces did not finish within 2 s"
        )),
        "{warnings:?}"
    );
}

/// A loopback OTLP/HTTP receiver, for what Phoenix does not keep (metrics, span links): it
/// answers every POST with 200 and keeps the path and body of each, decoded on demand.
struct OtlpReceiver {
    endpoint: String,
    received: Arc<Received>,
}

/// The path and body of each request, in the order they arrived.
type Received = Mutex<Vec<(String, Vec<u8>)>>;

impl OtlpReceiver {
    fn start() -> OtlpReceiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let received: Arc<Received> = Arc::default();
        let store = received.clone();
        // Lives as long as the test binary; each connection is served until it closes.
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let store = store.clone();
                std::thread::spawn(move || serve_otlp(stream, &store));
            }
        });
        OtlpReceiver { endpoint, received }
    }

    /// The metrics requests that arrived at `path`.
    fn at(&self, path: &str) -> Vec<ExportMetricsServiceRequest> {
        self.bodies(path)
            .iter()
            .map(|body| ExportMetricsServiceRequest::decode(body.as_slice()).unwrap())
            .collect()
    }

    /// The spans that arrived at `/v1/traces`, in the order they arrived.
    fn spans(&self) -> Vec<OtlpSpan> {
        let requests = self.bodies("/v1/traces");
        let requests = requests
            .iter()
            .map(|body| ExportTraceServiceRequest::decode(body.as_slice()).unwrap());
        requests
            .flat_map(|r| r.resource_spans)
            .flat_map(|r| r.scope_spans)
            .flat_map(|s| s.spans)
            .collect()
    }

    fn bodies(&self, path: &str) -> Vec<Vec<u8>> {
        let received = self.received.lock().unwrap();
        received
            .iter()
            .filter(|(at, _)| at == path)
            .map(|(_, body)| body.clone())
            .collect()
    }
}

/// Serves one connection's requests (HTTP/1.1 with `Content-Length`), keeping each body
/// before it answers (so a run that has exited has been received).
fn serve_otlp(stream: std::net::TcpStream, store: &Received) {
    use std::io::{BufRead, BufReader, Read, Write};
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string();
        let mut length = 0;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        store.lock().unwrap().push((path, body));
        let answer =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// The data points of histogram `name` across `requests`: attributes (as text) and sums.
fn histogram(
    requests: &[ExportMetricsServiceRequest],
    name: &str,
) -> Vec<(HashMap<String, String>, f64, u64)> {
    let metrics = requests
        .iter()
        .flat_map(|r| &r.resource_metrics)
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .filter(|m| m.name == name);
    let mut points = Vec::new();
    for metric in metrics {
        let Some(Data::Histogram(histogram)) = &metric.data else {
            panic!("{name} is not a histogram: {metric:?}");
        };
        for point in &histogram.data_points {
            let attributes = point
                .attributes
                .iter()
                .map(|kv| {
                    let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                        Some(AnyValueKind::StringValue(s)) => s.clone(),
                        other => format!("{other:?}"),
                    };
                    (kv.key.clone(), value)
                })
                .collect();
            points.push((attributes, point.sum.unwrap_or_default(), point.count));
        }
    }
    points
}

#[test]
fn model_calls_are_exported_as_genai_token_usage_and_duration_histograms() {
    let receiver = OtlpReceiver::start();
    let ran = Test::new()
        .agent("prompt: Hi.\ntools:\n  - builtin: read_file\n")
        .reply(Reply::tool_call("read_file", json!({"path": "nope"})).with_usage(100, 20))
        .reply(Reply::text("Done.").with_usage(130, 5))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
        // The metrics' own endpoint wins over the general one, as for spans.
        .env(
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            &format!("{}/elsewhere/metrics", receiver.endpoint),
        )
        .run();
    assert_eq!(ran.result()["output"], "Done.");
    assert!(receiver.at("/v1/metrics").is_empty());
    let requests = receiver.at("/elsewhere/metrics");
    assert!(!requests.is_empty(), "no metrics arrived");

    let tokens = histogram(&requests, "gen_ai.client.token.usage");
    let of = |kind: &str| {
        tokens
            .iter()
            .find(|(attributes, _, _)| attributes["gen_ai.token.type"] == kind)
            .unwrap_or_else(|| panic!("no {kind} tokens: {tokens:?}"))
    };
    let (input, sum, count) = of("input");
    assert_eq!(
        (*sum, *count),
        (230.0, 2),
        "two calls, 100 + 130 input tokens"
    );
    assert_eq!(input["gen_ai.operation.name"], "chat");
    assert_eq!(input["gen_ai.provider.name"], "openai");
    assert_eq!(input["gen_ai.request.model"], "mock-model");
    assert_eq!(input["gen_ai.response.model"], "mock-model");
    let (_, sum, count) = of("output");
    assert_eq!((*sum, *count), (25.0, 2));

    let durations = histogram(&requests, "gen_ai.client.operation.duration");
    let calls: u64 = durations.iter().map(|(_, _, count)| count).sum();
    assert_eq!(calls, 2, "one duration per model call: {durations:?}");
    assert!(
        durations
            .iter()
            .all(|(a, _, _)| a["gen_ai.request.model"] == "mock-model")
    );
    assert!(
        durations
            .iter()
            .all(|(a, _, _)| a["gen_ai.response.model"] == "mock-model")
    );
    assert!(
        durations
            .iter()
            .all(|(a, _, _)| !a.contains_key("error.type"))
    );
}

/// An agent whose `write_file` calls wait for a person's approval.
const ASKING: &str =
    "prompt: Go\ntools:\n  - builtin: write_file\npermissions:\n  ask: [write_file]\n";

/// The one span of `spans` named `name` that is not `other`.
fn run_span<'a>(spans: &'a [OtlpSpan], name: &str, other: Option<&OtlpSpan>) -> &'a OtlpSpan {
    let found: Vec<&OtlpSpan> = spans
        .iter()
        .filter(|s| s.name == name && other.is_none_or(|o| o.span_id != s.span_id))
        .collect();
    assert_eq!(found.len(), 1, "one `{name}`: {spans:#?}");
    found[0]
}

#[test]
fn a_resumed_session_is_a_new_trace_linked_to_its_first_run() {
    let receiver = OtlpReceiver::start();
    let paused = Test::new()
        .agent(ASKING)
        .reply(Reply::tool_call(
            "write_file",
            json!({"path": "a.txt", "content": "A"}),
        ))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
        .status(4)
        .any_stderr()
        .run();
    assert_eq!(paused.result()["status"], "input_required");
    let session = paused.session();
    let spans = receiver.spans();
    let first = run_span(&spans, "invoke_agent test-agent", None).clone();
    assert!(first.links.is_empty(), "the first run links to nothing");

    let resumed = paused
        .then()
        .reply(Reply::text("written"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
        .command(["resume", &session, "--approve", "all", "--run-dir", "run2"])
        .stdout("written\n")
        .run();
    assert_eq!(resumed.read("a.txt"), "A");
    let spans = receiver.spans();
    let second = run_span(&spans, "invoke_agent test-agent", Some(&first));
    assert_ne!(second.trace_id, first.trace_id, "a trace of its own");
    assert_eq!(second.parent_span_id, Vec::<u8>::new(), "a root span");
    assert_eq!(second.links.len(), 1, "{second:#?}");
    assert_eq!(second.links[0].trace_id, first.trace_id);
    assert_eq!(second.links[0].span_id, first.span_id);
}

#[test]
fn a_session_whose_first_run_was_not_traced_resumes_and_its_first_traced_run_is_linked_to() {
    // No export on the first run: its checkpoint keeps no trace, as an older runner's.
    let paused = Test::new()
        .agent(ASKING)
        .reply(Reply::tool_call(
            "write_file",
            json!({"path": "a.txt", "content": "A"}),
        ))
        .status(4)
        .any_stderr()
        .run();
    let session = paused.session();
    let asked = paused.events_of("agent.tool.permission.decided");
    let call = asked[0]["data"]["toolCallId"].as_str().unwrap().to_string();
    let receiver = OtlpReceiver::start();
    // Denied, so the model asks again and the session pauses a second time.
    let second = paused
        .then()
        .reply(Reply::tool_call(
            "write_file",
            json!({"path": "b.txt", "content": "B"}),
        ))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
        .command(["resume", &session, "--deny", &call, "--run-dir", "run2"])
        .status(4)
        .any_stderr()
        .run();
    let spans = receiver.spans();
    let traced = run_span(&spans, "invoke_agent test-agent", None).clone();
    assert!(traced.links.is_empty(), "nothing traced before it");
    second
        .then()
        .reply(Reply::text("written"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
        .command(["resume", &session, "--approve", "all", "--run-dir", "run3"])
        .stdout("written\n")
        .run();
    let spans = receiver.spans();
    let third = run_span(&spans, "invoke_agent test-agent", Some(&traced));
    assert_eq!(third.links.len(), 1, "{third:#?}");
    assert_eq!(third.links[0].span_id, traced.span_id);
}

#[test]
fn each_chat_turn_is_a_trace_linked_to_the_first_turns() {
    let receiver = OtlpReceiver::start();
    Test::new()
        .agent("system: Be brief.\n")
        .reply(Reply::text("Hello Ann."))
        .reply(Reply::text("You are Ann."))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
        .command(["chat", "agent.yaml", "--run-dir", "run"])
        .stdin("I am Ann.\nWho am I?\n")
        .stdout("Hello Ann.\nYou are Ann.\n")
        .any_stderr()
        .run();
    let spans = receiver.spans();
    let turns: Vec<&OtlpSpan> = spans
        .iter()
        .filter(|s| s.name == "invoke_agent test-agent")
        .collect();
    assert_eq!(turns.len(), 2, "one span per turn: {spans:#?}");
    let (first, second) = match turns[0].links.is_empty() {
        true => (turns[0], turns[1]),
        false => (turns[1], turns[0]),
    };
    assert_ne!(first.trace_id, second.trace_id);
    assert_eq!(second.links.len(), 1);
    assert_eq!(second.links[0].span_id, first.span_id);
    assert_eq!(
        spans.iter().filter(|s| s.name == "chat mock-model").count(),
        2
    );
}

/// A caller's span: what CI or an orchestrator puts in `TRACEPARENT` or a request header.
const CALLER_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN: &str = "b7ad6b7169203331";

fn caller() -> String {
    format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The spans named `name`, once `count` of them have arrived (at most 20 s).
fn arrived(receiver: &OtlpReceiver, name: &str, count: usize) -> Vec<OtlpSpan> {
    let named = || -> Vec<OtlpSpan> {
        let spans = receiver.spans().into_iter();
        spans.filter(|s| s.name == name).collect()
    };
    support::wait_until(&format!("{count} `{name}` spans"), || {
        named().len() >= count
    });
    named()
}

const SAYER: &str = "inputs:\n  n: { type: integer, required: true }\nprompt: \"Say {{ n }}\"\n";

fn said(_: &MockRequest) -> Option<MockResponse> {
    Some(MockResponse::reply(Reply::text("said")))
}

#[test]
fn runner_serve_makes_a_run_the_child_of_the_span_its_request_names() {
    let receiver = OtlpReceiver::start();
    let (_server, api) = Test::new()
        .agent("prompt: Hi.")
        .reply(Reply::text("Hello."))
        .reply(Reply::text("Hello."))
        .reply(Reply::text("Hello again."))
        .reply(Reply::text("Hello over A2A."))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
        // Spans leave every 50 ms, not at the server's exit.
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .serve(&[]);
    let body = r#"{"agent": "test-agent"}"#;
    let headers = [("traceparent", caller()), ("tracestate", "vendor=x".into())];
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let child = api.request("POST", "/api/runs", &headers, Some(body));
    assert_eq!(child.status, 201, "{}", child.body);
    let run = &arrived(&receiver, "invoke_agent test-agent", 1)[0];
    assert_eq!(hex(&run.trace_id), CALLER_TRACE);
    assert_eq!(hex(&run.parent_span_id), CALLER_SPAN);
    assert_eq!(run.trace_state, "vendor=x");

    // A request that names no span (or a broken one) starts a trace of its own.
    let broken = [("traceparent", "00-not-a-trace-01")];
    let own = api.request("POST", "/api/runs", &broken, Some(body));
    assert_eq!(own.status, 201, "{}", own.body);
    let runs = arrived(&receiver, "invoke_agent test-agent", 2);
    let other = runs.iter().find(|s| s.span_id != run.span_id).unwrap();
    assert_ne!(hex(&other.trace_id), CALLER_TRACE);
    assert!(other.parent_span_id.is_empty(), "a root span: {other:#?}");

    // A call of the agent's tool over `/mcp` too.
    let mcp_parent = format!("00-{CALLER_TRACE}-{}-01", "1111111111111111");
    let answer = mcp_call(&api, "test-agent", &[("traceparent", &mcp_parent)]);
    assert!(answer.contains("Hello again."), "{answer}");
    let runs = arrived(&receiver, "invoke_agent test-agent", 3);
    let called = runs
        .iter()
        .find(|s| hex(&s.parent_span_id) == "1111111111111111");
    let called = called.unwrap_or_else(|| panic!("no run under the MCP caller's span: {runs:#?}"));
    assert_eq!(hex(&called.trace_id), CALLER_TRACE);

    // And a message sent to the agent over A2A.
    let a2a_parent = format!("00-{CALLER_TRACE}-{}-01", "2222222222222222");
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Hi."}]}}});
    let headers = [("traceparent", a2a_parent.as_str()), ("A2A-Version", "1.0")];
    let sent = api.request("POST", "/a2a/test-agent", &headers, Some(&send.to_string()));
    assert!(sent.body.contains("Hello over A2A."), "{}", sent.body);
    let runs = arrived(&receiver, "invoke_agent test-agent", 4);
    let sent = runs
        .iter()
        .find(|s| hex(&s.parent_span_id) == "2222222222222222");
    let sent = sent.unwrap_or_else(|| panic!("no run under the A2A caller's span: {runs:#?}"));
    assert_eq!(hex(&sent.trace_id), CALLER_TRACE);
}

/// Two runs at once in `runner serve`: `a` waits (in its first command) until `b` has
/// started, then records its `TRACEPARENT`, as `b` does; a `pre_tool_use` hook records its
/// own. The mock answers each run by its prompt and how far it has got.
const TWO_RUNS: &str = "inputs:\n  who: { type: string, required: true }\nprompt: \"Run {{ who }}.\"
tools:\n  - builtin: shell\n    allow: [sh]\nhooks:\n  pre_tool_use:\n    - command: [./record.sh]\n";

/// The hook: the `TRACEPARENT` it was started with, into `a.hook` or `b.hook` after the
/// file the command writes.
const RECORD: &str = "#!/bin/sh\ncall=$(cat)\ncase \"$call\" in\n  *\"> a.trace\"*) printf %s \"$TRACEPARENT\" > a.hook ;;\n  *\"> b.trace\"*) printf %s \"$TRACEPARENT\" > b.hook ;;\nesac\n";

fn two_runs(request: &MockRequest) -> Option<MockResponse> {
    let who = request.conversation().iter().find_map(|m| {
        let text = m.to_string();
        ["Run a.", "Run b."]
            .into_iter()
            .find(|run| text.contains(run))
    })?;
    let done = request
        .conversation()
        .iter()
        .filter(|m| m["role"] == "tool")
        .count();
    let record = |file: &str| format!("printf %s \"$TRACEPARENT\" > {file}");
    // At most 20 s: `b` starts at once.
    let wait = "i=0; while [ ! -e b.trace ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done";
    let command = match (who, done) {
        ("Run a.", 0) => wait.to_string(),
        ("Run a.", 1) => record("a.trace"),
        ("Run b.", 0) => record("b.trace"),
        _ => return Some(MockResponse::reply(Reply::text("Done."))),
    };
    let call = json!({"command": format!("sh -c '{command}'")});
    Some(MockResponse::reply(Reply::tool_call("shell", call)))
}

#[test]
fn runs_at_once_in_runner_serve_each_pass_their_own_span_to_what_they_start() {
    let receiver = OtlpReceiver::start();
    let (server, api) = Test::new()
        .agent(TWO_RUNS)
        .executable("record.sh", RECORD)
        .route(two_runs)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .serve(&[]);
    let start = |who: &str| {
        let body = json!({"agent": "test-agent", "inputs": {"who": who}});
        let started = api.post("/api/runs", &body);
        assert_eq!(started.status, 201, "{}", started.body);
        started.json()["run_id"].as_str().unwrap().to_string()
    };
    let runs = [("a", start("a")), ("b", start("b"))];
    let spans = arrived(&receiver, "invoke_agent test-agent", 2);
    for (who, run_id) in runs {
        let span = spans.iter().find(|span| {
            span.attributes.iter().any(|kv| {
                kv.key == "gen_ai.agent.id"
                    && kv.value.as_ref().and_then(|v| v.value.as_ref())
                        == Some(&AnyValueKind::StringValue(run_id.clone()))
            })
        });
        let span = span.unwrap_or_else(|| panic!("no span of run {who}: {spans:#?}"));
        let own = format!("00-{}-{}-01", hex(&span.trace_id), hex(&span.span_id));
        for (file, what) in [("trace", "its command"), ("hook", "its hook")] {
            let seen = std::fs::read_to_string(server.path(&format!("{who}.{file}")));
            let seen = seen.unwrap_or_else(|e| panic!("{what} of run {who} left nothing: {e}"));
            assert_eq!(
                seen, own,
                "{what} of run {who} was given another run's span"
            );
        }
    }
}

/// Calls the agent's tool `tool` over `/mcp` of `runner serve`, as a Streamable HTTP client
/// does, with `extra` headers on the call; the call's answer (a server-sent event).
fn mcp_call(api: &Api, tool: &str, extra: &[(&str, &str)]) -> String {
    let accept = ("Accept", "application/json, text/event-stream");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    let opened = api.request("POST", "/mcp", &[accept], Some(&initialize.to_string()));
    assert_eq!(opened.status, 200, "{}", opened.body);
    let session = opened
        .header("mcp-session-id")
        .expect("a session id")
        .to_string();
    let mut headers = vec![
        accept,
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let acknowledged = api.request("POST", "/mcp", &headers, Some(&initialized.to_string()));
    assert_eq!(acknowledged.status, 202, "{}", acknowledged.body);
    headers.extend(extra);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": tool, "arguments": {"input": "Hi."}}});
    let answered = api.request("POST", "/mcp", &headers, Some(&call.to_string()));
    assert_eq!(answered.status, 200, "{}", answered.body);
    answered.body
}

#[test]
fn a_nats_job_carries_the_submitters_traceparent_to_the_workers_run() {
    let receiver = OtlpReceiver::start();
    let nats = support::NatsServer::start();
    let url = nats.url();
    let submitted = Test::new()
        .agent(SAYER)
        .file("inputs.jsonl", "{\"n\": 1}\n{\"n\": 2}\n")
        .route(said)
        .env("TRACEPARENT", &caller())
        .command([
            "submit",
            "agent.yaml",
            "--inputs",
            "inputs.jsonl",
            "--nats",
            &url,
            "--batch-id",
            "traced",
        ])
        .stdout("traced\n")
        .any_stderr()
        .run();
    // The worker has no TRACEPARENT of its own: its runs' come from the jobs.
    let _worker = submitted
        .then()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
        .command(["worker", "--nats", &url])
        .status_any()
        .any_stderr()
        .spawn();
    let runs = arrived(&receiver, "invoke_agent test-agent", 2);
    for run in &runs {
        assert_eq!(hex(&run.trace_id), CALLER_TRACE, "{run:#?}");
        assert_eq!(hex(&run.parent_span_id), CALLER_SPAN);
    }
}

#[test]
fn a_batch_is_one_trace_with_a_span_per_input_and_each_run_under_its_input() {
    let receiver = OtlpReceiver::start();
    Test::new()
        .agent(SAYER)
        .file(
            "inputs.jsonl",
            "{\"n\": 1}\n{\"id\": \"second\", \"n\": 2}\n{\"n\": \"x\"}\n",
        )
        .route(said)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
        .env("TRACEPARENT", &caller())
        .command([
            "batch",
            "agent.yaml",
            "--inputs",
            "inputs.jsonl",
            "--batch-dir",
            "out",
        ])
        .status_any()
        .any_stderr()
        .run();
    let spans = receiver.spans();
    let batch = run_span(&spans, "batch test-agent", None);
    assert_eq!(hex(&batch.trace_id), CALLER_TRACE, "the caller's trace");
    assert_eq!(hex(&batch.parent_span_id), CALLER_SPAN);
    assert!(
        spans.iter().all(|s| s.trace_id == batch.trace_id),
        "one trace"
    );
    let input = |name: &str| {
        let span = run_span(&spans, name, None);
        assert_eq!(span.parent_span_id, batch.span_id, "{name} under the batch");
        span
    };
    let (first, second, bad) = (input("input 1"), input("input 2"), input("input 3"));
    let runs: Vec<&OtlpSpan> = spans
        .iter()
        .filter(|s| s.name == "invoke_agent test-agent")
        .collect();
    assert_eq!(runs.len(), 2, "the bad line has no run: {spans:#?}");
    for input in [first, second] {
        let under = runs.iter().filter(|r| r.parent_span_id == input.span_id);
        assert_eq!(under.count(), 1, "{} has its run under it", input.name);
    }
    let status = |span: &OtlpSpan| span.status.as_ref().map(|s| s.code).unwrap_or_default();
    assert_eq!(status(first), 1, "ok");
    assert_eq!(status(bad), 2, "error: the line is not a valid input");
    let id = second
        .attributes
        .iter()
        .find(|kv| kv.key == "runner.batch.input.id");
    let id = id
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref());
    assert_eq!(id, Some(&AnyValueKind::StringValue("second".into())));
}

#[test]
fn an_exporter_of_none_turns_off_its_signal_alone() {
    // No spans: the metrics go all the same, and the programs the run starts get the
    // caller's TRACEPARENT as it was, not a span nobody will see.
    let traces_off = OtlpReceiver::start();
    let ran = Test::new()
        .agent("prompt: Go.\ntools:\n  - builtin: shell\n    allow: [env]\n")
        .reply(Reply::tool_call("shell", json!({"command": "env"})).with_usage(10, 2))
        .reply(Reply::text("Done.").with_usage(12, 1))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &traces_off.endpoint)
        .env("OTEL_TRACES_EXPORTER", "none")
        .env("TRACEPARENT", &caller())
        .run();
    assert_eq!(ran.result()["output"], "Done.");
    assert!(traces_off.spans().is_empty(), "{:#?}", traces_off.spans());
    let tokens = histogram(&traces_off.at("/v1/metrics"), "gen_ai.client.token.usage");
    assert!(!tokens.is_empty(), "the metrics still go");
    let env = ran.events_of("agent.tool.execution.completed")[0]["data"]["result"].to_string();
    assert!(env.contains(&format!("TRACEPARENT={}", caller())), "{env}");

    // No metrics: the spans go all the same.
    let metrics_off = OtlpReceiver::start();
    Test::new()
        .agent("prompt: Hi.")
        .reply(Reply::text("Hello.").with_usage(10, 2))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &metrics_off.endpoint)
        .env("OTEL_METRICS_EXPORTER", "none")
        .run();
    assert!(metrics_off.at("/v1/metrics").is_empty(), "no metrics");
    let spans = metrics_off.spans();
    assert!(
        spans.iter().any(|s| s.name == "invoke_agent test-agent"),
        "{spans:#?}"
    );

    // An exporter this build lacks is said once, and otherwise ignored.
    let console = OtlpReceiver::start();
    let ran = Test::new()
        .agent("prompt: Hi.")
        .reply(Reply::text("Hello."))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &console.endpoint)
        .env("OTEL_TRACES_EXPORTER", "console")
        .any_stderr()
        .run();
    assert_eq!(
        warnings(&ran),
        [
            "warning: OTEL_TRACES_EXPORTER `console` is not built in (only `otlp` and `none`); it is ignored"
        ]
    );
    assert!(!console.spans().is_empty(), "as if it were not set: otlp");
}
