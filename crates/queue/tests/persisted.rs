//! Behaviour of the persisted queue on simulated storage: ordering, acks, replay after a
//! stop or a kill, page rollover and deletion, back-pressure, torn tails, full disks.

use std::sync::Arc;
use std::time::Duration;

use sluice_queue::sim::{SimStorage, Survival};
use sluice_queue::{PersistedQueue, QueueConfig, RecordBatch};

fn cfg() -> QueueConfig {
    QueueConfig {
        page_capacity: 1024,
        max_bytes: 1 << 20,
        ..QueueConfig::default()
    }
}

fn open(s: &SimStorage, c: QueueConfig) -> Arc<PersistedQueue> {
    PersistedQueue::open(Arc::new(s.clone()), c).unwrap()
}

fn push(q: &PersistedQueue, items: std::ops::Range<u32>) {
    let mut b = RecordBatch::new();
    for i in items {
        b.push(format!("event-{i:05}").as_bytes());
    }
    q.push(&mut b).unwrap();
}

/// Reads everything available now (without waiting), acking when asked.
fn drain(q: &PersistedQueue, ack: bool) -> Vec<String> {
    let mut out = Vec::new();
    while q.stats().unread_events > 0 {
        let b = q.read_batch(7, Duration::ZERO).unwrap();
        for r in &b.records {
            out.push(String::from_utf8(b.data[r.clone()].to_vec()).unwrap());
        }
        if ack {
            q.ack(b.token);
        }
    }
    out
}

fn page_count(s: &SimStorage) -> usize {
    sluice_queue::page::list_pages(s).unwrap().len()
}

fn names(r: std::ops::Range<u32>) -> Vec<String> {
    r.map(|i| format!("event-{i:05}")).collect()
}

#[test]
fn fifo_across_pages_and_acked_pages_are_deleted() {
    let s = SimStorage::new();
    let q = open(&s, cfg());
    push(&q, 0..100);
    push(&q, 100..250);
    assert!(page_count(&s) > 3, "small pages should roll over");
    assert_eq!(drain(&q, true), names(0..250));
    q.shutdown();
    // Only the head page is left once everything is acked.
    assert_eq!(page_count(&s), 1);
    let q = open(&s, cfg());
    assert_eq!(q.stats().unacked_events, 0);
    assert!(drain(&q, true).is_empty());
}

#[test]
fn graceful_restart_replays_only_unacked() {
    let s = SimStorage::new();
    let q = open(&s, cfg());
    push(&q, 0..60);
    let b = q.read_batch(25, Duration::ZERO).unwrap();
    assert_eq!(b.records.len(), 25);
    q.ack(b.token);
    // Read but not acked: must come back.
    let unacked = q.read_batch(5, Duration::ZERO).unwrap();
    assert_eq!(unacked.records.len(), 5);
    q.shutdown();
    let q = open(&s, cfg());
    assert_eq!(drain(&q, true), names(25..60));
}

#[test]
fn killed_process_loses_nothing_pushed() {
    let s = SimStorage::new();
    let q = open(
        &s,
        QueueConfig {
            checkpoint_writes: 1_000_000,
            checkpoint_acks: 1_000_000,
            ..cfg()
        },
    );
    push(&q, 0..40);
    let b = q.read_batch(10, Duration::ZERO).unwrap();
    q.ack(b.token);
    push(&q, 40..90);
    // No shutdown: the process dies with everything in the page cache.
    let after = s.after_kill();
    std::mem::forget(q);
    let q = open(&after, cfg());
    let got = drain(&q, true);
    // At-least-once: acked events may come back, pushed ones never go missing.
    for n in names(10..90) {
        assert!(got.contains(&n), "{n} lost");
    }
    let mut sorted = got.clone();
    sorted.dedup();
    assert_eq!(sorted.len(), got.len(), "duplicates within one replay");
}

#[test]
fn power_loss_keeps_everything_synced_with_checkpoint_writes_1() {
    for keep in [0.0, 0.3, 0.7, 1.0] {
        for torn in [0, 3, 17, 40] {
            let s = SimStorage::new();
            let q = open(
                &s,
                QueueConfig {
                    checkpoint_writes: 1,
                    ..cfg()
                },
            );
            for k in 0..20 {
                push(&q, k * 7..(k + 1) * 7);
            }
            let after = s.power_loss(Survival {
                keep_fraction: keep,
                torn_bytes: torn,
            });
            std::mem::forget(q);
            let q = open(&after, cfg());
            let got = drain(&q, true);
            assert_eq!(got, names(0..140), "keep {keep} torn {torn}");
        }
    }
}

