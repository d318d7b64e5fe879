//! Events → OTLP export requests, for the `opentelemetry` output: the inverse of [`logs`] and
//! [`traces`], so that what the input made goes back out as it came in, and any other event
//! becomes a log record (or a span) of its own.
//!
//! Each event is read, never changed. The fields the input's mapping defines go back to their
//! OTLP places (the tables of [`logs`] and [`traces`], read right to left); a field holding
//! something the place cannot take (a `[trace][id]` that is not 32 hex digits, a `kind` that
//! is no kind's name) is not lost but sent as an attribute like the rest. Every other field
//! becomes an attribute: `[attributes]`'s keys whole (`http.method`), any other object's
//! leaves under dotted keys (`[host][name]` → `host.name`, as OpenTelemetry names them),
//! arrays and scalars as they are. `@version` (Logstash's own) and `@metadata` are not sent.
//!
//! An event of the input's `mapping => raw` (`[otel]` holding OTLP/JSON, [`super::raw`]) is
//! sent as it holds it; if its `[otel]` does not read as OTLP/JSON, it is mapped as any
//! other event.
//!
//! Events with the same `[resource]` and `[scope]` share one `ResourceLogs`/`ScopeLogs` (or
//! spans); consecutive events usually do, so the last group is tried first.
//!
//! [`logs`]: super::logs
//! [`traces`]: super::traces

use sluice_event::{Event, Map, Timestamp, Value};

use super::json;
use super::proto::{any_value, AnyValue, ArrayValue, KeyValue, KeyValueList};
use super::proto::{ExportLogsServiceRequest, ExportTraceServiceRequest, LogRecord};
use super::proto::{InstrumentationScope, Resource, ResourceLogs, ResourceSpans};
use super::proto::{ScopeLogs, ScopeSpans, Span, SpanEvent, SpanLink, SpanStatus};
use super::traces::{KINDS, STATUS_CODES};

/// One log record per event.
pub fn logs_request(events: &[&Event]) -> ExportLogsServiceRequest {
    let groups = group(events, "logRecord", json::raw::log_record, log_record);
    ExportLogsServiceRequest {
        resource_logs: groups
            .into_iter()
            .map(|g| {
                let (resource, schema_url) = g.resource.resolve();
                ResourceLogs {
                    resource,
                    scope_logs: g
                        .scopes
                        .into_iter()
                        .map(|(s, log_records)| {
                            let (scope, schema_url) = s.resolve();
                            ScopeLogs {
                                scope,
                                log_records,
                                schema_url,
                            }
                        })
                        .collect(),
                    schema_url,
                }
            })
            .collect(),
    }
}

/// One span per event.
pub fn traces_request(events: &[&Event]) -> ExportTraceServiceRequest {
    let groups = group(events, "span", json::raw::span, span);
    ExportTraceServiceRequest {
        resource_spans: groups
            .into_iter()
            .map(|g| {
                let (resource, schema_url) = g.resource.resolve();
                ResourceSpans {
                    resource,
                    scope_spans: g
                        .scopes
                        .into_iter()
                        .map(|(s, spans)| {
                            let (scope, schema_url) = s.resolve();
                            ScopeSpans {
                                scope,
                                spans,
                                schema_url,
                            }
                        })
                        .collect(),
                    schema_url,
                }
            })
            .collect(),
    }
}

/// A resource or a scope, as a group's key: an event's `[resource]` (`[scope]`) object, or
/// the one a `mapping => raw` event's `[otel]` held, already read, with its schema URL.
#[derive(PartialEq)]
enum Context<'e, T> {
    Mapped(Option<&'e Value>),
    Raw(Option<T>, String),
}

trait FromMapped: Sized {
    fn from_mapped(v: Option<&Value>) -> (Option<Self>, String);
}

impl FromMapped for Resource {
    fn from_mapped(v: Option<&Value>) -> (Option<Resource>, String) {
        resource(v)
    }
}

impl FromMapped for InstrumentationScope {
    fn from_mapped(v: Option<&Value>) -> (Option<InstrumentationScope>, String) {
        scope(v)
    }
}

