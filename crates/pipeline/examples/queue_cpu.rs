//! The CPU a persisted queue spends per event, by part, against a memory queue: what issue 19
//! calls "encode + write + read + decode + ack", measured on one thread that pushes a batch,
//! reads it back, acks it and hands the events back (as a pipeline's input and worker do,
//! without the thread switches), and, apart, the flusher thread's time (its syncs).
//!
//! Three runs of the same batches: a memory queue (the baseline), a persisted queue whose
//! reader takes the events it holds (a reader that keeps up: records written, synced, not read
//! back), and one that holds none (a reader that lags: every record read, checked and
//! decoded). CPU is the thread's user + system time from `/proc` (10 ms ticks; runs of a few
//! seconds).
//!
//! Usage: cargo run --release -p sluice-pipeline --example queue_cpu [EVENTS] [DIR] [ONLY]
//! (ONLY: run the persisted cases whose name contains it, for a profiler.)

use std::time::{Duration, Instant};

use sluice_event::{Event, FieldRef, Str, Value};
use sluice_pipeline::queue::{EventQueue, MemoryEventQueue, PersistedEventQueue};

// The allocator of the sluice binary.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const BATCH: usize = 125;

/// User + system seconds of one thread (`/proc/thread-self` or a task of this process).
fn cpu_seconds(stat: &str) -> f64 {
    let text = std::fs::read_to_string(stat).expect("a /proc stat file");
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = &text[text.rfind(')').expect("a command name") + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    ticks / 100.0 // USER_HZ is 100 on Linux
}

fn flusher_cpu() -> f64 {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|t| t.ok())
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.trim() == "queue-flusher")
        })
        .map(|t| cpu_seconds(&t.path().join("stat").to_string_lossy()))
        .sum()
}

/// A log event of about `size` bytes encoded: what the stdin input makes of a line.
fn event(size: usize, n: u64) -> Event {
    thread_local! {
        static FIELDS: [FieldRef; 2] = [
            FieldRef::parse("[event][original]").unwrap(),
            FieldRef::parse("[host][name]").unwrap(),
        ];
    }
    let line: String = format!("{n} ")
        .chars()
        .chain(
            "GET /index.html 200 host=web-01 user=alice agent=curl "
                .chars()
                .cycle(),
        )
        .take(size.saturating_sub(110) / 2)
        .collect();
    let mut e = Event::with_message(Str::from(line.as_str()));
    FIELDS.with(|[original, host]| {
        e.set(original, Value::String(Str::from(line.as_str())));
        e.set(host, Value::String(Str::from("web-01")));
    });
    e
}

/// Pushes `events` in batches through `q`, reading each batch back; returns this thread's CPU
/// seconds and the wall time.
fn run(q: &dyn EventQueue, events: usize, size: usize) -> (f64, f64) {
    let start_cpu = cpu_seconds("/proc/thread-self/stat");
    let start = Instant::now();
    let mut n = 0u64;
    for _ in 0..events / BATCH {
        let batch: Vec<Event> = (0..BATCH)
            .map(|_| {
                n += 1;
                event(size, n)
            })
            .collect();
        q.push(batch).expect("pushed");
        // A persisted queue's batch ends at a page's end.
        let mut got = 0;
        while got < BATCH {
            let read = q.read_batch(BATCH - got, Duration::ZERO).expect("a batch");
            got += read.events.len();
            q.ack(read.token);
            q.recycle(read.events);
        }
    }
    (
        cpu_seconds("/proc/thread-self/stat") - start_cpu,
        start.elapsed().as_secs_f64(),
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let events: usize = args
        .next()
        .map(|a| a.parse().expect("a number of events"))
        .unwrap_or(1_000_000);
    let dir = std::path::PathBuf::from(args.next().unwrap_or_else(|| "target/queue-cpu".into()));
    let only = args.next();
    for size in [132, 300] {
        let mut probe = Vec::new();
        sluice_event::binary::encode(&event(size, 1), &mut probe);
        let mut line = format!("event {} bytes", probe.len());
        // The default `queue.checkpoint.writes` (a sync per 1,024 events at most), then one out
        // of reach: the queue's own work without waiting for syncs.
        let unsynced = sluice_queue::QueueConfig {
            checkpoint_writes: u64::MAX,
            ..Default::default()
        };
        for (name, held, cfg) in [
            ("held", 2 * BATCH, sluice_queue::QueueConfig::default()),
            ("decoded", 0, sluice_queue::QueueConfig::default()),
            ("held, no sync waits", 2 * BATCH, unsynced.clone()),
            ("decoded, no sync waits", 0, unsynced),
        ] {
            if only.as_deref().is_some_and(|o| !name.contains(o)) {
                continue;
            }
            // Each persisted run right after a memory run of its own, so that both see the
            // same machine; the median of three such pairs.
            let mut rounds = Vec::new();
            for _ in 0..3 {
                let (mem_cpu, _) = run(&MemoryEventQueue::new(2 * BATCH), events, size);
                let _ = std::fs::remove_dir_all(&dir);
                let q = PersistedEventQueue::open(&dir, cfg.clone())
                    .expect("queue opens")
                    .hold_events(held);
                let flusher_before = flusher_cpu();
                let (cpu, _) = run(&q, events, size);
                let flusher = flusher_cpu() - flusher_before;
                q.close();
                q.shutdown();
                rounds.push((
                    (cpu - mem_cpu) / events as f64 * 1e6,
                    flusher / events as f64 * 1e6,
                ));
            }
            let median = |mut v: Vec<f64>| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            line.push_str(&format!(
                "; persisted, {name}: queue work {:.3} us/event (rounds: {}), flusher (syncs) {:.3} us/event",
                median(rounds.iter().map(|r| r.0).collect()),
                rounds
                    .iter()
                    .map(|r| format!("{:.3}", r.0))
                    .collect::<Vec<_>>()
                    .join(" "),
                median(rounds.iter().map(|r| r.1).collect()),
            ));
        }
        println!("{}", line.replace("; ", "\n  "));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
