//! `runner validate` speed: in process (one file, schema compiled once) and as a whole
//! process (one file; a directory of 200 files), the figures the foundation issue names.

use std::path::{Path, PathBuf};
use std::process::Command;

use criterion::{Criterion, criterion_group, criterion_main};
use runner::spec::Validator;

const AGENT: &str = include_str!("../agents/code-reviewer.yaml");

fn fixture_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-validate");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy("agents/explorer.yaml", dir.join("explorer.yaml")).unwrap();
    for i in 0..199 {
        let text = AGENT.replace("name: code-reviewer", &format!("name: reviewer-{i}"));
        std::fs::write(dir.join(format!("agent-{i:03}.yaml")), text).unwrap();
    }
    dir
}

fn validate_in_process(c: &mut Criterion) {
    let path = Path::new("agents/code-reviewer.yaml");
    c.bench_function("validate/in-process/one-file", |b| {
        b.iter(|| {
            let mut validator = Validator::new();
            validator.validate_source(path, AGENT);
            validator.finish()
        })
    });
}

fn validate_process(c: &mut Criterion) {
    let binary = env!("CARGO_BIN_EXE_runner");
    let dir = fixture_dir();
    let mut group = c.benchmark_group("validate/process");
    group.sample_size(20);
    group.bench_function("one-file", |b| {
        b.iter(|| {
            let status = Command::new(binary)
                .args(["validate", "agents/code-reviewer.yaml"])
                .status()
                .unwrap();
            assert!(status.success());
        })
    });
    group.bench_function("200-files", |b| {
        b.iter(|| {
            let status = Command::new(binary)
                .arg("validate")
                .arg(&dir)
                .status()
                .unwrap();
            assert!(status.success());
        })
    });
    group.finish();
}

criterion_group!(benches, validate_in_process, validate_process);
criterion_main!(benches);
