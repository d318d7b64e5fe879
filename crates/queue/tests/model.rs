//! Model-based and crash tests of the persisted queue on simulated storage.
//!
//! 1. A random sequence of pushes, reads, acks (in any order), graceful reopens and kills,
//!    checked against an in-memory model of what each record may do next.
//! 2. Power loss at every write boundary: a storage wrapper snapshots the simulated storage
//!    before every mutating I/O call, and each snapshot is reopened under several survival
//!    patterns (synced data plus a prefix of unsynced writes, the last one torn).
//! 3. A failed fsync fails the push and loses nothing acknowledged earlier.
//! 4. Recovery and reading never panic or hang on arbitrary damage.
//!
//! Records carry their push index (which is also their queue sequence number) and a padding
//! derived from it, so every delivered payload is checked byte for byte.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;
use sluice_queue::page::{list_pages, page_name};
use sluice_queue::sim::{SimStorage, Survival};
use sluice_queue::storage::{QueueFile, Storage};
use sluice_queue::{PersistedQueue, QueueConfig, QueueError, RawBatch, RecordBatch};

// ---------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------

fn payload(idx: u64) -> Vec<u8> {
    let pad = (idx.wrapping_mul(7919) % 61) as usize;
    let mut p = format!("rec-{idx}:").into_bytes();
    p.extend(std::iter::repeat_n(b'a' + (idx % 26) as u8, pad));
    p
}

/// The push index a payload carries, if the payload is intact.
fn decode(p: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(p).ok()?;
    let (n, _) = s.strip_prefix("rec-")?.split_once(':')?;
    let idx = n.parse().ok()?;
    (payload(idx) == p).then_some(idx)
}

fn batch(range: std::ops::Range<u64>) -> RecordBatch {
    let mut b = RecordBatch::new();
    for i in range {
        b.push(&payload(i));
    }
    b
}

fn open(s: &SimStorage, cfg: &QueueConfig) -> Result<Arc<PersistedQueue>, QueueError> {
    PersistedQueue::open(Arc::new(s.clone()), cfg.clone())
}

/// The push indices of a batch, checking each payload and that it sits at its sequence.
fn indices(b: &RawBatch) -> Result<Vec<u64>, String> {
    b.records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let idx = decode(&b.data[r.clone()])
                .ok_or_else(|| format!("garbled payload {:?}", &b.data[r.clone()]))?;
            if idx != b.first_seq + i as u64 {
                return Err(format!(
                    "record {idx} delivered at sequence {}",
                    b.first_seq + i as u64
                ));
            }
            Ok(idx)
        })
        .collect()
}

const WATCHDOG: Duration = Duration::from_secs(5);

/// Runs `f` (which reads from `q`), closing the queue if it blocks for too long so that a
/// hang becomes a test failure.
fn guarded<T>(q: &Arc<PersistedQueue>, f: impl FnOnce() -> T) -> Result<T, TestCaseError> {
    let (tx, rx) = mpsc::channel::<()>();
    let hung = Arc::new(AtomicBool::new(false));
    let dog = {
        let q = Arc::clone(q);
        let hung = Arc::clone(&hung);
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(WATCHDOG) {
                hung.store(true, Ordering::SeqCst);
                q.close();
            }
        })
    };
    let out = f();
    let _ = tx.send(());
    dog.join().expect("watchdog thread");
    if hung.load(Ordering::SeqCst) {
        return Err(TestCaseError::fail(format!(
            "read_batch blocked for {WATCHDOG:?} although stats().unread_events > 0"
        )));
    }
    Ok(out)
}

/// Reads and acks everything the queue says is unread (at most `limit` read calls), with a
/// watchdog. Returns the batches' push indices in delivery order.
fn drain_all(q: &Arc<PersistedQueue>, limit: usize) -> Result<Vec<u64>, TestCaseError> {
    guarded(q, || {
        let mut got = Vec::new();
        let mut calls = 0;
        while q.stats().unread_events > 0 {
            calls += 1;
            if calls > limit {
                return Err(format!(
                    "still {} unread event(s) after {limit} read_batch calls",
                    q.stats().unread_events
                ));
            }
            let Some(b) = q.read_batch(13, Duration::ZERO) else {
                return Err("read_batch returned None on an open queue".to_owned());
            };
            got.extend(indices(&b)?);
            q.ack(b.token);
        }
        Ok(got)
    })?
    .map_err(TestCaseError::fail)
}

