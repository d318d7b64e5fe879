//! OTLP metrics → events, one event per data point. The value sits under the metric's name
//! in `[metrics]`, as Elastic's OTLP intake names a metric's field (`metrics.<name>`, the
//! name kept whole: `[metrics][http.server.duration]`); what the metric is sits in
//! `[metric]`; attributes, resource and scope are kept as for logs.
//!
//! | OTLP | event |
//! |---|---|
//! | the point's `time_unix_nano`, else `start_time_unix_nano`, else the time it arrived | `@timestamp` (milliseconds) |
//! | `start_time_unix_nano` | `start_timestamp` |
//! | the metric's `name`, `description`, `unit`, `metadata` | `[metric][name]`, `[metric][description]`, `[metric][unit]`, `[metric][metadata]` |
//! | its kind | `[metric][type]`: `gauge`, `sum`, `histogram`, `exponential_histogram` or `summary` |
//! | `aggregation_temporality`, `is_monotonic` (sums) | `[metric][temporality]` (`delta`, `cumulative`), `[metric][monotonic]` |
//! | a gauge's or sum's value (`as_int` or `as_double`) | `[metrics][<name>]`: the number |
//! | a histogram's point | `[metrics][<name>]`: `count`, `sum`, `min`, `max`, `bucket_counts`, `explicit_bounds` |
//! | an exponential histogram's point | `[metrics][<name>]`: `count`, `sum`, `min`, `max`, `scale`, `zero_count`, `zero_threshold`, `positive` and `negative` (`offset`, `bucket_counts`) |
//! | a summary's point | `[metrics][<name>]`: `count`, `sum`, `quantile_values` (`quantile`, `value` each) |
//! | the point's `attributes`, `flags` (not 0) | `[attributes]`, `flags` |
//! | `exemplars` | `[exemplars]`: `time`, `value`, `trace_id`, `span_id`, `filtered_attributes` each |
//! | the resource and the scope | `[resource]`, `[scope]`, as for logs |
//!
//! A point without a value (flag 1, "no recorded value") has no `[metrics][<name>]`.

use sluice_event::{Event, Key, Map, Value};

use super::fields::{attributes, resource_value, scope_value, timestamp};
use super::proto::{exemplar, metric, number_data_point, Buckets, Exemplar};
use super::proto::{ExportMetricsServiceRequest, KeyValue, Metric};
use crate::numbers::hex;

/// Decodes an OTLP/protobuf metrics export request.
pub fn decode(body: &[u8]) -> Result<ExportMetricsServiceRequest, prost::DecodeError> {
    prost::Message::decode(body)
}

/// Appends one event per data point of `request` to `out`; returns how many.
pub fn to_events(request: ExportMetricsServiceRequest, out: &mut Vec<Event>) -> usize {
    let start = out.len();
    for rm in request.resource_metrics {
        let resource = resource_value(rm.resource, rm.schema_url);
        for sm in rm.scope_metrics {
            let scope = scope_value(sm.scope, sm.schema_url);
            for m in sm.metrics {
                metric_events(m, resource.as_ref(), scope.as_ref(), out);
            }
        }
    }
    out.len() - start
}

/// What every point of one metric shares.
struct Shared<'a> {
    name: Key,
    /// `[metric]`.
    metric: Value,
    resource: Option<&'a Value>,
    scope: Option<&'a Value>,
}

/// The parts of a data point every kind has.
struct Point {
    attributes: Vec<KeyValue>,
    start: u64,
    time: u64,
    flags: u32,
    exemplars: Vec<Exemplar>,
}

/// A data point's common parts, `p` moved into them with `exemplars`.
macro_rules! point {
    ($p:ident, $exemplars:expr) => {
        Point {
            attributes: $p.attributes,
            start: $p.start_time_unix_nano,
            time: $p.time_unix_nano,
            flags: $p.flags,
            exemplars: $exemplars,
        }
    };
}

