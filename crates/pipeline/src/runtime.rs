//! A running pipeline: one thread per input, `workers` worker threads, one shared queue.
//!
//! Worker loop: read a batch (up to `batch_size`, waiting at most `batch_delay` to fill) →
//! filters → drop cancelled events → route to outputs → write each output's share (retrying
//! with back-off on errors) → ack. Shutdown: inputs are told to stop (or finish on their own;
//! one blocked on its source is left behind after a grace period), the queue is closed,
//! workers drain it, filters are flushed, outputs closed.
//!
//! A stop signal ([`RunningPipeline::interrupt`]) also makes a failing output give up its
//! batch instead of retrying it forever: the batch stays unacked (a persisted queue replays it
//! at the next start; for a memory queue the undelivered events are counted in the log), and
//! the workers take no more batches. An output whose destination is gone for good (standard
//! output closed) stops the pipeline the same way. [`PipelineWatch`] tells what a shutdown is
//! still waiting for, plugin by plugin.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sluice_event::Event;

use crate::batch_metrics::{BatchMetrics, BatchSampler, SamplingMode};
use crate::dead_letter::DeadLetterQueue;
use crate::graph::{route, Compiled, FilterChain, Node};
use crate::lane::{Lane, PendingAck, Sent};
use crate::metrics::{Doing, PipelineMetrics};
use crate::plugin::{Failure, InputContext, StopFlag, WriteContext};
use crate::queue::EventQueue;
use crate::registry::BuiltOutput;

#[derive(Debug, Clone)]
pub struct PipelineSettings {
    pub id: String,
    pub workers: usize,
    pub batch_size: usize,
    pub batch_delay: Duration,
    /// `pipeline.unsafe_shutdown`: a stop that stalls may exit anyway (see the agent).
    pub unsafe_shutdown: bool,
    /// The config refers to `[@metadata][replay_safe_id]`: the queue stamps it, and filters'
    /// new events get ids derived from it (see [`crate::queue::ReplayIds`]).
    pub replay_safe_ids: bool,
    /// `pipeline.batch.metrics.sampling_mode`: which batches the `batch` stats measure.
    pub batch_metrics: SamplingMode,
    /// `pipeline.recoverable`: whether the agent starts the pipeline again after a crash.
    pub recoverable: Recoverable,
    /// `pipeline.batch.output_chunking.growth_threshold_factor`: a batch the filters grew past
    /// this many times `batch_size` reaches the outputs in chunks of `batch_size`.
    pub output_chunking_factor: usize,
    /// `pipeline.ordered` (true, or auto with `pipeline.workers: 1` set): the filters keep
    /// the events' order ([`FilterChain::set_ordered`]).
    pub ordered: bool,
    /// `pipeline.lineage`: each event carries `[@metadata][lineage]` ([`crate::lineage`]).
    pub lineage: bool,
    /// Where persisted output lanes live: `<path.queue>/<pipeline id>/lanes` (each lane in
    /// a directory named after its output's id).
    pub lanes_dir: Option<std::path::PathBuf>,
    /// `pipeline.output_lanes`: the lane every output without a `lane` option gets.
    pub output_lanes: Option<crate::lane::LaneSpec>,
}

/// `pipeline.recoverable`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Recoverable {
    #[default]
    No,
    /// Only with a persisted queue (a memory queue loses what it held at the crash).
    Auto,
    Yes,
}

impl Default for PipelineSettings {
    fn default() -> Self {
        PipelineSettings {
            id: "main".to_owned(),
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            batch_size: 125,
            batch_delay: Duration::from_millis(50),
            unsafe_shutdown: false,
            replay_safe_ids: false,
            batch_metrics: SamplingMode::default(),
            recoverable: Recoverable::No,
            output_chunking_factor: 1000,
            ordered: false,
            lineage: false,
            lanes_dir: None,
            output_lanes: None,
        }
    }
}

