//! The contracts between the runtime and plugins.
//!
//! - [`Input`]: runs on its own thread until its source ends or [`InputContext::is_stopping`];
//!   pushes whole batches through [`InputContext::push`], which blocks while the queue is full.
//! - [`Filter`]: one instance per worker (so no locks on the hot path); sees one event at a time
//!   (or, when batched, a whole batch in one call) and says whether it "matched", which is when the common options (`add_field`, `add_tag`,
//!   `remove_field`, `remove_tag`) apply. New events go into `emit` and flow through the rest of
//!   the filters. A filter never panics on bad data: it tags the event.
//! - [`Output`]: shared by all workers; gets every event of a batch that reached it and returns
//!   only when they are handed on. Its error says what the worker does ([`Failure`]): retry
//!   the batch with back-off, give it up as rejected, or stop the pipeline.
//! - [`Codec`]: bytes to events and back; one instance per input/output thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sluice_event::{Event, FieldRef, Template, Value};

use crate::dead_letter::DeadLetterQueue;
use crate::queue::EventQueue;

/// How often filters that ask for it are flushed (Logstash's flusher runs every 5 s).
pub const PERIODIC_FLUSH: std::time::Duration = std::time::Duration::from_secs(5);

pub trait Filter: Send {
    /// Processes one event. Returns `true` when the filter did its job on it (Logstash's
    /// `filter_matched`), `false` when it failed or did not apply.
    fn filter(&mut self, event: &mut Event, emit: &mut Vec<Event>) -> bool;

    /// A fresh instance for another worker.
    fn clone_box(&self) -> Box<dyn Filter>;

    /// True when the common options (`add_field`, `add_tag`, ...) apply to the events the
    /// filter makes and not to the one it was given, as Logstash's clone filter matches only
    /// its copies.
    fn matches_new_events_only(&self) -> bool {
        false
    }

    /// True for filters that work on a whole batch at once: the chain then calls
    /// [`Filter::filter_batch`] instead of [`Filter::filter`] for each event.
    fn is_batched(&self) -> bool {
        false
    }

    /// Processes every event of `events` that is not cancelled, in one call: pushes to
    /// `matched` one result per event (as [`Filter::filter`]'s; false for a cancelled one) and
    /// to `made` the new events, each with the index of the event that made it, in order.
    fn filter_batch(
        &mut self,
        events: &mut [Event],
        matched: &mut Vec<bool>,
        made: &mut Vec<(usize, Event)>,
    ) {
        let mut emit = Vec::new();
        for (i, e) in events.iter_mut().enumerate() {
            if e.is_cancelled() {
                matched.push(false);
                continue;
            }
            matched.push(self.filter(e, &mut emit));
            made.extend(emit.drain(..).map(|n| (i, n)));
        }
    }

    /// False when the common options leave the events a filter makes alone (Logstash's ruby
    /// filter yields them without `filter_matched`).
    fn decorates_new_events(&self) -> bool {
        true
    }

    /// Called when the pipeline shuts down, for filters that hold events back.
    fn flush(&mut self, _emit: &mut Vec<Event>) {}

    /// True for filters that release events on a timer (Logstash's periodic flush: metrics,
    /// aggregate timeouts): each worker then calls [`Filter::flush_periodic`] on its
    /// instance every [`PERIODIC_FLUSH`], busy or idle.
    fn wants_periodic_flush(&self) -> bool {
        false
    }

    /// The periodic flush: the events released go through the filters after this one (with
    /// its `add_field`/`add_tag` applied) and on to the outputs.
    fn flush_periodic(&mut self, _emit: &mut Vec<Event>) {}

    /// True (once) when a stop cut the last call short, so that some events of the batch did
    /// not go through this filter (Ruby code given up on at a stop). The worker then sends
    /// none of the batch to the outputs and does not ack it: a persisted queue replays it at
    /// the next start, and events that skipped a filter are never delivered as if filtered.
    fn cut_short(&mut self) -> bool {
        false
    }

    /// Moves the events this filter set aside for the dead letter queue (each with why) into
    /// `out`. A filter asked to (`dlq_on_failure`) takes a failed event out of the batch:
    /// it keeps the event and cancels what it leaves in its place. The worker collects them
    /// after each batch and writes them to the DLQ at once.
    fn take_dead_letters(&mut self, _out: &mut Vec<(Event, String)>) {}
}

/// What became of a batch an output could not write, and so what the worker does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Trying the same batch again can succeed (a destination down, a full disk): the worker
    /// retries with back-off. After a stop signal it gives up instead, leaving the batch
    /// unacked (a persisted queue replays it at the next start).
    Retry,
    /// The batch can never be written: it is logged and counted, then acked.
    Reject,
    /// The destination is gone for good (standard output closed): the pipeline stops, and the
    /// batch stays unacked.
    Closed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputError {
    pub message: String,
    pub failure: Failure,
}

