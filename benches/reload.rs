//! Hot reload latency: from the moment an agent file is saved (rename-style) to a validated
//! new definition, debounce included — what `exec --watch` does before it emits
//! `agent.definition.reloaded` at the next step boundary. Reports the median of 30 saves.

use std::time::{Duration, Instant};

use runner::reload::FileWatcher;
use runner::spec::load::load_agent;

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("reload: bench");
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-reload");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("agent.yaml");
    let text = std::fs::read_to_string("agents/ci-triage.yaml").unwrap();
    std::fs::write(&file, &text).unwrap();
    let watcher = FileWatcher::new(std::slice::from_ref(&file)).unwrap();
    let mut samples = Vec::new();
    for i in 0..30 {
        let temp = dir.join("agent.yaml.swp");
        std::fs::write(
            &temp,
            text.replace(
                "You triage CI failures",
                &format!("You triage CI failures ({i})"),
            ),
        )
        .unwrap();
        let saved = Instant::now();
        std::fs::rename(&temp, &file).unwrap();
        while !watcher.changed() {
            std::thread::sleep(Duration::from_millis(1));
        }
        load_agent(&file).expect("valid");
        samples.push(saved.elapsed());
        std::thread::sleep(Duration::from_millis(20));
    }
    samples.sort();
    println!(
        "reload: save → validated definition: median {:.1} ms, min {:.1} ms, max {:.1} ms (debounce {} ms)",
        samples[samples.len() / 2].as_secs_f64() * 1000.0,
        samples[0].as_secs_f64() * 1000.0,
        samples[samples.len() - 1].as_secs_f64() * 1000.0,
        runner::reload::DEBOUNCE.as_millis()
    );
}
