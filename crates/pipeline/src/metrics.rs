//! Pipeline counters. Updated once per batch (never per event), read by the monitoring API.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug, Default)]
pub struct PipelineMetrics {
    pub events_in: AtomicU64,
    pub events_filtered: AtomicU64,
    pub events_out: AtomicU64,
    pub queue_push_duration_nanos: AtomicU64,
    pub worker_duration_nanos: AtomicU64,
}

impl PipelineMetrics {
    pub fn record_push(&self, events: u64, took: Duration) {
        self.events_in.fetch_add(events, Ordering::Relaxed);
        self.queue_push_duration_nanos
            .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
    }

    pub fn record_batch(&self, filtered: u64, out: u64, took: Duration) {
        self.events_filtered.fetch_add(filtered, Ordering::Relaxed);
        self.events_out.fetch_add(out, Ordering::Relaxed);
        self.worker_duration_nanos
            .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> (u64, u64, u64) {
        (
            self.events_in.load(Ordering::Relaxed),
            self.events_filtered.load(Ordering::Relaxed),
            self.events_out.load(Ordering::Relaxed),
        )
    }
}
