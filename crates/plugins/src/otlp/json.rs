//! OTLP/JSON: a request body in OTLP's JSON encoding, read into the same messages as the
//! protobuf one ([`super::proto`]), so that both encodings map to events by one path.
//!
//! OTLP's rules for JSON (its specification, "JSON Protobuf Encoding"), and the leniencies
//! the OpenTelemetry Collector allows, which senders rely on:
//! - keys in lowerCamelCase (`timeUnixNano`); the `.proto` names (`time_unix_nano`) are
//!   accepted too, as the Collector does (looked for only when the first is absent);
//! - `traceId` and `spanId` as hexadecimal (either case), not base64; `bytesValue` as base64;
//! - 64-bit integers as decimal strings or as numbers; enums as integers (their names are
//!   accepted too); doubles as numbers or `"NaN"`, `"Infinity"`, `"-Infinity"`;
//! - unknown keys are ignored; `null` is the field's default.
//!
//! A body that breaks them is an error naming where (`resourceLogs[0].scopeLogs[1]
//! .logRecords[2].traceId: ...`), for the input's 400 answer.

use std::fmt;

use base64::Engine as _;
use sluice_event::{Map, Value};

use super::proto::ValueAtQuantile;
use super::proto::{any_value, AnyValue, ArrayValue, ExportLogsServiceRequest};
use super::proto::{exemplar, metric, number_data_point, Buckets, Exemplar};
use super::proto::{ExponentialHistogram, ExponentialHistogramDataPoint, Gauge, Histogram};
use super::proto::{ExportMetricsServiceRequest, HistogramDataPoint, Metric, NumberDataPoint};
use super::proto::{ExportTraceServiceRequest, ResourceSpans, ScopeSpans, Span, SpanEvent};
use super::proto::{InstrumentationScope, KeyValue, KeyValueList, LogRecord, Resource};
use super::proto::{ResourceLogs, ScopeLogs, SpanLink, SpanStatus};
use super::proto::{ResourceMetrics, ScopeMetrics, Sum, Summary, SummaryDataPoint};

/// Reads an OTLP/JSON logs export request.
pub fn decode_logs(body: &[u8]) -> Result<ExportLogsServiceRequest, String> {
    Ok(ExportLogsServiceRequest {
        resource_logs: top_list(body, "resourceLogs", resource_logs)?,
    })
}

/// The list under `key` of a request body (the one field an export request has).
fn top_list<T>(
    body: &[u8],
    key: &str,
    item: fn(&Value, &Path) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    let v = sluice_event::json::parse(body).map_err(|e| format!("not JSON: {e}"))?;
    let root = Path::Root;
    list(object(&v, &root)?, key, &root, item)
}

fn resource_logs(v: &Value, at: &Path) -> Result<ResourceLogs, String> {
    let m = object(v, at)?;
    Ok(ResourceLogs {
        resource: optional(m, "resource", at, resource)?,
        scope_logs: list(m, "scopeLogs", at, scope_logs)?,
        schema_url: string(m, "schemaUrl", at)?,
    })
}

/// Reads an OTLP/JSON traces export request.
pub fn decode_traces(body: &[u8]) -> Result<ExportTraceServiceRequest, String> {
    Ok(ExportTraceServiceRequest {
        resource_spans: top_list(body, "resourceSpans", resource_spans)?,
    })
}

fn resource_spans(v: &Value, at: &Path) -> Result<ResourceSpans, String> {
    let m = object(v, at)?;
    Ok(ResourceSpans {
        resource: optional(m, "resource", at, resource)?,
        scope_spans: list(m, "scopeSpans", at, scope_spans)?,
        schema_url: string(m, "schemaUrl", at)?,
    })
}

fn scope_spans(v: &Value, at: &Path) -> Result<ScopeSpans, String> {
    let m = object(v, at)?;
    Ok(ScopeSpans {
        scope: optional(m, "scope", at, scope)?,
        spans: list(m, "spans", at, span)?,
        schema_url: string(m, "schemaUrl", at)?,
    })
}

fn span(v: &Value, at: &Path) -> Result<Span, String> {
    const KINDS: [&str; 6] = [
        "UNSPECIFIED",
        "INTERNAL",
        "SERVER",
        "CLIENT",
        "PRODUCER",
        "CONSUMER",
    ];
    let m = object(v, at)?;
    Ok(Span {
        trace_id: hex_id(m, "traceId", 16, at)?,
        span_id: hex_id(m, "spanId", 8, at)?,
        trace_state: string(m, "traceState", at)?,
        parent_span_id: hex_id(m, "parentSpanId", 8, at)?,
        flags: u32_field(m, "flags", at)?,
        name: string(m, "name", at)?,
        kind: enumeration(m, "kind", "SPAN_KIND_", &KINDS, at)?,
        start_time_unix_nano: u64_field(m, "startTimeUnixNano", at)?,
        end_time_unix_nano: u64_field(m, "endTimeUnixNano", at)?,
        attributes: list(m, "attributes", at, key_value)?,
        dropped_attributes_count: u32_field(m, "droppedAttributesCount", at)?,
        events: list(m, "events", at, span_event)?,
        dropped_events_count: u32_field(m, "droppedEventsCount", at)?,
        links: list(m, "links", at, link)?,
        dropped_links_count: u32_field(m, "droppedLinksCount", at)?,
        status: optional(m, "status", at, status)?,
    })
}

fn span_event(v: &Value, at: &Path) -> Result<SpanEvent, String> {
    let m = object(v, at)?;
    Ok(SpanEvent {
        time_unix_nano: u64_field(m, "timeUnixNano", at)?,
        name: string(m, "name", at)?,
        attributes: list(m, "attributes", at, key_value)?,
        dropped_attributes_count: u32_field(m, "droppedAttributesCount", at)?,
    })
}

fn link(v: &Value, at: &Path) -> Result<SpanLink, String> {
    let m = object(v, at)?;
    Ok(SpanLink {
        trace_id: hex_id(m, "traceId", 16, at)?,
        span_id: hex_id(m, "spanId", 8, at)?,
        trace_state: string(m, "traceState", at)?,
        attributes: list(m, "attributes", at, key_value)?,
        dropped_attributes_count: u32_field(m, "droppedAttributesCount", at)?,
        flags: u32_field(m, "flags", at)?,
    })
}

