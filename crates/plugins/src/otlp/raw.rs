//! The input's `mapping => raw`: one event per log record, span or metric data point, as in
//! the default mapping, but holding OTLP's own JSON shape under `[otel]` instead of Elastic's
//! fields, for pipelines that want every field as OTLP names it (or that forward it on):
//!
//! | `[otel]` key | what |
//! |---|---|
//! | `resource`, `resourceSchemaUrl` | the resource (`attributes`, `droppedAttributesCount`), its schema |
//! | `scope`, `scopeSchemaUrl` | the instrumentation scope (`name`, `version`, `attributes`), its schema |
//! | `logRecord` / `span` / `metric` | the record, the span, or the metric with this one point in its `dataPoints` |
//!
//! Written as OTLP/JSON writes them (camelCase keys, hex ids, 64-bit integers as strings,
//! enums as numbers); `@timestamp` is the item's time as in the default mapping. The
//! `opentelemetry` output sends such events back as they came.

use serde_json::{Map as JMap, Value as J};
use sluice_event::{Event, Value};

use super::fields::timestamp;
use super::json::encode;
use super::proto::{metric, ExportLogsServiceRequest, ExportMetricsServiceRequest};
use super::proto::{ExponentialHistogram, Resource, Sum, Summary};
use super::proto::{ExportTraceServiceRequest, Gauge, Histogram, InstrumentationScope, Metric};

/// The resource and scope part of `[otel]`, shared by their items.
fn context(
    resource: Option<&Resource>,
    resource_schema: &str,
    scope: Option<&InstrumentationScope>,
    scope_schema: &str,
) -> JMap<String, J> {
    let mut m = encode::resourced(resource, "");
    if !resource_schema.is_empty() {
        m.insert(
            "resourceSchemaUrl".into(),
            J::String(resource_schema.into()),
        );
    }
    if let Some(J::Object(s)) = encode::scoped(scope, "").remove("scope") {
        m.insert("scope".into(), J::Object(s));
    }
    if !scope_schema.is_empty() {
        m.insert("scopeSchemaUrl".into(), J::String(scope_schema.into()));
    }
    m
}

fn event(context: &JMap<String, J>, key: &str, item: J, nanos: u64) -> Event {
    let mut otel = context.clone();
    otel.insert(key.into(), item);
    let mut e = Event::new();
    if nanos != 0 {
        e.set_timestamp(timestamp(nanos));
    }
    e.set_field("otel", Value::from(J::Object(otel)));
    e
}

fn first_nonzero(a: u64, b: u64) -> u64 {
    if a != 0 {
        a
    } else {
        b
    }
}

pub fn logs_to_events(request: ExportLogsServiceRequest, out: &mut Vec<Event>) -> usize {
    let start = out.len();
    for rl in &request.resource_logs {
        for sl in &rl.scope_logs {
            let ctx = context(
                rl.resource.as_ref(),
                &rl.schema_url,
                sl.scope.as_ref(),
                &sl.schema_url,
            );
            for r in &sl.log_records {
                let t = first_nonzero(r.time_unix_nano, r.observed_time_unix_nano);
                out.push(event(&ctx, "logRecord", encode::log_record(r), t));
            }
        }
    }
    out.len() - start
}

pub fn traces_to_events(request: ExportTraceServiceRequest, out: &mut Vec<Event>) -> usize {
    let start = out.len();
    for rs in &request.resource_spans {
        for ss in &rs.scope_spans {
            let ctx = context(
                rs.resource.as_ref(),
                &rs.schema_url,
                ss.scope.as_ref(),
                &ss.schema_url,
            );
            for s in &ss.spans {
                let t = first_nonzero(s.start_time_unix_nano, s.end_time_unix_nano);
                out.push(event(&ctx, "span", encode::span(s), t));
            }
        }
    }
    out.len() - start
}

pub fn metrics_to_events(request: ExportMetricsServiceRequest, out: &mut Vec<Event>) -> usize {
    let start = out.len();
    for rm in &request.resource_metrics {
        for sm in &rm.scope_metrics {
            let ctx = context(
                rm.resource.as_ref(),
                &rm.schema_url,
                sm.scope.as_ref(),
                &sm.schema_url,
            );
            for m in &sm.metrics {
                for (one, t) in single_points(m) {
                    out.push(event(&ctx, "metric", encode::metric(&one), t));
                }
            }
        }
    }
    out.len() - start
}

