//! Runs an agent file from Rust, as `runner exec` would, and counts its events.
//! `cargo run --example library` (from the repository root: the agent reads README.md).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use runner::engine::events::Event;
use runner::{RunFile, RunStatus};

fn main() -> Result<(), runner::NotStarted> {
    let events = Arc::new(AtomicUsize::new(0));
    let counter = events.clone();
    let outcome = RunFile::new("examples/quickstart.yaml")
        .subscribe(Arc::new(move |_: &Event| {
            counter.fetch_add(1, Ordering::Relaxed);
        }))
        .run()?;
    assert_eq!(outcome.status, RunStatus::Completed);
    println!(
        "{} ({} steps, {} events)",
        outcome.output.unwrap_or_default(),
        outcome.state.step,
        events.load(Ordering::Relaxed)
    );
    Ok(())
}
