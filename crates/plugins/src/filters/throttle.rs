//! `throttle`: counts events per `key` (sprintf'd) in time slots of `period` seconds (of the
//! events' `@timestamp`, sprintf'd; 60 when it reads as 0), as logstash-filter-throttle does,
//! and matches (so that its `add_tag` marks the event, to drop it later) the events counted
//! below `before_count` or above `after_count` in their slot. Slots older than `max_age`
//! seconds (default 3600) behind a key's latest are forgotten, and keys whose latest event
//! is older than that behind the newest of all go at each periodic flush; past
//! `max_counters` (default 100,000) slots in all, `max_age` shrinks by 5% at each flush
//! (down to 5% of itself) and grows back once under 80% of the limit. The counters are shared
//! by all workers.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use sluice_event::{Event, Template, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

use crate::filters::grok::convert::ruby_to_i;

struct Slots {
    created: i64,
    latest: i64,
    counts: BTreeMap<i64, u64>,
}

#[derive(Default)]
struct Counters {
    keys: HashMap<String, Slots>,
    max_age: i64,
    flushed: super::SharedFlush,
}

#[derive(Clone)]
pub struct Throttle {
    key: Template,
    period: Template,
    before_count: i64,
    after_count: i64,
    max_age: i64,
    max_counters: i64,
    counters: Arc<Mutex<Counters>>,
}

/// Ruby's `String#to_i` of the text (past 64 bits, the nearest `i64`).
fn to_i(text: &str) -> i64 {
    match ruby_to_i(text) {
        Value::Int(n) => n,
        other => other.as_f64().unwrap_or(0.0) as i64,
    }
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let key = opts.required_string("key")?;
    let max_age = opts.int("max_age")?.unwrap_or(3600);
    Ok(Box::new(Throttle {
        key: Template::parse(&key),
        period: Template::parse(&opts.string_or("period", "60")?),
        before_count: opts.int("before_count")?.unwrap_or(-1),
        after_count: opts.int("after_count")?.unwrap_or(-1),
        max_age,
        max_counters: opts.int("max_counters")?.unwrap_or(100_000),
        counters: Arc::new(Mutex::new(Counters {
            max_age,
            ..Counters::default()
        })),
    }))
}

impl Filter for Throttle {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let key = self.key.render(event);
        let period = match to_i(&self.period.render(event)) {
            0 => 60,
            p => p,
        };
        let epoch = event.timestamp().map_or(0, |t| t.millis().div_euclid(1000));
        let mut c = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        let max_age = c.max_age;
        let slots = c.keys.entry(key).or_insert_with(|| Slots {
            created: epoch,
            latest: epoch,
            counts: BTreeMap::new(),
        });
        slots.latest = slots.latest.max(epoch);
        let slot = epoch - (epoch - slots.created).rem_euclid(period);
        let count = {
            let n = slots.counts.entry(slot).or_insert(0);
            *n += 1;
            *n as i64
        };
        let latest_slot = slots.counts.keys().next_back().copied().unwrap_or(0);
        slots.counts.retain(|&k, _| k >= latest_slot - max_age);
        (self.before_count != -1 && count < self.before_count)
            || (self.after_count != -1 && count > self.after_count)
    }

    fn wants_periodic_flush(&self) -> bool {
        true
    }

    fn flush_periodic(&mut self, _emit: &mut Vec<Event>) {
        let now = Instant::now();
        let mut c = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        // Once per period, whichever worker comes first.
        if !c.flushed.first_in_period(now) {
            return;
        }
        let max_latest = c.keys.values().map(|s| s.latest).max().unwrap_or(0);
        let max_age = c.max_age;
        c.keys.retain(|_, s| s.latest >= max_latest - max_age);
        let total: i64 = c.keys.values().map(|s| s.counts.len() as i64).sum();
        if self.max_counters != -1 {
            let over = total - self.max_counters;
            if over > 0 && c.max_age > self.max_age * 5 / 100 {
                c.max_age -= self.max_age * 5 / 100;
                tracing::warn!(max_age = c.max_age, over, "throttle: decreased the timeslot max_age because max_counters was exceeded; use a better key to prevent too many unique event counters");
            } else if c.max_age < self.max_age && total < self.max_counters * 80 / 100 {
                c.max_age += self.max_age * 5 / 100;
                tracing::warn!(max_age = c.max_age, "throttle: increased the timeslot max_age because max_counters is no longer exceeded");
            }
        }
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}
