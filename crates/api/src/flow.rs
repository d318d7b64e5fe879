//! Flow metrics: rates computed from two samples of a pipeline's counters, over Logstash's
//! windows. `current` is the last 10 seconds; `last_1_minute`, `last_5_minutes` and
//! `last_15_minutes` reach back as far as the pipeline has run, up to their length;
//! `lifetime` is since the pipeline started. A rate whose denominator is zero (e.g. time per
//! event when no event went through) is left out, as Logstash does.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::registry::{Sample, SAMPLE_EVERY};

pub const WINDOWS: [(&str, Duration); 4] = [
    ("current", Duration::from_secs(10)),
    ("last_1_minute", Duration::from_secs(60)),
    ("last_5_minutes", Duration::from_secs(5 * 60)),
    ("last_15_minutes", Duration::from_secs(15 * 60)),
];

/// Two samples to compute rates between.
pub struct Span<'a> {
    pub from: &'a Sample,
    pub to: &'a Sample,
}

impl Span<'_> {
    /// Seconds between the samples.
    pub fn secs(&self) -> f64 {
        self.to.at.duration_since(self.from.at).as_secs_f64()
    }

    /// Growth of a counter per second.
    pub fn per_sec(&self, f: impl Fn(&Sample) -> u64) -> Option<f64> {
        let dt = self.secs();
        (dt > 0.0).then(|| (f(self.to) as f64 - f(self.from) as f64) / dt)
    }

    /// Growth of a nanosecond counter per nanosecond of wall time (a concurrency: 1.0 = one
    /// thread busy all the time).
    pub fn busy(&self, f: impl Fn(&Sample) -> u64) -> Option<f64> {
        self.per_sec(f).map(|ns_per_s| ns_per_s / 1e9)
    }

    /// Growth of `num` over growth of `den`, when `den` grew.
    pub fn ratio(&self, num: impl Fn(&Sample) -> u64, den: impl Fn(&Sample) -> u64) -> Option<f64> {
        let d = den(self.to).saturating_sub(den(self.from));
        (d > 0).then(|| num(self.to).saturating_sub(num(self.from)) as f64 / d as f64)
    }
}

/// The sample to measure a window from: the oldest one inside the window (allowing half a
/// sampling period of lateness).
pub fn window_start<'a>(
    history: &'a [Sample],
    now: &Sample,
    window: Duration,
) -> Option<&'a Sample> {
    let reach = window + SAMPLE_EVERY / 2;
    history
        .iter()
        .find(|s| now.at.saturating_duration_since(s.at) <= reach && s.at < now.at)
}

/// Rounds to 4 significant digits, as Logstash's flow figures are.
pub fn round(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return if x.is_finite() { x } else { 0.0 };
    }
    let digits = 4 - 1 - x.abs().log10().floor() as i32;
    let p = 10f64.powi(digits.clamp(-12, 12));
    (x * p).round() / p
}

/// Everything a flow metric needs: the history, the newest sample and the first one.
pub struct Flows<'a> {
    pub history: &'a [Sample],
    pub now: &'a Sample,
    pub first: &'a Sample,
}

impl Flows<'_> {
    /// `{current, last_1_minute, ..., lifetime}` of a rate; empty when nothing is defined.
    pub fn metric(&self, f: impl Fn(&Span) -> Option<f64>) -> Map<String, Value> {
        let mut m = Map::new();
        for (name, window) in WINDOWS {
            if let Some(from) = window_start(self.history, self.now, window) {
                if let Some(v) = f(&Span { from, to: self.now }) {
                    m.insert(name.to_owned(), round(v).into());
                }
            }
        }
        if self.first.at < self.now.at {
            if let Some(v) = f(&Span {
                from: self.first,
                to: self.now,
            }) {
                m.insert("lifetime".to_owned(), round(v).into());
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_pipeline::metrics::Totals;
    use sluice_pipeline::queue::QueueFigures;
    use std::time::Instant;

    fn sample(at: Instant, events: u64) -> Sample {
        Sample {
            at,
            totals: Totals {
                events_in: events,
                ..Totals::default()
            },
            queue: QueueFigures::default(),
            batch: None,
        }
    }

    #[test]
    fn windows_and_lifetime() {
        let t0 = Instant::now();
        // 100 events/s for 120 s, then 10 events/s for the last 20 s.
        let mut history = Vec::new();
        let mut n = 0;
        for s in 0..=140u64 {
            history.push(sample(t0 + Duration::from_secs(s), n));
            n += if s < 120 { 100 } else { 10 };
        }
        let now = history.pop().unwrap();
        let flows = Flows {
            history: &history,
            now: &now,
            first: &history[0],
        };
        let m = flows.metric(|s| s.per_sec(|x| x.totals.events_in));
        assert_eq!(m["current"], 10.0);
        // Last 60 s: 40 s at 100/s and 20 s at 10/s.
        assert_eq!(m["last_1_minute"], 70.0);
        // Only 140 s of history: the 5 and 15 minute windows cover all of it.
        assert_eq!(m["last_5_minutes"], m["lifetime"]);
        assert_eq!(m["lifetime"], round((120.0 * 100.0 + 20.0 * 10.0) / 140.0));
    }

    #[test]
    fn undefined_ratios_are_left_out() {
        let t0 = Instant::now();
        let history = vec![sample(t0, 0)];
        let now = sample(t0 + Duration::from_secs(1), 0);
        let flows = Flows {
            history: &history,
            now: &now,
            first: &history[0],
        };
        let m =
            flows.metric(|s| s.ratio(|x| x.totals.worker_duration_nanos, |x| x.totals.events_in));
        assert!(m.is_empty());
    }

    #[test]
    fn rounding() {
        assert_eq!(round(575.4321), 575.4);
        assert_eq!(round(0.000123456), 0.0001235);
        assert_eq!(round(123456.0), 123500.0);
        assert_eq!(round(0.0), 0.0);
    }
}
