//! Retries as a wrapper provider: any [`Provider`] in, the same trait out.
//!
//! A retryable failure ([`ProviderError::is_retryable`]) is tried again from scratch
//! after an exponential backoff with jitter (never longer than `max_backoff`), or after the
//! server's `Retry-After` when it sent one, waited in full up to the call's timeout: a server
//! that asks for a longer wait ends the retries at once, so that a fallback model, if there
//! is one, takes the call instead of a wait the call could not outlive. If the failed attempt had already
//! streamed deltas, a [`StreamDelta::Reset`] goes to the sink first, so a consumer drops
//! the partial answer instead of showing it twice.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::config::RetryConfig;
use super::error::ProviderError;
use super::types::{ModelRequest, ModelResponse, StreamDelta};
use super::{BoxFuture, DeltaSink, Provider};

pub struct Retry {
    inner: Arc<dyn Provider>,
    policy: RetryConfig,
    /// The call's timeout: the longest `Retry-After` waited for.
    timeout: Duration,
}

impl Retry {
    pub fn new(inner: Arc<dyn Provider>, policy: RetryConfig, timeout: Duration) -> Self {
        Retry {
            inner,
            policy,
            timeout,
        }
    }

    /// The wait before attempt `next` (2, 3, ...): `initial * 2^(next-2)`, capped, with
    /// "equal jitter" (half fixed, half random) so clients spread out; or `Retry-After`.
    pub fn backoff(policy: &RetryConfig, next: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(wait) = retry_after {
            return wait;
        }
        let exp = next.saturating_sub(2).min(30);
        let base = policy
            .initial_backoff
            .saturating_mul(1u32 << exp)
            .min(policy.max_backoff);
        let half = base / 2;
        half + half.mul_f64(fastrand::f64())
    }

    async fn call(
        &self,
        req: &ModelRequest,
        sink: &DeltaSink<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        let max = self.policy.max_attempts.max(1);
        let mut attempt = 1;
        loop {
            let emitted = AtomicBool::new(false);
            let tracking = |d: StreamDelta| {
                if !matches!(d, StreamDelta::Idle) {
                    emitted.store(true, Ordering::Relaxed);
                }
                sink(d);
            };
            match self.inner.stream(req, &tracking).await {
                Ok(response) => return Ok(response),
                Err(mut e) if !e.is_retryable() || attempt >= max => {
                    e.attempts = attempt;
                    return Err(e);
                }
                Err(mut e) if e.retry_after.is_some_and(|wait| wait > self.timeout) => {
                    e.attempts = attempt;
                    let asked = e.retry_after.unwrap_or_default().as_secs_f64();
                    let why = format!(
                        "the server asked to wait {asked}s (Retry-After), longer than the call's \
                         timeout of {}s: not retried",
                        self.timeout.as_secs_f64()
                    );
                    e.hint = Some(match e.hint.take() {
                        Some(hint) => format!("{hint}; {why}"),
                        None => why,
                    });
                    return Err(e);
                }
                Err(e) => {
                    attempt += 1;
                    let wait = Self::backoff(&self.policy, attempt, e.retry_after);
                    let wait_ms = wait.as_millis() as u64;
                    tracing::debug!(attempt, wait_ms, error = %e, "retrying the model call");
                    sink(StreamDelta::Retrying {
                        attempt,
                        wait_ms,
                        reason: e.to_string(),
                    });
                    tokio::time::sleep(wait).await;
                    if emitted.load(Ordering::Relaxed) {
                        sink(StreamDelta::Reset {
                            attempt,
                            reason: e.to_string(),
                        });
                    }
                }
            }
        }
    }
}

impl Provider for Retry {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn model(&self) -> &str {
        self.inner.model()
    }
    fn schema_with_tools(&self) -> bool {
        self.inner.schema_with_tools()
    }
    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
        sink: &'a DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(self.call(req, sink))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_capped_and_honours_retry_after_in_full() {
        let p = RetryConfig {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
        };
        for _ in 0..50 {
            let b2 = Retry::backoff(&p, 2, None);
            assert!(b2 >= Duration::from_millis(50) && b2 <= Duration::from_millis(100));
            let b4 = Retry::backoff(&p, 4, None);
            assert!(b4 >= Duration::from_millis(200) && b4 <= Duration::from_millis(400));
            assert!(Retry::backoff(&p, 30, None) <= Duration::from_secs(1));
        }
        let ra = Retry::backoff(&p, 2, Some(Duration::from_millis(700)));
        assert_eq!(ra, Duration::from_millis(700));
        // The server's word beats max_backoff; the call's timeout bounds it (in `call`).
        assert_eq!(
            Retry::backoff(&p, 2, Some(Duration::from_secs(60))),
            Duration::from_secs(60)
        );
    }
}
