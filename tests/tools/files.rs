//! read_file, write_file, list_dir and search_files on their happy paths.

use serde_json::json;

use crate::common::{Scratch, builtin, call, error_of, ok};

#[tokio::test]
async fn read_file_returns_the_text_and_line_counts() {
    let dir = Scratch::new();
    dir.write("notes.txt", "one\ntwo\nthree\nfour\nfive\n");
    let tool = builtin(json!({"builtin": "read_file"}), dir.path());

    let out = ok(call(tool.as_ref(), json!({"path": "notes.txt"})).await);
    assert_eq!(out.data, "one\ntwo\nthree\nfour\nfive\n");
    assert_eq!(out.metadata["total_lines"], 5);
    assert_eq!(out.metadata["returned_lines"], 5);
    assert_eq!(out.metadata["truncated"], false);

    let out = ok(call(
        tool.as_ref(),
        json!({"path": "notes.txt", "offset": 2, "limit": 2}),
    )
    .await);
    assert_eq!(out.data, "two\nthree\n");
    assert_eq!(out.metadata["total_lines"], 5);
    assert_eq!(out.metadata["offset"], 2);
    assert_eq!(out.metadata["returned_lines"], 2);
    assert_eq!(out.metadata["truncated"], true);

    let out = ok(call(tool.as_ref(), json!({"path": "./notes.txt", "offset": 5})).await);
    assert_eq!(out.data, "five\n");

    let out = ok(call(tool.as_ref(), json!({"path": "notes.txt", "offset": 9})).await);
    assert_eq!(out.data, "");
    assert_eq!(out.metadata["returned_lines"], 0);
    assert!(
        out.metadata["note"]
            .as_str()
            .unwrap()
            .contains("past the end")
    );
}

