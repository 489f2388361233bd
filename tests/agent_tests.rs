//! `runner test`, through the binary: test files beside an agent, every assertion kind
//! passing and failing, cassettes recorded then replayed (a judge's exchange too), a miss,
//! `--update`, `--repeat` with a model whose answers alternate, parallel cases that share
//! nothing, timeouts, reports (JSON, JUnit checked against `tests/fixtures/junit.xsd`,
//! GitHub annotations), invalid test files, and this repository's own tests.

mod support;

use runner::testing::mock_server::Reply;
use serde_json::{Value, json};
use support::{KEY, Ran, Run, Test, root, tempdir};

/// An agent with file tools and a structured answer. Its `model:` is the mock server; the
/// script cases never reach it.
const AGENT: &str = "prompt: Do the task.
tools:
  - builtin: read_file
  - builtin: write_file
limits:
  max_llm_calls: 3
output:
  schema:
    type: object
    required: [verdict]
    properties:
      verdict: { type: string }
      score: { type: number }
";

/// A script that reads notes.txt, writes out.txt, and answers `{"verdict": "ok", ...}`.
const SCRIPT: &str = r#"    files: { notes.txt: "Buy milk." }
    script:
      - tool_calls: [{ name: read_file, arguments: { path: notes.txt } }]
      - tool_calls: [{ name: write_file, arguments: { path: out.txt, content: "all done" } }]
      - text: '{"verdict": "ok", "score": 3}'
"#;

/// `runner test --format json` over the workspace's `agent.test.yaml`, any exit code.
fn json_report(test: Test) -> (Ran, Value) {
    let ran = test
        .command(["test", "agent.test.yaml", "--format", "json"])
        .status_any()
        .any_stderr()
        .run();
    let report = ran.json();
    (ran, report)
}

/// The case of the report named `name`.
fn case<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|case| case["name"] == name)
        .unwrap_or_else(|| panic!("no case {name} in {report:#}"))
}

/// The 1-based line of the first line of `text` that contains `needle`.
fn line_of(text: &str, needle: &str) -> u64 {
    text.lines()
        .position(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?}")) as u64
        + 1
}

#[test]
fn every_assertion_kind_passes() {
    let file = format!(
        "agent: agent.yaml
cases:
  - name: passes
{SCRIPT}    expect:
      - status: completed
      - exit_code: 0
      - output: '{{\"verdict\": \"ok\", \"score\": 3}}'
      - output_contains: verdict
      - output_matches: '\"score\": \\d'
      - structured: {{ pointer: /verdict, equals: ok }}
      - structured: {{ pointer: /verdict, contains: o }}
      - structured: {{ pointer: /verdict, matches: ^ok$ }}
      - structured_schema: {{ type: object, required: [score] }}
      - tool_called: read_file
      - tool_called: {{ name: write_file, args: {{ path: ^out, content: done }}, times: 1 }}
      - tool_called: {{ name: read_file, min_times: 1, max_times: 2 }}
      - tool_not_called: shell
      - tool_calls: {{ in_order: [read_file, write_file] }}
      - tool_calls: {{ exactly: [read_file, write_file] }}
      - tool_calls: {{ set: [write_file, read_file] }}
      - file_exists: out.txt
      - file_absent: nope.txt
      - file_contains: {{ path: out.txt, text: all done }}
      - file_contains: {{ path: notes.txt, matches: ^Buy }}
      - max_steps: 3
      - max_llm_calls: 3
      - max_tool_calls: 2
      - max_tokens: 0
      - no_tool_errors: true
  - name: limit
    script:
      - tool_calls: [{{ name: read_file, arguments: {{ path: a }} }}]
      - tool_calls: [{{ name: read_file, arguments: {{ path: b }} }}]
      - tool_calls: [{{ name: read_file, arguments: {{ path: c }} }}]
      - tool_calls: [{{ name: read_file, arguments: {{ path: d }} }}]
    expect:
      - status: limit_reached
      - exit_code: 3
      - limit: max_llm_calls
"
    );
    let (ran, report) = json_report(Test::new().agent(AGENT).file("agent.test.yaml", &file));
    assert_eq!(ran.code, 0, "{report:#}\n{}", ran.stderr);
    assert_eq!(report["passed"], 2);
    assert_eq!(report["failed"], 0);
    assert!(
        ran.stderr
            .contains("test result: ok. 2 passed, 0 failed, 0 skipped"),
        "{}",
        ran.stderr
    );
}