pub struct RunningPipeline {
    settings: PipelineSettings,
    shared: Arc<Shared>,
    /// Tells active inputs (sources) to stop.
    stopping: Arc<StopFlag>,
    /// Tells passive inputs (`pipeline` inputs) to stop; set only when the pipeline finishes.
    stopping_passive: Arc<StopFlag>,
    inputs_running: Arc<AtomicUsize>,
    active_running: Arc<AtomicUsize>,
    queue: Arc<dyn EventQueue>,
    workers: Vec<JoinHandle<()>>,
    /// The lanes' sender threads.
    senders: Vec<JoinHandle<()>>,
    outputs: Arc<Vec<BuiltOutput>>,
    metrics: Arc<PipelineMetrics>,
}

struct Shared {
    settings: PipelineSettings,
    queue: Arc<dyn EventQueue>,
    outputs: Arc<Vec<BuiltOutput>>,
    output_tree: Arc<Vec<Node>>,
    metrics: Arc<PipelineMetrics>,
    /// `dead_letter_queue.enable`: where outputs (and filters, when asked) put what they
    /// cannot deliver.
    dlq: Option<Arc<DeadLetterQueue>>,
    /// Tells active inputs to stop (the same flag as [`RunningPipeline`]'s).
    stopping: Arc<StopFlag>,
    /// Tells passive (`pipeline`) inputs to stop: they leave the bus.
    stopping_passive: Arc<StopFlag>,
    /// A stop signal came: a failing output gives up its batch instead of retrying.
    interrupted: AtomicBool,
    /// A batch was given up (or an output closed): workers take no more batches.
    halted: AtomicBool,
    /// Events of the batches given up.
    given_up: Arc<AtomicU64>,
    /// Per output (config order): its lane, if it has one.
    lanes: Vec<Option<Arc<Lane>>>,
    /// `pipeline.lineage`: each output's `pipeline/id`, made once.
    output_lineage: Option<Box<[Arc<str>]>>,
    /// Set once [`RunningPipeline::finish`] is done.
    finished: AtomicBool,
    /// Why the pipeline crashed (an input failed, a worker panicked), if it did.
    crashed: std::sync::Mutex<Option<String>>,
}

impl Shared {
    /// Records a crash (the first one's reason is kept).
    fn crash(&self, why: String) {
        let mut c = self.crashed.lock().unwrap_or_else(|p| p.into_inner());
        c.get_or_insert(why);
    }
}

