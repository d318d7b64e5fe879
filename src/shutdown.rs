//! What a stop signal starts besides the shutdown itself: a watcher that reports, every few
//! seconds, what the shutdown still waits for (pipeline by pipeline, the plugin each busy
//! worker is in), as Logstash's shutdown watcher does, and that ends a stalled shutdown when
//! doing so loses nothing or the user allowed it (`pipeline.unsafe_shutdown`).
//!
//! At the first report, Ruby code still running in a ruby filter is interrupted (its batch,
//! whose events did not all run through Ruby, is neither delivered nor acked: a persisted
//! queue replays it), so that a script that loops forever does not hold the stop. A worker stuck inside an output that never returns cannot
//! be interrupted. After
//! [`REPORTS_BEFORE_EXIT`] reports the watcher exits the process (status 1) if every stalled
//! pipeline either has a persisted queue (its unacked batches are replayed at the next start)
//! or `pipeline.unsafe_shutdown: true`; otherwise it keeps reporting, and a second stop signal
//! forces the exit.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sluice_pipeline::runtime::PipelineWatch;

/// The running pipelines by id, kept by the agent, read by the signal thread.
pub type Live = Arc<Mutex<BTreeMap<String, PipelineWatch>>>;

pub fn lock(live: &Live) -> MutexGuard<'_, BTreeMap<String, PipelineWatch>> {
    live.lock().unwrap_or_else(|p| p.into_inner())
}

/// The first stop signal, on the signal thread: interrupts every running pipeline at once
/// (the main thread may be busy finishing one) and starts the watcher.
pub fn stop(live: &Live) {
    tracing::info!("shutdown requested; stopping inputs and finishing in-flight batches (a second SIGINT or SIGTERM exits at once)");
    let pipelines: Vec<PipelineWatch> = lock(live).values().cloned().collect();
    for p in &pipelines {
        p.interrupt();
    }
    watch(pipelines);
}

/// How often a stalled shutdown is reported.
pub const REPORT_EVERY: Duration = Duration::from_secs(5);
/// Reports before a stalled shutdown that loses nothing ends the process.
pub const REPORTS_BEFORE_EXIT: u32 = 3;

/// Starts the watcher for these pipelines (they are stopping).
pub fn watch(pipelines: Vec<PipelineWatch>) {
    let spawned = std::thread::Builder::new()
        .name("shutdown-watcher".to_owned())
        .spawn(move || run(&pipelines));
    if let Err(e) = spawned {
        tracing::warn!("cannot start the shutdown watcher: {e}");
    }
}

fn run(pipelines: &[PipelineWatch]) {
    let started = Instant::now();
    let mut reports = 0;
    loop {
        let next = Instant::now() + REPORT_EVERY;
        while Instant::now() < next {
            if pipelines.iter().all(PipelineWatch::finished) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let stalled: Vec<&PipelineWatch> = pipelines.iter().filter(|p| !p.finished()).collect();
        if stalled.is_empty() {
            return;
        }
        reports += 1;
        let secs = started.elapsed().as_secs();
        for p in &stalled {
            tracing::warn!(pipeline = %p.id(), "shutdown stalled for {secs} s: {}", p.report());
        }
        if reports == 1 {
            // Ruby code that loops forever would hold its batch, and so the stop, for good.
            sluice_plugins::filters::ruby::interrupt();
        }
        if reports < REPORTS_BEFORE_EXIT {
            continue;
        }
        let memory: u64 = (stalled.iter())
            .filter(|p| !p.persisted())
            .map(|p| {
                let (held, queued) = p.in_flight();
                held + queued
            })
            .sum();
        if stalled.iter().all(|p| p.persisted() || p.unsafe_shutdown()) {
            tracing::error!(
                "forcing exit after a {secs} s stalled shutdown: persisted queues replay their unacknowledged events at the next start{}",
                if memory > 0 {
                    format!("; {memory} event(s) in memory queues are lost (pipeline.unsafe_shutdown: true)")
                } else {
                    String::new()
                }
            );
            std::process::exit(1);
        }
        if reports == REPORTS_BEFORE_EXIT {
            tracing::warn!(
                "still waiting: {memory} event(s) in memory queues would be lost by stopping now (set pipeline.unsafe_shutdown: true to allow it); a second SIGINT or SIGTERM forces the exit"
            );
        }
    }
}
