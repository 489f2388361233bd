//! The engine emits and never prints: what a person reads on stderr is the progress
//! subscriber's (`output::progress`), which a front end may leave out (a library caller,
//! a server). This test reads the engine's source and fails on any line that writes to
//! the terminal itself.

use std::path::{Path, PathBuf};

use regex::Regex;

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let entries = std::fs::read_dir(dir).expect("the engine's source folder is readable");
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(sources(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files
}

#[test]
fn the_engine_never_prints() {
    let printing =
        Regex::new(r"\b(e?print(ln)?|dbg)!|\bstd(out|err)\(\)").expect("the pattern compiles");
    let engine = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine");
    let files = sources(&engine);
    assert!(files.len() > 10, "the engine's files are found");
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a source file is readable");
        for (number, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if !code.starts_with("//") && printing.is_match(code) {
                found.push(format!("{}:{}: {}", file.display(), number + 1, code));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the engine prints; emit an event or a notice (`Emitter::notify`) instead:\n{}",
        found.join("\n")
    );
}
