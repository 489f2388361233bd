//! The kernel sandbox (`sandbox:`, docs/security.md): what a program the model runs
//! through `shell`, or a stdio MCP server, cannot reach under it, and can without it. Each
//! escape is a `shell` call the mock model asks for; it fails inside the tool (the tool's
//! own error) and the run goes on.
//!
//! The secrets are planted in a home directory of the test's own (`HOME` for the run),
//! never in the real one. On a kernel without Landlock the tests print why and skip.

mod support;

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use runner::testing::mock_server::Reply;
use serde_json::{Value, json};
use support::{Test, tempdir};

/// Whether the kernel can sandbox; prints why not when it cannot.
fn landlock() -> bool {
    match runner::sandbox::abi::kernel_abi() {
        Ok(version) if version >= 4 => true,
        Ok(version) => {
            eprintln!("skipped: the kernel's Landlock ABI is {version}; these tests need 4");
            false
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            false
        }
    }
}

/// A TCP server on 127.0.0.1 of the host that answers every connection with a short
/// HTTP response; its port.
fn local_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let _ = stream.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
        }
    });
    port
}

/// The places one session of escapes aims at.
struct Targets {
    home: PathBuf,
    outside: PathBuf,
    port: u16,
}

impl Targets {
    fn new() -> Self {
        let home = tempdir("sandbox-home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE KEY 0xC0FFEE").unwrap();
        Targets {
            home,
            outside: tempdir("sandbox-outside"),
            port: local_server(),
        }
    }

    /// Each escape: what it tries, and the command.
    fn escapes(&self) -> Vec<(&'static str, String)> {
        let outside = self.outside.display();
        let home = self.home.display();
        let port = self.port;
        vec![
            ("write outside", format!("touch {outside}/written")),
            ("read a key", format!("cat {home}/.ssh/id_rsa")),
            ("write .runner", "touch .runner/forged".to_string()),
            (
                "write the agent file",
                "bash -c 'echo \"# changed\" >> agent.yaml'".to_string(),
            ),
            (
                "cd / and write",
                format!("bash -c 'cd / && echo x > {outside}/from-root'"),
            ),
            (
                "symlink out",
                "bash -c 'echo x > link/through-link'".to_string(),
            ),
            (
                "curl a local port",
                format!("curl -sS --max-time 5 http://127.0.0.1:{port}/"),
            ),
            (
                "python socket",
                format!(
                    "/usr/bin/python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')\""
                ),
            ),
        ]
    }

    /// A session in which the model writes a file in the workspace, then tries every
    /// escape, under `sandbox` (YAML text for the `shell` tool's `sandbox:` key) or none;
    /// each escape's result.
    fn run(&self, sandbox: Option<&str>) -> (Vec<Value>, support::Ran) {
        let mut agent = String::from(
            "prompt: Go\ntools:\n  - builtin: shell\n    allow: [touch, cat, bash, curl, /usr/bin/python3]\n",
        );
        if let Some(sandbox) = sandbox {
            agent.push_str(&format!("    sandbox: {sandbox}\n"));
        }
        let mut test = Test::new()
            .agent(&agent)
            .file(".runner/keep", "")
            .file("src/keep", "")
            .env("HOME", &self.home.display().to_string());
        std::os::unix::fs::symlink(&self.outside, test.path("link")).unwrap();
        // First what the program may do: write in the workspace, read its files.
        test = test.reply(Reply::tool_call(
            "shell",
            json!({ "command": "bash -c 'cat src/keep agent.yaml > src/made'" }),
        ));
        for (_, command) in self.escapes() {
            test = test.reply(Reply::tool_call("shell", json!({ "command": command })));
        }
        let ran = test.reply(Reply::text("done")).stdout("done\n").run();
        let mut results: Vec<Value> = ran
            .events_of("agent.tool.execution.completed")
            .iter()
            .map(|event| event["data"]["result"].clone())
            .collect();
        let allowed = results.remove(0);
        assert_eq!(allowed["success"], true, "{allowed}");
        assert!(ran.read("src/made").contains("name: test-agent"));
        (results, ran)
    }
}

fn exists(path: &Path) -> bool {
    path.exists()
}