fn status(v: &Value, at: &Path) -> Result<SpanStatus, String> {
    let m = object(v, at)?;
    Ok(SpanStatus {
        message: string(m, "message", at)?,
        code: enumeration(m, "code", "STATUS_CODE_", &["UNSET", "OK", "ERROR"], at)?,
    })
}

/// Reads an OTLP/JSON metrics export request.
pub fn decode_metrics(body: &[u8]) -> Result<ExportMetricsServiceRequest, String> {
    Ok(ExportMetricsServiceRequest {
        resource_metrics: top_list(body, "resourceMetrics", resource_metrics)?,
    })
}

fn resource_metrics(v: &Value, at: &Path) -> Result<ResourceMetrics, String> {
    let m = object(v, at)?;
    Ok(ResourceMetrics {
        resource: optional(m, "resource", at, resource)?,
        scope_metrics: list(m, "scopeMetrics", at, scope_metrics)?,
        schema_url: string(m, "schemaUrl", at)?,
    })
}

fn scope_metrics(v: &Value, at: &Path) -> Result<ScopeMetrics, String> {
    let m = object(v, at)?;
    Ok(ScopeMetrics {
        scope: optional(m, "scope", at, scope)?,
        metrics: list(m, "metrics", at, metric)?,
        schema_url: string(m, "schemaUrl", at)?,
    })
}

fn metric(v: &Value, at: &Path) -> Result<Metric, String> {
    let m = object(v, at)?;
    let temporality = |m: &Map, at: &Path| {
        const NAMES: [&str; 3] = ["UNSPECIFIED", "DELTA", "CUMULATIVE"];
        enumeration(
            m,
            "aggregationTemporality",
            "AGGREGATION_TEMPORALITY_",
            &NAMES,
            at,
        )
    };
    let data = if let Some(g) = field(m, "gauge") {
        let here = at.key("gauge");
        let g = object(g, &here)?;
        Some(metric::Data::Gauge(Gauge {
            data_points: list(g, "dataPoints", &here, number_point)?,
        }))
    } else if let Some(s) = field(m, "sum") {
        let here = at.key("sum");
        let s = object(s, &here)?;
        Some(metric::Data::Sum(Sum {
            data_points: list(s, "dataPoints", &here, number_point)?,
            aggregation_temporality: temporality(s, &here)?,
            is_monotonic: boolean(s, "isMonotonic", &here)?,
        }))
    } else if let Some(h) = field(m, "histogram") {
        let here = at.key("histogram");
        let h = object(h, &here)?;
        Some(metric::Data::Histogram(Histogram {
            data_points: list(h, "dataPoints", &here, histogram_point)?,
            aggregation_temporality: temporality(h, &here)?,
        }))
    } else if let Some(h) = field(m, "exponentialHistogram") {
        let here = at.key("exponentialHistogram");
        let h = object(h, &here)?;
        Some(metric::Data::ExponentialHistogram(ExponentialHistogram {
            data_points: list(h, "dataPoints", &here, exponential_point)?,
            aggregation_temporality: temporality(h, &here)?,
        }))
    } else if let Some(s) = field(m, "summary") {
        let here = at.key("summary");
        let s = object(s, &here)?;
        Some(metric::Data::Summary(Summary {
            data_points: list(s, "dataPoints", &here, summary_point)?,
        }))
    } else {
        None
    };
    Ok(Metric {
        name: string(m, "name", at)?,
        description: string(m, "description", at)?,
        unit: string(m, "unit", at)?,
        data,
        metadata: list(m, "metadata", at, key_value)?,
    })
}

fn number_point(v: &Value, at: &Path) -> Result<NumberDataPoint, String> {
    let m = object(v, at)?;
    let value = match (field(m, "asDouble"), field(m, "asInt")) {
        (Some(d), _) => Some(number_data_point::Value::AsDouble(double(
            d,
            &at.key("asDouble"),
        )?)),
        (None, Some(i)) => Some(number_data_point::Value::AsInt(integer(
            i,
            &at.key("asInt"),
        )?)),
        (None, None) => None,
    };
    Ok(NumberDataPoint {
        attributes: list(m, "attributes", at, key_value)?,
        start_time_unix_nano: u64_field(m, "startTimeUnixNano", at)?,
        time_unix_nano: u64_field(m, "timeUnixNano", at)?,
        value,
        exemplars: list(m, "exemplars", at, exemplar)?,
        flags: u32_field(m, "flags", at)?,
    })
}

fn histogram_point(v: &Value, at: &Path) -> Result<HistogramDataPoint, String> {
    let m = object(v, at)?;
    Ok(HistogramDataPoint {
        attributes: list(m, "attributes", at, key_value)?,
        start_time_unix_nano: u64_field(m, "startTimeUnixNano", at)?,
        time_unix_nano: u64_field(m, "timeUnixNano", at)?,
        count: u64_field(m, "count", at)?,
        sum: optional(m, "sum", at, double)?,
        bucket_counts: list(m, "bucketCounts", at, unsigned)?,
        explicit_bounds: list(m, "explicitBounds", at, double)?,
        exemplars: list(m, "exemplars", at, exemplar)?,
        flags: u32_field(m, "flags", at)?,
        min: optional(m, "min", at, double)?,
        max: optional(m, "max", at, double)?,
    })
}

fn exponential_point(v: &Value, at: &Path) -> Result<ExponentialHistogramDataPoint, String> {
    let m = object(v, at)?;
    let buckets = |v: &Value, at: &Path| -> Result<Buckets, String> {
        let m = object(v, at)?;
        Ok(Buckets {
            offset: optional(m, "offset", at, |v, at| number(v, at, "a 32-bit integer"))?
                .unwrap_or(0),
            bucket_counts: list(m, "bucketCounts", at, unsigned)?,
        })
    };
    Ok(ExponentialHistogramDataPoint {
        attributes: list(m, "attributes", at, key_value)?,
        start_time_unix_nano: u64_field(m, "startTimeUnixNano", at)?,
        time_unix_nano: u64_field(m, "timeUnixNano", at)?,
        count: u64_field(m, "count", at)?,
        sum: optional(m, "sum", at, double)?,
        scale: optional(m, "scale", at, |v, at| number(v, at, "a 32-bit integer"))?.unwrap_or(0),
        zero_count: u64_field(m, "zeroCount", at)?,
        positive: optional(m, "positive", at, buckets)?,
        negative: optional(m, "negative", at, buckets)?,
        flags: u32_field(m, "flags", at)?,
        exemplars: list(m, "exemplars", at, exemplar)?,
        min: optional(m, "min", at, double)?,
        max: optional(m, "max", at, double)?,
        zero_threshold: optional(m, "zeroThreshold", at, double)?.unwrap_or(0.0),
    })
}