/// Starts inputs and workers; `dlq` is the pipeline's dead letter queue, if enabled.
pub fn start(
    settings: PipelineSettings,
    mut compiled: Compiled,
    queue: Arc<dyn EventQueue>,
    dlq: Option<Arc<DeadLetterQueue>>,
) -> std::io::Result<RunningPipeline> {
    let stopping = Arc::new(StopFlag::default());
    let stopping_passive = Arc::new(StopFlag::default());
    let mut metrics = PipelineMetrics::new(compiled.plugin_list(), settings.workers.max(1));
    metrics.batch = BatchMetrics::new(settings.batch_metrics);
    metrics.output_counters = compiled
        .outputs
        .iter()
        .map(|o| o.output.counters())
        .collect();
    metrics.input_counters = (compiled.inputs.iter())
        .map(|i| i.input.counters())
        .collect();
    let mut lanes = Vec::with_capacity(compiled.outputs.len());
    for (k, out) in compiled.outputs.iter().enumerate() {
        let spec = out.lane.as_ref().or(settings.output_lanes.as_ref());
        if out.lane.is_none()
            && !out.explicit_id
            && matches!(spec, Some(s) if matches!(s.kind, crate::lane::LaneKind::Persisted { .. }))
        {
            return Err(std::io::Error::other(format!(
                "pipeline.output_lanes: persisted gives output {} a lane named after its id, and it has none of its own: add `id => \"...\"` to it (an id that stays the same across edits of the config)",
                out.id
            )));
        }
        lanes.push(match spec {
            Some(spec) => {
                let dir = (settings.lanes_dir.as_ref()).map(|d| d.join(lane_dir_name(&out.id)));
                let lane = Lane::open(
                    k,
                    &out.id,
                    spec.clone(),
                    dir.as_deref(),
                    settings.workers,
                    settings.batch_size,
                    queue.figures().kind == "persisted",
                )
                .map_err(std::io::Error::other)?;
                Some(Arc::new(lane))
            }
            None => None,
        });
    }
    metrics.lanes = lanes.clone();
    if let Some(dir) = &settings.lanes_dir {
        warn_orphan_lanes(dir, &compiled.outputs);
    }
    let metrics = Arc::new(metrics);
    let inputs = std::mem::take(&mut compiled.inputs);
    let shared = Arc::new(Shared {
        settings: settings.clone(),
        queue: Arc::clone(&queue),
        outputs: Arc::new(std::mem::take(&mut compiled.outputs)),
        output_tree: Arc::new(std::mem::take(&mut compiled.output_tree)),
        metrics: Arc::clone(&metrics),
        dlq,
        stopping: Arc::clone(&stopping),
        stopping_passive: Arc::clone(&stopping_passive),
        interrupted: AtomicBool::new(false),
        halted: AtomicBool::new(false),
        given_up: Arc::new(AtomicU64::new(0)),
        lanes,
        output_lineage: settings
            .lineage
            .then(|| crate::lineage::labels(&settings.id, &metrics.plugins.outputs)),
        finished: AtomicBool::new(false),
        crashed: std::sync::Mutex::new(None),
    });

    let mut workers = Vec::with_capacity(settings.workers.max(1));
    let mut periodic_flush = false;
    for w in 0..settings.workers.max(1) {
        let mut chain = compiled.filter_chain_counted(Arc::clone(&metrics), w);
        chain.set_ordered(settings.ordered);
        if settings.lineage {
            chain.set_lineage(&settings.id, &metrics.plugins.filters);
        }
        periodic_flush |= chain.wants_periodic_flush();
        if settings.replay_safe_ids {
            chain.derive_replay_ids(&settings.id);
        }
        let shared = Arc::clone(&shared);
        workers.push(
            std::thread::Builder::new()
                .name(format!("[{}]>worker{w}", settings.id))
                .spawn(move || {
                    let run = std::panic::AssertUnwindSafe(|| worker_loop(&shared, chain, w));
                    if let Err(panic) = std::panic::catch_unwind(run) {
                        let why = panic
                            .downcast_ref::<String>()
                            .map(String::as_str)
                            .or_else(|| panic.downcast_ref::<&str>().copied())
                            .unwrap_or("a panic");
                        tracing::error!(pipeline = %shared.settings.id, worker = w, "worker crashed: {why}");
                        shared.crash(format!("worker {w} crashed: {why}"));
                        shared.halt();
                    }
                })?,
        );
    }

    let mut senders = Vec::new();
    for (lane, n) in
        (shared.lanes.iter().flatten()).flat_map(|l| (0..l.senders()).map(move |n| (l, n)))
    {
        let shared = Arc::clone(&shared);
        let lane = Arc::clone(lane);
        senders.push(
            std::thread::Builder::new()
                .name(format!("[{}]>lane{n}:{}", settings.id, lane.output_id))
                .spawn(move || {
                    lane.run_sender(n, &|events: &[&Event]| {
                        match write_with_retry(&shared, lane.output, events) {
                            Written::Yes | Written::Rejected => Sent::Done,
                            Written::GaveUp => {
                                if !shared.interrupted.load(Ordering::Relaxed) {
                                    // The output closed for good: the pipeline stops.
                                    shared.halt();
                                }
                                Sent::GaveUp
                            }
                        }
                    });
                    tracing::debug!(output = %lane.output_id, "lane sender finished");
                })?,
        );
    }

    if periodic_flush {
        // Wakes idle workers so that they flush too (busy ones flush between batches).
        let shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(format!("[{}]-flusher", settings.id))
            .spawn(move || {
                let tick = Duration::from_millis(100);
                let mut waited = Duration::ZERO;
                while !shared.finished.load(Ordering::Relaxed)
                    && !shared.halted.load(Ordering::Relaxed)
                {
                    std::thread::sleep(tick);
                    waited += tick;
                    if waited >= crate::plugin::PERIODIC_FLUSH {
                        waited = Duration::ZERO;
                        shared.queue.wake_readers();
                    }
                }
            })?;
    }

    let inputs_running = Arc::new(AtomicUsize::new(inputs.len()));
    let active_running = Arc::new(AtomicUsize::new(
        inputs.iter().filter(|i| !i.input.is_passive()).count(),
    ));
    let input_lineage = settings
        .lineage
        .then(|| crate::lineage::labels(&settings.id, &metrics.plugins.inputs));
    for (index, built) in inputs.into_iter().enumerate() {
        let passive = built.input.is_passive();
        let ctx = InputContext::new(
            Arc::clone(&queue),
            built.decoration,
            Arc::clone(if passive {
                &stopping_passive
            } else {
                &stopping
            }),
            Arc::clone(&metrics),
            index,
            settings.batch_size,
        );
        let ctx = match &input_lineage {
            Some(labels) => ctx.with_lineage(Arc::clone(&labels[index])),
            None => ctx,
        };
        let running = Arc::clone(&inputs_running);
        let active = Arc::clone(&active_running);
        let id = built.id;
        let mut input = built.input;
        let shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(format!("[{}]<{}", settings.id, id))
            .spawn(move || {
                if let Err(e) = input.run(&ctx) {
                    tracing::error!(input = %id, error = %e, "input failed");
                    if !ctx.is_stopping() {
                        shared.crash(format!("input {id} failed: {e}"));
                    }
                }
                tracing::debug!(input = %id, "input finished");
                if !passive {
                    active.fetch_sub(1, Ordering::SeqCst);
                }
                running.fetch_sub(1, Ordering::SeqCst);
            })?;
    }

    Ok(RunningPipeline {
        settings,
        shared: Arc::clone(&shared),
        stopping,
        stopping_passive,
        inputs_running,
        active_running,
        queue,
        workers,
        senders,
        outputs: Arc::clone(&shared.outputs),
        metrics,
    })
}

