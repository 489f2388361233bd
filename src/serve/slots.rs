//! How many runs go at once (`-j`), and how many requests may wait for one (`--queue`):
//! past both, a request for a run is answered 429 at once instead of piling up.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::http::StatusCode;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::ApiError;

pub struct Slots {
    running: Arc<Semaphore>,
    waiting: AtomicUsize,
    queue: usize,
    jobs: usize,
}

/// Taken while a request waits for a slot.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Slots {
    pub fn new(jobs: usize, queue: usize) -> Self {
        Slots {
            running: Arc::new(Semaphore::new(jobs)),
            waiting: AtomicUsize::new(0),
            queue,
            jobs,
        }
    }

    /// A slot for one run, held until the run ends (the permit is dropped); a request
    /// waits for one in the queue, or is refused when the queue is full.
    pub async fn take(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        if self.running.is_closed() {
            return Err(shutting_down());
        }
        if let Ok(permit) = self.running.clone().try_acquire_owned() {
            return Ok(permit);
        }
        let waiting = self.waiting.fetch_add(1, Ordering::SeqCst);
        let _waiting = Waiting(&self.waiting);
        if waiting >= self.queue {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "busy",
                format!(
                    "{} run(s) are going and {} request(s) wait for one to end (-j {}, --queue {}): \
                     try again later",
                    self.jobs, waiting, self.jobs, self.queue
                ),
            ));
        }
        let permit = self.running.clone().acquire_owned().await;
        permit.map_err(|_| shutting_down())
    }

    /// No more runs: requests waiting for a slot are refused (on shutdown).
    pub fn close(&self) {
        self.running.close();
    }
}

fn shutting_down() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "shutting_down",
        "the server is shutting down: no new runs",
    )
}
