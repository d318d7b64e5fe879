//! Logging a failure that repeats (an I/O call retried while a disk is full, an output
//! retried while its destination is down): the first failure, then at most one line a
//! minute with the count, then the recovery, instead of a line per attempt.

use std::time::{Duration, Instant};

/// Logs a failure that keeps repeating (an I/O call retried while the disk is full) once,
/// then how often it failed at most once a minute, then that it succeeded.
pub struct Repeated {
    what: String,
    last: Option<String>,
    failures: u64,
    next_report: Instant,
}

impl Repeated {
    pub fn new(what: impl Into<String>) -> Self {
        Repeated {
            what: what.into(),
            last: None,
            failures: 0,
            next_report: Instant::now(),
        }
    }

    pub fn failed(&mut self, error: &dyn std::fmt::Display, consequence: &str) {
        let msg = error.to_string();
        self.failures += 1;
        let now = Instant::now();
        if self.last.as_deref() != Some(msg.as_str()) {
            tracing::warn!("{} failed: {msg}; {consequence}", self.what);
            self.last = Some(msg);
            self.next_report = now + REPORT_EVERY;
        } else if now >= self.next_report {
            tracing::warn!(
                "{} still failing ({} attempts so far): {msg}; {consequence}",
                self.what,
                self.failures
            );
            self.next_report = now + REPORT_EVERY;
        }
    }

    pub fn succeeded(&mut self) {
        if self.failures > 0 {
            tracing::info!(
                "{}: working again after {} failed attempt(s)",
                self.what,
                self.failures
            );
            self.failures = 0;
            self.last = None;
        }
    }
}

const REPORT_EVERY: Duration = Duration::from_secs(60);
