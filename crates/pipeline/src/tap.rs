//! Taps: live copies of the events that leave a plugin, for `sluice tap` and the dashboard.
//!
//! Every input, filter and output of a pipeline has a [`TapPoint`] (in
//! [`crate::metrics::PipelineMetrics::taps`]). The code that runs the plugin offers each batch
//! to its point after the plugin is done with it (an input's batch once decorated, before the
//! queue; a filter's after it ran, cancelled events left out; an output's as routed to it).
//! With nobody attached that is one atomic load per batch. A [`Subscriber`] (one `GET
//! /_node/tap` stream) attached to some points takes the events that match its `--when`
//! condition, at most `rate` a second and `limit` in all, each as one NDJSON line written on
//! the spot (the plugin, the time, the event and its `@metadata`) into a bounded channel. A
//! full channel (a client that reads slowly, or not at all) drops the line and counts it:
//! a tap never holds a pipeline back.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use sluice_event::{Event, Value};
use tokio::sync::mpsc;

use crate::condition::Condition;

/// Which of a pipeline's plugin lists a point belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Input,
    Filter,
    Output,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Input => "input",
            Kind::Filter => "filter",
            Kind::Output => "output",
        }
    }
}

/// A pipeline's tap points, one per plugin in config order.
#[derive(Debug, Default)]
pub struct Taps {
    pub inputs: Box<[TapPoint]>,
    pub filters: Box<[TapPoint]>,
    pub outputs: Box<[TapPoint]>,
}

impl Taps {
    pub fn new(inputs: usize, filters: usize, outputs: usize) -> Taps {
        let points = |n| (0..n).map(|_| TapPoint::default()).collect();
        Taps {
            inputs: points(inputs),
            filters: points(filters),
            outputs: points(outputs),
        }
    }

    pub fn point(&self, kind: Kind, index: usize) -> Option<&TapPoint> {
        match kind {
            Kind::Input => self.inputs.get(index),
            Kind::Filter => self.filters.get(index),
            Kind::Output => self.outputs.get(index),
        }
    }
}

/// Where a plugin's events can be watched.
#[derive(Debug, Default)]
pub struct TapPoint {
    attached: AtomicUsize,
    /// Each subscriber with the start of its lines here (`{"pipeline":…,"plugin":…,`).
    subscribers: Mutex<Vec<(Arc<Subscriber>, Arc<str>)>>,
}

impl TapPoint {
    /// Whether anyone watches: the one load a batch costs when nobody does.
    #[inline]
    pub fn is_attached(&self) -> bool {
        self.attached.load(Ordering::Relaxed) > 0
    }

    /// Attaches a subscriber; `head` starts each of its lines from here (the envelope's
    /// pipeline, plugin and kind, ending with a comma).
    pub fn attach(&self, subscriber: Arc<Subscriber>, head: &str) {
        let mut subs = self.subscribers.lock().unwrap_or_else(|p| p.into_inner());
        subs.push((subscriber, head.into()));
        self.attached.store(subs.len(), Ordering::Relaxed);
    }

    pub fn detach(&self, subscriber: &Subscriber) {
        let mut subs = self.subscribers.lock().unwrap_or_else(|p| p.into_inner());
        subs.retain(|(s, _)| s.id != subscriber.id);
        self.attached.store(subs.len(), Ordering::Relaxed);
    }

    /// Offers a batch's events (cancelled ones are skipped).
    pub fn offer(&self, events: &[Event]) {
        if self.is_attached() {
            self.offer_each(events.iter().filter(|e| !e.is_cancelled()));
        }
    }

    /// [`TapPoint::offer`] for events routed to an output.
    pub fn offer_refs(&self, events: &[&Event]) {
        if self.is_attached() {
            self.offer_each(events.iter().copied());
        }
    }

    fn offer_each<'a>(&self, events: impl Iterator<Item = &'a Event> + Clone) {
        let subs = self.subscribers.lock().unwrap_or_else(|p| p.into_inner());
        for (s, head) in subs.iter() {
            s.take(head, events.clone());
        }
    }
}