#[tokio::test]
async fn read_file_refuses_binary_files_directories_and_missing_files() {
    let dir = Scratch::new();
    dir.write("image.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    dir.mkdir("src");
    let tool = builtin(json!({"builtin": "read_file"}), dir.path());

    let out = call(tool.as_ref(), json!({"path": "image.png"})).await;
    assert!(error_of(&out).contains("binary"), "{out:?}");
    let out = call(tool.as_ref(), json!({"path": "src"})).await;
    assert!(error_of(&out).contains("is a directory"), "{out:?}");
    let out = call(tool.as_ref(), json!({"path": "nope.txt"})).await;
    let err = error_of(&out);
    assert!(err.contains("nope.txt"), "{err}");
}

#[tokio::test]
async fn write_file_creates_parents_and_replaces_atomically() {
    let dir = Scratch::new();
    let tool = builtin(json!({"builtin": "write_file"}), dir.path());

    let out = ok(call(
        tool.as_ref(),
        json!({"path": "a/b/c.txt", "content": "hello\n"}),
    )
    .await);
    assert_eq!(out.data, json!({"path": "a/b/c.txt", "bytes": 6}));
    assert_eq!(out.metadata["created"], true);
    assert_eq!(dir.read("a/b/c.txt"), "hello\n");

    let out = ok(call(
        tool.as_ref(),
        json!({"path": "a/b/c.txt", "content": "bye"}),
    )
    .await);
    assert_eq!(out.metadata["created"], false);
    assert_eq!(dir.read("a/b/c.txt"), "bye");

    // No temp file is left beside the target.
    let names: Vec<String> = std::fs::read_dir(dir.path().join("a/b"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["c.txt"]);

    let out = call(tool.as_ref(), json!({"path": "a", "content": "x"})).await;
    assert!(error_of(&out).contains("directory"), "{out:?}");
}

#[cfg(unix)]
#[tokio::test]
async fn write_file_keeps_the_permissions_of_the_file_it_replaces() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Scratch::new();
    let script = dir.write("run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let tool = builtin(json!({"builtin": "write_file"}), dir.path());
    ok(call(
        tool.as_ref(),
        json!({"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}),
    )
    .await);
    let mode = std::fs::metadata(&script).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
}

#[tokio::test]
async fn list_dir_lists_sorted_entries_with_type_and_size() {
    let dir = Scratch::new();
    dir.write("b.txt", "12345");
    dir.write("a.txt", "");
    dir.mkdir("c");
    dir.write("c/inner.txt", "x");
    #[cfg(unix)]
    std::os::unix::fs::symlink("b.txt", dir.path().join("d-link")).unwrap();
    let tool = builtin(json!({"builtin": "list_dir"}), dir.path());

    let out = ok(call(tool.as_ref(), json!({})).await);
    let entries = out.data.as_array().unwrap();
    let names: Vec<&str> = entries
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    #[cfg(unix)]
    assert_eq!(names, ["a.txt", "b.txt", "c", "d-link"]);
    assert_eq!(
        entries[1],
        json!({"name": "b.txt", "type": "file", "size": 5})
    );
    assert_eq!(
        entries[2],
        json!({"name": "c", "type": "dir", "size": null})
    );
    #[cfg(unix)]
    assert_eq!(entries[3]["type"], "symlink");
    assert_eq!(out.metadata["path"], ".");

    let out = ok(call(tool.as_ref(), json!({"path": "c"})).await);
    assert_eq!(
        out.data,
        json!([{"name": "inner.txt", "type": "file", "size": 1}])
    );

    let out = call(tool.as_ref(), json!({"path": "b.txt"})).await;
    assert!(error_of(&out).contains("not a directory"), "{out:?}");
}

fn search_fixture() -> Scratch {
    let dir = Scratch::new();
    dir.write("src/main.rs", "fn main() {\n    helper();\n}\n");
    dir.write("src/lib/helper.rs", "pub fn helper() {}\n");
    dir.write("README.md", "call helper() to help\n");
    dir.write(".git/config", "helper = yes\n");
    dir.write("target/debug/out.rs", "fn helper() {}\n");
    dir.write("blob.bin", b"helper\0\x01\x02");
    dir
}

#[tokio::test]
async fn search_files_finds_lines_and_skips_binaries_git_and_target() {
    let dir = search_fixture();
    let tool = builtin(json!({"builtin": "search_files"}), dir.path());

    let out = ok(call(tool.as_ref(), json!({"pattern": r"helper\("})).await);
    assert_eq!(
        out.data,
        "README.md:1: call helper() to help\nsrc/lib/helper.rs:1: pub fn helper() {}\nsrc/main.rs:2:     helper();"
    );
    assert_eq!(out.metadata["matches"], 3);
    assert_eq!(out.metadata["truncated"], false);

    let out = ok(call(tool.as_ref(), json!({"pattern": "helper", "glob": "*.rs"})).await);
    let text = out.data.as_str().unwrap();
    assert!(text.lines().all(|l| l.starts_with("src/")), "{text}");

    let out = ok(call(
        tool.as_ref(),
        json!({"pattern": "helper", "glob": "src/**/*.rs"}),
    )
    .await);
    assert_eq!(
        out.data,
        "src/lib/helper.rs:1: pub fn helper() {}\nsrc/main.rs:2:     helper();"
    );
    let out = ok(call(
        tool.as_ref(),
        json!({"pattern": "helper", "glob": "src/*.rs"}),
    )
    .await);
    assert_eq!(out.data, "src/main.rs:2:     helper();");

    let out = ok(call(tool.as_ref(), json!({"pattern": "fn", "path": "src/lib"})).await);
    assert_eq!(out.data, "src/lib/helper.rs:1: pub fn helper() {}");

    let out = ok(call(tool.as_ref(), json!({"pattern": "nothing-matches-this"})).await);
    assert_eq!(out.data, "(no matches)");

    let out = call(tool.as_ref(), json!({"pattern": "("})).await;
    assert!(error_of(&out).contains("invalid regex"), "{out:?}");
    let out = call(tool.as_ref(), json!({"pattern": "x", "glob": "[a"})).await;
    assert!(error_of(&out).contains("invalid glob"), "{out:?}");
}

#[tokio::test]
async fn search_files_bounds_the_number_of_results() {
    let dir = Scratch::new();
    dir.write("many.txt", "hit\n".repeat(500));
    let tool = builtin(json!({"builtin": "search_files"}), dir.path());
    let out = ok(call(tool.as_ref(), json!({"pattern": "hit"})).await);
    let text = out.data.as_str().unwrap();
    assert_eq!(
        text.lines().filter(|l| l.starts_with("many.txt:")).count(),
        200
    );
    assert!(
        text.contains("stopped after 200 matches"),
        "{}",
        &text[text.len() - 100..]
    );
    assert_eq!(out.metadata["truncated"], true);
}

#[tokio::test]
async fn null_arguments_count_as_an_empty_object() {
    let dir = Scratch::new();
    dir.write("only.txt", "");
    let list = builtin(json!({"builtin": "list_dir"}), dir.path());
    let out = ok(call(list.as_ref(), serde_json::Value::Null).await);
    assert_eq!(out.data[0]["name"], "only.txt");
    let read = builtin(json!({"builtin": "read_file"}), dir.path());
    let out = call(read.as_ref(), serde_json::Value::Null).await;
    assert!(
        error_of(&out).contains("\"path\" is a required property"),
        "{out:?}"
    );
}
