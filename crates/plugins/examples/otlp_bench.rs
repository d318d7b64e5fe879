//! The opentelemetry input's own work per log record, without the network: the request
//! bench/otlp.sh sends (512 records of about 200 bytes: a body, severity, two attributes,
//! trace and span ids; a resource with two attributes) decoded from protobuf and turned into
//! events, N records in all. Prints ns per record for prost's decode alone, then for the
//! events made through prost's request (`decode` + `to_events`) and read in place
//! (`decode_events`, the input's path), each dropped where made and handed to another thread
//! that drops them (as a pipeline worker does).
//! Usage: cargo run --release -p sluice-plugins --example otlp_bench [N]

use std::time::Instant;

use prost::Message as _;
use sluice_event::Event;
use sluice_plugins::otlp::proto::ScopeLogs;
use sluice_plugins::otlp::proto::{any_value, AnyValue, ExportLogsServiceRequest, KeyValue};
use sluice_plugins::otlp::proto::{InstrumentationScope, LogRecord, Resource, ResourceLogs};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const BATCH: usize = 512;

fn kv(k: &str, v: &str) -> KeyValue {
    KeyValue {
        key: k.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v.into())),
        }),
    }
}

/// The load script's request, encoded.
fn body() -> Vec<u8> {
    let now = 1_764_300_000_000_000_000u64;
    let records = (0..BATCH)
        .map(|i| LogRecord {
            time_unix_nano: now + i as u64,
            severity_number: 9,
            severity_text: "INFO".into(),
            body: Some(AnyValue {
                value: Some(any_value::Value::StringValue(format!(
                    "GET /api/orders/{i} 200 {} ms",
                    i % 997
                ))),
            }),
            attributes: vec![
                kv("http.method", "GET"),
                kv("http.route", "/api/orders/{id}"),
            ],
            trace_id: (0..16).collect(),
            span_id: (0..8).collect(),
            ..Default::default()
        })
        .collect();
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(Resource {
                attributes: vec![kv("service.name", "orders"), kv("host.name", "web-1")],
                dropped_attributes_count: 0,
            }),
            scope_logs: vec![ScopeLogs {
                scope: Some(InstrumentationScope {
                    name: "orders.http".into(),
                    ..Default::default()
                }),
                log_records: records,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
    .encode_to_vec()
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000);
    let body = body();
    let rounds = n / BATCH;
    // Decode alone.
    let start = Instant::now();
    for _ in 0..rounds {
        let r = sluice_plugins::otlp::logs::decode(&body).unwrap();
        std::hint::black_box(&r);
    }
    let decode = start.elapsed().as_nanos() as f64 / (rounds * BATCH) as f64;
    println!("decode: {decode:.0} ns/record");
    for (in_place, cross_thread) in [(false, false), (false, true), (true, false), (true, true)] {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Event>>(8);
        let dropper = std::thread::spawn(move || rx.into_iter().map(|b| b.len()).sum::<usize>());
        let start = Instant::now();
        for _ in 0..rounds {
            let mut events = Vec::new();
            if in_place {
                sluice_plugins::otlp::logs::decode_events(&body, &mut events).unwrap();
            } else {
                let r = sluice_plugins::otlp::logs::decode(&body).unwrap();
                sluice_plugins::otlp::logs::to_events(r, &mut events);
            }
            if cross_thread {
                tx.send(events).unwrap();
            }
        }
        drop(tx);
        dropper.join().unwrap();
        let ns = start.elapsed().as_nanos() as f64 / (rounds * BATCH) as f64;
        let place = if cross_thread {
            "dropped by another thread"
        } else {
            "dropped where made"
        };
        let how = if in_place {
            "read in place (decode_events)"
        } else {
            "decode + to_events"
        };
        println!("{how}, {place}: {ns:.0} ns/record");
    }
}