// ---------------------------------------------------------------------------------------
// 1. Model test
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    Push(u64),
    Read(usize),
    Ack(Index),
    /// `shutdown()` then reopen; with `ack_all`, every outstanding batch is acked first (the
    /// documented contract of `shutdown`), otherwise outstanding batches are abandoned.
    Reopen {
        ack_all: bool,
    },
    /// `after_kill()`: the process dies with every write in the page cache.
    Kill,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (1u64..20).prop_map(Op::Push),
        5 => (1usize..30).prop_map(Op::Read),
        4 => any::<Index>().prop_map(Op::Ack),
        1 => any::<bool>().prop_map(|ack_all| Op::Reopen { ack_all }),
        1 => Just(Op::Kill),
    ]
}

fn config() -> impl Strategy<Value = QueueConfig> {
    (256u64..2048, 1u64..50, 1u64..50).prop_map(|(page_capacity, acks, writes)| QueueConfig {
        page_capacity,
        max_bytes: 64 << 20,
        checkpoint_acks: acks,
        checkpoint_writes: writes,
        ..QueueConfig::default()
    })
}

/// What the model knows of a record (indexed by push order, which is its sequence number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rec {
    /// Not handed to the reader in this session: must be delivered (never lost).
    Unread,
    /// Delivered in this session with this token, not acked.
    Outstanding(u64),
    /// Acked in this session: must not be delivered again in this session.
    Acked,
    /// Acked before a kill: may come back (at-least-once), need not.
    Maybe,
    /// Durably acked: must never come back.
    Retired,
}

#[derive(Default)]
struct Model {
    recs: Vec<Rec>,
    outstanding: Vec<(u64, Vec<u64>)>,
    /// The last sequence delivered in this session (reading is sequential, so FIFO).
    last_delivered: Option<u64>,
}

impl Model {
    fn count(&self, f: impl Fn(Rec) -> bool) -> u64 {
        self.recs.iter().filter(|&&r| f(r)).count() as u64
    }

    fn deliver(&mut self, b: &RawBatch) -> Result<(), TestCaseError> {
        prop_assert!(
            b.token != 0 && !b.records.is_empty(),
            "empty batch (the corrupt-record path) on undamaged storage"
        );
        let idxs = indices(b).map_err(TestCaseError::fail)?;
        for &idx in &idxs {
            prop_assert!(
                (idx as usize) < self.recs.len(),
                "record {idx} never pushed"
            );
            if let Some(last) = self.last_delivered {
                prop_assert!(idx > last, "record {idx} delivered after {last}: not FIFO");
            }
            let from = self.last_delivered.map_or(0, |l| l + 1);
            for j in from..idx {
                match self.recs[j as usize] {
                    Rec::Unread => {
                        return Err(TestCaseError::fail(format!(
                            "record {j} was skipped (reader now at {idx}): lost"
                        )))
                    }
                    // Passed over: the queue holds it as acked durably.
                    Rec::Maybe => self.recs[j as usize] = Rec::Retired,
                    _ => {}
                }
            }
            let r = &mut self.recs[idx as usize];
            prop_assert!(
                matches!(*r, Rec::Unread | Rec::Maybe),
                "record {idx} delivered while {:?}",
                *r
            );
            *r = Rec::Outstanding(b.token);
            self.last_delivered = Some(idx);
        }
        self.outstanding.push((b.token, idxs));
        Ok(())
    }

    fn ack(&mut self, q: &PersistedQueue, i: usize) -> Result<(), TestCaseError> {
        let (token, idxs) = self.outstanding.remove(i);
        q.ack(token);
        for idx in idxs {
            let r = &mut self.recs[idx as usize];
            prop_assert_eq!(*r, Rec::Outstanding(token));
            *r = Rec::Acked;
        }
        Ok(())
    }

    fn new_session(&mut self) {
        self.outstanding.clear();
        self.last_delivered = None;
    }

    /// The queue's counters against what the model allows.
    fn check_counts(&self, q: &PersistedQueue) -> Result<(), TestCaseError> {
        let st = q.stats();
        let unread = self.count(|r| r == Rec::Unread);
        let out = self.count(|r| matches!(r, Rec::Outstanding(_)));
        let maybe = self.count(|r| r == Rec::Maybe);
        prop_assert!(
            (unread..=unread + maybe).contains(&st.unread_events),
            "unread_events {} but the model has {unread} unread and {maybe} maybe",
            st.unread_events
        );
        prop_assert!(
            (unread + out..=unread + out + maybe).contains(&st.unacked_events),
            "unacked_events {} but the model has {unread} unread, {out} outstanding, {maybe} maybe",
            st.unacked_events
        );
        prop_assert_eq!(st.next_seq, self.recs.len() as u64);
        prop_assert_eq!(st.lost_events, 0);
        Ok(())
    }
}

