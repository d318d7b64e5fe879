//! `rubydebug`: events printed the way Logstash prints them with awesome_print — one field per
//! line, keys right-aligned, nested hashes and arrays indented by four spaces, timestamps bare.
//! Decoding is not part of this codec's purpose; input is taken as plain text.

use sluice_event::{Event, Map, Value};
use sluice_pipeline::{Codec, ConfigError, Options};

#[derive(Clone)]
pub struct RubyDebug {
    metadata: bool,
}

impl RubyDebug {
    /// The codec, with `@metadata` shown when `metadata` (its option of that name).
    pub fn new(metadata: bool) -> RubyDebug {
        RubyDebug { metadata }
    }
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Codec>, ConfigError> {
    Ok(Box::new(RubyDebug {
        metadata: opts.boolean_or("metadata", false)?,
    }))
}

fn quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{1b}' => out.push_str("\\e"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn indent(level: usize, out: &mut String) {
    for _ in 0..level * 4 {
        out.push(' ');
    }
}

fn value(v: &Value, level: usize, out: &mut String) {
    match v {
        Value::Null => out.push_str("nil"),
        Value::String(s) => quote(s, out),
        Value::Object(m) => hash(m.iter(), level, out),
        Value::Array(a) if a.is_empty() => out.push_str("[]"),
        Value::Array(a) => {
            out.push_str("[\n");
            let width = format!("[{}]", a.len() - 1).len();
            for (i, item) in a.iter().enumerate() {
                indent(level + 1, out);
                let label = format!("[{i}]");
                for _ in label.len()..width {
                    out.push(' ');
                }
                out.push_str(&label);
                out.push(' ');
                value(item, level + 1, out);
                if i + 1 < a.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            indent(level, out);
            out.push(']');
        }
        other => other.write_display(out),
    }
}

fn hash<'a>(
    entries: impl ExactSizeIterator<Item = (&'a sluice_event::Key, &'a Value)> + Clone,
    level: usize,
    out: &mut String,
) {
    if entries.len() == 0 {
        out.push_str("{}");
        return;
    }
    let width = entries
        .clone()
        .map(|(k, _)| k.chars().count() + 2)
        .max()
        .unwrap_or(0);
    out.push_str("{\n");
    let n = entries.len();
    for (i, (k, v)) in entries.enumerate() {
        indent(level + 1, out);
        for _ in k.chars().count() + 2..width {
            out.push(' ');
        }
        quote(k, out);
        out.push_str(" => ");
        value(v, level + 1, out);
        if i + 1 < n {
            out.push(',');
        }
        out.push('\n');
    }
    indent(level, out);
    out.push('}');
}

impl Codec for RubyDebug {
    fn decode(&mut self, data: &[u8], out: &mut Vec<Event>) {
        if !data.is_empty() {
            out.push(Event::with_message(
                String::from_utf8_lossy(data).into_owned(),
            ));
        }
    }

    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        let mut s = String::new();
        if self.metadata && !event.metadata().is_empty() {
            let mut all: Map = event.fields().clone();
            all.insert("@metadata".into(), Value::Object(event.metadata().clone()));
            hash(all.iter(), 0, &mut s);
        } else {
            hash(event.fields().iter(), 0, &mut s);
        }
        s.push('\n');
        out.extend_from_slice(s.as_bytes());
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_event::{FieldRef, Timestamp};

    #[test]
    fn prints_like_awesome_print() {
        let mut e = Event::with_message("hi \"x\"");
        e.set_timestamp(Timestamp::from_millis(0));
        e.set(&FieldRef::parse("[host][name]").unwrap(), "box".into());
        e.set_field("tags", Value::Array(vec!["a".into(), "b".into()]));
        let mut out = Vec::new();
        RubyDebug { metadata: false }.encode(&e, &mut out);
        let expected = r#"{
    "@timestamp" => 1970-01-01T00:00:00.000Z,
      "@version" => "1",
          "host" => {
        "name" => "box"
    },
       "message" => "hi \"x\"",
          "tags" => [
        [0] "a",
        [1] "b"
    ]
}
"#;
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }
}