impl OutputError {
    pub fn retryable(message: impl Into<String>) -> Self {
        OutputError {
            message: message.into(),
            failure: Failure::Retry,
        }
    }

    pub fn rejected(message: impl Into<String>) -> Self {
        OutputError {
            message: message.into(),
            failure: Failure::Reject,
        }
    }

    pub fn closed(message: impl Into<String>) -> Self {
        OutputError {
            message: message.into(),
            failure: Failure::Closed,
        }
    }
}

impl std::fmt::Display for OutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What a worker tells an output along with a batch: whether a stop signal came (an output
/// that retries on its own, item by item, gives up then and returns [`Failure::Retry`]), and
/// the pipeline's dead letter queue, when it has one.
pub struct WriteContext<'a> {
    interrupted: &'a AtomicBool,
    /// The DLQ, and the plugin's name and id for its entries.
    dead_letters: Option<(&'a DeadLetterQueue, &'a str, &'a str)>,
    /// `pipeline/output`, when `pipeline.lineage` is on.
    lineage: Option<&'a str>,
}

impl<'a> WriteContext<'a> {
    pub fn new(interrupted: &'a AtomicBool) -> Self {
        WriteContext {
            interrupted,
            dead_letters: None,
            lineage: None,
        }
    }

    /// With `pipeline.lineage`: this output's `pipeline/id`.
    pub fn with_lineage(mut self, label: &'a str) -> Self {
        self.lineage = Some(label);
        self
    }

    /// This output's `pipeline/id` when the pipeline keeps lineage: an output that passes
    /// events on (the `pipeline` output) adds it to each copy's `[@metadata][lineage]`.
    pub fn lineage(&self) -> Option<&str> {
        self.lineage
    }

    /// With the pipeline's dead letter queue, for output `plugin_name` of id `plugin_id`.
    pub fn with_dead_letter_queue(
        mut self,
        dlq: &'a DeadLetterQueue,
        plugin_name: &'a str,
        plugin_id: &'a str,
    ) -> Self {
        self.dead_letters = Some((dlq, plugin_name, plugin_id));
        self
    }

    /// Whether the pipeline has a dead letter queue (`dead_letter_queue.enable`).
    pub fn dead_letter_queue_enabled(&self) -> bool {
        self.dead_letters.is_some()
    }

    /// Puts events that can never be delivered in the dead letter queue, each with its
    /// reason. Returns how many it took (0 without a DLQ; see [`DeadLetterQueue::write`]).
    pub fn dead_letter(&self, items: &[(&Event, &str)]) -> usize {
        match self.dead_letters {
            Some((dlq, name, id)) if !items.is_empty() => dlq.write(name, id, items),
            _ => 0,
        }
    }

    /// A stop signal came: the batch is to be given up rather than retried.
    pub fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::Relaxed)
    }

    /// Sleeps `d` in short slices; `false` (at once) when a stop signal came meanwhile.
    pub fn sleep(&self, d: std::time::Duration) -> bool {
        sleep_unless(d, || self.interrupted())
    }
}

/// Sleeps `d` in short slices, returning early (with `false`) once `stop()` says so: the
/// wait of every retry loop, so that a stop signal is seen at once.
pub fn sleep_unless(d: std::time::Duration, stop: impl Fn() -> bool) -> bool {
    let end = std::time::Instant::now() + d;
    loop {
        if stop() {
            return false;
        }
        let now = std::time::Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(std::time::Duration::from_millis(20)));
    }
}

pub trait Output: Send + Sync {
    /// Hands on a batch's events. Called concurrently by several workers.
    fn write(&self, events: &[&Event], ctx: &WriteContext) -> Result<(), OutputError>;

    /// Counters of its own for the monitoring API (an Elasticsearch output's `bulk_requests`
    /// and `documents`), shown under the output's entry.
    fn counters(&self) -> Option<Arc<crate::metrics::NamedCounters>> {
        None
    }

    /// Flushes and releases resources at shutdown.
    fn close(&self) -> Result<(), OutputError> {
        Ok(())
    }
}

pub trait Codec: Send {
    /// Decodes a chunk of bytes; incomplete trailing data is kept for the next call.
    fn decode(&mut self, data: &[u8], out: &mut Vec<Event>);

    /// Decodes whatever is buffered, at end of input.
    fn flush(&mut self, _out: &mut Vec<Event>) {}

