//! `metrics`: counts and rates of events, and statistics of timings, emitted as events every
//! `flush_interval` seconds, as logstash-filter-metrics does (with the Metriks library).
//!
//! - `meter => ["name", …]` (sprintf'd per event): a count and the 1, 5 and 15 minute
//!   exponentially weighted rates per second (`rates` picks which), ticked every 5 s as
//!   Metriks does.
//! - `timer => { "name" => "%{value}" }`: the same, plus `min`, `max`, `mean`, `stddev` (as
//!   the plugin computes it: the square root of the library's standard deviation) and the
//!   `percentiles` (default 1, 5, 10, 90, 95, 99, 100) of the values, from a uniform sample of
//!   at most 1028 of them (Metriks samples with an exponentially decaying reservoir; with
//!   fewer values than that both are exact).
//! - The event: `message` is this host's name, `[name][count]`, `[name][rate_1m]`, …; the
//!   filter's `add_tag`/`add_field` apply to it (commonly `add_tag => "metric"`), and it goes
//!   through the filters after this one. Nothing is emitted before the first event.
//! - `clear_interval` (seconds, off by default) starts the figures over; `ignore_older_than`
//!   skips events whose `@timestamp` is older than that many seconds.
//! - One set of figures for all workers (each mark takes a short lock), emitted by whichever
//!   worker's periodic flush comes first in each 5 s period.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sluice_event::{Event, FieldRef, Template, Timestamp, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

use crate::filters::grok::convert::ruby_to_f;

const TICK: f64 = 5.0;
const RESERVOIR: usize = 1028;

/// Metriks' EWMA: a rate per second, ticked every 5 s.
#[derive(Clone, Debug)]
struct Ewma {
    alpha: f64,
    rate: f64,
    uncounted: u64,
    initialized: bool,
}

impl Ewma {
    fn new(minutes: f64) -> Ewma {
        Ewma {
            alpha: 1.0 - (-TICK / 60.0 / minutes).exp(),
            rate: 0.0,
            uncounted: 0,
            initialized: false,
        }
    }

    fn tick(&mut self) {
        let instant = self.uncounted as f64 / TICK;
        self.uncounted = 0;
        if self.initialized {
            self.rate += self.alpha * (instant - self.rate);
        } else {
            self.rate = instant;
            self.initialized = true;
        }
    }
}

#[derive(Clone, Debug)]
struct Meter {
    count: u64,
    rates: [Ewma; 3],
    last_tick: Instant,
}

impl Meter {
    fn new(now: Instant) -> Meter {
        Meter {
            count: 0,
            rates: [Ewma::new(1.0), Ewma::new(5.0), Ewma::new(15.0)],
            last_tick: now,
        }
    }

    fn tick_if_needed(&mut self, now: Instant) {
        let age = now.saturating_duration_since(self.last_tick).as_secs_f64();
        if age > TICK {
            let ticks = (age / TICK).floor();
            self.last_tick += Duration::from_secs_f64(ticks * TICK);
            for _ in 0..ticks as u64 {
                for r in &mut self.rates {
                    r.tick();
                }
            }
        }
    }

    fn mark(&mut self, now: Instant) {
        self.tick_if_needed(now);
        self.count += 1;
        for r in &mut self.rates {
            r.uncounted += 1;
        }
    }
}

#[derive(Clone, Debug)]
struct Timer {
    meter: Meter,
    min: f64,
    max: f64,
    /// Welford's running mean and sum of squared differences.
    mean: f64,
    m2: f64,
    sample: Vec<f64>,
}

impl Timer {
    fn new(now: Instant) -> Timer {
        Timer {
            meter: Meter::new(now),
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            mean: 0.0,
            m2: 0.0,
            sample: Vec::new(),
        }
    }