impl Shared {
    /// The pipeline stops delivering: inputs stop (`pipeline` inputs leave the bus, so that
    /// senders see no receiver instead of one that refuses), and the queue closes without
    /// draining, so that no worker waits for batches that will not be delivered (a persisted
    /// queue keeps them, even with `queue.drain`).
    fn halt(&self) {
        if !self.halted.swap(true, Ordering::SeqCst) {
            self.stopping.set();
            self.stopping_passive.set();
            self.queue.close_without_drain();
            for lane in self.lanes.iter().flatten() {
                lane.stop();
            }
        }
    }
}

fn worker_loop(shared: &Shared, mut chain: FilterChain, worker: usize) {
    let s = &shared.settings;
    let counters = &shared.metrics.workers[worker];
    let activity = &counters.activity;
    activity.set_thread();
    // Without filters an event's memory is all its input's: hand it back to be freed there.
    // Filters (grok, geoip...) allocate most of an event in this thread: free it here.
    let recycle = chain.is_empty();
    let mut sampler = BatchSampler::new(shared.metrics.batch.mode);
    let periodic = chain.wants_periodic_flush();
    let mut last_flush = Instant::now();
    while !shared.halted.load(Ordering::Relaxed) {
        if periodic && last_flush.elapsed() >= crate::plugin::PERIODIC_FLUSH {
            last_flush = Instant::now();
            let released = chain.periodic_flush();
            deliver_released(shared, &mut chain, released, worker);
        }
        let Some(batch) = shared.queue.read_batch(s.batch_size, s.batch_delay) else {
            break;
        };
        if let Some(seq) = batch.poison {
            set_aside(shared, &batch.events, seq);
            shared.queue.ack(batch.token);
            continue;
        }
        if batch.events.is_empty() {
            // Woken for the periodic flush (nothing was read, nothing to ack).
            continue;
        }
        if sampler.sample() {
            shared.metrics.batch.record(&batch.events);
        }
        let started = Instant::now();
        let since = started.duration_since(shared.metrics.started);
        activity.set(Doing::Filters, since, batch.events.len() as u64);
        let mut events = batch.events;
        chain.run(&mut events);
        if chain.cut_short() {
            // A stop cut a filter short: some events did not go through it. None of them may
            // reach an output as if filtered, and the batch is not acked (a persisted queue
            // replays it at the next start; a memory queue counts it lost).
            chain.discard_dead_letters();
            let n = events.len() as u64;
            tracing::warn!(pipeline = %s.id, events = n, "a filter was cut short by the stop: the batch is not delivered and not acknowledged");
            shared.given_up.fetch_add(n, Ordering::Relaxed);
            shared.halt();
            activity.set(Doing::Idle, since, 0);
            break;
        }
        chain.send_dead_letters(shared.dlq.as_deref());
        events.retain(|e| !e.is_cancelled());
        let n = events.len() as u64;
        // A batch the filters grew far past the batch size (split, clone) goes out in chunks.
        let chunk = if events.len() > s.batch_size.saturating_mul(s.output_chunking_factor) {
            s.batch_size
        } else {
            events.len().max(1)
        };
        if shared.lanes.iter().any(Option::is_some) {
            // Lanes take their shares of the batch, which they may hold after this worker
            // is done with it: the batch is acked when the last share is done.
            let ack = Arc::new(PendingAck::new(
                Some(batch.token),
                Arc::clone(&shared.queue),
                n,
                Arc::clone(&shared.given_up),
            ));
            let events = Arc::new(events);
            if deliver_laned(shared, &events, chunk, worker, &ack) {
                ack.done();
            } else {
                ack.fail();
                shared.halt();
            }
        } else {
            if events
                .chunks(chunk)
                .all(|part| deliver(shared, part, worker))
            {
                shared.queue.ack(batch.token);
            } else {
                // Not acked: a persisted queue keeps the batch for the next start.
                shared.given_up.fetch_add(n, Ordering::Relaxed);
                shared.halt();
            }
            if recycle {
                shared.queue.recycle(events);
            }
        }
        activity.set(Doing::Idle, since, 0);
        counters.record_batch(n, n, started.elapsed());
    }
    let rest = chain.flush();
    deliver_released(shared, &mut chain, rest, worker);
}