impl<T: FromMapped> Context<'_, T> {
    fn resolve(self) -> (Option<T>, String) {
        match self {
            Context::Mapped(v) => T::from_mapped(v),
            Context::Raw(t, schema) => (t, schema),
        }
    }
}

/// The events of one resource, by scope.
struct Group<'e, T> {
    resource: Context<'e, Resource>,
    scopes: Vec<(Context<'e, InstrumentationScope>, Vec<T>)>,
}

/// The resource, scope and item of a `mapping => raw` event (`[otel]` with `key`), when
/// each reads as OTLP/JSON.
fn raw<'e, T>(
    e: &Event,
    key: &str,
    read: fn(&Value) -> Result<T, String>,
) -> Option<(Context<'e, Resource>, Context<'e, InstrumentationScope>, T)> {
    let otel = e.fields().get("otel")?.as_object()?;
    let item = read(otel.get(key)?).ok()?;
    let schema = |k: &str| {
        otel.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let resource = match otel.get("resource") {
        None => None,
        Some(v) => Some(json::raw::resource(v).ok()?),
    };
    let scope = match otel.get("scope") {
        None => None,
        Some(v) => Some(json::raw::scope(v).ok()?),
    };
    Some((
        Context::Raw(resource, schema("resourceSchemaUrl")),
        Context::Raw(scope, schema("scopeSchemaUrl")),
        item,
    ))
}

/// The events' items (`make` of each, or the item its `[otel][<raw_key>]` holds), grouped by
/// resource and scope, in order.
fn group<'e, T>(
    events: &[&'e Event],
    raw_key: &str,
    read_raw: fn(&Value) -> Result<T, String>,
    make: impl Fn(&Event) -> T,
) -> Vec<Group<'e, T>> {
    let mut groups: Vec<Group<'e, T>> = Vec::new();
    for e in events {
        let (r, s, item) = match raw(e, raw_key, read_raw) {
            Some(parts) => parts,
            None => {
                let fields = e.fields();
                let r = fields.get("resource").filter(|v| v.as_object().is_some());
                let s = fields.get("scope").filter(|v| v.as_object().is_some());
                (Context::Mapped(r), Context::Mapped(s), make(e))
            }
        };
        let g = match groups.iter().rposition(|g| g.resource == r) {
            Some(i) => &mut groups[i],
            None => {
                groups.push(Group {
                    resource: r,
                    scopes: Vec::new(),
                });
                groups.last_mut().expect("just pushed")
            }
        };
        let items = match g.scopes.iter().rposition(|(scope, _)| *scope == s) {
            Some(i) => &mut g.scopes[i].1,
            None => {
                g.scopes.push((s, Vec::new()));
                &mut g.scopes.last_mut().expect("just pushed").1
            }
        };
        items.push(item);
    }
    groups
}

/// The resource of a `[resource]` object, and its schema URL.
fn resource(v: Option<&Value>) -> (Option<Resource>, String) {
    let Some(m) = v.and_then(Value::as_object) else {
        return (None, String::new());
    };
    let mut r = Resource::default();
    let mut attrs = Vec::new();
    let mut schema_url = String::new();
    for (k, v) in m.iter() {
        match (k.as_ref(), v) {
            ("attributes", Value::Object(a)) => whole_keys(a, &mut attrs),
            ("schema_url", Value::String(s)) => schema_url = s.to_string(),
            ("dropped_attributes_count", v) if count(v).is_some() => {
                r.dropped_attributes_count = count(v).unwrap_or(0)
            }
            (k, v) => flatten(k, v, &mut attrs),
        }
    }
    r.attributes = attrs;
    (Some(r), schema_url)
}

/// The scope of a `[scope]` object, and its schema URL.
fn scope(v: Option<&Value>) -> (Option<InstrumentationScope>, String) {
    let Some(m) = v.and_then(Value::as_object) else {
        return (None, String::new());
    };
    let mut s = InstrumentationScope::default();
    let mut schema_url = String::new();
    for (k, v) in m.iter() {
        match (k.as_ref(), v) {
            ("name", Value::String(n)) => s.name = n.to_string(),
            ("version", Value::String(n)) => s.version = n.to_string(),
            ("attributes", Value::Object(a)) => whole_keys(a, &mut s.attributes),
            ("schema_url", Value::String(u)) => schema_url = u.to_string(),
            ("dropped_attributes_count", v) if count(v).is_some() => {
                s.dropped_attributes_count = count(v).unwrap_or(0)
            }
            (k, v) => flatten(k, v, &mut s.attributes),
        }
    }
    (Some(s), schema_url)
}

