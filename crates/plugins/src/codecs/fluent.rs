//! `fluent`: Fluentd's forward protocol, as logstash-codec-fluent does. Decoding reads a
//! stream of MessagePack arrays (values split across reads are kept until complete): Message
//! mode `[tag, time, record]`, Forward mode `[tag, [[time, record], …]]` and PackedForward
//! mode `[tag, bytes of [time, record]…]` (compressed ones are refused); each record becomes
//! an event (under `target` when set) with `@timestamp` from its time (seconds, or fluent's
//! EventTime extension with nanoseconds) and the tag in `tags`. Anything else becomes
//! `message` tagged `_fluentparsefailure`. Encoding writes `[tag, time, record]`: the tag is
//! the event's tags joined with `.` (or `log`), the time its seconds (an EventTime with
//! `nanosecond_precision`), the record its fields with timestamps as ISO-8601 text.

use sluice_event::{Event, FieldRef, Timestamp, Value};
use sluice_pipeline::{Codec, ConfigError, Options};

use super::msgpack::{from_map, to_map, to_value};
use super::targeted_event;

const EVENT_TIME: i8 = 0;

#[derive(Clone)]
pub struct Fluent {
    nanosecond_precision: bool,
    target: Option<FieldRef>,
    pending: Vec<u8>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Codec>, ConfigError> {
    let nanosecond_precision = opts.boolean_or("nanosecond_precision", false)?;
    let target = match opts.string("target")? {
        Some(t) => Some(FieldRef::parse(&t).map_err(|e| opts.error("target", e.to_string()))?),
        None => None,
    };
    Ok(Box::new(Fluent {
        nanosecond_precision,
        target,
        pending: Vec::new(),
    }))
}

/// A fluent time in milliseconds: integer seconds, or the EventTime extension.
fn millis(t: &rmpv::Value) -> Option<i64> {
    match t {
        rmpv::Value::Integer(i) => i.as_i64().map(|s| s * 1000),
        rmpv::Value::Ext(EVENT_TIME, b) if b.len() == 8 => {
            let sec = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            let nsec = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
            Some(i64::from(sec) * 1000 + i64::from(nsec) / 1_000_000)
        }
        _ => None,
    }
}

impl Fluent {
    fn event(&self, record: rmpv::Value, time: &rmpv::Value, tag: &str) -> Result<Event, String> {
        let rmpv::Value::Map(entries) = record else {
            return Err("a record is not a map".to_owned());
        };
        let ms = millis(time).ok_or("a time is neither seconds nor an EventTime")?;
        let mut e = targeted_event(to_map(entries), self.target.as_ref());
        e.set_timestamp(Timestamp::from_millis(ms));
        e.add_tag(tag);
        Ok(e)
    }

    /// Forward and PackedForward entries, `[time, record]` each: all become events, or none.
    fn entries(
        &self,
        list: Vec<rmpv::Value>,
        tag: &str,
        out: &mut Vec<Event>,
    ) -> Result<(), String> {
        let mut made = Vec::with_capacity(list.len());
        for entry in list {
            let rmpv::Value::Array(mut pair) = entry else {
                return Err("an entry is not [time, record]".to_owned());
            };
            if pair.len() < 2 {
                return Err("an entry is not [time, record]".to_owned());
            }
            let record = pair.remove(1);
            made.push(self.event(record, &pair[0], tag)?);
        }
        out.append(&mut made);
        Ok(())
    }

    fn item(&self, item: rmpv::Value, out: &mut Vec<Event>) -> Result<(), String> {
        let rmpv::Value::Array(mut parts) = item else {
            return Err("not an array".to_owned());
        };
        if parts.len() < 2 {
            return Err("fewer than two elements".to_owned());
        }
        let tag = to_value(parts[0].clone()).to_display_string();
        let entries = parts.remove(1);
        match entries {
            rmpv::Value::Binary(_) | rmpv::Value::String(_) => {
                let compressed = parts.get(1).is_some_and(|o| match o {
                    rmpv::Value::Map(m) => m.iter().any(|(k, v)| {
                        k.as_str() == Some("compressed") && v.as_str() == Some("gzip")
                    }),
                    _ => false,
                });
                if compressed {
                    return Err("PackedForward with compression is not supported".to_owned());
                }
                let bytes = match &entries {
                    rmpv::Value::Binary(b) => b.clone(),
                    rmpv::Value::String(s) => s.as_bytes().to_vec(),
                    _ => unreachable!(),
                };
                let mut rd = &bytes[..];
                let mut list = Vec::new();
                while !rd.is_empty() {
                    list.push(rmpv::decode::read_value(&mut rd).map_err(|e| e.to_string())?);
                }
                self.entries(list, &tag, out)?;
            }
            rmpv::Value::Array(list) => self.entries(list, &tag, out)?,
            time @ (rmpv::Value::Integer(_) | rmpv::Value::Ext(..)) => {
                let record = parts.get(1).cloned().unwrap_or(rmpv::Value::Nil);
                out.push(self.event(record, &time, &tag)?);
            }
            _ => return Err("Unknown event type".to_owned()),
        }
        Ok(())
    }
}

impl Codec for Fluent {
    fn decode(&mut self, data: &[u8], out: &mut Vec<Event>) {
        self.pending.extend_from_slice(data);
        let buf = std::mem::take(&mut self.pending);
        let mut rd = &buf[..];
        loop {
            if rd.is_empty() {
                break;
            }
            let before = rd;
            match rmpv::decode::read_value(&mut rd) {
                Ok(item) => {
                    let text = format!("{item}");
                    if let Err(e) = self.item(item, out) {
                        tracing::error!(error = %e, data = %text, "fluent codec: parse error, original data now in message field");
                        let mut ev = Event::with_message(text.as_str());
                        ev.add_tag("_fluentparsefailure");
                        out.push(ev);
                    }
                }
                Err(
                    rmpv::decode::Error::InvalidMarkerRead(e)
                    | rmpv::decode::Error::InvalidDataRead(e),
                ) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    // Incomplete: kept for the next read.
                    rd = before;
                    break;
                }
                Err(e) => {
                    tracing::error!(error = %e, "fluent codec: data is not MessagePack; dropping what was buffered");
                    rd = &[];
                    break;
                }
            }
        }
        self.pending = rd.to_vec();
    }

