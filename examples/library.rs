//! Runs an agent file from Rust twice: with `RunFile` (one call, as `runner exec` would),
//! then through the session API (`runner::session`), which a server uses to host many
//! runs on one tokio runtime: start, read the events (from the first, even when reading
//! late), and wait for the outcome. `cargo run --example library` (from the repository
//! root: the agent reads README.md).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use runner::session::{self, RunRequest, RunSettings};
use runner::{Event, RunFile, RunStatus};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One call: validate, run, checkpoint; the events to a subscriber.
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

    // The session API, on a runtime of the caller's.
    let runtime = tokio::runtime::Runtime::new()?;
    let ended = runtime.block_on(async {
        let request = RunRequest {
            settings: RunSettings::default(), // no run directory; a new session
            ..RunRequest::new("examples/quickstart.yaml")
        };
        let handle = session::start(request).await?;
        let mut stream = handle.events();
        while let Some(event) = stream.next().await {
            println!("  {}", event.kind());
        }
        handle.outcome().await
    });
    let ended: session::Ended = ended?;
    println!(
        "{}: {} (session {})",
        ended.result.status.name(),
        ended.result.output.unwrap_or_default(),
        ended.result.session_id
    );
    Ok(())
}