fn open_ok(s: &SimStorage, cfg: &QueueConfig) -> Result<Arc<PersistedQueue>, TestCaseError> {
    open(s, cfg).map_err(|e| TestCaseError::fail(format!("reopen failed: {e}")))
}

fn graceful_reopen(
    m: &mut Model,
    q: Arc<PersistedQueue>,
    s: &SimStorage,
    cfg: &QueueConfig,
    ack_all: bool,
) -> Result<Arc<PersistedQueue>, TestCaseError> {
    if ack_all {
        while !m.outstanding.is_empty() {
            m.ack(&q, 0)?;
        }
    }
    q.shutdown();
    // What the final checkpoint says: per page, records from the first unacked one on are
    // replayed (acks beyond the first unacked record are not persisted, by design).
    let pages = q.stats().pages;
    drop(q);
    let replayed = |seq: u64| {
        pages
            .iter()
            .any(|p| p.first_unacked_seq <= seq && seq < p.first_seq + p.count)
    };
    for (seq, r) in m.recs.iter_mut().enumerate() {
        let seq = seq as u64;
        let back = replayed(seq);
        *r = match (*r, back) {
            (Rec::Unread | Rec::Outstanding(_), true) => Rec::Unread,
            (Rec::Unread | Rec::Outstanding(_), false) => {
                return Err(TestCaseError::fail(format!(
                    "unacked record {seq} is not in the final checkpoint: lost ({pages:?})"
                )))
            }
            (Rec::Acked, true) if ack_all => {
                return Err(TestCaseError::fail(format!(
                    "record {seq}, acked before a graceful shutdown with nothing outstanding, \
                     would be replayed ({pages:?})"
                )))
            }
            (Rec::Acked | Rec::Maybe, true) => Rec::Unread,
            (Rec::Acked | Rec::Maybe | Rec::Retired, false) => Rec::Retired,
            (Rec::Retired, true) => {
                return Err(TestCaseError::fail(format!(
                    "record {seq}, durably acked earlier, is back in the checkpoint"
                )))
            }
        };
    }
    m.new_session();
    let q = open_ok(s, cfg)?;
    let st = q.stats();
    let unread = m.count(|r| r == Rec::Unread);
    prop_assert_eq!(
        st.unacked_events,
        unread,
        "unacked_events after graceful reopen"
    );
    prop_assert_eq!(
        st.unread_events,
        unread,
        "unread_events after graceful reopen"
    );
    Ok(q)
}

fn run_model(cfg: &QueueConfig, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut s = SimStorage::new();
    let mut q = open_ok(&s, cfg)?;
    let mut m = Model::default();
    for op in ops {
        match op {
            Op::Push(n) => {
                let first = m.recs.len() as u64;
                let r = q.push(&mut batch(first..first + n));
                prop_assert!(r.is_ok(), "push failed: {:?}", r);
                m.recs.extend((0..*n).map(|_| Rec::Unread));
            }
            Op::Read(max) => {
                if q.stats().unread_events > 0 {
                    let b = guarded(&q, || q.read_batch(*max, Duration::ZERO))?;
                    let b = b.ok_or_else(|| TestCaseError::fail("read_batch returned None"))?;
                    prop_assert!(b.records.len() <= *max);
                    m.deliver(&b)?;
                }
            }
            Op::Ack(i) => {
                if !m.outstanding.is_empty() {
                    let i = i.index(m.outstanding.len());
                    m.ack(&q, i)?;
                }
            }
            Op::Reopen { ack_all } => q = graceful_reopen(&mut m, q, &s, cfg, *ack_all)?,
            Op::Kill => {
                let after = s.after_kill();
                // Killed: no shutdown, no final checkpoint. (Its flusher thread lingers on
                // the old storage, which nothing reads any more.)
                std::mem::forget(q);
                s = after;
                for r in &mut m.recs {
                    *r = match *r {
                        Rec::Unread | Rec::Outstanding(_) => Rec::Unread,
                        Rec::Acked | Rec::Maybe => Rec::Maybe,
                        Rec::Retired => Rec::Retired,
                    };
                }
                m.new_session();
                q = open_ok(&s, cfg)?;
            }
        }
        m.check_counts(&q)?;
    }

    // Drain everything: every record not durably acked is delivered (or was acked).
    while !m.outstanding.is_empty() {
        m.ack(&q, 0)?;
    }
    let limit = m.recs.len() + 10;
    let mut calls = 0;
    while q.stats().unread_events > 0 {
        calls += 1;
        prop_assert!(calls <= limit, "drain does not end");
        let b = guarded(&q, || q.read_batch(30, Duration::ZERO))?;
        let b = b.ok_or_else(|| TestCaseError::fail("read_batch returned None"))?;
        m.deliver(&b)?;
        m.ack(&q, 0)?;
    }
    let left: Vec<usize> = (0..m.recs.len())
        .filter(|&i| m.recs[i] == Rec::Unread)
        .collect();
    prop_assert!(left.is_empty(), "never delivered: {left:?}");
    let st = q.stats();
    prop_assert_eq!(st.unacked_events, 0);
    m.check_counts(&q)?;
    // Nothing comes back after a final graceful restart.
    let q = graceful_reopen(&mut m, q, &s, cfg, true)?;
    prop_assert_eq!(q.stats().unacked_events, 0);
    q.shutdown();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn model(cfg in config(), ops in proptest::collection::vec(op(), 1..120)) {
        run_model(&cfg, &ops)?;
    }
}

