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
/// The tag an event gets when it arrives with a `tags` field that is neither a string nor a
/// list of strings; the value is kept, in a one-element list, in [`TAGS_FAILURE_FIELD`].
pub const TAGS_PARSE_FAILURE: &str = "_tagsparsefailure";
pub const TAGS_FAILURE_FIELD: &str = "_tags";

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
        // Room for the fields an input and a filter or two add, without growing.
        let mut entries = Vec::with_capacity(8);
        entries.push((crate::key!(TIMESTAMP), Value::Timestamp(Timestamp::now())));
        entries.push((crate::key!(VERSION), Value::String("1".into())));
        // In order: "@timestamp" < "@version".
        let fields = Map::from_sorted_store_unchecked(entries);
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
            .insert(crate::key!("message"), Value::String(message.into()));
        e
    }

    /// Builds an event from decoded fields (a JSON object, a queue record), as Logstash's
    /// `Event.new(hash)`: `@timestamp` strings are parsed (unparseable ones are kept in
    /// `_@timestamp` and tagged), missing `@timestamp`/`@version` are filled in, and
    /// `@metadata` moves to the metadata side.
    pub fn from_map(fields: Map) -> Event {
        Event::from_map_at(fields, Timestamp::now)
    }

    /// [`Event::from_map`], with `now` giving the time a missing `@timestamp` gets: an input
    /// that makes many events at once reads the clock once for them.
    pub fn from_map_at(fields: Map, now: impl FnOnce() -> Timestamp) -> Event {
        let mut now = Some(now);
        let mut stamp = || Value::Timestamp(now.take().map_or_else(Timestamp::now, |f| f()));
        let mut entries = fields.into_tuple_vec();
        let metadata = match entries.binary_search_by(|(k, _)| k.cmp(&crate::key!(METADATA))) {
            Err(_) => Value::Null,
            Ok(i) => {
                // `@timestamp`, when missing, usually sorts right after `@metadata`: it takes
                // its place, and the entries after it move neither back nor forth.
                let stamp_here =
                    (entries.get(i + 1)).is_none_or(|(k, _)| *k > crate::key!(TIMESTAMP));
                if stamp_here {
                    std::mem::replace(&mut entries[i], (crate::key!(TIMESTAMP), stamp())).1
                } else {
                    entries.remove(i).1
                }
            }
        };
        let metadata = match metadata {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let mut fields = Map::from_sorted_store_unchecked(entries);
        // Room for `@timestamp`, `@version` and the fields an input adds (a tag, the
        // original), so that the map grows once, now, while it is smallest.
        fields.reserve(4);
        // `@timestamp` is fixed where it lies: parsed if a string, moved aside if unusable.
        let mut failed = None;
        let stamped = match fields.get_mut(&crate::key!(TIMESTAMP)) {
            Some(Value::Timestamp(_)) => true,
            Some(v) => {
                let parsed = match v {
                    Value::String(s) => Timestamp::parse_iso8601(s),
                    _ => None,
                };
                match parsed {
                    Some(t) => *v = Value::Timestamp(t),
                    None => failed = fields.remove(&crate::key!(TIMESTAMP)),
                }
                parsed.is_some()
            }
            None => false,
        };
        if !stamped {
            fields.insert(crate::key!(TIMESTAMP), stamp());
        }
        fields
            .entry(crate::key!(VERSION))
            .or_insert_with(|| Value::String("1".into()));
        // As Logstash: `tags` must be a string or a list of strings. Anything else moves to
        // `_tags` (in a list) and `tags` says so; checked before `@timestamp`'s own tag.
        let illegal_tags = match fields.get(&crate::key!(TAGS)) {
            None | Some(Value::Null) | Some(Value::String(_)) => false,
            Some(Value::Array(a)) => !a.iter().all(|v| matches!(v, Value::String(_))),
            Some(_) => true,
        };
        if illegal_tags {
            if let Some(bad) = fields.remove(&crate::key!(TAGS)) {
                fields.insert(crate::key!(TAGS_FAILURE_FIELD), Value::Array(vec![bad]));
                fields.insert(
                    crate::key!(TAGS),
                    Value::Array(vec![Value::String(TAGS_PARSE_FAILURE.into())]),
                );
            }
        }
        let mut event = Event {
            fields,
            metadata,
            cancelled: false,
            origin: 0,
        };
        if let Some(bad) = failed {
            event.fields.insert(crate::key!("_@timestamp"), bad);
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

    /// The fields and the metadata, both to change (the queue's decoder fills them).
    pub(crate) fn maps_mut(&mut self) -> (&mut Map, &mut Map) {
        (&mut self.fields, &mut self.metadata)
    }

    pub fn metadata(&self) -> &Map {
        &self.metadata
    }

    pub fn metadata_mut(&mut self) -> &mut Map {
        &mut self.metadata
    }

    /// Bytes the event holds by Logstash's estimate (`Event.estimateMemory`): its fields'
    /// and metadata's values (see [`Value::estimate_memory`]).
    pub fn estimate_memory(&self) -> u64 {
        crate::value::estimate_map_memory(&self.fields)
            + crate::value::estimate_map_memory(&self.metadata)
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

    /// The field at `r`, made null (with the objects on the way, as [`Event::set`] makes them)
    /// if absent: for code that looks at a field and then sets or extends it, in one walk,
    /// writing its value where it stays. `None` for `[@metadata]` itself. A string written
    /// here to `@timestamp` stays a string: set that field with [`Event::set`].
    pub fn slot(&mut self, r: &FieldRef) -> Option<&mut Value> {
        if r.is_metadata() {
            fieldref::slot(&mut self.metadata, &r.segments()[1..])
        } else {
            fieldref::slot(&mut self.fields, r.segments())
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

    /// Sets the field unless it exists (even as null), in one walk; returns whether it did.
    pub fn set_if_absent(&mut self, r: &FieldRef, value: Value) -> bool {
        if r.is_metadata() {
            let path = &r.segments()[1..];
            return !path.is_empty() && fieldref::set_if_absent(&mut self.metadata, path, value);
        }
        if r.is_top_level() && r.segments()[0] == TIMESTAMP {
            if self.fields.contains_key(&crate::key!(TIMESTAMP)) {
                return false;
            }
            self.set(r, value);
            return true;
        }
        fieldref::set_if_absent(&mut self.fields, r.segments(), value)
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
        match self.fields.get(&crate::key!(TIMESTAMP)) {
            Some(Value::Timestamp(t)) => Some(*t),
            _ => None,
        }
    }

    pub fn set_timestamp(&mut self, t: Timestamp) {
        self.fields
            .insert(crate::key!(TIMESTAMP), Value::Timestamp(t));
    }

    pub fn has_tag(&self, tag: &str) -> bool {
        match self.fields.get(&crate::key!(TAGS)) {
            Some(Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(tag)),
            Some(Value::String(s)) => s == tag,
            _ => false,
        }
    }

    /// Logstash's `Event#tag` (what `tag_on_failure` and the plugins' own tags use): adds `tag`
    /// unless present. A string `tags` equal to it stays a string; any other becomes a list
    /// first.
    pub fn add_tag(&mut self, tag: &str) {
        self.add_tag_made(tag, || tag.into());
    }

    /// [`Event::add_tag`] with the string to keep: a constant one
    /// ([`crate::value::constant_str`]) is kept without a copy.
    pub fn add_tag_str(&mut self, tag: &Str) {
        self.add_tag_made(tag, || tag.clone());
    }

    fn add_tag_made(&mut self, tag: &str, make: impl Fn() -> Str) {
        let tags = self
            .fields
            .entry(crate::key!(TAGS))
            .or_insert_with(|| Value::Array(Vec::with_capacity(1)));
        match tags {
            Value::Array(a) => {
                if !a.iter().any(|v| v.as_str() == Some(tag)) {
                    a.push(Value::String(make()));
                }
            }
            Value::Null => *tags = Value::Array(vec![Value::String(make())]),
            Value::String(s) if s == tag => {}
            other => {
                let old = std::mem::take(other);
                *other = Value::Array(vec![old, Value::String(make())]);
            }
        }
    }

    /// The `add_tag` option of filters and the `tags` option of inputs (Logstash's
    /// decorators): `tags` becomes a list (a string its only item) and `tag` is appended,
    /// even when already there.
    pub fn append_tag(&mut self, tag: &str) {
        let tags = self.tags_as_list();
        tags.push(Value::String(tag.into()));
    }

    /// The `remove_tag` option of filters (Logstash's `filter_matched`): when there is a
    /// `tags` field, it becomes a list (a string its only item) without any `tag`; an empty
    /// list stays.
    pub fn remove_tag(&mut self, tag: &str) {
        if matches!(
            self.fields.get(&crate::key!(TAGS)),
            None | Some(Value::Null)
        ) {
            return;
        }
        self.tags_as_list().retain(|v| v.as_str() != Some(tag));
    }

    /// The `tags` field as a list, made one first (Ruby's `Array(tags)`).
    fn tags_as_list(&mut self) -> &mut Vec<Value> {
        let tags = self
            .fields
            .entry(crate::key!(TAGS))
            .or_insert_with(|| Value::Array(Vec::new()));
        if !matches!(tags, Value::Array(_)) {
            let old = std::mem::take(tags);
            *tags = Value::Array(match old {
                Value::Null => Vec::new(),
                other => vec![other],
            });
        }
        match tags {
            Value::Array(a) => a,
            _ => unreachable!("made a list above"),
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

    pub fn uncancel(&mut self) {
        self.cancelled = false;
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
    fn memory_estimate_follows_logstash() {
        // @timestamp 12, @version "1" 1, message "hi" 2.
        let mut e = Event::with_message("hi");
        assert_eq!(e.estimate_memory(), 15);
        // Values only, keys never: "é" is 2 bytes, the array 8 + 1 + 12, the hash 8.
        e.set(&r("[a][b]"), "é".into());
        e.set(
            &r("list"),
            Value::Array(vec![Value::Float(1.5), Value::Bool(true), Value::Null]),
        );
        e.set(&r("[@metadata][n]"), Value::Int(-3));
        assert_eq!(e.estimate_memory(), 15 + 2 + 21 + 8);
        // Beyond 64 bits: BigInteger's bitLength rounded up to bytes, plus 4.
        let big = |i: i128| Value::integer(i).estimate_memory();
        assert_eq!(big(1 << 64), 9 + 4);
        assert_eq!(big(-(1 << 64)), 8 + 4);
        assert_eq!(big(i128::MAX), 16 + 4);
        assert_eq!(big(i128::MIN), 16 + 4);
    }

    #[test]
    fn metadata_is_separate() {
        let mut e = Event::new();
        e.set(&r("[@metadata][index]"), "logs".into());
        assert_eq!(e.get(&r("[@metadata][index]")), Some(&"logs".into()));
        assert!(!e.fields().contains_key(&crate::key!(METADATA)));
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

    /// `@metadata` moves to the metadata side wherever `@timestamp` goes (a missing one takes
    /// `@metadata`'s place when it sorts there); the fields stay in name order.
    #[test]
    fn from_map_moves_the_metadata_and_keeps_the_order() {
        let then = Timestamp::from_millis(1_000);
        for (json, keys) in [
            (
                r#"{"@metadata":{"a":1},"message":"m"}"#,
                "@timestamp @version message",
            ),
            (r#"{"@metadata":{"a":1}}"#, "@timestamp @version"),
            (
                r#"{"@metadata":{"a":1},"@source":1,"z":2}"#,
                "@source @timestamp @version z",
            ),
            (
                r#"{"@a":0,"@metadata":{"a":1},"@timestamp":"2020-01-02T03:04:05Z"}"#,
                "@a @timestamp @version",
            ),
            (
                r#"{"@metadata":"not an object","@version":"2","x":1}"#,
                "@timestamp @version x",
            ),
            (r#"{"message":"m"}"#, "@timestamp @version message"),
        ] {
            let Ok(Value::Object(m)) = crate::json::parse(json.as_bytes()) else {
                panic!("{json}")
            };
            let e = Event::from_map_at(m, || then);
            let got: Vec<&str> = e.fields().keys().map(|k| k.as_str()).collect();
            assert_eq!(got.join(" "), keys, "{json}");
            let mut sorted = got.clone();
            sorted.sort();
            assert_eq!(got, sorted, "{json}");
            let expected_meta = if json.contains(r#"{"a":1}"#) { 1 } else { 0 };
            assert_eq!(e.metadata().len(), expected_meta, "{json}");
            if !json.contains("2020") {
                assert_eq!(e.timestamp(), Some(then), "{json}");
            }
            for (k, _) in e.fields().iter() {
                assert!(e.fields().get(k).is_some(), "{json}: {k:?} is found");
            }
        }
    }

    /// `from_map_at`: the given time where `@timestamp` is missing or unusable, and the clock
    /// not asked where it is there.
    #[test]
    fn from_map_at_stamps_with_the_given_time() {
        let then = Timestamp::from_millis(1_000);
        let e = Event::from_map_at(Map::new(), || then);
        assert_eq!(e.timestamp(), Some(then));
        let mut m = Map::new();
        m.insert(TIMESTAMP.into(), "garbage".into());
        let e = Event::from_map_at(m, || then);
        assert_eq!(e.timestamp(), Some(then));
        let mut m = Map::new();
        m.insert(TIMESTAMP.into(), "2020-01-02T03:04:05.678Z".into());
        let e = Event::from_map_at(m, || panic!("the clock is not read"));
        assert_eq!(
            e.timestamp().unwrap().to_iso8601(),
            "2020-01-02T03:04:05.678Z"
        );
    }

    fn list(items: &[&str]) -> Option<Value> {
        Some(Value::Array(items.iter().map(|t| (*t).into()).collect()))
    }

    /// `Event#tag` (Logstash's event spec): once each; a string `tags` that already says it
    /// stays a string.
    #[test]
    fn tag_adds_once_and_keeps_an_equal_string() {
        let by_str = |e: &mut Event, t: &str| e.add_tag_str(&crate::value::constant_str(t));
        for add in [Event::add_tag, by_str] {
            let mut e = Event::new();
            add(&mut e, "a");
            add(&mut e, "a");
            add(&mut e, "b");
            assert_eq!(e.get_field(TAGS).cloned(), list(&["a", "b"]));
            e.set_field(TAGS, "solo".into());
            add(&mut e, "solo");
            assert_eq!(e.get_field(TAGS), Some(&"solo".into()));
            add(&mut e, "two");
            assert_eq!(e.get_field(TAGS).cloned(), list(&["solo", "two"]));
            e.set_field(TAGS, Value::Int(1));
            add(&mut e, "three");
            assert_eq!(
                e.get_field(TAGS).cloned(),
                Some(Value::Array(vec![Value::Int(1), "three".into()]))
            );
        }
    }

    /// The add_tag/remove_tag options (Logstash's decorators and `filter_matched`): a string
    /// becomes a list the first time either touches it; add_tag appends even a tag already
    /// there; remove_tag removes every copy and leaves an empty list.
    #[test]
    fn tag_options_turn_a_string_into_a_list() {
        let mut e = Event::new();
        e.set_field(TAGS, "solo".into());
        e.append_tag("solo");
        assert_eq!(e.get_field(TAGS).cloned(), list(&["solo", "solo"]));
        e.remove_tag("solo");
        assert_eq!(e.get_field(TAGS).cloned(), list(&[]));
        e.set_field(TAGS, "solo".into());
        e.remove_tag("other");
        assert_eq!(e.get_field(TAGS).cloned(), list(&["solo"]));
        let mut bare = Event::new();
        bare.remove_tag("x");
        assert_eq!(bare.get_field(TAGS), None);
        bare.append_tag("x");
        assert_eq!(bare.get_field(TAGS).cloned(), list(&["x"]));
    }

    /// An event that arrives with `tags` neither a string nor a list of strings (Logstash's
    /// event spec and its `_tagsparsefailure` fixtures).
    #[test]
    fn illegal_tags_move_to_underscore_tags() {
        let parse = |json: &str| match crate::json::parse(json.as_bytes()) {
            Ok(Value::Object(m)) => Event::from_map(m),
            other => panic!("{other:?}"),
        };
        let e = parse(r#"{"tags": {"poison": true}}"#);
        assert_eq!(e.get_field(TAGS).cloned(), list(&[TAGS_PARSE_FAILURE]));
        let kept = crate::json::parse(br#"[{"poison": true}]"#).unwrap();
        assert_eq!(e.get_field(TAGS_FAILURE_FIELD), Some(&kept));
        let e = parse(r#"{"tags": [1, 2, 3]}"#);
        let kept = crate::json::parse(b"[[1, 2, 3]]").unwrap();
        assert_eq!(e.get_field(TAGS_FAILURE_FIELD), Some(&kept));
        let e = parse(r#"{"tags": ["a", "b"], "n": 1}"#);
        assert_eq!(e.get_field(TAGS).cloned(), list(&["a", "b"]));
        assert_eq!(e.get_field(TAGS_FAILURE_FIELD), None);
        let e = parse(r#"{"tags": "solo"}"#);
        assert_eq!(e.get_field(TAGS), Some(&"solo".into()));
    }
}