fn metric_events(m: Metric, resource: Option<&Value>, scope: Option<&Value>, out: &mut Vec<Event>) {
    let Some(data) = m.data else {
        return;
    };
    let mut info = Map::new();
    let put = |info: &mut Map, k: &str, v: Value| {
        info.insert(Key::from(k), v);
    };
    put(&mut info, "name", Value::String(m.name.as_str().into()));
    if !m.description.is_empty() {
        put(
            &mut info,
            "description",
            Value::String(m.description.into()),
        );
    }
    if !m.unit.is_empty() {
        put(&mut info, "unit", Value::String(m.unit.into()));
    }
    if !m.metadata.is_empty() {
        put(&mut info, "metadata", Value::Object(attributes(m.metadata)));
    }
    let (kind, temporality, monotonic) = match &data {
        metric::Data::Gauge(_) => ("gauge", 0, None),
        metric::Data::Sum(s) => ("sum", s.aggregation_temporality, Some(s.is_monotonic)),
        metric::Data::Histogram(h) => ("histogram", h.aggregation_temporality, None),
        metric::Data::ExponentialHistogram(h) => {
            ("exponential_histogram", h.aggregation_temporality, None)
        }
        metric::Data::Summary(_) => ("summary", 0, None),
    };
    put(&mut info, "type", Value::String(kind.into()));
    match temporality {
        1 => put(&mut info, "temporality", Value::String("delta".into())),
        2 => put(&mut info, "temporality", Value::String("cumulative".into())),
        _ => {}
    }
    if let Some(b) = monotonic {
        put(&mut info, "monotonic", Value::Bool(b));
    }
    let shared = Shared {
        name: Key::from(m.name),
        metric: Value::Object(info),
        resource,
        scope,
    };
    match data {
        metric::Data::Gauge(g) => number_points(g.data_points, &shared, out),
        metric::Data::Sum(s) => number_points(s.data_points, &shared, out),
        metric::Data::Histogram(h) => {
            for p in h.data_points {
                let mut v = Map::new();
                counted(&mut v, p.count, p.sum, p.min, p.max);
                v.insert(Key::from("bucket_counts"), counts(&p.bucket_counts));
                let bounds = p.explicit_bounds.iter().map(|b| Value::Float(*b)).collect();
                v.insert(Key::from("explicit_bounds"), Value::Array(bounds));
                let point = point!(p, p.exemplars);
                out.push(point_event(point, Some(Value::Object(v)), &shared));
            }
        }
        metric::Data::ExponentialHistogram(h) => {
            for p in h.data_points {
                let mut v = Map::new();
                counted(&mut v, p.count, p.sum, p.min, p.max);
                v.insert(Key::from("scale"), Value::Int(i64::from(p.scale)));
                v.insert(Key::from("zero_count"), count(p.zero_count));
                v.insert(Key::from("zero_threshold"), Value::Float(p.zero_threshold));
                for (side, b) in [("positive", p.positive), ("negative", p.negative)] {
                    if let Some(b) = b {
                        v.insert(Key::from(side), buckets(b));
                    }
                }
                let point = point!(p, p.exemplars);
                out.push(point_event(point, Some(Value::Object(v)), &shared));
            }
        }
        metric::Data::Summary(s) => {
            for p in s.data_points {
                let mut v = Map::new();
                counted(&mut v, p.count, Some(p.sum), None, None);
                let quantiles = p
                    .quantile_values
                    .iter()
                    .map(|q| {
                        let mut m = Map::new();
                        m.insert(Key::from("quantile"), Value::Float(q.quantile));
                        m.insert(Key::from("value"), Value::Float(q.value));
                        Value::Object(m)
                    })
                    .collect();
                v.insert(Key::from("quantile_values"), Value::Array(quantiles));
                let point = point!(p, Vec::new());
                out.push(point_event(point, Some(Value::Object(v)), &shared));
            }
        }
    }
}

fn number_points(
    points: Vec<super::proto::NumberDataPoint>,
    shared: &Shared,
    out: &mut Vec<Event>,
) {
    for p in points {
        let value = p.value.map(|v| match v {
            number_data_point::Value::AsInt(i) => Value::Int(i),
            number_data_point::Value::AsDouble(f) => Value::Float(f),
        });
        let point = point!(p, p.exemplars);
        out.push(point_event(point, value, shared));
    }
}

fn point_event(p: Point, value: Option<Value>, shared: &Shared) -> Event {
    let mut e = Event::new();
    let nanos = match p.time {
        0 => p.start,
        t => t,
    };
    if nanos != 0 {
        e.set_timestamp(timestamp(nanos));
    }
    if p.start != 0 {
        e.set_field("start_timestamp", Value::Timestamp(timestamp(p.start)));
    }
    e.set_field("metric", shared.metric.clone());
    if let Some(v) = value {
        let mut m = Map::with_capacity(1);
        m.insert(shared.name.clone(), v);
        e.set_field("metrics", Value::Object(m));
    }
    if !p.attributes.is_empty() {
        e.set_field("attributes", Value::Object(attributes(p.attributes)));
    }
    if p.flags != 0 {
        e.set_field("flags", Value::Int(i64::from(p.flags)));
    }
    if !p.exemplars.is_empty() {
        let list = p.exemplars.into_iter().map(exemplar_value).collect();
        e.set_field("exemplars", Value::Array(list));
    }
    if let Some(r) = shared.resource {
        e.set_field("resource", r.clone());
    }
    if let Some(s) = shared.scope {
        e.set_field("scope", s.clone());
    }
    e
}