// ---------------------------------------------------------------------------------------
// 2. Power loss at every write boundary
// ---------------------------------------------------------------------------------------

/// The survival patterns tried at each boundary (keep 1.0 tears nothing, so once).
const SURVIVALS: [(f64, usize); 9] = [
    (0.0, 0),
    (0.0, 1),
    (0.0, 7),
    (0.0, 30),
    (0.5, 0),
    (0.5, 1),
    (0.5, 7),
    (0.5, 30),
    (1.0, 0),
];

/// One crash point: the storage as each survival pattern leaves it, and how many records'
/// pushes had returned by then.
struct Snap {
    returned: u64,
    acked: u64,
    after: Vec<(Survival, SimStorage)>,
}

/// Wraps a `SimStorage`; before every mutating call it records what a power loss at that
/// instant would leave. The calls and the snapshots are serialised by `log`'s lock, so each
/// snapshot is one consistent point in time (the simulated storage alone is not snapshotted
/// atomically with respect to a concurrent flusher).
struct Recorder {
    sim: SimStorage,
    log: Mutex<Vec<Snap>>,
    returned: AtomicU64,
    /// Records `0..acked` may have been acked (set before the ack, so never too low).
    acked: AtomicU64,
}

impl Recorder {
    fn snap(&self, log: &mut Vec<Snap>) {
        let returned = self.returned.load(Ordering::SeqCst);
        let acked = self.acked.load(Ordering::SeqCst);
        let after = SURVIVALS
            .iter()
            .map(|&(keep_fraction, torn_bytes)| {
                let s = Survival {
                    keep_fraction,
                    torn_bytes,
                };
                (s, self.sim.power_loss(s))
            })
            .collect();
        log.push(Snap {
            returned,
            acked,
            after,
        });
    }

    fn around<T>(&self, op: impl FnOnce() -> T) -> T {
        let mut log = self.log.lock().unwrap();
        self.snap(&mut log);
        op()
    }
}

struct RecStorage(Arc<Recorder>);

struct RecFile {
    inner: Arc<dyn QueueFile>,
    rec: Arc<Recorder>,
}

impl QueueFile for RecFile {
    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.rec.around(|| self.inner.write_at(offset, data))
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_at(offset, buf)
    }
    fn sync(&self) -> io::Result<()> {
        self.rec.around(|| self.inner.sync())
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.rec.around(|| self.inner.set_len(len))
    }
}

impl RecStorage {
    fn wrap(&self, inner: Arc<dyn QueueFile>) -> Arc<dyn QueueFile> {
        Arc::new(RecFile {
            inner,
            rec: Arc::clone(&self.0),
        })
    }
}

impl Storage for RecStorage {
    fn list(&self) -> io::Result<Vec<String>> {
        self.0.sim.list()
    }
    fn open(&self, name: &str) -> io::Result<Arc<dyn QueueFile>> {
        Ok(self.wrap(self.0.sim.open(name)?))
    }
    fn create(&self, name: &str) -> io::Result<Arc<dyn QueueFile>> {
        let inner = self.0.around(|| self.0.sim.create(name))?;
        Ok(self.wrap(inner))
    }
    fn remove(&self, name: &str) -> io::Result<()> {
        self.0.around(|| self.0.sim.remove(name))
    }
    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.0.around(|| self.0.sim.rename(from, to))
    }
    fn sync_dir(&self) -> io::Result<()> {
        self.0.around(|| self.0.sim.sync_dir())
    }
    fn describe(&self) -> String {
        "recorded simulated storage".to_owned()
    }
}

