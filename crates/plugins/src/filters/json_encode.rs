//! `json_encode`: replaces a field (or fills `target`) with the JSON text of its value, as
//! logstash-filter-json_encode does. A missing field encodes as `null`.

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

#[derive(Clone)]
pub struct JsonEncode {
    source: FieldRef,
    target: FieldRef,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let source = opts.required_string("source")?;
    let target = opts.string("target")?.unwrap_or_else(|| source.clone());
    let parse = |opts: &Options, name: &str, text: &str| {
        FieldRef::parse(text).map_err(|e| opts.error(name, e.to_string()))
    };
    Ok(Box::new(JsonEncode {
        source: parse(opts, "source", &source)?,
        target: parse(opts, "target", &target)?,
    }))
}

impl Filter for JsonEncode {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let text = match event.get(&self.source) {
            Some(v) => sluice_event::json::to_string(v),
            None => "null".to_owned(),
        };
        event.set(&self.target, Value::String(text.into()));
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}