fn log_record(e: &Event) -> LogRecord {
    let mut r = LogRecord::default();
    let mut attrs = Vec::new();
    let mut structured = None;
    for (k, v) in e.fields().iter() {
        let key = k.as_ref();
        match (key, v) {
            ("@timestamp", Value::Timestamp(t)) => r.time_unix_nano = nanos(*t),
            ("@version" | "resource" | "scope", _) => {}
            ("message", Value::String(s)) => r.body = Some(string(s)),
            ("observed_timestamp", v) if time(v).is_some() => {
                r.observed_time_unix_nano = time(v).map_or(0, nanos)
            }
            ("severity_number", Value::Int(n @ 0..=24)) => r.severity_number = *n as i32,
            ("event_name", Value::String(s)) => r.event_name = s.to_string(),
            ("attributes", Value::Object(a)) => whole_keys(a, &mut attrs),
            ("dropped_attributes_count", v) if count(v).is_some() => {
                r.dropped_attributes_count = count(v).unwrap_or(0)
            }
            ("log", Value::Object(m)) => {
                let rest = take(m, "level", |v| match v {
                    Value::String(s) => {
                        r.severity_text = s.to_string();
                        true
                    }
                    _ => false,
                });
                rest.for_each(|(k, v)| flatten(&format!("log.{k}"), v, &mut attrs));
            }
            ("trace", Value::Object(m)) => {
                let rest = take(m, "id", |v| id(v, 16).map(|b| r.trace_id = b).is_some());
                rest.for_each(|(k, v)| flatten(&format!("trace.{k}"), v, &mut attrs));
            }
            ("span", Value::Object(m)) => {
                let rest = take(m, "id", |v| id(v, 8).map(|b| r.span_id = b).is_some());
                rest.for_each(|(k, v)| flatten(&format!("span.{k}"), v, &mut attrs));
            }
            ("body", Value::Object(m)) => {
                let rest = take(m, "structured", |v| {
                    structured = Some(v);
                    true
                });
                rest.for_each(|(k, v)| flatten(&format!("body.{k}"), v, &mut attrs));
            }
            (k, v) => flatten(k, v, &mut attrs),
        }
    }
    // A string `message` is the body; `[body][structured]` is, when there is none.
    match structured {
        Some(v) if r.body.is_none() => r.body = Some(any(v)),
        Some(v) => flatten("body.structured", v, &mut attrs),
        None => {}
    }
    r.attributes = attrs;
    r
}