#[test]
fn every_assertion_kind_fails_at_its_own_line() {
    // Each assertion is wrong about the run, and says so at its line.
    let expectations: &[(&str, &str)] = &[
        ("status: failed", "expected status failed, got completed"),
        ("exit_code: 1", "expected exit code 1, got 0"),
        (
            "limit: timeout",
            "expected the limit `timeout` to end the run",
        ),
        ("output: nope", "expected the output \"nope\""),
        (
            "output_contains: nope",
            "expected the output to contain \"nope\"",
        ),
        (
            "output_matches: ^nope",
            "expected the output to match /^nope/",
        ),
        (
            "structured: { pointer: /verdict, equals: bad }",
            "expected `/verdict` to be \"bad\", got \"ok\"",
        ),
        (
            "structured: { pointer: /verdict, contains: zz }",
            "expected `/verdict` to contain \"zz\"",
        ),
        (
            "structured: { pointer: /verdict, matches: ^z }",
            "expected `/verdict` to match /^z/",
        ),
        (
            "structured: { pointer: /missing, equals: 1 }",
            "the structured answer has nothing at `/missing`",
        ),
        (
            "structured_schema: { type: object, required: [reason] }",
            "does not match the schema",
        ),
        (
            "tool_called: shell",
            "expected at least 1 call(s) of `shell`, got 0",
        ),
        (
            "tool_called: { name: read_file, args: { path: ^other } }",
            "of `read_file` with path=/^other/, got 0",
        ),
        (
            "tool_called: { name: read_file, times: 2 }",
            "expected 2 call(s) of `read_file`, got 1",
        ),
        (
            "tool_not_called: read_file",
            "expected no call of `read_file`, got 1",
        ),
        (
            "tool_calls: { in_order: [write_file, read_file] }",
            "expected the calls [write_file, read_file] in this order",
        ),
        (
            "tool_calls: { exactly: [read_file] }",
            "expected exactly the calls [read_file], got [read_file, write_file]",
        ),
        (
            "tool_calls: { set: [read_file] }",
            "expected calls of exactly the tools [read_file]",
        ),
        (
            "sub_agent_called: helper",
            "expected a call of the sub-agent `helper`; there was none",
        ),
        (
            "file_exists: nope.txt",
            "expected the file nope.txt in the workspace",
        ),
        (
            "file_absent: out.txt",
            "expected no file out.txt in the workspace",
        ),
        (
            "file_contains: { path: out.txt, text: nope }",
            "expected out.txt to contain \"nope\"",
        ),
        (
            "file_contains: { path: out.txt, matches: ^nope }",
            "expected out.txt to match /^nope/",
        ),
        ("max_steps: 1", "expected at most 1 step, got 3"),
        ("max_llm_calls: 1", "expected at most 1 model call, got 3"),
        ("max_tool_calls: 1", "expected at most 1 tool call, got 2"),
        ("max_tokens: 0", ""),
        (
            "max_cost_usd: 0.01",
            "the run has no cost: its model has no `pricing`",
        ),
    ];
    let mut file = format!("agent: agent.yaml\ncases:\n  - name: fails\n{SCRIPT}    expect:\n");
    for (assertion, _) in expectations {
        file.push_str(&format!("      - {assertion}\n"));
    }
    let (ran, report) = json_report(Test::new().agent(AGENT).file("agent.test.yaml", &file));
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    let failures = case(&report, "fails")["failures"].as_array().unwrap();
    for (assertion, message) in expectations.iter().filter(|(_, m)| !m.is_empty()) {
        let line = line_of(&file, &format!("- {assertion}"));
        let failure = failures
            .iter()
            .find(|f| f["line"] == line)
            .unwrap_or_else(|| panic!("`{assertion}` (line {line}) did not fail: {failures:#?}"));
        let text = failure["message"].as_str().unwrap();
        assert!(text.contains(message), "`{assertion}`: {text}");
        assert_eq!(failure["column"], 9, "{failure}");
        assert_eq!(failure["file"], "agent.test.yaml");
    }
    // `max_tokens: 0` holds (a script reports no tokens): every other assertion failed.
    assert_eq!(failures.len(), expectations.len() - 1, "{failures:#?}");
}

