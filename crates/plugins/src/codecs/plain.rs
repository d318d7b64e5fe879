//! `plain`: the whole chunk of input is one event; output is `format` or the event's default
//! text form, with no delimiter.

use sluice_event::{Event, Template};
use sluice_pipeline::{Codec, ConfigError, Options};

use super::{format_event, text_event};
use crate::ecs::Ecs;

#[derive(Clone)]
pub struct Plain {
    format: Option<Template>,
    ecs: Ecs,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Codec>, ConfigError> {
    super::require_utf8(opts)?;
    Ok(Box::new(Plain {
        format: opts.string("format")?.map(|f| Template::parse(&f)),
        ecs: Ecs::from_options(opts)?,
    }))
}

impl Plain {
    /// A plain codec with no `format`.
    pub fn new(ecs: Ecs) -> Plain {
        Plain { format: None, ecs }
    }
}

impl Codec for Plain {
    fn decode(&mut self, data: &[u8], out: &mut Vec<Event>) {
        if !data.is_empty() {
            out.push(text_event(
                String::from_utf8_lossy(data).into_owned(),
                self.ecs,
            ));
        }
    }

    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        format_event(self.format.as_ref(), event, out);
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        Box::new(self.clone())
    }
}
