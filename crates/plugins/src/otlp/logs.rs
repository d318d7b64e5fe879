//! OTLP log records → events, one event per record, in the shape Elastic's OTLP intake gives
//! a log (Elasticsearch's `/_otlp` and the collector's Elasticsearch exporter): the fields it
//! names for ECS (`message`, `log.level`, `trace.id`, `span.id`) under those names, the rest
//! under OTLP's own names. Attribute names are kept whole: `http.method` is one key of
//! `[attributes]`, as Elastic stores it, not a nested `[http][method]`.
//!
//! | OTLP | event |
//! |---|---|
//! | `time_unix_nano`, else `observed_time_unix_nano`, else the time it arrived | `@timestamp` (milliseconds) |
//! | `observed_time_unix_nano` | `[observed_timestamp]` |
//! | a string body; a scalar body (as text; bytes in base64) | `message` |
//! | a map or list body | `[body][structured]` |
//! | `severity_text` / `severity_number` (not 0) | `[log][level]` / `[severity_number]` |
//! | `event_name` | `[event_name]` |
//! | `trace_id` / `span_id` (lower-case hex) | `[trace][id]` / `[span][id]` |
//! | `attributes`, `dropped_attributes_count` (not 0) | `[attributes]`, `[dropped_attributes_count]` |
//! | the resource's `attributes`, `schema_url`, `dropped_attributes_count` | `[resource][attributes]`, `[resource][schema_url]`, `[resource][dropped_attributes_count]` |
//! | the scope's `name`, `version`, `attributes`, `schema_url` | `[scope][name]`, `[scope][version]`, `[scope][attributes]`, `[scope][schema_url]` |
//!
//! Values keep their types: strings, booleans, 64-bit integers, doubles, lists (`[...]`) and
//! maps (objects); bytes become base64 text, an unset value null. Of a key given twice in one
//! map, the last value is kept. Empty strings and zero counts are left out, as OTLP's
//! defaults.

use sluice_event::{key, Event, Key, Map, Timestamp, Value};

use super::fields::{attributes, object, resource_value, scope_value, timestamp, value};
use super::proto::{any_value, AnyValue, ExportLogsServiceRequest, LogRecord};
use super::wire::Fields;
use crate::numbers::hex;

/// Decodes an OTLP/protobuf logs export request; an error for bytes that are no such
/// message (or hold a string that is not UTF-8).
pub fn decode(body: &[u8]) -> Result<ExportLogsServiceRequest, prost::DecodeError> {
    prost::Message::decode(body)
}

/// Appends one event per log record of `request` to `out`; returns how many.
pub fn to_events(request: ExportLogsServiceRequest, out: &mut Vec<Event>) -> usize {
    let start = out.len();
    for resource_logs in request.resource_logs {
        let resource = resource_value(resource_logs.resource, resource_logs.schema_url);
        for scope_logs in resource_logs.scope_logs {
            let scope = scope_value(scope_logs.scope, scope_logs.schema_url);
            for record in scope_logs.log_records {
                out.push(record_event(record, resource.as_ref(), scope.as_ref()));
            }
        }
    }
    out.len() - start
}

/// What a log record's event is made of, read from a [`LogRecord`] or straight from its
/// bytes ([`decode_events`]).
#[derive(Default)]
struct Parts<'a> {
    time: u64,
    observed: u64,
    severity_number: i32,
    level: Option<Value>,
    /// A string body (or a scalar's text) for `message`.
    message: Option<Value>,
    /// A map or list body.
    structured: Option<Value>,
    attributes: Option<Map>,
    dropped: u32,
    trace_id: &'a [u8],
    span_id: &'a [u8],
    event_name: Option<Value>,
}

