//! Waiting out a server that went away, shared by the network plugins: exponential back-off,
//! sleeps that end early on shutdown, and one log line when an outage starts and one when it
//! ends (not one per attempt).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Tracks one outage of a server shared by several threads: the first thread to see it fail
/// logs one warning, the first to get through afterwards logs one line saying it is back.
pub struct Outage {
    what: String,
    /// What is down ("Redis", "Elasticsearch").
    service: &'static str,
    down: AtomicBool,
    since: Mutex<Option<Instant>>,
}

impl Outage {
    pub fn new(what: impl Into<String>, service: &'static str) -> Outage {
        Outage {
            what: what.into(),
            service,
            down: AtomicBool::new(false),
            since: Mutex::new(None),
        }
    }

    pub fn failed(&self, target: &str, error: &dyn std::fmt::Display) {
        if !self.down.swap(true, Ordering::SeqCst) {
            *self.since.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
            tracing::warn!(
                "{}: {} at {target} is unavailable ({error}); retrying with back-off until it is back",
                self.what,
                self.service
            );
        } else {
            tracing::debug!(
                "{}: {} at {target} still unavailable: {error}",
                self.what,
                self.service
            );
        }
    }

    pub fn recovered(&self, target: &str) {
        if self.down.load(Ordering::Relaxed) && self.down.swap(false, Ordering::SeqCst) {
            let since = self.since.lock().unwrap_or_else(|p| p.into_inner()).take();
            let secs = since.map_or(0.0, |s| s.elapsed().as_secs_f64());
            tracing::warn!(
                "{}: {} at {target} is back after {secs:.1} s",
                self.what,
                self.service
            );
        }
    }
}

/// Exponential back-off between reconnection attempts.
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max: max.max(first),
            next: first,
        }
    }

    /// The delay to wait now; the next one doubles.
    pub fn next_delay(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.max);
        d
    }

    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

pub use sluice_pipeline::plugin::sleep_unless;

pub use sluice_pipeline::random_u64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_max() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(350));
        let got: Vec<_> = (0..4).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(got, [100, 200, 350, 350]);
        b.reset();
        assert_eq!(b.next_delay().as_millis(), 100);
    }
}
