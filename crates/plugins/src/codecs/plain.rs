//! `plain`: the whole chunk of input is one event; output is `format` or the event's default
//! text form, with no delimiter.

use sluice_event::{Event, Template};
use sluice_pipeline::{Codec, ConfigError, Options};

use super::charset::Charset;
use super::{format_event, text_event};
use crate::ecs::Ecs;

#[derive(Clone)]
pub struct Plain {
    format: Option<Template>,
    ecs: Ecs,
    charset: Charset,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Codec>, ConfigError> {
    Ok(Box::new(Plain {
        format: opts.string("format")?.map(|f| Template::parse(&f)),
        ecs: Ecs::from_options(opts)?,
        charset: Charset::from_options(opts)?,
    }))
}

impl Plain {
    /// A plain codec with no `format`.
    pub fn new(ecs: Ecs) -> Plain {
        Plain {
            format: None,
            ecs,
            charset: Charset::Utf8,
        }
    }
}

impl Codec for Plain {
    fn decode(&mut self, data: &[u8], out: &mut Vec<Event>) {
        if !data.is_empty() {
            out.push(text_event(self.charset.decode(data).into_owned(), self.ecs));
        }
    }

    /// A line is an event even when empty (a blank line of a file, as in Logstash; an empty
    /// test line of `sluice test`).
    fn decode_line(&mut self, line: &[u8], out: &mut Vec<Event>) {
        out.push(text_event(self.charset.decode(line).into_owned(), self.ecs));
    }

    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        format_event(self.format.as_ref(), event, out);
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_line_is_an_event_and_an_empty_read_is_none() {
        let mut c = Plain::new(Ecs::Disabled);
        let mut out = Vec::new();
        c.decode(b"", &mut out);
        assert!(out.is_empty());
        c.decode_line(b"", &mut out);
        c.decode_line(b"x", &mut out);
        let messages: Vec<String> = out
            .iter()
            .map(|e| match e.get_field("message") {
                Some(sluice_event::Value::String(s)) => s.to_string(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(messages, ["", "x"]);
    }
}