#[test]
fn every_escape_fails_inside_the_tool_under_a_sandbox_and_the_run_goes_on() {
    if !landlock() {
        return;
    }
    let targets = Targets::new();
    let (results, ran) = targets.run(Some("{}"));
    let escapes = targets.escapes();
    assert_eq!(results.len(), escapes.len());
    for ((what, command), result) in escapes.iter().zip(&results) {
        assert_eq!(
            result["success"], false,
            "{what}: `{command}` escaped: {result}"
        );
    }
    let transcript = ran.transcript();
    assert!(!transcript.contains("0xC0FFEE"), "the key was read");
    assert!(!exists(&targets.outside.join("written")));
    assert!(!exists(&targets.outside.join("from-root")));
    assert!(!exists(&targets.outside.join("through-link")));
    assert!(!exists(&ran.path(".runner/forged")));
    assert!(!ran.read("agent.yaml").contains("# changed"));
}

#[test]
fn the_same_escapes_succeed_without_a_sandbox() {
    let targets = Targets::new();
    let (results, ran) = targets.run(None);
    let escapes = targets.escapes();
    assert_eq!(results.len(), escapes.len());
    for ((what, command), result) in escapes.iter().zip(&results) {
        assert_eq!(
            result["success"], true,
            "{what}: `{command}` failed: {result}"
        );
    }
    assert!(exists(&targets.outside.join("written")));
    assert!(exists(&targets.outside.join("through-link")));
    assert!(exists(&ran.path(".runner/forged")));
    assert!(ran.read("agent.yaml").contains("# changed"));
}

/// One `shell` call of `python3 -c SCRIPT` under `sandbox`; its result.
fn python(sandbox: &str, script: &str) -> Value {
    let agent = format!(
        "prompt: Go\ntools:\n  - builtin: shell\n    allow: [/usr/bin/python3]\n    sandbox: {sandbox}\n"
    );
    let command = shell_words::join(["/usr/bin/python3", "-c", script]);
    let ran = Test::new()
        .agent(&agent)
        .reply(Reply::tool_call("shell", json!({ "command": command })))
        .reply(Reply::text("done"))
        .stdout("done\n")
        .run();
    ran.events_of("agent.tool.execution.completed")[0]["data"]["result"].clone()
}

/// A script that tries a server of its own on its loopback, then each of `ports` of the
/// host, printing one word for each.
fn reach(ports: &[u16]) -> String {
    format!(
        r#"
import socket
def attempt(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        return "open"
    except OSError as error:
        return "closed"
try:
    own = socket.socket()
    own.bind(("127.0.0.1", 0))
    own.listen()
    print("own", attempt(own.getsockname()[1]))
except OSError:
    print("own", "closed")
for port in {ports:?}:
    print(port, attempt(port))
"#
    )
}

#[test]
fn loopback_reaches_a_server_of_its_own_and_nothing_on_the_host() {
    if !landlock() {
        return;
    }
    let host = local_server();
    let result = python("{ network: loopback }", &reach(&[host]));
    assert_eq!(
        result["data"]["stdout"],
        format!("own open\n{host} closed\n"),
        "{result}"
    );
    let result = python("{ network: none }", &reach(&[host]));
    assert_eq!(
        result["data"]["stdout"],
        format!("own closed\n{host} closed\n"),
        "{result}"
    );
}

#[test]
fn a_host_port_rule_allows_exactly_that_port() {
    if !landlock() {
        return;
    }
    let allowed = local_server();
    let other = local_server();
    let sandbox = format!("{{ network: [\"127.0.0.1:{allowed}\"] }}");
    let result = python(&sandbox, &reach(&[allowed, other]));
    assert_eq!(
        result["data"]["stdout"],
        format!("own closed\n{allowed} open\n{other} closed\n"),
        "{result}"
    );
}

#[test]
fn a_required_sandbox_fails_at_start_where_the_kernel_has_none() {
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: shell\n    allow: [touch]\n    sandbox: { required: true }\n")
        .env("RUNNER_SANDBOX_PRETEND_NO_LANDLOCK", "1")
        .status(2)
        .any_stderr()
        .run();
    assert!(ran.stderr.contains("`required: true`"), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("RUNNER_SANDBOX_PRETEND_NO_LANDLOCK"),
        "{}",
        ran.stderr
    );
    assert!(ran.requests().is_empty(), "the run started");
}

#[test]
fn without_required_the_program_runs_unconfined_and_the_result_says_so() {
    let outside = tempdir("sandbox-outside");
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: shell\n    allow: [touch]\n    sandbox: {}\n")
        .env("RUNNER_SANDBOX_PRETEND_NO_LANDLOCK", "1")
        .reply(Reply::tool_call(
            "shell",
            json!({ "command": format!("touch {}/unconfined", outside.display()) }),
        ))
        .reply(Reply::text("done"))
        .stdout("done\n")
        .stderr_contains("the sandbox is not enforced")
        .run();
    let result = &ran.events_of("agent.tool.execution.completed")[0]["data"]["result"];
    assert_eq!(result["data"]["sandbox"], "unavailable", "{result}");
    assert!(outside.join("unconfined").exists());
}

/// A stdio MCP server with one tool, `read` (a file's text), in Python.
const READER: &str = r#"import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method, reply = message["method"], {"jsonrpc": "2.0", "id": message["id"]}
    if method == "initialize":
        reply["result"] = {"protocolVersion": message["params"]["protocolVersion"],
                           "capabilities": {"tools": {}},
                           "serverInfo": {"name": "reader", "version": "1"}}
    elif method == "tools/list":
        reply["result"] = {"tools": [{"name": "read", "description": "Reads a file.",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}},
                            "required": ["path"]}}]}
    elif method == "tools/call":
        try:
            with open(message["params"]["arguments"]["path"]) as file:
                reply["result"] = {"content": [{"type": "text", "text": file.read()}]}
        except OSError as error:
            reply["result"] = {"content": [{"type": "text", "text": str(error)}], "isError": True}
    else:
        reply["error"] = {"code": -32601, "message": "no such method"}
    print(json.dumps(reply), flush=True)