/// An event that was being processed at two crashes of the process (see
/// `sluice_queue::inflight`): into the dead letter queue when the pipeline has one, else
/// logged with its sequence and skipped (counted in the queue's figures).
fn set_aside(shared: &Shared, events: &[Event], seq: u64) {
    const REASON: &str = "the process crashed twice while processing this event; set aside so that it does not crash every start";
    let written = match &shared.dlq {
        Some(dlq) => {
            let items: Vec<(&Event, &str)> = events.iter().map(|e| (e, REASON)).collect();
            dlq.write("queue", "poison", &items)
        }
        None => 0,
    };
    if written > 0 {
        tracing::error!(pipeline = %shared.settings.id, sequence = seq, "event {seq} crashed the process twice: written to the dead letter queue instead of processed");
    } else {
        let text = events
            .first()
            .map(sluice_event::json::event_to_string)
            .unwrap_or_default();
        let shown: String = text.chars().take(1000).collect();
        tracing::error!(pipeline = %shared.settings.id, sequence = seq, "event {seq} crashed the process twice: skipped (no dead letter queue): {shown}");
    }
}

/// Delivers events filters released (at a periodic or the final flush; already through the
/// filters that follow theirs) to the outputs. They come from no queue: nothing to ack.
fn deliver_released(
    shared: &Shared,
    chain: &mut FilterChain,
    mut events: Vec<Event>,
    worker: usize,
) {
    if events.is_empty() || shared.halted.load(Ordering::Relaxed) {
        return;
    }
    let started = Instant::now();
    chain.send_dead_letters(shared.dlq.as_deref());
    events.retain(|e| !e.is_cancelled());
    let n = events.len() as u64;
    if shared.lanes.iter().any(Option::is_some) {
        let ack = Arc::new(PendingAck::new(
            None,
            Arc::clone(&shared.queue),
            n,
            Arc::clone(&shared.given_up),
        ));
        let events = Arc::new(events);
        if deliver_laned(shared, &events, events.len().max(1), worker, &ack) {
            ack.done();
        } else {
            ack.fail();
            shared.halt();
        }
    } else if !deliver(shared, &events, worker) {
        shared.given_up.fetch_add(n, Ordering::Relaxed);
        shared.halt();
    }
    shared.metrics.workers[worker].record_batch(n, n, started.elapsed());
}

/// Routes a batch to the outputs and writes each output's share. The per-output lists are
/// allocated once per batch. False when an output gave the batch up (it must not be acked).
fn deliver(shared: &Shared, events: &[Event], worker: usize) -> bool {
    let mut per_output: Vec<Vec<&Event>> = vec![Vec::new(); shared.outputs.len()];
    route(&shared.output_tree, events, &mut per_output);
    offer_to_taps(shared, &per_output);
    let w = &shared.metrics.workers[worker];
    for (k, list) in per_output.iter().enumerate() {
        if !list.is_empty() && !write_output(shared, w, k, list, list.len()) {
            return false;
        }
    }
    true
}

