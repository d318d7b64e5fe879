//! A running pipeline: one thread per input, `workers` worker threads, one shared queue.
//!
//! Worker loop: read a batch (up to `batch_size`, waiting at most `batch_delay` to fill) →
//! filters → drop cancelled events → route to outputs → write each output's share (retrying
//! with back-off on errors) → ack. Shutdown: inputs are told to stop (or finish on their own),
//! the queue is closed, workers drain it, filters are flushed, outputs closed.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sluice_event::Event;

use crate::graph::{route, Compiled, FilterChain, Node};
use crate::metrics::PipelineMetrics;
use crate::plugin::{InputContext, OutputError};
use crate::queue::EventQueue;
use crate::registry::BuiltOutput;

#[derive(Debug, Clone)]
pub struct PipelineSettings {
    pub id: String,
    pub workers: usize,
    pub batch_size: usize,
    pub batch_delay: Duration,
}

impl Default for PipelineSettings {
    fn default() -> Self {
        PipelineSettings {
            id: "main".to_owned(),
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            batch_size: 125,
            batch_delay: Duration::from_millis(50),
        }
    }
}

pub struct RunningPipeline {
    settings: PipelineSettings,
    /// Tells active inputs (sources) to stop.
    stopping: Arc<AtomicBool>,
    /// Tells passive inputs (`pipeline` inputs) to stop; set only when the pipeline finishes.
    stopping_passive: Arc<AtomicBool>,
    inputs_running: Arc<AtomicUsize>,
    active_running: Arc<AtomicUsize>,
    queue: Arc<dyn EventQueue>,
    workers: Vec<JoinHandle<()>>,
    outputs: Arc<Vec<BuiltOutput>>,
    metrics: Arc<PipelineMetrics>,
}

struct Shared {
    settings: PipelineSettings,
    queue: Arc<dyn EventQueue>,
    outputs: Arc<Vec<BuiltOutput>>,
    output_tree: Arc<Vec<Node>>,
    metrics: Arc<PipelineMetrics>,
}

/// Starts inputs and workers.
pub fn start(
    settings: PipelineSettings,
    mut compiled: Compiled,
    queue: Arc<dyn EventQueue>,
) -> std::io::Result<RunningPipeline> {
    let stopping = Arc::new(AtomicBool::new(false));
    let stopping_passive = Arc::new(AtomicBool::new(false));
    let metrics = Arc::new(PipelineMetrics::new(
        compiled.plugin_list(),
        settings.workers.max(1),
    ));
    let inputs = std::mem::take(&mut compiled.inputs);
    let shared = Arc::new(Shared {
        settings: settings.clone(),
        queue: Arc::clone(&queue),
        outputs: Arc::new(std::mem::take(&mut compiled.outputs)),
        output_tree: Arc::new(std::mem::take(&mut compiled.output_tree)),
        metrics: Arc::clone(&metrics),
    });

    let mut workers = Vec::with_capacity(settings.workers.max(1));
    for w in 0..settings.workers.max(1) {
        let chain = compiled.filter_chain_counted(Arc::clone(&metrics), w);
        let shared = Arc::clone(&shared);
        workers.push(
            std::thread::Builder::new()
                .name(format!("[{}]>worker{w}", settings.id))
                .spawn(move || worker_loop(&shared, chain, w))?,
        );
    }

    let inputs_running = Arc::new(AtomicUsize::new(inputs.len()));
    let active_running = Arc::new(AtomicUsize::new(
        inputs.iter().filter(|i| !i.input.is_passive()).count(),
    ));
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
        let running = Arc::clone(&inputs_running);
        let active = Arc::clone(&active_running);
        let id = built.id;
        let mut input = built.input;
        std::thread::Builder::new()
            .name(format!("[{}]<{}", settings.id, id))
            .spawn(move || {
                if let Err(e) = input.run(&ctx) {
                    tracing::error!(input = %id, error = %e, "input failed");
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
        stopping,
        stopping_passive,
        inputs_running,
        active_running,
        queue,
        workers,
        outputs: Arc::clone(&shared.outputs),
        metrics,
    })
}

fn worker_loop(shared: &Shared, mut chain: FilterChain, worker: usize) {
    let s = &shared.settings;
    let counters = &shared.metrics.workers[worker];
    // Without filters an event's memory is all its input's: hand it back to be freed there.
    // Filters (grok, geoip...) allocate most of an event in this thread: free it here.
    let recycle = chain.is_empty();
    while let Some(batch) = shared.queue.read_batch(s.batch_size, s.batch_delay) {
        let started = Instant::now();
        let mut events = batch.events;
        chain.run(&mut events);
        events.retain(|e| !e.is_cancelled());
        deliver(shared, &events, worker);
        shared.queue.ack(batch.token);
        let n = events.len() as u64;
        if recycle {
            shared.queue.recycle(events);
        }
        counters.record_batch(n, n, started.elapsed());
    }
    let mut rest = chain.flush();
    if !rest.is_empty() {
        let started = Instant::now();
        chain.run(&mut rest);
        rest.retain(|e| !e.is_cancelled());
        deliver(shared, &rest, worker);
        let n = rest.len() as u64;
        counters.record_batch(n, n, started.elapsed());
    }
}

/// Routes a batch to the outputs and writes each output's share. The per-output lists are
/// allocated once per batch.
fn deliver(shared: &Shared, events: &[Event], worker: usize) {
    let mut per_output: Vec<Vec<&Event>> = vec![Vec::new(); shared.outputs.len()];
    route(&shared.output_tree, events, &mut per_output);
    let counters = &shared.metrics.workers[worker].outputs;
    for ((out, list), c) in shared.outputs.iter().zip(&per_output).zip(counters.iter()) {
        if !list.is_empty() {
            let started = Instant::now();
            let written = write_with_retry(out, list);
            let n = list.len() as u64;
            c.record(n, if written { n } else { 0 }, started.elapsed());
        }
    }
}

/// Writes a batch, retrying while the output says it may succeed later. False when the output
/// rejected it permanently.
fn write_with_retry(out: &BuiltOutput, events: &[&Event]) -> bool {
    let mut backoff = Duration::from_millis(50);
    loop {
        match out.output.write(events) {
            Ok(()) => return true,
            Err(OutputError {
                message,
                retryable: true,
            }) => {
                tracing::warn!(output = %out.id, error = %message, retry_in = ?backoff, "output failed; retrying the batch");
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
            Err(OutputError {
                message,
                retryable: false,
            }) => {
                tracing::error!(output = %out.id, error = %message, events = events.len(), "output rejected the batch permanently");
                return false;
            }
        }
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
        self.stopping.store(true, Ordering::SeqCst);
    }

    /// Completes shutdown: waits up to `grace` for inputs to return (an input blocked reading
    /// a source that never ends, like a terminal, is left behind), then closes the queue, lets
    /// the workers drain it and closes the outputs.
    pub fn finish(self, grace: Duration) {
        self.stop_inputs();
        self.stopping_passive.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + grace;
        while !self.inputs_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if !self.inputs_finished() {
            tracing::debug!(pipeline = %self.settings.id, "closing the queue with inputs still blocked on their source");
        }
        self.queue.close();
        for w in self.workers {
            if w.join().is_err() {
                tracing::error!(pipeline = %self.settings.id, "a worker panicked");
            }
        }
        for out in self.outputs.iter() {
            if let Err(e) = out.output.close() {
                tracing::error!(output = %out.id, error = %e, "closing output failed");
            }
        }
        self.queue.shutdown();
    }
}