"#;

/// The MCP server reads a file in a declared directory and one outside; the two results.
fn mcp_reads(sandbox: Option<&str>) -> (Value, Value) {
    let declared = tempdir("sandbox-declared");
    let outside = tempdir("sandbox-undeclared");
    std::fs::write(declared.join("notes.txt"), "declared notes").unwrap();
    std::fs::write(outside.join("secret.txt"), "undeclared secret").unwrap();
    let mut agent = String::from(
        "prompt: Go\ntools:\n  - mcp:\n      command: /usr/bin/python3\n      args: [reader.py]\n",
    );
    if let Some(sandbox) = sandbox {
        let sandbox = sandbox.replace("DECLARED", &declared.display().to_string());
        agent.push_str(&format!("      sandbox: {sandbox}\n"));
    }
    let read = |path: PathBuf| Reply::tool_call("read", json!({ "path": path }));
    let ran = Test::new()
        .agent(&agent)
        .file("reader.py", READER)
        .reply(read(declared.join("notes.txt")))
        .reply(read(outside.join("secret.txt")))
        .reply(Reply::text("done"))
        .stdout("done\n")
        .run();
    let results = ran.events_of("agent.tool.execution.completed");
    (
        results[0]["data"]["result"].clone(),
        results[1]["data"]["result"].clone(),
    )
}

#[test]
fn a_sandboxed_mcp_server_cannot_read_outside_its_declared_paths() {
    if !landlock() {
        return;
    }
    let (declared, outside) = mcp_reads(Some("{ fs: { read: [DECLARED] } }"));
    assert_eq!(declared["success"], true, "{declared}");
    assert!(
        declared.to_string().contains("declared notes"),
        "{declared}"
    );
    assert_eq!(outside["success"], false, "{outside}");
    assert!(
        outside.to_string().contains("Permission denied"),
        "{outside}"
    );
    assert!(
        !outside.to_string().contains("undeclared secret"),
        "{outside}"
    );

    let (declared, outside) = mcp_reads(None);
    assert_eq!(declared["success"], true, "{declared}");
    assert!(
        outside.to_string().contains("undeclared secret"),
        "{outside}"
    );
}

#[test]
fn a_sub_agent_stays_under_its_callers_sandbox_whatever_its_own_says() {
    if !landlock() {
        return;
    }
    let outside = tempdir("sandbox-outside");
    let ran = Test::new()
        .agent(
            "prompt: Go\nsandbox: {}\ntools:\n  - name: helper\n    description: Helps.\n    parameters: { type: object, properties: {} }\n    agent:\n      name: helper\n      tools:\n        - builtin: shell\n          allow: [touch]\n          sandbox: { fs: { write: [/] } }\n",
        )
        .reply(Reply::tool_call("helper", json!({})))
        .reply(Reply::tool_call(
            "shell",
            json!({ "command": format!("touch {}/from-helper", outside.display()) }),
        ))
        .reply(Reply::text("helped"))
        .reply(Reply::text("done"))
        .stdout("done\n")
        .run();
    let calls = ran.events_of("agent.tool.execution.completed");
    let shell = calls
        .iter()
        .find(|call| call["data"]["toolName"] == "shell")
        .unwrap_or_else(|| panic!("no shell call: {calls:?}"));
    assert_eq!(shell["data"]["result"]["success"], false, "{shell}");
    assert!(!outside.join("from-helper").exists());
}

