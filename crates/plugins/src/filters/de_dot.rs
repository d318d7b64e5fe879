//! `de_dot`: renames fields whose names contain dots, as logstash-filter-de_dot does: each
//! `.` becomes `separator` (default `_`), or with `nested => true` a level of nesting
//! (`a.b` → `[a][b]`). It looks at the `fields` given, or at every top-level field; with
//! `recursive => true` it also descends into hashes and renames their keys. As the plugin,
//! moving `[x.y][z]` removes all of `[x.y]` (the first dotted level of the old path).

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

#[derive(Clone)]
pub struct DeDot {
    /// `None`: nested.
    separator: Option<String>,
    recursive: bool,
    fields: Option<Vec<FieldRef>>,
    tag_on_failure: String,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let separator = opts.string_or("separator", "_")?;
    if separator.contains('.') {
        return Err(opts.error("separator", "de_dot: separator cannot be or contain '.'"));
    }
    let nested = opts.boolean_or("nested", false)?;
    let recursive = opts.boolean_or("recursive", false)?;
    let fields = crate::field::references(opts, "fields")?;
    let tag_on_failure = opts.string_or("tag_on_failure", "_de_dot_error")?;
    Ok(Box::new(DeDot {
        separator: (!nested && separator != "][").then_some(separator),
        recursive,
        fields,
        tag_on_failure,
    }))
}

impl DeDot {
    /// The plugin's `rename_field` on the path `path`.
    fn rename(&self, event: &mut Event, path: Vec<sluice_event::Key>) -> Result<(), String> {
        let mut path = path;
        if let Some(first_dotted) = path.iter().position(|s| s.contains('.')) {
            let mut renamed = Vec::with_capacity(path.len());
            for seg in &path {
                match &self.separator {
                    Some(sep) => renamed.push(seg.replace('.', sep).into()),
                    None => {
                        for part in seg.split('.') {
                            if part.is_empty() {
                                return Err(format!("{seg:?} leaves an empty field name"));
                            }
                            renamed.push(part.into());
                        }
                    }
                }
            }
            let old = FieldRef::from_segments(path.clone());
            let value = event.get(&old).cloned().unwrap_or(Value::Null);
            event.set(&FieldRef::from_segments(renamed.clone()), value);
            event.remove(&FieldRef::from_segments(path[..=first_dotted].to_vec()));
            path = renamed;
        }
        if self.recursive {
            let keys: Vec<sluice_event::Key> =
                match event.get(&FieldRef::from_segments(path.clone())) {
                    Some(Value::Object(m)) => m.keys().cloned().collect(),
                    _ => Vec::new(),
                };
            for k in keys {
                let mut child = path.clone();
                child.push(k);
                self.rename(event, child)?;
            }
        }
        Ok(())
    }
}

impl Filter for DeDot {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let fields: std::borrow::Cow<[FieldRef]> = match &self.fields {
            Some(f) => f.into(),
            None => (event.fields().keys())
                .filter(|k| self.recursive || k.contains('.'))
                .map(|k| FieldRef::top_level(k))
                .collect::<Vec<_>>()
                .into(),
        };
        for f in fields.iter() {
            let dotted = f.segments().iter().any(|s| s.contains('.'));
            if (dotted || self.recursive) && event.contains(f) {
                if let Err(e) = self.rename(event, f.segments().to_vec()) {
                    tracing::warn!(error = %e, "de_dot: could not rename a field");
                    event.add_tag(&self.tag_on_failure);
                    return false;
                }
            }
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}