    fn update(&mut self, value: f64, now: Instant) {
        self.meter.mark(now);
        let n = self.meter.count as f64;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        let delta = value - self.mean;
        self.mean += delta / n;
        self.m2 += delta * (value - self.mean);
        if self.sample.len() < RESERVOIR {
            self.sample.push(value);
        } else {
            let j = fastrand::u64(..self.meter.count) as usize;
            if j < RESERVOIR {
                self.sample[j] = value;
            }
        }
    }

    fn stddev(&self) -> f64 {
        let n = self.meter.count;
        if n > 1 {
            (self.m2 / (n - 1) as f64).sqrt()
        } else {
            0.0
        }
    }

    /// Metriks' `Snapshot#value(quantile)` over the sorted sample.
    fn percentile(sorted: &[f64], quantile: f64) -> f64 {
        if sorted.is_empty() {
            return 0.0;
        }
        let pos = quantile * (sorted.len() + 1) as f64;
        if pos < 1.0 {
            return sorted[0];
        }
        if pos >= sorted.len() as f64 {
            return sorted[sorted.len() - 1];
        }
        let lower = sorted[pos as usize - 1];
        let upper = sorted[pos as usize];
        lower + (pos - pos.floor()) * (upper - lower)
    }
}

#[derive(Default)]
struct Figures {
    meters: BTreeMap<String, Meter>,
    timers: BTreeMap<String, Timer>,
    /// Seconds since the last flush and clear, counted in 5 s steps as the plugin does.
    since_flush: f64,
    since_clear: f64,
    /// When some worker last ran the periodic flush.
    flushed: super::SharedFlush,
}

#[derive(Clone)]
pub struct Metrics {
    meters: Vec<Template>,
    timers: Vec<(Template, Template)>,
    ignore_older_than: f64,
    flush_interval: f64,
    clear_interval: f64,
    rates: Vec<u8>,
    percentiles: Vec<f64>,
    host: String,
    figures: Arc<Mutex<Figures>>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let meters = opts.string_list("meter")?.unwrap_or_default();
    let timers = opts.string_hash("timer")?.unwrap_or_default();
    let rates: Vec<u8> = match opts.string_list("rates")? {
        None => vec![1, 5, 15],
        Some(list) => list
            .iter()
            .map(|r| match r.trim() {
                "1" => Ok(1),
                "5" => Ok(5),
                "15" => Ok(15),
                _ => Err(opts.error(
                    "rates",
                    format!("Invalid rates configuration. possible rates are 1, 5, 15. Rates: {list:?}."),
                )),
            })
            .collect::<Result<_, _>>()?,
    };
    let percentiles = match opts.string_list("percentiles")? {
        None => vec![1.0, 5.0, 10.0, 90.0, 95.0, 99.0, 100.0],
        Some(list) => list
            .iter()
            .map(|p| {
                p.trim()
                    .parse::<f64>()
                    .map_err(|_| opts.error("percentiles", format!("{p:?} is not a number")))
            })
            .collect::<Result<_, _>>()?,
    };
    Ok(Box::new(Metrics {
        meters: meters.iter().map(|m| Template::parse(m)).collect(),
        timers: timers
            .iter()
            .map(|(k, v)| (Template::parse(k), Template::parse(v)))
            .collect(),
        ignore_older_than: opts.float("ignore_older_than")?.unwrap_or(0.0),
        flush_interval: opts.float("flush_interval")?.unwrap_or(5.0),
        clear_interval: opts.float("clear_interval")?.unwrap_or(-1.0),
        rates,
        percentiles,
        host: sluice_pipeline::hostname(),
        figures: Arc::default(),
    }))
}

/// Ruby's `String#to_f` of the text, as a float.
fn to_f(text: &str) -> f64 {
    ruby_to_f(text).as_f64().unwrap_or(0.0)
}

impl Metrics {
    fn rates(&self, e: &mut Event, name: &str, meter: &mut Meter, now: Instant) {
        meter.tick_if_needed(now);
        let set = |e: &mut Event, key: &str, v: Value| {
            if let Ok(r) = FieldRef::parse(&format!("[{name}][{key}]")) {
                e.set(&r, v);
            }
        };
        set(e, "count", Value::Int(meter.count as i64));
        for (i, (minutes, key)) in [(1, "rate_1m"), (5, "rate_5m"), (15, "rate_15m")]
            .into_iter()
            .enumerate()
        {
            if self.rates.contains(&minutes) {
                set(e, key, Value::Float(meter.rates[i].rate));
            }
        }
    }
}