#[test]
fn runner_tools_shows_each_programs_sandbox() {
    Test::new()
        .agent("prompt: Go\nsandbox: { network: loopback }\ntools:\n  - builtin: shell\n    allow: [ls]\n    sandbox: { network: [\"localhost:443\"], fs: { write: [out] } }\n")
        .command(["tools", "agent.yaml"])
        .stdout_contains(
            "sandbox: network loopback | network [localhost:443]; write workspace + [out]",
        )
        .run();
}

#[test]
fn runner_validate_points_at_a_bad_sandbox_line() {
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - builtin: shell\n    allow: [ls]\n    sandbox:\n      network: [\"example.com:99999\"]\n      requird: true\n")
        .command(["validate", "agent.yaml"])
        .status(2)
        .any_stderr()
        .run();
    let said = format!("{}{}", ran.stdout, ran.stderr);
    assert!(said.contains("agent.yaml:8:"), "{said}");
    assert!(said.contains("/tools/0/sandbox/network/0"), "{said}");
    assert!(said.contains("did you mean `required`?"), "{said}");
}

#[test]
fn a_resume_refuses_a_looser_sandbox() {
    let agent = "prompt: Go\nsandbox: { network: none }\ntools:\n  - builtin: ask_user\n  - builtin: shell\n    allow: [ls]\n    sandbox: { fs: { read: [docs] } }\n";
    let ran = Test::new()
        .agent(agent)
        .reply(Reply::tool_call("ask_user", json!({"question": "Go on?"})))
        .status(4)
        .any_stderr()
        .run();
    let looser = ran
        .read("agent.yaml")
        .replace("network: none", "network: loopback")
        .replace("read: [docs]", "read: [docs, /]");
    std::fs::write(ran.path("agent.yaml"), looser).unwrap();
    ran.then()
        .command([
            "resume",
            &ran.session(),
            "--answer",
            "yes",
            "--run-dir",
            "run2",
        ])
        .status(2)
        .stderr_contains("widens the sandbox network of the agent's programs from none to loopback")
        .stderr_contains("lets `shell` read `/`")
        .run();
    assert_eq!(ran.requests().len(), 1, "no model call after the refusal");
}

#[test]
fn a_required_sandbox_of_an_mcp_server_fails_at_start_where_the_kernel_has_none() {
    let ran = Test::new()
        .agent("prompt: Go\ntools:\n  - mcp:\n      command: /usr/bin/python3\n      args: [reader.py]\n      sandbox: { required: true }\n")
        .file("reader.py", READER)
        .env("RUNNER_SANDBOX_PRETEND_NO_LANDLOCK", "1")
        .status(2)
        .stderr_contains("`required: true`")
        .run();
    assert!(ran.requests().is_empty(), "the run started");
}

