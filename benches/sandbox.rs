//! The cost of the kernel sandbox per `shell` call: the same call of `/usr/bin/true`
//! without a sandbox, under `sandbox: {}` (Landlock and a new network namespace), and
//! under `sandbox: { network: [host:port] }` (Landlock only, the host's network). Also
//! the parent's part alone (`Sandbox::prepare`): building the rulesets the first time,
//! and reusing them while the directories they were listed from are unchanged.
//!
//! Run: `cargo bench --bench sandbox` (on a kernel with Landlock; it says so otherwise).
//! The workspace holds an agent file and `.runner/`, so the rulesets carve them out as a
//! real run's do. Each figure is the median of `RUNS` calls after `WARMUP`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use runner::sandbox::Confine;
use runner::spec::sandbox::SandboxSpec;
use runner::spec::tools::BuiltinTool;
use runner::tools::{Protected, ToolContext, build_builtin_in};
use serde_json::json;

const RUNS: usize = 300;
const WARMUP: usize = 20;

fn main() {
    if let Err(why) = runner::sandbox::abi::kernel_abi() {
        println!("sandbox bench skipped: {why}");
        return;
    }
    let dir = std::env::temp_dir().join(format!("runner-sandbox-bench-{}", std::process::id()));
    std::fs::create_dir_all(dir.join(".runner/sessions")).unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("agent.yaml"), "name: bench\n").unwrap();
    let protected = Arc::new(Protected::new(
        [dir.join("agent.yaml")],
        [dir.join(".runner")],
    ));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let none: SandboxSpec = serde_json::from_value(json!({})).unwrap();
    let ports: SandboxSpec =
        serde_json::from_value(json!({"network": ["127.0.0.1:8080"]})).unwrap();
    let plain = median_call(&runtime, &dir, &protected, None);
    let isolated = median_call(&runtime, &dir, &protected, Some(&none));
    let landlock_only = median_call(&runtime, &dir, &protected, Some(&ports));
    println!("shell call of /usr/bin/true, median of {RUNS}:");
    println!(
        "  no sandbox                          {:>8.3} ms",
        ms(plain)
    );
    println!(
        "  sandbox: {{}} (Landlock + netns)      {:>8.3} ms  (+{:.3} ms)",
        ms(isolated),
        ms(isolated) - ms(plain)
    );
    println!(
        "  network: [host:port] (Landlock)     {:>8.3} ms  (+{:.3} ms)",
        ms(landlock_only),
        ms(landlock_only) - ms(plain)
    );

    let confine = Confine {
        workspace: dir.canonicalize().unwrap(),
        hidden: runner::sandbox::hidden_paths(protected.state_dirs()),
        read_only: protected.files(),
    };
    let prepare = |sandbox: &runner::sandbox::Sandbox| {
        let started = Instant::now();
        let prepared = sandbox.prepare(&confine).unwrap();
        assert!(prepared.is_some());
        started.elapsed()
    };
    let cold = median(|| prepare(&runner::sandbox::Sandbox::new(&[&none], &dir).unwrap()));
    let sandbox = runner::sandbox::Sandbox::new(&[&none], &dir).unwrap();
    let warm = median(|| prepare(&sandbox));
    println!("  building the rulesets (first call)  {:>8.3} ms", ms(cold));
    println!("  reusing them (later calls)          {:>8.3} ms", ms(warm));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The median time of one `shell` call under `sandbox`.
fn median_call(
    runtime: &tokio::runtime::Runtime,
    dir: &std::path::Path,
    protected: &Arc<Protected>,
    sandbox: Option<&SandboxSpec>,
) -> Duration {
    let spec: BuiltinTool = serde_json::from_value(json!({
        "builtin": "shell",
        "allow": ["/usr/bin/true"],
    }))
    .unwrap();
    let layers: Vec<&SandboxSpec> = sandbox.into_iter().collect();
    let tool = build_builtin_in(&spec, dir, protected, &Default::default(), &layers).unwrap();
    let (_stop, cancel) = tokio::sync::watch::channel(false);
    median(|| {
        let ctx = ToolContext::new("bench", cancel.clone());
        let started = Instant::now();
        let output = runtime.block_on(tool.call(json!({"command": "/usr/bin/true"}), &ctx));
        let took = started.elapsed();
        assert!(output.success, "{:?}", output.error);
        took
    })
}

fn median(mut sample: impl FnMut() -> Duration) -> Duration {
    for _ in 0..WARMUP {
        sample();
    }
    let mut times: Vec<Duration> = (0..RUNS).map(|_| sample()).collect();
    times.sort();
    times[RUNS / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
