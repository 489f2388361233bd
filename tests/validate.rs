//! `runner validate` and `runner schema` through the real binary.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use support::{Run, Test, root};

const INVALID: &str = "tests/fixtures/invalid";

/// The `# expect: LINE:COL severity[code]` lines of every fixture, by file.
fn expectations() -> BTreeMap<String, Vec<String>> {
    let mut expected = BTreeMap::new();
    let mut pending = vec![root().join(INVALID)];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let lines: Vec<String> = text
                .lines()
                .filter_map(|line| line.strip_prefix("# expect: "))
                .map(String::from)
                .collect();
            let relative = path
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .to_string();
            expected.insert(relative, lines);
        }
    }
    expected
}

fn actual(diagnostics: &serde_json::Value) -> BTreeMap<String, Vec<String>> {
    let mut actual: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for d in diagnostics.as_array().unwrap() {
        actual
            .entry(d["file"].as_str().unwrap().to_string())
            .or_default()
            .push(format!(
                "{}:{} {}[{}]",
                d["line"],
                d["column"],
                d["severity"].as_str().unwrap(),
                d["code"].as_str().unwrap()
            ));
    }
    actual
}

#[test]
fn every_broken_file_reports_exactly_its_expected_diagnostics() {
    let expected = expectations();
    assert!(
        expected.len() >= 25,
        "the corpus has {} files",
        expected.len()
    );
    let outcome = Run::new(["validate", INVALID, "--format", "json"]).run();
    assert_eq!(outcome.code, 2, "{}", outcome.stderr);
    let actual = actual(&outcome.json());
    let mut mismatches = Vec::new();
    for (file, lines) in &expected {
        let got = actual.get(file).cloned().unwrap_or_default();
        if &got != lines {
            mismatches.push(format!("{file}\n  expected {lines:?}\n  got      {got:?}"));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn each_broken_file_alone_reports_the_same_diagnostics() {
    for (file, lines) in expectations() {
        if file.contains("cycle") {
            continue; // which file of a cycle reports it depends on where the walk starts
        }
        let outcome = Run::new(["validate", &file, "--format", "json"]).run();
        let got = actual(&outcome.json()).remove(&file).unwrap_or_default();
        assert_eq!(got, lines, "{file}");
        let has_error = lines.iter().any(|l| l.contains("error["));
        assert_eq!(outcome.code, if has_error { 2 } else { 0 }, "{file}");
    }
}

#[test]
fn examples_and_agents_are_valid_without_warnings() {
    let outcome = Run::new(["validate", "examples", "agents", "--format", "json"]).run();
    assert_eq!(outcome.code, 0, "{}", outcome.stdout);
    assert_eq!(outcome.json(), serde_json::json!([]));
    let count = ["examples", "agents"]
        .iter()
        .flat_map(|dir| std::fs::read_dir(root().join(dir)).unwrap())
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "yaml")
        })
        .count();
    assert!(count >= 8, "only {count} example files");
}

#[test]
fn text_format_names_file_line_column_code_path_and_hint() {
    let outcome = Run::new(["validate", "tests/fixtures/invalid/04-unknown-key.yaml"]).run();
    assert_eq!(outcome.code, 2);
    assert_eq!(
        outcome.stdout,
        "tests/fixtures/invalid/04-unknown-key.yaml:2:1: error[unknown-key]: unknown key `modle` (at /modle)\n  \
         help: did you mean `model`?\n\
         tests/fixtures/invalid/04-unknown-key.yaml:3:1: error[unknown-key]: unknown key `systen` (at /systen)\n  \
         help: did you mean `system`?\n"
    );
    assert_eq!(outcome.stderr, "2 error(s), 0 warning(s)\n");
}

#[test]
fn json_format_has_the_documented_fields() {
    let outcome = Run::new([
        "validate",
        "tests/fixtures/invalid/09-bad-durations.yaml",
        "--format",
        "json",
    ])
    .run();
    let first = &outcome.json()[0];
    assert_eq!(
        first["file"],
        "tests/fixtures/invalid/09-bad-durations.yaml"
    );
    assert_eq!(first["line"], 3);
    assert_eq!(first["column"], 12);
    assert_eq!(first["severity"], "error");
    assert_eq!(first["code"], "duration");
    assert_eq!(first["path"], "/limits/timeout");
    assert_eq!(first["message"], "`15 minutes` is not a duration");
}