/// One watcher: what it wants, its channel, its counts.
#[derive(Debug)]
pub struct Subscriber {
    pub id: u64,
    condition: Option<Condition>,
    tx: mpsc::Sender<Vec<u8>>,
    /// At most this many events in all; then the subscriber is done.
    limit: Option<u64>,
    /// At most this many events a second (a token bucket of one second's worth).
    rate: Option<Mutex<Bucket>>,
    sent: AtomicU64,
    dropped: AtomicU64,
    done: AtomicBool,
}

#[derive(Debug)]
struct Bucket {
    per_second: f64,
    tokens: f64,
    at: Instant,
}

/// How many lines a subscriber's channel holds before lines are dropped for it.
pub const CHANNEL: usize = 1024;

impl Subscriber {
    /// A subscriber and the receiving end of its lines.
    pub fn new(
        id: u64,
        condition: Option<Condition>,
        limit: Option<u64>,
        rate: Option<f64>,
    ) -> (Arc<Subscriber>, mpsc::Receiver<Vec<u8>>) {
        let (tx, rx) = mpsc::channel(CHANNEL);
        let s = Subscriber {
            id,
            condition,
            tx,
            limit,
            rate: rate.map(|per_second| {
                Mutex::new(Bucket {
                    per_second,
                    tokens: per_second.max(1.0),
                    at: Instant::now(),
                })
            }),
            sent: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            done: AtomicBool::new(false),
        };
        (Arc::new(s), rx)
    }

    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Lines dropped because the channel was full (the client read too slowly).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Relaxed)
    }

    fn take<'a>(&self, head: &str, events: impl Iterator<Item = &'a Event>) {
        if self.is_done() {
            return;
        }
        let mut bucket = self
            .rate
            .as_ref()
            .map(|b| b.lock().unwrap_or_else(|p| p.into_inner()));
        if let Some(b) = bucket.as_deref_mut() {
            let now = Instant::now();
            let refill = now.duration_since(b.at).as_secs_f64() * b.per_second;
            b.tokens = (b.tokens + refill).min(b.per_second.max(1.0));
            b.at = now;
        }
        // A client that does not keep up: its channel is full, and the batch is dropped for it
        // without a line being made.
        if self.tx.capacity() == 0 {
            let n = match &self.condition {
                None => events.count(),
                Some(c) => events.filter(|e| c.eval(e)).count(),
            };
            self.dropped.fetch_add(n as u64, Ordering::Relaxed);
            return;
        }
        let mut time: Option<String> = None;
        for e in events {
            if let Some(c) = &self.condition {
                if !c.eval(e) {
                    continue;
                }
            }
            if let Some(b) = bucket.as_deref_mut() {
                if b.tokens < 1.0 {
                    return;
                }
                b.tokens -= 1.0;
            }
            if let Some(limit) = self.limit {
                if self.sent.load(Ordering::Relaxed) >= limit {
                    self.done.store(true, Ordering::Relaxed);
                    return;
                }
            }
            let permit = match self.tx.try_reserve() {
                Ok(p) => p,
                Err(mpsc::error::TrySendError::Full(())) => {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                Err(mpsc::error::TrySendError::Closed(())) => {
                    self.done.store(true, Ordering::Relaxed);
                    return;
                }
            };
            let time = time.get_or_insert_with(|| sluice_event::Timestamp::now().to_iso8601());
            permit.send(line(head, time, e));
            self.sent.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One NDJSON line: `head` (pipeline, plugin, kind), the time, the event and its metadata.
fn line(head: &str, time: &str, e: &Event) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(b"\"time\":\"");
    out.extend_from_slice(time.as_bytes());
    out.extend_from_slice(b"\",\"event\":");
    sluice_event::json::write_event(e, &mut out);
    if !e.metadata().is_empty() {
        out.extend_from_slice(b",\"metadata\":");
        out.extend_from_slice(
            sluice_event::json::to_string(&Value::Object(e.metadata().clone())).as_bytes(),
        );
    }
    out.extend_from_slice(b"}\n");
    out
}

/// The start of a subscriber's lines at one plugin: `{"pipeline":…,"plugin":…,"kind":…,`.
pub fn head(pipeline: &str, plugin: &str, kind: Kind) -> String {
    let s = |t: &str| sluice_event::json::to_string(&Value::String(t.into()));
    format!(
        "{{\"pipeline\":{},\"plugin\":{},\"kind\":\"{}\",",
        s(pipeline),
        s(plugin),
        kind.as_str()
    )
}