/// Logstash #8218: a checkpoint left 0 bytes long after a crash. Checkpoints are written in
/// place (alternate slots) or, when the file grows, through `checkpoint.tmp`, fsync, rename and
/// a directory fsync. A crash at any step, under any survival pattern, leaves the last
/// checkpoint written or the one being written, never none.
#[test]
fn checkpoint_replacement_survives_a_crash_at_every_step_logstash_8218() {
    use sluice_queue::checkpoint::{self, CheckpointRead, CheckpointStore};
    use sluice_queue::format::{Checkpoint, PageCheckpoint};
    let rec = Arc::new(Recorder {
        sim: SimStorage::new(),
        log: Mutex::new(Vec::new()),
        returned: AtomicU64::new(0),
        acked: AtomicU64::new(0),
    });
    let cp = |pages: u64| Checkpoint {
        next_seq: pages,
        pages: (0..pages)
            .map(|i| PageCheckpoint {
                num: i,
                first_seq: i,
                count: 1,
                bytes: 60,
                first_unacked_seq: i,
                first_unacked_offset: 32,
            })
            .collect(),
    };
    // Sizes that grow the file twice and shrink back (in place).
    let sizes = [1, 2, 70, 100, 3, 300, 0, 5];
    let mut store = CheckpointStore::new(
        Arc::new(RecStorage(Arc::clone(&rec))),
        &CheckpointRead::default(),
    )
    .unwrap();
    for (i, &n) in sizes.iter().enumerate() {
        store.write(&cp(n)).unwrap();
        rec.returned.store(i as u64 + 1, Ordering::SeqCst);
    }
    rec.snap(&mut rec.log.lock().unwrap());
    let log = std::mem::take(&mut *rec.log.lock().unwrap());
    assert!(log.len() > 20);
    for (at, snap) in log.iter().enumerate() {
        let done = snap.returned as usize;
        for (surv, storage) in &snap.after {
            let read = checkpoint::read(storage)
                .unwrap_or_else(|e| panic!("crash point {at}, {surv:?}: {e}"));
            let got = read.checkpoint().cloned();
            let last = done.checked_sub(1).map(|i| cp(sizes[i]));
            let next = sizes.get(done).map(|&n| cp(n));
            assert!(
                got == last || (got.is_some() && got == next),
                "crash point {at} after {done} writes, {surv:?}: {:?} pages",
                got.map(|c| c.pages.len())
            );
        }
    }
}

/// Pushes `batches` with `checkpoint.writes = k` (with `ack`, reading and acking everything
/// after each push, so that checkpoints and page deletions are crash points too), then
/// reopens every recorded crash point. Acked records may come back; unacked ones may not
/// be lost beyond the bound below.
///
/// The bound checked: a push returns without waiting only if it leaves fewer than `k`
/// records unsynced (`end_seq - synced_seq < k`), and `synced_seq` is only advanced after a
/// sync of every page file holding records below it. So with one writer, at any instant the
/// records of returned pushes that are not yet durable are among the last `k - 1` returned:
/// a power loss may lose at most those (none with `k = 1`), and a kill (every write kept)
/// loses nothing.
fn power_loss_case(
    k: u64,
    page_capacity: u64,
    batches: &[u64],
    ack: Option<u64>,
) -> Result<(), TestCaseError> {
    let rec = Arc::new(Recorder {
        sim: SimStorage::new(),
        log: Mutex::new(Vec::new()),
        returned: AtomicU64::new(0),
        acked: AtomicU64::new(0),
    });
    let cfg = QueueConfig {
        page_capacity,
        max_bytes: 64 << 20,
        checkpoint_writes: k,
        checkpoint_acks: ack.unwrap_or(1_000_000),
        ..QueueConfig::default()
    };
    let q = PersistedQueue::open(Arc::new(RecStorage(Arc::clone(&rec))), cfg.clone())
        .map_err(|e| TestCaseError::fail(format!("open: {e}")))?;
    let mut next = 0;
    for &n in batches {
        q.push(&mut batch(next..next + n))
            .map_err(|e| TestCaseError::fail(format!("push: {e}")))?;
        next += n;
        rec.returned.store(next, Ordering::SeqCst);
        while ack.is_some() && q.stats().unread_events > 0 {
            let b = q.read_batch(4, Duration::ZERO).unwrap();
            let idxs = indices(&b).map_err(TestCaseError::fail)?;
            rec.acked.store(idxs.last().unwrap() + 1, Ordering::SeqCst);
            q.ack(b.token);
        }
    }
    // A crash during the final shutdown is a crash point too; then the final state.
    q.shutdown();
    drop(q);
    rec.snap(&mut rec.log.lock().unwrap());
    let log = std::mem::take(&mut *rec.log.lock().unwrap());

    let mut recovered = 0;
    for (at, snap) in log.iter().enumerate() {
        for (surv, storage) in &snap.after {
            let ctx = format!(
                "crash point {at}/{} ({} records returned, {} acked), {surv:?}, k {k}",
                log.len(),
                snap.returned,
                snap.acked
            );
            let q = PersistedQueue::open(Arc::new(storage.clone()), cfg.clone())
                .map_err(|e| TestCaseError::fail(format!("{ctx}: reopen failed: {e}")))?;
            let got = drain_all(&q, next as usize + 10)
                .map_err(|e| TestCaseError::fail(format!("{ctx}: {e}")))?;
            let st = q.stats();
            q.shutdown();
            if surv.keep_fraction >= 1.0 {
                prop_assert_eq!(st.lost_events, 0, "{}", ctx);
            }
            prop_assert_eq!(st.unacked_events, 0, "{}", ctx);
            prop_assert!(
                got.windows(2).all(|w| w[0] < w[1]),
                "{}: out of order or duplicated: {:?}",
                ctx,
                got
            );
            prop_assert!(got.iter().all(|&i| i < next), "{}: unknown record", ctx);
            let lost: Vec<u64> = (snap.acked..snap.returned)
                .filter(|i| got.binary_search(i).is_err())
                .collect();
            let allowed = if surv.keep_fraction >= 1.0 { 0 } else { k - 1 };
            prop_assert!(
                lost.iter().all(|&i| i + allowed >= snap.returned),
                "{}: lost {:?}, only the last {} returned may be lost",
                ctx,
                lost,
                allowed
            );
            recovered += 1;
        }
    }
    prop_assert!(recovered > 0);
    Ok(())
}

