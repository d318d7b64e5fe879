//! Encode/decode benchmark of the queue's binary event format (`sluice_event::binary`):
//! nanoseconds per event for the events the generator input and the stdin input (one Apache
//! access-log line, with and without ECS fields) make, as the persisted queue writes and reads
//! them, plus a flat event of five short fields and an empty one. Decoding (with one
//! [`binary::Decoder`] per batch of 125, as the queue's reader does) and dropping are timed
//! apart, and a deep copy (`clone`) shows what the allocations alone cost.
//! Usage: cargo run --release -p sluice-event --example binary_bench [EVENTS]

use std::hint::black_box;
use std::time::Instant;

use sluice_event::{binary, json, Event, Value};

// The allocator of the sluice binary.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn event_from_json(text: &str) -> Event {
    match json::parse(text.as_bytes()).expect("valid JSON") {
        Value::Object(fields) => Event::from_parts(fields, Default::default()),
        _ => panic!("an object"),
    }
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("a number of events"))
        .unwrap_or(2_000_000);
    let line = r#"83.149.9.216 - - [17/May/2015:10:05:03 +0000] \"GET /presentations/logstash-monitorama-2013/images/kibana-search.png HTTP/1.1\" 200 203023 \"http://semicomplete.com/presentations/logstash-monitorama-2013/\" \"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_1) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/32.0.1700.77 Safari/537.36\""#;
    let cases = [
        (
            "generator",
            r#"{"@timestamp":"2026-11-25T05:35:12.376Z","@version":"1","event":{"original":"Hello world!","sequence":0},"host":{"name":"vm"},"message":"Hello world!"}"#.to_owned(),
        ),
        (
            "apache line",
            format!(
                r#"{{"@timestamp":"2026-11-25T05:35:12.401Z","@version":"1","event":{{"original":"{line}"}},"host":{{"hostname":"vm"}},"message":"{line}"}}"#
            ),
        ),
        // What bench/apache.sh's stdin input makes (`pipeline.ecs_compatibility: disabled`).
        (
            "apache, no ECS",
            format!(
                r#"{{"@timestamp":"2026-11-25T05:35:12.401Z","@version":"1","host":"vm","message":"{line}"}}"#
            ),
        ),
        ("flat5", r#"{"a":"1","b":"22","c":"333","d":"4444","e":"55555"}"#.to_owned()),
        ("empty", r#"{}"#.to_owned()),
    ];
    // CASE=name: only that case (for a profiler).
    let only = std::env::var("CASE").ok();
    for (name, text) in cases {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let event = event_from_json(&text);
        let mut buf = Vec::new();
        binary::encode(&event, &mut buf);
        let size = buf.len();
        // Batches of 125, as the pipeline pushes and reads them.
        let mut out = Vec::with_capacity(size * 125);
        let start = Instant::now();
        for _ in 0..n / 125 {
            out.clear();
            for _ in 0..125 {
                binary::encode(black_box(&event), &mut out);
            }
            black_box(&out);
        }
        let enc = start.elapsed().as_nanos() as f64 / n as f64;
        // Decoding and dropping timed apart (a worker drops the events it decoded, as it does
        // those a memory queue hands it: only the decoding is the queue's).
        let (mut dec, mut drop) = (0u128, 0u128);
        let mut events = Vec::with_capacity(125);
        for _ in 0..n / 125 {
            let start = Instant::now();
            // One decoder per batch, as the queue's reader has.
            let mut decoder = binary::Decoder::new();
            for _ in 0..125 {
                decoder
                    .decode_into(black_box(&buf), &mut events)
                    .expect("decodes");
            }
            let decoded = Instant::now();
            events.clear();
            dec += (decoded - start).as_nanos();
            drop += decoded.elapsed().as_nanos();
        }
        let (dec, drop) = (dec as f64 / n as f64, drop as f64 / n as f64);
        // A deep copy: the same allocations as decoding, without the parsing.
        let start = Instant::now();
        for _ in 0..n / 125 {
            for _ in 0..125 {
                events.push(black_box(&event).clone());
            }
            events.clear();
        }
        let clone = start.elapsed().as_nanos() as f64 / n as f64;
        println!("{name:14} {size:4} bytes  encode {enc:6.1} ns  decode {dec:6.1} ns  drop {drop:6.1} ns  (clone+drop {clone:6.1} ns)");
    }
}