fn record_event(record: LogRecord, resource: Option<&Value>, scope: Option<&Value>) -> Event {
    let mut p = Parts {
        time: record.time_unix_nano,
        observed: record.observed_time_unix_nano,
        severity_number: record.severity_number,
        dropped: record.dropped_attributes_count,
        trace_id: &record.trace_id,
        span_id: &record.span_id,
        ..Parts::default()
    };
    match record.body.and_then(|b| b.value) {
        None => {}
        Some(any_value::Value::StringValue(s)) => p.message = Some(Value::String(s.into())),
        Some(v @ (any_value::Value::ArrayValue(_) | any_value::Value::KvlistValue(_))) => {
            p.structured = Some(value(v));
        }
        Some(scalar) => {
            p.message = Some(Value::String(value(scalar).to_display_string().into()));
        }
    }
    if !record.severity_text.is_empty() {
        p.level = Some(Value::String(record.severity_text.into()));
    }
    if !record.attributes.is_empty() {
        p.attributes = Some(attributes(record.attributes));
    }
    if !record.event_name.is_empty() {
        p.event_name = Some(Value::String(record.event_name.into()));
    }
    assemble(p, resource, scope)
}

/// The event of a record's parts, with its resource's and scope's objects.
fn assemble(p: Parts, resource: Option<&Value>, scope: Option<&Value>) -> Event {
    // The fields are pushed in key order, so that the event's map is built in one pass with
    // no search, no shifting and one allocation.
    let mut f: Vec<(Key, Value)> = Vec::with_capacity(14);
    let stamp = match (p.time, p.observed) {
        (0, 0) => Timestamp::now(),
        (0, t) | (t, _) => timestamp(t),
    };
    f.push((key!("@timestamp"), Value::Timestamp(stamp)));
    f.push((key!("@version"), Value::String("1".into())));
    if let Some(a) = p.attributes {
        f.push((key!("attributes"), Value::Object(a)));
    }
    if let Some(v) = p.structured {
        f.push((key!("body"), object([(key!("structured"), v)])));
    }
    if p.dropped != 0 {
        let n = Value::Int(i64::from(p.dropped));
        f.push((key!("dropped_attributes_count"), n));
    }
    if let Some(name) = p.event_name {
        f.push((key!("event_name"), name));
    }
    if let Some(level) = p.level {
        f.push((key!("log"), object([(key!("level"), level)])));
    }
    if let Some(m) = p.message {
        f.push((key!("message"), m));
    }
    if p.observed != 0 {
        let observed = timestamp(p.observed);
        f.push((key!("observed_timestamp"), Value::Timestamp(observed)));
    }
    if let Some(r) = resource {
        f.push((key!("resource"), r.clone()));
    }
    if let Some(s) = scope {
        f.push((key!("scope"), s.clone()));
    }
    if p.severity_number != 0 {
        let n = Value::Int(i64::from(p.severity_number));
        f.push((key!("severity_number"), n));
    }
    if !p.span_id.is_empty() {
        let id = Value::String(hex(p.span_id).into());
        f.push((key!("span"), object([(key!("id"), id)])));
    }
    if !p.trace_id.is_empty() {
        let id = Value::String(hex(p.trace_id).into());
        f.push((key!("trace"), object([(key!("id"), id)])));
    }
    debug_assert!(f.windows(2).all(|w| w[0].0 < w[1].0), "fields out of order");
    Event::from_parts(Map::from_sorted_store_unchecked(f), Map::new())
}

/// Decodes an OTLP/protobuf logs export request straight into events (appended to `out`),
/// as [`decode`] then [`to_events`] do, without building the request first: a record's
/// strings go from the request's bytes into the event's values. Returns how many; on an
/// error (bytes that are no such request), `out` is left as it was.
pub fn decode_events(body: &[u8], out: &mut Vec<Event>) -> Result<usize, String> {
    let start = out.len();
    let mut request = Fields::new(body);
    let read = (|| {
        while let Some((n, f)) = request.next_field()? {
            if n == 1 {
                resource_logs(f.bytes()?, out)?;
            }
        }
        Ok(())
    })();
    match read {
        Ok(()) => Ok(out.len() - start),
        Err(e) => {
            out.truncate(start);
            Err(e)
        }
    }
}

