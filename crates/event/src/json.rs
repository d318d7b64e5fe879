//! JSON for values and events (serde). `@timestamp` is written as an ISO-8601 string;
//! `@metadata` is never written. Parsing (sonic-rs) goes straight into [`Value`] without an
//! intermediate tree; writing uses serde_json.

use std::fmt;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use crate::event::Event;
use crate::value::{by_parts, push_entry, put, Key, Map, Value};

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i64(*i),
            Value::BigInt(b) => s.serialize_i128(b.get()),
            Value::Float(f) => s.serialize_f64(*f),
            // The number as written (a decimal's text is valid JSON, see `Value::decimal`).
            Value::Decimal(d) => match serde_json::value::RawValue::from_string(d.to_string()) {
                Ok(raw) => raw.serialize(s),
                Err(_) => s.serialize_str(d),
            },
            Value::String(v) => s.serialize_str(v),
            Value::Timestamp(t) => s.serialize_str(&t.to_iso8601()),
            Value::Array(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Value::Object(m) => serialize_map(m, s),
        }
    }
}

fn serialize_map<S: Serializer>(m: &Map, s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(m.len()))?;
    for (k, v) in m {
        map.serialize_entry(k.as_str(), v)?;
    }
    map.end()
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_map(self.fields(), s)
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        let mut v = Value::Null;
        d.deserialize_any(Slot(&mut v, ROOT_ROOM))?;
        Ok(v)
    }
}

/// Deserializes a value into its place (which holds `Null`; written with [`put`]), the way
/// the queue's decoder fills its maps: an object's entries are pushed empty and each value is
/// written where it stays. Returning each value and moving it into its map reloaded freshly
/// stored bytes in wider loads than they were written with, which the processor cannot
/// forward from its store buffer (json_bench: the beats event 645 -> 497 ns, a filebeat
/// event 2,470 -> 1,850 ns).
///
/// The second field is room an object made here keeps for entries added later: the
/// outermost object of a text usually becomes an event, which `@timestamp`, `@version`,
/// a tag and `[event][original]` are added to ([`ROOT_ROOM`]).
struct Slot<'v>(&'v mut Value, usize);

/// Entries an outermost object has room for beyond its own.
const ROOT_ROOM: usize = 4;

impl<'de> DeserializeSeed<'de> for Slot<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Slot<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        put(self.0, Value::Bool(v));
        Ok(())
    }
    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        put(self.0, Value::Int(v));
        Ok(())
    }
    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        put(self.0, Value::integer(v as i128));
        Ok(())
    }
    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        put(self.0, Value::Float(v));
        Ok(())
    }
    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        put(self.0, Value::String(v.into()));
        Ok(())
    }
    fn visit_string<E>(self, v: String) -> Result<(), E> {
        put(self.0, Value::String(v.into()));
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut out: Vec<Value> = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        loop {
            out.push(Value::Null);
            let last = out.len() - 1;
            if seq.next_element_seed(Slot(&mut out[last], 0))?.is_none() {
                out.pop();
                break;
            }
        }
        put(self.0, Value::Array(by_parts(out)));
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<(), A::Error> {
        // Keys usually come in order (we write them sorted), so the entries are checked as
        // they come and, if they ascend, become the map as they are; otherwise they are
        // sorted once (n log n, not n² inserts).
        // Most objects have a few keys: room for four saves the first reallocations.
        let mut entries: Vec<(Key, Value)> =
            Vec::with_capacity(access.size_hint().unwrap_or(4).min(64) + self.1);
        let mut ascending = true;
        while let Some(k) = access.next_key_seed(KeySeed)? {
            if let Some((last, _)) = entries.last() {
                ascending &= *last < k;
            }
            access.next_value_seed(Slot(push_entry(&mut entries, k), 0))?;
        }
        if !ascending {
            // Stable, so that of a repeated key the last value is kept, as serde_json's own
            // maps do.
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            entries.dedup_by(|later, kept| {
                let same = later.0 == kept.0;
                if same {
                    std::mem::swap(&mut later.1, &mut kept.1);
                }
                same
            });
        }
        put(
            self.0,
            Value::Object(Map::from_sorted_store_unchecked(by_parts(entries))),
        );
        Ok(())
    }
}

/// Reads an object key straight into a [`Key`]: short keys never touch the heap.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_str<E>(self, v: &str) -> Result<Key, E> {
        Ok(Key::from(v))
    }
    fn visit_string<E>(self, v: String) -> Result<Key, E> {
        Ok(Key::from(v))
    }
}

