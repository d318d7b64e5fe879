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

use sluice_event::{Event, Key, Map, Timestamp, Value};

use super::fields::{attributes, object, resource_value, scope_value, timestamp, value};
use super::proto::{any_value, ExportLogsServiceRequest, LogRecord};
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

fn record_event(record: LogRecord, resource: Option<&Value>, scope: Option<&Value>) -> Event {
    use sluice_event::key;
    // The fields are pushed in key order, so that the event's map is built in one pass with
    // no search, no shifting and one allocation.
    let mut f: Vec<(Key, Value)> = Vec::with_capacity(14);
    let nanos = match record.time_unix_nano {
        0 => record.observed_time_unix_nano,
        t => t,
    };
    let stamp = match nanos {
        0 => Timestamp::now(),
        n => timestamp(n),
    };
    f.push((key!("@timestamp"), Value::Timestamp(stamp)));
    f.push((key!("@version"), Value::String("1".into())));
    if !record.attributes.is_empty() {
        f.push((
            key!("attributes"),
            Value::Object(attributes(record.attributes)),
        ));
    }
    let mut message = None;
    match record.body.and_then(|b| b.value) {
        None => {}
        Some(any_value::Value::StringValue(s)) => message = Some(Value::String(s.into())),
        Some(v @ (any_value::Value::ArrayValue(_) | any_value::Value::KvlistValue(_))) => {
            f.push((key!("body"), object([("structured", value(v))])));
        }
        Some(scalar) => message = Some(Value::String(value(scalar).to_display_string().into())),
    }
    if record.dropped_attributes_count != 0 {
        let n = Value::Int(i64::from(record.dropped_attributes_count));
        f.push((key!("dropped_attributes_count"), n));
    }
    if !record.event_name.is_empty() {
        f.push((key!("event_name"), Value::String(record.event_name.into())));
    }
    if !record.severity_text.is_empty() {
        let level = Value::String(record.severity_text.into());
        f.push((key!("log"), object([("level", level)])));
    }
    if let Some(m) = message {
        f.push((key!("message"), m));
    }
    if record.observed_time_unix_nano != 0 {
        let observed = timestamp(record.observed_time_unix_nano);
        f.push((key!("observed_timestamp"), Value::Timestamp(observed)));
    }
    if let Some(r) = resource {
        f.push((key!("resource"), r.clone()));
    }
    if let Some(s) = scope {
        f.push((key!("scope"), s.clone()));
    }
    if record.severity_number != 0 {
        let n = Value::Int(i64::from(record.severity_number));
        f.push((key!("severity_number"), n));
    }
    if !record.span_id.is_empty() {
        let id = Value::String(hex(&record.span_id).into());
        f.push((key!("span"), object([("id", id)])));
    }
    if !record.trace_id.is_empty() {
        let id = Value::String(hex(&record.trace_id).into());
        f.push((key!("trace"), object([("id", id)])));
    }
    debug_assert!(f.windows(2).all(|w| w[0].0 < w[1].0), "fields out of order");
    Event::from_parts(Map::from_sorted_store_unchecked(f), Map::new())
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
}