/// Protobuf's rule for a message given twice: the two merged (prost's decoder agrees).
fn merge<M: prost::Message + Default>(into: &mut Option<M>, bytes: &[u8]) -> Result<(), String> {
    into.get_or_insert_with(M::default)
        .merge(bytes)
        .map_err(|e| e.to_string())
}

fn resource_logs(buf: &[u8], out: &mut Vec<Event>) -> Result<(), String> {
    let (mut resource, mut schema, mut scopes) = (None, "", Vec::new());
    let mut fields = Fields::new(buf);
    while let Some((n, f)) = fields.next_field()? {
        match n {
            1 => merge(&mut resource, f.bytes()?)?,
            2 => scopes.push(f.bytes()?),
            3 => schema = f.text()?,
            _ => {}
        }
    }
    let resource = resource_value(resource, schema.to_owned());
    for s in scopes {
        scope_logs(s, resource.as_ref(), out)?;
    }
    Ok(())
}

fn scope_logs(buf: &[u8], resource: Option<&Value>, out: &mut Vec<Event>) -> Result<(), String> {
    let (mut scope, mut schema, mut records) = (None, "", Vec::new());
    let mut fields = Fields::new(buf);
    while let Some((n, f)) = fields.next_field()? {
        match n {
            1 => merge(&mut scope, f.bytes()?)?,
            2 => records.push(f.bytes()?),
            3 => schema = f.text()?,
            _ => {}
        }
    }
    let scope = scope_value(scope, schema.to_owned());
    out.reserve(records.len());
    for r in records {
        out.push(record_from_wire(r, resource, scope.as_ref())?);
    }
    Ok(())
}

/// A `LogRecord`'s event, its strings read in place.
fn record_from_wire(
    buf: &[u8],
    resource: Option<&Value>,
    scope: Option<&Value>,
) -> Result<Event, String> {
    let mut p = Parts::default();
    let mut attrs: Option<Map> = None;
    let mut body: Option<&[u8]> = None;
    let mut fields = Fields::new(buf);
    while let Some((n, f)) = fields.next_field()? {
        match n {
            1 => p.time = f.fixed64()?,
            11 => p.observed = f.fixed64()?,
            2 => p.severity_number = f.varint()? as i32,
            3 => {
                let t = f.text()?;
                p.level = (!t.is_empty()).then(|| Value::String(t.into()));
            }
            5 => body = Some(f.bytes()?),
            6 => {
                let (k, v) = key_value(f.bytes()?)?;
                attrs
                    .get_or_insert_with(|| Map::with_capacity(4))
                    .insert(k, v);
            }
            7 => p.dropped = f.varint()? as u32,
            8 => {
                f.fixed32()?;
            }
            9 => p.trace_id = f.bytes()?,
            10 => p.span_id = f.bytes()?,
            12 => {
                let t = f.text()?;
                p.event_name = (!t.is_empty()).then(|| Value::String(t.into()));
            }
            _ => {}
        }
    }
    p.attributes = attrs;
    if let Some(b) = body {
        match any_from_wire(b)? {
            Some(v @ (Value::Object(_) | Value::Array(_))) => p.structured = Some(v),
            Some(Value::String(s)) => p.message = Some(Value::String(s)),
            Some(scalar) => p.message = Some(Value::String(scalar.to_display_string().into())),
            None => {}
        }
    }
    Ok(assemble(p, resource, scope))
}

/// A `KeyValue`: its key (interned from the bytes) and value.
fn key_value(buf: &[u8]) -> Result<(Key, Value), String> {
    let (mut key, mut value) = ("", None);
    let mut fields = Fields::new(buf);
    while let Some((n, f)) = fields.next_field()? {
        match n {
            1 => key = f.text()?,
            2 => value = any_from_wire(f.bytes()?)?,
            _ => {}
        }
    }
    Ok((Key::from(key), value.unwrap_or(Value::Null)))
}