#[test]
fn tool_errors_sub_agents_and_cost_pass_and_fail_against_a_live_model() {
    // The mock server is the live model, with prices: a sub-agent call and a failed tool
    // call, then the answer.
    let agent = "name: test-agent
model: { provider: openai, name: mock-model, base_url: \"$OPENAI_URL\", api_key_env: RUNNER_TEST_KEY, retry: { max_attempts: 1 }, pricing: { input_per_mtok: 1000, output_per_mtok: 1000 } }
prompt: Do the task.
tools:
  - builtin: read_file
  - name: helper
    description: Answers a question.
    parameters: { type: object, properties: { q: { type: string } }, required: [q] }
    prompt: '{{ q }}'
    agent: { name: helper }
";
    let file = "agent: agent.yaml
cases:
  - name: live
    live: true
    expect:
      - sub_agent_called: helper
      - sub_agent_called: { name: helper, times: 1 }
      - max_cost_usd: 1
      - no_tool_errors: true
      - sub_agent_called: { name: helper, times: 2 }
      - max_cost_usd: 0.0001
";
    let ran = Test::new()
        .agent(agent)
        .file("agent.test.yaml", file)
        .reply(
            Reply::tool_call("helper", json!({"q": "why?"}))
                .with_tool_call("read_file", json!({"path": "missing.txt"})),
        )
        .reply(Reply::text("Because.").with_usage(100, 10))
        .reply(Reply::text("Done.").with_usage(100, 10))
        .command(["test", "--live", "--format", "json"])
        .status(1)
        .any_stderr()
        .run();
    let report = ran.json();
    let failures = case(&report, "live")["failures"].as_array().unwrap();
    let lines: Vec<u64> = failures
        .iter()
        .map(|f| f["line"].as_u64().unwrap())
        .collect();
    // The first three hold; the last three fail.
    assert_eq!(lines, [9, 10, 11], "{failures:#?}");
    let messages: Vec<&str> = failures
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert!(
        messages[0].contains("expected no tool errors, got 1: read_file"),
        "{messages:?}"
    );
    assert!(messages[1].contains("expected 2 call(s) of the sub-agent `helper`, got 1"));
    assert!(
        messages[2].contains("expected a cost of at most $0.0001, got $0.235000"),
        "{messages:?}"
    );
}

/// A test file with a case replaying `cassettes/agent.jsonl`, graded by a judge on the
/// mock model.
fn recorded_file(input: &str) -> String {
    format!(
        "judge_model: $MODEL
agent: agent.yaml
cases:
  - name: greets
    input: {input}
    cassette: cassettes/agent.jsonl
    expect:
      - tool_called: read_file
      - judge: {{ rubric: The answer greets the user by name. }}
"
    )
}

/// An agent on the mock model, and [`recorded_file`].
fn recorded_case(input: &str) -> Test {
    Test::new()
        .agent("tools:\n  - builtin: read_file\n")
        .file("agent.test.yaml", &recorded_file(input))
        .file("notes.txt", "Ada")
}

#[test]
fn record_then_replay_with_a_judge_and_no_network() {
    let recorded = recorded_case("Greet the user in notes.txt.")
        .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
        .reply(Reply::text("Hello, Ada!"))
        // The judge's call, after the run's.
        .reply(Reply::text(r#"{"pass": true, "reason": "It greets Ada."}"#))
        .command(["test", "--record"])
        .stdout_contains("test agent.test.yaml::greets ... ok")
        .any_stderr()
        .run();
    assert_eq!(recorded.requests().len(), 3);
    let judged = &recorded.requests()[2].body;
    assert!(
        judged.to_string().contains("greets the user by name"),
        "{judged}"
    );
    let cassette = recorded.read("cassettes/agent.jsonl");
    assert_eq!(cassette.lines().count(), 3, "{cassette}");
    assert!(cassette.lines().last().unwrap().contains("It greets Ada."));
    assert!(!cassette.contains(KEY), "the key is in the cassette");

    // Replayed: the mock model is asked nothing more, and no key is needed.
    let replayed = recorded
        .then()
        .env_remove("RUNNER_TEST_KEY")
        .command(["test"])
        .stdout_contains("test agent.test.yaml::greets ... ok")
        .stdout_contains("1 passed, 0 failed, 0 skipped")
        .run();
    assert_eq!(replayed.requests().len(), 3);
}

/// `runner test --record` with a local server's dummy key (`x`): the cassette's field
/// names keep their `x`s, and the replay passes.
#[test]
fn a_dummy_key_recorded_by_runner_test_replays() {
    let recorded = recorded_case("Greet the user in notes.txt.")
        .env("RUNNER_TEST_KEY", "x")
        .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
        .reply(Reply::text("Hello, Ada!"))
        .reply(Reply::text(r#"{"pass": true, "reason": "It greets Ada."}"#))
        .command(["test", "--record"])
        .stdout_contains("test agent.test.yaml::greets ... ok")
        .stderr_contains("shorter than 8 characters")
        .run();
    let cassette = recorded.read("cassettes/agent.jsonl");
    assert!(!cassette.contains("[REDACTED]"), "{cassette}");
    recorded
        .then()
        .env_remove("RUNNER_TEST_KEY")
        .command(["test"])
        .stdout_contains("1 passed, 0 failed, 0 skipped")
        .run();
}

#[test]
fn a_failing_judge_fails_its_assertion_with_the_reason() {
    let file = "agent: agent.yaml
cases:
  - name: judged
    script: [{ text: 'Go away.' }]
    expect:
      - judge:
          rubric: The answer is polite.
          model: { provider: scripted, name: judge, script: [{ text: '{\"pass\": false, \"reason\": \"It is rude.\"}' }] }
";
    Test::new()
        .agent("prompt: Go.\n")
        .file("agent.test.yaml", file)
        .command(["test"])
        .status(1)
        .stdout_contains("agent.test.yaml:6:9: the judge failed the answer: It is rude.")
        .run();
}

#[test]
fn a_replay_miss_is_the_failure_message_and_update_records_it_again() {
    let recorded = recorded_case("Greet the user in notes.txt.")
        .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
        .reply(Reply::text("Hello, Ada!"))
        .reply(Reply::text(r#"{"pass": true, "reason": "ok"}"#))
        .command(["test", "--record"])
        .any_stderr()
        .run();

    // Another input: the first request is not in the cassette.
    let missed = recorded
        .then()
        .file(
            "agent.test.yaml",
            &recorded_file("Greet the user in notes.txt, please."),
        )
        .command(["test"])
        .status(1)
        .stdout_contains("test agent.test.yaml::greets ... FAILED")
        .stdout_contains("agent.test.yaml:4:5: the run ended failed: error[provider_replay_miss]")
        .stdout_contains("closest recorded request is exchange 1 (line 1)")
        .stdout_contains("now \"Greet the user in notes.txt, please.\"")
        .stdout_contains("0 passed, 1 failed, 0 skipped")
        .run();
    // The failed run's directory is kept and named.
    let run_dir = missed
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("run directory: "))
        .expect("the report names the run directory");
    for kept in ["transcript.txt", "events.jsonl", "result.json"] {
        assert!(
            std::path::Path::new(run_dir).join(kept).is_file(),
            "{kept} in {run_dir}"
        );
    }
    std::fs::remove_dir_all(std::path::Path::new(run_dir).parent().unwrap()).unwrap();

    // --update records the failing case again from the model, and it passes.
    let updated = missed
        .then()
        .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
        .reply(Reply::text("Hello again, Ada!"))
        .reply(Reply::text(r#"{"pass": true, "reason": "ok"}"#))
        .command(["test", "--update"])
        .stdout_contains("test agent.test.yaml::greets ... ok")
        .run();
    assert!(
        updated
            .read("cassettes/agent.jsonl")
            .contains("Hello again, Ada!")
    );
    missed
        .then()
        .command(["test"])
        .stdout_contains("1 passed, 0 failed")
        .run();
}

#[test]
fn a_missing_cassette_says_how_to_record_it() {
    Test::new()
        .agent("prompt: Go.\n")
        .file(
            "agent.test.yaml",
            "agent: agent.yaml\ncases:\n  - name: c\n    cassette: none.jsonl\n",
        )
        .command(["test"])
        .status(1)
        .stdout_contains("agent.test.yaml:3:5: no cassette at ")
        .stdout_contains("record it with `runner test --record`")
        .run();
}

#[test]
fn repeat_counts_the_runs_that_pass_against_min_pass_rate() {
    // The live model answers yes, no, yes, no: half the runs pass.
    let file = |rate: &str| {
        format!(
            "agent: agent.yaml\ncases:\n  - name: flaky\n    live: true\n    min_pass_rate: {rate}\n    expect:\n      - output_contains: 'yes'\n"
        )
    };
    let alternating = |test: Test| {
        ["yes", "no", "yes", "no"]
            .into_iter()
            .fold(test, |test, answer| test.reply(Reply::text(answer)))
    };
    alternating(
        Test::new()
            .agent("prompt: Go.\n")
            .file("agent.test.yaml", &file("0.5")),
    )
    .command(["test", "--live", "--repeat", "4", "-j", "1"])
    .stdout_contains("test agent.test.yaml::flaky ... ok (2 of 4 runs passed)")
    .run();
    let ran = alternating(
        Test::new()
            .agent("prompt: Go.\n")
            .file("agent.test.yaml", &file("0.75")),
    )
    .command([
        "test", "--live", "--repeat", "4", "-j", "1", "--format", "json",
    ])
    .status(1)
    .any_stderr()
    .run();
    let flaky = case(&ran.json(), "flaky").clone();
    assert_eq!(flaky["runs"], 4);
    assert_eq!(flaky["passed_runs"], 2);
    assert_eq!(flaky["pass_rate"], 0.5);
    assert_eq!(
        flaky["failures"][0]["message"],
        "passed 2 of 4 runs (50 %), below its min_pass_rate of 75 %"
    );
    assert!(
        flaky["failures"][1]["message"]
            .as_str()
            .unwrap()
            .contains("expected the output to contain \"yes\", got \"no\"")
    );
}

#[test]
fn parallel_cases_share_nothing() {
    // Eight cases at once write the same file name; each sees only its own.
    let mut file = String::from("agent: agent.yaml\ncases:\n");
    for n in 0..8 {
        file.push_str(&format!(
            "  - name: case-{n}
    files: {{ mine.txt: 'case {n}' }}
    script:
      - tool_calls: [{{ name: write_file, arguments: {{ path: shared.txt, content: 'written by {n}' }} }}]
      - text: done
    expect:
      - file_contains: {{ path: shared.txt, text: 'written by {n}' }}
      - file_contains: {{ path: mine.txt, text: 'case {n}' }}
      - no_tool_errors: true
"
        ));
    }
    let ran = Test::new()
        .agent("prompt: Go.\ntools:\n  - builtin: write_file\n")
        .file("agent.test.yaml", &file)
        .command(["test", "-j", "8"])
        .stdout_contains("8 passed, 0 failed, 0 skipped")
        .run();
    // Nothing of the cases is left in the directory the tests ran from.
    let mut left: Vec<String> = std::fs::read_dir(&ran.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["agent.test.yaml", "agent.yaml"]);
}

/// A case's set-up script lies outside its workspace, but a tool's `root:` lets the run see
/// it: the run cannot rewrite it, so the next case's set-up runs the script as written.
#[test]
fn a_run_cannot_rewrite_the_set_up_script_the_next_case_runs() {
    let setup = "echo ready > ready.txt\n";
    let test = Test::new();
    let root = test.path("").canonicalize().unwrap();
    let file = r#"agent: agent.yaml
cases:
  - name: rewrites
    setup: sh "$RUNNER_TEST_DIR"/scripts/setup.sh
    script:
      - tool_calls: [{ name: write_file, arguments: { path: scripts/setup.sh, content: "touch \"$RUNNER_TEST_DIR\"/PWNED" } }]
      - text: done
    expect:
      - file_exists: ready.txt
  - name: next
    setup: sh "$RUNNER_TEST_DIR"/scripts/setup.sh
    script:
      - text: done
    expect:
      - file_exists: ready.txt
"#;
    let ran = test
        .agent(&format!(
            "prompt: Go.\ntools:\n  - builtin: write_file\n    root: {}\n",
            root.display()
        ))
        .file("scripts/setup.sh", setup)
        .file("agent.test.yaml", file)
        .command(["test", "-j", "1"])
        .stdout_contains("2 passed, 0 failed, 0 skipped")
        .run();
    assert_eq!(ran.read("scripts/setup.sh"), setup);
    assert!(
        !ran.path("PWNED").exists(),
        "the next set-up ran the model's code"
    );
}

#[test]
fn a_case_that_runs_too_long_is_stopped_at_its_timeout() {
    let file = "agent: agent.yaml
cases:
  - name: slow
    timeout: 1s
    script:
      - tool_calls: [{ name: shell, arguments: { command: sleep 30 } }]
      - text: done
";
    let started = std::time::Instant::now();
    Test::new()
        .agent("prompt: Go.\ntools:\n  - builtin: shell\n    allow: [sleep]\n")
        .file("agent.test.yaml", file)
        .command(["test"])
        .status(1)
        .stdout_contains(
            "agent.test.yaml:3:5: the run took longer than the case's timeout (1s) and was stopped",
        )
        .run();
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
}

#[test]
fn filter_skip_and_live_cases_count_in_the_summary() {
    let file = "agent: agent.yaml
cases:
  - name: one
    script: [{ text: hi }]
  - name: two
    script: [{ text: hi }]
  - name: later
    skip: not written yet
  - name: real-world
    live: true
";
    Test::new()
        .agent("prompt: Go.\n")
        .file("agent.test.yaml", file)
        .command(["test", "--filter", "o"])
        .stdout_contains("running 3 cases from 1 file")
        .stdout_contains("test agent.test.yaml::one ... ok")
        .stdout_contains("test agent.test.yaml::two ... ok")
        .stdout_contains(
            "test agent.test.yaml::real-world ... skipped (a live case: run it with --live)",
        )
        .stdout_contains("test result: ok. 2 passed, 0 failed, 1 skipped; 1 filtered out")
        .run();
}

/// A suite with a passing, a failing and a skipped case.
fn mixed() -> Test {
    let file = "agent: agent.yaml
cases:
  - name: passes
    script: [{ text: hi }]
  - name: fails
    script: [{ text: 'hi <there> & \"you\"' }]
    expect:
      - output_contains: bye
  - name: skipped
    skip: later
";
    Test::new()
        .agent("prompt: Go.\n")
        .file("agent.test.yaml", file)
}

#[test]
fn junit_output_matches_the_junit_schema() {
    let ran = mixed()
        .command(["test", "--format", "junit"])
        .status(1)
        .any_stderr()
        .run();
    let xml = &ran.stdout;
    assert!(xml.contains("<testsuite name=\"agent.test.yaml\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""), "{xml}");
    assert!(xml.contains("<testcase classname=\"agent.test.yaml\" name=\"fails\" file=\"agent.test.yaml\" line=\"8\""), "{xml}");
    assert!(xml.contains("agent.test.yaml:8:9: expected the output to contain &quot;bye&quot;, got &quot;hi &lt;there&gt; &amp; \\&quot;you\\&quot;&quot;"), "{xml}");
    assert!(xml.contains("<skipped message=\"later\"/>"), "{xml}");
    let available = std::process::Command::new("xmllint")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !available {
        eprintln!("skipped the XSD check: xmllint (Debian's libxml2-utils) is not installed");
        return;
    }
    let report = ran.path("report.xml");
    std::fs::write(&report, xml).unwrap();
    let checked = std::process::Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(root().join("tests/fixtures/junit.xsd"))
        .arg(&report)
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "{}\n{xml}",
        String::from_utf8_lossy(&checked.stderr)
    );
}

#[test]
fn github_annotations_point_at_the_failing_assertion() {
    let annotation = "::error file=agent.test.yaml,line=8,col=9,title=runner test%3A agent.test.yaml%3A%3Afails::expected the output to contain \"bye\"";
    mixed()
        .command(["test", "--format", "github"])
        .status(1)
        .stdout_contains(annotation)
        .run();
    // In GitHub Actions they come by themselves, on stderr when stdout holds a report.
    mixed()
        .env("GITHUB_ACTIONS", "true")
        .command(["test", "--format", "json"])
        .status(1)
        .stderr_contains(annotation)
        .run();
}

#[test]
fn an_invalid_test_file_is_exit_2_with_located_diagnostics_and_runs_nothing() {
    let file = "agent: agent.yaml
cases:
  - name: one
    scrpt: [{ text: hi }]
  - name: two
    script: [{ text: hi }]
    expect:
      - output_matches: '(['
      - judge: { rubric: Good. }
";
    Test::new()
        .agent("prompt: Go.\n")
        .file("agent.test.yaml", file)
        .command(["test"])
        .status(2)
        .stdout("")
        .stderr_contains("agent.test.yaml:4:5: error[unknown-key]: unknown key `scrpt` (at /cases/0/scrpt)\n  help: did you mean `script`?")
        .stderr_contains("no case was run")
        .run();
    let fixed = file.replace("scrpt", "script");
    Test::new()
        .agent("prompt: Go.\n")
        .file("agent.test.yaml", &fixed)
        .command(["test", "--format", "github"])
        .status(2)
        .stdout_contains("::error file=agent.test.yaml,line=8,col=25,title=invalid-value::not a valid regular expression")
        .stderr_contains("agent.test.yaml:9:16: error[missing-key]: a judge needs a model")
        .run();
    Test::new()
        .command(["test"])
        .status(2)
        .stderr("error: no test files (*.test.yaml) found\n")
        .run();
}

#[test]
fn the_committed_test_schema_is_the_generated_one() {
    let generated = Run::new(["schema", "--test"]).run();
    assert_eq!(generated.code, 0);
    let committed = std::fs::read_to_string(root().join("schemas/test.schema.json")).unwrap();
    assert!(
        generated.stdout == committed,
        "schemas/test.schema.json is stale: run `runner schema --test --out schemas/test.schema.json`"
    );
}

#[test]
fn validate_leaves_test_files_to_runner_test() {
    let dir = tempdir("validate-tests");
    std::fs::write(dir.join("a.yaml"), "name: a\nmodel: openai/gpt-4o-mini\n").unwrap();
    std::fs::write(dir.join("a.test.yaml"), "agent: a.yaml\ncases: []\n").unwrap();
    let ran = Run::new(["validate".as_ref(), dir.as_os_str()]).run();
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
}

#[test]
fn this_repository_s_examples_and_agents_pass_offline() {
    let ran = Run::new(["test", "examples", "agents"])
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .run();
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout
            .contains("test result: ok. 10 passed, 0 failed, 0 skipped"),
        "{}",
        ran.stdout
    );
}

/// The job summary of `runner test`: a row per case, and each failure at its line, with
/// what the model said (quoted in the failure) shown as text.
#[test]
fn a_job_summary_has_a_row_per_case_and_the_failures_inert() {
    let file = "agent: agent.yaml
cases:
  - name: passes
    script: [{ text: hi }]
  - name: fails
    script: [{ text: '<script>alert(1)</script> | x | [a](javascript:alert(1))' }]
    expect:
      - output_contains: bye
  - name: skipped
    skip: later
";
    let ran = Test::new()
        .agent("prompt: Go.\n")
        .file("agent.test.yaml", file)
        .command(["test", "--format", "junit", "--summary", "summary.md"])
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", "step-summary.md")
        .status(1)
        .any_stderr()
        .run();
    let markdown = ran.read("step-summary.md");
    assert_eq!(markdown, ran.read("summary.md"));
    let shown = support::markdown::shown(&markdown);
    assert!(
        shown
            .text
            .contains("runner test: FAILED. 1 passed, 1 failed, 1 skipped"),
        "{}",
        shown.text
    );
    let rows = shown.table(&["Case", "Result", "Runs passed", "Duration"]);
    let cells: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str()))
        .collect();
    assert_eq!(
        cells,
        [
            ("agent.test.yaml::passes", "✅ passed"),
            ("agent.test.yaml::fails", "❌ failed"),
            ("agent.test.yaml::skipped", "skipped (later)"),
        ],
        "{markdown}"
    );
    assert!(
        shown.text.contains(
            "agent.test.yaml:8:9: expected the output to contain \"bye\", got \"<script>alert(1)</script> | x | [a](javascript:alert(1))\""
        ),
        "{}",
        shown.text
    );
}

/// `runner test --format gitlab`: GitLab's Code Quality JSON, valid against its schema, an
/// issue per failure at the line of the assertion that failed, the model's token redacted.
#[test]
fn gitlab_format_is_a_code_quality_report_of_the_failures() {
    let file = "agent: agent.yaml
cases:
  - name: passes
    script: [{ text: hi }]
  - name: fails
    script: [{ text: 'key ghp_abcdefghijklmnopqrstuvwxyz0123456789AB' }]
    expect:
      - output_contains: bye
      - output_contains: ciao
";
    let ran = Test::new()
        .agent("prompt: Go.\n")
        .file("agent.test.yaml", file)
        .command(["test", "--format", "gitlab"])
        .status(1)
        .any_stderr()
        .run();
    let issues = support::code_quality::checked(&ran.stdout);
    let lines: Vec<u64> = issues
        .iter()
        .map(|i| i["location"]["lines"]["begin"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [8, 9], "{}", ran.stdout);
    for issue in &issues {
        assert_eq!(issue["location"]["path"], "agent.test.yaml");
        assert_eq!(issue["check_name"], "runner/test");
        assert_eq!(issue["severity"], "major");
    }
    let description = issues[0]["description"].as_str().unwrap();
    assert!(
        description.starts_with("agent.test.yaml::fails: expected the output to contain \"bye\""),
        "{description}"
    );
    assert!(
        description.contains("[REDACTED]") && !ran.stdout.contains("ghp_"),
        "{}",
        ran.stdout
    );
}
