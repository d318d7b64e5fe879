//! `json`: each chunk of input is one JSON document (an object, or an array of objects);
//! each event is written as one JSON object, without a delimiter.

use sluice_event::{Event, FieldRef};
use sluice_pipeline::{Codec, ConfigError, Options};

use super::charset::Charset;
use super::json_events;

/// `target`: where each document goes (see [`json_events`]).
#[derive(Clone)]
pub struct Json {
    target: Option<FieldRef>,
    charset: Charset,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Codec>, ConfigError> {
    let charset = Charset::from_options(opts)?;
    crate::ecs::Ecs::from_options(opts)?;
    let target = super::json_target(opts)?;
    Ok(Box::new(Json { target, charset }))
}

impl Codec for Json {
    fn decode(&mut self, data: &[u8], out: &mut Vec<Event>) {
        let text = self.charset.decode(data);
        let text = text.trim_ascii();
        if !text.is_empty() {
            json_events(text.as_bytes(), self.target.as_ref(), out);
        }
    }

    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        sluice_event::json::write_event(event, out);
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        Box::new(self.clone())
    }
}