#[test]
fn torn_tail_is_cut_and_writing_resumes() {
    let s = SimStorage::new();
    let q = open(
        &s,
        QueueConfig {
            checkpoint_writes: 1_000_000,
            ..cfg()
        },
    );
    push(&q, 0..5);
    q.shutdown();
    let s2 = s.power_loss(Survival {
        keep_fraction: 1.0,
        torn_bytes: 0,
    });
    let q = open(
        &s2,
        QueueConfig {
            checkpoint_writes: 1,
            ..cfg()
        },
    );
    push(&q, 5..8);
    let after = s2.power_loss(Survival {
        keep_fraction: 0.0,
        torn_bytes: 10,
    });
    std::mem::forget(q);
    let q = open(&after, cfg());
    push(&q, 8..10);
    assert_eq!(drain(&q, true), names(0..10));
}

#[test]
fn max_events_blocks_writers_until_acks() {
    let s = SimStorage::new();
    let q = open(
        &s,
        QueueConfig {
            max_events: 10,
            ..cfg()
        },
    );
    push(&q, 0..10);
    let q2 = Arc::clone(&q);
    let writer = std::thread::spawn(move || push(&q2, 10..15));
    std::thread::sleep(Duration::from_millis(50));
    assert!(!writer.is_finished(), "writer should block on a full queue");
    assert_eq!(q.stats().unacked_events, 10);
    let b = q.read_batch(6, Duration::ZERO).unwrap();
    q.ack(b.token);
    writer.join().unwrap();
    assert_eq!(q.stats().unacked_events, 9);
}

#[test]
fn batch_larger_than_max_events_is_taken_by_an_empty_queue() {
    let s = SimStorage::new();
    let q = open(
        &s,
        QueueConfig {
            max_events: 3,
            ..cfg()
        },
    );
    push(&q, 0..5);
    assert_eq!(q.stats().unacked_events, 5);
}

#[test]
fn event_larger_than_a_page_is_stored_on_a_page_of_its_own() {
    // Issue 46: an event larger than a page was acknowledged, then dropped. Now it is stored:
    // between smaller records, in a page of its own (larger than the capacity), read back in
    // order, replayed after a restart, and freed once acked.
    let s = SimStorage::new();
    let q = open(&s, cfg());
    let big = |i: u8| vec![b'a' + i; 3000 + i as usize];
    let mut b = RecordBatch::new();
    b.push(b"small-0");
    b.push(&big(0));
    b.push(b"small-1");
    b.push(&big(1));
    b.push(&big(2));
    q.push(&mut b).unwrap();
    push(&q, 0..3);
    let want: Vec<Vec<u8>> = [
        b"small-0".to_vec(),
        big(0),
        b"small-1".to_vec(),
        big(1),
        big(2),
    ]
    .into_iter()
    .chain(names(0..3).into_iter().map(String::into_bytes))
    .collect();
    let read_all = |q: &PersistedQueue, ack: bool| {
        let mut got: Vec<Vec<u8>> = Vec::new();
        while q.stats().unread_events > 0 {
            let b = q.read_batch(2, Duration::ZERO).unwrap();
            got.extend(b.records.iter().map(|r| b.data[r.clone()].to_vec()));
            if ack {
                q.ack(b.token);
            }
        }
        got
    };
    assert_eq!(read_all(&q, false), want);
    q.shutdown();
    let q = open(&s, cfg());
    assert_eq!(q.stats().lost_events, 0);
    assert_eq!(read_all(&q, true), want);
    q.shutdown();
    let left: u64 = q.stats().pages.iter().map(|p| p.unacked()).sum();
    assert_eq!(left, 0);
    assert!(page_count(&s) <= 2, "acked pages were freed");
}

#[test]
fn full_disk_blocks_the_writer_which_resumes_when_space_returns() {
    let s = SimStorage::new();
    let q = open(&s, cfg());
    push(&q, 0..3);
    s.set_space_left(Some(0));
    let q2 = Arc::clone(&q);
    let writer = std::thread::spawn(move || push(&q2, 3..6));
    std::thread::sleep(Duration::from_millis(100));
    assert!(!writer.is_finished());
    // Readers are not blocked by the stuck writer.
    let b = q.read_batch(3, Duration::ZERO).unwrap();
    assert_eq!(b.records.len(), 3);
    q.ack(b.token);
    s.set_space_left(None);
    writer.join().unwrap();
    assert_eq!(drain(&q, true), names(3..6));
}

#[test]
fn close_without_drain_stops_readers_and_keeps_events() {
    let s = SimStorage::new();
    let q = open(&s, cfg());
    push(&q, 0..20);
    q.close();
    assert!(q.read_batch(5, Duration::ZERO).is_none());
    q.shutdown();
    let q = open(
        &s,
        QueueConfig {
            drain: true,
            ..cfg()
        },
    );
    q.close();
    let mut got = Vec::new();
    while let Some(b) = q.read_batch(8, Duration::ZERO) {
        for r in &b.records {
            got.push(String::from_utf8(b.data[r.clone()].to_vec()).unwrap());
        }
        q.ack(b.token);
    }
    assert_eq!(got, names(0..20));
}

