//! Hostile agent files stay bounded and nothing panics (issue #16): YAML and template bombs
//! end in a located error and exit 2 under an address-space limit, a panic inside the
//! template engine is a template error, and a closed stdout does not change the exit code.
//! Every file the loader reads is a regular file read within bounds, messages quote no
//! other file, and a hostile model server's endless answer fails its call with memory
//! flat (issue #35).

mod support;

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use runner::testing::mock_server::{MockResponse, MockServer, Reply};
use support::{KEY, KEY_ENV, Test, tempdir};

/// The address space a bomb may use: far more than a real agent file needs, far less than
/// the bombs took before they were bounded.
const MEMORY_LIMIT: u64 = 1024 * 1024 * 1024;

/// How long a bomb may take before the test calls it a hang.
const TIME_LIMIT: Duration = Duration::from_secs(60);

/// What a bounded invocation ended with.
struct Ended {
    code: Option<i32>,
    /// stdout (where `validate` prints diagnostics), then stderr.
    output: String,
}

/// Runs `runner args..` in `dir` with `MEMORY_LIMIT` of address space, killing it after
/// `TIME_LIMIT`.
fn run_bounded(dir: &Path, args: &[&str]) -> Ended {
    let mut command = Command::new(env!("CARGO_BIN_EXE_runner"));
    command
        .args(args)
        .current_dir(dir)
        .env(KEY_ENV, KEY)
        .env("NO_COLOR", "1")
        // One malloc arena per thread would reserve address space the limit is not about.
        .env("MALLOC_ARENA_MAX", "2")
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let limit = libc::rlimit {
        rlim_cur: MEMORY_LIMIT,
        rlim_max: MEMORY_LIMIT,
    };
    // SAFETY: setrlimit is async-signal-safe; the closure allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_AS, &limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let mut child = command.spawn().expect("the runner binary starts");
    let stdout = read_all(child.stdout.take().unwrap());
    let stderr = read_all(child.stderr.take().unwrap());
    let deadline = Instant::now() + TIME_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("runner {args:?} still running after {TIME_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ended {
        code: status.code(),
        output: stdout.join().unwrap() + &stderr.join().unwrap(),
    }
}