#[test]
fn power_loss_at_every_write_boundary_checkpoint_writes_1_vector_22489() {
    // Small pages so that pushes roll over (and page creation is a crash point too).
    let batches: Vec<u64> = (0..24).map(|i| 1 + i % 5).collect();
    power_loss_case(1, 300, &batches, None).unwrap();
    power_loss_case(1, 300, &batches, Some(3)).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn power_loss_at_every_write_boundary(
        k in prop_oneof![Just(1u64), 2u64..12],
        page_capacity in 256u64..1024,
        batches in proptest::collection::vec(1u64..6, 1..24),
        ack in proptest::option::of(1u64..8),
    ) {
        power_loss_case(k, page_capacity, &batches, ack)?;
    }
}

// ---------------------------------------------------------------------------------------
// 3. Failed fsync
// ---------------------------------------------------------------------------------------

fn cfg_writes(writes: u64) -> QueueConfig {
    QueueConfig {
        page_capacity: 512,
        max_bytes: 64 << 20,
        checkpoint_writes: writes,
        ..QueueConfig::default()
    }
}

fn drain_plain(q: &Arc<PersistedQueue>) -> Vec<u64> {
    drain_all(q, 10_000).unwrap()
}

#[test]
fn failed_fsync_fails_the_push_and_keeps_what_returned_before() {
    let s = SimStorage::new();
    let q = open(&s, &cfg_writes(1)).unwrap();
    for k in 0..10 {
        q.push(&mut batch(k * 3..k * 3 + 3)).unwrap();
    }
    s.set_fail_sync(true);
    let err = q.push(&mut batch(30..34)).unwrap_err();
    assert!(matches!(err, QueueError::Failed(_)), "{err:?}");
    // The queue stays failed: later pushes error out at once instead of hanging.
    let err = q.push(&mut batch(34..36)).unwrap_err();
    assert!(matches!(err, QueueError::Failed(_)), "{err:?}");
    // Readers still get what is there.
    assert!(q.read_batch(5, Duration::ZERO).is_some());

    // Killed: every write survives, so the failed push's records may come back too.
    let killed = s.after_kill();
    // Power loss: everything synced before the failure survives.
    let lost_power = s.power_loss(Survival {
        keep_fraction: 0.0,
        torn_bytes: 5,
    });
    std::mem::forget(q);
    for (what, st) in [("kill", killed), ("power loss", lost_power)] {
        let q = open(&st, &cfg_writes(1)).unwrap();
        let got = drain_plain(&q);
        assert!(got.len() >= 30, "{what}: {got:?}");
        assert_eq!(got, (0..got.len() as u64).collect::<Vec<_>>(), "{what}");
        assert!(got.len() <= 34, "{what}: {got:?}");
        q.shutdown();
    }
}