#[test]
fn corrupt_record_costs_that_record_only_and_never_stalls_the_reader_vector_18336() {
    let s = SimStorage::new();
    let q = open(&s, cfg());
    push(&q, 0..200);
    q.shutdown();
    // Flip a byte in the middle of the first page's records: record 7's payload (records are
    // 16 + 11 bytes after the 32-byte header).
    s.corrupt("page.1", 32 + 7 * 27 + 20, &[0xFF]);
    let q = open(&s, cfg());
    let got = drain(&q, true);
    let mut want = names(0..200);
    want.remove(7);
    assert_eq!(got, want);
    assert_eq!(q.stats().lost_events, 1);
}

#[test]
fn concurrent_writers_share_syncs_and_lose_nothing() {
    for checkpoint_writes in [1, 7, 1024] {
        let s = SimStorage::new();
        let q = open(
            &s,
            QueueConfig {
                checkpoint_writes,
                page_capacity: 4096,
                ..cfg()
            },
        );
        std::thread::scope(|scope| {
            for w in 0..4u32 {
                let q = &q;
                scope.spawn(move || {
                    for k in 0..50 {
                        let base = w * 10_000 + k * 10;
                        push(q, base..base + 10);
                    }
                });
            }
        });
        let mut got = drain(&q, true);
        got.sort();
        let mut want: Vec<String> = (0..4u32)
            .flat_map(|w| names(w * 10_000..w * 10_000 + 500))
            .collect();
        want.sort();
        assert_eq!(got, want, "checkpoint_writes {checkpoint_writes}");
    }
}

/// What the queue was built for: with `checkpoint.writes: 1` every push returns only once
/// durable, and concurrent writers share the fsyncs (a disk's fsync takes milliseconds; a
/// writer that synced for itself alone would serialise everyone behind it, Logstash #13223).
#[test]
fn group_commit_shares_syncs_among_concurrent_writers() {
    let s = SimStorage::new();
    s.set_sync_latency(Duration::from_millis(2));
    let q = open(
        &s,
        QueueConfig {
            checkpoint_writes: 1,
            page_capacity: 1 << 20,
            ..cfg()
        },
    );
    let before = s.file_syncs();
    let (writers, pushes) = (8u32, 25u32);
    std::thread::scope(|scope| {
        for w in 0..writers {
            let q = &q;
            scope.spawn(move || {
                for k in 0..pushes {
                    let base = w * 10_000 + k * 4;
                    push(q, base..base + 4);
                }
            });
        }
    });
    let syncs = s.file_syncs() - before;
    let total = (writers * pushes) as u64;
    assert!(
        syncs * 2 < total,
        "{syncs} syncs for {total} pushes: writers did not share them"
    );
    assert_eq!(drain(&q, true).len() as u64, total * 4);
}

/// A writer far ahead of its readers (twice `checkpoint.writes` unread or more) asks for no
/// early sync halfway to the limit: waiting for the sync at the limit costs the readers
/// nothing, and each sync then covers the whole limit, so there are about half as many.
#[test]
fn a_writer_far_ahead_of_its_readers_syncs_once_per_checkpoint_writes() {
    let s = SimStorage::new();
    s.set_sync_latency(Duration::from_millis(1));
    let q = open(
        &s,
        QueueConfig {
            checkpoint_writes: 100,
            page_capacity: 1 << 20,
            ..cfg()
        },
    );
    // Readers are behind from the 20th push on.
    push(&q, 0..200);
    let before = s.file_syncs();
    for k in 0..400u32 {
        push(&q, 200 + k * 10..210 + k * 10);
    }
    let syncs = s.file_syncs() - before;
    // 4,000 records: 40 syncs at one per 100 (80 with a sync asked for at 50 each time).
    assert!(
        (35..=50).contains(&syncs),
        "{syncs} syncs for 4,000 records with checkpoint.writes 100"
    );
    assert_eq!(drain(&q, true).len(), 4200);
}

/// Logstash #12040: a page whose header never reached the disk ("expected version 2, found
/// 0"). Pages are synced with their header before use, so what a crash can leave is a newest
/// page file with no header and no record: it is removed, and nothing is lost.
#[test]
fn a_page_whose_creation_never_completed_is_removed_logstash_12040() {
    let header = sluice_queue::format::PageHeader {
        num: 9,
        first_seq: 40,
    }
    .encode();
    for leftover in [&[][..], &header[..10], &[0u8; 32][..]] {
        let s = SimStorage::new();
        let q = open(&s, cfg());
        push(&q, 0..40);
        q.shutdown();
        drop(q);
        let last = sluice_queue::page::list_pages(&s).unwrap().pop().unwrap();
        s.put(&format!("page.{}", last + 1), leftover);
        let q = open(&s, cfg());
        assert!(!s.names().contains(&format!("page.{}", last + 1)));
        push(&q, 40..45);
        assert_eq!(drain(&q, true), names(0..45));
        assert_eq!(q.stats().lost_events, 0);
    }
}

