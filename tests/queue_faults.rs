//! The persisted queue's promise under damage, through the real binary: the corruption matrix.
//!
//! A backlog of events (event `i` has queue sequence `i`) is written into a queue directory,
//! the directory is damaged one way, and then, on copies of it:
//! - `sluice queue verify` must exit 1 exactly when events are lost, saying how many;
//! - a normal start (`queue.drain: true`) must deliver every event but the damaged ones,
//!   once each, and log the loss with its count;
//! - `sluice queue repair` must report the same loss, and the repaired queue deliver the same
//!   events.
//!
//! Test names follow the peer bugs of `../shared/DESIGN.md` where one applies.

mod api_support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use sluice_queue::scan::{RecordCursor, Step};
use sluice_queue::storage::Storage;
use sluice_queue::{FsStorage, PersistedQueue, QueueConfig, RecordBatch};

const EVENTS: u64 = 3000;
/// Events pushed before the checkpoint that the "after the checkpoint" cases go back to.
const EARLY: u64 = 400;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-qf-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Where each record is: (page, offset, size), by sequence.
struct Layout {
    records: Vec<(u64, u64, u64)>,
    pages: Vec<u64>,
    /// The checkpoint file as it was after the first `EARLY` events.
    early_checkpoint: Vec<u8>,
}

impl Layout {
    fn in_page(&self, page: u64) -> BTreeSet<u64> {
        (0..EVENTS)
            .filter(|&s| self.records[s as usize].0 == page)
            .collect()
    }
}

fn push_events(q: &PersistedQueue, range: std::ops::Range<u64>) {
    let mut batch = RecordBatch::new();
    for i in range {
        let e = sluice_event::Event::with_message(format!("event {i}"));
        batch.push_with(|b| sluice_event::binary::encode(&e, b));
        if batch.len() == 100 {
            q.push(&mut batch).unwrap();
            batch.clear();
        }
    }
    q.push(&mut batch).unwrap();
}

/// Writes the backlog into `qdir`, as a pipeline whose workers had not taken it would leave it.
fn backlog(qdir: &Path) -> Layout {
    let cfg = QueueConfig {
        page_capacity: 32 << 10,
        ..QueueConfig::default()
    };
    let open =
        || PersistedQueue::open(Arc::new(FsStorage::new(qdir).unwrap()), cfg.clone()).unwrap();
    let q = open();
    push_events(&q, 0..EARLY);
    q.shutdown();
    drop(q);
    let early_checkpoint = std::fs::read(qdir.join("checkpoint")).unwrap();
    let q = open();
    push_events(&q, EARLY..EVENTS);
    q.shutdown();
    drop(q);

    let storage = FsStorage::new(qdir).unwrap();
    let pages = sluice_queue::page::list_pages(&storage).unwrap();
    let mut records = Vec::new();
    for &num in &pages {
        let file = storage.open(&format!("page.{num}")).unwrap();
        let len = file.len().unwrap();
        let mut hdr = [0u8; 32];
        file.read_at(0, &mut hdr).unwrap();
        let first = sluice_queue::format::PageHeader::decode(&hdr)
            .unwrap()
            .first_seq;
        let mut c = RecordCursor::new(32, first);
        loop {
            let at = c.offset;
            match c.next(file.as_ref(), len, None).unwrap() {
                Step::Record { seq, .. } => {
                    assert_eq!(seq, records.len() as u64);
                    records.push((num, at, c.offset - at));
                }
                Step::End(_) => break,
                Step::Damaged(d) => panic!("fresh backlog damaged: {d:?}"),
            }
        }
    }
    assert_eq!(records.len() as u64, EVENTS);
    assert!(pages.len() >= 6, "{pages:?}");
    Layout {
        records,
        pages,
        early_checkpoint,
    }
}

fn flip(path: &Path, at: u64) {
    let mut b = std::fs::read(path).unwrap();
    b[at as usize] ^= 0x5A;
    std::fs::write(path, b).unwrap();
}

fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs a pipeline that drains the queue in `data/queue/main` under `dir` into a file;
/// returns the event numbers delivered (asserting none twice) and the log.
fn drain(dir: &Path) -> (BTreeSet<u64>, String) {
    let settings = dir.join("settings");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(
        settings.join("sluice.yml"),
        format!(
            "queue.type: persisted\nqueue.drain: true\nqueue.page_capacity: 32kb\napi.enabled: false\npath.data: {}\n",
            dir.join("data").display()
        ),
    )
    .unwrap();
    let out = dir.join("out.txt");
    let _ = std::fs::remove_file(&out);
    let config = format!(
        "input {{ stdin {{ }} }} output {{ file {{ path => \"{}\" codec => line {{ format => \"%{{message}}\" }} }} }}",
        out.display()
    );
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--log.level", "info", "-w", "1", "--path.settings"])
        .arg(&settings)
        .args(["-e", &config])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let mut got = BTreeSet::new();
    for line in std::fs::read_to_string(&out).unwrap_or_default().lines() {
        let n: u64 = line
            .strip_prefix("event ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unexpected line {line:?}"));
        assert!(got.insert(n), "event {n} delivered twice");
    }
    (got, String::from_utf8_lossy(&o.stderr).into_owned())
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Damages a fresh backlog with `damage`, then checks start-up, verify and repair against
/// `lost` (the sequences the damage destroys).
fn case(name: &str, damage: impl FnOnce(&Path, &Layout) -> BTreeSet<u64>) {
    case_reported(name, false, damage)
}

