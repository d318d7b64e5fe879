//! `json`: parses a field holding JSON text into the event, as logstash-filter-json does.
//!
//! - Without `target`, the parsed value must be an object; its keys are set on the event one
//!   by one as field references (so a key `[a][b]` sets a nested field). Anything else (an
//!   array, a string) tags the event with `tag_on_failure` (`_jsonparsefailure`).
//! - With `target`, whatever was parsed (object, array, scalar) is stored there.
//! - An `@timestamp` key (without target) becomes the event's timestamp; one that is not an
//!   ISO-8601 string sets the timestamp to now, keeps the original text in `_@timestamp` and
//!   tags `_timestampparsefailure`, as Logstash does. A null `@timestamp` is dropped.
//! - Text that is not JSON tags the event, unless `skip_on_invalid_json`, which leaves it
//!   untouched and untagged. Like Jackson, only the first JSON value of the text is read;
//!   empty text parses as null. A missing source field (or null/false) is left alone.
//! - A key that is not a valid field name (`un[sup]]ported`) fails the whole event (nothing
//!   is set), as in Logstash's strict field-reference mode.

use sluice_event::{Event, FieldRef, Map, Timestamp, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

use crate::field::FieldName;

#[derive(Clone)]
pub struct Json {
    source: FieldName,
    target: Option<FieldName>,
    tag_on_failure: Vec<String>,
    skip_on_invalid_json: bool,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let source = opts.required_string("source")?;
    let source = FieldName::parse(opts, "source", &source)?;
    let target = match opts.string("target")? {
        Some(t) => Some(FieldName::parse(opts, "target", &t)?),
        None => None,
    };
    let tag_on_failure = opts
        .string_list("tag_on_failure")?
        .unwrap_or_else(|| vec!["_jsonparsefailure".to_owned()]);
    let skip_on_invalid_json = opts.boolean_or("skip_on_invalid_json", false)?;
    crate::ecs::Ecs::from_options(opts)?;
    Ok(Box::new(Json {
        source,
        target,
        tag_on_failure,
        skip_on_invalid_json,
    }))
}

/// Jackson's reading of a document: its first value (empty text is null). Numbers as
/// [`sluice_event::json::parse`] reads them (integers past 64 bits exact).
fn parse_first(text: &str) -> Option<Value> {
    if text.trim().is_empty() {
        return Some(Value::Null);
    }
    if let Ok(v) = sluice_event::json::parse(text.as_bytes()) {
        return Some(v);
    }
    // Something follows the first value: find where it ends, and read just that.
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<serde::de::IgnoredAny>();
    values.next()?.ok()?;
    sluice_event::json::parse(&text.as_bytes()[..values.byte_offset()]).ok()
}

/// Whether every key in `v` (at any depth) is usable as a field name.
fn keys_valid(v: &Value) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .all(|(k, v)| (!k.contains(['[', ']']) || FieldRef::parse(k).is_ok()) && keys_valid(v)),
        Value::Array(a) => a.iter().all(keys_valid),
        _ => true,
    }
}

impl Json {
    fn tag(&self, e: &mut Event) {
        for t in &self.tag_on_failure {
            e.add_tag(t);
        }
    }

    fn merge(&self, e: &mut Event, mut parsed: Map) -> bool {
        let ts = parsed.remove("@timestamp");
        let mut refs = Vec::with_capacity(parsed.len());
        for (k, v) in parsed {
            match FieldRef::parse(&k) {
                Ok(r) if keys_valid(&v) => refs.push((r, v)),
                _ => return false,
            }
        }
        for (r, v) in refs {
            e.set(&r, v);
        }
        match ts {
            None | Some(Value::Null) | Some(Value::Bool(false)) => {}
            Some(Value::Timestamp(t)) => e.set_timestamp(t),
            Some(other) => {
                let parsed = match &other {
                    Value::String(s) => Timestamp::parse_iso8601(s),
                    _ => None,
                };
                match parsed {
                    Some(t) => e.set_timestamp(t),
                    None => {
                        e.set_timestamp(Timestamp::now());
                        e.add_tag("_timestampparsefailure");
                        e.set_field(
                            "_@timestamp",
                            Value::String(other.to_display_string().into()),
                        );
                    }
                }
            }
        }
        true
    }
}

impl Filter for Json {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let Some(src) = self.source.resolve(event) else {
            return false;
        };
        let parsed = match event.get(&src) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => return false,
            Some(Value::String(s)) => parse_first(s),
            Some(_) => None,
        };
        let Some(parsed) = parsed else {
            if !self.skip_on_invalid_json {
                self.tag(event);
            }
            return false;
        };
        match &self.target {
            Some(target) => {
                let Some(t) = target.resolve(event).map(|r| r.into_owned()) else {
                    self.tag(event);
                    return false;
                };
                if !keys_valid(&parsed) {
                    self.tag(event);
                    return false;
                }
                event.set(&t, parsed);
            }
            None => {
                let Value::Object(map) = parsed else {
                    self.tag(event);
                    return false;
                };
                if !self.merge(event, map) {
                    self.tag(event);
                    return false;
                }
            }
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}