#[test]
fn failed_fsync_with_group_commit_fails_the_push_that_waits() {
    let s = SimStorage::new();
    let q = open(&s, &cfg_writes(20)).unwrap();
    // Below the threshold: returns without a sync.
    q.push(&mut batch(0..10)).unwrap();
    s.set_fail_sync(true);
    // This one reaches the threshold and waits for a sync, which fails. (Or a sync of the
    // rollover in the first push already failed: then it fails before writing anything.)
    let err = q.push(&mut batch(10..25)).unwrap_err();
    assert!(matches!(err, QueueError::Failed(_)), "{err:?}");
    let killed = s.after_kill();
    std::mem::forget(q);
    let q = open(&killed, &cfg_writes(20)).unwrap();
    let got = drain_plain(&q);
    assert!((10..=25).contains(&got.len()), "{got:?}");
    assert_eq!(got, (0..got.len() as u64).collect::<Vec<_>>());
    q.shutdown();
}

// ---------------------------------------------------------------------------------------
// 4. Recovery never panics on damage
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Damage {
    /// Overwrite bytes of a page (possibly past its end).
    Bytes {
        page: Index,
        offset: Index,
        data: Vec<u8>,
    },
    /// Cut a page (the head page when `head`) to a length.
    Truncate { head: bool, page: Index, len: Index },
    /// Flip a bit of the checkpoint file.
    Checkpoint { at: Index, bit: u8 },
    /// Delete a page file.
    Delete { page: Index },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        6 => (any::<Index>(), any::<Index>(), proptest::collection::vec(any::<u8>(), 1..12))
            .prop_map(|(page, offset, data)| Damage::Bytes { page, offset, data }),
        3 => (any::<bool>(), any::<Index>(), any::<Index>())
            .prop_map(|(head, page, len)| Damage::Truncate { head, page, len }),
        1 => (any::<Index>(), 0u8..8).prop_map(|(at, bit)| Damage::Checkpoint { at, bit }),
        1 => any::<Index>().prop_map(|page| Damage::Delete { page }),
    ]
}

fn apply_damage(s: &SimStorage, d: &Damage) {
    let pages = list_pages(s).unwrap();
    if pages.is_empty() && !matches!(d, Damage::Checkpoint { .. }) {
        return;
    }
    match d {
        Damage::Bytes { page, offset, data } => {
            let name = page_name(pages[page.index(pages.len())]);
            let len = s.file_bytes(&name).unwrap().len();
            s.corrupt(&name, offset.index(len + 40) as u64, data);
        }
        Damage::Truncate { head, page, len } => {
            let num = if *head {
                *pages.last().unwrap()
            } else {
                pages[page.index(pages.len())]
            };
            let name = page_name(num);
            let cur = s.file_bytes(&name).unwrap().len();
            s.cut(&name, len.index(cur + 1) as u64);
        }
        Damage::Checkpoint { at, bit } => {
            if let Some(cp) = s.file_bytes("checkpoint") {
                let i = at.index(cp.len());
                s.corrupt("checkpoint", i as u64, &[cp[i] ^ (1 << bit)]);
            }
        }
        Damage::Delete { page } => s.delete(&page_name(pages[page.index(pages.len())])),
    }
}

