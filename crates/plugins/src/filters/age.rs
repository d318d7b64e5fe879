//! `age`: how old the event is, in seconds (a float): now minus `@timestamp`, into `target`
//! (default `[@metadata][age]`), as logstash-filter-age does.

use sluice_event::{Event, FieldRef, Timestamp, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

#[derive(Clone)]
pub struct Age {
    target: FieldRef,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let target = opts.string_or("target", "[@metadata][age]")?;
    let target = FieldRef::parse(&target).map_err(|e| opts.error("target", e.to_string()))?;
    Ok(Box::new(Age { target }))
}

impl Filter for Age {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let now = Timestamp::now().millis();
        let then = event.timestamp().map_or(now, Timestamp::millis);
        event.set(&self.target, Value::Float((now - then) as f64 / 1000.0));
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}
