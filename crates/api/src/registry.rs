//! What the API reads: the running pipelines (registered by the agent when it starts, stops or
//! reloads them), their reload history, and a once-a-second history of their counters from
//! which flow rates are computed.
//!
//! The API never touches a pipeline's hot path: it reads the pipeline's counters (atomics) and
//! asks its queue for figures (one short lock, once a second and per request).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant, SystemTime};

use sluice_pipeline::batch_metrics::BatchFigures;
use sluice_pipeline::metrics::{PipelineMetrics, Totals};
use sluice_pipeline::queue::{EventQueue, QueueFigures};
use sluice_pipeline::PipelineSettings;

/// How long the history of samples reaches back: the longest flow window.
pub const HISTORY: Duration = Duration::from_secs(15 * 60);
/// How often the sampler records every pipeline's counters.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// A running pipeline as the agent hands it to the API.
#[derive(Clone)]
pub struct PipelineView {
    pub id: String,
    pub settings: PipelineSettings,
    pub metrics: Arc<PipelineMetrics>,
    pub queue: Arc<dyn EventQueue>,
    /// The pipeline's dead letter queue, when enabled.
    pub dead_letter_queue: Option<Arc<sluice_pipeline::DeadLetterQueue>>,
    /// Identifies the pipeline's config and settings (changes when a reload changes them).
    pub hash: String,
    /// Its plugins, conditionals and queue as Logstash's API draws them (`?graph=true`).
    pub graph: Arc<sluice_pipeline::lir::Graph>,
}

/// How a pipeline left the running ones: what the health report says of it afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Its inputs finished and its events were processed (Logstash's `FINISHED`).
    Finished,
    /// It stopped delivering (an output gone, a stop given up on): `TERMINATED`.
    Terminated,
    /// A reload could not start it again: `UNKNOWN`, as a pipeline that failed to start.
    FailedToStart,
    /// Removed from the configuration: no longer reported.
    Removed,
}

/// One pipeline's counters at one moment.
#[derive(Debug, Clone)]
pub struct Sample {
    pub at: Instant,
    pub totals: Totals,
    pub queue: QueueFigures,
    /// Batch sizes measured so far (`None` when `pipeline.batch.metrics.sampling_mode` is
    /// `disabled`).
    pub batch: Option<BatchFigures>,
}

/// Reload outcomes of one pipeline id, kept across its restarts.
#[derive(Debug, Clone, Default)]
pub struct ReloadStats {
    pub successes: u64,
    pub failures: u64,
    pub last_error: Option<String>,
    pub last_success: Option<SystemTime>,
    pub last_failure: Option<SystemTime>,
}

pub(crate) struct Tracked {
    pub view: PipelineView,
    pub ephemeral_id: String,
    /// The counters at start (zero), for lifetime rates.
    pub first: Sample,
    pub history: Mutex<VecDeque<Sample>>,
}

impl Tracked {
    pub fn sample(&self) -> Sample {
        Sample {
            at: Instant::now(),
            totals: self.view.metrics.totals(),
            queue: self.view.queue.figures(),
            batch: self.view.metrics.batch.figures(),
        }
    }

    fn record(&self, sample: Sample) {
        let mut h = lock(&self.history);
        // Keep one sample at or beyond the oldest window's start.
        while h.len() >= 2 && sample.at.duration_since(h[1].at) >= HISTORY {
            h.pop_front();
        }
        h.push_back(sample);
    }

    /// The samples taken so far, oldest first.
    pub fn history(&self) -> Vec<Sample> {
        lock(&self.history).iter().cloned().collect()
    }
}

#[derive(Default)]
struct Inner {
    pipelines: RwLock<BTreeMap<String, Arc<Tracked>>>,
    reloads: Mutex<BTreeMap<String, ReloadStats>>,
    /// Pipelines no longer running, and how they ended.
    ended: Mutex<BTreeMap<String, Ended>>,
    /// When each pipeline was last restarted after a crash (`pipeline.recoverable`).
    recoveries: Mutex<BTreeMap<String, Vec<SystemTime>>>,
}

