//! `runner validate` and `runner schema` through the real binary.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use support::{Run, root};

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
