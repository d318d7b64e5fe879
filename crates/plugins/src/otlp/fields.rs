//! What the OTLP signals' events share: OTLP values as event values, and the `[resource]`
//! and `[scope]` objects every event of a resource and scope gets.

use base64::Engine as _;
use sluice_event::{Key, Map, Timestamp, Value};

use super::proto::{any_value, AnyValue, InstrumentationScope, KeyValue, Resource};

/// The `[resource]` object every event of a resource gets; `None` when it has nothing.
pub(crate) fn resource_value(resource: Option<Resource>, schema_url: String) -> Option<Value> {
    let r = resource.unwrap_or_default();
    described(
        Map::new(),
        r.attributes,
        r.dropped_attributes_count,
        schema_url,
    )
}

/// The `[scope]` object every event of a scope gets; `None` when it has nothing.
pub(crate) fn scope_value(
    scope: Option<InstrumentationScope>,
    schema_url: String,
) -> Option<Value> {
    let s = scope.unwrap_or_default();
    let mut m = Map::new();
    if !s.name.is_empty() {
        m.insert(Key::from("name"), Value::String(s.name.into()));
    }
    if !s.version.is_empty() {
        m.insert(Key::from("version"), Value::String(s.version.into()));
    }
    described(m, s.attributes, s.dropped_attributes_count, schema_url)
}

/// `m` with what a resource and a scope both have (attributes, how many were dropped, the
/// schema), as an object; `None` when it ends up empty.
fn described(mut m: Map, attrs: Vec<KeyValue>, dropped: u32, schema_url: String) -> Option<Value> {
    add_attributes(&mut m, attrs, dropped);
    if !schema_url.is_empty() {
        m.insert(Key::from("schema_url"), Value::String(schema_url.into()));
    }
    (!m.is_empty()).then_some(Value::Object(m))
}

/// Adds `attributes` and how many were dropped to `m` (each left out when empty or 0).
pub(crate) fn add_attributes(m: &mut Map, attrs: Vec<KeyValue>, dropped: u32) {
    if !attrs.is_empty() {
        m.insert(Key::from("attributes"), Value::Object(attributes(attrs)));
    }
    if dropped != 0 {
        let n = Value::Int(i64::from(dropped));
        m.insert(Key::from("dropped_attributes_count"), n);
    }
}

/// A map of attributes, keys whole; of a key given twice, the last value.
pub fn attributes(pairs: Vec<KeyValue>) -> Map {
    let mut m = Map::with_capacity(pairs.len());
    for kv in pairs {
        m.insert(Key::from(kv.key), kv.value.map_or(Value::Null, any));
    }
    m
}

/// An `AnyValue` as a value (unset: null).
pub fn any(v: AnyValue) -> Value {
    v.value.map_or(Value::Null, value)
}

pub(crate) fn value(v: any_value::Value) -> Value {
    match v {
        any_value::Value::StringValue(s) => Value::String(s.into()),
        any_value::Value::BoolValue(b) => Value::Bool(b),
        any_value::Value::IntValue(i) => Value::Int(i),
        any_value::Value::DoubleValue(f) => Value::Float(f),
        any_value::Value::ArrayValue(a) => Value::Array(a.values.into_iter().map(any).collect()),
        any_value::Value::KvlistValue(kv) => Value::Object(attributes(kv.values)),
        any_value::Value::BytesValue(b) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b).into())
        }
    }
}

/// An object of `pairs` (keys from `key!`, so that the hot paths look no name up).
pub(crate) fn object<const N: usize>(pairs: [(Key, Value); N]) -> Value {
    let mut m = Map::with_capacity(N);
    for (k, v) in pairs {
        m.insert(k, v);
    }
    Value::Object(m)
}

/// Nanoseconds since the epoch as a timestamp (milliseconds, rounded down).
pub(crate) fn timestamp(nanos: u64) -> Timestamp {
    Timestamp::from_millis((nanos / 1_000_000) as i64)
}

/// Bytes from hexadecimal text (the golden requests of the tests).
#[cfg(test)]
pub(crate) fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}
