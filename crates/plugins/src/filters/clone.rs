//! `clone`: for each name in `clones`, emits a copy of the event. The copy's `type` is set to
//! the name (`ecs_compatibility => disabled`), or the name is added to its `tags` (ECS modes),
//! as Logstash's clone filter does. The common options (`add_tag`, `add_field`, `remove_tag`,
//! `remove_field`) apply to the copies only; the original goes on untouched.

use sluice_event::{Event, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

use crate::ecs::Ecs;

#[derive(Clone)]
pub struct Clone {
    clones: Vec<String>,
    ecs: Ecs,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let Some(clones) = opts.string_list("clones")? else {
        return Err(opts.plugin_error(
            "missing required setting \"clones\" for filter plugin \"clone\"".to_owned(),
        ));
    };
    let ecs = Ecs::from_options(opts)?;
    if clones.is_empty() {
        // As Logstash, in every ECS mode: a warning, and the events pass unchanged.
        tracing::warn!(
            "clone filter: the parameter 'clones' is empty, so no clones will be created"
        );
    }
    Ok(Box::new(Clone { clones, ecs }))
}

impl Filter for Clone {
    fn filter(&mut self, event: &mut Event, emit: &mut Vec<Event>) -> bool {
        for name in &self.clones {
            let mut copy = event.clone();
            if self.ecs.enabled() {
                copy.add_tag(name);
            } else {
                copy.set_field("type", Value::String(name.as_str().into()));
            }
            emit.push(copy);
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }

    fn matches_new_events_only(&self) -> bool {
        true
    }
}