impl Filter for Metrics {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        if self.ignore_older_than > 0.0 {
            let age = event.timestamp().map_or(0.0, |t| {
                (Timestamp::now().millis() - t.millis()) as f64 / 1000.0
            });
            if age > self.ignore_older_than {
                return false;
            }
        }
        let now = Instant::now();
        let names: Vec<String> = self.meters.iter().map(|m| m.render(event)).collect();
        let timings: Vec<(String, f64)> = self
            .timers
            .iter()
            .map(|(k, v)| (k.render(event), to_f(&v.render(event))))
            .collect();
        let mut f = self.figures.lock().unwrap_or_else(|p| p.into_inner());
        for name in names {
            f.meters
                .entry(name)
                .or_insert_with(|| Meter::new(now))
                .mark(now);
        }
        for (name, value) in timings {
            f.timers
                .entry(name)
                .or_insert_with(|| Timer::new(now))
                .update(value, now);
        }
        // As the plugin: no filter_matched for the events measured.
        false
    }

    fn wants_periodic_flush(&self) -> bool {
        true
    }

    fn flush_periodic(&mut self, emit: &mut Vec<Event>) {
        let now = Instant::now();
        let mut f = self.figures.lock().unwrap_or_else(|p| p.into_inner());
        // Once per period, whichever worker comes first.
        if !f.flushed.first_in_period(now) {
            return;
        }
        f.since_flush += TICK;
        f.since_clear += TICK;
        if f.since_flush < self.flush_interval || (f.meters.is_empty() && f.timers.is_empty()) {
            return;
        }
        let clear = self.clear_interval > 0.0 && f.since_clear >= self.clear_interval;
        let mut e = Event::new();
        e.set_field("message", Value::String(self.host.as_str().into()));
        let figures = &mut *f;
        for (name, meter) in figures.meters.iter_mut() {
            self.rates(&mut e, name, meter, now);
        }
        for (name, timer) in figures.timers.iter_mut() {
            self.rates(&mut e, name, &mut timer.meter, now);
            let mut sorted = timer.sample.clone();
            sorted.sort_by(f64::total_cmp);
            let mut set = |key: &str, v: f64| {
                if let Ok(r) = FieldRef::parse(&format!("[{name}][{key}]")) {
                    e.set(&r, Value::Float(v));
                }
            };
            set("min", timer.min);
            set("max", timer.max);
            set("stddev", timer.stddev().sqrt());
            set("mean", timer.mean);
            for p in &self.percentiles {
                let key = if p.fract() == 0.0 {
                    format!("p{}", *p as i64)
                } else {
                    format!("p{p}")
                };
                set(&key, Timer::percentile(&sorted, p / 100.0));
            }
        }
        figures.since_flush = 0.0;
        if clear {
            figures.since_clear = 0.0;
            figures.meters.clear();
            figures.timers.clear();
        }
        emit.push(e);
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ewma_and_percentiles_as_metriks() {
        let mut m = Ewma::new(1.0);
        m.uncounted = 50;
        m.tick();
        assert_eq!(m.rate, 10.0, "the first tick sets the rate");
        m.tick();
        let alpha = 1.0 - (-5.0f64 / 60.0).exp();
        assert!((m.rate - (10.0 - alpha * 10.0)).abs() < 1e-12);
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(Timer::percentile(&sorted, 0.5), 2.5);
        assert_eq!(Timer::percentile(&sorted, 0.01), 1.0);
        assert_eq!(Timer::percentile(&sorted, 1.0), 4.0);
        assert_eq!(to_f("12.5ms"), 12.5);
        assert_eq!(to_f("x"), 0.0);
    }
}
