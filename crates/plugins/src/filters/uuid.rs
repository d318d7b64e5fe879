//! `uuid`: sets `target` to a random (version 4) UUID, as logstash-filter-uuid does: only when
//! the field is missing or null, unless `overwrite`.

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

#[derive(Clone)]
pub struct Uuid {
    target: FieldRef,
    overwrite: bool,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let target = opts.required_string("target")?;
    let target = FieldRef::parse(&target).map_err(|e| opts.error("target", e.to_string()))?;
    let overwrite = opts.boolean_or("overwrite", false)?;
    Ok(Box::new(Uuid { target, overwrite }))
}

impl Filter for Uuid {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let absent = matches!(event.get(&self.target), None | Some(Value::Null));
        if self.overwrite || absent {
            let id = uuid::Uuid::new_v4().to_string();
            event.set(&self.target, Value::String(id.into()));
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}
