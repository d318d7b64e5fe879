//! JSON parsing benchmark: nanoseconds per event text for `json::parse` (serde's visitor over
//! sonic-rs, building our values) on the texts the beats benchmark sends and a filebeat
//! event, beside sonic-rs parsing the same text into its own tree: the difference is what
//! building our maps, keys and strings costs.
//! Usage: cargo run --release -p sluice-event --example json_bench [EVENTS]

use std::hint::black_box;
use std::time::Instant;

use sluice_event::json;

// The allocator of the sluice binary.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("a number of events"))
        .unwrap_or(1_000_000);
    let pad = "x".repeat(110);
    let cases = [
        (
            "beats (bench)",
            format!(
                r#"{{"@metadata":{{"beat":"lumbertest","type":"_doc","version":"8.15.0"}},"message":"event 123456{pad}","n":123456}}"#
            ),
        ),
        (
            "filebeat",
            r#"{"@timestamp":"2026-11-25T05:35:12.376Z","@metadata":{"beat":"filebeat","type":"_doc","version":"8.15.0"},"log":{"offset":12345,"file":{"path":"/var/log/apache2/access.log"}},"message":"83.149.9.216 - - [17/May/2015:10:05:03 +0000] \"GET /presentations/logstash-monitorama-2013/images/kibana-search.png HTTP/1.1\" 200 203023","input":{"type":"filestream"},"ecs":{"version":"8.0.0"},"host":{"name":"web-1"},"agent":{"type":"filebeat","version":"8.15.0","name":"web-1","id":"6f2e9c1a-2b1f-4c39-9d1e-3a5b7c9d1e2f","ephemeral_id":"b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d5e"}}"#.to_owned(),
        ),
    ];
    for (name, text) in cases {
        let start = Instant::now();
        for _ in 0..n {
            black_box(json::parse(black_box(text.as_bytes())).expect("valid"));
        }
        let ns = start.elapsed().as_nanos() as f64 / n as f64;
        // sonic-rs's own tree, for comparison: the parse alone, without building our values.
        let start = Instant::now();
        for _ in 0..n {
            black_box(sonic_rs::from_slice::<sonic_rs::Value>(black_box(text.as_bytes())).ok());
        }
        let tree = start.elapsed().as_nanos() as f64 / n as f64;
        println!(
            "{name:14} {:4} bytes  parse+drop {ns:7.1} ns  (sonic-rs's own tree: {tree:7.1} ns)",
            text.len()
        );
    }
}