#[test]
fn warnings_alone_exit_zero() {
    let dir = tempdir();
    let file = dir.join("warn.yaml");
    std::fs::write(
        &file,
        "name: warn\ninputs:\n  topic: { type: string, required: true }\n",
    )
    .unwrap();
    let outcome = Run::new(["validate", file.to_str().unwrap()]).run();
    assert_eq!(outcome.code, 0);
    assert!(
        outcome.stdout.contains("warning[unused-input]"),
        "{}",
        outcome.stdout
    );
}

#[test]
fn a_path_that_does_not_exist_is_exit_2() {
    let outcome = Run::new(["validate", "no/such/agent.yaml"]).run();
    assert_eq!(outcome.code, 2);
    assert!(
        outcome
            .stderr
            .contains("no/such/agent.yaml: no such file or directory")
    );
}

#[test]
fn bad_command_lines_are_exit_2() {
    assert_eq!(Run::new(["validate"]).run().code, 2);
    assert_eq!(Run::new(["frobnicate"]).run().code, 2);
}

#[test]
fn committed_schema_is_current() {
    let outcome = Run::new(["schema"]).run();
    assert_eq!(outcome.code, 0);
    let committed = std::fs::read_to_string(root().join("schemas/agent.schema.json")).unwrap();
    assert!(
        committed == outcome.stdout,
        "schemas/agent.schema.json is stale: run `cargo run -- schema --out schemas/agent.schema.json`"
    );
}

#[test]
fn committed_events_schema_is_current() {
    let outcome = Run::new(["schema", "--events"]).run();
    assert_eq!(outcome.code, 0);
    let committed = std::fs::read_to_string(root().join("schemas/events.schema.json")).unwrap();
    assert!(
        committed == outcome.stdout,
        "schemas/events.schema.json is stale: run `cargo run -- schema --events --out schemas/events.schema.json`"
    );
}

#[test]
fn committed_project_schema_is_current() {
    let outcome = Run::new(["schema", "--project"]).run();
    assert_eq!(outcome.code, 0);
    let committed = std::fs::read_to_string(root().join("schemas/project.schema.json")).unwrap();
    assert!(
        committed == outcome.stdout,
        "schemas/project.schema.json is stale: run `cargo run -- schema --project --out schemas/project.schema.json`"
    );
}

#[test]
fn schema_out_writes_the_file() {
    let dir = tempdir();
    let out = dir.join("agent.schema.json");
    let outcome = Run::new(["schema", "--out", out.to_str().unwrap()]).run();
    assert_eq!(outcome.code, 0);
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        written["$schema"],
        "http://json-schema.org/draft-07/schema#"
    );
    assert!(written["properties"]["tools"]["description"].is_string());
}

#[test]
fn symlinked_includes_cannot_leave_the_directory() {
    let dir = tempdir();
    let agent_dir = dir.join("agent");
    std::fs::create_dir_all(&agent_dir).unwrap();
    std::fs::write(dir.join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(dir.join("secret.txt"), agent_dir.join("link.txt")).unwrap();
    std::fs::write(
        agent_dir.join("a.yaml"),
        "name: a\nsystem: \"{% include 'link.txt' %}\"\n",
    )
    .unwrap();
    let outcome = Run::new([
        "validate",
        agent_dir.join("a.yaml").to_str().unwrap(),
        "--format",
        "json",
    ])
    .run();
    assert_eq!(outcome.code, 2);
    assert_eq!(outcome.json()[0]["code"], "include-escape");
}

#[test]
fn a_bounded_cycle_is_accepted() {
    let dir = tempdir();
    std::fs::write(
        dir.join("a.yaml"),
        "name: a\nlimits: { max_depth: 3 }\ntools:\n  - name: b\n    description: b\n    parameters: { type: object }\n    agent: ./b.yaml\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("b.yaml"),
        "name: b\ntools:\n  - name: a\n    description: a\n    parameters: { type: object }\n    agent: ./a.yaml\n",
    )
    .unwrap();
    let outcome = Run::new(["validate", dir.to_str().unwrap()]).run();
    assert_eq!(outcome.code, 0, "{}", outcome.stdout);
}

/// `body` under a scripted model that answers "hi", as `agent.yaml` in a fresh directory.
fn scripted_agent(body: &str) -> std::path::PathBuf {
    let file = tempdir().join("agent.yaml");
    let text = format!(
        "name: numbers\nmodel: {{ provider: scripted, script: [{{ text: hi }}] }}\nprompt: Go\n{body}"
    );
    std::fs::write(&file, text).unwrap();
    file
}

/// `runner validate --format json` of `file`: each diagnostic as `line:col code message`.
fn diagnostics(file: &Path) -> Vec<String> {
    let outcome = Run::new(["validate", file.to_str().unwrap(), "--format", "json"]).run();
    let json = outcome.json();
    let list: Vec<String> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{}:{} {} {}",
                d["line"],
                d["column"],
                d["code"].as_str().unwrap(),
                d["message"].as_str().unwrap()
            )
        })
        .collect();
    let has_error = json
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["severity"] == "error");
    assert_eq!(outcome.code, if has_error { 2 } else { 0 }, "{list:#?}");
    list
}

