//! OTLP spans → events, one event per span, in the shape Elastic's OTLP intake gives a span
//! (`traces-*.otel-*`): `trace.id` and `span.id` under their ECS names, the rest under OTLP's,
//! attribute names kept whole. A span's own events and links stay inside it, as lists.
//!
//! | OTLP span | event |
//! |---|---|
//! | `start_time_unix_nano`, else `end_time_unix_nano`, else the time it arrived | `@timestamp` (milliseconds) |
//! | `trace_id` / `span_id` / `parent_span_id` (lower-case hex) | `[trace][id]` / `[span][id]` / `parent_span_id` |
//! | `name`, `trace_state` | `name`, `trace_state` |
//! | `kind` | `kind`: `Unspecified`, `Internal`, `Server`, `Client`, `Producer` or `Consumer` |
//! | `end_time_unix_nano` − `start_time_unix_nano` | `duration` (nanoseconds) |
//! | `status` | `[status][code]` (`Unset`, `Ok`, `Error`), `[status][message]` |
//! | `attributes` and the dropped counts | `[attributes]`, `dropped_attributes_count`, `dropped_events_count`, `dropped_links_count` |
//! | `events` | `[events]`: `time`, `name`, `attributes`, `dropped_attributes_count` each |
//! | `links` | `[links]`: `trace_id`, `span_id`, `trace_state`, `attributes`, `dropped_attributes_count` each |
//! | the resource and the scope | `[resource]` and `[scope]`, as for logs |

use sluice_event::{key, Event, Key, Map, Value};

use super::fields::{add_attributes, attributes, object, resource_value, scope_value, timestamp};
use super::proto::{ExportTraceServiceRequest, Span, SpanEvent, SpanLink};
use crate::numbers::hex;

/// Decodes an OTLP/protobuf traces export request.
pub fn decode(body: &[u8]) -> Result<ExportTraceServiceRequest, prost::DecodeError> {
    prost::Message::decode(body)
}

/// Appends one event per span of `request` to `out`; returns how many.
pub fn to_events(request: ExportTraceServiceRequest, out: &mut Vec<Event>) -> usize {
    let start = out.len();
    for resource_spans in request.resource_spans {
        let resource = resource_value(resource_spans.resource, resource_spans.schema_url);
        for scope_spans in resource_spans.scope_spans {
            let scope = scope_value(scope_spans.scope, scope_spans.schema_url);
            for span in scope_spans.spans {
                out.push(span_event(span, resource.as_ref(), scope.as_ref()));
            }
        }
    }
    out.len() - start
}

/// `SpanKind`'s names by number, as Elastic writes them.
pub(crate) const KINDS: [&str; 6] = [
    "Unspecified",
    "Internal",
    "Server",
    "Client",
    "Producer",
    "Consumer",
];

/// `Status.code`'s names by number.
pub(crate) const STATUS_CODES: [&str; 3] = ["Unset", "Ok", "Error"];

/// `kind`'s name.
fn kind(k: i32) -> Value {
    match usize::try_from(k).ok().and_then(|k| KINDS.get(k)) {
        Some(name) => Value::String((*name).into()),
        None => Value::Int(i64::from(k)),
    }
}

fn span_event(span: Span, resource: Option<&Value>, scope: Option<&Value>) -> Event {
    let mut e = Event::new();
    let nanos = match span.start_time_unix_nano {
        0 => span.end_time_unix_nano,
        t => t,
    };
    if nanos != 0 {
        e.set_timestamp(timestamp(nanos));
    }
    let mut put = |k: &str, v: Value| e.set_field(k, v);
    let id = |bytes: &[u8]| Value::String(hex(bytes).into());
    if !span.trace_id.is_empty() {
        put("trace", object([(key!("id"), id(&span.trace_id))]));
    }
    if !span.span_id.is_empty() {
        put("span", object([(key!("id"), id(&span.span_id))]));
    }
    if !span.parent_span_id.is_empty() {
        put("parent_span_id", id(&span.parent_span_id));
    }
    if !span.trace_state.is_empty() {
        put("trace_state", Value::String(span.trace_state.into()));
    }
    put("name", Value::String(span.name.into()));
    put("kind", kind(span.kind));
    if span.start_time_unix_nano != 0 && span.end_time_unix_nano >= span.start_time_unix_nano {
        let d = span.end_time_unix_nano - span.start_time_unix_nano;
        put("duration", Value::integer(i128::from(d)));
    }
    if let Some(status) = span.status {
        let mut m = Map::new();
        let code = match usize::try_from(status.code)
            .ok()
            .and_then(|c| STATUS_CODES.get(c))
        {
            Some(name) => Value::String((*name).into()),
            None => Value::Int(i64::from(status.code)),
        };
        m.insert(Key::from("code"), code);
        if !status.message.is_empty() {
            m.insert(Key::from("message"), Value::String(status.message.into()));
        }
        put("status", Value::Object(m));
    }
    if !span.attributes.is_empty() {
        put("attributes", Value::Object(attributes(span.attributes)));
    }
    for (name, n) in [
        ("dropped_attributes_count", span.dropped_attributes_count),
        ("dropped_events_count", span.dropped_events_count),
        ("dropped_links_count", span.dropped_links_count),
    ] {
        if n != 0 {
            put(name, Value::Int(i64::from(n)));
        }
    }
    if !span.events.is_empty() {
        put(
            "events",
            Value::Array(span.events.into_iter().map(span_event_value).collect()),
        );
    }
    if !span.links.is_empty() {
        put(
            "links",
            Value::Array(span.links.into_iter().map(link_value).collect()),
        );
    }
    if let Some(r) = resource {
        put("resource", r.clone());
    }
    if let Some(s) = scope {
        put("scope", s.clone());
    }
    e
}