fn span(e: &Event) -> Span {
    let mut s = Span::default();
    let mut attrs = Vec::new();
    let mut duration = None;
    for (k, v) in e.fields().iter() {
        let key = k.as_ref();
        match (key, v) {
            ("@timestamp", Value::Timestamp(t)) => s.start_time_unix_nano = nanos(*t),
            ("@version" | "resource" | "scope", _) => {}
            ("name", Value::String(n)) => s.name = n.to_string(),
            ("kind", v) if kind(v).is_some() => s.kind = kind(v).unwrap_or(0),
            ("parent_span_id", v) if id(v, 8).is_some() => {
                s.parent_span_id = id(v, 8).unwrap_or_default()
            }
            ("trace_state", Value::String(t)) => s.trace_state = t.to_string(),
            ("duration", Value::Int(d @ 0..)) => duration = Some(*d as u64),
            ("attributes", Value::Object(a)) => whole_keys(a, &mut attrs),
            ("dropped_attributes_count", v) if count(v).is_some() => {
                s.dropped_attributes_count = count(v).unwrap_or(0)
            }
            ("dropped_events_count", v) if count(v).is_some() => {
                s.dropped_events_count = count(v).unwrap_or(0)
            }
            ("dropped_links_count", v) if count(v).is_some() => {
                s.dropped_links_count = count(v).unwrap_or(0)
            }
            ("trace", Value::Object(m)) => {
                let rest = take(m, "id", |v| id(v, 16).map(|b| s.trace_id = b).is_some());
                rest.for_each(|(k, v)| flatten(&format!("trace.{k}"), v, &mut attrs));
            }
            ("span", Value::Object(m)) => {
                let rest = take(m, "id", |v| id(v, 8).map(|b| s.span_id = b).is_some());
                rest.for_each(|(k, v)| flatten(&format!("span.{k}"), v, &mut attrs));
            }
            ("status", Value::Object(m)) if status(m).is_some() => s.status = status(m),
            ("events", Value::Array(items)) if items.iter().all(|i| span_event(i).is_some()) => {
                s.events = items.iter().filter_map(span_event).collect()
            }
            ("links", Value::Array(items)) if items.iter().all(|i| link(i).is_some()) => {
                s.links = items.iter().filter_map(link).collect()
            }
            (k, v) => flatten(k, v, &mut attrs),
        }
    }
    if let Some(d) = duration {
        s.end_time_unix_nano = s.start_time_unix_nano.saturating_add(d);
    }
    s.attributes = attrs;
    s
}

/// A `[status]` of `code` (`Unset`, `Ok`, `Error` or its number) and `message`; `None` for
/// anything else.
fn status(m: &Map) -> Option<SpanStatus> {
    let mut s = SpanStatus::default();
    for (k, v) in m.iter() {
        match (k.as_ref(), v) {
            ("code", Value::String(c)) => {
                s.code = STATUS_CODES
                    .iter()
                    .position(|n| n.eq_ignore_ascii_case(c))? as i32
            }
            ("code", Value::Int(n @ 0..=2)) => s.code = *n as i32,
            ("message", Value::String(t)) => s.message = t.to_string(),
            _ => return None,
        }
    }
    Some(s)
}

/// An item of `[events]`: `time`, `name`, `attributes`, `dropped_attributes_count`.
fn span_event(v: &Value) -> Option<SpanEvent> {
    let mut ev = SpanEvent::default();
    for (k, v) in v.as_object()?.iter() {
        match (k.as_ref(), v) {
            ("time", v) => ev.time_unix_nano = nanos(time(v)?),
            ("name", Value::String(n)) => ev.name = n.to_string(),
            ("attributes", Value::Object(a)) => whole_keys(a, &mut ev.attributes),
            ("dropped_attributes_count", v) => ev.dropped_attributes_count = count(v)?,
            _ => return None,
        }
    }
    Some(ev)
}

/// An item of `[links]`: `trace_id`, `span_id`, `trace_state`, `attributes`,
/// `dropped_attributes_count`.
fn link(v: &Value) -> Option<SpanLink> {
    let mut l = SpanLink::default();
    for (k, v) in v.as_object()?.iter() {
        match (k.as_ref(), v) {
            ("trace_id", v) => l.trace_id = id(v, 16)?,
            ("span_id", v) => l.span_id = id(v, 8)?,
            ("trace_state", Value::String(t)) => l.trace_state = t.to_string(),
            ("attributes", Value::Object(a)) => whole_keys(a, &mut l.attributes),
            ("dropped_attributes_count", v) => l.dropped_attributes_count = count(v)?,
            _ => return None,
        }
    }
    Some(l)
}

/// `m`'s entry `key` offered to `place` (which says whether it took it), and an iterator over
/// the entries left to send as attributes.
fn take<'m>(
    m: &'m Map,
    key: &'static str,
    place: impl FnOnce(&'m Value) -> bool,
) -> impl Iterator<Item = (&'m str, &'m Value)> {
    let taken = m.get(key).is_some_and(place);
    m.iter()
        .map(|(k, v)| (k.as_ref(), v))
        .filter(move |(k, _)| !(taken && *k == key))
}