fn summary_point(v: &Value, at: &Path) -> Result<SummaryDataPoint, String> {
    let m = object(v, at)?;
    let quantile = |v: &Value, at: &Path| -> Result<ValueAtQuantile, String> {
        let m = object(v, at)?;
        Ok(ValueAtQuantile {
            quantile: optional(m, "quantile", at, double)?.unwrap_or(0.0),
            value: optional(m, "value", at, double)?.unwrap_or(0.0),
        })
    };
    Ok(SummaryDataPoint {
        attributes: list(m, "attributes", at, key_value)?,
        start_time_unix_nano: u64_field(m, "startTimeUnixNano", at)?,
        time_unix_nano: u64_field(m, "timeUnixNano", at)?,
        count: u64_field(m, "count", at)?,
        sum: optional(m, "sum", at, double)?.unwrap_or(0.0),
        quantile_values: list(m, "quantileValues", at, quantile)?,
        flags: u32_field(m, "flags", at)?,
    })
}

fn exemplar(v: &Value, at: &Path) -> Result<Exemplar, String> {
    let m = object(v, at)?;
    let value = match (field(m, "asDouble"), field(m, "asInt")) {
        (Some(d), _) => Some(exemplar::Value::AsDouble(double(d, &at.key("asDouble"))?)),
        (None, Some(i)) => Some(exemplar::Value::AsInt(integer(i, &at.key("asInt"))?)),
        (None, None) => None,
    };
    Ok(Exemplar {
        filtered_attributes: list(m, "filteredAttributes", at, key_value)?,
        time_unix_nano: u64_field(m, "timeUnixNano", at)?,
        value,
        span_id: hex_id(m, "spanId", 8, at)?,
        trace_id: hex_id(m, "traceId", 16, at)?,
    })
}

fn unsigned(v: &Value, at: &Path) -> Result<u64, String> {
    number(
        v,
        at,
        "an unsigned 64-bit integer (a number or a decimal string)",
    )
}

fn boolean(m: &Map, camel: &str, at: &Path) -> Result<bool, String> {
    match field(m, camel) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(at.key(camel).expected("true or false", v)),
    }
}

/// An enum: an integer, or its name (`prefix` then one of `names`, whose index it is).
fn enumeration(
    m: &Map,
    camel: &str,
    prefix: &str,
    names: &[&str],
    at: &Path,
) -> Result<i32, String> {
    let here = at.key(camel);
    match field(m, camel) {
        None => Ok(0),
        Some(Value::String(s)) if s.starts_with(prefix) => names
            .iter()
            .position(|n| *n == &s[prefix.len()..])
            .map(|i| i as i32)
            .ok_or_else(|| format!("{here}: unknown value {s:?}")),
        Some(v) => number(v, &here, "an enum's number or name"),
    }
}

fn resource(v: &Value, at: &Path) -> Result<Resource, String> {
    let m = object(v, at)?;
    Ok(Resource {
        attributes: list(m, "attributes", at, key_value)?,
        dropped_attributes_count: u32_field(m, "droppedAttributesCount", at)?,
    })
}

fn scope_logs(v: &Value, at: &Path) -> Result<ScopeLogs, String> {
    let m = object(v, at)?;
    Ok(ScopeLogs {
        scope: optional(m, "scope", at, scope)?,
        log_records: list(m, "logRecords", at, log_record)?,
        schema_url: string(m, "schemaUrl", at)?,
    })
}

fn scope(v: &Value, at: &Path) -> Result<InstrumentationScope, String> {
    let m = object(v, at)?;
    Ok(InstrumentationScope {
        name: string(m, "name", at)?,
        version: string(m, "version", at)?,
        attributes: list(m, "attributes", at, key_value)?,
        dropped_attributes_count: u32_field(m, "droppedAttributesCount", at)?,
    })
}

fn log_record(v: &Value, at: &Path) -> Result<LogRecord, String> {
    let m = object(v, at)?;
    Ok(LogRecord {
        time_unix_nano: u64_field(m, "timeUnixNano", at)?,
        observed_time_unix_nano: u64_field(m, "observedTimeUnixNano", at)?,
        severity_number: severity(m, at)?,
        severity_text: string(m, "severityText", at)?,
        body: optional(m, "body", at, any_value)?,
        attributes: list(m, "attributes", at, key_value)?,
        dropped_attributes_count: u32_field(m, "droppedAttributesCount", at)?,
        flags: u32_field(m, "flags", at)?,
        trace_id: hex_id(m, "traceId", 16, at)?,
        span_id: hex_id(m, "spanId", 8, at)?,
        event_name: string(m, "eventName", at)?,
    })
}

fn key_value(v: &Value, at: &Path) -> Result<KeyValue, String> {
    let m = object(v, at)?;
    Ok(KeyValue {
        key: string(m, "key", at)?,
        value: optional(m, "value", at, any_value)?,
    })
}

/// An `AnyValue`: an object with (at most) one of its kinds.
fn any_value(v: &Value, at: &Path) -> Result<AnyValue, String> {
    let m = object(v, at)?;
    const KINDS: [&str; 7] = [
        "stringValue",
        "boolValue",
        "intValue",
        "doubleValue",
        "arrayValue",
        "kvlistValue",
        "bytesValue",
    ];
    let Some((kind, v)) = KINDS
        .iter()
        .enumerate()
        .find_map(|(i, camel)| Some((i, field(m, camel)?)))
    else {
        return Ok(AnyValue { value: None });
    };
    let here = at.key(KINDS[kind]);
    let value = match kind {
        0 => any_value::Value::StringValue(text(v, &here)?),
        1 => match v {
            Value::Bool(b) => any_value::Value::BoolValue(*b),
            _ => return Err(here.expected("true or false", v)),
        },
        2 => any_value::Value::IntValue(integer(v, &here)?),
        3 => any_value::Value::DoubleValue(double(v, &here)?),
        4 => {
            let m = object(v, &here)?;
            any_value::Value::ArrayValue(ArrayValue {
                values: list(m, "values", &here, any_value)?,
            })
        }
        5 => {
            let m = object(v, &here)?;
            any_value::Value::KvlistValue(KeyValueList {
                values: list(m, "values", &here, key_value)?,
            })
        }
        _ => any_value::Value::BytesValue(base64(v, &here)?),
    };
    Ok(AnyValue { value: Some(value) })
}

