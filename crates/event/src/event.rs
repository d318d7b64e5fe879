//! [`Event`]: one log record. Fields live in a [`Map`]; `@metadata` lives beside it so that
//! serialisation (JSON, the queue's own format decides separately) leaves it out, as Logstash does.

use crate::fieldref::{self, FieldRef};
use crate::timestamp::Timestamp;
use crate::value::{Key, Map, Str, Value};

pub const TIMESTAMP: &str = "@timestamp";
pub const VERSION: &str = "@version";
pub const TAGS: &str = "tags";
pub const METADATA: &str = "@metadata";
/// Logstash's tag for an `@timestamp` that could not be parsed on event creation.
pub const TIMESTAMP_PARSE_FAILURE: &str = "_timestampparsefailure";

#[derive(Debug, Clone)]
pub struct Event {
    fields: Map,
    metadata: Map,
    cancelled: bool,
    /// Which thread queued the event (see [`Event::origin`]); not part of its content.
    origin: u16,
}

/// Events are equal when their content is: fields, metadata and whether they were dropped.
impl PartialEq for Event {
    fn eq(&self, other: &Event) -> bool {
        self.fields == other.fields
            && self.metadata == other.metadata
            && self.cancelled == other.cancelled
    }
}

impl Default for Event {
    fn default() -> Self {
        Event::new()
    }
}

impl Event {
    /// An empty event stamped now, with `@version` "1".
    pub fn new() -> Event {
        let mut fields = Map::new();
        fields.insert(Key::from(TIMESTAMP), Value::Timestamp(Timestamp::now()));
        fields.insert(Key::from(VERSION), Value::String("1".into()));
        Event {
            fields,
            metadata: Map::new(),
            cancelled: false,
            origin: 0,
        }
    }

    /// An event with `message` set.
    pub fn with_message(message: impl Into<Str>) -> Event {
        let mut e = Event::new();
        e.fields
            .insert(Key::from("message"), Value::String(message.into()));
        e
    }

