//! `environment`: copies environment variables into `@metadata`, as
//! logstash-filter-environment does: `add_metadata_from_env => { "field" => "VAR" }` sets
//! `[@metadata][field]` to `$VAR` (null when it is not set). The variables are read once, at
//! load: the process's environment does not change under it.

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

#[derive(Clone)]
pub struct Environment {
    fields: Vec<(FieldRef, Value)>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let mut fields = Vec::new();
    for (field, var) in opts
        .string_hash("add_metadata_from_env")?
        .unwrap_or_default()
    {
        let r = FieldRef::parse(&format!("[@metadata][{field}]"))
            .map_err(|e| opts.error("add_metadata_from_env", e.to_string()))?;
        let value = std::env::var(&var).map_or(Value::Null, |v| Value::String(v.into()));
        fields.push((r, value));
    }
    Ok(Box::new(Environment { fields }))
}

impl Filter for Environment {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        for (r, v) in &self.fields {
            event.set(r, v.clone());
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}