fn run_damage(
    page_capacity: u64,
    batches: &[u64],
    acked: usize,
    kill: bool,
    damages: &[Damage],
) -> Result<(), TestCaseError> {
    let cfg = QueueConfig {
        page_capacity,
        max_bytes: 64 << 20,
        checkpoint_acks: 5,
        checkpoint_writes: 3,
        ..QueueConfig::default()
    };
    let s = SimStorage::new();
    let q = open(&s, &cfg).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut next = 0;
    for &n in batches {
        q.push(&mut batch(next..next + n)).unwrap();
        next += n;
    }
    for _ in 0..acked {
        if q.stats().unread_events == 0 {
            break;
        }
        let b = q.read_batch(7, Duration::ZERO).unwrap();
        q.ack(b.token);
    }
    let s = if kill {
        let after = s.after_kill();
        std::mem::forget(q);
        after
    } else {
        q.shutdown();
        s
    };
    for d in damages {
        apply_damage(&s, d);
    }

    // Damage never keeps a queue from opening: it is found, reported and counted.
    let q = open(&s, &cfg).map_err(|e| TestCaseError::fail(format!("open: {e}")))?;
    let at_open = q.stats();
    prop_assert_eq!(at_open.unread_events, at_open.unacked_events);
    // The queue stays usable: records pushed now (before the reader meets the damage) go
    // through. Their payloads carry the sequence the queue gives them, which after damage
    // may be below `next`.
    let fresh = 5;
    let first = at_open.next_seq;
    q.push(&mut batch(first..first + fresh))
        .map_err(|e| TestCaseError::fail(format!("push after damage: {e}")))?;
    let got = drain_all(&q, at_open.unread_events as usize + 64)?;
    let st = q.stats();
    prop_assert!(
        got.windows(2).all(|w| w[0] < w[1]),
        "out of order or duplicated: {:?}",
        got
    );
    let (old, new): (Vec<u64>, Vec<u64>) = got.iter().partition(|&&i| i < first);
    prop_assert!(old.iter().all(|&i| i < next), "unknown record in {:?}", got);
    prop_assert_eq!(
        new,
        (first..first + fresh).collect::<Vec<_>>(),
        "records pushed after opening the damaged queue"
    );
    // Every record the queue held at open is either delivered or counted as lost when the
    // reader skipped it.
    prop_assert_eq!(
        old.len() as u64 + st.lost_events - at_open.lost_events,
        at_open.unread_events,
        "delivered {:?}, lost {} ({} at open)",
        got,
        st.lost_events,
        at_open.lost_events
    );
    prop_assert_eq!(st.unacked_events, 0);
    q.shutdown();
    // And a restart after that opens cleanly with nothing left.
    let q = open(&s, &cfg).map_err(|e| TestCaseError::fail(format!("reopen: {e}")))?;
    prop_assert_eq!(q.stats().unacked_events, 0);
    q.shutdown();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn recovery_never_panics_on_damage(
        page_capacity in 256u64..1024,
        batches in proptest::collection::vec(1u64..15, 1..12),
        acked in 0usize..10,
        kill in any::<bool>(),
        damages in proptest::collection::vec(damage(), 1..4),
    ) {
        run_damage(page_capacity, &batches, acked, kill, &damages)?;
    }
}

/// The byte offset of record `i`'s payload in a page that starts with record 0 and holds
/// records `0..` as pushed by these tests.
fn payload_offset(i: u64) -> u64 {
    32 + (0..i).map(|j| 16 + payload(j).len() as u64).sum::<u64>() + 16
}

fn damaged_page_cfg() -> QueueConfig {
    QueueConfig {
        page_capacity: 4096,
        max_bytes: 64 << 20,
        ..QueueConfig::default()
    }
}

/// Regression: a batch that met a damaged record after some intact ones used to drop the
/// intact ones with the rest of the page, uncounted; then the reader skipped the rest of the
/// page. Now the damaged record alone is lost, and counted.
#[test]
fn intact_records_around_a_damaged_one_are_delivered() {
    let s = SimStorage::new();
    let q = open(&s, &damaged_page_cfg()).unwrap();
    q.push(&mut batch(0..5)).unwrap();
    q.shutdown();
    s.corrupt("page.1", payload_offset(2) + 1, b"#");
    let q = open(&s, &damaged_page_cfg()).unwrap();
    assert_eq!(drain_plain(&q), [0, 1, 3, 4]);
    assert_eq!(q.stats().lost_events, 1);
    assert_eq!(q.stats().unacked_events, 0);
    q.shutdown();
}

/// Regression: records pushed after reopening a queue whose head page holds a damaged
/// unacked record used to be appended to that page, and skipped with the rest of it. Now
/// they go behind it and only the damaged record is lost.
#[test]
fn records_pushed_after_reopening_a_damaged_head_page_are_delivered() {
    let s = SimStorage::new();
    let q = open(&s, &damaged_page_cfg()).unwrap();
    q.push(&mut batch(0..3)).unwrap();
    q.shutdown();
    s.corrupt("page.1", payload_offset(1) + 1, b"#");
    let q = open(&s, &damaged_page_cfg()).unwrap();
    q.push(&mut batch(3..8)).unwrap();
    assert_eq!(drain_plain(&q), [0, 2, 3, 4, 5, 6, 7]);
    assert_eq!(q.stats().lost_events, 1);
    q.shutdown();
    // A page with nothing left to read is reused as the head, not left behind.
    let q = open(&s, &damaged_page_cfg()).unwrap();
    q.push(&mut batch(8..10)).unwrap();
    assert_eq!(q.stats().pages.len(), 1);
    assert_eq!(drain_plain(&q), [8, 9]);
    q.shutdown();
}