/// `runner exec` must refuse `file` the way validate does: exit 2, the same located
/// diagnostics on stderr, and never the loader's "please report this".
fn exec_refuses_like_validate(file: &Path) {
    let run_dir = file.with_file_name("run");
    let outcome = Run::new([
        "exec",
        file.to_str().unwrap(),
        "--run-dir",
        run_dir.to_str().unwrap(),
    ])
    .run();
    assert_eq!(outcome.code, 2, "{}", outcome.stderr);
    assert!(
        !outcome.stderr.contains("please report"),
        "{}",
        outcome.stderr
    );
    let validate = Run::new(["validate", file.to_str().unwrap()]).run();
    for line in validate.stdout.lines().filter(|l| l.contains("error[")) {
        assert!(
            outcome.stderr.contains(line),
            "exec lacks {line:?}:\n{}",
            outcome.stderr
        );
    }
}

#[test]
fn integers_beyond_their_type_are_located_errors_with_the_range() {
    let file = scripted_agent(
        "limits:\n  max_llm_calls: 99999999999999999999999999999\n  max_depth: 4294967296\n\
         execution: { parallel_tools: 4294967296 }\n\
         middleware:\n  - sliding_window: { max_messages: 18446744073709551616 }\n",
    );
    assert_eq!(
        diagnostics(&file),
        [
            "5:18 invalid-value `99999999999999999999999999999` is too large: `max_llm_calls` takes a whole number from 0 to 18446744073709551615",
            "6:14 invalid-value `4294967296` is too large: `max_depth` takes a whole number from 0 to 4294967295",
            "7:30 invalid-value `4294967296` is too large: `parallel_tools` takes a whole number from 1 to 4294967295",
            "9:37 invalid-value `18446744073709551616` is too large: `max_messages` takes a whole number from 1 to 18446744073709551615",
        ]
    );
    let text = Run::new(["validate", file.to_str().unwrap()]).run().stdout;
    assert!(
        text.contains("help: write a smaller number, or leave `max_llm_calls` out for no limit"),
        "{text}"
    );
    exec_refuses_like_validate(&file);
}

#[test]
fn whole_numbers_written_as_floats_are_located_errors() {
    let file = scripted_agent("version: 1.0\nlimits: { max_tokens: 1e6 }\n");
    assert_eq!(
        diagnostics(&file),
        [
            "4:10 type expected a whole number written with digits only, found `1.0`",
            "5:23 type expected a whole number written with digits only, found `1e6`",
        ]
    );
    let text = Run::new(["validate", file.to_str().unwrap()]).run().stdout;
    assert!(text.contains("help: write `1000000`"), "{text}");
    exec_refuses_like_validate(&file);
}

#[test]
fn durations_longer_than_the_longest_are_located_errors() {
    let file = scripted_agent(
        "limits: { timeout: 99999999999999999999h }\n\
         tools:\n  - builtin: shell\n    allow: [ls]\n    timeout: 18446744073709551616ms\n",
    );
    let too_long =
        "is too long: the longest duration is 18446744073709551615ms (about 584 million years)";
    assert_eq!(
        diagnostics(&file),
        [
            format!("4:20 duration `99999999999999999999h` {too_long}"),
            format!("8:14 duration `18446744073709551616ms` {too_long}"),
        ]
    );
    exec_refuses_like_validate(&file);
}

#[test]
fn the_largest_values_of_each_type_validate_and_run() {
    let file = scripted_agent(
        "limits:\n  max_llm_calls: 18446744073709551615\n  max_depth: 4294967295\n  \
         timeout: 18446744073709551615ms\n  tool_timeout: 5124095576030h25m51s615ms\n\
         execution: { parallel_tools: 4294967295 }\n",
    );
    assert_eq!(diagnostics(&file), Vec::<String>::new());
    let run_dir = file.with_file_name("run");
    let outcome = Run::new([
        "exec",
        file.to_str().unwrap(),
        "--run-dir",
        run_dir.to_str().unwrap(),
    ])
    .run();
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(outcome.stdout, "hi\n");
}

