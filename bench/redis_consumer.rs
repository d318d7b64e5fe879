//! The baseline of `bench/redis.sh`: the least a Redis list consumer must do, with the redis
//! input's own parts and nothing of the pipeline. Each of THREADS threads opens a connection
//! with the same `redis` crate, pops `LPOP KEY BATCH` (sending the next `LPOP` before decoding
//! a full batch, as the input does), parses every value with the input's JSON parser into
//! sluice events and drops them; it stops when the list is empty. Prints events/s.
//!
//! Built as an example of sluice-plugins (its `[[example]]` points here):
//! `cargo run --release -p sluice-plugins --example redis_consumer -- PORT KEY THREADS BATCH`

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use redis::Value;
use sluice_event::Event;

// The allocator sluice's binary uses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn bulks(v: Value) -> Vec<Vec<u8>> {
    match v {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|i| match i {
                Value::BulkString(b) => Some(b),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn consume(port: u16, key: &str, batch: usize) -> u64 {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).expect("client");
    let mut con = client.get_connection().expect("connecting to redis-server");
    let lpop = redis::cmd("LPOP").arg(key).arg(batch).get_packed_command();
    let mut events: Vec<Event> = Vec::with_capacity(batch);
    let mut count = 0;
    con.send_packed_command(&lpop).expect("LPOP");
    loop {
        let items = bulks(con.recv_response().expect("LPOP reply"));
        if items.is_empty() {
            return count;
        }
        let ahead = items.len() == batch;
        if ahead {
            con.send_packed_command(&lpop).expect("LPOP");
        }
        for item in &items {
            // What the json codec does with UTF-8 (its default charset).
            let text = std::str::from_utf8(item).expect("UTF-8 JSON").trim_ascii();
            sluice_plugins::codecs::json_events(text.as_bytes(), None, &mut events);
        }
        count += events.len() as u64;
        events.clear();
        if !ahead {
            con.send_packed_command(&lpop).expect("LPOP");
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [port, key, threads, batch] = &args[..] else {
        eprintln!("usage: redis_consumer PORT KEY THREADS BATCH");
        std::process::exit(2);
    };
    let port: u16 = port.parse().expect("PORT");
    let threads: usize = threads.parse().expect("THREADS");
    let batch: usize = batch.parse().expect("BATCH");
    let total = AtomicU64::new(0);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| total.fetch_add(consume(port, key, batch), Ordering::Relaxed));
        }
    });
    let secs = started.elapsed().as_secs_f64();
    let n = total.load(Ordering::Relaxed);
    println!("{} {n}", (n as f64 / secs).round());
}
