//! `line`: one event per line of input; on output, one line per event (`format` or the
//! event's default text form, then `delimiter`).

use sluice_event::{Event, Template};
use sluice_pipeline::{Codec, ConfigError, Options};

use super::charset::Charset;
use super::{format_event, split_lines, text_event};
use crate::ecs::Ecs;

#[derive(Clone)]
pub struct Line {
    delimiter: Vec<u8>,
    format: Option<Template>,
    ecs: Ecs,
    pending: Vec<u8>,
    charset: Charset,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Codec>, ConfigError> {
    let delimiter = opts.string_or("delimiter", "\n")?;
    if delimiter.is_empty() {
        return Err(opts.error("delimiter", "must not be empty"));
    }
    Ok(Box::new(Line {
        delimiter: delimiter.into_bytes(),
        format: opts.string("format")?.map(|f| Template::parse(&f)),
        ecs: Ecs::from_options(opts)?,
        pending: Vec::new(),
        charset: Charset::from_options(opts)?,
    }))
}

impl Line {
    fn emit(&self, bytes: &[u8], out: &mut Vec<Event>) {
        out.push(text_event(
            self.charset.decode(bytes).into_owned(),
            self.ecs,
        ));
    }
}

impl Codec for Line {
    fn decode(&mut self, data: &[u8], out: &mut Vec<Event>) {
        let mut pending = std::mem::take(&mut self.pending);
        split_lines(&mut pending, data, &self.delimiter, |l| self.emit(l, out));
        self.pending = pending;
    }

    fn flush(&mut self, out: &mut Vec<Event>) {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            self.emit(&rest, out);
        }
    }

    fn pending_bytes(&self) -> usize {
        self.pending.len()
    }

    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        format_event(self.format.as_ref(), event, out);
        out.extend_from_slice(&self.delimiter);
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        Box::new(Line {
            pending: Vec::new(),
            ..self.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codec() -> Line {
        Line {
            delimiter: b"\n".to_vec(),
            format: None,
            ecs: Ecs::Disabled,
            pending: Vec::new(),
            charset: Charset::Utf8,
        }
    }

    fn messages(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .map(|e| e.get_field("message").unwrap().to_display_string())
            .collect()
    }

    #[test]
    fn lines_split_across_chunks() {
        let mut c = codec();
        let mut out = Vec::new();
        c.decode(b"one\ntw", &mut out);
        c.decode(b"o\nthr", &mut out);
        c.decode(b"ee", &mut out);
        assert_eq!(messages(&out), ["one", "two"]);
        c.flush(&mut out);
        assert_eq!(messages(&out), ["one", "two", "three"]);
    }

    #[test]
    fn encode_with_format() {
        let mut c = codec();
        c.format = Some(Template::parse("%{message}!"));
        let mut buf = Vec::new();
        c.encode(&Event::with_message("hi"), &mut buf);
        assert_eq!(buf, b"hi!\n");
    }
}
