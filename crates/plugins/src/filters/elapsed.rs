//! `elapsed`: the time between a start event and an end event of the same id, as
//! logstash-filter-elapsed does. Events tagged `start_tag` are remembered by their
//! `unique_id_field` (the first one, or the last with `keep_start_event => last`); an event
//! tagged `end_tag` with a remembered start gets `elapsed_time` (seconds, a float),
//! `elapsed_timestamp_start` and the tags `elapsed`, `elapsed_match` (or, with
//! `new_event_on_match`, a new event carries them and `host`); one without a start is tagged
//! `elapsed_end_without_start`. Starts left `timeout` seconds (default 1800) become events
//! tagged `elapsed`, `elapsed_expired_error`, found by the periodic flush every 5 s.
//! The starts are shared by all workers (as in Logstash, ends and starts that race on two
//! workers want `pipeline.workers: 1`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

struct Start {
    event: Event,
    /// Seconds, counted in 5 s steps by the flush, as the plugin does.
    age: f64,
}

#[derive(Default)]
struct Starts {
    by_id: HashMap<String, Start>,
    flushed: super::SharedFlush,
}

#[derive(Clone)]
pub struct Elapsed {
    start_tag: String,
    end_tag: String,
    id_field: FieldRef,
    timeout: f64,
    new_event_on_match: bool,
    keep_last: bool,
    host: String,
    starts: Arc<Mutex<Starts>>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let start_tag = opts.required_string("start_tag")?;
    let end_tag = opts.required_string("end_tag")?;
    let id_name = opts.required_string("unique_id_field")?;
    let id_field =
        FieldRef::parse(&id_name).map_err(|e| opts.error("unique_id_field", e.to_string()))?;
    Ok(Box::new(Elapsed {
        start_tag,
        end_tag,
        id_field,
        timeout: opts.float("timeout")?.unwrap_or(1800.0),
        new_event_on_match: opts.boolean_or("new_event_on_match", false)?,
        keep_last: opts.choice("keep_start_event", &["first", "last"], "first")? == "last",
        host: sluice_pipeline::hostname(),
        starts: Arc::default(),
    }))
}

impl Elapsed {
    fn info(&self, e: &mut Event, elapsed: f64, id: &Value, start: Option<Value>) {
        e.add_tag("elapsed");
        e.add_tag("elapsed_match");
        e.set_field("elapsed_time", Value::Float(elapsed));
        e.set(&self.id_field, id.clone());
        e.set_field("elapsed_timestamp_start", start.unwrap_or(Value::Null));
    }
}

impl Filter for Elapsed {
    fn filter(&mut self, event: &mut Event, emit: &mut Vec<Event>) -> bool {
        let Some(id) = event
            .get(&self.id_field)
            .filter(|v| !matches!(v, Value::Null))
            .cloned()
        else {
            return false;
        };
        let key = sluice_event::json::to_string(&id);
        if event.has_tag(&self.start_tag) {
            let mut starts = self.starts.lock().unwrap_or_else(|p| p.into_inner());
            if self.keep_last || !starts.by_id.contains_key(&key) {
                starts.by_id.insert(
                    key,
                    Start {
                        event: event.clone(),
                        age: 0.0,
                    },
                );
            }
            return true;
        }
        if !event.has_tag(&self.end_tag) {
            return false;
        }
        let start = self
            .starts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .by_id
            .remove(&key);
        let Some(start) = start else {
            event.add_tag("elapsed_end_without_start");
            return true;
        };
        let ms = |e: &Event| e.timestamp().map_or(0, |t| t.millis());
        let elapsed = (ms(event) - ms(&start.event)) as f64 / 1000.0;
        let started = start.event.get_field("@timestamp").cloned();
        if self.new_event_on_match {
            let mut e = Event::new();
            e.set_field("host", Value::String(self.host.as_str().into()));
            self.info(&mut e, elapsed, &id, started);
            emit.push(e);
        } else {
            self.info(event, elapsed, &id, started);
        }
        true
    }

    fn wants_periodic_flush(&self) -> bool {
        true
    }

    fn flush_periodic(&mut self, emit: &mut Vec<Event>) {
        let now = Instant::now();
        let mut starts = self.starts.lock().unwrap_or_else(|p| p.into_inner());
        // Once per period, whichever worker comes first.
        if !starts.flushed.first_in_period(now) {
            return;
        }
        let mut expired = Vec::new();
        starts.by_id.retain(|_, s| {
            s.age += 5.0;
            if s.age >= self.timeout {
                expired.push((
                    s.event.get(&self.id_field).cloned(),
                    s.age,
                    s.event.get_field("@timestamp").cloned(),
                ));
                false
            } else {
                true
            }
        });
        drop(starts);
        for (id, age, started) in expired {
            let mut e = Event::new();
            e.add_tag("elapsed");
            e.add_tag("elapsed_expired_error");
            e.set_field("host", Value::String(self.host.as_str().into()));
            if let Some(id) = id {
                e.set(&self.id_field, id);
            }
            e.set_field("elapsed_time", Value::Float(age));
            e.set_field("elapsed_timestamp_start", started.unwrap_or(Value::Null));
            emit.push(e);
        }
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}