/// The pipelines of this process, for the API. Cloning gives another handle to the same one.
#[derive(Clone, Default)]
pub struct Registry {
    inner: Arc<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Registry {
    pub fn new() -> Self {
        Registry::default()
    }

    /// A pipeline started (or restarted by a reload): it replaces any entry of the same id.
    pub fn pipeline_started(&self, view: PipelineView) {
        let plugins = &view.metrics.plugins;
        // The counters at start are zero; the queue may hold a backlog (persisted queue).
        let first = Sample {
            at: view.metrics.started,
            totals: Totals {
                inputs: vec![(0, 0); plugins.inputs.len()],
                filters: vec![(0, 0, 0); plugins.filters.len()],
                outputs: vec![(0, 0, 0); plugins.outputs.len()],
                ..Totals::default()
            },
            queue: view.queue.figures(),
            batch: view
                .metrics
                .batch
                .figures()
                .map(|_| BatchFigures::default()),
        };
        let tracked = Arc::new(Tracked {
            ephemeral_id: crate::node::random_uuid(),
            history: Mutex::new(VecDeque::from([first.clone()])),
            first,
            view,
        });
        let id = tracked.view.id.clone();
        // Both changed under `ended`'s lock, so that `running_and_ended` sees a pipeline in
        // one list or the other, never both or neither.
        let mut ended = lock(&self.inner.ended);
        ended.remove(&id);
        self.inner
            .pipelines
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, tracked);
    }

    /// A pipeline is no longer running (see [`Ended`]).
    pub fn pipeline_stopped(&self, id: &str, how: Ended) {
        // As in `pipeline_started`: both lists change under `ended`'s lock.
        let mut ended = lock(&self.inner.ended);
        self.inner
            .pipelines
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
        match how {
            Ended::Removed => {
                ended.remove(id);
                lock(&self.inner.recoveries).remove(id);
            }
            how => {
                ended.insert(id.to_owned(), how);
            }
        }
    }

    /// The running pipelines and those that ended, read together: a pipeline that stops (or
    /// starts) meanwhile is in one list or the other. (Read one after the other, a pipeline
    /// stopping in between was in both, and the health report counted it twice.)
    pub(crate) fn running_and_ended(&self) -> (Vec<Arc<Tracked>>, Vec<(String, Ended)>) {
        let ended = lock(&self.inner.ended);
        let running = self.pipelines();
        let ended = ended.iter().map(|(k, v)| (k.clone(), *v)).collect();
        (running, ended)
    }

    /// A pipeline was restarted after a crash (`pipeline.recoverable`).
    pub fn pipeline_recovered(&self, id: &str) {
        let mut r = lock(&self.inner.recoveries);
        let log = r.entry(id.to_owned()).or_default();
        let now = SystemTime::now();
        // Logstash keeps five minutes of them.
        log.retain(|t| now.duration_since(*t).unwrap_or_default() < Duration::from_secs(300));
        log.push(now);
    }