/// An `AnyValue`: strings, booleans, integers and doubles read in place; lists, maps and
/// bytes through prost and [`super::fields::any`]. `None` when unset.
fn any_from_wire(buf: &[u8]) -> Result<Option<Value>, String> {
    let mut fields = Fields::new(buf);
    let mut last = None;
    let mut nested = false;
    while let Some((n, f)) = fields.next_field()? {
        last = match n {
            1 => Some(Value::String(f.text()?.into())),
            2 => Some(Value::Bool(f.varint()? != 0)),
            3 => Some(Value::Int(f.varint()? as i64)),
            4 => Some(Value::Float(f64::from_bits(f.fixed64()?))),
            5..=7 => {
                nested = true;
                None
            }
            _ => continue,
        };
    }
    if nested {
        let v: AnyValue = prost::Message::decode(buf).map_err(|e| e.to_string())?;
        return Ok(v.value.map(value));
    }
    Ok(last)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::otlp::proto::{AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList};
    use crate::otlp::proto::{Resource, ResourceLogs, ScopeLogs};
    use prost::Message as _;
    use sluice_event::FieldRef;
    use sluice_event::Timestamp;

    fn s(text: &str) -> Option<AnyValue> {
        Some(AnyValue {
            value: Some(any_value::Value::StringValue(text.to_owned())),
        })
    }

    fn kv(key: &str, value: Option<AnyValue>) -> KeyValue {
        KeyValue {
            key: key.to_owned(),
            value,
        }
    }

    fn get<'e>(e: &'e Event, path: &str) -> Option<&'e Value> {
        e.get(&FieldRef::parse(path).unwrap())
    }

    fn request(records: Vec<LogRecord>) -> ExportLogsServiceRequest {
        ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                resource: Some(Resource {
                    attributes: vec![kv("service.name", s("checkout"))],
                    dropped_attributes_count: 0,
                }),
                scope_logs: vec![ScopeLogs {
                    scope: Some(InstrumentationScope {
                        name: "app.logger".into(),
                        version: "1.2".into(),
                        ..Default::default()
                    }),
                    log_records: records,
                    schema_url: String::new(),
                }],
                schema_url: "https://opentelemetry.io/schemas/1.26.0".into(),
            }],
        }
    }

    /// A record with every field set, and these attributes.
    fn full_record(attributes: Vec<KeyValue>) -> LogRecord {
        LogRecord {
            time_unix_nano: 1_764_300_000_123_456_789,
            observed_time_unix_nano: 1_764_300_001_000_000_000,
            severity_number: 13,
            severity_text: "WARN".into(),
            body: s("disk almost full"),
            attributes,
            dropped_attributes_count: 2,
            flags: 1,
            trace_id: (1..=16).collect(),
            span_id: vec![0xab; 8],
            event_name: "disk.pressure".into(),
        }
    }

    /// Through the wire format and back, every field of the table lands where it says.
    #[test]
    fn a_record_becomes_an_event_with_every_mapped_field() {
        let record = full_record(vec![
            kv("http.method", s("GET")),
            kv(
                "retries",
                Some(AnyValue {
                    value: Some(any_value::Value::IntValue(3)),
                }),
            ),
            kv(
                "nested",
                Some(AnyValue {
                    value: Some(any_value::Value::KvlistValue(KeyValueList {
                        values: vec![kv("a", s("1")), kv("a", s("2"))],
                    })),
                }),
            ),
            kv("unset", None),
        ]);
        let bytes = request(vec![record]).encode_to_vec();
        let mut out = Vec::new();
        assert_eq!(to_events(decode(&bytes).unwrap(), &mut out), 1);
        let e = &out[0];
        assert_eq!(e.timestamp().unwrap().millis(), 1_764_300_000_123);
        let observed = get(e, "observed_timestamp").unwrap();
        assert_eq!(
            observed,
            &Value::Timestamp(Timestamp::from_millis(1_764_300_001_000))
        );
        assert_eq!(get(e, "message"), Some(&"disk almost full".into()));
        assert_eq!(get(e, "[log][level]"), Some(&"WARN".into()));
        assert_eq!(get(e, "severity_number"), Some(&Value::Int(13)));
        assert_eq!(get(e, "event_name"), Some(&"disk.pressure".into()));
        assert_eq!(
            get(e, "[trace][id]"),
            Some(&"0102030405060708090a0b0c0d0e0f10".into())
        );
        assert_eq!(get(e, "[span][id]"), Some(&"abababababababab".into()));
        // Attribute names are kept whole.
        assert_eq!(get(e, "[attributes][http.method]"), Some(&"GET".into()));
        assert_eq!(get(e, "[attributes][retries]"), Some(&Value::Int(3)));
        assert_eq!(get(e, "[attributes][nested][a]"), Some(&"2".into()));
        assert_eq!(get(e, "[attributes][unset]"), Some(&Value::Null));
        assert_eq!(get(e, "[dropped_attributes_count]"), Some(&Value::Int(2)));
        assert_eq!(
            get(e, "[resource][attributes][service.name]"),
            Some(&"checkout".into())
        );
        assert_eq!(
            get(e, "[resource][schema_url]"),
            Some(&"https://opentelemetry.io/schemas/1.26.0".into())
        );
        assert_eq!(get(e, "[scope][name]"), Some(&"app.logger".into()));
        assert_eq!(get(e, "[scope][version]"), Some(&"1.2".into()));
        assert!(get(e, "[scope][schema_url]").is_none());
        assert!(get(e, "body").is_none());
    }

    /// The request of the golden bytes below, field for field.
    pub(crate) fn golden_request() -> ExportLogsServiceRequest {
        let av = |v: any_value::Value| Some(AnyValue { value: Some(v) });
        ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                resource: Some(Resource {
                    attributes: vec![kv("service.name", s("checkout"))],
                    dropped_attributes_count: 1,
                }),
                scope_logs: vec![ScopeLogs {
                    scope: Some(InstrumentationScope {
                        name: "app.logger".into(),
                        version: "1.2".into(),
                        attributes: vec![kv("sa", av(any_value::Value::BoolValue(true)))],
                        dropped_attributes_count: 4,
                    }),
                    log_records: vec![full_record(vec![
                        kv("http.method", s("GET")),
                        kv("d", av(any_value::Value::DoubleValue(0.5))),
                        kv("b", av(any_value::Value::BytesValue(b"hi".to_vec()))),
                        kv(
                            "kv",
                            av(any_value::Value::KvlistValue(KeyValueList {
                                values: vec![kv("i", av(any_value::Value::IntValue(-7)))],
                            })),
                        ),
                    ])],
                    schema_url: "s2".into(),
                }],
                schema_url: "s1".into(),
            }],
        }
    }

    /// Bytes written by opentelemetry-proto's own generated Python classes (1.x) for a
    /// request that sets every field: the field numbers and wire types here are theirs.
    #[test]
    fn decodes_what_the_official_definitions_encode() {
        const HEX: &str = "0afa010a1e0a1a0a0c736572766963652e6e616d65120a0a08636865636b6f7574100112d3010a1d0a0a6170702e6c6f676765721203312e321a080a02736112021001200412ad0109158d94a0800d7c18100d1a045741524e2a120a106469736b20616c6d6f73742066756c6c32140a0b687474702e6d6574686f6412050a03474554320e0a0164120921000000000000e03f32090a016212043a026869321a0a026b76121432120a100a0169120b18f9ffffffffffffffff01380245010000004a100102030405060708090a0b0c0d0e0f105208abababababababab59008ad3d4800d7c18620d6469736b2e70726573737572651a0273321a027331";
        let bytes = crate::otlp::fields::unhex(HEX);
        assert_eq!(decode(&bytes).unwrap(), golden_request());
    }

    #[test]
    fn bodies_of_every_type() {
        let body = |v: any_value::Value| LogRecord {
            body: Some(AnyValue { value: Some(v) }),
            ..Default::default()
        };
        let list = any_value::Value::ArrayValue(ArrayValue {
            values: vec![s("x").unwrap(), AnyValue { value: None }],
        });
        let map = any_value::Value::KvlistValue(KeyValueList {
            values: vec![kv("k", s("v"))],
        });
        let records = vec![
            body(any_value::Value::IntValue(42)),
            body(any_value::Value::DoubleValue(1.5)),
            body(any_value::Value::BoolValue(true)),
            body(any_value::Value::BytesValue(b"hi".to_vec())),
            body(list),
            body(map),
            LogRecord::default(),
        ];
        let mut out = Vec::new();
        to_events(request(records), &mut out);
        let messages: Vec<Option<&Value>> = out.iter().map(|e| get(e, "message")).collect();
        assert_eq!(
            messages,
            [
                Some(&"42".into()),
                Some(&"1.5".into()),
                Some(&"true".into()),
                Some(&"aGk=".into()),
                None,
                None,
                None
            ]
        );
        assert_eq!(
            get(&out[4], "[body][structured]"),
            Some(&Value::Array(vec!["x".into(), Value::Null]))
        );
        assert_eq!(get(&out[5], "[body][structured][k]"), Some(&"v".into()));
        assert!(get(&out[6], "body").is_none() && get(&out[6], "log").is_none());
    }

    #[test]
    fn the_time_is_the_records_else_observed_else_arrival() {
        let before = Timestamp::now().millis();
        let records = vec![
            LogRecord {
                observed_time_unix_nano: 5_000_000_000,
                ..Default::default()
            },
            LogRecord::default(),
        ];
        let mut out = Vec::new();
        to_events(request(records), &mut out);
        assert_eq!(out[0].timestamp().unwrap().millis(), 5_000);
        let arrival = out[1].timestamp().unwrap().millis();
        assert!(arrival >= before && arrival <= Timestamp::now().millis());
        assert!(get(&out[1], "observed_timestamp").is_none());
    }

    #[test]
    fn every_resource_and_scope_reaches_its_own_records() {
        let mut req = request(vec![LogRecord::default(), LogRecord::default()]);
        let mut other = req.resource_logs[0].clone();
        other.resource = Some(Resource {
            attributes: vec![kv("service.name", s("billing"))],
            dropped_attributes_count: 1,
        });
        other.scope_logs[0].scope = None;
        other.scope_logs[0].log_records.truncate(1);
        req.resource_logs.push(other);
        let mut out = Vec::new();
        assert_eq!(to_events(req, &mut out), 3);
        let services: Vec<_> = out
            .iter()
            .map(|e| get(e, "[resource][attributes][service.name]").cloned())
            .collect();
        assert_eq!(
            services,
            [
                Some("checkout".into()),
                Some("checkout".into()),
                Some("billing".into())
            ]
        );
        assert_eq!(
            get(&out[2], "[resource][dropped_attributes_count]"),
            Some(&Value::Int(1))
        );
        assert!(get(&out[2], "scope").is_none());
    }

    #[test]
    fn bytes_that_are_no_request_are_an_error() {
        assert!(decode(b"\x0a\x05\x12").is_err());
        // A string field (the scope's name) holding bytes that are not UTF-8.
        let mut bytes = request(vec![LogRecord::default()]).encode_to_vec();
        let name = bytes.windows(10).position(|w| w == b"app.logger").unwrap();
        bytes[name] = 0xff;
        assert!(decode(&bytes).is_err());
        assert_eq!(decode(&[]).unwrap(), ExportLogsServiceRequest::default());
    }

    /// The events of both decoders (the requests' records all have a time, so that the
    /// events do not depend on when they are made).
    fn both(bytes: &[u8]) -> (Result<Vec<Event>, String>, Result<Vec<Event>, String>) {
        let via_prost = decode(bytes).map_err(|e| e.to_string()).map(|r| {
            let mut out = Vec::new();
            to_events(r, &mut out);
            out
        });
        let mut out = vec![Event::new()];
        let direct = decode_events(bytes, &mut out).map(|n| {
            assert_eq!(n + 1, out.len());
            out.split_off(1)
        });
        if direct.is_err() {
            assert_eq!(out.len(), 1, "an error leaves out as it was");
        }
        (via_prost, direct)
    }

    /// Reading in place makes the events prost's decoding and [`to_events`] make, for the
    /// golden request and for many random ones (every value type, empty and repeated
    /// fields, several resources and scopes); and refuses what prost refuses.
    #[test]
    fn reading_in_place_matches_decoding() {
        let (a, b) = both(&golden_request().encode_to_vec());
        assert_eq!(a.unwrap(), b.unwrap());
        let mut rng = fastrand::Rng::with_seed(42);
        for round in 0..300 {
            let req = random_request(&mut rng);
            let bytes = req.encode_to_vec();
            let (a, b) = both(&bytes);
            assert_eq!(a.unwrap(), b.unwrap(), "round {round}: {req:?}");
            // Cut short, or with a byte flipped: both refuse, or both read the same.
            let mut broken = bytes.clone();
            if !broken.is_empty() {
                let i = rng.usize(..broken.len());
                if rng.bool() {
                    broken.truncate(i);
                } else {
                    broken[i] ^= 1 << rng.u8(..8);
                }
            }
            match both(&broken) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "round {round}: {broken:?}"),
                (Err(_), Err(_)) => {}
                (a, b) => panic!(
                    "round {round}: prost {:?}, in place {:?}",
                    a.map(|e| e.len()),
                    b.map(|e| e.len())
                ),
            }
        }
    }

    fn random_any(rng: &mut fastrand::Rng, depth: u32) -> Option<AnyValue> {
        let text = |rng: &mut fastrand::Rng| {
            let n = rng.usize(..40);
            (0..n).map(|_| rng.alphanumeric()).collect::<String>()
        };
        let v = match rng.u8(..if depth > 1 { 5 } else { 8 }) {
            0 => any_value::Value::StringValue(text(rng)),
            1 => any_value::Value::BoolValue(rng.bool()),
            2 => any_value::Value::IntValue(rng.i64(..)),
            3 => any_value::Value::DoubleValue(rng.f64() * 1e6),
            4 => return None,
            5 => any_value::Value::ArrayValue(ArrayValue {
                values: (0..rng.usize(..3))
                    .filter_map(|_| random_any(rng, depth + 1))
                    .collect(),
            }),
            6 => any_value::Value::KvlistValue(KeyValueList {
                values: (0..rng.usize(..3))
                    .map(|i| kv(&format!("k{i}"), random_any(rng, depth + 1)))
                    .collect(),
            }),
            _ => any_value::Value::BytesValue(text(rng).into_bytes()),
        };
        Some(AnyValue { value: Some(v) })
    }

    fn random_request(rng: &mut fastrand::Rng) -> ExportLogsServiceRequest {
        let mut req = golden_request();
        let template = req.resource_logs[0].clone();
        req.resource_logs.clear();
        for _ in 0..rng.usize(1..3) {
            let mut rl = template.clone();
            if rng.bool() {
                rl.resource = None;
            }
            let sl = rl.scope_logs[0].clone();
            rl.scope_logs = (0..rng.usize(..3)).map(|_| sl.clone()).collect();
            for sl in &mut rl.scope_logs {
                sl.log_records = (0..rng.usize(..4))
                    .map(|_| {
                        let keys = ["a", "b", "a", "http.method", "c"];
                        LogRecord {
                            time_unix_nano: rng.u64(1..u64::MAX / 2),
                            observed_time_unix_nano: if rng.bool() {
                                rng.u64(..u64::MAX / 2)
                            } else {
                                0
                            },
                            severity_number: rng.i32(-3..25),
                            severity_text: ["", "INFO", "WARN"][rng.usize(..3)].into(),
                            body: random_any(rng, 0),
                            attributes: (0..rng.usize(..5))
                                .map(|i| kv(keys[i], random_any(rng, 0)))
                                .collect(),
                            dropped_attributes_count: rng.u32(..3),
                            flags: rng.u32(..),
                            trace_id: if rng.bool() {
                                (0..16).collect()
                            } else {
                                Vec::new()
                            },
                            span_id: if rng.bool() { vec![7; 8] } else { Vec::new() },
                            event_name: ["", "e.x"][rng.usize(..2)].into(),
                        }
                    })
                    .collect();
            }
            req.resource_logs.push(rl);
        }
        req
    }
}
