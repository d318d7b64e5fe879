//! `json_lines`: newline-delimited JSON, one event per line both ways.

use sluice_event::{Event, FieldRef};
use sluice_pipeline::{Codec, ConfigError, Options};

use super::charset::Charset;
use super::{json_events, split_lines};

#[derive(Clone)]
pub struct JsonLines {
    delimiter: u8,
    /// `target`: where each document goes (see [`json_events`]).
    target: Option<FieldRef>,
    pending: Vec<u8>,
    charset: Charset,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Codec>, ConfigError> {
    let delimiter = opts.string_or("delimiter", "\n")?;
    let &[delimiter] = delimiter.as_bytes() else {
        return Err(opts.error("delimiter", "must be a single character"));
    };
    let charset = Charset::from_options(opts)?;
    crate::ecs::Ecs::from_options(opts)?;
    let target = super::json_target(opts)?;
    Ok(Box::new(JsonLines {
        delimiter,
        target,
        pending: Vec::new(),
        charset,
    }))
}

impl JsonLines {
    fn line(&self, line: &[u8], out: &mut Vec<Event>) {
        let line = self.charset.decode(line);
        let line = line.trim_ascii();
        if !line.is_empty() {
            json_events(line.as_bytes(), self.target.as_ref(), out);
        }
    }
}

impl Codec for JsonLines {
    fn decode(&mut self, data: &[u8], out: &mut Vec<Event>) {
        let mut pending = std::mem::take(&mut self.pending);
        split_lines(&mut pending, data, &[self.delimiter], |l| self.line(l, out));
        self.pending = pending;
    }

    fn flush(&mut self, out: &mut Vec<Event>) {
        let rest = std::mem::take(&mut self.pending);
        self.line(&rest, out);
    }

    fn pending_bytes(&self) -> usize {
        self.pending.len()
    }

    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        sluice_event::json::write_event(event, out);
        out.push(self.delimiter);
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        Box::new(JsonLines {
            delimiter: self.delimiter,
            target: self.target.clone(),
            pending: Vec::new(),
            charset: self.charset,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_lines_and_tags_bad_ones() {
        let mut c = JsonLines {
            delimiter: b'\n',
            target: None,
            pending: Vec::new(),
            charset: Charset::Utf8,
        };
        let mut out = Vec::new();
        c.decode(b"{\"a\":1}\n{bad}\n{\"b\"", &mut out);
        c.decode(b":2}\n", &mut out);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].get_field("a"), Some(&sluice_event::Value::Int(1)));
        assert!(out[1].has_tag("_jsonparsefailure"));
        assert_eq!(out[2].get_field("b"), Some(&sluice_event::Value::Int(2)));
    }

    /// `target` (Logstash's json codecs): the document goes under that field of a new event,
    /// its own `@timestamp` included; an array makes one event per item.
    #[test]
    fn target_puts_each_document_under_a_field() {
        let target = FieldRef::parse("[doc]").unwrap();
        let mut c = JsonLines {
            delimiter: b'\n',
            target: Some(target.clone()),
            pending: Vec::new(),
            charset: Charset::Utf8,
        };
        let mut out = Vec::new();
        c.decode(
            b"{\"a\":1,\"@timestamp\":\"2020-01-01T00:00:00Z\"}\n[{\"b\":2},{\"c\":3}]\n\"x\"\n",
            &mut out,
        );
        assert_eq!(out.len(), 4);
        let field = |e: &Event, f: &str| e.get(&FieldRef::parse(f).unwrap()).cloned();
        assert_eq!(
            field(&out[0], "[doc][a]"),
            Some(sluice_event::Value::Int(1))
        );
        assert!(field(&out[0], "[doc][@timestamp]").is_some());
        assert_eq!(field(&out[0], "a"), None);
        assert_eq!(
            field(&out[1], "[doc][b]"),
            Some(sluice_event::Value::Int(2))
        );
        assert_eq!(
            field(&out[2], "[doc][c]"),
            Some(sluice_event::Value::Int(3))
        );
        // A scalar is no document: the parse failure, as without a target.
        assert!(out[3].has_tag("_jsonparsefailure"));
    }
}
