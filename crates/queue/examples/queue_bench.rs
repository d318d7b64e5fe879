//! Persisted-queue benchmark (run by `bench/queue.sh`, which also measures `dd` for the
//! ratio). Scenarios, each on a fresh directory under `--dir`:
//!   write   — W writers push batches of 125 records of S bytes, default settings
//!   durable — queue.checkpoint.writes 1, W writers, batches of 125 × 1 KB
//!   drain   — read batches of 125 + ack, 1 KB records
//!   reopen  — build a backlog of N GB, close, time the reopen and report RSS
//! Usage: queue_bench --dir DIR [--scenario write|durable|drain|reopen] [--writers W]
//!        [--size BYTES] [--mb TOTAL_MB] [--gb BACKLOG_GB] [--checkpoint-writes N]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_queue::{FsStorage, PersistedQueue, QueueConfig, RecordBatch};

struct Args {
    dir: PathBuf,
    scenario: String,
    writers: usize,
    size: usize,
    mb: u64,
    gb: u64,
    checkpoint_writes: u64,
}

fn args() -> Args {
    let mut a = Args {
        dir: std::env::temp_dir().join("sluice-queue-bench"),
        scenario: "write".into(),
        writers: 1,
        size: 1024,
        mb: 1024,
        gb: 5,
        checkpoint_writes: 1024,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--dir" => a.dir = PathBuf::from(v),
            "--scenario" => a.scenario = v,
            "--writers" => a.writers = v.parse().unwrap(),
            "--size" => a.size = v.parse().unwrap(),
            "--mb" => a.mb = v.parse().unwrap(),
            "--gb" => a.gb = v.parse().unwrap(),
            "--checkpoint-writes" => a.checkpoint_writes = v.parse().unwrap(),
            other => panic!("unknown flag {other}"),
        }
    }
    a
}

fn fresh(dir: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    dir.to_path_buf()
}

fn open(dir: &Path, cfg: QueueConfig) -> Arc<PersistedQueue> {
    PersistedQueue::open(Arc::new(FsStorage::new(dir).unwrap()), cfg).unwrap()
}

fn batch(size: usize) -> RecordBatch {
    let payload = vec![b'x'; size];
    let mut b = RecordBatch::with_capacity(125 * (size + 16), 125);
    for _ in 0..125 {
        b.push(&payload);
    }
    b
}

/// W writers push `total` bytes of records of `size` bytes; nothing reads them, so every
/// byte goes to disk. Returns (seconds, records).
fn write(
    dir: &Path,
    writers: usize,
    size: usize,
    total_bytes: u64,
    cfg: QueueConfig,
) -> (f64, u64) {
    let q = open(
        dir,
        QueueConfig {
            max_bytes: u64::MAX,
            ..cfg
        },
    );
    let per_writer = (total_bytes / (size as u64 + 16) / 125 / writers as u64).max(1);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..writers {
            let q = Arc::clone(&q);
            s.spawn(move || {
                let mut b = batch(size);
                for _ in 0..per_writer {
                    q.push(&mut b).unwrap();
                }
            });
        }
    });
    // Make everything durable, as dd's conv=fdatasync does.
    q.close();
    q.shutdown();
    let secs = started.elapsed().as_secs_f64();
    (secs, per_writer * 125 * writers as u64)
}

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("VmRSS:")
                .map(|v| v.trim().trim_end_matches(" kB").trim().parse().unwrap_or(0))
        })
        .unwrap_or(0)
}

fn main() {
    let a = args();
    match a.scenario.as_str() {
        "write" | "durable" => {
            let cfg = QueueConfig {
                checkpoint_writes: a.checkpoint_writes,
                ..QueueConfig::default()
            };
            let (secs, n) = write(&fresh(&a.dir), a.writers, a.size, a.mb << 20, cfg);
            let mb = n as f64 * (a.size as f64) / (1 << 20) as f64;
            println!(
                "scenario={} writers={} size={} checkpoint_writes={} events={} seconds={:.3} events_per_s={:.0} mb_per_s={:.1}",
                a.scenario, a.writers, a.size, a.checkpoint_writes, n, secs, n as f64 / secs, mb / secs
            );
        }
        "drain" => {
            let dir = fresh(&a.dir);
            let q = open(
                &dir,
                QueueConfig {
                    max_bytes: u64::MAX,
                    ..QueueConfig::default()
                },
            );
            let n = (a.mb << 20) / (a.size as u64 + 16) / 125;
            let mut b = batch(a.size);
            for _ in 0..n {
                q.push(&mut b).unwrap();
            }
            q.shutdown();
            drop(q);
            let q = open(
                &dir,
                QueueConfig {
                    max_bytes: u64::MAX,
                    ..QueueConfig::default()
                },
            );
            let started = Instant::now();
            let mut got = 0u64;
            while got < n * 125 {
                let b = q.read_batch(125, Duration::ZERO).unwrap();
                got += b.records.len() as u64;
                q.ack(b.token);
            }
            let secs = started.elapsed().as_secs_f64();
            q.shutdown();
            println!(
                "scenario=drain size={} events={got} seconds={secs:.3} events_per_s={:.0}",
                a.size,
                got as f64 / secs
            );
        }
        "reopen" => {
            let dir = fresh(&a.dir);
            let cfg = QueueConfig {
                max_bytes: u64::MAX,
                ..QueueConfig::default()
            };
            let q = open(&dir, cfg.clone());
            let mut b = batch(a.size);
            let n = (a.gb << 30) / (a.size as u64 + 16) / 125;
            for _ in 0..n {
                q.push(&mut b).unwrap();
            }
            q.shutdown();
            drop(q);
            let before = rss_kb();
            let started = Instant::now();
            let q = open(&dir, cfg);
            let secs = started.elapsed().as_secs_f64();
            let first = q
                .read_batch(125, Duration::ZERO)
                .map_or(0, |b| b.records.len());
            println!(
                "scenario=reopen backlog_gb={} events={} reopen_seconds={secs:.3} rss_mb={:.1} rss_growth_mb={:.1} first_batch={first}",
                a.gb,
                n * 125,
                rss_kb() as f64 / 1024.0,
                (rss_kb().saturating_sub(before)) as f64 / 1024.0
            );
            q.shutdown();
        }
        other => panic!("unknown scenario {other}"),
    }
}