    /// Builds an event from decoded fields (a JSON object, a queue record), as Logstash's
    /// `Event.new(hash)`: `@timestamp` strings are parsed (unparseable ones are kept in
    /// `_@timestamp` and tagged), missing `@timestamp`/`@version` are filled in, and
    /// `@metadata` moves to the metadata side.
    pub fn from_map(mut fields: Map) -> Event {
        let metadata = match fields.remove(METADATA) {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        // `@timestamp` is fixed where it lies: parsed if a string, moved aside if unusable.
        let mut failed = None;
        let stamped = match fields.get_mut(TIMESTAMP) {
            Some(Value::Timestamp(_)) => true,
            Some(v) => {
                let parsed = match v {
                    Value::String(s) => Timestamp::parse_iso8601(s),
                    _ => None,
                };
                match parsed {
                    Some(t) => *v = Value::Timestamp(t),
                    None => failed = fields.remove(TIMESTAMP),
                }
                parsed.is_some()
            }
            None => false,
        };
        if !stamped {
            fields.insert(Key::from(TIMESTAMP), Value::Timestamp(Timestamp::now()));
        }
        fields
            .entry(Key::from(VERSION))
            .or_insert_with(|| Value::String("1".into()));
        let mut event = Event {
            fields,
            metadata,
            cancelled: false,
            origin: 0,
        };
        if let Some(bad) = failed {
            event.fields.insert(Key::from("_@timestamp"), bad);
            event.add_tag(TIMESTAMP_PARSE_FAILURE);
        }
        event
    }

    /// Builds an event from fields and metadata exactly as given (the queue's decoder).
    pub fn from_parts(fields: Map, metadata: Map) -> Event {
        Event {
            fields,
            metadata,
            cancelled: false,
            origin: 0,
        }
    }

    pub fn fields(&self) -> &Map {
        &self.fields
    }

    pub fn fields_mut(&mut self) -> &mut Map {
        &mut self.fields
    }

    pub fn metadata(&self) -> &Map {
        &self.metadata
    }

    pub fn into_parts(self) -> (Map, Map) {
        (self.fields, self.metadata)
    }

    /// The map a reference starts from and the path within it.
    fn root<'a, 'b>(&'a self, r: &'b FieldRef) -> (&'a Map, &'b [Key]) {
        if r.is_metadata() {
            (&self.metadata, &r.segments()[1..])
        } else {
            (&self.fields, r.segments())
        }
    }

    pub fn get(&self, r: &FieldRef) -> Option<&Value> {
        let (root, path) = self.root(r);
        fieldref::get(root, path)
    }

    /// `[@metadata]` itself, as a value, for references that name the whole map.
    pub fn metadata_value(&self) -> Value {
        Value::Object(self.metadata.clone())
    }

    pub fn get_mut(&mut self, r: &FieldRef) -> Option<&mut Value> {
        if r.is_metadata() {
            fieldref::get_mut(&mut self.metadata, &r.segments()[1..])
        } else {
            fieldref::get_mut(&mut self.fields, r.segments())
        }
    }

    /// Whether the field exists (even if null).
    pub fn contains(&self, r: &FieldRef) -> bool {
        if r.is_metadata() && r.segments().len() == 1 {
            return true;
        }
        self.get(r).is_some()
    }

    pub fn set(&mut self, r: &FieldRef, value: Value) {
        if r.is_metadata() {
            let path = &r.segments()[1..];
            if path.is_empty() {
                if let Value::Object(m) = value {
                    self.metadata = m;
                }
            } else {
                fieldref::set(&mut self.metadata, path, value);
            }
            return;
        }
        let value = match value {
            Value::String(s) if r.is_top_level() && r.segments()[0] == TIMESTAMP => {
                match Timestamp::parse_iso8601(&s) {
                    Some(t) => Value::Timestamp(t),
                    None => Value::String(s),
                }
            }
            v => v,
        };
        fieldref::set(&mut self.fields, r.segments(), value);
    }

    pub fn remove(&mut self, r: &FieldRef) -> Option<Value> {
        if r.is_metadata() {
            let path = &r.segments()[1..];
            if path.is_empty() {
                return Some(Value::Object(std::mem::take(&mut self.metadata)));
            }
            return fieldref::remove(&mut self.metadata, path);
        }
        fieldref::remove(&mut self.fields, r.segments())
    }

    /// A top-level field by its literal name.
    pub fn get_field(&self, name: &str) -> Option<&Value> {
        self.fields.get(name)
    }

    pub fn set_field(&mut self, name: &str, value: Value) {
        self.fields.insert(Key::from(name), value);
    }

    pub fn timestamp(&self) -> Option<Timestamp> {
        match self.fields.get(TIMESTAMP) {
            Some(Value::Timestamp(t)) => Some(*t),
            _ => None,
        }
    }

    pub fn set_timestamp(&mut self, t: Timestamp) {
        self.fields
            .insert(Key::from(TIMESTAMP), Value::Timestamp(t));
    }

    pub fn has_tag(&self, tag: &str) -> bool {
        match self.fields.get(TAGS) {
            Some(Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(tag)),
            Some(Value::String(s)) => s == tag,
            _ => false,
        }
    }

    /// Adds `tag` unless present; a scalar `tags` field becomes an array first.
    pub fn add_tag(&mut self, tag: &str) {
        let tags = self
            .fields
            .entry(Key::from(TAGS))
            .or_insert_with(|| Value::Array(Vec::new()));
        match tags {
            Value::Array(a) => {
                if !a.iter().any(|v| v.as_str() == Some(tag)) {
                    a.push(Value::String(tag.into()));
                }
            }
            Value::Null => *tags = Value::Array(vec![Value::String(tag.into())]),
            other => {
                let old = std::mem::take(other);
                let mut a = vec![old];
                if a[0].as_str() != Some(tag) {
                    a.push(Value::String(tag.into()));
                }
                *other = Value::Array(a);
            }
        }
    }

    pub fn remove_tag(&mut self, tag: &str) {
        match self.fields.get_mut(TAGS) {
            Some(Value::Array(a)) => a.retain(|v| v.as_str() != Some(tag)),
            Some(Value::String(s)) if s == tag => {
                self.fields
                    .insert(Key::from(TAGS), Value::Array(Vec::new()));
            }
            _ => {}
        }
    }

    /// A number for the thread that queued the event, set by the memory queue so that the
    /// event's memory can be freed on that thread once the outputs are done with it.
    pub fn origin(&self) -> u16 {
        self.origin
    }

    pub fn set_origin(&mut self, origin: u16) {
        self.origin = origin;
    }

    /// Marks the event dropped; the pipeline removes cancelled events from the batch.
    pub fn cancel(&mut self) {
        self.cancelled = true;
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> FieldRef {
        FieldRef::parse(s).unwrap()
    }

    #[test]
    fn new_event_has_reserved_fields() {
        let e = Event::with_message("hi");
        assert!(e.timestamp().is_some());
        assert_eq!(e.get(&r("@version")), Some(&"1".into()));
        assert_eq!(e.get(&r("message")), Some(&"hi".into()));
    }

    #[test]
    fn metadata_is_separate() {
        let mut e = Event::new();
        e.set(&r("[@metadata][index]"), "logs".into());
        assert_eq!(e.get(&r("[@metadata][index]")), Some(&"logs".into()));
        assert!(!e.fields().contains_key(METADATA));
    }

    #[test]
    fn from_map_parses_and_tags_bad_timestamps() {
        let mut m = Map::new();
        m.insert(TIMESTAMP.into(), "2020-01-02T03:04:05.678Z".into());
        let e = Event::from_map(m);
        assert_eq!(
            e.timestamp().unwrap().to_iso8601(),
            "2020-01-02T03:04:05.678Z"
        );

        let mut m = Map::new();
        m.insert(TIMESTAMP.into(), "garbage".into());
        let e = Event::from_map(m);
        assert!(e.has_tag(TIMESTAMP_PARSE_FAILURE));
        assert_eq!(e.get_field("_@timestamp"), Some(&"garbage".into()));
    }

    #[test]
    fn tags_add_once_and_remove() {
        let mut e = Event::new();
        e.add_tag("a");
        e.add_tag("a");
        e.add_tag("b");
        assert_eq!(
            e.get_field(TAGS),
            Some(&Value::Array(vec!["a".into(), "b".into()]))
        );
        e.remove_tag("a");
        assert!(!e.has_tag("a"));
        e.set_field(TAGS, "solo".into());
        e.add_tag("two");
        assert!(e.has_tag("solo") && e.has_tag("two"));
    }
}