/// Where in the body a value is, for errors; built only when one is made.
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl<'a> Path<'a> {
    fn key(&'a self, key: &'a str) -> Path<'a> {
        Path::Key(self, key)
    }

    fn expected(&self, what: &str, got: &Value) -> String {
        format!("{self}: expected {what}, found {}", got.type_name())
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Path::Root => f.write_str("the request"),
            Path::Key(Path::Root, k) => f.write_str(k),
            Path::Key(p, k) => write!(f, "{p}.{k}"),
            Path::Index(p, i) => write!(f, "{p}[{i}]"),
        }
    }
}

/// The value of a key by either of its names; null counts as absent.
fn field<'v>(m: &'v Map, camel: &str) -> Option<&'v Value> {
    let found = m.get(camel).or_else(|| {
        m.iter()
            .find(|(k, _)| is_snake_case_of(k, camel))
            .map(|(_, v)| v)
    });
    match found {
        None | Some(Value::Null) => None,
        Some(v) => Some(v),
    }
}

/// Whether `key` is `camel` in snake case (`time_unix_nano` for `timeUnixNano`).
fn is_snake_case_of(key: &str, camel: &str) -> bool {
    let mut k = key.bytes();
    for c in camel.bytes() {
        if c.is_ascii_uppercase() && k.next() != Some(b'_') {
            return false;
        }
        if k.next() != Some(c.to_ascii_lowercase()) {
            return false;
        }
    }
    k.next().is_none()
}

fn object<'v>(v: &'v Value, at: &Path) -> Result<&'v Map, String> {
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(at.expected("an object", v)),
    }
}

fn list<T>(
    m: &Map,
    camel: &str,
    at: &Path,
    item: fn(&Value, &Path) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    let here = at.key(camel);
    match field(m, camel) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| item(v, &Path::Index(&here, i)))
            .collect(),
        Some(other) => Err(here.expected("a list", other)),
    }
}

fn optional<T>(
    m: &Map,
    camel: &str,
    at: &Path,
    item: fn(&Value, &Path) -> Result<T, String>,
) -> Result<Option<T>, String> {
    field(m, camel).map(|v| item(v, &at.key(camel))).transpose()
}

fn string(m: &Map, camel: &str, at: &Path) -> Result<String, String> {
    field(m, camel).map_or(Ok(String::new()), |v| text(v, &at.key(camel)))
}

fn text(v: &Value, at: &Path) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.to_string()),
        _ => Err(at.expected("a string", v)),
    }
}

/// An integer written as a number or as a decimal string, in `T`'s range.
fn number<T: TryFrom<i128>>(v: &Value, at: &Path, what: &str) -> Result<T, String> {
    let n: Option<i128> = match v {
        Value::Int(i) => Some(i128::from(*i)),
        Value::BigInt(b) => Some(b.get()),
        Value::String(s) => s.trim().parse::<i128>().ok(),
        _ => None,
    };
    n.and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| at.expected(what, v))
}

fn integer(v: &Value, at: &Path) -> Result<i64, String> {
    number(v, at, "a 64-bit integer (a number or a decimal string)")
}

fn u64_field(m: &Map, camel: &str, at: &Path) -> Result<u64, String> {
    field(m, camel).map_or(Ok(0), |v| {
        number(
            v,
            &at.key(camel),
            "an unsigned 64-bit integer (a number or a decimal string)",
        )
    })
}

fn u32_field(m: &Map, camel: &str, at: &Path) -> Result<u32, String> {
    field(m, camel).map_or(Ok(0), |v| {
        number(v, &at.key(camel), "an unsigned 32-bit integer")
    })
}

/// `severityNumber`: an integer, or the enum's name (`SEVERITY_NUMBER_WARN`).
fn severity(m: &Map, at: &Path) -> Result<i32, String> {
    const LEVELS: [&str; 6] = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"];
    let here = at.key("severityNumber");
    match field(m, "severityNumber") {
        None => Ok(0),
        Some(Value::String(s)) if s.starts_with("SEVERITY_NUMBER_") => {
            let name = &s["SEVERITY_NUMBER_".len()..];
            if name == "UNSPECIFIED" {
                return Ok(0);
            }
            let (level, step) = match name.char_indices().last() {
                Some((i, c @ '2'..='4')) => (&name[..i], c as i32 - '1' as i32),
                _ => (name, 0),
            };
            LEVELS
                .iter()
                .position(|l| *l == level)
                .map(|i| i as i32 * 4 + 1 + step)
                .ok_or_else(|| format!("{here}: unknown severity {s:?}"))
        }
        Some(v) => number(v, &here, "a severity number (0 to 24)"),
    }
}

fn double(v: &Value, at: &Path) -> Result<f64, String> {
    match v {
        Value::Float(f) => Ok(*f),
        Value::Int(i) => Ok(*i as f64),
        Value::String(s) => match s.as_str() {
            "NaN" => Ok(f64::NAN),
            "Infinity" => Ok(f64::INFINITY),
            "-Infinity" => Ok(f64::NEG_INFINITY),
            other => other.parse().map_err(|_| at.expected("a number", v)),
        },
        _ => Err(at.expected("a number", v)),
    }
}

/// Base64, standard or URL-safe, with or without padding (proto3 JSON's `bytes`).
fn base64(v: &Value, at: &Path) -> Result<Vec<u8>, String> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let s = text(v, at)?;
    [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|e| e.decode(&s).ok())
        .ok_or_else(|| format!("{at}: not base64"))
}

