//! The file tools stay inside their root: `..`, absolute paths and symlinks that leave it
//! are refused with an error that names the path and the reason.

use serde_json::json;

use crate::common::{Scratch, builtin, call, error_of, ok};

#[tokio::test]
async fn dot_dot_that_leaves_the_root_is_refused() {
    let outer = Scratch::new();
    outer.write("secret.txt", "top secret\n");
    outer.write("root/sub/notes.txt", "fine\n");
    let root = outer.path().join("root");
    let read = builtin(json!({"builtin": "read_file"}), &root);

    for path in [
        "../secret.txt",
        "sub/../../secret.txt",
        "..",
        "./../root/sub/notes.txt",
    ] {
        let out = call(read.as_ref(), json!({"path": path})).await;
        let err = error_of(&out);
        assert!(err.contains(path), "{err}");
        assert!(err.contains("`..` climbs above the root"), "{err}");
    }
    // `..` that stays inside is fine.
    let out = ok(call(read.as_ref(), json!({"path": "sub/../sub/notes.txt"})).await);
    assert_eq!(out.data, "fine\n");

    let write = builtin(json!({"builtin": "write_file"}), &root);
    let out = call(
        write.as_ref(),
        json!({"path": "../planted.txt", "content": "x"}),
    )
    .await;
    error_of(&out);
    assert!(!outer.path().join("planted.txt").exists());

    let list = builtin(json!({"builtin": "list_dir"}), &root);
    error_of(&call(list.as_ref(), json!({"path": ".."})).await);
    let search = builtin(json!({"builtin": "search_files"}), &root);
    error_of(&call(search.as_ref(), json!({"pattern": "secret", "path": ".."})).await);
}

#[tokio::test]
async fn absolute_paths_are_refused_unless_inside_the_root() {
    let dir = Scratch::new();
    dir.write("inside.txt", "in\n");
    let read = builtin(json!({"builtin": "read_file"}), dir.path());

    let out = call(read.as_ref(), json!({"path": "/etc/passwd"})).await;
    let err = error_of(&out);
    assert!(
        err.contains("absolute path `/etc/passwd` is outside the workspace root"),
        "{err}"
    );

    let inside = dir.path().join("inside.txt");
    let out = ok(call(read.as_ref(), json!({"path": inside.to_str().unwrap()})).await);
    assert_eq!(out.data, "in\n");

    let write = builtin(json!({"builtin": "write_file"}), dir.path());
    let target = std::env::temp_dir().join(format!("runner-planted-{}", std::process::id()));
    let out = call(
        write.as_ref(),
        json!({"path": target.to_str().unwrap(), "content": "x"}),
    )
    .await;
    error_of(&out);
    assert!(!target.exists());
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_that_leave_the_root_are_refused() {
    use std::os::unix::fs::symlink;
    let outside = Scratch::new();
    outside.write("secret.txt", "top secret\n");
    let dir = Scratch::new();
    dir.write("real.txt", "real\n");
    symlink(
        outside.path().join("secret.txt"),
        dir.path().join("leak.txt"),
    )
    .unwrap();
    symlink(outside.path(), dir.path().join("elsewhere")).unwrap();
    symlink("real.txt", dir.path().join("alias.txt")).unwrap();

    let read = builtin(json!({"builtin": "read_file"}), dir.path());
    for path in ["leak.txt", "elsewhere/secret.txt"] {
        let out = call(read.as_ref(), json!({"path": path})).await;
        let err = error_of(&out);
        assert!(
            err.contains(&format!("path `{path}` resolves through a symlink")),
            "{err}"
        );
        assert!(out.data.is_null());
    }
    // A symlink that stays inside is followed.
    let out = ok(call(read.as_ref(), json!({"path": "alias.txt"})).await);
    assert_eq!(out.data, "real\n");

    let list = builtin(json!({"builtin": "list_dir"}), dir.path());
    error_of(&call(list.as_ref(), json!({"path": "elsewhere"})).await);
    let search = builtin(json!({"builtin": "search_files"}), dir.path());
    error_of(
        &call(
            search.as_ref(),
            json!({"pattern": "secret", "path": "elsewhere"}),
        )
        .await,
    );
    // A search of the root does not follow the links out.
    let out = ok(call(search.as_ref(), json!({"pattern": "secret"})).await);
    assert_eq!(out.data, "(no matches)");
}

#[cfg(unix)]
#[tokio::test]
async fn writes_below_a_symlinked_directory_that_leaves_the_root_are_refused() {
    use std::os::unix::fs::symlink;
    let outside = Scratch::new();
    let dir = Scratch::new();
    symlink(outside.path(), dir.path().join("elsewhere")).unwrap();
    symlink(
        outside.path().join("not-yet.txt"),
        dir.path().join("dangling"),
    )
    .unwrap();
    let write = builtin(json!({"builtin": "write_file"}), dir.path());

    for path in ["elsewhere/new.txt", "elsewhere/deeper/still/new.txt"] {
        let out = call(write.as_ref(), json!({"path": path, "content": "planted"})).await;
        let err = error_of(&out);
        assert!(err.contains("outside the workspace root"), "{err}");
    }
    let out = call(
        write.as_ref(),
        json!({"path": "dangling", "content": "planted"}),
    )
    .await;
    let err = error_of(&out);
    assert!(err.contains("symlink whose target does not exist"), "{err}");

    let left: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
    assert!(
        left.is_empty(),
        "something was written outside the root: {left:?}"
    );
}