/// A fresh directory under the target dir (no extra dependency needed).
fn tempdir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "validate-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `--format github`: one workflow command per problem, at its file, line and column.
#[test]
fn github_format_annotates_each_problem_at_its_line() {
    let file = format!("{INVALID}/03-duplicate-key.yaml");
    let json = Run::new(["validate", &file, "--format", "json"])
        .run()
        .json();
    let first = &json[0];
    let outcome = Run::new(["validate", &file, "--format", "github"]).run();
    assert_eq!(outcome.code, 2);
    let expected = format!(
        "::error file={file},line={},col={},title={}::",
        first["line"],
        first["column"],
        first["code"].as_str().unwrap()
    );
    assert!(outcome.stdout.starts_with(&expected), "{}", outcome.stdout);
    assert_eq!(
        outcome.stdout.lines().count(),
        json.as_array().unwrap().len()
    );
}

/// `--format junit`: a test case per file checked, failed by its errors.
#[test]
fn junit_format_has_a_test_case_per_file() {
    let good = "examples/quickstart.yaml";
    let bad = format!("{INVALID}/03-duplicate-key.yaml");
    let outcome = Run::new(["validate", good, &bad, "--format", "junit"]).run();
    assert_eq!(outcome.code, 2);
    let xml = &outcome.stdout;
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"));
    assert!(xml.contains("<testsuite name=\"runner validate\" tests=\"2\" failures=\"1\""));
    assert!(xml.contains(&format!("name=\"{good}\" file=\"{good}\"/>")));
    assert!(xml.contains(&format!(
        "name=\"{bad}\" file=\"{bad}\">\n      <failure message="
    )));
}

/// `docs/providers.md`: every OpenAI-compatible service is known by name, in the shorthand
/// too. A file with `model: groq/…` once failed (`error[model]: … is not provider/name`)
/// while the mapping form and `--model groq/…` worked.
#[test]
fn every_named_service_is_a_model_shorthand_in_a_file() {
    for model in [
        "openrouter/openai/gpt-4o-mini",
        "groq/llama-3.3-70b-versatile",
        "together/meta-llama/Llama-3.3-70B-Instruct-Turbo",
        "mistral/mistral-small-latest",
        "deepseek/deepseek-chat",
        "vllm/Qwen/Qwen2.5-7B-Instruct",
        "lmstudio/qwen2.5-7b-instruct",
    ] {
        Test::new()
            .file(
                "agent.yaml",
                &format!("name: named\nmodel: {model}\nprompt: Hi\nlimits: {{ timeout: 1m }}\n"),
            )
            .command(["validate", "agent.yaml"])
            .run();
    }
    // An unknown provider still says which ones there are.
    Test::new()
        .file(
            "agent.yaml",
            "name: named\nmodel: acme/some-model\nprompt: Hi\n",
        )
        .command(["validate", "agent.yaml"])
        .status(2)
        .stdout_contains("unknown provider `acme`: use one of openai, openai_responses")
        .stderr("1 error(s), 0 warning(s)\n")
        .run();
}

/// The job summary of `runner validate`: a table of the problems at their `file:line`,
/// the file's name and the key it quotes shown as text, not markup.
#[test]
fn a_job_summary_lists_the_problems_at_their_lines_inert() {
    let name = "a|b<script>.yaml";
    let ran = Test::new()
        .file(
            name,
            "name: x\nmodel: openai/gpt-4o-mini\n\"[a](javascript:alert(1))\": 1\n",
        )
        .file(
            "good.yaml",
            "name: good\nmodel: openai/gpt-4o-mini\nprompt: Hi\nlimits: { max_llm_calls: 5 }\n",
        )
        .command(["validate", name, "good.yaml", "--summary", "summary.md"])
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", "step-summary.md")
        .status(2)
        .any_stderr()
        .run();
    let markdown = ran.read("step-summary.md");
    assert_eq!(markdown, ran.read("summary.md"));
    let shown = support::markdown::shown(&markdown);
    assert!(
        shown
            .text
            .contains("runner validate: 2 files not valid (1 error, 0 warnings)"),
        "{}",
        shown.text
    );
    let rows = shown.table(&["Location", "Severity", "Code", "Problem"]);
    assert_eq!(rows.len(), 1, "{markdown}");
    assert_eq!(
        rows[0][..3],
        ["a|b<script>.yaml:3:1", "error", "unknown-key"],
        "{markdown}"
    );
    assert!(
        rows[0][3].contains("[a](javascript:alert(1))"),
        "{markdown}"
    );
}