/// JSON text of a value.
pub fn to_string(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Appends the event's JSON (without `@metadata`) to `out`.
pub fn write_event(e: &Event, out: &mut Vec<u8>) {
    // Writing into a Vec cannot fail, and every Value serialises.
    let _ = serde_json::to_writer(&mut *out, e);
}

/// Appends the event's `@metadata` as a JSON object to `out`.
pub fn write_metadata(e: &Event, out: &mut Vec<u8>) {
    struct Metadata<'a>(&'a Map);
    impl Serialize for Metadata<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            serialize_map(self.0, s)
        }
    }
    let _ = serde_json::to_writer(&mut *out, &Metadata(e.metadata()));
}

pub fn event_to_string(e: &Event) -> String {
    serde_json::to_string(e).unwrap_or_default()
}

/// Parses JSON text into a value (sonic-rs: the same [`Value`] visitor as serde_json, with a
/// SIMD scanner; a quarter faster on ~200-byte log events).
///
/// Integers stay exact as Logstash keeps them (Java BigIntegers): those past `u64` reach the
/// serde visitor as rounded floats, so text holding a run of 19 digits or more (where an
/// integer may leave `i64`) is parsed again with its numbers as written.
pub fn parse(bytes: &[u8]) -> Result<Value, de::value::Error> {
    let to_error = |e: sonic_rs::Error| de::Error::custom(e.to_string());
    if !has_digit_run(bytes, 19) {
        return sonic_rs::from_slice(bytes).map_err(to_error);
    }
    let mut de = sonic_rs::Deserializer::from_slice(bytes).use_rawnumber();
    let raw: sonic_rs::Value = de.deserialize().map_err(to_error)?;
    de.end().map_err(to_error)?;
    from_raw(&raw).map_err(de::Error::custom)
}

/// Whether `bytes` hold `len` (at least 15) ASCII digits in a row. Such a run always covers a
/// whole 8-byte-aligned block, so blocks are tested eight bytes at a time and only an
/// all-digit block is looked at byte by byte: a few nanoseconds on a log event.
fn has_digit_run(bytes: &[u8], len: usize) -> bool {
    debug_assert!(len >= 15);
    for (i, block) in bytes.chunks_exact(8).enumerate() {
        let w = u64::from_le_bytes(block.try_into().unwrap_or_default());
        // Every byte is 0x30..=0x39: its high nibble is 3, and adding 6 keeps it 3.
        let high = 0xF0F0_F0F0_F0F0_F0F0u64;
        let threes = 0x3030_3030_3030_3030u64;
        if w & high != threes || (w + 0x0606_0606_0606_0606) & high != threes {
            continue;
        }
        let mut start = i * 8;
        while start > 0 && bytes[start - 1].is_ascii_digit() {
            start -= 1;
        }
        let mut end = i * 8 + 8;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
        }
        if end - start >= len {
            return true;
        }
    }
    false
}

/// A value parsed with raw numbers: integers exact (past 128 bits, a decimal), the rest floats.
/// A number no float can hold (`1e999`) fails the whole text, as it does on the fast path:
/// the same text gets the same answer whatever numbers stand beside it.
fn from_raw(v: &sonic_rs::Value) -> Result<Value, String> {
    use sonic_rs::{JsonContainerTrait, JsonType, JsonValueTrait};
    Ok(match v.get_type() {
        JsonType::Null => Value::Null,
        JsonType::Boolean => Value::Bool(v.as_bool().unwrap_or_default()),
        JsonType::String => Value::String(v.as_str().unwrap_or_default().into()),
        JsonType::Number => {
            let text = v.as_raw_number().map(|n| n.as_str().to_owned());
            let text = text.as_deref().unwrap_or("0");
            let integral = !text.contains(['.', 'e', 'E']);
            match integral.then(|| Value::decimal(text)).flatten() {
                // Exact at any size: past 128 bits, a decimal (Logstash's BigInteger).
                Some(int) => int,
                None => match text.parse::<f64>() {
                    Ok(f) if f.is_finite() => Value::Float(f),
                    _ => return Err(format!("number out of range: {text}")),
                },
            }
        }
        JsonType::Array => Value::Array(
            v.as_array()
                .map(|a| a.iter().map(from_raw).collect::<Result<_, _>>())
                .transpose()?
                .unwrap_or_default(),
        ),
        JsonType::Object => {
            let mut m = Map::new();
            for (k, item) in v.as_object().into_iter().flat_map(|o| o.iter()) {
                // A repeated key keeps its last value, as on the fast path.
                m.insert(Key::from(k), from_raw(item)?);
            }
            Value::Object(m)
        }
    })
}