/// The span kind a `kind` names (`Server`, any case) or numbers.
fn kind(v: &Value) -> Option<i32> {
    match v {
        Value::String(s) => KINDS
            .iter()
            .position(|k| k.eq_ignore_ascii_case(s))
            .map(|k| k as i32),
        Value::Int(n @ 0..=5) => Some(*n as i32),
        _ => None,
    }
}

/// The bytes of an id of `len` bytes written as hex.
fn id(v: &Value, len: usize) -> Option<Vec<u8>> {
    let s = v.as_str()?.as_bytes();
    if s.len() != len * 2 {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    s.chunks(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

fn count(v: &Value) -> Option<u32> {
    match v {
        Value::Int(n) => u32::try_from(*n).ok(),
        _ => None,
    }
}

/// A timestamp value, or ISO 8601 text.
fn time(v: &Value) -> Option<Timestamp> {
    match v {
        Value::Timestamp(t) => Some(*t),
        Value::String(s) => Timestamp::parse_iso8601(s),
        _ => None,
    }
}

fn nanos(t: Timestamp) -> u64 {
    u64::try_from(t.millis()).map_or(0, |ms| ms.saturating_mul(1_000_000))
}

/// `a`'s entries as attributes, keys whole.
fn whole_keys(a: &Map, out: &mut Vec<KeyValue>) {
    out.extend(a.iter().map(|(k, v)| KeyValue {
        key: k.to_string(),
        value: Some(any(v)),
    }));
}

/// `v` as attributes under `prefix`: an object's leaves under dotted keys, anything else as
/// it is. An empty object is sent as an empty map, so that it is not lost.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<KeyValue>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, v) in m.iter() {
                flatten(&format!("{prefix}.{}", k.as_ref()), v, out);
            }
        }
        v => out.push(KeyValue {
            key: prefix.to_owned(),
            value: Some(any(v)),
        }),
    }
}

fn string(s: &str) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::StringValue(s.to_owned())),
    }
}

/// A value as an OTLP value: objects as maps (keys whole), arrays as arrays, a timestamp as
/// its ISO 8601 text, numbers past 64 bits as their decimal text, null as an unset value.
pub fn any(v: &Value) -> AnyValue {
    let value = match v {
        Value::Null => None,
        Value::Bool(b) => Some(any_value::Value::BoolValue(*b)),
        Value::Int(i) => Some(any_value::Value::IntValue(*i)),
        Value::Float(f) => Some(any_value::Value::DoubleValue(*f)),
        Value::String(s) => Some(any_value::Value::StringValue(s.to_string())),
        Value::BigInt(_) | Value::Decimal(_) | Value::Timestamp(_) => {
            Some(any_value::Value::StringValue(v.to_display_string()))
        }
        Value::Array(items) => Some(any_value::Value::ArrayValue(ArrayValue {
            values: items.iter().map(any).collect(),
        })),
        Value::Object(m) => {
            let mut values = Vec::with_capacity(m.len());
            whole_keys(m, &mut values);
            Some(any_value::Value::KvlistValue(KeyValueList { values }))
        }
    };
    AnyValue { value }
}

