//! Pipeline counters, read by the monitoring API (`sluice-api`).
//!
//! Nothing here is touched per event. Each worker owns a [`WorkerMetrics`] (its own cache
//! lines) and adds to it once per batch — per filter, per output and for the whole batch —
//! with plain loads and stores: only that worker writes it, so no atomic read-modify-write
//! and no cache line bouncing between workers. Each input has an [`InputCounters`] updated
//! once per pushed batch (with `fetch_add`, as one input may push from several threads: a
//! multi-threaded generator, or the `pipeline` outputs of other pipelines through the bus).
//! Readers sum everything on demand ([`PipelineMetrics::totals`]).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// A counter written by one thread only and read by any.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`. Only the owning thread may call this (a load and a store, no lock prefix).
    /// The store releases, so a reader that sees it also sees what happened before it (such
    /// as the input counting the events this worker has just processed).
    #[inline]
    pub fn add_owned(&self, n: u64) {
        self.0.store(
            self.0.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Release,
        );
    }

    #[inline]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// One filter's or output's figures in one worker. Aligned so that no two workers' arrays
/// share a cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct PluginCounters {
    pub events_in: Counter,
    pub events_out: Counter,
    pub duration_nanos: Counter,
}

impl PluginCounters {
    #[inline]
    pub fn record(&self, events_in: u64, events_out: u64, took: Duration) {
        self.events_in.add_owned(events_in);
        self.events_out.add_owned(events_out);
        self.duration_nanos.add_owned(took.as_nanos() as u64);
    }
}

/// What a worker is busy with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doing {
    /// Waiting for a batch, or between batches.
    Idle,
    /// Running a batch through the filters.
    Filters,
    /// Writing a batch to output `k` (config order).
    Output(usize),
}

/// What a worker is doing and since when, for the reports of a stalled shutdown. Set by the
/// worker when it starts a batch, for each output and when done: a few stores per batch,
/// never per event.
#[derive(Debug, Default)]
pub struct Activity {
    /// 0 idle, 1 filters, 2 + k output k.
    doing: AtomicUsize,
    /// Milliseconds since the pipeline started.
    since_ms: AtomicU64,
    /// Events in the batch.
    events: AtomicU64,
    /// The worker thread's id in the OS (0 until it started), for the hot threads report.
    thread: AtomicU64,
}

impl Activity {
    /// Records the calling thread as the worker's (Linux: `/proc/thread-self`).
    pub fn set_thread(&self) {
        let tid = std::fs::read_link("/proc/thread-self")
            .ok()
            .and_then(|p| p.file_name()?.to_str()?.parse().ok())
            .unwrap_or(0);
        self.thread.store(tid, Ordering::Relaxed);
    }

    /// The worker thread's id in the OS (0 if unknown).
    pub fn thread(&self) -> u64 {
        self.thread.load(Ordering::Relaxed)
    }

    pub fn set(&self, doing: Doing, since: Duration, events: u64) {
        let code = match doing {
            Doing::Idle => 0,
            Doing::Filters => 1,
            Doing::Output(k) => 2 + k,
        };
        self.events.store(events, Ordering::Relaxed);
        self.since_ms
            .store(since.as_millis() as u64, Ordering::Relaxed);
        self.doing.store(code, Ordering::Release);
    }

    /// What, since when (time since the pipeline started), on how many events.
    pub fn get(&self) -> (Doing, Duration, u64) {
        let doing = match self.doing.load(Ordering::Acquire) {
            0 => Doing::Idle,
            1 => Doing::Filters,
            k => Doing::Output(k - 2),
        };
        (
            doing,
            Duration::from_millis(self.since_ms.load(Ordering::Relaxed)),
            self.events.load(Ordering::Relaxed),
        )
    }
}

/// One worker's figures: the batches it processed and, per filter and output, what went
/// through that plugin in this worker.
#[derive(Debug)]
#[repr(align(128))]
pub struct WorkerMetrics {
    /// Events left after the filters (dropped ones excluded, created ones included).
    pub filtered: Counter,
    /// Events handed to the outputs.
    pub out: Counter,
    /// Time spent on batches (filters, outputs, ack).
    pub duration_nanos: Counter,
    pub batches: Counter,
    pub filters: Box<[PluginCounters]>,
    pub outputs: Box<[PluginCounters]>,
    pub activity: Activity,
}

impl WorkerMetrics {
    pub fn new(filters: usize, outputs: usize) -> Self {
        WorkerMetrics {
            filtered: Counter::default(),
            out: Counter::default(),
            duration_nanos: Counter::default(),
            batches: Counter::default(),
            filters: (0..filters).map(|_| PluginCounters::default()).collect(),
            outputs: (0..outputs).map(|_| PluginCounters::default()).collect(),
            activity: Activity::default(),
        }
    }

    #[inline]
    pub fn record_batch(&self, filtered: u64, out: u64, took: Duration) {
        self.filtered.add_owned(filtered);
        self.out.add_owned(out);
        self.duration_nanos.add_owned(took.as_nanos() as u64);
        self.batches.add_owned(1);
    }
}

