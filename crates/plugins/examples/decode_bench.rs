//! Decode cost of the `json` codec: parses the same ~200-byte JSON document into events N times
//! in batches of 250 and prints ns per event, twice: with the batches dropped on the decoding
//! thread, and handed to another thread that drops them (as a pipeline worker does, so the
//! allocator sees cross-thread frees).
//! Usage: cargo run --release -p sluice-plugins --example decode_bench [N]

use std::time::Instant;

use sluice_event::Event;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const DOC: &str = r#"{"@timestamp":"2026-11-22T05:38:04.059Z","@version":"1","event":{"original":"GET /index.html HTTP/1.1 200 5120 x","sequence":0},"host":{"name":"vm"},"message":"GET /index.html HTTP/1.1 200 5120 x"}"#;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000);
    for cross_thread in [false, true] {
        let ns = run(n, cross_thread);
        let place = if cross_thread {
            "dropped by another thread"
        } else {
            "dropped where decoded"
        };
        println!("json decode, {place}: {ns:.0} ns/event ({n} events)");
    }
}

/// Decodes `n` events; returns the wall time per event until the last one is dropped.
fn run(n: usize, cross_thread: bool) -> f64 {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Event>>(8);
    let dropper = std::thread::spawn(move || rx.into_iter().map(|b| b.len()).sum::<usize>());
    let start = Instant::now();
    let mut left = n;
    let mut decoded = 0;
    while left > 0 {
        let k = left.min(250);
        let mut events = Vec::with_capacity(k);
        for _ in 0..k {
            sluice_plugins::codecs::json_events(DOC.as_bytes(), None, &mut events);
        }
        decoded += events.len();
        if cross_thread {
            tx.send(events).unwrap();
        }
        left -= k;
    }
    drop(tx);
    let dropped = dropper.join().unwrap();
    let elapsed = start.elapsed();
    assert_eq!(decoded, n);
    assert_eq!(dropped, if cross_thread { n } else { 0 });
    elapsed.as_nanos() as f64 / n as f64
}