/// A trace or span id: `len` bytes as hexadecimal, or empty.
fn hex_id(m: &Map, camel: &str, len: usize, at: &Path) -> Result<Vec<u8>, String> {
    let here = at.key(camel);
    let Some(v) = field(m, camel) else {
        return Ok(Vec::new());
    };
    let s = text(v, &here)?;
    if s.is_empty() {
        return Ok(Vec::new());
    }
    let digit = |c: u8| (c as char).to_digit(16);
    let bytes: Option<Vec<u8>> = (s.len() == len * 2)
        .then(|| {
            s.as_bytes()
                .chunks(2)
                .map(|p| Some((digit(p[0])? * 16 + digit(p[1])?) as u8))
                .collect()
        })
        .flatten();
    bytes.ok_or_else(|| {
        format!(
            "{here}: expected {} hexadecimal digits, found {s:?}",
            len * 2
        )
    })
}

/// Readers of the single OTLP/JSON objects a `mapping => raw` event holds in `[otel]`
/// (a resource, a scope, a log record, a span), for the output.
pub(crate) mod raw {
    use super::*;

    fn at(key: &'static str) -> Path<'static> {
        Path::Key(&Path::Root, key)
    }

    pub fn resource(v: &Value) -> Result<Resource, String> {
        super::resource(v, &at("[otel][resource]"))
    }

    pub fn scope(v: &Value) -> Result<InstrumentationScope, String> {
        super::scope(v, &at("[otel][scope]"))
    }

    pub fn log_record(v: &Value) -> Result<LogRecord, String> {
        super::log_record(v, &at("[otel][logRecord]"))
    }

    pub fn span(v: &Value) -> Result<Span, String> {
        super::span(v, &at("[otel][span]"))
    }
}

/// Writing: a request in OTLP's JSON encoding, for the output's `protocol => "http/json"`.
/// Keys in lowerCamelCase, ids in hex, 64-bit integers as decimal strings, enums as numbers,
/// `bytesValue` in base64, non-finite doubles as `"NaN"`/`"Infinity"`/`"-Infinity"`; fields
/// at their default are left out, as OTLP's encoders do.
pub mod encode {
    use base64::Engine as _;
    use serde_json::{Map as JMap, Value as J};

    use crate::numbers::hex;
    use crate::otlp::proto::SummaryDataPoint;
    use crate::otlp::proto::{any_value, AnyValue, ExportLogsServiceRequest, KeyValue};
    use crate::otlp::proto::{exemplar, metric, number_data_point, Exemplar, Metric};
    use crate::otlp::proto::{ExponentialHistogramDataPoint, HistogramDataPoint};
    use crate::otlp::proto::{ExportTraceServiceRequest, InstrumentationScope, Resource};
    use crate::otlp::proto::{LogRecord, NumberDataPoint, Span, SpanEvent, SpanLink};

    pub fn logs(r: &ExportLogsServiceRequest) -> Vec<u8> {
        let items = r.resource_logs.iter().map(|rl| {
            let mut m = resourced(rl.resource.as_ref(), &rl.schema_url);
            let scopes = rl.scope_logs.iter().map(|sl| {
                let mut m = scoped(sl.scope.as_ref(), &sl.schema_url);
                let records = sl.log_records.iter().map(log_record).collect();
                m.insert("logRecords".into(), J::Array(records));
                J::Object(m)
            });
            m.insert("scopeLogs".into(), J::Array(scopes.collect()));
            J::Object(m)
        });
        top("resourceLogs", items.collect())
    }

    pub fn traces(r: &ExportTraceServiceRequest) -> Vec<u8> {
        let items = r.resource_spans.iter().map(|rs| {
            let mut m = resourced(rs.resource.as_ref(), &rs.schema_url);
            let scopes = rs.scope_spans.iter().map(|ss| {
                let mut m = scoped(ss.scope.as_ref(), &ss.schema_url);
                m.insert(
                    "spans".into(),
                    J::Array(ss.spans.iter().map(span).collect()),
                );
                J::Object(m)
            });
            m.insert("scopeSpans".into(), J::Array(scopes.collect()));
            J::Object(m)
        });
        top("resourceSpans", items.collect())
    }

    fn top(key: &str, items: Vec<J>) -> Vec<u8> {
        let mut m = JMap::new();
        m.insert(key.into(), J::Array(items));
        serde_json::to_vec(&J::Object(m)).expect("JSON values always serialize")
    }

    pub(crate) fn resourced(resource: Option<&Resource>, schema_url: &str) -> JMap<String, J> {
        let mut m = JMap::new();
        if let Some(r) = resource {
            let mut rm = JMap::new();
            attrs(&mut rm, &r.attributes, r.dropped_attributes_count);
            m.insert("resource".into(), J::Object(rm));
        }
        text(&mut m, "schemaUrl", schema_url);
        m
    }

    pub(crate) fn scoped(
        scope: Option<&InstrumentationScope>,
        schema_url: &str,
    ) -> JMap<String, J> {
        let mut m = JMap::new();
        if let Some(s) = scope {
            let mut sm = JMap::new();
            text(&mut sm, "name", &s.name);
            text(&mut sm, "version", &s.version);
            attrs(&mut sm, &s.attributes, s.dropped_attributes_count);
            m.insert("scope".into(), J::Object(sm));
        }
        text(&mut m, "schemaUrl", schema_url);
        m
    }

    pub(crate) fn log_record(r: &LogRecord) -> J {
        let mut m = JMap::new();
        nanos(&mut m, "timeUnixNano", r.time_unix_nano);
        nanos(&mut m, "observedTimeUnixNano", r.observed_time_unix_nano);
        number(&mut m, "severityNumber", r.severity_number.into());
        text(&mut m, "severityText", &r.severity_text);
        if let Some(b) = &r.body {
            m.insert("body".into(), any(b));
        }
        attrs(&mut m, &r.attributes, r.dropped_attributes_count);
        number(&mut m, "flags", r.flags.into());
        id(&mut m, "traceId", &r.trace_id);
        id(&mut m, "spanId", &r.span_id);
        text(&mut m, "eventName", &r.event_name);
        J::Object(m)
    }