/// [`case`], where `verify` must also report a problem when nothing is lost (`reported`: a
/// fallback to an older checkpoint, whose later acks are gone).
fn case_reported(name: &str, reported: bool, damage: impl FnOnce(&Path, &Layout) -> BTreeSet<u64>) {
    let dir = temp_dir(name);
    let qdir = dir.join("data/queue/main");
    let layout = backlog(&qdir);
    let lost = damage(&qdir, &layout);
    let all: BTreeSet<u64> = (0..EVENTS).collect();
    let want: BTreeSet<u64> = all.difference(&lost).copied().collect();
    let n = lost.len();
    let q = qdir.to_str().unwrap();

    let verified = sluice(&["queue", "verify", q]);
    let report = text(&verified);
    assert_eq!(
        verified.status.code(),
        Some(if n > 0 || reported { 1 } else { 0 }),
        "{name}: verify\n{report}"
    );
    if reported {
        assert!(
            report.contains("PROBLEM: checkpoint slot") && report.contains("fell back"),
            "{name}: verify does not report the fallback\n{report}"
        );
    }
    assert!(
        report.contains(&format!(" {n} event(s) lost")),
        "{name}: verify does not count {n} lost\n{report}"
    );

    let repair_dir = dir.join("repaired");
    copy_dir(&qdir, &repair_dir.join("data/queue/main"));

    let (got, log) = drain(&dir);
    let missing: BTreeSet<u64> = all.difference(&got).copied().collect();
    assert_eq!(
        missing, lost,
        "{name}: start-up delivered the wrong events\n{log}"
    );
    assert_eq!(got, want);
    if n > 0 {
        assert!(
            log.contains(&format!("lost {n} event(s)"))
                || log.contains(&format!("skipping {n} event(s)")),
            "{name}: the log does not count {n} lost event(s)\n{log}"
        );
        assert!(
            log.contains("ERROR"),
            "{name}: loss not logged as an error\n{log}"
        );
    }

    let rq = repair_dir.join("data/queue/main");
    let repaired = sluice(&[
        "queue",
        "repair",
        rq.to_str().unwrap(),
        "--queue.page_capacity",
        "32kb",
    ]);
    let report = text(&repaired);
    assert!(repaired.status.success(), "{name}: repair\n{report}");
    assert!(
        report.contains(&format!(
            "kept {} unacked record(s); {n} event(s) lost",
            EVENTS - n as u64
        )),
        "{name}: repair report\n{report}"
    );
    let ok = sluice(&["queue", "verify", rq.to_str().unwrap()]);
    assert!(
        ok.status.success(),
        "{name}: verify after repair\n{}",
        text(&ok)
    );
    let (got, log) = drain(&repair_dir);
    assert_eq!(got, want, "{name}: after repair\n{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn cut_file(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

fn page_path(qdir: &Path, num: u64) -> PathBuf {
    qdir.join(format!("page.{num}"))
}

#[test]
fn flipped_byte_in_a_record_payload_costs_that_record() {
    case("payload", |q, l| {
        let (page, offset, _) = l.records[1234];
        flip(&page_path(q, page), offset + 16 + 3);
        BTreeSet::from([1234])
    });
}

#[test]
fn flipped_byte_in_a_record_header_costs_that_record() {
    case("record-header", |q, l| {
        // The length field: the scanner must not trust it to find the next record.
        let (page, offset, _) = l.records[777];
        flip(&page_path(q, page), offset + 5);
        BTreeSet::from([777])
    });
}

#[test]
fn flipped_byte_in_the_head_page_costs_that_record() {
    case("head-payload", |q, l| {
        let (page, offset, _) = l.records[EVENTS as usize - 3];
        flip(&page_path(q, page), offset + 20);
        BTreeSet::from([EVENTS - 3])
    });
}

#[test]
fn flipped_byte_in_a_page_header_costs_nothing() {
    case("page-header", |q, l| {
        flip(&page_path(q, l.pages[1]), 9);
        BTreeSet::new()
    });
}

/// Flips a byte in the body of one checkpoint slot: the one in force (whose header names the
/// generation in force), or the other.
fn flip_checkpoint_slot(q: &Path, in_force: bool) {
    let storage = FsStorage::new(q).unwrap();
    let generation = sluice_queue::checkpoint::read(&storage)
        .unwrap()
        .generation()
        .unwrap();
    let bytes = std::fs::read(q.join("checkpoint")).unwrap();
    let slot_size = bytes.len() / 2;
    let slot = (0..2)
        .find(|s| {
            (bytes[s * slot_size + 16..s * slot_size + 24] == generation.to_le_bytes()) == in_force
        })
        .unwrap();
    flip(&q.join("checkpoint"), (slot * slot_size + 40) as u64);
}

/// No event is lost (the older slot takes over), but `queue verify` says so instead of "OK"
/// (issue 46): acks after the older generation may be repeated.
#[test]
fn flipped_byte_in_the_checkpoint_costs_nothing_and_verify_reports_the_fallback() {
    case_reported("checkpoint", true, |q, _| {
        flip_checkpoint_slot(q, true);
        BTreeSet::new()
    });
}

/// Damage to the older slot costs nothing and is only a note (the newer slot is in force).
#[test]
fn flipped_byte_in_the_older_checkpoint_slot_is_a_note() {
    case("checkpoint-older", |q, _| {
        flip_checkpoint_slot(q, false);
        BTreeSet::new()
    });
}

#[test]
fn page_truncated_mid_record_costs_the_records_cut_logstash_8098() {
    case("truncated", |q, l| {
        let page = l.pages[2];
        let (_, offset, size) = l.records[*l.in_page(page).iter().nth(10).unwrap() as usize];
        let cut = offset + size / 2;
        cut_file(&page_path(q, page), cut);
        l.in_page(page)
            .into_iter()
            .filter(|&s| {
                let (_, o, z) = l.records[s as usize];
                o + z > cut
            })
            .collect()
    });
}

#[test]
fn head_page_truncated_mid_record_costs_the_records_cut() {
    case("head-truncated", |q, l| {
        let page = *l.pages.last().unwrap();
        let (_, offset, size) = l.records[EVENTS as usize - 5];
        cut_file(&page_path(q, page), offset + size - 1);
        (EVENTS - 5..EVENTS).collect()
    });
}

#[test]
fn deleted_page_costs_its_records() {
    case("deleted", |q, l| {
        let page = l.pages[3];
        std::fs::remove_file(page_path(q, page)).unwrap();
        l.in_page(page)
    });
}

#[test]
fn empty_newest_page_is_a_normal_crash_leftover() {
    case("empty-newest", |q, l| {
        std::fs::write(page_path(q, l.pages.last().unwrap() + 1), b"").unwrap();
        // inspect agrees with start-up: every event is still there.
        let o = sluice(&["queue", "inspect", q.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(
            text(&o).contains(&format!("unacked events: {EVENTS}")),
            "{}",
            text(&o)
        );
        BTreeSet::new()
    });
}

#[test]
fn leftover_temporary_checkpoint_is_ignored_logstash_8218() {
    case("leftover-tmp", |q, _| {
        std::fs::write(q.join("checkpoint.tmp"), b"SLQC half-written").unwrap();
        BTreeSet::new()
    });
}

/// Pages written after the last checkpoint: as a crash leaves them when checkpoints lag.
fn back_to_the_early_checkpoint(q: &Path, l: &Layout) -> u64 {
    std::fs::write(q.join("checkpoint"), &l.early_checkpoint).unwrap();
    // The first page wholly written after that checkpoint.
    l.records[EARLY as usize + 600].0
}

#[test]
fn damage_after_the_checkpoint_keeps_the_records_that_follow() {
    case("after-checkpoint-damage", |q, l| {
        back_to_the_early_checkpoint(q, l);
        let (page, offset, _) = l.records[EARLY as usize + 900];
        flip(&page_path(q, page), offset + 18);
        BTreeSet::from([EARLY + 900])
    });
}

#[test]
fn missing_page_after_the_checkpoint_is_reported_as_loss() {
    case("after-checkpoint-missing", |q, l| {
        let page = back_to_the_early_checkpoint(q, l);
        assert!(page < *l.pages.last().unwrap());
        std::fs::remove_file(page_path(q, page)).unwrap();
        l.in_page(page)
    });
}

/// Every loss is counted where operators look: `queue.lost_events` in `/_node/stats` and a
/// Prometheus counter, both with losses found at start (a missing page) and by the reader (a
/// damaged record).
#[test]
fn lost_events_are_counted_in_the_monitoring_api() {
    let dir = api_support::temp_dir("queue-lost");
    let qdir = dir.join("data/queue/main");
    let l = backlog(&qdir);
    let page = l.pages[2];
    std::fs::remove_file(page_path(&qdir, page)).unwrap();
    let (p, offset, _) = l.records[2500];
    flip(&page_path(&qdir, p), offset + 20);
    let lost = l.in_page(page).len() as u64 + 1;
    let out = dir.join("out.txt");
    let config = format!(
        "input {{ stdin {{ }} }} output {{ file {{ path => \"{}\" }} }}",
        out.display()
    );
    let sluice = api_support::Sluice::start(
        &dir,
        "queue.type: persisted\nqueue.page_capacity: 32kb\napi.http.port: 9600-9700\n",
        "",
        &["-e", &config],
    );
    let stats = sluice.wait_for(30, "the backlog to drain", |v| {
        v["pipelines"]["main"]["queue"]["unacked_events"] == 0
    });
    assert_eq!(
        stats["pipelines"]["main"]["queue"]["lost_events"], lost,
        "{stats:#}"
    );
    let metrics = sluice.get("/metrics").body;
    let line = format!(
        "sluice_pipeline_queue_lost_events_total{{pipeline=\"main\",type=\"persisted\"}} {lost}"
    );
    assert!(
        metrics.lines().any(|l| l == line),
        "{line} not in\n{metrics}"
    );
    sluice.stop();
}

/// A lost checkpoint loses the ack state, not events: start-up, verify and repair say that up
/// to N events may be delivered again (repair used to report "0 problem(s)"), and every
/// unacked event is still delivered.
#[test]
fn lost_checkpoint_is_reported_as_ack_state_lost() {
    let dir = temp_dir("no-checkpoint");
    let qdir = dir.join("data/queue/main");
    backlog(&qdir);
    // Ack the first 1,000 events, as workers would have.
    {
        let cfg = QueueConfig {
            page_capacity: 32 << 10,
            ..QueueConfig::default()
        };
        let q = PersistedQueue::open(Arc::new(FsStorage::new(&qdir).unwrap()), cfg).unwrap();
        let mut acked = 0;
        while acked < 1000 {
            let b = q.read_batch(100, std::time::Duration::ZERO).unwrap();
            acked += b.records.len();
            q.ack(b.token);
        }
        q.shutdown();
    }
    std::fs::remove_file(qdir.join("checkpoint")).unwrap();
    let q = qdir.to_str().unwrap();
    let verified = sluice(&["queue", "verify", q]);
    let report = text(&verified);
    assert_eq!(verified.status.code(), Some(1), "{report}");
    assert!(report.contains("ack state lost"), "{report}");
    assert!(report.contains(" 0 event(s) lost"), "{report}");

    let repair_dir = dir.join("repaired");
    copy_dir(&qdir, &repair_dir.join("data/queue/main"));
    let rq = repair_dir.join("data/queue/main");
    let repaired = sluice(&["queue", "repair", rq.to_str().unwrap()]);
    let report = text(&repaired);
    assert!(repaired.status.success(), "{report}");
    assert!(report.contains("may be delivered again"), "{report}");
    assert!(report.contains("1 problem(s)"), "{report}");

    for d in [&dir, &repair_dir] {
        let (got, log) = drain(d);
        if d == &dir {
            assert!(log.contains("ack state lost"), "{log}");
        }
        // Nothing unacked is lost; acked events still in their pages come back.
        assert!((1000..EVENTS).all(|i| got.contains(&i)), "{log}");
        assert!(got.len() as u64 > EVENTS - 1000, "{log}");
    }
}
