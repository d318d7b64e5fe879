//! `pipeline.lineage`: where each event has been. With it on, every input, filter and
//! `pipeline` output an event passes appends its `pipeline/id` to the event's
//! `[@metadata][lineage]` (an array of strings), so that an output, a conditional, a tap or
//! `sluice test` can see the path it took, across pipeline-to-pipeline links (the copy a
//! `pipeline` output hands on keeps the metadata). Off, nothing is added and nothing costs.

use std::sync::Arc;

use sluice_event::{Event, FieldRef, Value};

use crate::metrics::PluginInfo;

/// Each plugin's `pipeline_id/id`.
pub fn labels(pipeline_id: &str, plugins: &[PluginInfo]) -> Box<[Arc<str>]> {
    plugins
        .iter()
        .map(|p| Arc::from(format!("{pipeline_id}/{}", p.id)))
        .collect()
}

/// Appends `label` to the event's `[@metadata][lineage]`, making the array if there is none
/// (a value of another type there is replaced).
pub fn append(e: &mut Event, label: &str) {
    let r = FieldRef::metadata_field("lineage");
    match e.get_mut(&r) {
        Some(Value::Array(a)) => a.push(Value::String(label.into())),
        _ => e.set(&r, Value::Array(vec![Value::String(label.into())])),
    }
}