    pub(crate) fn span(s: &Span) -> J {
        let mut m = JMap::new();
        id(&mut m, "traceId", &s.trace_id);
        id(&mut m, "spanId", &s.span_id);
        text(&mut m, "traceState", &s.trace_state);
        id(&mut m, "parentSpanId", &s.parent_span_id);
        number(&mut m, "flags", s.flags.into());
        text(&mut m, "name", &s.name);
        number(&mut m, "kind", s.kind.into());
        nanos(&mut m, "startTimeUnixNano", s.start_time_unix_nano);
        nanos(&mut m, "endTimeUnixNano", s.end_time_unix_nano);
        attrs(&mut m, &s.attributes, s.dropped_attributes_count);
        if !s.events.is_empty() {
            m.insert("events".into(), s.events.iter().map(span_event).collect());
        }
        number(&mut m, "droppedEventsCount", s.dropped_events_count.into());
        if !s.links.is_empty() {
            m.insert("links".into(), s.links.iter().map(link).collect());
        }
        number(&mut m, "droppedLinksCount", s.dropped_links_count.into());
        if let Some(st) = &s.status {
            let mut sm = JMap::new();
            text(&mut sm, "message", &st.message);
            number(&mut sm, "code", st.code.into());
            m.insert("status".into(), J::Object(sm));
        }
        J::Object(m)
    }

    /// A metric with its data points.
    pub(crate) fn metric(m: &Metric) -> J {
        let mut out = JMap::new();
        text(&mut out, "name", &m.name);
        text(&mut out, "description", &m.description);
        text(&mut out, "unit", &m.unit);
        if !m.metadata.is_empty() {
            out.insert("metadata".into(), key_values(&m.metadata));
        }
        let (key, mut data) = match &m.data {
            None => return J::Object(out),
            Some(metric::Data::Gauge(g)) => ("gauge", points(&g.data_points, number_point)),
            Some(metric::Data::Sum(s)) => {
                let mut d = points(&s.data_points, number_point);
                number(
                    &mut d,
                    "aggregationTemporality",
                    s.aggregation_temporality.into(),
                );
                if s.is_monotonic {
                    d.insert("isMonotonic".into(), J::Bool(true));
                }
                ("sum", d)
            }
            Some(metric::Data::Histogram(h)) => {
                let mut d = points(&h.data_points, histogram_point);
                number(
                    &mut d,
                    "aggregationTemporality",
                    h.aggregation_temporality.into(),
                );
                ("histogram", d)
            }
            Some(metric::Data::ExponentialHistogram(h)) => {
                let mut d = points(&h.data_points, exponential_point);
                number(
                    &mut d,
                    "aggregationTemporality",
                    h.aggregation_temporality.into(),
                );
                ("exponentialHistogram", d)
            }
            Some(metric::Data::Summary(s)) => ("summary", points(&s.data_points, summary_point)),
        };
        data.retain(|_, v| !v.is_null());
        out.insert(key.into(), J::Object(data));
        J::Object(out)
    }

    fn points<P>(ps: &[P], point: fn(&P) -> J) -> JMap<String, J> {
        let mut m = JMap::new();
        m.insert("dataPoints".into(), ps.iter().map(point).collect());
        m
    }

    /// What every kind of data point has.
    fn point_common(m: &mut JMap<String, J>, attributes: &[KeyValue], start: u64, time: u64) {
        if !attributes.is_empty() {
            m.insert("attributes".into(), key_values(attributes));
        }
        nanos(m, "startTimeUnixNano", start);
        nanos(m, "timeUnixNano", time);
    }

    fn double(m: &mut JMap<String, J>, key: &str, f: Option<f64>) {
        if let Some(f) = f {
            m.insert(key.into(), float(f));
        }
    }

    fn float(f: f64) -> J {
        match serde_json::Number::from_f64(f) {
            Some(n) => J::Number(n),
            None if f.is_nan() => J::String("NaN".into()),
            None if f > 0.0 => J::String("Infinity".into()),
            None => J::String("-Infinity".into()),
        }
    }

    fn unsigned_list(v: &[u64]) -> J {
        v.iter().map(|n| J::String(n.to_string())).collect()
    }

    fn number_point(p: &NumberDataPoint) -> J {
        let mut m = JMap::new();
        point_common(
            &mut m,
            &p.attributes,
            p.start_time_unix_nano,
            p.time_unix_nano,
        );
        match p.value {
            Some(number_data_point::Value::AsDouble(f)) => double(&mut m, "asDouble", Some(f)),
            Some(number_data_point::Value::AsInt(i)) => {
                m.insert("asInt".into(), J::String(i.to_string()));
            }
            None => {}
        }
        exemplars(&mut m, &p.exemplars);
        number(&mut m, "flags", p.flags.into());
        J::Object(m)
    }

    fn histogram_point(p: &HistogramDataPoint) -> J {
        let mut m = JMap::new();
        point_common(
            &mut m,
            &p.attributes,
            p.start_time_unix_nano,
            p.time_unix_nano,
        );
        nanos(&mut m, "count", p.count);
        double(&mut m, "sum", p.sum);
        m.insert("bucketCounts".into(), unsigned_list(&p.bucket_counts));
        let bounds = p.explicit_bounds.iter().map(|b| float(*b)).collect();
        m.insert("explicitBounds".into(), J::Array(bounds));
        exemplars(&mut m, &p.exemplars);
        number(&mut m, "flags", p.flags.into());
        double(&mut m, "min", p.min);
        double(&mut m, "max", p.max);
        J::Object(m)
    }

    fn exponential_point(p: &ExponentialHistogramDataPoint) -> J {
        let mut m = JMap::new();
        point_common(
            &mut m,
            &p.attributes,
            p.start_time_unix_nano,
            p.time_unix_nano,
        );
        nanos(&mut m, "count", p.count);
        double(&mut m, "sum", p.sum);
        number(&mut m, "scale", p.scale.into());
        nanos(&mut m, "zeroCount", p.zero_count);
        for (key, b) in [("positive", &p.positive), ("negative", &p.negative)] {
            if let Some(b) = b {
                let mut bm = JMap::new();
                number(&mut bm, "offset", b.offset.into());
                bm.insert("bucketCounts".into(), unsigned_list(&b.bucket_counts));
                m.insert(key.into(), J::Object(bm));
            }
        }
        number(&mut m, "flags", p.flags.into());
        exemplars(&mut m, &p.exemplars);
        double(&mut m, "min", p.min);
        double(&mut m, "max", p.max);
        if p.zero_threshold != 0.0 {
            double(&mut m, "zeroThreshold", Some(p.zero_threshold));
        }
        J::Object(m)
    }

