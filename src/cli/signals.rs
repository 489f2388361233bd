//! SIGINT and SIGTERM, watched once for every command: `exec`, `resume`, `chat` and `tools`
//! cancel their run, `batch` stops starting inputs and interrupts its children, `worker`
//! hands its jobs back. The session layer never watches signals: it is the front end's
//! business which runs a signal stops.

/// Calls `then` on the first SIGINT or SIGTERM. The handlers are in place before this
/// returns, so a signal that comes while a run starts (its MCP servers) is not lost.
pub fn on_stop_signal(then: impl FnOnce() + Send + 'static) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let signals = {
        let _context = runtime.enter();
        (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        )
    };
    let (Ok(mut interrupt), Ok(mut terminate)) = signals else {
        return;
    };
    // Never joined: it waits for a signal for as long as the process lives.
    std::thread::spawn(move || {
        runtime.block_on(async {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        });
        then();
    });
}

/// A run's stop signal, flipped by SIGINT or SIGTERM.
pub fn cancelled_by_signals() -> crate::session::Cancel {
    let cancel = crate::session::Cancel::new();
    let flipped = cancel.clone();
    on_stop_signal(move || flipped.cancel());
    cancel
}