    /// Decodes one line that a line-oriented input (the file input) already split off,
    /// without its delimiter: Logstash hands such inputs' codecs one line per call. By
    /// default the line is decoded and flushed at once (one event per line); codecs that
    /// join lines (multiline) keep it until the record is complete.
    fn decode_line(&mut self, line: &[u8], out: &mut Vec<Event>) {
        self.decode(line, out);
        self.flush(out);
    }

    /// How long a codec holds a partial record before [`Codec::flush_idle`] gives it out
    /// (multiline's `auto_flush_interval`); `None` when it never does on time alone.
    fn idle_flush_interval(&self) -> Option<std::time::Duration> {
        None
    }

    /// Gives out a record held since more than [`Codec::idle_flush_interval`] without new
    /// input. Inputs call it now and then (about every half interval) per stream.
    fn flush_idle(&mut self, _now: std::time::Instant, _out: &mut Vec<Event>) {}

    /// Appends the encoded event to `out`.
    fn encode(&mut self, event: &Event, out: &mut Vec<u8>);

    /// Bytes held waiting for the rest of an event (a line without its delimiter yet): a
    /// stream input closes a connection that makes this grow past its limit.
    fn pending_bytes(&self) -> usize {
        0
    }

    /// Counters the codec keeps (the netflow codec's unknown templates), shared by its
    /// clones; an input shows them with its own in `/_node/stats`.
    fn counters(&self) -> Option<Arc<crate::metrics::NamedCounters>> {
        None
    }

    fn clone_box(&self) -> Box<dyn Codec>;
}

pub trait Input: Send {
    /// Produces events until the source is exhausted or the pipeline stops.
    fn run(&mut self, ctx: &InputContext) -> Result<(), String>;

    /// A passive input (the `pipeline` input) only receives what other pipelines send; it
    /// never ends on its own. A pipeline whose active inputs have all finished is done once
    /// the pipelines sending to it are done.
    fn is_passive(&self) -> bool {
        false
    }

    /// Counters of its own for the monitoring API (a network input's connections), shown
    /// under the input's entry. Asked once, before [`Input::run`].
    fn counters(&self) -> Option<Arc<crate::metrics::NamedCounters>> {
        None
    }
}

/// The common options every input has (`type`, `tags`, `add_field`), applied to every event
/// it produces before the event is queued.
#[derive(Debug, Clone, Default)]
pub struct InputDecoration {
    pub type_name: Option<String>,
    pub tags: Vec<String>,
    pub add_field: Vec<(Template, Template)>,
}

impl InputDecoration {
    pub fn is_empty(&self) -> bool {
        self.type_name.is_none() && self.tags.is_empty() && self.add_field.is_empty()
    }

    pub fn apply(&self, event: &mut Event) {
        if let Some(t) = &self.type_name {
            if event.get_field("type").is_none() {
                event.set_field("type", Value::String(t.as_str().into()));
            }
        }
        // As Logstash's decorators: fields first, then tags, each appended to what is there.
        add_fields(event, &self.add_field);
        for tag in &self.tags {
            event.append_tag(tag);
        }
    }
}

/// `add_field` as Logstash's decorators apply it, for inputs and filters alike: each value
/// (an array option gives one pair per element) is rendered with sprintf and set when the
/// field is absent, or appended to what is there (a value becomes a list of the old and the
/// new).
pub fn add_fields(event: &mut Event, fields: &[(Template, Template)]) {
    for (k, v) in fields {
        let Ok(field) = FieldRef::parse(&k.render(event)) else {
            continue;
        };
        let value = Value::String(v.render(event).into());
        match event.get_mut(&field) {
            None => event.set(&field, value),
            Some(Value::Array(a)) => a.push(value),
            Some(existing) => {
                let old = std::mem::take(existing);
                *existing = Value::Array(vec![old, value]);
            }
        }
    }
}

/// The queue has stopped accepting events; the input should return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped;

/// The request that inputs stop: threads poll it ([`InputContext::is_stopping`]), async tasks
/// wait for it ([`InputContext::stopped`]) without polling.
#[derive(Default)]
pub(crate) struct StopFlag {
    set: AtomicBool,
    notify: tokio::sync::Notify,
}

