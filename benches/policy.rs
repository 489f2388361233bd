//! The cost the guardrails add to one tool call: deciding it against a 50-rule
//! `permissions` policy (the call matching none, so every pattern is tried — the worst
//! case), and redacting a typical result with the built-in token patterns. Target: under
//! 10 µs per call for the decision.

use criterion::{Criterion, criterion_group, criterion_main};
use runner::policy::{Permissions, Redactor, ToolPolicy, Verdict};
use runner::tools::ToolOutput;
use serde_json::json;

/// 50 rules of the kinds people write: tools, paths, commands, URLs.
fn fifty_rules() -> Permissions {
    let texts = |prefix: &str, n: usize, pattern: &dyn Fn(usize) -> String| {
        (0..n)
            .map(|i| format!("{prefix}{}", pattern(i)))
            .collect::<Vec<_>>()
    };
    let deny = texts("shell:command=", 15, &|i| format!("git push{i}*"));
    let allow = [
        texts("write_file:path=", 15, &|i| format!("src/module{i}/**")),
        texts("http_get:url=", 5, &|i| {
            format!("https://api{i}.example.com/*")
        }),
    ]
    .concat();
    let ask = texts("", 15, &|i| format!("mcp_server{i}_*"));
    Permissions::parse(&deny, &allow, &ask, Verdict::Ask).unwrap()
}

fn decide(c: &mut Criterion) {
    let policy = ToolPolicy {
        permissions: Some(fifty_rules()),
        ..ToolPolicy::default()
    };
    let arguments = json!({"path": "docs/guide/intro.md", "content": "x".repeat(200)});
    c.bench_function("policy/decide_50_rules_no_match", |b| {
        b.iter(|| policy.rule("write_file", &arguments))
    });
    let shell = json!({"command": "git push7 origin main"});
    c.bench_function("policy/decide_50_rules_deny", |b| {
        b.iter(|| policy.rule("shell", &shell))
    });
}

fn redact(c: &mut Criterion) {
    let redactor = Redactor::new(&["ACME-[0-9]{6}".into()]).unwrap();
    let text = "fn main() {\n    println!(\"hello\");\n}\n".repeat(100);
    c.bench_function("policy/redact_4kb_result_without_secrets", |b| {
        b.iter(|| redactor.redact(ToolOutput::ok(text.clone())))
    });
}

criterion_group!(benches, decide, redact);
criterion_main!(benches);