/// `m` once per data point, each copy holding that point only, with the point's time.
fn single_points(m: &Metric) -> Vec<(Metric, u64)> {
    /// Each of `points` alone, wrapped back into the metric's data by `wrap`.
    fn each<P: Clone>(
        m: &Metric,
        points: &[P],
        time: fn(&P) -> (u64, u64),
        wrap: impl Fn(Vec<P>) -> metric::Data,
    ) -> Vec<(Metric, u64)> {
        (points.iter())
            .map(|p| {
                let one = Metric {
                    data: Some(wrap(vec![p.clone()])),
                    ..m.clone()
                };
                let (t, start) = time(p);
                (one, first_nonzero(t, start))
            })
            .collect()
    }
    match &m.data {
        None => Vec::new(),
        Some(metric::Data::Gauge(g)) => each(
            m,
            &g.data_points,
            |p| (p.time_unix_nano, p.start_time_unix_nano),
            |data_points| metric::Data::Gauge(Gauge { data_points }),
        ),
        Some(metric::Data::Sum(s)) => each(
            m,
            &s.data_points,
            |p| (p.time_unix_nano, p.start_time_unix_nano),
            |data_points| {
                metric::Data::Sum(Sum {
                    data_points,
                    ..s.clone()
                })
            },
        ),
        Some(metric::Data::Histogram(h)) => each(
            m,
            &h.data_points,
            |p| (p.time_unix_nano, p.start_time_unix_nano),
            |data_points| {
                let aggregation_temporality = h.aggregation_temporality;
                metric::Data::Histogram(Histogram {
                    data_points,
                    aggregation_temporality,
                })
            },
        ),
        Some(metric::Data::ExponentialHistogram(h)) => each(
            m,
            &h.data_points,
            |p| (p.time_unix_nano, p.start_time_unix_nano),
            |data_points| {
                let aggregation_temporality = h.aggregation_temporality;
                metric::Data::ExponentialHistogram(ExponentialHistogram {
                    data_points,
                    aggregation_temporality,
                })
            },
        ),
        Some(metric::Data::Summary(s)) => each(
            m,
            &s.data_points,
            |p| (p.time_unix_nano, p.start_time_unix_nano),
            |data_points| metric::Data::Summary(Summary { data_points }),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::otlp::{json, logs, metrics, traces};
    use sluice_event::FieldRef;

    fn get<'e>(e: &'e Event, path: &str) -> Option<&'e Value> {
        e.get(&FieldRef::parse(path).unwrap())
    }

    #[test]
    fn a_raw_log_event_holds_otlp_json() {
        let mut out = Vec::new();
        assert_eq!(logs_to_events(logs::tests::golden_request(), &mut out), 1);
        let e = &out[0];
        assert_eq!(e.timestamp().unwrap().millis(), 1_764_300_000_123);
        assert_eq!(
            get(e, "[otel][logRecord][body][stringValue]"),
            Some(&"disk almost full".into())
        );
        assert_eq!(
            get(e, "[otel][logRecord][traceId]"),
            Some(&"0102030405060708090a0b0c0d0e0f10".into())
        );
        assert_eq!(
            get(e, "[otel][logRecord][timeUnixNano]"),
            Some(&"1764300000123456789".into())
        );
        assert_eq!(get(e, "[otel][scope][name]"), Some(&"app.logger".into()));
        assert_eq!(get(e, "[otel][resourceSchemaUrl]"), Some(&"s1".into()));
        assert_eq!(get(e, "[otel][scopeSchemaUrl]"), Some(&"s2".into()));
        assert_eq!(
            get(e, "[otel][resource][attributes][0][key]"),
            Some(&"service.name".into())
        );
        // The record reads back as it was.
        let record = json::raw::log_record(get(e, "[otel][logRecord]").unwrap()).unwrap();
        let golden = logs::tests::golden_request();
        assert_eq!(record, golden.resource_logs[0].scope_logs[0].log_records[0]);
    }

    #[test]
    fn raw_spans_and_metric_points() {
        let mut out = Vec::new();
        let golden = traces::tests::golden_request();
        let n = traces_to_events(golden.clone(), &mut out);
        assert_eq!(n, golden.resource_spans[0].scope_spans[0].spans.len());
        let span = json::raw::span(get(&out[0], "[otel][span]").unwrap()).unwrap();
        assert_eq!(span, golden.resource_spans[0].scope_spans[0].spans[0]);

        let mut out = Vec::new();
        assert_eq!(
            metrics_to_events(metrics::tests::golden_request(), &mut out),
            5
        );
        let h = &out[2];
        assert_eq!(
            get(h, "[otel][metric][name]"),
            Some(&"http.server.duration".into())
        );
        assert_eq!(
            get(h, "[otel][metric][histogram][dataPoints][0][count]"),
            Some(&"6".into())
        );
        assert_eq!(
            get(h, "[otel][metric][histogram][aggregationTemporality]"),
            Some(&Value::Int(1))
        );
        // Every point's metric, as JSON, reads back as the golden metric.
        let text = sluice_event::json::to_string(get(h, "[otel][metric]").unwrap());
        let body =
            format!(r#"{{"resourceMetrics":[{{"scopeMetrics":[{{"metrics":[{text}]}}]}}]}}"#);
        let back = json::decode_metrics(body.as_bytes()).unwrap();
        let golden = metrics::tests::golden_request();
        assert_eq!(
            back.resource_metrics[0].scope_metrics[0].metrics[0],
            golden.resource_metrics[0].scope_metrics[0].metrics[2]
        );
    }
}
