//! The synchronous face of the NATS client, for the session store: the engine saves
//! checkpoints through a synchronous trait (`checkpoint::CheckpointStore`), from inside its
//! own runtime, where blocking on a future of the same runtime would deadlock. The client
//! lives on a runtime of its own with one thread; a call hands it a future and waits on a
//! plain channel.

use std::future::Future;
use std::sync::mpsc;

use tokio::runtime::{Handle, Runtime};

use super::NatsError;

pub struct Blocking {
    runtime: Option<Runtime>,
}

impl Blocking {
    pub fn new() -> Result<Self, NatsError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("runner-nats")
            .enable_all()
            .build()
            .map_err(|e| NatsError::new("cannot start the NATS client's thread", e))?;
        Ok(Blocking {
            runtime: Some(runtime),
        })
    }

    /// Runs `future` on the client's runtime and waits for its output.
    pub fn run<F>(&self, future: F) -> Result<F::Output, NatsError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (send, receive) = mpsc::sync_channel(1);
        self.handle().spawn(async move {
            let _ = send.send(future.await);
        });
        receive
            .recv()
            .map_err(|_| NatsError::new("the NATS client's thread", "it stopped mid-call"))
    }

    pub fn handle(&self) -> &Handle {
        self.runtime
            .as_ref()
            .expect("the runtime lives until drop")
            .handle()
    }
}

impl Drop for Blocking {
    /// Without waiting for tasks: dropping a runtime may happen inside the engine's runtime,
    /// where waiting is not allowed.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