/// Logstash #8098, #16389: on a full disk, acked pages were never freed (freeing them waited
/// for a checkpoint written to new blocks) and the queue could not even be opened. The
/// checkpoint is rewritten in place, and opening creates nothing.
#[test]
fn full_disk_frees_acked_pages_without_new_space_logstash_8098() {
    let s = SimStorage::new();
    let q = open(&s, cfg());
    push(&q, 0..100);
    let pages = page_count(&s);
    s.set_space_left(Some(0));
    let q2 = Arc::clone(&q);
    let writer = std::thread::spawn(move || push(&q2, 100..110));
    std::thread::sleep(Duration::from_millis(50));
    assert!(!writer.is_finished(), "the writer waits for space");
    let mut got = drain(&q, true);
    writer.join().unwrap();
    got.extend(drain(&q, true));
    assert_eq!(got, names(0..110));
    // (The flusher deletes acked pages in the background; shutdown waits for it.)
    q.shutdown();
    assert!(page_count(&s) < pages, "acked pages were freed");
}

#[test]
fn disk_smaller_than_a_page_goes_on_once_the_head_page_is_acked() {
    // Pages of 64 KB on a disk with room for about 3 KB: every record fits in the head page,
    // which fills the disk long before it is full. Once its records are acked the writer goes
    // on in a new page (the old one freed), instead of waiting for space that only the acked
    // head page holds (issue 46: "writing queue page 1 still failing").
    let s = SimStorage::new();
    let c = QueueConfig {
        page_capacity: 64 << 10,
        ..cfg()
    };
    let q = open(&s, c.clone());
    s.set_space_left(Some(3 << 10));
    let mut got = Vec::new();
    for round in 0..40u32 {
        let from = round * 20;
        let q2 = Arc::clone(&q);
        let writer = std::thread::spawn(move || push(&q2, from..from + 20));
        // The writer may wait for space; the reader acks what there is, which lets it go on.
        while !writer.is_finished() {
            got.extend(drain(&q, true));
            std::thread::sleep(Duration::from_millis(1));
        }
        writer.join().unwrap();
        got.extend(drain(&q, true));
    }
    assert_eq!(got, names(0..800));
    // A restart on the same small disk goes on too.
    q.shutdown();
    let q = open(&s, c);
    let q2 = Arc::clone(&q);
    let writer = std::thread::spawn(move || {
        for round in 0..10u32 {
            push(&q2, 800 + round * 20..820 + round * 20);
        }
    });
    let mut got = Vec::new();
    while !writer.is_finished() {
        got.extend(drain(&q, true));
        std::thread::sleep(Duration::from_millis(1));
    }
    writer.join().unwrap();
    got.extend(drain(&q, true));
    assert_eq!(got, names(800..1000));
}

#[test]
fn full_disk_queue_opens_and_drains_logstash_16389() {
    for kill in [false, true] {
        let s = SimStorage::new();
        let q = open(&s, cfg());
        push(&q, 0..100);
        let s = if kill {
            let after = s.after_kill();
            std::mem::forget(q);
            after
        } else {
            q.shutdown();
            s
        };
        s.set_space_left(Some(0));
        let q = open(&s, cfg());
        assert_eq!(drain(&q, true), names(0..100), "kill {kill}");
        // Deleting the acked pages gave space back: writing goes on.
        push(&q, 100..103);
        assert_eq!(drain(&q, true), names(100..103));
        q.shutdown();
    }
}

/// After the checkpoint's head page went missing, the queue goes on in the last page left,
/// which the previous checkpoint called a tail page (trusted, never scanned). The checkpoint is
/// rewritten at open so that records pushed now are found after a crash.
#[test]
fn records_pushed_after_a_missing_head_page_survive_a_crash() {
    let s = SimStorage::new();
    let q = open(&s, cfg());
    push(&q, 0..100);
    q.shutdown();
    drop(q);
    let last = sluice_queue::page::list_pages(&s).unwrap().pop().unwrap();
    s.delete(&format!("page.{last}"));
    let q = open(&s, cfg());
    let lost = q.stats().lost_events;
    assert!(lost > 0);
    push(&q, 100..105);
    // Killed before the flusher wrote a checkpoint.
    let after = s.after_kill();
    std::mem::forget(q);
    let q = open(&after, cfg());
    let got = drain(&q, true);
    for n in names(100..105) {
        assert!(got.contains(&n), "{n} lost: {got:?}");
    }
    assert_eq!(got.len() as u64 + lost, 105);
}