/// Each output's share of a batch, to its tap.
fn offer_to_taps(shared: &Shared, per_output: &[Vec<&Event>]) {
    for (tap, list) in shared.metrics.taps.outputs.iter().zip(per_output) {
        tap.offer_refs(list);
    }
}

/// Writes output `k`'s share of a batch in chunks of `chunk` events, counting it in worker
/// `w`'s figures. False when the output gave the batch up.
fn write_output(
    shared: &Shared,
    w: &crate::metrics::WorkerMetrics,
    k: usize,
    list: &[&Event],
    chunk: usize,
) -> bool {
    let started = Instant::now();
    let n = list.len() as u64;
    w.activity.set(
        Doing::Output(k),
        started.duration_since(shared.metrics.started),
        n,
    );
    let mut written = Written::Yes;
    for part in list.chunks(chunk.max(1)) {
        match write_with_retry(shared, k, part) {
            Written::GaveUp => {
                written = Written::GaveUp;
                break;
            }
            Written::Rejected => written = Written::Rejected,
            Written::Yes => {}
        }
    }
    w.outputs[k].record(
        n,
        if written == Written::Yes { n } else { 0 },
        started.elapsed(),
    );
    written != Written::GaveUp
}

/// [`deliver`] for a pipeline with lanes: outputs without a lane are written here (in
/// chunks of `chunk`), each laned output's share goes to its lane. False when an output gave
/// the batch up or a lane could not take its share (the batch must not be acked).
fn deliver_laned(
    shared: &Shared,
    events: &Arc<Vec<Event>>,
    chunk: usize,
    worker: usize,
    ack: &Arc<PendingAck>,
) -> bool {
    for lane in shared.lanes.iter().flatten() {
        lane.free_spent(worker);
    }
    let mut per_output: Vec<Vec<&Event>> = vec![Vec::new(); shared.outputs.len()];
    route(&shared.output_tree, events, &mut per_output);
    offer_to_taps(shared, &per_output);
    let w = &shared.metrics.workers[worker];
    let base = events.as_ptr() as usize;
    let size = std::mem::size_of::<Event>().max(1);
    for (k, list) in per_output.iter().enumerate() {
        if list.is_empty() {
            continue;
        }
        if let Some(lane) = &shared.lanes[k] {
            let picks: Vec<u32> = list
                .iter()
                .map(|e| ((*e as *const Event as usize - base) / size) as u32)
                .collect();
            if !lane.offer(worker, events, picks, ack) {
                return false;
            }
            continue;
        }
        if !write_output(shared, w, k, list, chunk) {
            return false;
        }
    }
    true
}

/// Lane directories under `dir` that no output of this pipeline uses (an output renamed or
/// removed, or its lane taken away) may hold events nobody will deliver: each is said once.
fn warn_orphan_lanes(dir: &std::path::Path, outputs: &[BuiltOutput]) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let used: Vec<String> = outputs.iter().map(|o| lane_dir_name(&o.id)).collect();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if e.path().is_dir() && !used.contains(&name) {
            tracing::warn!(lane = %e.path().display(), "this lane directory belongs to no output of the pipeline (an output renamed or removed?); events it holds are not delivered: give the output its id back, or look with `sluice queue inspect {}`", e.path().display());
        }
    }
}

