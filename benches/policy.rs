//! The cost the guardrails add to one tool call: deciding it against a 50-rule
//! `permissions` policy (the call matching none, so every pattern is tried — the worst
//! case), redacting a typical result with the built-in token patterns, and running one
//! `pre_tool_use` hook (a `/bin/sh` script that reads its input and answers nothing).
//! Target: under 10 µs per call for the decision.

use criterion::{Criterion, criterion_group, criterion_main};
use runner::policy::hooks::{CallHookInput, Hook, HookRunner, Hooks, OnError, ToolHook};
use runner::policy::{Permissions, Redactor, ToolPolicy, Verdict};
use runner::tools::ToolOutput;
use serde_json::{Value, json};

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

fn hook(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("runner-bench-hook-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hooks = Hooks {
        pre_tool_use: vec![ToolHook {
            hook: Hook {
                command: vec!["sh".into(), "-c".into(), "cat > /dev/null".into()],
                program: "sh".into(),
                timeout: std::time::Duration::from_secs(10),
                on_error: OnError::Deny,
            },
            matches: Vec::new(),
        }],
        runner: HookRunner {
            workspace: dir.clone(),
            ..HookRunner::default()
        },
        ..Hooks::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (_stop, cancel) = tokio::sync::watch::channel(false);
    let call = CallHookInput {
        run_id: "run",
        session_id: "session",
        agent: "bench",
        depth: 0,
        tool: "shell",
        call_id: "call_1",
        log_dir: None,
        cancel: &cancel,
    };
    let arguments = std::sync::Arc::new(json!({"command": "cargo test"}));
    let same = |arguments: &Value| arguments.clone();
    c.bench_function("policy/pre_tool_use_sh_hook", |b| {
        b.iter(|| runtime.block_on(hooks.before_call(&call, arguments.clone(), &same)))
    });
    let _ = std::fs::remove_dir_all(dir);
}

criterion_group!(benches, decide, redact, hook);
criterion_main!(benches);
