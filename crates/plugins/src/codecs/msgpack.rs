//! `msgpack`: one MessagePack map per event, as logstash-codec-msgpack does. Decoding: the
//! map's entries become the event's fields (under `target` when set); with `format`, an event
//! without `message` gets that sprintf'd text as its message; data that is not a map becomes
//! `message` tagged `_msgpackparsefailure`. Encoding: the event's fields (no `@metadata`) with
//! `@timestamp` (and every other timestamp) as ISO-8601 text.
//!
//! Conversions both ways (shared with the fluent codec): nil, booleans, integers (past 64
//! bits impossible in MessagePack), floats, strings (and binary, read as text), arrays and maps
//! (keys as text); extension values other than fluent's time are null.

use sluice_event::{Event, FieldRef, Map, Template, Value};
use sluice_pipeline::{Codec, ConfigError, Options};

use super::targeted_event;

/// A MessagePack value as an event value.
pub fn to_value(v: rmpv::Value) -> Value {
    match v {
        rmpv::Value::Nil | rmpv::Value::Ext(..) => Value::Null,
        rmpv::Value::Boolean(b) => Value::Bool(b),
        rmpv::Value::Integer(i) => match (i.as_i64(), i.as_u64()) {
            (Some(n), _) => Value::Int(n),
            (None, Some(n)) => Value::integer(i128::from(n)),
            _ => Value::Null,
        },
        rmpv::Value::F32(f) => Value::Float(f64::from(f)),
        rmpv::Value::F64(f) => Value::Float(f),
        rmpv::Value::String(s) => {
            Value::String(String::from_utf8_lossy(s.as_bytes()).as_ref().into())
        }
        rmpv::Value::Binary(b) => Value::String(String::from_utf8_lossy(&b).as_ref().into()),
        rmpv::Value::Array(items) => Value::Array(items.into_iter().map(to_value).collect()),
        rmpv::Value::Map(entries) => Value::Object(to_map(entries)),
    }
}

pub fn to_map(entries: Vec<(rmpv::Value, rmpv::Value)>) -> Map {
    entries
        .into_iter()
        .map(|(k, v)| {
            let key = match k {
                rmpv::Value::String(s) => String::from_utf8_lossy(s.as_bytes()).into_owned(),
                other => to_value(other).to_display_string(),
            };
            (key.into(), to_value(v))
        })
        .collect()
}

/// An event value as MessagePack (timestamps as ISO-8601 text).
pub fn from_value(v: &Value) -> rmpv::Value {
    match v {
        Value::Null => rmpv::Value::Nil,
        Value::Bool(b) => rmpv::Value::Boolean(*b),
        Value::Int(i) => rmpv::Value::from(*i),
        Value::BigInt(_) => match v.to_display_string().parse::<u64>() {
            Ok(n) => rmpv::Value::from(n),
            Err(_) => rmpv::Value::from(v.to_display_string()),
        },
        Value::Float(f) => rmpv::Value::F64(*f),
        // MessagePack has no bigger number: a Bignum's digits as text, a decimal as a float.
        Value::Decimal(d) if !d.contains(['.', 'E']) => rmpv::Value::from(d.as_str()),
        Value::Decimal(d) => rmpv::Value::F64(d.parse().unwrap_or(f64::NAN)),
        Value::String(s) => rmpv::Value::from(s.as_str()),
        Value::Timestamp(t) => rmpv::Value::from(t.to_iso8601()),
        Value::Array(items) => rmpv::Value::Array(items.iter().map(from_value).collect()),
        Value::Object(m) => from_map(m),
    }
}

pub fn from_map(m: &Map) -> rmpv::Value {
    rmpv::Value::Map(
        m.iter()
            .map(|(k, v)| (rmpv::Value::from(k.as_str()), from_value(v)))
            .collect(),
    )
}

#[derive(Clone)]
pub struct Msgpack {
    format: Option<Template>,
    target: Option<FieldRef>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Codec>, ConfigError> {
    let format = opts.string("format")?.map(|f| Template::parse(&f));
    let target = match opts.string("target")? {
        Some(t) => Some(FieldRef::parse(&t).map_err(|e| opts.error("target", e.to_string()))?),
        None => None,
    };
    Ok(Box::new(Msgpack { format, target }))
}

impl Codec for Msgpack {
    fn decode(&mut self, data: &[u8], out: &mut Vec<Event>) {
        let mut reader = data;
        match rmpv::decode::read_value(&mut reader) {
            Ok(rmpv::Value::Map(entries)) => {
                let mut e = targeted_event(to_map(entries), self.target.as_ref());
                if let Some(f) = &self.format {
                    if e.get_field("message").is_none() {
                        let text = f.render(&e);
                        e.set_field("message", Value::String(text.into()));
                    }
                }
                out.push(e);
            }
            other => {
                tracing::warn!(error = ?other.err(), "msgpack codec: trouble parsing msgpack input, falling back to plain text");
                let mut e = Event::with_message(String::from_utf8_lossy(data).as_ref());
                e.add_tag("_msgpackparsefailure");
                out.push(e);
            }
        }
    }

    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        let value = from_map(event.fields());
        let _ = rmpv::encode::write_value(out, &value);
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_failures() {
        let mut c = Msgpack {
            format: Some(Template::parse("%{a} %{b}")),
            target: None,
        };
        let mut e = Event::new();
        e.set_field("a", Value::Int(1));
        e.set_field(
            "b",
            Value::Array(vec![Value::Float(1.5), Value::Null, Value::Bool(true)]),
        );
        let mut bytes = Vec::new();
        c.encode(&e, &mut bytes);
        let mut out = Vec::new();
        c.decode(&bytes, &mut out);
        assert_eq!(out[0].get_field("a"), Some(&Value::Int(1)));
        assert_eq!(out[0].timestamp(), e.timestamp());
        assert_eq!(
            out[0].get_field("message"),
            Some(&Value::String("1 1.5,,true".into()))
        );
        let mut out = Vec::new();
        c.decode(b"\xc1 not msgpack", &mut out);
        assert!(out[0].has_tag("_msgpackparsefailure"));
    }
}