/// A lane's directory name: the output's id with anything but letters, digits, `-`, `_` and
/// `.` replaced by `_`.
fn lane_dir_name(id: &str) -> String {
    let name: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.starts_with('.') {
        format!("_{name}")
    } else {
        name
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    Yes,
    /// Rejected for good: logged, and acked like a written batch.
    Rejected,
    /// Not written, and not to be acked.
    GaveUp,
}

/// Writes a batch, retrying with back-off while the output says it may succeed later, until
/// a stop signal. Repeated failures are logged once, then a count a minute.
fn write_with_retry(shared: &Shared, k: usize, events: &[&Event]) -> Written {
    let out = &shared.outputs[k];
    let mut backoff = Duration::from_millis(50);
    let mut log: Option<sluice_queue::repeated::Repeated> = None;
    let mut ctx = WriteContext::new(&shared.interrupted);
    if let Some(dlq) = &shared.dlq {
        ctx = ctx.with_dead_letter_queue(dlq, &out.name, &out.id);
    }
    if let Some(labels) = &shared.output_lineage {
        ctx = ctx.with_lineage(&labels[k]);
    }
    loop {
        let e = match out.output.write(events, &ctx) {
            Ok(()) => {
                if let Some(log) = &mut log {
                    log.succeeded();
                }
                return Written::Yes;
            }
            Err(e) => e,
        };
        match e.failure {
            Failure::Retry if shared.interrupted.load(Ordering::Relaxed) => {
                tracing::warn!(pipeline = %shared.settings.id, output = %out.id, error = %e.message, events = events.len(), "output failing at shutdown: giving up the batch (not acknowledged)");
                return Written::GaveUp;
            }
            Failure::Retry => {
                log.get_or_insert_with(|| {
                    sluice_queue::repeated::Repeated::new(format!("output {}", out.id))
                })
                .failed(&e.message, "retrying the batch with back-off");
                ctx.sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
            Failure::Reject => {
                tracing::error!(pipeline = %shared.settings.id, output = %out.id, error = %e.message, events = events.len(), "output rejected the batch permanently");
                return Written::Rejected;
            }
            Failure::Closed => {
                if !shared.halted.load(Ordering::Relaxed) {
                    tracing::warn!(pipeline = %shared.settings.id, output = %out.id, "{}: stopping the pipeline", e.message);
                }
                return Written::GaveUp;
            }
        }
    }
}

/// A handle on a running pipeline for other threads, usable while
/// [`RunningPipeline::finish`] runs: to interrupt it (a stop signal) and to tell what its
/// shutdown is waiting for.
#[derive(Clone)]
pub struct PipelineWatch {
    shared: Arc<Shared>,
}

impl PipelineWatch {
    /// A stop signal: inputs stop, and an output that fails gives its batch up instead of
    /// retrying it (see the module docs).
    pub fn interrupt(&self) {
        self.shared.interrupted.store(true, Ordering::SeqCst);
        self.shared.stopping.set();
        for lane in self.shared.lanes.iter().flatten() {
            lane.stop();
        }
    }

    pub fn id(&self) -> &str {
        &self.shared.settings.id
    }

    pub fn finished(&self) -> bool {
        self.shared.finished.load(Ordering::SeqCst)
    }

    /// Whether stopping now loses nothing: a persisted queue keeps unacked batches.
    pub fn persisted(&self) -> bool {
        self.shared.queue.figures().kind == "persisted"
    }

    pub fn unsafe_shutdown(&self) -> bool {
        self.shared.settings.unsafe_shutdown
    }

    /// Events the workers hold and the queue holds (unread).
    pub fn in_flight(&self) -> (u64, u64) {
        let busy = (self.shared.metrics.workers.iter())
            .map(|w| w.activity.get())
            .filter(|(d, _, _)| *d != Doing::Idle)
            .map(|(_, _, n)| n)
            .sum();
        (busy, self.shared.queue.figures().unread_events)
    }

    /// One line: the busy workers and the plugin each one is in, for how long.
    pub fn report(&self) -> String {
        let m = &self.shared.metrics;
        let now = m.started.elapsed();
        let busy: Vec<String> = (m.workers.iter().enumerate())
            .filter_map(|(i, w)| {
                let (doing, since, n) = w.activity.get();
                let secs = now.saturating_sub(since).as_secs();
                match doing {
                    Doing::Idle => None,
                    Doing::Filters => Some(format!(
                        "worker {i} in the filters for {secs} s ({n} events)"
                    )),
                    Doing::Output(k) => {
                        let p = &m.plugins.outputs[k];
                        Some(format!(
                            "worker {i} in output {} (id {}) for {secs} s ({n} events)",
                            p.name, p.id
                        ))
                    }
                }
            })
            .collect();
        let (held, queued) = self.in_flight();
        format!(
            "pipeline {}: {held} event(s) in workers, {queued} queued; {}",
            self.id(),
            if busy.is_empty() {
                "workers are draining the queue".to_owned()
            } else {
                busy.join("; ")
            }
        )
    }
}

impl RunningPipeline {
    pub fn id(&self) -> &str {
        &self.settings.id
    }

    pub fn metrics(&self) -> &Arc<PipelineMetrics> {
        &self.metrics
    }

    pub fn queue(&self) -> &Arc<dyn EventQueue> {
        &self.queue
    }

    /// The dead letter queue, when enabled.
    pub fn dead_letter_queue(&self) -> Option<&Arc<DeadLetterQueue>> {
        self.shared.dlq.as_ref()
    }

    /// True once every input has returned.
    pub fn inputs_finished(&self) -> bool {
        self.inputs_running.load(Ordering::SeqCst) == 0
    }

    /// True once every active input (every input but `pipeline` inputs) has returned.
    pub fn active_inputs_finished(&self) -> bool {
        self.active_running.load(Ordering::SeqCst) == 0
    }

    /// Asks active inputs to stop; they finish their current batch. `pipeline` inputs keep
    /// receiving until [`RunningPipeline::finish`], so upstream pipelines can drain into them.
    pub fn stop_inputs(&self) {
        self.stopping.set();
    }

    /// True once an output closed for good or a batch was given up: the pipeline stops.
    /// Why the pipeline crashed (an input failed, a worker panicked), if it did.
    pub fn crashed(&self) -> Option<String> {
        self.shared
            .crashed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn halted(&self) -> bool {
        self.shared.halted.load(Ordering::Relaxed)
    }

    pub fn watch(&self) -> PipelineWatch {
        PipelineWatch {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Completes shutdown: waits up to `grace` for inputs to return (an input blocked reading
    /// a source that never ends, like a terminal, is left behind), then closes the queue, lets
    /// the workers drain it and closes the outputs. Returns how many events were lost (a memory
    /// queue's batches given up, and what it still held, when the pipeline halted).
    #[must_use]
    pub fn finish(self, grace: Duration) -> u64 {
        self.stop_inputs();
        self.stopping_passive.set();
        // A halted pipeline delivers nothing more: no reason to wait for its inputs.
        let deadline = Instant::now() + if self.halted() { Duration::ZERO } else { grace };
        while !self.inputs_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if !self.inputs_finished() {
            tracing::debug!(pipeline = %self.settings.id, "closing the queue with inputs still blocked on their source");
        }
        // (A halted pipeline's queue is closed already, without draining.)
        self.queue.close();
        for w in self.workers {
            if w.join().is_err() {
                tracing::error!(pipeline = %self.settings.id, "a worker panicked");
            }
        }
        // Lanes: after a stop signal they keep what they hold; else they empty first.
        for lane in self.shared.lanes.iter().flatten() {
            if self.shared.interrupted.load(Ordering::SeqCst) {
                lane.stop();
            } else {
                lane.close();
            }
        }
        for s in self.senders {
            if s.join().is_err() {
                tracing::error!(pipeline = %self.settings.id, "a lane sender panicked");
            }
        }
        let lane_lost: u64 = (self.shared.lanes.iter().flatten())
            .map(|lane| lane.shutdown())
            .sum();
        for out in self.outputs.iter() {
            if let Err(e) = out.output.close() {
                tracing::error!(output = %out.id, error = %e, "closing output failed");
            }
        }
        let figures = self.queue.figures();
        let given_up = self.shared.given_up.load(Ordering::Relaxed);
        let mut lost = 0;
        let halted = self.shared.halted.load(Ordering::Relaxed);
        if figures.kind == "memory" && (halted || given_up > 0) {
            lost = given_up + if halted { figures.unread_events } else { 0 };
            if lost > 0 {
                tracing::error!(pipeline = %self.settings.id, events = lost, "{lost} event(s) were not delivered and are lost (memory queue: {given_up} given up by a failing output, {} left in the queue); a persisted queue (queue.type: persisted) keeps them", figures.unread_events);
            }
        }
        self.queue.shutdown();
        if let Some(dlq) = &self.shared.dlq {
            dlq.close();
        }
        self.shared.finished.store(true, Ordering::SeqCst);
        lost + lane_lost
    }
}
