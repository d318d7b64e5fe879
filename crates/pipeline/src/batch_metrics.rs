//! Logstash 9's batch metrics (`pipeline.batch.metrics.sampling_mode`): how many events and
//! how many bytes (Logstash's [`Event::estimate_memory`]) the batches read from the queue
//! hold, for the `batch` section of `/_node/stats`.
//!
//! Data flow: each worker owns a [`BatchSampler`] that decides, per batch read, whether to
//! measure it (`full`: every batch; `minimal`, the default: 2 in 100 at random, as Logstash;
//! `disabled`: none). A measured batch goes to the pipeline's [`BatchMetrics`] under one
//! short lock (once per measured batch, never per event): counters for the averages, the
//! last batch (`current`) and cumulative histograms. The API's once-a-second sampler takes
//! [`BatchFigures`] and computes each window's averages and percentiles from two of them, as
//! Logstash computes them from its captures.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use sluice_event::Event;

/// `pipeline.batch.metrics.sampling_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SamplingMode {
    Disabled,
    /// About 2% of batches (Logstash's default).
    #[default]
    Minimal,
    Full,
}

impl SamplingMode {
    pub const NAMES: [&'static str; 3] = ["disabled", "minimal", "full"];

    pub fn parse(name: &str) -> Option<SamplingMode> {
        match name {
            "disabled" => Some(SamplingMode::Disabled),
            "minimal" => Some(SamplingMode::Minimal),
            "full" => Some(SamplingMode::Full),
            _ => None,
        }
    }
}

/// A worker's decision of which batches to measure.
pub struct BatchSampler {
    mode: SamplingMode,
    rng: fastrand::Rng,
}

impl BatchSampler {
    pub fn new(mode: SamplingMode) -> BatchSampler {
        BatchSampler {
            mode,
            rng: fastrand::Rng::new(),
        }
    }

    /// Whether to measure the next batch.
    #[inline]
    pub fn sample(&mut self) -> bool {
        match self.mode {
            SamplingMode::Disabled => false,
            SamplingMode::Full => true,
            SamplingMode::Minimal => self.rng.u32(..100) < 2,
        }
    }
}

/// A cumulative histogram of values, in buckets of under 1% relative width (values below
/// 256 exactly), kept as `(bucket, count)` pairs for the buckets that have counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Histogram {
    buckets: Arc<[(u16, u64)]>,
}

/// Values below this are their own bucket; above, each power of two holds 128 buckets.
const EXACT: u64 = 256;

fn bucket_of(v: u64) -> u16 {
    if v < EXACT {
        return v as u16;
    }
    let shift = 64 - v.leading_zeros() - 8;
    ((shift << 7) as u64 + (v >> shift)) as u16
}

/// The highest value a bucket holds (what HdrHistogram reports for a percentile).
fn highest_in(bucket: u16) -> u64 {
    let b = bucket as u64;
    if b < EXACT {
        return b;
    }
    let shift = (b >> 7) - 1;
    let low = (b - (shift << 7)) << shift;
    low + ((1u64 << shift) - 1)
}

impl Histogram {
    /// What was recorded after `base` (an earlier snapshot of the same histogram).
    pub fn since(&self, base: &Histogram) -> Histogram {
        let old: BTreeMap<u16, u64> = base.buckets.iter().copied().collect();
        let buckets: Vec<(u16, u64)> = (self.buckets.iter())
            .map(|&(b, n)| (b, n.saturating_sub(old.get(&b).copied().unwrap_or(0))))
            .filter(|&(_, n)| n > 0)
            .collect();
        Histogram {
            buckets: buckets.into(),
        }
    }

    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|&(_, n)| n).sum()
    }

    /// The value at percentile `p` (0–100] as HdrHistogram reports it: the highest value of
    /// the bucket where the cumulative count reaches `ceil(p% × count)`. `None` when empty.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((p.clamp(0.0, 100.0) / 100.0 * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for &(b, n) in self.buckets.iter() {
            seen += n;
            if seen >= rank {
                return Some(highest_in(b));
            }
        }
        self.max()
    }

    pub fn max(&self) -> Option<u64> {
        self.buckets.last().map(|&(b, _)| highest_in(b))
    }
}

/// A pipeline's batch figures at one moment (cumulative since it started).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchFigures {
    /// Batches measured.
    pub batches: u64,
    /// Events in them.
    pub events: u64,
    /// Their bytes (Logstash's estimate).
    pub bytes: u64,
    /// The last measured batch's (events, bytes); `None` before the first.
    pub current: Option<(u64, u64)>,
    pub event_counts: Histogram,
    pub byte_sizes: Histogram,
}