    fn summary_point(p: &SummaryDataPoint) -> J {
        let mut m = JMap::new();
        point_common(
            &mut m,
            &p.attributes,
            p.start_time_unix_nano,
            p.time_unix_nano,
        );
        nanos(&mut m, "count", p.count);
        double(&mut m, "sum", Some(p.sum));
        let q = p.quantile_values.iter().map(|q| {
            let mut qm = JMap::new();
            qm.insert("quantile".into(), float(q.quantile));
            qm.insert("value".into(), float(q.value));
            J::Object(qm)
        });
        m.insert("quantileValues".into(), q.collect());
        number(&mut m, "flags", p.flags.into());
        J::Object(m)
    }

    fn exemplars(m: &mut JMap<String, J>, xs: &[Exemplar]) {
        if xs.is_empty() {
            return;
        }
        let list = xs.iter().map(|x| {
            let mut xm = JMap::new();
            if !x.filtered_attributes.is_empty() {
                xm.insert(
                    "filteredAttributes".into(),
                    key_values(&x.filtered_attributes),
                );
            }
            nanos(&mut xm, "timeUnixNano", x.time_unix_nano);
            match x.value {
                Some(exemplar::Value::AsDouble(f)) => double(&mut xm, "asDouble", Some(f)),
                Some(exemplar::Value::AsInt(i)) => {
                    xm.insert("asInt".into(), J::String(i.to_string()));
                }
                None => {}
            }
            id(&mut xm, "spanId", &x.span_id);
            id(&mut xm, "traceId", &x.trace_id);
            J::Object(xm)
        });
        m.insert("exemplars".into(), list.collect());
    }

    fn span_event(e: &SpanEvent) -> J {
        let mut m = JMap::new();
        nanos(&mut m, "timeUnixNano", e.time_unix_nano);
        text(&mut m, "name", &e.name);
        attrs(&mut m, &e.attributes, e.dropped_attributes_count);
        J::Object(m)
    }

    fn link(l: &SpanLink) -> J {
        let mut m = JMap::new();
        id(&mut m, "traceId", &l.trace_id);
        id(&mut m, "spanId", &l.span_id);
        text(&mut m, "traceState", &l.trace_state);
        attrs(&mut m, &l.attributes, l.dropped_attributes_count);
        number(&mut m, "flags", l.flags.into());
        J::Object(m)
    }

    fn attrs(m: &mut JMap<String, J>, attributes: &[KeyValue], dropped: u32) {
        if !attributes.is_empty() {
            m.insert("attributes".into(), key_values(attributes));
        }
        number(m, "droppedAttributesCount", dropped.into());
    }

    fn key_values(kvs: &[KeyValue]) -> J {
        kvs.iter()
            .map(|kv| {
                let mut m = JMap::new();
                m.insert("key".into(), J::String(kv.key.clone()));
                if let Some(v) = &kv.value {
                    m.insert("value".into(), any(v));
                }
                J::Object(m)
            })
            .collect()
    }

    fn any(v: &AnyValue) -> J {
        let mut m = JMap::new();
        let (key, value) = match &v.value {
            None => return J::Object(m),
            Some(any_value::Value::StringValue(s)) => ("stringValue", J::String(s.clone())),
            Some(any_value::Value::BoolValue(b)) => ("boolValue", J::Bool(*b)),
            Some(any_value::Value::IntValue(i)) => ("intValue", J::String(i.to_string())),
            Some(any_value::Value::DoubleValue(f)) => ("doubleValue", float(*f)),
            Some(any_value::Value::ArrayValue(a)) => {
                let mut am = JMap::new();
                am.insert("values".into(), a.values.iter().map(any).collect());
                ("arrayValue", J::Object(am))
            }
            Some(any_value::Value::KvlistValue(kv)) => {
                let mut km = JMap::new();
                km.insert("values".into(), key_values(&kv.values));
                ("kvlistValue", J::Object(km))
            }
            Some(any_value::Value::BytesValue(b)) => (
                "bytesValue",
                J::String(base64::engine::general_purpose::STANDARD.encode(b)),
            ),
        };
        m.insert(key.into(), value);
        J::Object(m)
    }

    fn text(m: &mut JMap<String, J>, key: &str, s: &str) {
        if !s.is_empty() {
            m.insert(key.into(), J::String(s.to_owned()));
        }
    }

    fn number(m: &mut JMap<String, J>, key: &str, n: i64) {
        if n != 0 {
            m.insert(key.into(), J::from(n));
        }
    }

    fn nanos(m: &mut JMap<String, J>, key: &str, n: u64) {
        if n != 0 {
            m.insert(key.into(), J::String(n.to_string()));
        }
    }