    fn pending_bytes(&self) -> usize {
        self.pending.len()
    }

    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        let tag = match event.get_field("tags") {
            Some(Value::Array(items)) => items
                .iter()
                .map(Value::to_display_string)
                .collect::<Vec<_>>()
                .join("."),
            Some(Value::Null) | None => "log".to_owned(),
            Some(other) => other.to_display_string(),
        };
        let ms = event.timestamp().map_or(0, |t| t.millis());
        let secs = ms.div_euclid(1000);
        let time = if self.nanosecond_precision {
            let nsec = (ms.rem_euclid(1000) * 1_000_000) as u32;
            let mut b = (secs as u32).to_be_bytes().to_vec();
            b.extend_from_slice(&nsec.to_be_bytes());
            rmpv::Value::Ext(EVENT_TIME, b)
        } else {
            rmpv::Value::from(secs)
        };
        let msg = rmpv::Value::Array(vec![rmpv::Value::from(tag), time, from_map(event.fields())]);
        let _ = rmpv::encode::write_value(out, &msg);
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        Box::new(Fluent {
            nanosecond_precision: self.nanosecond_precision,
            target: self.target.clone(),
            pending: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codec(nanos: bool) -> Fluent {
        Fluent {
            nanosecond_precision: nanos,
            target: None,
            pending: Vec::new(),
        }
    }

    fn pack(v: &rmpv::Value) -> Vec<u8> {
        let mut out = Vec::new();
        rmpv::encode::write_value(&mut out, v).unwrap();
        out
    }

    fn record(n: i64) -> rmpv::Value {
        rmpv::Value::Map(vec![(rmpv::Value::from("n"), rmpv::Value::from(n))])
    }

    #[test]
    fn decodes_the_three_modes_across_reads() {
        let t = rmpv::Value::from(1_700_000_000i64);
        let message = pack(&rmpv::Value::Array(vec![
            "app".into(),
            t.clone(),
            record(1),
        ]));
        let forward = pack(&rmpv::Value::Array(vec![
            "app".into(),
            rmpv::Value::Array(vec![
                rmpv::Value::Array(vec![t.clone(), record(2)]),
                rmpv::Value::Array(vec![t.clone(), record(3)]),
            ]),
        ]));
        let mut packed_entries = pack(&rmpv::Value::Array(vec![t.clone(), record(4)]));
        // An EventTime: seconds and nanoseconds.
        let mut ext = 1_700_000_000u32.to_be_bytes().to_vec();
        ext.extend_from_slice(&500_000_000u32.to_be_bytes());
        packed_entries.extend(pack(&rmpv::Value::Array(vec![
            rmpv::Value::Ext(0, ext),
            record(5),
        ])));
        let packed = pack(&rmpv::Value::Array(vec![
            "app".into(),
            rmpv::Value::Binary(packed_entries),
        ]));
        let stream: Vec<u8> = [message, forward, packed].concat();
        let mut c = codec(false);
        let mut out = Vec::new();
        // Fed a few bytes at a time: values split across reads are kept until complete.
        for chunk in stream.chunks(7) {
            c.decode(chunk, &mut out);
        }
        assert_eq!(c.pending_bytes(), 0);
        let ns: Vec<i64> = out
            .iter()
            .map(|e| e.get_field("n").and_then(|v| v.as_f64()).unwrap() as i64)
            .collect();
        assert_eq!(ns, [1, 2, 3, 4, 5]);
        assert!(out.iter().all(|e| e.has_tag("app")));
        assert_eq!(out[0].timestamp().unwrap().millis(), 1_700_000_000_000);
        assert_eq!(out[4].timestamp().unwrap().millis(), 1_700_000_000_500);

        let mut out = Vec::new();
        c.decode(
            &pack(&rmpv::Value::Array(vec![
                "app".into(),
                "x".into(),
                rmpv::Value::Nil,
            ])),
            &mut out,
        );
        c.decode(&pack(&rmpv::Value::from(5)), &mut out);
        assert!(
            out.iter().all(|e| e.has_tag("_fluentparsefailure")),
            "{out:?}"
        );
    }

    #[test]
    fn encodes_what_it_decodes() {
        let mut e = Event::new();
        e.set_timestamp(Timestamp::from_millis(1_700_000_000_250));
        e.set_field("message", Value::String("hi".into()));
        e.add_tag("a");
        e.add_tag("b");
        for nanos in [false, true] {
            let mut c = codec(nanos);
            let mut bytes = Vec::new();
            c.encode(&e, &mut bytes);
            let mut out = Vec::new();
            c.decode(&bytes, &mut out);
            assert_eq!(out.len(), 1);
            assert_eq!(
                out[0].get_field("message"),
                Some(&Value::String("hi".into()))
            );
            assert!(out[0].has_tag("a.b"), "the tags joined are the fluent tag");
            let ms = out[0].timestamp().unwrap().millis();
            assert_eq!(
                ms,
                if nanos {
                    1_700_000_000_250
                } else {
                    1_700_000_000_000
                }
            );
        }
    }
}
