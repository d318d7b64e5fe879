//! `truncate`: cuts strings to at most `length_bytes` bytes, never inside a character, as
//! logstash-filter-truncate does: the `fields` given, or every top-level field; strings in
//! arrays, and hashes field by field, are cut too; other values are left alone. The event
//! counts as matched (`add_tag`, …) only when something was cut.

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

#[derive(Clone)]
pub struct Truncate {
    fields: Option<Vec<FieldRef>>,
    length: usize,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let fields = crate::field::references(opts, "fields")?;
    let Some(length) = opts.int("length_bytes")? else {
        return Err(opts.plugin_error(
            "missing required setting \"length_bytes\" for filter plugin \"truncate\"",
        ));
    };
    let length = usize::try_from(length).map_err(|_| {
        opts.error(
            "length_bytes",
            format!("must not be negative, got {length}"),
        )
    })?;
    Ok(Box::new(Truncate { fields, length }))
}

/// `text`'s first `length` bytes, shortened to the last whole character.
fn trim(text: &str, length: usize) -> Option<&str> {
    if text.len() <= length {
        return None;
    }
    let mut end = length;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(&text[..end])
}

/// Truncates `v` in place; whether anything changed.
fn truncate(v: &mut Value, length: usize) -> bool {
    match v {
        Value::String(s) => match trim(s, length) {
            Some(t) => {
                *s = t.into();
                true
            }
            None => false,
        },
        Value::Array(items) => {
            let mut changed = false;
            for item in items.iter_mut() {
                if let Value::String(_) = item {
                    changed |= truncate(item, length);
                }
            }
            changed
        }
        Value::Object(m) => {
            let mut changed = false;
            for (_, item) in m.iter_mut() {
                changed |= truncate(item, length);
            }
            changed
        }
        _ => false,
    }
}

impl Filter for Truncate {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let mut changed = false;
        match &self.fields {
            Some(fields) => {
                for f in fields {
                    if let Some(v) = event.get_mut(f) {
                        changed |= truncate(v, self.length);
                    }
                }
            }
            None => {
                for (_, v) in event.fields_mut().iter_mut() {
                    changed |= truncate(v, self.length);
                }
            }
        }
        changed
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}
