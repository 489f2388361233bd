//! The runtime of the NATS commands (`submit`, `worker`, `batch status|results`): one
//! thread. They only wait, on the server and (the worker) on its children, each waited for
//! on a blocking thread; a second thread would only be woken to steal their tasks.

use tokio::runtime::Runtime;

pub fn nats_runtime() -> Result<Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start: {error}"))
}