/// `--format gitlab`: GitLab's Code Quality JSON, valid against its schema, an issue per
/// problem at its file and line.
#[test]
fn gitlab_format_is_a_code_quality_report_at_each_problems_line() {
    let ran = Test::new()
        .file(
            "agents/bad.yaml",
            "name: x\nmodel: openai/gpt-4o-mini\npromt: Hi\nmax_turns: 3\n",
        )
        .file(
            "agents/good.yaml",
            "name: good\nmodel: openai/gpt-4o-mini\nprompt: Hi\nlimits: { max_llm_calls: 5 }\n",
        )
        .command(["validate", "./agents", "--format", "gitlab"])
        .status(2)
        .any_stderr()
        .run();
    let issues = support::code_quality::checked(&ran.stdout);
    let found: Vec<(String, String, u64, String)> = issues
        .iter()
        .map(|i| {
            (
                i["check_name"].as_str().unwrap().to_string(),
                i["location"]["path"].as_str().unwrap().to_string(),
                i["location"]["lines"]["begin"].as_u64().unwrap(),
                i["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (
                "runner/unknown-key".into(),
                "agents/bad.yaml".into(),
                3,
                "major".into()
            ),
            (
                "runner/unknown-key".into(),
                "agents/bad.yaml".into(),
                4,
                "major".into()
            ),
        ],
        "{}",
        ran.stdout
    );
    assert!(
        issues[0]["description"]
            .as_str()
            .unwrap()
            .contains("unknown key `promt`")
    );
    // No problem is an empty report, which GitLab reads as "no issues".
    let ran = Test::new()
        .file(
            "good.yaml",
            "name: good\nmodel: openai/gpt-4o-mini\nprompt: Hi\nlimits: { max_llm_calls: 5 }\n",
        )
        .command(["validate", "good.yaml", "--format", "gitlab"])
        .run();
    assert!(support::code_quality::checked(&ran.stdout).is_empty());
}

/// The schema the Code Quality tests use refuses what GitLab would not read: a missing
/// fingerprint, an unknown severity, an absolute path, line 0.
#[test]
fn the_code_quality_schema_refuses_reports_gitlab_cannot_read() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/fixtures/gitlab-code-quality.schema.json"))
            .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let good = serde_json::json!({
        "description": "d", "check_name": "c", "fingerprint": "f", "severity": "minor",
        "location": { "path": "a.yaml", "lines": { "begin": 1 } }
    });
    assert!(validator.is_valid(&serde_json::json!([good])));
    let broken = [
        ("/fingerprint", serde_json::Value::Null),
        ("/severity", "warning".into()),
        ("/location/path", "/abs/a.yaml".into()),
        ("/location/lines/begin", 0.into()),
    ];
    for (pointer, value) in broken {
        let mut issue = good.clone();
        match value {
            serde_json::Value::Null => {
                issue.as_object_mut().unwrap().remove("fingerprint");
            }
            value => *issue.pointer_mut(pointer).unwrap() = value,
        }
        assert!(
            !validator.is_valid(&serde_json::json!([issue])),
            "{pointer}"
        );
    }
}