/// One input's figures, added to once per pushed batch.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct InputCounters {
    pub out: AtomicU64,
    pub push_nanos: AtomicU64,
}

impl InputCounters {
    pub fn record_push(&self, events: u64, took: Duration) {
        self.pushing(events);
        self.pushed(events, took, true);
    }

    /// `events` are about to be pushed.
    pub fn pushing(&self, events: u64) {
        self.out.fetch_add(events, Ordering::Relaxed);
    }

    /// The push of `events` took `took`; `ok` false when the queue refused them (closed).
    pub fn pushed(&self, events: u64, took: Duration, ok: bool) {
        if !ok {
            self.out.fetch_sub(events, Ordering::Relaxed);
        }
        self.push_nanos
            .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
    }
}

/// A plugin as the monitoring API names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginInfo {
    /// The `id` option, or `name@line:column` when there is none.
    pub id: String,
    pub name: String,
    /// `enable_metric` (default true). When false the API reports the plugin as Logstash's
    /// null metric leaves it: a filter or codec without its name and counts, an input or
    /// output without its own counters.
    pub metrics: bool,
}

/// The plugins of a pipeline, in config order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginList {
    pub inputs: Vec<PluginInfo>,
    pub filters: Vec<PluginInfo>,
    pub outputs: Vec<PluginInfo>,
    /// The codecs of the inputs and outputs (not timed: see the API's docs).
    pub codecs: Vec<PluginInfo>,
}

/// Every counter of a running pipeline.
#[derive(Debug)]
pub struct PipelineMetrics {
    pub plugins: PluginList,
    pub inputs: Box<[InputCounters]>,
    pub workers: Box<[WorkerMetrics]>,
    /// When the pipeline started, for rates over its lifetime.
    pub started: Instant,
    pub started_at: SystemTime,
    /// Per output (config order): the counters it keeps of its own, if any.
    pub output_counters: Vec<Option<std::sync::Arc<NamedCounters>>>,
    /// Per input (config order): the counters it keeps of its own (a network input's
    /// connections), if any.
    pub input_counters: Vec<Option<std::sync::Arc<NamedCounters>>>,
    /// Per filter (config order): events it sent to the dead letter queue (`dlq_on_failure`);
    /// added to once per batch that had some.
    pub filter_dlq_routed: Box<[AtomicU64]>,
    /// `pipeline.batch.metrics.*`: the sizes of the batches workers read.
    pub batch: crate::batch_metrics::BatchMetrics,
    /// Per output (config order): its lane, if it has one (whose sender counts what it
    /// writes to the output).
    pub lanes: Vec<Option<std::sync::Arc<crate::lane::Lane>>>,
    /// Where each plugin's events can be watched (`sluice tap`).
    pub taps: crate::tap::Taps,
}

impl Default for PipelineMetrics {
    fn default() -> Self {
        PipelineMetrics::new(PluginList::default(), 1)
    }
}

/// Sums of a pipeline's counters at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    pub events_in: u64,
    pub events_filtered: u64,
    pub events_out: u64,
    pub queue_push_duration_nanos: u64,
    pub worker_duration_nanos: u64,
    pub batches: u64,
    /// Per input: (events out, push nanos).
    pub inputs: Vec<(u64, u64)>,
    /// Per filter and per output: (in, out, nanos).
    pub filters: Vec<(u64, u64, u64)>,
    pub outputs: Vec<(u64, u64, u64)>,
}

impl PipelineMetrics {
    pub fn new(plugins: PluginList, workers: usize) -> Self {
        let (nf, no) = (plugins.filters.len(), plugins.outputs.len());
        let ni = plugins.inputs.len();
        PipelineMetrics {
            inputs: (0..plugins.inputs.len())
                .map(|_| InputCounters::default())
                .collect(),
            workers: (0..workers.max(1))
                .map(|_| WorkerMetrics::new(nf, no))
                .collect(),
            plugins,
            started: Instant::now(),
            started_at: SystemTime::now(),
            output_counters: Vec::new(),
            input_counters: Vec::new(),
            filter_dlq_routed: (0..nf).map(|_| AtomicU64::new(0)).collect(),
            batch: Default::default(),
            lanes: Vec::new(),
            taps: crate::tap::Taps::new(ni, nf, no),
        }
    }