fn exemplar_value(x: Exemplar) -> Value {
    let mut m = Map::new();
    if x.time_unix_nano != 0 {
        let t = Value::Timestamp(timestamp(x.time_unix_nano));
        m.insert(Key::from("time"), t);
    }
    match x.value {
        Some(exemplar::Value::AsInt(i)) => m.insert(Key::from("value"), Value::Int(i)),
        Some(exemplar::Value::AsDouble(f)) => m.insert(Key::from("value"), Value::Float(f)),
        None => None,
    };
    if !x.trace_id.is_empty() {
        m.insert(
            Key::from("trace_id"),
            Value::String(hex(&x.trace_id).into()),
        );
    }
    if !x.span_id.is_empty() {
        m.insert(Key::from("span_id"), Value::String(hex(&x.span_id).into()));
    }
    if !x.filtered_attributes.is_empty() {
        let a = Value::Object(attributes(x.filtered_attributes));
        m.insert(Key::from("filtered_attributes"), a);
    }
    Value::Object(m)
}

/// `count`, and `sum`, `min`, `max` where the point has them.
fn counted(v: &mut Map, n: u64, sum: Option<f64>, min: Option<f64>, max: Option<f64>) {
    v.insert(Key::from("count"), count(n));
    for (k, x) in [("sum", sum), ("min", min), ("max", max)] {
        if let Some(x) = x {
            v.insert(Key::from(k), Value::Float(x));
        }
    }
}

fn count(n: u64) -> Value {
    Value::integer(i128::from(n))
}

fn counts(c: &[u64]) -> Value {
    Value::Array(c.iter().map(|n| count(*n)).collect())
}