impl From<serde_json::Value> for Value {
    fn from(v: serde_json::Value) -> Self {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(b),
            serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Value::Int(i),
                (None, Some(u)) => Value::integer(u as i128),
                _ => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::String(s.into()),
            serde_json::Value::Array(a) => Value::Array(a.into_iter().map(Value::from).collect()),
            serde_json::Value::Object(o) => {
                Value::Object(o.into_iter().map(|(k, v)| (k.into(), v.into())).collect())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timestamp::Timestamp;

    /// The outermost object keeps room for the fields an event gets added; nested ones are
    /// made to their size.
    #[test]
    fn the_outermost_object_has_room_for_an_events_fields() {
        let Ok(Value::Object(mut m)) = parse(br#"{"a":1,"b":{"c":2},"d":3}"#) else {
            panic!("an object")
        };
        let Some(Value::Object(inner)) = m.remove(&Key::from("b")) else {
            panic!("b is an object")
        };
        // `@timestamp`, `@version`, a tag and `event` fit without growing the outer map.
        let (inner, outer) = (inner.into_tuple_vec(), m.into_tuple_vec());
        assert!(outer.capacity() - outer.len() >= 4, "{}", outer.capacity());
        assert!(inner.capacity() - inner.len() < 4, "{}", inner.capacity());
    }

    #[test]
    fn event_json_round_trip() {
        let mut e = Event::with_message("hello \"world\"");
        e.set_timestamp(Timestamp::from_millis(1_600_000_000_123));
        e.set(
            &crate::FieldRef::parse("[@metadata][x]").unwrap(),
            "hidden".into(),
        );
        let text = event_to_string(&e);
        assert!(
            text.contains(r#""@timestamp":"2020-09-13T12:26:40.123Z""#),
            "{text}"
        );
        assert!(!text.contains("hidden"));
        let Value::Object(m) = parse(text.as_bytes()).unwrap() else {
            panic!("not an object")
        };
        let back = Event::from_map(m);
        assert_eq!(back.timestamp(), e.timestamp());
        assert_eq!(back.get_field("message"), e.get_field("message"));
    }

    #[test]
    fn digit_runs_are_found_at_any_alignment() {
        for run in 15..24 {
            for offset in 0..9 {
                let mut text = vec![b'x'; offset];
                text.extend(std::iter::repeat_n(b'7', run));
                text.extend(b"y:/9");
                assert_eq!(has_digit_run(&text, 19), run >= 19, "{run} at {offset}");
                text[offset + run / 2] = b'/';
                assert!(!has_digit_run(&text, 19), "{run} split at {offset}");
            }
        }
    }

    #[test]
    fn numbers_keep_their_kind() {
        assert_eq!(parse(b"1").unwrap(), Value::Int(1));
        assert_eq!(parse(b"1.5").unwrap(), Value::Float(1.5));
        // Integers past 64 bits stay exact, as Logstash's BigIntegers do.
        for text in [
            "18446744073709551615",
            "-123456789012345678901234567890",
            "9223372036854775808",
        ] {
            let v =
                parse(format!(r#"{{"n": [{text}, 1.25, "x", null, true]}}"#).as_bytes()).unwrap();
            let n = v.as_object().unwrap().get("n").unwrap();
            assert_eq!(n.as_array().unwrap()[0].to_display_string(), text);
            assert_eq!(to_string(n), format!("[{text},1.25,\"x\",null,true]"));
        }
        assert_eq!(
            parse(b"1234567890123456789").unwrap(),
            Value::Int(1234567890123456789)
        );
        assert_eq!(
            parse(br#"{"a":1,"a":2}"#).unwrap(),
            parse(br#"{"a":2}"#).unwrap()
        );
        assert_eq!(
            parse(br#"{"a":1,"a":20000000000000000000}"#).unwrap(),
            parse(br#"{"a":20000000000000000000}"#).unwrap()
        );
        assert!(parse(b"1e400000000000000000000").is_err());
        // A number no float holds fails the text whatever stands beside it (issue 46: beside
        // an integer past 64 bits it became Infinity, written as null, with no tag).
        let big = "123456789012345678901234567890";
        for text in [
            "1e999".to_owned(),
            format!(r#"{{"a":1e999,"b":{big}}}"#),
            format!(r#"{{"b":{big},"a":[-1e999]}}"#),
        ] {
            assert!(parse(text.as_bytes()).is_err(), "{text}");
        }
        // An integer past 128 bits stays exact (Logstash's BigInteger), written back as is.
        let huge = format!("1{}", "0".repeat(400));
        let v = parse(format!("[{big}, {huge}]").as_bytes()).unwrap();
        assert_eq!(
            v,
            Value::Array(vec![
                Value::parse_integer(big).unwrap(),
                Value::decimal(&huge).unwrap()
            ])
        );
        assert_eq!(to_string(&v), format!("[{big},{huge}]"));
        assert!(parse(b"[12345678901234567890,").is_err());
        assert_eq!(to_string(&Value::Float(2.0)), "2.0");
        assert!(parse(b"{bad").is_err());
    }
}