    /// The restarts after a crash in the last five minutes.
    pub fn recoveries(&self, id: &str) -> Vec<SystemTime> {
        let now = SystemTime::now();
        lock(&self.inner.recoveries)
            .get(id)
            .map(|log| {
                log.iter()
                    .copied()
                    .filter(|t| {
                        now.duration_since(*t).unwrap_or_default() < Duration::from_secs(300)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn reload_succeeded(&self, id: &str) {
        let mut r = lock(&self.inner.reloads);
        let s = r.entry(id.to_owned()).or_default();
        s.successes += 1;
        s.last_success = Some(SystemTime::now());
    }

    pub fn reload_failed(&self, id: &str, error: &str) {
        let mut r = lock(&self.inner.reloads);
        let s = r.entry(id.to_owned()).or_default();
        s.failures += 1;
        s.last_failure = Some(SystemTime::now());
        s.last_error = Some(error.to_owned());
    }

    pub fn reloads(&self, id: &str) -> ReloadStats {
        lock(&self.inner.reloads)
            .get(id)
            .cloned()
            .unwrap_or_default()
    }

    /// (successes, failures) over every pipeline.
    pub fn reload_totals(&self) -> (u64, u64) {
        lock(&self.inner.reloads)
            .values()
            .fold((0, 0), |(s, f), r| (s + r.successes, f + r.failures))
    }

    /// Running pipelines, by id.
    pub(crate) fn pipelines(&self) -> Vec<Arc<Tracked>> {
        self.inner
            .pipelines
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect()
    }

    pub(crate) fn pipeline(&self, id: &str) -> Option<Arc<Tracked>> {
        self.inner
            .pipelines
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    /// Ids of the running pipelines.
    pub fn ids(&self) -> Vec<String> {
        self.pipelines().iter().map(|t| t.view.id.clone()).collect()
    }

    /// Records a sample of every pipeline (the sampler thread calls this once a second).
    pub fn sample_all(&self) {
        for t in self.pipelines() {
            let s = t.sample();
            t.record(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_pipeline::queue::MemoryEventQueue;

    fn view(id: &str) -> PipelineView {
        PipelineView {
            id: id.to_owned(),
            settings: PipelineSettings::default(),
            metrics: Arc::new(PipelineMetrics::default()),
            queue: Arc::new(MemoryEventQueue::new(10)),
            dead_letter_queue: None,
            hash: "h".to_owned(),
            graph: Arc::default(),
        }
    }

    /// A pipeline stopping and starting again while the lists are read is always in exactly
    /// one of them.
    #[test]
    fn a_pipeline_is_running_or_ended_never_both() {
        let r = Registry::new();
        r.pipeline_started(view("p"));
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    r.pipeline_stopped("p", Ended::Terminated);
                    r.pipeline_started(view("p"));
                }
            });
            // A pipeline seen twice or not at all, per read.
            let odd: Vec<usize> = (0..20_000)
                .map(|_| {
                    let (running, ended) = r.running_and_ended();
                    running.iter().filter(|t| t.view.id == "p").count()
                        + ended.iter().filter(|(id, _)| id == "p").count()
                })
                .filter(|&n| n != 1)
                .collect();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            assert!(odd.is_empty(), "{odd:?}");
        });
    }

    #[test]
    fn start_stop_and_reloads() {
        let r = Registry::new();
        r.pipeline_started(view("a"));
        r.pipeline_started(view("b"));
        assert_eq!(r.ids(), ["a", "b"]);
        r.pipeline_stopped("a", Ended::Finished);
        assert_eq!(r.ids(), ["b"]);
        let ended = || r.running_and_ended().1;
        assert_eq!(ended(), [("a".to_owned(), Ended::Finished)]);
        r.pipeline_started(view("a"));
        assert!(ended().is_empty());
        r.pipeline_stopped("a", Ended::Removed);
        assert!(ended().is_empty());
        r.reload_succeeded("b");
        r.reload_failed("b", "bad config");
        r.reload_failed("c", "worse");
        let b = r.reloads("b");
        assert_eq!((b.successes, b.failures), (1, 1));
        assert_eq!(b.last_error.as_deref(), Some("bad config"));
        assert_eq!(r.reload_totals(), (1, 2));
    }

    #[test]
    fn history_is_bounded() {
        let r = Registry::new();
        r.pipeline_started(view("a"));
        let t = r.pipeline("a").unwrap();
        let start = Instant::now();
        for i in 0..2000u64 {
            let mut s = t.sample();
            s.at = start + Duration::from_secs(i);
            t.record(s);
        }
        let h = t.history();
        let span = h.last().unwrap().at.duration_since(h[0].at);
        assert!(span >= HISTORY && span <= HISTORY + Duration::from_secs(2));
    }
}