fn span_event_value(ev: SpanEvent) -> Value {
    let mut m = Map::new();
    if ev.time_unix_nano != 0 {
        m.insert(
            Key::from("time"),
            Value::Timestamp(timestamp(ev.time_unix_nano)),
        );
    }
    m.insert(Key::from("name"), Value::String(ev.name.into()));
    add_attributes(&mut m, ev.attributes, ev.dropped_attributes_count);
    Value::Object(m)
}

fn link_value(link: SpanLink) -> Value {
    let mut m = Map::new();
    m.insert(
        Key::from("trace_id"),
        Value::String(hex(&link.trace_id).into()),
    );
    m.insert(
        Key::from("span_id"),
        Value::String(hex(&link.span_id).into()),
    );
    if !link.trace_state.is_empty() {
        m.insert(
            Key::from("trace_state"),
            Value::String(link.trace_state.into()),
        );
    }
    add_attributes(&mut m, link.attributes, link.dropped_attributes_count);
    Value::Object(m)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::otlp::fields::unhex;
    use crate::otlp::proto::{AnyValue, InstrumentationScope, KeyValue, Resource, ResourceSpans};
    use crate::otlp::proto::{ScopeSpans, SpanStatus};
    use sluice_event::FieldRef;

    fn kv(key: &str, v: &str) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue {
                value: Some(crate::otlp::proto::any_value::Value::StringValue(v.into())),
            }),
        }
    }

    /// The request of the golden bytes below, field for field.
    pub(crate) fn golden_request() -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![kv("service.name", "shop")],
                    dropped_attributes_count: 0,
                }),
                scope_spans: vec![ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: "shop.http".into(),
                        version: "2".into(),
                        ..Default::default()
                    }),
                    spans: vec![Span {
                        trace_id: (1..=16).collect(),
                        span_id: vec![0x0a; 8],
                        trace_state: "k=v".into(),
                        parent_span_id: vec![0x0b; 8],
                        flags: 257,
                        name: "GET /cart".into(),
                        kind: 2,
                        start_time_unix_nano: 1_764_300_000_000_000_000,
                        end_time_unix_nano: 1_764_300_000_250_000_000,
                        attributes: vec![kv("http.route", "/cart")],
                        dropped_attributes_count: 1,
                        events: vec![SpanEvent {
                            time_unix_nano: 1_764_300_000_100_000_000,
                            name: "cache miss".into(),
                            attributes: vec![kv("key", "c1")],
                            dropped_attributes_count: 2,
                        }],
                        dropped_events_count: 3,
                        links: vec![SpanLink {
                            trace_id: (17..=32).collect(),
                            span_id: vec![0x0c; 8],
                            trace_state: "l=1".into(),
                            attributes: vec![kv("why", "retry")],
                            dropped_attributes_count: 4,
                            flags: 1,
                        }],
                        dropped_links_count: 5,
                        status: Some(SpanStatus {
                            message: "boom".into(),
                            code: 2,
                        }),
                    }],
                    schema_url: "s2".into(),
                }],
                schema_url: "s1".into(),
            }],
        }
    }

    /// Bytes written by opentelemetry-proto's own generated Python classes (1.x) for a
    /// request that sets every field: the field numbers and wire types here are theirs.
    pub(crate) const GOLDEN: &str = "0a8f020a180a160a0c736572766963652e6e616d6512060a0473686f7012ee010a0e0a0973686f702e6874747012013212d7010a100102030405060708090a0b0c0d0e0f1012080a0a0a0a0a0a0a0a1a036b3d7622080b0b0b0b0b0b0b0b2a09474554202f6361727430023900c03899800d7c184180721fa8800d7c184a150a0a687474702e726f75746512070a052f6361727450015a240900a12e9f800d7c18120a6361636865206d6973731a0b0a036b657912040a026331200260036a380a101112131415161718191a1b1c1d1e1f2012080c0c0c0c0c0c0c0c1a036c3d31220e0a0377687912070a0572657472792804350100000070057a081204626f6f6d18028501010100001a0273321a027331";

    #[test]
    fn decodes_what_the_official_definitions_encode() {
        assert_eq!(decode(&unhex(GOLDEN)).unwrap(), golden_request());
    }

    #[test]
    fn a_span_becomes_an_event_with_every_mapped_field() {
        let mut out = Vec::new();
        assert_eq!(to_events(golden_request(), &mut out), 1);
        let e = &out[0];
        let get = |p: &str| e.get(&FieldRef::parse(p).unwrap()).cloned();
        let s = |t: &str| Some(Value::String(t.into()));
        assert_eq!(e.timestamp().unwrap().millis(), 1_764_300_000_000);
        assert_eq!(get("[trace][id]"), s("0102030405060708090a0b0c0d0e0f10"));
        assert_eq!(get("[span][id]"), s("0a0a0a0a0a0a0a0a"));
        assert_eq!(get("parent_span_id"), s("0b0b0b0b0b0b0b0b"));
        assert_eq!(get("trace_state"), s("k=v"));
        assert_eq!(get("name"), s("GET /cart"));
        assert_eq!(get("kind"), s("Server"));
        assert_eq!(get("duration"), Some(Value::Int(250_000_000)));
        assert_eq!(get("[status][code]"), s("Error"));
        assert_eq!(get("[status][message]"), s("boom"));
        assert_eq!(get("[attributes][http.route]"), s("/cart"));
        assert_eq!(get("dropped_attributes_count"), Some(Value::Int(1)));
        assert_eq!(get("dropped_events_count"), Some(Value::Int(3)));
        assert_eq!(get("dropped_links_count"), Some(Value::Int(5)));
        assert_eq!(get("[events][0][name]"), s("cache miss"));
        assert_eq!(
            get("[events][0][time]"),
            Some(Value::Timestamp(sluice_event::Timestamp::from_millis(
                1_764_300_000_100
            )))
        );
        assert_eq!(get("[events][0][attributes][key]"), s("c1"));
        assert_eq!(
            get("[events][0][dropped_attributes_count]"),
            Some(Value::Int(2))
        );
        assert_eq!(
            get("[links][0][trace_id]"),
            s("1112131415161718191a1b1c1d1e1f20")
        );
        assert_eq!(get("[links][0][span_id]"), s("0c0c0c0c0c0c0c0c"));
        assert_eq!(get("[links][0][trace_state]"), s("l=1"));
        assert_eq!(get("[links][0][attributes][why]"), s("retry"));
        assert_eq!(get("[resource][attributes][service.name]"), s("shop"));
        assert_eq!(get("[resource][schema_url]"), s("s1"));
        assert_eq!(get("[scope][name]"), s("shop.http"));
        assert_eq!(get("[scope][schema_url]"), s("s2"));
    }

    #[test]
    fn kinds_statuses_and_times() {
        let span = |kind: i32, start: u64, end: u64, code: Option<i32>| Span {
            kind,
            start_time_unix_nano: start,
            end_time_unix_nano: end,
            status: code.map(|code| SpanStatus {
                message: String::new(),
                code,
            }),
            ..Default::default()
        };
        let request = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans: vec![
                        span(0, 0, 7_000_000, Some(0)),
                        span(5, 2_000_000, 1_000_000, Some(1)),
                        span(9, 0, 0, None),
                    ],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        let mut out = Vec::new();
        to_events(request, &mut out);
        let get = |i: usize, p: &str| out[i].get(&FieldRef::parse(p).unwrap()).cloned();
        assert_eq!(get(0, "kind"), Some("Unspecified".into()));
        assert_eq!(out[0].timestamp().unwrap().millis(), 7);
        assert_eq!(get(0, "duration"), None);
        assert_eq!(get(0, "[status][code]"), Some("Unset".into()));
        assert_eq!(get(1, "kind"), Some("Consumer".into()));
        assert_eq!(
            get(1, "duration"),
            None,
            "an end before the start has no duration"
        );
        assert_eq!(get(1, "[status][code]"), Some("Ok".into()));
        assert_eq!(get(2, "kind"), Some(Value::Int(9)));
        assert!(get(2, "status").is_none() && get(2, "trace").is_none());
        assert!(get(2, "resource").is_none() && get(2, "scope").is_none());
    }
}