/// Reads `pipe` to its end on a thread of its own.
fn read_all(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

/// A workspace holding `agent.yaml` with `text`.
fn workspace(text: &str) -> PathBuf {
    let dir = tempdir("bombs");
    std::fs::write(dir.join("agent.yaml"), text).unwrap();
    dir
}

/// `text` must have ended in exit 2 with one of its lines starting with `located`.
fn assert_refused(ended: &Ended, located: &str, message: &str) {
    assert_eq!(
        ended.code,
        Some(2),
        "exit code (None: killed by a signal)\n{}",
        ended.output
    );
    assert!(
        ended
            .output
            .lines()
            .any(|line| line.starts_with(located) && line.contains(message)),
        "no line starting {located:?} and containing {message:?}:\n{}",
        ended.output
    );
}

/// An agent whose model is a closed port: these runs must stop before any model call.
fn exec_agent(prompt: &str) -> String {
    format!(
        "name: bomb\nmodel: {{ provider: openai, name: m, base_url: \"http://127.0.0.1:9/v1\", \
         api_key_env: {KEY_ENV}, retry: {{ max_attempts: 1 }} }}\nprompt: '{prompt}'\n"
    )
}

#[test]
fn an_alias_repeating_a_large_string_is_refused_where_it_crosses_the_bound() {
    let mut text = format!("name: bomb\nbig: &big \"{}\"\n", "x".repeat(1024 * 1024));
    text.push_str("copies: [");
    text.push_str(&vec!["*big"; 50_000].join(", "));
    text.push_str("]\n");
    let dir = workspace(&text);
    let ended = run_bounded(&dir, &["validate", "agent.yaml"]);
    assert_refused(
        &ended,
        "agent.yaml:3:",
        "error[yaml]: the document expands to more than 32 MiB",
    );
}

#[test]
fn deep_nesting_is_refused_at_the_level_past_the_bound() {
    let text = format!("{}x\n", "- ".repeat(100_000));
    let dir = workspace(&text);
    let ended = run_bounded(&dir, &["validate", "agent.yaml"]);
    assert_refused(
        &ended,
        "agent.yaml:1:257:",
        "error[yaml]: the document nests deeper than 128",
    );
}

#[test]
fn a_file_past_the_size_bound_is_refused() {
    let line = format!("# {}\n", "x".repeat(1021));
    let text = format!("name: big\n{}", line.repeat(9 * 1024));
    let dir = workspace(&text);
    let ended = run_bounded(&dir, &["validate", "agent.yaml"]);
    // 8 MiB is crossed in the 8192nd comment line, after the 10 bytes of `name: big`.
    assert_refused(
        &ended,
        "agent.yaml:8193:1015:",
        "error[yaml]: the file is larger than 8 MiB",
    );
}

#[test]
fn nested_loops_run_out_of_fuel_at_render() {
    let loops = "{% for i in range(10000) %}{% for j in range(10000) %}\
                 {% for k in range(10000) %}{% endfor %}{% endfor %}{% endfor %}";
    let dir = workspace(&exec_agent(loops));
    let ended = run_bounded(&dir, &["exec", "agent.yaml", "--run-dir", "run"]);
    assert_refused(&ended, "agent.yaml:3:", "error[template]");
    assert!(ended.output.contains("instructions"), "{}", ended.output);
}

#[test]
fn a_template_rendering_too_much_text_is_refused_at_render() {
    let big = r#"{% for i in range(100000) %}{{ "x" * 10000 }}{% endfor %}"#;
    let dir = workspace(&exec_agent(big));
    let ended = run_bounded(&dir, &["exec", "agent.yaml", "--run-dir", "run"]);
    assert_refused(&ended, "agent.yaml:3:", "error[template]");
    assert!(ended.output.contains("4 MiB"), "{}", ended.output);
}

#[test]
fn divisibleby_zero_is_a_template_error_not_a_crash() {
    let dir = workspace(&exec_agent("{{ 4 is divisibleby(0) }}"));
    let ended = run_bounded(&dir, &["exec", "agent.yaml", "--run-dir", "run"]);
    assert_refused(&ended, "agent.yaml:3:", "error[template]");
    assert!(ended.output.contains("divide by zero"), "{}", ended.output);
}

#[test]
fn a_panic_inside_the_template_engine_is_a_template_error() {
    // `false` counts as 0 for minijinja's own `divisibleby`, which then divides by it.
    let dir = workspace(&exec_agent("{{ 4 is divisibleby(false) }}"));
    let ended = run_bounded(&dir, &["exec", "agent.yaml", "--run-dir", "run"]);
    assert_refused(&ended, "agent.yaml:3:", "error[template]");
    assert!(
        ended.output.contains("the template engine failed"),
        "{}",
        ended.output
    );
    assert!(!ended.output.contains("panicked"), "{}", ended.output);
}

#[test]
fn a_closed_stdout_keeps_the_runs_exit_code() {
    let mock = MockServer::start();
    mock.push(MockResponse::reply(Reply::text("Done.")));
    let dir = tempdir("bombs");
    let agent = format!(
        "name: quiet\nmodel: {{ provider: openai, name: mock-model, base_url: \"{}\", \
         api_key_env: {KEY_ENV}, retry: {{ max_attempts: 1 }} }}\nprompt: Go\n",
        mock.openai_base_url()
    );
    std::fs::write(dir.join("agent.yaml"), agent).unwrap();
    let output = with_stdout_closed(
        &dir,
        &["exec", "agent.yaml", "--run-dir", "run", "--output", "json"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn validate_into_a_closed_stdout_keeps_its_exit_code() {
    // Printing diagnostics to a closed stdout used to panic (exit 101).
    let dir = workspace("name: broken\nunknown_key: 1\n");
    let output = with_stdout_closed(&dir, &["validate", "--format", "json", "agent.yaml"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Runs `runner ARGS` in `dir` with the reader of its stdout gone before it prints, as
/// `| head -c 0` would do.
fn with_stdout_closed(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(args)
        .current_dir(dir)
        .env(KEY_ENV, KEY)
        .env("NO_COLOR", "1")
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the runner binary starts");
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn a_stop_when_the_engine_cannot_evaluate_fails_the_run_cleanly() {
    let dir = workspace(
        "name: s\nmodel: { provider: scripted, name: s, script: [{ tool_calls: [{ name: list_dir, arguments: {} }] }, { text: done }] }\nprompt: Go\ntools:\n  - builtin: list_dir\nstop_when: \"step is divisibleby(0)\"\n",
    );
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["exec", "agent.yaml", "--run-dir", "run"])
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("the runner binary starts");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("stop_when"), "{stderr}");
}

// ---- Every file the loader reads is a regular file, read within a bound (issue #35) ----

/// Makes `path` a FIFO: opening it for reading waits for a writer that never comes.
fn fifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path and a mode.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// A definition whose referenced files are streams (`/dev/stdout` through a symlink, a
/// FIFO as an include and as a sub-agent, `/dev/stdin`) is refused at once, each file
/// named, instead of hanging the CI job that validates it.
#[test]
fn validate_refuses_files_that_are_not_regular_instead_of_waiting_on_them() {
    let test = Test::new().agent(
        "prompt: \"{% include 'persona.txt' %}\"\ntools:\n  - mcp: { config: mcp.json }\n  - mcp: { config: /dev/stdin }\n  - name: helper\n    description: Helps.\n    parameters: { type: object }\n    agent: ./helper.yaml\n",
    );
    std::os::unix::fs::symlink("/dev/stdout", test.path("mcp.json")).unwrap();
    fifo(&test.path("persona.txt"));
    fifo(&test.path("helper.yaml"));
    test.command(["validate", "agent.yaml"])
        .time_limit(Duration::from_secs(60))
        .status(2)
        .stdout_contains("cannot read MCP config file `mcp.json`: it is a pipe (FIFO), not a regular file")
        .stdout_contains("cannot read MCP config file `/dev/stdin`: it is a character device, not a regular file")
        .stdout_contains("included file `persona.txt` cannot be read: it is a pipe (FIFO), not a regular file")
        .stdout_contains("error[missing-file]: agent file `./helper.yaml` is not a regular file")
        .stderr("4 error(s), 0 warning(s)\n")
        .run();
}

/// A reference can name any file (`agent: /etc/passwd`, `agent: .env`): one that is not an
/// agent file is reported without quoting what it holds, and every message passes the
/// redactor, so a token in a definition file is not printed either.
#[test]
fn validation_messages_quote_neither_other_files_nor_secrets() {
    let key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
    let token = format!("ghp_{}", "a1B2".repeat(9));
    let sub_agent = |name: &str, file: &str| {
        format!(
            "  - name: {name}\n    description: d\n    parameters: {{ type: object }}\n    agent: {file}\n"
        )
    };
    let ran = Test::new()
        .agent(&format!(
            "prompt: Go\ntools:\n{}{}{}",
            sub_agent("env", ".env"),
            sub_agent("users", "/etc/passwd"),
            sub_agent("other", "other.yaml")
        ))
        .file(".env", &format!("OPENAI_API_KEY={key}\n"))
        .file("other.yaml", &format!("name: other\nmodel: \"{token}\"\n"))
        .command(["validate", "agent.yaml"])
        .status(2)
        .stdout_contains(".env:1:1: error[type]: this is not an agent file: its top level is text, not a mapping")
        .stdout_contains("/etc/passwd:1:1: error[type]: this is not an agent file")
        .stdout_contains("other.yaml:2:8: error[model]: `[REDACTED]` is not `provider/name`")
        .stderr("3 error(s), 0 warning(s)\n")
        .run();
    for secret in ["OPENAI_API_KEY", key, "root:", &token] {
        assert!(
            !ran.stdout.contains(secret),
            "{secret} shown:\n{}",
            ran.stdout
        );
    }
}

// ---- A hostile model server: every answer is bounded (issue #35) ----

/// A model server on loopback that answers one request with `content_type`, then `prefix`
/// and `size` bytes of `a` (no newline), and closes. Written as the test goes, never held.
fn hostile_model_server(content_type: &'static str, prefix: &'static str, size: usize) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let Ok((stream, _)) = listener.accept() else {
            return;
        };
        stream.set_read_timeout(Some(TIME_LIMIT)).unwrap();
        let mut reader = BufReader::new(stream);
        let mut length = 0;
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
            let lower = line.to_ascii_lowercase();
            if let Some(value) = lower.strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
            line.clear();
        }
        let mut body = vec![0; length];
        let _ = reader.read_exact(&mut body);
        let mut stream = reader.into_inner();
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n{prefix}"
        );
        let chunk = vec![b'a'; 1024 * 1024];
        let _ = stream.write_all(head.as_bytes());
        for _ in 0..size / chunk.len() {
            if stream.write_all(&chunk).is_err() {
                return; // the runner gave up, as it should
            }
        }
    });
    url
}

/// An agent on `url` whose answers are bounded by `bound` (e.g. `max_line_bytes: 1048576`).
fn bounded_model_agent(url: &str, bound: &str) -> String {
    format!(
        "name: t\nmodel:\n  provider: openai\n  name: m\n  base_url: \"{url}\"\n  api_key_env: {KEY_ENV}\n  {bound}\n  retry: {{ max_attempts: 1 }}\nprompt: Go\n"
    )
}

/// The most memory a run against a hostile server may take: what a run takes, far less
/// than the 256 MiB the server sends.
const FLAT_MEMORY_KIB: u64 = 128 * 1024;

/// One event-stream line that never ends fails the call once it crosses `max_line_bytes`,
/// and the runner never holds it.
#[test]
fn an_endless_event_stream_line_fails_the_call_and_memory_stays_flat() {
    let url = hostile_model_server("text/event-stream", "data: ", 256 * 1024 * 1024);
    let ran = Test::new()
        .agent(&bounded_model_agent(&url, "max_line_bytes: 1048576"))
        .time_limit(TIME_LIMIT)
        .status(1)
        .stderr_contains("a line of the event stream is longer than 1 MiB (model.max_line_bytes)")
        .run();
    let peak = ran.peak_memory_kib.unwrap();
    assert!(peak < FLAT_MEMORY_KIB, "peak memory {peak} KiB");
}

/// A whole (JSON) answer that never ends fails the call once it crosses
/// `max_response_bytes`, and the runner never holds it.
#[test]
fn an_endless_answer_fails_the_call_and_memory_stays_flat() {
    let url = hostile_model_server("application/json", "{\"x\": \"", 256 * 1024 * 1024);
    let ran = Test::new()
        .agent(&bounded_model_agent(&url, "max_response_bytes: 1048576"))
        .time_limit(TIME_LIMIT)
        .status(1)
        .stderr_contains("the answer is larger than 1 MiB (model.max_response_bytes)")
        .run();
    let peak = ran.peak_memory_kib.unwrap();
    assert!(peak < FLAT_MEMORY_KIB, "peak memory {peak} KiB");
}