/// Not root, `runner` makes a user namespace for the network namespace (mapping its own
/// user): the same confinement holds. Run as `nobody` through `setpriv`, when the tests
/// run as root and it is there.
#[test]
fn a_user_other_than_root_gets_the_same_sandbox() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: a plain getter.
    let root = unsafe { libc::geteuid() } == 0;
    if !landlock() || !root || !Path::new("/usr/bin/setpriv").exists() {
        eprintln!("skipped: needs Landlock, root and /usr/bin/setpriv to run as nobody");
        return;
    }
    let dir = tempdir("sandbox-nobody");
    let (workspace, outside) = (dir.join("ws"), dir.join("outside"));
    std::fs::create_dir_all(workspace.join("src")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let python = "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); socket.create_connection(s.getsockname()); print('own loopback')";
    let calls = [
        "touch src/inside".to_string(),
        format!("touch {}/escaped", outside.display()),
        shell_words::join(["/usr/bin/python3", "-c", python]),
    ];
    let script: Vec<Value> = calls
        .iter()
        .map(
            |command| json!({"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}),
        )
        .chain([json!({"text": "done"})])
        .collect();
    let agent = json!({
        "name": "nobody",
        "model": {"provider": "scripted", "script": script},
        "prompt": "Go",
        "sandbox": {"network": "loopback"},
        "tools": [{"builtin": "shell", "allow": ["touch", "/usr/bin/python3"]}],
    });
    std::fs::write(workspace.join("agent.yaml"), agent.to_string()).unwrap();
    for path in [&dir, &workspace, &workspace.join("src"), &outside] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let output = std::process::Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_runner"))
        .args(["exec", "agent.yaml", "--run-dir", "run"])
        .current_dir(&workspace)
        .env("HOME", &dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let events = std::fs::read_to_string(workspace.join("run/events.jsonl")).unwrap();
    let results: Vec<Value> = events
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["type"] == "agent.tool.execution.completed")
        .map(|event| event["data"]["result"].clone())
        .collect();
    assert_eq!(results[0]["success"], true, "{}", results[0]);
    assert!(workspace.join("src/inside").exists());
    assert_eq!(results[1]["success"], false, "{}", results[1]);
    assert!(!outside.join("escaped").exists());
    assert_eq!(
        results[2]["data"]["stdout"], "own loopback\n",
        "{}",
        results[2]
    );
}

/// A case's `setup:` runs under the agent's sandbox: writing outside the workspace fails
/// the case, naming it, while a set-up that stays in the workspace passes.
#[test]
fn a_test_set_up_runs_under_the_agents_sandbox() {
    if !landlock() {
        return;
    }
    let outside = tempdir("sandbox-setup-outside");
    let escaped = outside.join("escaped");
    let file = format!(
        r#"agent: agent.yaml
cases:
  - name: writes-outside
    setup: touch {escaped} && echo inside > inside.txt
    script:
      - text: done
  - name: stays-inside
    setup: echo inside > inside.txt
    script:
      - text: done
    expect:
      - file_exists: inside.txt
"#,
        escaped = escaped.display()
    );
    let ran = Test::new()
        .agent("prompt: Go.\nsandbox: {}\ntools:\n  - builtin: shell\n    allow: [touch]\n")
        .file("agent.test.yaml", &file)
        .command(["test", "-j", "1"])
        .status(1)
        .any_stderr()
        .stdout_contains("1 passed, 1 failed, 0 skipped")
        .stdout_contains("case `writes-outside`: setup failed under the agent's sandbox")
        .run();
    assert!(!exists(&escaped), "the set-up wrote outside the workspace");
    assert!(ran.stdout.contains("Permission denied"), "{}", ran.stdout);
}

/// A `host:port` rule's host is resolved when the sandbox is built: one that does not
/// resolve, or names no single destination (`0.0.0.0`), is refused at start, before any
/// model call, saying which rule and why.
#[test]
fn a_host_port_rule_whose_host_does_not_resolve_is_refused_at_start() {
    for (rule, says) in [
        ("no-such-host.invalid:443", "does not resolve to an address"),
        ("0.0.0.0:443", "resolves only to 0.0.0.0"),
    ] {
        let agent = format!(
            "prompt: Go\ntools:\n  - builtin: shell\n    allow: [touch]\n    sandbox: {{ network: [\"{rule}\"] }}\n"
        );
        let ran = Test::new().agent(&agent).status(2).any_stderr().run();
        assert!(
            ran.stderr.contains(&format!("`{rule}` {says}")),
            "{}",
            ran.stderr
        );
        assert!(ran.requests().is_empty(), "the run started");
    }
}

/// The program's reaper runs outside its sandbox, so the program cannot kill it (Landlock's
/// signal scoping, ABI 6) and leave what it started behind.
#[test]
fn a_sandboxed_program_cannot_kill_its_reaper() {
    if !landlock() {
        return;
    }
    if runner::sandbox::abi::kernel_abi().is_ok_and(|abi| abi < 6) {
        eprintln!("skipped: signal scoping needs Landlock ABI 6");
        return;
    }
    let script = r#"
import os, signal
try:
    os.kill(os.getppid(), signal.SIGKILL)
    print("killed")
except PermissionError:
    print("refused")
"#;
    let result = python("{}", script);
    assert_eq!(result["data"]["stdout"], "refused\n", "{result}");
}