fn buckets(b: Buckets) -> Value {
    let mut m = Map::new();
    m.insert(Key::from("offset"), Value::Int(i64::from(b.offset)));
    m.insert(Key::from("bucket_counts"), counts(&b.bucket_counts));
    Value::Object(m)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::otlp::proto::{AnyValue, ExponentialHistogramDataPoint, Gauge, Histogram};
    use crate::otlp::proto::{ExponentialHistogram, SummaryDataPoint, ValueAtQuantile};
    use crate::otlp::proto::{HistogramDataPoint, InstrumentationScope, NumberDataPoint};
    use crate::otlp::proto::{Resource, ResourceMetrics, ScopeMetrics, Sum, Summary};
    use sluice_event::FieldRef;

    fn kv(key: &str, v: &str) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue {
                value: Some(crate::otlp::proto::any_value::Value::StringValue(v.into())),
            }),
        }
    }

    fn get<'e>(e: &'e Event, path: &str) -> Option<&'e Value> {
        e.get(&FieldRef::parse(path).unwrap())
    }

    const T: u64 = 1_764_300_000_123_456_789;

    /// A request with a metric of every kind, every field set.
    pub(crate) fn golden_request() -> ExportMetricsServiceRequest {
        let number = |v| NumberDataPoint {
            attributes: vec![kv("host", "a")],
            start_time_unix_nano: T - 10_000_000_000,
            time_unix_nano: T,
            value: Some(v),
            exemplars: vec![],
            flags: 0,
        };
        let metric = |name: &str, data| Metric {
            name: name.into(),
            description: format!("{name} described"),
            unit: "1".into(),
            data: Some(data),
            metadata: vec![],
        };
        ExportMetricsServiceRequest {
            resource_metrics: vec![ResourceMetrics {
                resource: Some(Resource {
                    attributes: vec![kv("service.name", "shop")],
                    dropped_attributes_count: 0,
                }),
                scope_metrics: vec![ScopeMetrics {
                    scope: Some(InstrumentationScope {
                        name: "shop.meter".into(),
                        ..Default::default()
                    }),
                    metrics: vec![
                        metric(
                            "queue.depth",
                            metric::Data::Gauge(Gauge {
                                data_points: vec![number(number_data_point::Value::AsInt(7))],
                            }),
                        ),
                        metric(
                            "orders.total",
                            metric::Data::Sum(Sum {
                                data_points: vec![NumberDataPoint {
                                    exemplars: vec![Exemplar {
                                        filtered_attributes: vec![kv("user", "u1")],
                                        time_unix_nano: T,
                                        value: Some(exemplar::Value::AsDouble(2.5)),
                                        span_id: vec![0xab; 8],
                                        trace_id: vec![0xcd; 16],
                                    }],
                                    flags: 0,
                                    ..number(number_data_point::Value::AsDouble(12.5))
                                }],
                                aggregation_temporality: 2,
                                is_monotonic: true,
                            }),
                        ),
                        metric(
                            "http.server.duration",
                            metric::Data::Histogram(Histogram {
                                data_points: vec![HistogramDataPoint {
                                    attributes: vec![kv("http.route", "/cart")],
                                    start_time_unix_nano: T - 10_000_000_000,
                                    time_unix_nano: T,
                                    count: 6,
                                    sum: Some(42.0),
                                    bucket_counts: vec![1, 2, 3],
                                    explicit_bounds: vec![5.0, 10.0],
                                    exemplars: vec![],
                                    flags: 0,
                                    min: Some(0.5),
                                    max: Some(20.0),
                                }],
                                aggregation_temporality: 1,
                            }),
                        ),
                        metric(
                            "latency.exp",
                            metric::Data::ExponentialHistogram(ExponentialHistogram {
                                data_points: vec![ExponentialHistogramDataPoint {
                                    time_unix_nano: T,
                                    count: 5,
                                    sum: Some(9.0),
                                    scale: -2,
                                    zero_count: 1,
                                    positive: Some(Buckets {
                                        offset: -1,
                                        bucket_counts: vec![2, 2],
                                    }),
                                    zero_threshold: 0.001,
                                    ..Default::default()
                                }],
                                aggregation_temporality: 2,
                            }),
                        ),
                        metric(
                            "rpc.summary",
                            metric::Data::Summary(Summary {
                                data_points: vec![SummaryDataPoint {
                                    time_unix_nano: T,
                                    count: 3,
                                    sum: 6.0,
                                    quantile_values: vec![ValueAtQuantile {
                                        quantile: 0.5,
                                        value: 2.0,
                                    }],
                                    flags: 1,
                                    ..Default::default()
                                }],
                            }),
                        ),
                    ],
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        }
    }

    /// Bytes written by opentelemetry-proto's own generated Python classes for
    /// [`golden_request`]: the field numbers and wire types here are theirs.
    #[test]
    fn decodes_what_the_official_definitions_encode() {
        let bytes = crate::otlp::fields::unhex(GOLDEN_HEX);
        assert_eq!(decode(&bytes).unwrap(), golden_request());
    }

    #[test]
    fn one_event_per_point_with_every_mapped_field() {
        let mut out = Vec::new();
        assert_eq!(to_events(golden_request(), &mut out), 5);
        let gauge = &out[0];
        assert_eq!(gauge.timestamp().unwrap().millis(), 1_764_300_000_123);
        assert_eq!(
            get(gauge, "start_timestamp").and_then(|v| match v {
                Value::Timestamp(t) => Some(t.millis()),
                _ => None,
            }),
            Some(1_764_299_990_123)
        );
        assert_eq!(get(gauge, "[metrics][queue.depth]"), Some(&Value::Int(7)));
        assert_eq!(get(gauge, "[metric][name]"), Some(&"queue.depth".into()));
        assert_eq!(get(gauge, "[metric][type]"), Some(&"gauge".into()));
        assert_eq!(get(gauge, "[metric][unit]"), Some(&"1".into()));
        assert_eq!(
            get(gauge, "[metric][description]"),
            Some(&"queue.depth described".into())
        );
        assert!(get(gauge, "[metric][temporality]").is_none());
        assert_eq!(get(gauge, "[attributes][host]"), Some(&"a".into()));
        assert_eq!(
            get(gauge, "[resource][attributes][service.name]"),
            Some(&"shop".into())
        );
        assert_eq!(get(gauge, "[scope][name]"), Some(&"shop.meter".into()));

        let sum = &out[1];
        assert_eq!(
            get(sum, "[metrics][orders.total]"),
            Some(&Value::Float(12.5))
        );
        assert_eq!(
            get(sum, "[metric][temporality]"),
            Some(&"cumulative".into())
        );
        assert_eq!(get(sum, "[metric][monotonic]"), Some(&Value::Bool(true)));
        assert_eq!(get(sum, "[exemplars][0][value]"), Some(&Value::Float(2.5)));
        assert_eq!(
            get(sum, "[exemplars][0][span_id]"),
            Some(&"abababababababab".into())
        );
        assert_eq!(
            get(sum, "[exemplars][0][filtered_attributes][user]"),
            Some(&"u1".into())
        );

        let h = &out[2];
        let ints = |v: &[i64]| Value::Array(v.iter().map(|i| Value::Int(*i)).collect());
        let hist = "[metrics][http.server.duration]";
        assert_eq!(get(h, &format!("{hist}[count]")), Some(&Value::Int(6)));
        assert_eq!(get(h, &format!("{hist}[sum]")), Some(&Value::Float(42.0)));
        assert_eq!(get(h, &format!("{hist}[min]")), Some(&Value::Float(0.5)));
        assert_eq!(get(h, &format!("{hist}[max]")), Some(&Value::Float(20.0)));
        assert_eq!(
            get(h, &format!("{hist}[bucket_counts]")),
            Some(&ints(&[1, 2, 3]))
        );
        assert_eq!(
            get(h, &format!("{hist}[explicit_bounds]")),
            Some(&Value::Array(vec![Value::Float(5.0), Value::Float(10.0)]))
        );
        assert_eq!(get(h, "[metric][temporality]"), Some(&"delta".into()));
        assert_eq!(get(h, "[attributes][http.route]"), Some(&"/cart".into()));

        let x = &out[3];
        let exp = "[metrics][latency.exp]";
        assert_eq!(
            get(x, "[metric][type]"),
            Some(&"exponential_histogram".into())
        );
        assert_eq!(get(x, &format!("{exp}[scale]")), Some(&Value::Int(-2)));
        assert_eq!(get(x, &format!("{exp}[zero_count]")), Some(&Value::Int(1)));
        assert_eq!(
            get(x, &format!("{exp}[positive][offset]")),
            Some(&Value::Int(-1))
        );
        assert_eq!(
            get(x, &format!("{exp}[positive][bucket_counts]")),
            Some(&ints(&[2, 2]))
        );
        assert!(get(x, &format!("{exp}[negative]")).is_none());
        assert!(get(x, &format!("{exp}[min]")).is_none());
        assert!(get(x, "start_timestamp").is_none());

        let s = &out[4];
        assert_eq!(
            get(s, "[metrics][rpc.summary][count]"),
            Some(&Value::Int(3))
        );
        assert_eq!(
            get(s, "[metrics][rpc.summary][quantile_values][0][value]"),
            Some(&Value::Float(2.0))
        );
        assert_eq!(get(s, "flags"), Some(&Value::Int(1)));
    }

    /// A number point without a value has no `[metrics]` entry; a metric without data makes
    /// no event.
    #[test]
    fn points_without_values_and_metrics_without_data() {
        let mut req = golden_request();
        let metrics = &mut req.resource_metrics[0].scope_metrics[0].metrics;
        if let Some(metric::Data::Gauge(g)) = &mut metrics[0].data {
            g.data_points[0].value = None;
            g.data_points[0].flags = 1;
        }
        metrics[1].data = None;
        let mut out = Vec::new();
        assert_eq!(to_events(req, &mut out), 4);
        assert!(get(&out[0], "metrics").is_none());
        assert_eq!(get(&out[0], "[metric][name]"), Some(&"queue.depth".into()));
        assert_eq!(
            get(&out[1], "[metric][name]"),
            Some(&"http.server.duration".into())
        );
    }

    /// The golden request as protobuf's own JSON printer writes it (enum names, 64-bit
    /// integers as strings; ids turned to OTLP's hex), read by the OTLP/JSON reader.
    #[test]
    fn json_reads_the_same_request() {
        let json = r#"{
 "resourceMetrics": [
  {
   "resource": {
    "attributes": [
     {
      "key": "service.name",
      "value": {
       "stringValue": "shop"
      }
     }
    ]
   },
   "scopeMetrics": [
    {
     "scope": {
      "name": "shop.meter"
     },
     "metrics": [
      {
       "name": "queue.depth",
       "description": "queue.depth described",
       "unit": "1",
       "gauge": {
        "dataPoints": [
         {
          "startTimeUnixNano": "1764299990123456789",
          "timeUnixNano": "1764300000123456789",
          "asInt": "7",
          "attributes": [
           {
            "key": "host",
            "value": {
             "stringValue": "a"
            }
           }
          ]
         }
        ]
       }
      },
      {
       "name": "orders.total",
       "description": "orders.total described",
       "unit": "1",
       "sum": {
        "dataPoints": [
         {
          "startTimeUnixNano": "1764299990123456789",
          "timeUnixNano": "1764300000123456789",
          "asDouble": 12.5,
          "exemplars": [
           {
            "timeUnixNano": "1764300000123456789",
            "asDouble": 2.5,
            "spanId": "abababababababab",
            "traceId": "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
            "filteredAttributes": [
             {
              "key": "user",
              "value": {
               "stringValue": "u1"
              }
             }
            ]
           }
          ],
          "attributes": [
           {
            "key": "host",
            "value": {
             "stringValue": "a"
            }
           }
          ]
         }
        ],
        "aggregationTemporality": "AGGREGATION_TEMPORALITY_CUMULATIVE",
        "isMonotonic": true
       }
      },
      {
       "name": "http.server.duration",
       "description": "http.server.duration described",
       "unit": "1",
       "histogram": {
        "dataPoints": [
         {
          "startTimeUnixNano": "1764299990123456789",
          "timeUnixNano": "1764300000123456789",
          "count": "6",
          "sum": 42.0,
          "bucketCounts": [
           "1",
           "2",
           "3"
          ],
          "explicitBounds": [
           5.0,
           10.0
          ],
          "attributes": [
           {
            "key": "http.route",
            "value": {
             "stringValue": "/cart"
            }
           }
          ],
          "min": 0.5,
          "max": 20.0
         }
        ],
        "aggregationTemporality": "AGGREGATION_TEMPORALITY_DELTA"
       }
      },
      {
       "name": "latency.exp",
       "description": "latency.exp described",
       "unit": "1",
       "exponentialHistogram": {
        "dataPoints": [
         {
          "timeUnixNano": "1764300000123456789",
          "count": "5",
          "sum": 9.0,
          "scale": -2,
          "zeroCount": "1",
          "positive": {
           "offset": -1,
           "bucketCounts": [
            "2",
            "2"
           ]
          },
          "zeroThreshold": 0.001
         }
        ],
        "aggregationTemporality": "AGGREGATION_TEMPORALITY_CUMULATIVE"
       }
      },
      {
       "name": "rpc.summary",
       "description": "rpc.summary described",
       "unit": "1",
       "summary": {
        "dataPoints": [
         {
          "timeUnixNano": "1764300000123456789",
          "count": "3",
          "sum": 6.0,
          "quantileValues": [
           {
            "quantile": 0.5,
            "value": 2.0
           }
          ],
          "flags": 1
         }
        ]
       }
      }
     ]
    }
   ]
  }
 ]
}"#;
        let got = crate::otlp::json::decode_metrics(json.as_bytes()).unwrap();
        assert_eq!(got, golden_request());
    }

    pub(crate) const GOLDEN_HEX: &str = concat!(
        "0a99050a180a160a0c736572766963652e6e616d6512060a0473686f7012fc040a0c0a0a73686f702e6d6574",
        "657212530a0b71756575652e6465707468121571756575652e6465707468206465736372696265641a01312a",
        "2a0a281115a9884c7e0d7c1819158d94a0800d7c183107000000000000003a0b0a04686f737412030a016112",
        "97010a0c6f72646572732e746f74616c12166f72646572732e746f74616c206465736372696265641a01313a",
        "6c0a661115a9884c7e0d7c1819158d94a0800d7c182100000000000029402a3c11158d94a0800d7c18190000",
        "0000000004402208abababababababab2a10cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd3a0c0a04757365721204",
        "0a0275313a0b0a04686f737412030a01611002180112b8010a14687474702e7365727665722e647572617469",
        "6f6e121e687474702e7365727665722e6475726174696f6e206465736372696265641a01314a7d0a791115a9",
        "884c7e0d7c1819158d94a0800d7c182106000000000000002900000000000045403218010000000000000002",
        "0000000000000003000000000000003a10000000000000144000000000000024404a150a0a687474702e726f",
        "75746512070a052f6361727459000000000000e03f610000000000003440100112640a0b6c6174656e63792e",
        "65787012156c6174656e63792e657870206465736372696265641a0131523b0a3719158d94a0800d7c182105",
        "000000000000002900000000000022403003390100000000000000420608011202020271fca9f1d24d62503f",
        "1002125c0a0b7270632e73756d6d61727912157270632e73756d6d617279206465736372696265641a01315a",
        "330a3119158d94a0800d7c18210300000000000000290000000000001840321209000000000000e03f110000",
        "0000000000404001",
    );
}
