//! `es_bulk`: reads Elasticsearch's bulk format, as logstash-codec-es_bulk does: an action
//! line (`{"index": {"_index": …, "_id": …}}`) then the document's line. The document becomes
//! an event (under `target` when set) carrying the action's metadata and `action` in
//! `[@metadata][codec][es_bulk]` (with ECS; in all of `[@metadata]` without). A `delete`
//! action has no document: its event carries the metadata alone. A line that is not JSON is
//! logged and skipped. The codec decodes only: as in Logstash, it writes nothing (an output
//! using it logs an error once).

use sluice_event::{Event, FieldRef, Map, Value};
use sluice_pipeline::{Codec, ConfigError, Options};

use super::split_lines;
use crate::ecs::Ecs;

#[derive(Clone)]
pub struct EsBulk {
    target: Option<FieldRef>,
    metadata_field: FieldRef,
    /// The action read, waiting for its document.
    action: Option<Map>,
    pending: Vec<u8>,
    warned: bool,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Codec>, ConfigError> {
    let target = match opts.string("target")? {
        Some(t) => Some(FieldRef::parse(&t).map_err(|e| opts.error("target", e.to_string()))?),
        None => None,
    };
    let ecs = Ecs::from_options(opts)?;
    let metadata_field = FieldRef::parse(if ecs.enabled() {
        "[@metadata][codec][es_bulk]"
    } else {
        "[@metadata]"
    })
    .expect("valid reference");
    Ok(Box::new(EsBulk {
        target,
        metadata_field,
        action: None,
        pending: Vec::new(),
        warned: false,
    }))
}

impl EsBulk {
    fn event(&self, doc: Option<Value>, metadata: Map) -> Event {
        let mut e = match (doc, &self.target) {
            (Some(doc), Some(t)) => {
                let mut e = Event::new();
                e.set(t, doc);
                e
            }
            (Some(Value::Object(m)), None) => Event::from_map(m),
            (Some(other), None) => {
                // Not an object: kept whole, as the event factory keeps a non-hash.
                let mut e = Event::new();
                e.set_field("message", Value::String(other.to_display_string().into()));
                e
            }
            (None, _) => Event::new(),
        };
        e.set(&self.metadata_field, Value::Object(metadata));
        e
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<Event>) {
        let line = line.trim_ascii();
        if line.is_empty() {
            return;
        }
        let value = match sluice_event::json::parse(line) {
            Ok(v) => v,
            Err(e) => {
                tracing::error!(error = %e, data = %String::from_utf8_lossy(line), "es_bulk codec: JSON parse failure. ES Bulk messages must be UTF-8 JSON");
                return;
            }
        };
        match self.action.take() {
            Some(metadata) => out.push(self.event(Some(value), metadata)),
            None => {
                let Value::Object(m) = value else {
                    tracing::error!("es_bulk codec: an action line must be a JSON object");
                    return;
                };
                let Some((action, inner)) = m.iter().next() else {
                    return;
                };
                let mut metadata = match inner {
                    Value::Object(inner) => inner.clone(),
                    _ => Map::new(),
                };
                metadata.insert("action".into(), Value::String(action.as_str().into()));
                if action == "delete" {
                    out.push(self.event(None, metadata));
                } else {
                    self.action = Some(metadata);
                }
            }
        }
    }
}

impl Codec for EsBulk {
    fn decode(&mut self, data: &[u8], out: &mut Vec<Event>) {
        let mut pending = std::mem::take(&mut self.pending);
        split_lines(&mut pending, data, b"\n", |l| self.line(l, out));
        self.pending = pending;
    }

    fn decode_line(&mut self, line: &[u8], out: &mut Vec<Event>) {
        self.line(line, out);
    }

    fn flush(&mut self, out: &mut Vec<Event>) {
        let rest = std::mem::take(&mut self.pending);
        self.line(&rest, out);
    }

    fn pending_bytes(&self) -> usize {
        self.pending.len()
    }

    fn encode(&mut self, _event: &Event, _out: &mut Vec<u8>) {
        if !self.warned {
            tracing::error!(
                "es_bulk codec: it only decodes; events written with it produce nothing"
            );
            self.warned = true;
        }
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        Box::new(EsBulk {
            target: self.target.clone(),
            metadata_field: self.metadata_field.clone(),
            action: None,
            pending: Vec::new(),
            warned: false,
        })
    }
}