/// The same when the head page was cut short below what the checkpoint vouched for: new
/// records go where the valid data ends, and the checkpoint written at open says so.
#[test]
fn records_pushed_after_a_head_page_cut_short_survive_a_crash() {
    let s = SimStorage::new();
    let q = open(&s, cfg());
    push(&q, 0..20);
    q.shutdown();
    drop(q);
    // Records are 16 + 11 bytes after the 32-byte header: keep 10 and a half.
    s.cut("page.1", 32 + 27 * 10 + 13);
    let q = open(&s, cfg());
    // Longer records, enough to grow the page just past where the old checkpoint said it
    // ended (572): that offset now falls inside the last one, and no later sequence follows.
    let longer: Vec<String> = (20..28).map(|i| format!("event-{i:05}-longer")).collect();
    let mut b = RecordBatch::new();
    for n in &longer {
        b.push(n.as_bytes());
    }
    q.push(&mut b).unwrap();
    let after = s.after_kill();
    std::mem::forget(q);
    let q = open(&after, cfg());
    let got = drain(&q, true);
    let mut want = names(0..10);
    want.extend(longer);
    assert_eq!(got, want);
}

/// A push that waits for its sync while the queue shuts down returns (durable or refused), it
/// never waits forever for a flusher that has stopped.
#[test]
fn pushes_racing_a_shutdown_never_hang() {
    for _ in 0..20 {
        let s = SimStorage::new();
        s.set_sync_latency(Duration::from_millis(1));
        let q = open(
            &s,
            QueueConfig {
                checkpoint_writes: 1,
                ..cfg()
            },
        );
        let q2 = Arc::clone(&q);
        let writer = std::thread::spawn(move || {
            let mut k = 0;
            loop {
                let mut b = RecordBatch::new();
                b.push(format!("event-{k:05}").as_bytes());
                if q2.push(&mut b).is_err() {
                    return;
                }
                k += 1;
            }
        });
        std::thread::sleep(Duration::from_millis(5));
        q.shutdown();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !writer.is_finished() {
            assert!(
                std::time::Instant::now() < deadline,
                "a push hangs after shutdown"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// A page left behind by a crash after a checkpoint that listed no page at all (every record
/// acked, the head page released while a new one could not be created) is recognised as
/// acked and deleted, not delivered again.
#[test]
fn an_acked_page_left_behind_a_checkpoint_listing_none_is_not_replayed() {
    use sluice_queue::checkpoint::{CheckpointRead, CheckpointStore};
    use sluice_queue::format::Checkpoint;
    let s = SimStorage::new();
    let file = sluice_queue::page::create_page(&s, 1, 0).unwrap();
    let mut b = RecordBatch::new();
    for i in 0..10u32 {
        b.push(format!("event-{i:05}").as_bytes());
    }
    file.write_at(32, b.stamp(0..10, 0)).unwrap();
    let mut store = CheckpointStore::new(Arc::new(s.clone()), &CheckpointRead::default()).unwrap();
    store
        .write(&Checkpoint {
            next_seq: 10,
            pages: Vec::new(),
        })
        .unwrap();
    let q = open(&s, cfg());
    assert_eq!(q.stats().unacked_events, 0);
    push(&q, 10..12);
    assert_eq!(drain(&q, true), names(10..12));
    q.shutdown();
    assert!(!s.names().contains(&"page.1".to_owned()));
}

/// A checkpoint written in the middle of a rollover lists no head page: the old head was
/// released (all acked) and the new one not made yet. Its next sequence says that everything
/// below it outside the listed pages was acked: the page made after it is no gap (this used to
/// be reported as a lost page), and the acked page, if a crash kept it, is not replayed.
#[test]
fn a_checkpoint_taken_mid_rollover_is_no_gap_and_replays_no_acked_page() {
    use sluice_queue::checkpoint::{CheckpointRead, CheckpointStore};
    use sluice_queue::format::{Checkpoint, PageCheckpoint};
    for acked_page_left in [false, true] {
        let s = SimStorage::new();
        let mut bytes = Vec::new();
        for (num, seqs) in [(1u64, 0..13u32), (2, 13..26), (3, 26..27)] {
            let file = sluice_queue::page::create_page(&s, num, seqs.start as u64).unwrap();
            let mut b = RecordBatch::new();
            for i in seqs.clone() {
                b.push(format!("event-{i:05}").as_bytes());
            }
            let data = b.stamp(0..b.len(), seqs.start as u64).to_vec();
            file.write_at(32, &data).unwrap();
            bytes.push(32 + data.len() as u64);
        }
        if !acked_page_left {
            s.delete("page.2");
        }
        let mut store =
            CheckpointStore::new(Arc::new(s.clone()), &CheckpointRead::default()).unwrap();
        store
            .write(&Checkpoint {
                next_seq: 26,
                pages: vec![PageCheckpoint {
                    count: 13,
                    bytes: bytes[0],
                    ..PageCheckpoint::empty(1, 0)
                }],
            })
            .unwrap();
        let q = open(&s, cfg());
        assert_eq!(
            q.stats().lost_events,
            0,
            "acked page left: {acked_page_left}"
        );
        let mut want = names(0..13);
        want.extend(names(26..27));
        assert_eq!(drain(&q, true), want, "acked page left: {acked_page_left}");
        q.shutdown();
        assert!(!s.names().contains(&"page.2".to_owned()));
    }
}

/// A reader waiting on an empty queue returns an empty batch when woken (a periodic flush's
/// tick); acking it changes nothing, and what is pushed next is read as before.
#[test]
fn a_woken_reader_returns_an_empty_batch_that_acks_nothing() {
    let s = SimStorage::new();
    let q = open(&s, cfg());
    push(&q, 0..3);
    let first = q.read_batch(10, Duration::ZERO).unwrap();
    let reader = {
        let q = Arc::clone(&q);
        std::thread::spawn(move || q.read_batch(10, Duration::ZERO))
    };
    // Woken again until it returns: a wake before it started waiting is not its own.
    while !reader.is_finished() {
        q.wake_readers();
        std::thread::sleep(Duration::from_millis(10));
    }
    let woken = reader.join().unwrap().unwrap();
    assert!(woken.records.is_empty());
    assert_eq!(woken.token, sluice_queue::persisted::EMPTY_BATCH);
    q.ack(woken.token);
    assert_eq!(q.stats().unacked_events, 3);
    q.ack(first.token);
    assert_eq!(q.stats().unacked_events, 0);
    push(&q, 3..5);
    assert_eq!(drain(&q, true), names(3..5));
}

/// Names of the spare page files in the directory.
fn spares(s: &SimStorage) -> Vec<String> {
    let mut names = s.names();
    names.retain(|n| n.starts_with("spare."));
    names
}

/// Asks `ready` every 10 ms, for at most ten seconds, until it gives something.
fn poll<T>(mut ready: impl FnMut() -> Option<T>) -> Option<T> {
    for _ in 0..1000 {
        if let Some(found) = ready() {
            return Some(found);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// Waits (at most ten seconds) for the flusher to have kept an acked page as a spare, and
/// for the queue to count it: the file is renamed before the directory is synced, and the
/// writer is only offered the spare after that, so a push that rolls over in between makes
/// a new page instead.
fn wait_for_spare(q: &PersistedQueue, s: &SimStorage) -> String {
    poll(|| (q.stats().spares > 0).then(|| spares(s).pop()).flatten())
        .unwrap_or_else(|| panic!("no spare page after ten seconds: {:?}", s.names()))
}

/// Waits until the checkpoint file holds one that `done` accepts.
fn wait_for_checkpoint(s: &SimStorage, done: impl Fn(&sluice_queue::format::Checkpoint) -> bool) {
    poll(|| {
        let read = sluice_queue::checkpoint::read(s).unwrap();
        read.checkpoint().is_some_and(&done).then_some(())
    })
    .expect("the checkpoint awaited was not written in ten seconds");
}

#[test]
fn an_acked_page_becomes_a_spare_then_the_next_head_page_and_its_old_records_are_never_read() {
    let s = SimStorage::new();
    let c = QueueConfig {
        checkpoint_writes: 1_000_000,
        checkpoint_acks: 1_000_000,
        ..cfg()
    };
    let q = open(&s, c.clone());
    // Page 1 fills and rolls over; once its records are acked it is kept as a spare.
    push(&q, 0..60);
    assert!(page_count(&s) >= 2);
    assert_eq!(drain(&q, true), names(0..60));
    let spare = wait_for_spare(&q, &s);
    let spare_len = s.file_bytes(&spare).unwrap().len();
    // The next page the writer needs is the spare, renamed, with its old records after the
    // new header.
    let before = sluice_queue::page::list_pages(&s).unwrap();
    while sluice_queue::page::list_pages(&s).unwrap().last() == before.last() {
        push(&q, 1000..1001);
    }
    let head = *sluice_queue::page::list_pages(&s).unwrap().last().unwrap();
    assert!(!s.names().contains(&spare), "{spare} was not reused");
    let head_bytes = s.file_bytes(&format!("page.{head}")).unwrap();
    assert_eq!(
        head_bytes.len(),
        spare_len,
        "the head page is the spare's file"
    );
    let expect: Vec<String> = (0..q.stats().unread_events)
        .map(|_| "event-01000".to_owned())
        .collect();
    assert_eq!(drain(&q, false), expect, "old records read back");

    // A killed process: the restart finds the new records and cuts the old ones, losing
    // nothing and replaying nothing twice. The acks of 0..60 are in the checkpoint the
    // rollover asked for once the flusher has written it (a kill before that replays them,
    // as at-least-once allows): the kill waits for it.
    push(&q, 2000..2003);
    wait_for_checkpoint(&s, |cp| {
        cp.pages
            .iter()
            .filter(|p| p.first_seq < 60)
            .all(|p| p.first_unacked_seq >= 60)
    });
    let after = s.after_kill();
    std::mem::forget(q);
    let q = open(&after, c.clone());
    assert!(spares(&after).is_empty(), "spares are removed at start-up");
    let got = drain(&q, true);
    assert_eq!(q.stats().lost_events, 0);
    assert!(got.ends_with(&names(2000..2003)), "{got:?}");
    assert!(
        got.iter()
            .all(|n| n == "event-01000" || n.starts_with("event-020")),
        "{got:?}"
    );
    let head_len = after.file_bytes(&format!("page.{head}")).unwrap().len();
    assert!(head_len < spare_len, "the old records were not cut");
    q.shutdown();

    // A graceful stop cuts a recycled head page to its records, removes the spares, and the
    // next start goes on in that page.
    let s = after;
    let q = open(&s, c.clone());
    push(&q, 0..60);
    assert_eq!(drain(&q, true).len(), 60);
    wait_for_spare(&q, &s);
    let before = sluice_queue::page::list_pages(&s).unwrap();
    while sluice_queue::page::list_pages(&s).unwrap().last() == before.last() {
        push(&q, 3000..3001);
    }
    let head = *sluice_queue::page::list_pages(&s).unwrap().last().unwrap();
    push(&q, 4000..4001);
    let bytes = q.stats().pages.last().unwrap().bytes;
    assert!(s.file_bytes(&format!("page.{head}")).unwrap().len() as u64 > bytes);
    q.shutdown();
    assert!(spares(&s).is_empty(), "{:?}", s.names());
    let len = s.file_bytes(&format!("page.{head}")).unwrap().len() as u64;
    assert_eq!(len, bytes, "the stop did not cut the old records");
    let q = open(&s, c);
    let pages = q.stats().pages;
    assert_eq!(
        pages.last().unwrap().num,
        head,
        "a new head page after a graceful stop"
    );
    let got = drain(&q, true);
    assert_eq!(got.last().unwrap(), "event-04000");
    assert!(
        got.iter().all(|n| n == "event-03000" || n == "event-04000"),
        "{got:?}"
    );
}

#[test]
fn on_a_full_disk_the_spare_page_gives_its_space_back_first() {
    let s = SimStorage::new();
    let q = open(
        &s,
        QueueConfig {
            checkpoint_acks: 1,
            ..cfg()
        },
    );
    push(&q, 0..60);
    assert_eq!(drain(&q, true), names(0..60));
    let spare = wait_for_spare(&q, &s);
    // No space left: appending to the head page (a new file, growing) fails until the spare
    // is removed, which frees a page's worth.
    s.set_space_left(Some(0));
    let q2 = Arc::clone(&q);
    let writer = std::thread::spawn(move || push(&q2, 60..65));
    poll(|| writer.is_finished().then_some(()));
    assert!(
        writer.is_finished(),
        "the push still waits for space after ten seconds"
    );
    writer.join().unwrap();
    assert!(!s.names().contains(&spare), "{:?}", s.names());
    assert_eq!(drain(&q, true), names(60..65));
}

/// `push_with` / `read_batch_with`: a caller that keeps what it pushed takes its records
/// without their bytes, reads stop before the next record it holds, and a word that does not
/// fit the page (a caller's bug) makes the queue read the records instead.
#[test]
fn a_caller_holding_its_records_takes_them_without_reading_them() {
    let s = SimStorage::new();
    let q = open(&s, cfg());
    let mut b = RecordBatch::new();
    for i in 0..6u32 {
        b.push(format!("event-{i:05}").as_bytes());
    }
    // (seq, page, end) of every record, as the caller keeps them.
    let mut kept = Vec::new();
    q.push_with(&mut b, &mut |run| {
        for (k, &end) in run.ends.iter().enumerate() {
            kept.push((run.first_seq + k as u64, run.page, end));
        }
    })
    .unwrap();
    assert_eq!(kept.len(), 6);
    let ends: Vec<u64> = kept.iter().map(|k| k.2).collect();
    assert!(ends.windows(2).all(|w| w[1] - w[0] == ends[1] - ends[0]));
    // The caller holds records 2..4 only: a read from 0 stops before 2.
    let holds = |page: u64, seq: u64, max: u64| {
        let mine = kept.iter().filter(|k| (2..4).contains(&k.0) && k.1 == page);
        let run: Vec<_> = mine
            .clone()
            .skip_while(|k| k.0 != seq)
            .take(max as usize)
            .collect();
        match run.last() {
            Some(last) => sluice_queue::Held {
                taken: run.len() as u64,
                end: last.2,
                next: None,
            },
            None => sluice_queue::Held {
                next: mine.map(|k| k.0).find(|&s| s > seq),
                ..Default::default()
            },
        }
    };
    let first = q
        .read_batch_with(10, Duration::ZERO, &mut |p, s, m| holds(p, s, m))
        .unwrap();
    assert_eq!(
        (first.first_seq, first.held, first.records.len()),
        (0, 0, 2)
    );
    let held = q
        .read_batch_with(10, Duration::ZERO, &mut |p, s, m| holds(p, s, m))
        .unwrap();
    assert_eq!((held.first_seq, held.held, held.records.len()), (2, 2, 0));
    assert!(held.data.is_empty(), "held records are not read");
    // A bogus end: the records are read instead.
    let bogus = q
        .read_batch_with(10, Duration::ZERO, &mut |_, _, _| sluice_queue::Held {
            taken: 1,
            end: 1 << 40,
            next: None,
        })
        .unwrap();
    assert_eq!((bogus.first_seq, bogus.held), (4, 0));
    let got: Vec<String> = bogus
        .records
        .iter()
        .map(|r| String::from_utf8(bogus.data[r.clone()].to_vec()).unwrap())
        .collect();
    assert_eq!(got, names(4..6));
    for t in [first.token, held.token, bogus.token] {
        q.ack(t);
    }
    assert_eq!(q.stats().unacked_events, 0);
}

/// `queue.checkpoint.writes: 0` and `queue.checkpoint.acks: 0` mean no limit, as in Logstash:
/// pushes never wait for (nor ask for) a sync, and acks ask for no checkpoint; a killed
/// process still loses nothing (the records are in the page file) and replays the acked
/// records no checkpoint recorded.
#[test]
fn zero_checkpoint_writes_and_acks_mean_no_limit() {
    let s = SimStorage::new();
    s.set_sync_latency(Duration::from_millis(20));
    let q = open(
        &s,
        QueueConfig {
            checkpoint_writes: 0,
            checkpoint_acks: 0,
            page_capacity: 1 << 20,
            ..cfg()
        },
    );
    let before = s.file_syncs();
    for k in 0..100u32 {
        push(&q, k * 10..k * 10 + 10);
    }
    assert_eq!(s.file_syncs(), before, "no push asked for a sync");
    assert_eq!(drain(&q, true).len(), 1000);
    assert_eq!(q.stats().unacked_events, 0);
    let writes = s.writes();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        s.writes(),
        writes,
        "no checkpoint was asked for by the acks"
    );
    let killed = s.after_kill();
    drop(q);
    let q = open(&killed, cfg());
    assert_eq!(drain(&q, true), names(0..1000));
}

/// Pushes `count` copies of `record`, in batches of 100.
fn push_copies(q: &PersistedQueue, record: &[u8], count: usize) {
    for _ in 0..count / 100 {
        let mut b = RecordBatch::new();
        for _ in 0..100 {
            b.push(record);
        }
        q.push(&mut b).unwrap();
    }
}

/// Large records: the writer asks the device to start writing every 256 KB of whole memory
/// pages, never the page being filled; small ones, which a sync at half of
/// `queue.checkpoint.writes` covers sooner, get no hint. Nothing else changes: every record
/// reads back.
#[test]
fn large_records_are_handed_to_the_device_ahead_of_the_sync() {
    let s = SimStorage::new();
    let q = open(
        &s,
        QueueConfig {
            page_capacity: 4 << 20,
            max_bytes: 64 << 20,
            ..QueueConfig::default()
        },
    );
    let record = vec![b'x'; 1000];
    push_copies(&q, &record, 4000);
    let hints = s.writebacks();
    // 4,000 records of ~1 KB: about 4 MB, so a page and a spare; at least 12 hints.
    assert!(hints.len() >= 12, "{hints:?}");
    let mut end = 0;
    for &(offset, len, file_len) in &hints {
        assert!(len >= 256 << 10, "{hints:?}");
        assert_eq!(
            (offset + len) % 4096,
            0,
            "whole memory pages only: {hints:?}"
        );
        assert!(offset + len <= file_len, "past what was written: {hints:?}");
        // Within a page, each hint starts where the last one ended.
        if offset != 0 {
            assert_eq!(offset, end, "{hints:?}");
        }
        end = offset + len;
    }
    let mut read = 0;
    while q.stats().unread_events > 0 {
        let b = q.read_batch(500, Duration::ZERO).unwrap();
        assert!(b.records.iter().all(|r| b.data[r.clone()] == record[..]));
        read += b.records.len();
        q.ack(b.token);
    }
    assert_eq!(read, 4000);

    // 200-byte records: 256 KB is more than 1,200 of them, past the 512 after which a sync
    // is asked for.
    let s = SimStorage::new();
    let q = open(&s, QueueConfig::default());
    push_copies(&q, &[b'y'; 200], 4000);
    assert_eq!(q.stats().unread_events, 4000);
    assert_eq!(s.writebacks(), vec![], "small records");
}
