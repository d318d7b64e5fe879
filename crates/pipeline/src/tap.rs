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

/// Each subscriber of a point with the start of its lines there (`{"pipeline":…,"plugin":…,`).
type Subscribers = Arc<[(Arc<Subscriber>, Arc<str>)]>;

/// Where a plugin's events can be watched.
#[derive(Debug)]
pub struct TapPoint {
    attached: AtomicUsize,
    /// Replaced whole on attach and detach; a worker takes a reference under the lock and
    /// does its work without it, so that neither workers nor the API wait on each other.
    subscribers: Mutex<Subscribers>,
}

impl Default for TapPoint {
    fn default() -> Self {
        TapPoint {
            attached: AtomicUsize::new(0),
            subscribers: Mutex::new(Arc::from(Vec::new())),
        }
    }
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
        let mut next: Vec<_> = subs.iter().cloned().collect();
        next.push((subscriber, head.into()));
        self.attached.store(next.len(), Ordering::Relaxed);
        *subs = next.into();
    }

    pub fn detach(&self, subscriber: &Subscriber) {
        let mut subs = self.subscribers.lock().unwrap_or_else(|p| p.into_inner());
        let next: Vec<_> = subs
            .iter()
            .filter(|(s, _)| s.id != subscriber.id)
            .cloned()
            .collect();
        self.attached.store(next.len(), Ordering::Relaxed);
        *subs = next.into();
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
        let subs = Arc::clone(&self.subscribers.lock().unwrap_or_else(|p| p.into_inner()));
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

    /// Takes what it wants of a batch: events matching its condition, within its limit and
    /// rate, each made into a line unless its channel is full (then counted as dropped).
    fn take<'a>(&self, head: &str, events: impl Iterator<Item = &'a Event>) {
        if self.is_done() {
            return;
        }
        // The rate's tokens for this batch, reserved at once; what is not used goes back.
        let mut tokens = match &self.rate {
            None => u64::MAX,
            Some(b) => {
                let mut b = b.lock().unwrap_or_else(|p| p.into_inner());
                let now = Instant::now();
                let refill = now.duration_since(b.at).as_secs_f64() * b.per_second;
                b.tokens = (b.tokens + refill).min(b.per_second.max(1.0));
                b.at = now;
                let whole = b.tokens.floor();
                b.tokens -= whole;
                whole as u64
            }
        };
        let reserved = tokens;
        // A client that does not keep up: its channel is full, and what it would get of
        // this batch is dropped for it without a line being made.
        let full = self.tx.capacity() == 0;
        let mut time: Option<String> = None;
        for e in events {
            if tokens == 0 {
                break;
            }
            if self
                .limit
                .is_some_and(|l| self.sent.load(Ordering::Relaxed) >= l)
            {
                self.done.store(true, Ordering::Relaxed);
                break;
            }
            if self.condition.as_ref().is_some_and(|c| !c.eval(e)) {
                continue;
            }
            tokens -= 1;
            if full {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let permit = match self.tx.try_reserve() {
                Ok(p) => p,
                Err(mpsc::error::TrySendError::Full(())) => {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                Err(mpsc::error::TrySendError::Closed(())) => {
                    self.done.store(true, Ordering::Relaxed);
                    break;
                }
            };
            let time = time.get_or_insert_with(|| sluice_event::Timestamp::now().to_iso8601());
            permit.send(line(head, time, e));
            self.sent.fetch_add(1, Ordering::Relaxed);
        }
        if let (Some(b), true) = (&self.rate, tokens > 0 && reserved != u64::MAX) {
            b.lock().unwrap_or_else(|p| p.into_inner()).tokens += tokens as f64;
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
        sluice_event::json::write_metadata(e, &mut out);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn events(messages: &[&str]) -> Vec<Event> {
        messages.iter().map(|m| Event::with_message(*m)).collect()
    }

    fn when(text: &str) -> Condition {
        let expr = sluice_config::parse_condition("when", text).unwrap();
        Condition::compile("when", sluice_config::Span { line: 1, column: 1 }, &expr).unwrap()
    }

    /// The condition, the limit, the lines' shape, and a detached subscriber left alone.
    #[test]
    fn condition_limit_and_lines() {
        let point = TapPoint::default();
        assert!(!point.is_attached());
        let (s, mut rx) = Subscriber::new(1, Some(when(r#"[message] == "b""#)), Some(3), None);
        point.attach(Arc::clone(&s), &head("main", "f1", Kind::Filter));
        assert!(point.is_attached());
        let mut batch = events(&["a", "b", "b", "a"]);
        batch[2].cancel();
        point.offer(&batch);
        assert_eq!(s.sent(), 1, "the cancelled one is not offered");
        point.offer(&events(&["b", "b", "b"]));
        assert_eq!(s.sent(), 3);
        point.offer(&events(&["b"]));
        assert!(s.is_done());
        assert_eq!(
            (s.sent(), s.dropped()),
            (3, 0),
            "past the limit: neither sent nor dropped"
        );
        let line = String::from_utf8(rx.try_recv().unwrap()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["pipeline"], "main");
        assert_eq!(v["plugin"], "f1");
        assert_eq!(v["kind"], "filter");
        assert_eq!(v["event"]["message"], "b");
        assert!(v.get("metadata").is_none());
        point.detach(&s);
        assert!(!point.is_attached());
    }

    /// A full channel drops what the client would have got (within its rate), counted;
    /// the rate keeps at most its tokens a batch.
    #[test]
    fn drops_and_rate() {
        let point = TapPoint::default();
        let (s, _rx) = Subscriber::new(2, None, None, None);
        point.attach(Arc::clone(&s), &head("main", "in", Kind::Input));
        let many: Vec<Event> = (0..CHANNEL + 500)
            .map(|_| Event::with_message("x"))
            .collect();
        point.offer(&many);
        assert_eq!(s.sent(), CHANNEL as u64);
        assert_eq!(s.dropped(), 500);
        point.offer(&events(&["y"; 10]));
        assert_eq!(
            s.dropped(),
            510,
            "a batch finding the channel full is dropped whole"
        );
        // At most 5 a second: a burst of 50 gives 5 lines; full, 5 are counted as dropped.
        let rated = TapPoint::default();
        let (r, rx) = Subscriber::new(3, None, None, Some(5.0));
        rated.attach(Arc::clone(&r), &head("main", "out", Kind::Output));
        let refs: Vec<Event> = events(&["z"; 50]);
        let list: Vec<&Event> = refs.iter().collect();
        rated.offer_refs(&list);
        assert_eq!((r.sent(), r.dropped()), (5, 0));
        drop(rx);
        let (c, crx) = Subscriber::new(5, None, None, None);
        rated.attach(Arc::clone(&c), &head("main", "out", Kind::Output));
        drop(crx);
        rated.offer_refs(&list);
        assert!(c.is_done(), "a closed channel ends the subscriber");
        let (full, _keep) = Subscriber::new(4, None, None, Some(5.0));
        let p = TapPoint::default();
        p.attach(Arc::clone(&full), &head("main", "x", Kind::Filter));
        p.offer(&many);
        let dropped_before = full.dropped();
        std::thread::sleep(std::time::Duration::from_millis(1100));
        p.offer(&many);
        assert!(
            full.dropped() - dropped_before <= 5,
            "a rated client's drops stay within its rate: {}",
            full.dropped() - dropped_before
        );
    }
}
