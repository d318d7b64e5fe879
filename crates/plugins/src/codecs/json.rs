//! `json`: each chunk of input is one JSON document (an object, or an array of objects);
//! each event is written as one JSON object, without a delimiter. As Logstash's codec, in
//! ECS mode a document that makes one event keeps its text in `[event][original]` (unless the
//! document has one), with or without `target`.

use sluice_event::{Event, FieldRef};
use sluice_pipeline::{Codec, ConfigError, Options};

use super::charset::Charset;
use super::json_events;

/// `target`: where each document goes (see [`json_events`]).
#[derive(Clone)]
pub struct Json {
    target: Option<FieldRef>,
    charset: Charset,
    /// `[event][original]`, in ECS mode.
    original: Option<FieldRef>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Codec>, ConfigError> {
    let charset = Charset::from_options(opts)?;
    let ecs = crate::ecs::Ecs::from_options(opts)?;
    let target = super::json_target(opts)?;
    let original = ecs
        .enabled()
        .then(|| FieldRef::parse("[event][original]").expect("a valid field reference"));
    Ok(Box::new(Json {
        target,
        charset,
        original,
    }))
}

impl Codec for Json {
    fn decode(&mut self, data: &[u8], out: &mut Vec<Event>) {
        let whole = self.charset.decode(data);
        let text = whole.trim_ascii();
        if text.is_empty() {
            return;
        }
        let first = out.len();
        json_events(text.as_bytes(), self.target.as_ref(), out);
        if let (Some(original), [e]) = (&self.original, &mut out[first..]) {
            if !e.has_tag("_jsonparsefailure") && e.get(original).is_none() {
                e.set(original, sluice_event::Value::String(whole.as_ref().into()));
            }
        }
    }

    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        sluice_event::json::write_event(event, out);
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        Box::new(self.clone())
    }
}