#[derive(Debug, Default)]
struct State {
    figures: BatchFigures,
    event_counts: BTreeMap<u16, u64>,
    byte_sizes: BTreeMap<u16, u64>,
    /// `figures`' histograms are behind the maps.
    stale: bool,
}

/// The batch metrics of one pipeline.
#[derive(Debug, Default)]
pub struct BatchMetrics {
    pub mode: SamplingMode,
    state: Mutex<State>,
}

impl BatchMetrics {
    pub fn new(mode: SamplingMode) -> BatchMetrics {
        BatchMetrics {
            mode,
            state: Mutex::default(),
        }
    }

    /// Measures a batch as read from the queue. An empty one sets `current` to zero and
    /// leaves the averages alone, as Logstash's.
    pub fn record(&self, events: &[Event]) {
        let bytes: u64 = events.iter().map(Event::estimate_memory).sum();
        let n = events.len() as u64;
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.figures.current = Some((n, bytes));
        if n == 0 {
            return;
        }
        s.figures.batches += 1;
        s.figures.events += n;
        s.figures.bytes += bytes;
        *s.event_counts.entry(bucket_of(n)).or_default() += 1;
        *s.byte_sizes.entry(bucket_of(bytes)).or_default() += 1;
        s.stale = true;
    }

    /// The figures so far; `None` when sampling is disabled. Histograms are copied only
    /// when something was recorded since the last call.
    pub fn figures(&self) -> Option<BatchFigures> {
        if self.mode == SamplingMode::Disabled {
            return None;
        }
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.stale {
            let to_hist = |m: &BTreeMap<u16, u64>| Histogram {
                buckets: m.iter().map(|(&b, &n)| (b, n)).collect(),
            };
            s.figures.event_counts = to_hist(&s.event_counts);
            s.figures.byte_sizes = to_hist(&s.byte_sizes);
            s.stale = false;
        }
        Some(s.figures.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_narrow() {
        let mut prev = None;
        for v in (0..5000u64).chain([u64::MAX / 3, u64::MAX - 1, u64::MAX]) {
            let b = bucket_of(v);
            let hi = highest_in(b);
            assert!(hi >= v, "{v} in bucket {b} whose highest is {hi}");
            assert!((hi - v) as f64 <= v as f64 / 128.0, "{v}: {hi}");
            if let Some(p) = prev {
                if v < 5000 {
                    assert!(b == p || b == p + 1, "{v}: {p} then {b}");
                }
            }
            prev = Some(b);
        }
        assert_eq!(highest_in(bucket_of(u64::MAX)), u64::MAX);
    }

    fn batch(n: usize, message: &str) -> Vec<Event> {
        (0..n).map(|_| Event::with_message(message)).collect()
    }

    #[test]
    fn records_counts_sizes_and_windows() {
        let m = BatchMetrics::new(SamplingMode::Full);
        assert_eq!(m.figures().unwrap(), BatchFigures::default());
        // Each event: @timestamp 12 + @version 1 + a 10-byte message.
        for n in [100, 125, 125, 125] {
            m.record(&batch(n, "0123456789"));
        }
        let first = m.figures().unwrap();
        assert_eq!((first.batches, first.events), (4, 475));
        assert_eq!(first.bytes, 475 * 23);
        assert_eq!(first.current, Some((125, 125 * 23)));
        assert_eq!(first.event_counts.percentile(50.0), Some(125));
        assert_eq!(first.event_counts.percentile(25.0), Some(100));
        assert_eq!(first.event_counts.max(), Some(125));
        // 2875 bytes lands in a bucket of width 8.
        let p90 = first.byte_sizes.percentile(90.0).unwrap();
        assert!((2875..2875 + 8).contains(&p90), "{p90}");

        // Empty batches: current goes to zero, nothing else moves.
        m.record(&[]);
        m.record(&batch(3, ""));
        let now = m.figures().unwrap();
        assert_eq!(now.current, Some((3, 39)));
        let window = now.event_counts.since(&first.event_counts);
        assert_eq!(window.count(), 1);
        assert_eq!(window.percentile(50.0), Some(3));
        assert_eq!(now.batches - first.batches, 1);
    }

    #[test]
    fn disabled_reports_nothing_and_samplers_follow_the_mode() {
        assert_eq!(BatchMetrics::new(SamplingMode::Disabled).figures(), None);
        let mut full = BatchSampler::new(SamplingMode::Full);
        let mut off = BatchSampler::new(SamplingMode::Disabled);
        let mut minimal = BatchSampler::new(SamplingMode::Minimal);
        assert!((0..1000).all(|_| full.sample()));
        assert!(!(0..1000).any(|_| off.sample()));
        // 2% of 100,000: far from 0 and from all of them.
        let hits = (0..100_000).filter(|_| minimal.sample()).count();
        assert!((1000..3000).contains(&hits), "{hits}");
    }
}