/// UAP §2.4: runs are unbounded unless the file bounds them, so `validate` says when
/// nothing does (a warning: exit 0), once, at the root agent; a file with a bound on model
/// calls, tokens, cost or time, a strategy bound or a scripted model is quiet, and so is a
/// file with errors (those come first).
#[test]
fn validate_warns_when_nothing_bounds_an_agent() {
    let unbounded = "name: open\nmodel: openai/gpt-4o-mini\nprompt: Hi\n";
    Test::new()
        .file("agent.yaml", unbounded)
        .command(["validate", "agent.yaml"])
        .stdout_contains(
            "agent.yaml:1:1: warning[unbounded]: nothing bounds this agent's model calls, tokens, cost or time",
        )
        .stdout_contains("help: add e.g. `limits: {max_llm_calls: 50, timeout: 10m}`")
        .stderr("0 error(s), 1 warning(s)\n")
        .run();
    // Limits that bound something else (tools, depth) are located at `limits`.
    Test::new()
        .file(
            "agent.yaml",
            &format!("{unbounded}limits:\n  max_tool_calls: 5\n"),
        )
        .command(["validate", "agent.yaml"])
        .stdout_contains("agent.yaml:4:1: warning[unbounded]")
        .stderr("0 error(s), 1 warning(s)\n")
        .run();
    for bound in [
        "limits: { max_llm_calls: 20 }",
        "limits: { max_tokens: 100000 }",
        "limits: { timeout: 10m }",
        "limits: { max_cost_usd: 1 }\nmodel: { provider: openai, name: gpt-4o-mini, pricing: { input_per_mtok: 1, output_per_mtok: 2 } }",
        "execution: { max_iterations: 10 }",
        "execution: { strategy: react, max_steps: 10 }",
        "execution: { strategy: plan, max_plans: 2, max_plan_steps: 5, max_step_calls: 5 }",
    ] {
        let file = if bound.contains("\nmodel:") {
            format!("name: open\nprompt: Hi\n{bound}\n")
        } else {
            format!("{unbounded}{bound}\n")
        };
        let ran = Test::new()
            .file("agent.yaml", &file)
            .command(["validate", "agent.yaml"])
            .run();
        assert_eq!(ran.stdout, "", "{bound}");
    }
    // A plan strategy with only some of its bounds still plans without end.
    Test::new()
        .file(
            "agent.yaml",
            &format!("{unbounded}execution: {{ strategy: plan, max_plans: 2 }}\n"),
        )
        .command(["validate", "agent.yaml"])
        .stdout_contains("warning[unbounded]")
        .stderr("0 error(s), 1 warning(s)\n")
        .run();
    // A file that does not validate gets its errors, not the advice.
    let ran = Test::new()
        .file("agent.yaml", &format!("{unbounded}promt: typo\n"))
        .command(["validate", "agent.yaml"])
        .status(2)
        .stderr("1 error(s), 0 warning(s)\n")
        .run();
    assert!(!ran.stdout.contains("unbounded"), "{}", ran.stdout);
    // `runner exec` does not repeat the advice.
    Test::new()
        .agent("prompt: Go\n")
        .reply(runner::testing::mock_server::Reply::text("Done."))
        .stdout("Done.\n")
        .run();
}

/// `runner init` writes bounds into the file it makes, so it validates quietly.
#[test]
fn init_writes_limits_and_validates_without_warnings() {
    let ran = Test::new().command(["init", "helper"]).run();
    let file = ran.read("helper.yaml");
    assert!(
        file.contains("limits:\n  max_llm_calls: 20\n  timeout: 5m\n"),
        "{file}"
    );
    let checked = ran.then().command(["validate", "helper.yaml"]).run();
    assert_eq!(checked.stdout, "");
}

/// UAP §8.5 on every tool: `runner validate` checks the names a built-in's or an MCP
/// server's `depends_on` gives (with did-you-mean) and refuses tools that wait for
/// themselves through them.
#[test]
fn validate_checks_depends_on_of_every_tool_for_names_and_cycles() {
    let agent = "name: ordered\nmodel: openai/gpt-4o-mini\nprompt: Hi\nlimits: { max_llm_calls: 5 }\ntools:\n  - builtin: read_file\n    depends_on: [write_file]\n  - builtin: write_file\n    depends_on: [read_file]\n  - builtin: list_dir\n    depends_on: [serch_files]\n  - builtin: search_files\n  - mcp: { command: node, args: [server.js], tools: [lookup], prefix: kb_ }\n    sequential: true\n    depends_on: [kb_lookup_all]\n";
    Test::new()
        .file("agent.yaml", agent)
        .command(["validate", "agent.yaml"])
        .status(2)
        .stdout_contains(
            "agent.yaml:7:18: error[cycle]: `depends_on` makes `read_file` wait for itself: read_file → write_file → read_file",
        )
        .stdout_contains(
            "agent.yaml:11:18: error[unknown-tool]: `depends_on` names `serch_files`, which is not a tool of this agent",
        )
        .stdout_contains("help: did you mean `search_files`?")
        .stdout_contains("agent.yaml:15:18: error[unknown-tool]: `depends_on` names `kb_lookup_all`")
        .stdout_contains("help: did you mean `kb_lookup`?")
        .stderr("3 error(s), 0 warning(s)\n")
        .run();
}