    fn id(m: &mut JMap<String, J>, key: &str, bytes: &[u8]) {
        if !bytes.is_empty() {
            m.insert(key.into(), J::String(hex(bytes)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(text: &str) -> Result<ExportLogsServiceRequest, String> {
        decode_logs(text.as_bytes())
    }

    /// The JSON of the request the protobuf golden test decodes (written by
    /// opentelemetry-proto's own classes): the same messages, whatever the encoding.
    #[test]
    fn json_and_protobuf_read_the_same() {
        let json = r#"{"resourceLogs":[{
            "resource":{"attributes":[{"key":"service.name","value":{"stringValue":"checkout"}}],"droppedAttributesCount":1},
            "schemaUrl":"s1",
            "scopeLogs":[{
                "scope":{"name":"app.logger","version":"1.2","attributes":[{"key":"sa","value":{"boolValue":true}}],"droppedAttributesCount":4},
                "schemaUrl":"s2",
                "logRecords":[{
                    "timeUnixNano":"1764300000123456789","observedTimeUnixNano":1764300001000000000,
                    "severityNumber":13,"severityText":"WARN","body":{"stringValue":"disk almost full"},
                    "attributes":[
                        {"key":"http.method","value":{"stringValue":"GET"}},
                        {"key":"d","value":{"doubleValue":0.5}},
                        {"key":"b","value":{"bytesValue":"aGk="}},
                        {"key":"kv","value":{"kvlistValue":{"values":[{"key":"i","value":{"intValue":"-7"}}]}}}],
                    "droppedAttributesCount":2,"flags":1,
                    "traceId":"0102030405060708090A0B0C0D0E0F10","spanId":"abababababababab",
                    "eventName":"disk.pressure","someFutureField":{"x":1}}]}]}]}"#;
        let from_json = decode(json).unwrap();
        let protobuf = crate::otlp::logs::tests::golden_request();
        assert_eq!(from_json, protobuf);
    }

    #[test]
    fn proto_names_enum_names_and_special_doubles_are_read() {
        let r = decode(
            r#"{"resource_logs":[{"scope_logs":[{"log_records":[
                {"time_unix_nano":5,"severity_number":"SEVERITY_NUMBER_ERROR3",
                 "body":{"double_value":"-Infinity"},"trace_id":null},
                {"severityNumber":"SEVERITY_NUMBER_TRACE","body":{}},
                {"severityNumber":"SEVERITY_NUMBER_FATAL4"}]}]}]}"#,
        )
        .unwrap();
        let records = &r.resource_logs[0].scope_logs[0].log_records;
        assert_eq!(records[0].time_unix_nano, 5);
        assert_eq!(records[0].severity_number, 19);
        assert_eq!(
            records[0].body,
            Some(AnyValue {
                value: Some(any_value::Value::DoubleValue(f64::NEG_INFINITY))
            })
        );
        assert!(records[0].trace_id.is_empty());
        assert_eq!(records[1].severity_number, 1);
        assert_eq!(records[1].body, Some(AnyValue { value: None }));
        assert_eq!(records[2].severity_number, 24);
        assert_eq!(decode("{}").unwrap(), ExportLogsServiceRequest::default());
    }

    /// The JSON of the traces request the protobuf golden test decodes.
    #[test]
    fn traces_in_json_and_protobuf_read_the_same() {
        let json = r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"shop"}}]},
            "schemaUrl":"s1","scopeSpans":[{"scope":{"name":"shop.http","version":"2"},"schemaUrl":"s2","spans":[{
                "traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0a0a0a0a0a0a0a0a","traceState":"k=v",
                "parentSpanId":"0B0B0B0B0B0B0B0B","flags":257,"name":"GET /cart","kind":"SPAN_KIND_SERVER",
                "startTimeUnixNano":"1764300000000000000","endTimeUnixNano":"1764300000250000000",
                "attributes":[{"key":"http.route","value":{"stringValue":"/cart"}}],"droppedAttributesCount":1,
                "events":[{"timeUnixNano":"1764300000100000000","name":"cache miss",
                    "attributes":[{"key":"key","value":{"stringValue":"c1"}}],"droppedAttributesCount":2}],
                "droppedEventsCount":3,
                "links":[{"traceId":"1112131415161718191a1b1c1d1e1f20","spanId":"0c0c0c0c0c0c0c0c","traceState":"l=1",
                    "attributes":[{"key":"why","value":{"stringValue":"retry"}}],"droppedAttributesCount":4,"flags":1}],
                "droppedLinksCount":5,"status":{"message":"boom","code":2}}]}]}]}"#;
        let from_json = decode_traces(json.as_bytes()).unwrap();
        assert_eq!(from_json, crate::otlp::traces::tests::golden_request());
        let e = decode_traces(
            br#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"kind":"SPAN_KIND_LOUD"}]}]}]}"#,
        );
        assert!(e
            .unwrap_err()
            .contains("resourceSpans[0].scopeSpans[0].spans[0].kind: unknown value"));
    }

    #[test]
    fn errors_say_where() {
        let cases = [
            ("[1]", "the request: expected an object, found array"),
            (r#"{"resourceLogs":{}}"#, "resourceLogs: expected a list"),
            (
                r#"{"resourceLogs":[{"scopeLogs":[{},{"logRecords":[{"traceId":"abc"}]}]}]}"#,
                "resourceLogs[0].scopeLogs[1].logRecords[0].traceId: expected 32 hexadecimal digits",
            ),
            (
                r#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"-1"}]}]}]}"#,
                "resourceLogs[0].scopeLogs[0].logRecords[0].timeUnixNano: expected an unsigned 64-bit integer",
            ),
            (
                r#"{"resourceLogs":[{"resource":{"attributes":[{"key":"k","value":{"intValue":1.5}}]}}]}"#,
                "resourceLogs[0].resource.attributes[0].value.intValue: expected a 64-bit integer",
            ),
            (
                r#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"severityNumber":"SEVERITY_NUMBER_LOUD"}]}]}]}"#,
                "unknown severity",
            ),
            (
                r#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"bytesValue":"%%"}}]}]}]}"#,
                "logRecords[0].body.bytesValue: not base64",
            ),
            ("{", "not JSON"),
        ];
        for (text, expected) in cases {
            let e = decode(text).unwrap_err();
            assert!(e.contains(expected), "{text}: {e}");
        }
    }

    /// What the writer writes, the reader reads back as the same request: every field of
    /// the golden requests, ids, 64-bit integers and every value type included.
    #[test]
    fn written_json_reads_back_the_same() {
        let logs = crate::otlp::logs::tests::golden_request();
        assert_eq!(decode_logs(&encode::logs(&logs)).unwrap(), logs);
        let traces = crate::otlp::traces::tests::golden_request();
        assert_eq!(decode_traces(&encode::traces(&traces)).unwrap(), traces);
        let mut odd = logs.clone();
        let record = &mut odd.resource_logs[0].scope_logs[0].log_records[0];
        record.body = Some(AnyValue {
            value: Some(any_value::Value::DoubleValue(f64::NEG_INFINITY)),
        });
        let text = String::from_utf8(encode::logs(&odd)).unwrap();
        assert!(text.contains(r#""doubleValue":"-Infinity""#), "{text}");
        assert!(
            text.contains(r#""timeUnixNano":"1764300000123456789""#),
            "{text}"
        );
        assert!(text.contains(r#""traceId":"0102030405060708090a0b0c0d0e0f10""#));
        assert_eq!(decode_logs(text.as_bytes()).unwrap(), odd);
    }
}