    /// Everything summed over inputs and workers. Workers are read before inputs, and inputs
    /// count a batch before pushing it, so `events_in` already includes every event the
    /// workers' figures include.
    pub fn totals(&self) -> Totals {
        let mut t = Totals {
            filters: vec![(0, 0, 0); self.plugins.filters.len()],
            outputs: vec![(0, 0, 0); self.plugins.outputs.len()],
            ..Totals::default()
        };
        for w in self.workers.iter() {
            t.events_filtered += w.filtered.get();
            t.events_out += w.out.get();
            t.worker_duration_nanos += w.duration_nanos.get();
            t.batches += w.batches.get();
            for (sum, c) in t.filters.iter_mut().zip(w.filters.iter()) {
                add(sum, c);
            }
            for (sum, c) in t.outputs.iter_mut().zip(w.outputs.iter()) {
                add(sum, c);
            }
        }
        for (sum, lane) in t.outputs.iter_mut().zip(self.lanes.iter()) {
            if let Some(lane) = lane {
                for c in lane.counters.iter() {
                    add(sum, c);
                }
            }
        }
        t.inputs = self
            .inputs
            .iter()
            .map(|c| {
                (
                    c.out.load(Ordering::Relaxed),
                    c.push_nanos.load(Ordering::Relaxed),
                )
            })
            .collect();
        for (out, nanos) in &t.inputs {
            t.events_in += out;
            t.queue_push_duration_nanos += nanos;
        }
        t
    }

    /// (in, filtered, out).
    pub fn snapshot(&self) -> (u64, u64, u64) {
        let t = self.totals();
        (t.events_in, t.events_filtered, t.events_out)
    }
}

fn add(sum: &mut (u64, u64, u64), c: &PluginCounters) {
    sum.0 += c.events_in.get();
    sum.1 += c.events_out.get();
    sum.2 += c.duration_nanos.get();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: &str) -> PluginInfo {
        PluginInfo {
            metrics: true,
            id: id.to_owned(),
            name: id.to_owned(),
        }
    }

    #[test]
    fn totals_sum_inputs_and_workers() {
        let plugins = PluginList {
            inputs: vec![info("a"), info("b")],
            filters: vec![info("f")],
            outputs: vec![info("o")],
            codecs: vec![],
        };
        let m = PipelineMetrics::new(plugins, 3);
        m.inputs[0].record_push(10, Duration::from_nanos(5));
        m.inputs[1].record_push(7, Duration::from_nanos(1));
        for (i, w) in m.workers.iter().enumerate() {
            w.record_batch(5, 4, Duration::from_nanos(100));
            w.filters[0].record(6, 5, Duration::from_nanos(10 * i as u64));
            w.outputs[0].record(4, 4, Duration::from_nanos(3));
        }
        let t = m.totals();
        assert_eq!((t.events_in, t.queue_push_duration_nanos), (17, 6));
        assert_eq!((t.events_filtered, t.events_out, t.batches), (15, 12, 3));
        assert_eq!(t.worker_duration_nanos, 300);
        assert_eq!(t.filters, vec![(18, 15, 30)]);
        assert_eq!(t.outputs, vec![(12, 12, 9)]);
        assert_eq!(t.inputs, vec![(10, 5), (7, 1)]);
    }
}

/// Counters a plugin keeps of its own, by dotted path (`bulk_requests.responses.200`,
/// `documents.successes`), shown nested under the plugin's entry in `/_node/stats`. Updated
/// once per request or batch, never per event, so a mutex is no cost worth avoiding; paths
/// can appear at run time (a response code seen for the first time).
#[derive(Debug, Default)]
pub struct NamedCounters {
    values: std::sync::Mutex<std::collections::BTreeMap<String, u64>>,
}

impl NamedCounters {
    /// Starts with these paths at zero, so that they show before anything happened.
    pub fn with_paths(paths: &[&str]) -> Self {
        NamedCounters {
            values: std::sync::Mutex::new(paths.iter().map(|p| (p.to_string(), 0)).collect()),
        }
    }

    /// Adds to several paths under one lock.
    pub fn add_all(&self, adds: &[(&str, u64)]) {
        let mut values = self.values.lock().unwrap_or_else(|e| e.into_inner());
        for (path, n) in adds {
            match values.get_mut(*path) {
                Some(v) => *v += n,
                None => {
                    values.insert(path.to_string(), *n);
                }
            }
        }
    }

    pub fn add(&self, path: &str, n: u64) {
        self.add_all(&[(path, n)]);
    }

    /// Subtracts (a gauge going down: connections closed), stopping at zero.
    pub fn sub(&self, path: &str, n: u64) {
        let mut values = self.values.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = values.get_mut(path) {
            *v = v.saturating_sub(n);
        }
    }

    /// Adds `n` to `path` and raises `peak` to the new value if it is higher (Logstash's
    /// `current_connections` / `peak_connections`).
    pub fn add_with_peak(&self, path: &str, n: u64, peak: &str) {
        let mut values = self.values.lock().unwrap_or_else(|e| e.into_inner());
        let now = {
            let v = values.entry(path.to_owned()).or_insert(0);
            *v += n;
            *v
        };
        let p = values.entry(peak.to_owned()).or_insert(0);
        *p = (*p).max(now);
    }

    pub fn get(&self, path: &str) -> u64 {
        let values = self.values.lock().unwrap_or_else(|e| e.into_inner());
        values.get(path).copied().unwrap_or(0)
    }

    /// Every path and value, sorted by path.
    pub fn snapshot(&self) -> Vec<(String, u64)> {
        let values = self.values.lock().unwrap_or_else(|e| e.into_inner());
        values.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }
}