impl StopFlag {
    pub(crate) fn set(&self) {
        self.set.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub(crate) fn is_set(&self) -> bool {
        self.set.load(Ordering::Relaxed)
    }
}

/// What an input gets: a way to queue events and to know when to stop. Cloning it gives
/// another handle to the same pipeline's queue (the pipeline bus hands such handles to
/// `pipeline` outputs of other pipelines).
#[derive(Clone)]
pub struct InputContext {
    queue: Arc<dyn EventQueue>,
    decoration: InputDecoration,
    stopping: Arc<StopFlag>,
    metrics: Arc<crate::metrics::PipelineMetrics>,
    /// This input's index in `metrics.inputs`.
    index: usize,
    /// `pipeline.batch.size`.
    batch_size: usize,
    /// `pipeline/input` for `[@metadata][lineage]`, when `pipeline.lineage` is on.
    lineage: Option<Arc<str>>,
}

impl InputContext {
    pub(crate) fn new(
        queue: Arc<dyn EventQueue>,
        decoration: InputDecoration,
        stopping: Arc<StopFlag>,
        metrics: Arc<crate::metrics::PipelineMetrics>,
        index: usize,
        batch_size: usize,
    ) -> Self {
        InputContext {
            queue,
            decoration,
            stopping,
            metrics,
            index,
            batch_size,
            lineage: None,
        }
    }

    /// With `pipeline.lineage`: each event pushed gets `label` in `[@metadata][lineage]`.
    pub(crate) fn with_lineage(mut self, label: Arc<str>) -> Self {
        self.lineage = Some(label);
        self
    }

    /// Whether a push, once it returns, survives the process being killed (a persisted queue:
    /// the events are in its page files). An input that records its position in its source
    /// can then record it after every push, instead of only now and then.
    pub fn pushes_survive_a_kill(&self) -> bool {
        self.queue.figures().kind == "persisted"
    }

    /// The pipeline's batch size: how many events an input that makes events faster than it
    /// can push them should push at a time. The memory queue holds `workers × batch size`;
    /// pushing more than fits would leave the input waiting with the surplus instead of
    /// making the next events while the workers run.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Applies the input's common options (`type`, `tags`, `add_field`) to an event now, as
    /// Logstash's `decorate`, for inputs that set fields of their own only when the event has
    /// none (the host): they decorate first, then push with [`InputContext::push_decorated`].
    pub fn decorate(&self, event: &mut Event) {
        if !self.decoration.is_empty() {
            self.decoration.apply(event);
        }
    }

    /// Queues a batch whose events were decorated already ([`InputContext::decorate`]).
    pub fn push_decorated(&self, batch: Vec<Event>) -> Result<(), Stopped> {
        self.push_events(batch)
    }

    /// Queues a batch, blocking while the queue is full.
    pub fn push(&self, mut batch: Vec<Event>) -> Result<(), Stopped> {
        if batch.is_empty() {
            return Ok(());
        }
        if !self.decoration.is_empty() {
            for e in &mut batch {
                self.decoration.apply(e);
            }
        }
        self.push_events(batch)
    }

    fn push_events(&self, mut batch: Vec<Event>) -> Result<(), Stopped> {
        if batch.is_empty() {
            return Ok(());
        }
        if let Some(label) = &self.lineage {
            for e in &mut batch {
                crate::lineage::append(e, label);
            }
        }
        let n = batch.len() as u64;
        let counters = self.metrics.inputs.get(self.index);
        // Counted before the push, so that a reader never sees workers ahead of inputs.
        if let Some(c) = counters {
            c.pushing(n);
        }
        if let Some(tap) = self.metrics.taps.inputs.get(self.index) {
            tap.offer(&batch);
        }
        let started = std::time::Instant::now();
        let result = self.queue.push(batch);
        if let Some(c) = counters {
            c.pushed(n, started.elapsed(), result.is_ok());
        }
        result
    }

    /// Queues a batch on behalf of the thread numbered `origin` (this thread's
    /// [`crate::queue::thread_origin`], taken where the events were made): a network input
    /// pushes from tokio's blocking pool what its runtime's threads parsed, and the finished
    /// events go back to those threads to be freed ([`InputContext::free_spent`]).
    pub fn push_for(&self, origin: u16, batch: Vec<Event>) -> Result<(), Stopped> {
        crate::queue::push_for(origin, || self.push(batch))
    }

    /// Frees the finished events this thread made (see [`InputContext::push_for`]).
    pub fn free_spent(&self) {
        self.queue.free_spent(crate::queue::thread_origin());
    }

    /// True once the pipeline is shutting down: finish the current batch and return.
    pub fn is_stopping(&self) -> bool {
        self.stopping.is_set()
    }

    /// Resolves once the pipeline is shutting down: [`InputContext::is_stopping`] for async
    /// code, woken by the stop itself (no timer). A connection task can keep one pinned across
    /// its reads.
    pub async fn stopped(&self) {
        let notified = std::pin::pin!(self.stopping.notify.notified());
        let mut notified = notified;
        // Registered before the flag is read: a stop in between still wakes it.
        notified.as_mut().enable();
        if self.is_stopping() {
            return;
        }
        notified.await;
    }
}