/// Bytes as base64, as the input writes a bytes value (for tests that compare).
#[cfg(test)]
fn b64(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::otlp::{logs, traces};
    use sluice_event::FieldRef;

    fn parse(json: &str) -> Event {
        let v = sluice_event::json::parse(json.as_bytes()).unwrap();
        let Value::Object(m) = v else { panic!() };
        Event::from_map(m)
    }

    fn get<'e>(e: &'e Event, path: &str) -> Option<&'e Value> {
        e.get(&FieldRef::parse(path).unwrap())
    }

    /// What the input makes of a request, the output sends back as the same request (less
    /// what an event cannot hold: time below the millisecond, flags).
    #[test]
    fn logs_go_back_as_they_came() {
        let mut golden = logs::tests::golden_request();
        let mut events = Vec::new();
        logs::to_events(golden.clone(), &mut events);
        let refs: Vec<&Event> = events.iter().collect();
        let back = logs_request(&refs);
        let record = &mut golden.resource_logs[0].scope_logs[0].log_records[0];
        record.time_unix_nano -= record.time_unix_nano % 1_000_000;
        record.flags = 0;
        // A bytes value comes back as its base64 text.
        let b = record.attributes.iter_mut().find(|a| a.key == "b").unwrap();
        b.value = Some(string(&b64(b"hi")));
        sort(&mut golden.resource_logs[0].scope_logs[0].log_records[0].attributes);
        let mut back = back;
        sort(&mut back.resource_logs[0].scope_logs[0].log_records[0].attributes);
        assert_eq!(back, golden);
    }

    fn sort(attrs: &mut [KeyValue]) {
        attrs.sort_by(|a, b| a.key.cmp(&b.key));
    }

    #[test]
    fn spans_go_back_as_they_came() {
        let mut golden = traces::tests::golden_request();
        let mut events = Vec::new();
        traces::to_events(golden.clone(), &mut events);
        let refs: Vec<&Event> = events.iter().collect();
        let mut back = traces_request(&refs);
        for (b, g) in back.resource_spans[0].scope_spans[0]
            .spans
            .iter_mut()
            .zip(&mut golden.resource_spans[0].scope_spans[0].spans)
        {
            // Events hold milliseconds; the duration keeps the span's length exact.
            let cut = g.start_time_unix_nano % 1_000_000;
            g.start_time_unix_nano -= cut;
            g.end_time_unix_nano -= cut;
            g.flags = 0;
            for ev in &mut g.events {
                ev.time_unix_nano -= ev.time_unix_nano % 1_000_000;
            }
            for l in &mut g.links {
                l.flags = 0;
            }
            sort(&mut g.attributes);
            sort(&mut b.attributes);
        }
        assert_eq!(back, golden);
    }

    /// An event that did not come from OTLP: `message` is the body, the rest attributes
    /// with dotted keys; what does not fit its OTLP place is kept as an attribute.
    #[test]
    fn any_event_becomes_a_record() {
        let e = parse(
            r#"{"@timestamp":"2026-11-28T10:00:00.250Z","@version":"1","message":"GET /",
                "host":{"name":"web1","ip":["10.0.0.1"]},"status":404,"tags":["a"],
                "log":{"level":"warn","file":{"path":"/var/log/x"}},
                "trace":{"id":"not-hex"},"empty":{},"kind":"Server"}"#,
        );
        let mut e = e;
        e.set_timestamp(Timestamp::parse_iso8601("2026-11-28T10:00:00.250Z").unwrap());
        let req = logs_request(&[&e]);
        assert_eq!(req.resource_logs.len(), 1);
        assert!(req.resource_logs[0].resource.is_none());
        let r = &req.resource_logs[0].scope_logs[0].log_records[0];
        assert_eq!(r.body, Some(string("GET /")));
        assert_eq!(r.severity_text, "warn");
        assert_eq!(r.time_unix_nano, 1_795_860_000_250_000_000);
        assert!(r.trace_id.is_empty());
        let mut got: Vec<(String, Option<AnyValue>)> = r
            .attributes
            .iter()
            .map(|a| (a.key.clone(), a.value.clone()))
            .collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        let int = |i| {
            Some(AnyValue {
                value: Some(any_value::Value::IntValue(i)),
            })
        };
        let list = |s: &str| {
            Some(AnyValue {
                value: Some(any_value::Value::ArrayValue(ArrayValue {
                    values: vec![string(s)],
                })),
            })
        };
        let empty = Some(AnyValue {
            value: Some(any_value::Value::KvlistValue(KeyValueList::default())),
        });
        assert_eq!(
            got,
            [
                ("empty".to_owned(), empty),
                ("host.ip".to_owned(), list("10.0.0.1")),
                ("host.name".to_owned(), Some(string("web1"))),
                ("kind".to_owned(), Some(string("Server"))),
                ("log.file.path".to_owned(), Some(string("/var/log/x"))),
                ("status".to_owned(), int(404)),
                ("tags".to_owned(), list("a")),
                ("trace.id".to_owned(), Some(string("not-hex"))),
            ]
        );
    }

    /// Events of two resources, interleaved, land in two `ResourceLogs`, each in order.
    #[test]
    fn events_are_grouped_by_resource_and_scope() {
        let mk = |svc: &str, scope: &str, msg: &str| {
            parse(&format!(
                r#"{{"message":"{msg}","resource":{{"attributes":{{"service.name":"{svc}"}}}},
                    "scope":{{"name":"{scope}"}}}}"#
            ))
        };
        let events = [
            mk("a", "x", "1"),
            mk("b", "x", "2"),
            mk("a", "y", "3"),
            mk("a", "x", "4"),
        ];
        let refs: Vec<&Event> = events.iter().collect();
        let req = logs_request(&refs);
        let text = |v: &Option<AnyValue>| match v {
            Some(AnyValue {
                value: Some(any_value::Value::StringValue(s)),
            }) => s.clone(),
            _ => panic!("{v:?}"),
        };
        // "resource/scope: messages" for each scope of each resource, in order.
        let mut shape = Vec::new();
        for rl in &req.resource_logs {
            let svc = text(&rl.resource.as_ref().unwrap().attributes[0].value);
            for sl in &rl.scope_logs {
                let msgs: Vec<String> = sl.log_records.iter().map(|r| text(&r.body)).collect();
                let scope = &sl.scope.as_ref().unwrap().name;
                shape.push(format!("{svc}/{scope}: {}", msgs.join(" ")));
            }
        }
        assert_eq!(shape, ["a/x: 1 4", "a/y: 3", "b/x: 2"]);
        // Read back by the input, each event has its own resource and scope again.
        let mut out = Vec::new();
        logs::to_events(req, &mut out);
        let svc: Vec<_> = out
            .iter()
            .map(|e| get(e, "[resource][attributes][service.name]").cloned())
            .collect();
        assert_eq!(
            svc,
            [
                Some("a".into()),
                Some("a".into()),
                Some("a".into()),
                Some("b".into())
            ]
        );
    }

    #[test]
    fn a_span_of_a_plain_event_keeps_what_does_not_fit() {
        let e = parse(
            r#"{"name":"GET","kind":"sideways","duration":5,"status":{"code":"Ok","extra":1},
                "trace":{"id":"0102030405060708090a0b0c0d0e0f10"},"span":{"id":"abababababababab"},
                "events":[{"name":"e","bogus":1}]}"#,
        );
        let req = traces_request(&[&e]);
        let s = &req.resource_spans[0].scope_spans[0].spans[0];
        assert_eq!(s.name, "GET");
        assert_eq!(s.kind, 0);
        assert_eq!(s.trace_id, (1..=16).collect::<Vec<u8>>());
        assert_eq!(s.span_id, vec![0xab; 8]);
        assert_eq!(s.end_time_unix_nano - s.start_time_unix_nano, 5);
        assert!(s.status.is_none() && s.events.is_empty());
        let mut keys: Vec<&str> = s.attributes.iter().map(|a| a.key.as_str()).collect();
        keys.sort();
        assert_eq!(keys, ["events", "kind", "status.code", "status.extra"]);
    }

    /// What the input's `mapping => raw` made goes back as it came, flags and nanoseconds
    /// included; a raw event whose `[otel]` is broken is mapped as any other.
    #[test]
    fn raw_events_go_back_as_they_came() {
        let golden = logs::tests::golden_request();
        let mut events = Vec::new();
        crate::otlp::raw::logs_to_events(golden.clone(), &mut events);
        let mut broken = events[0].clone();
        let bad = sluice_event::json::parse(br#"{"logRecord":{"traceId":"xyz"}}"#).unwrap();
        broken.set_field("otel", bad);
        let refs: Vec<&Event> = events.iter().collect();
        assert_eq!(logs_request(&refs), golden);
        let back = logs_request(&[&broken]);
        let r = &back.resource_logs[0].scope_logs[0].log_records[0];
        assert!(
            r.attributes
                .iter()
                .any(|a| a.key == "otel.logRecord.traceId"),
            "{r:?}"
        );

        let golden = traces::tests::golden_request();
        let mut events = Vec::new();
        crate::otlp::raw::traces_to_events(golden.clone(), &mut events);
        let refs: Vec<&Event> = events.iter().collect();
        assert_eq!(traces_request(&refs), golden);
    }
}
