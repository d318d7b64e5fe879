//! The persisted queue: append-only page files, group commit, acks, recovery.
//!
//! Roles, one file each: [`writer`] appends pushed batches to the head page and rolls over to
//! new pages; [`reader`] hands batches of records to workers and takes their acks; [`flusher`]
//! (a thread) syncs pages for waiting writers, writes checkpoints and deletes acked pages.
//!
//! Locks, always taken in this order and never held across another's wait:
//! - `write` serialises appends: the head page and write position. Held while a batch is
//!   written with one `write_at` (a copy into the page cache), during page rollover, and while
//!   a write waits for disk space.
//! - `read` serialises readers: the read cursor and its read-ahead buffer. Held while reading
//!   record bytes; a worker decodes its batch after releasing it.
//! - `state` is the shared bookkeeping (published records, acks, sizes, sync progress). Held
//!   only for counter updates; never during I/O.
//!
//! Waits: readers wait for records on `readable`, writers for room or disk space on `room`,
//! for a sync on `synced`, the flusher for work on `flush_wanted`. Each kind of sleeper is
//! counted in `state`, so that a push, an ack or a sync with nobody waiting for it makes no
//! wake-up system call, and one wakes only those who wait for what it changed: a push wakes
//! one reader (which wakes the next if it leaves records), an ack wakes writers waiting for
//! room. Readers wait without the `read` lock, so a reader waiting for records never holds up
//! another that has some to read.

pub mod flusher;
pub mod reader;
pub mod writer;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::ackset::{AckRange, AckSet};
use crate::checkpoint::CheckpointStore;
use crate::error::{is_disk_full, Context, QueueError, StorageError};
use crate::format::{Checkpoint, PageCheckpoint, PAGE_HEADER_LEN, RECORD_HEADER_LEN};
use crate::page::{create_page, page_name};

/// Spare page files kept for reuse: one is enough for a queue whose readers keep up (a page
/// is acked and spared about when the head page fills), and bounds the disk space used
/// beyond `queue.max_bytes` by one page.
const MAX_SPARES: usize = 1;
use crate::repeated::Repeated;
use crate::scan::RecordCursor;
use crate::storage::{QueueFile, Storage};

pub use reader::{Held, RawBatch, EMPTY_BATCH};
pub use writer::Written;

/// The `queue.*` settings the queue itself uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueConfig {
    pub page_capacity: u64,
    pub max_events: u64,
    pub max_bytes: u64,
    /// `queue.checkpoint.acks`: a checkpoint at least every this many acks; 0 = no limit
    /// (as Logstash: checkpoints then come with page changes, the flusher's second, a stop).
    pub checkpoint_acks: u64,
    /// `queue.checkpoint.writes`: a push returns with fewer than this many records unsynced;
    /// 0 = no limit (as Logstash: pages are synced when full, every second, and at a stop).
    pub checkpoint_writes: u64,
    /// `queue.checkpoint.retry`: retry a checkpoint file's failed rename (Logstash's
    /// `FileCheckpointIO` retries its move).
    pub checkpoint_retry: bool,
    pub drain: bool,
    /// `queue.compression`: how the writer of the payloads compresses them (the queue itself
    /// stores payloads as given; see [`crate::compression`]).
    pub compression: crate::Compression,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            page_capacity: 64 << 20,
            max_events: 0,
            max_bytes: 1024 << 20,
            checkpoint_acks: 1024,
            checkpoint_writes: 1024,
            checkpoint_retry: true,
            drain: false,
            compression: crate::Compression::None,
        }
    }
}

impl QueueConfig {
    fn validate(&self) -> Result<(), QueueError> {
        if self.page_capacity < (PAGE_HEADER_LEN + RECORD_HEADER_LEN + 1) as u64 {
            return Err(QueueError::Config(format!(
                "queue.page_capacity {} is too small",
                self.page_capacity
            )));
        }
        if self.page_capacity > u32::MAX as u64 {
            return Err(QueueError::Config(format!(
                "queue.page_capacity {} is over the 4gb limit",
                self.page_capacity
            )));
        }
        if self.max_bytes < self.page_capacity {
            return Err(QueueError::Config(format!(
                "queue.max_bytes ({}) must be at least queue.page_capacity ({})",
                self.max_bytes, self.page_capacity
            )));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy)]
struct BatchInfo {
    page: u64,
    range: AckRange,
    /// Its slot in the in-flight journal.
    slot: Option<u16>,
}

struct PageState {
    num: u64,
    first_seq: u64,
    /// Published records and bytes (header included).
    count: u64,
    bytes: u64,
    acks: AckSet,
    file: Option<Arc<dyn QueueFile>>,
}

impl PageState {
    fn new(entry: &PageCheckpoint, file: Option<Arc<dyn QueueFile>>) -> Self {
        PageState {
            num: entry.num,
            first_seq: entry.first_seq,
            count: entry.count,
            bytes: entry.bytes,
            acks: AckSet::new(entry.first_unacked_seq, entry.first_unacked_offset),
            file,
        }
    }

    fn end_seq(&self) -> u64 {
        self.first_seq + self.count
    }

    fn checkpoint(&self) -> PageCheckpoint {
        let (s, o) = self.acks.first_unacked();
        PageCheckpoint {
            num: self.num,
            first_seq: self.first_seq,
            count: self.count,
            bytes: self.bytes,
            first_unacked_seq: s,
            first_unacked_offset: o,
        }
    }
}

struct State {
    pages: VecDeque<PageState>,
    /// The page the writer appends to; `None` while a new one could not be created yet.
    head: Option<u64>,
    next_seq: u64,
    synced_seq: u64,
    unacked: u64,
    /// Published records not yet handed to a reader.
    unread: u64,
    used_bytes: u64,
    closed: bool,
    /// Readers stop without draining, whatever `queue.drain` says.
    no_drain: bool,
    stopping_flusher: bool,
    /// The flusher thread has ended.
    flusher_done: bool,
    flush_requested: bool,
    checkpoint_dirty: bool,
    acks_since_checkpoint: u64,
    unsynced_files: Vec<Arc<dyn QueueFile>>,
    pending_delete: Vec<u64>,
    /// Spare page files (see [`crate::page::reuse_spare`]), at most [`MAX_SPARES`].
    spares: Vec<String>,
    batches: HashMap<u64, BatchInfo>,
    next_token: u64,
    failed: Option<String>,
    /// Events lost to damage: found at open (missing pages, gaps) or skipped by the reader.
    lost: u64,
    full_logged: bool,
    /// Counts [`PersistedQueue::wake_readers`] calls.
    wakes: u64,
    /// Batches handed out and not acked, for the next start if this process dies
    /// ([`crate::inflight`]); `None` on storage without a local directory, or if unwritable.
    journal: Option<crate::inflight::Journal>,
    /// Records that were in flight at earlier crashes: handed out one by one, or as poison.
    suspects: crate::inflight::Suspects,
    /// Poison records handed out to be set aside.
    set_aside: u64,
    /// Sleepers on `readable`, `room` and `synced`; whether the flusher sleeps.
    readers_waiting: usize,
    room_waiting: usize,
    sync_waiting: usize,
    flusher_waiting: bool,
}

/// Figures for `queue inspect`, the monitoring API and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueStats {
    pub pages: Vec<PageCheckpoint>,
    pub unacked_events: u64,
    /// Events not yet handed to a reader.
    pub unread_events: u64,
    pub used_bytes: u64,
    pub next_seq: u64,
    /// Events lost to damaged or missing queue files since the queue was opened.
    pub lost_events: u64,
    /// Spare page files (acked pages kept whole) the writer can take as its next head pages.
    pub spares: usize,
    /// Records handed out as poison since the queue was opened (see [`crate::inflight`]).
    pub set_aside_events: u64,
}

pub struct PersistedQueue {
    inner: Arc<Inner>,
    flusher: Mutex<Option<JoinHandle<()>>>,
}

struct Inner {
    storage: Arc<dyn Storage>,
    cfg: QueueConfig,
    write: Mutex<writer::Writer>,
    read: Mutex<reader::Reader>,
    state: Mutex<State>,
    /// Records published (or lost, or all acked at a drain), a wake, close.
    readable: Condvar,
    /// Space freed by acks, close, failure.
    room: Condvar,
    /// Sync progress, failure, the flusher's end.
    synced: Condvar,
    /// Wakes the flusher.
    flush_wanted: Condvar,
    checkpoints: Mutex<CheckpointStore>,
    shut_down: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves its data consistent before anything that can panic.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Inner {
    /// Runs `op`, retrying with back-off while the disk is full (logged as [`Repeated`]
    /// does); gives up with [`QueueError::Closed`] once the queue closes. Any other error fails
    /// the queue: a file system that fails writes or syncs for other reasons (EIO, a read-only
    /// remount) does not heal by itself, and pretending otherwise would hang every writer.
    fn retry_while_full<T>(
        &self,
        what: &dyn Fn() -> String,
        op: impl FnMut() -> Result<T, StorageError>,
    ) -> Result<T, QueueError> {
        self.retry_while_full_unless(what, op, |_| false)
            .map(|v| v.expect("never gives way"))
    }

    /// [`Inner::retry_while_full`], except that while the disk is full it asks `give_way`
    /// (with the state locked) whether waiting can end another way, and then returns `None`
    /// instead of retrying: a head page whose records are all acked lets the writer roll over
    /// to a page made from the freed space, instead of waiting for space that only the head
    /// page's own bytes hold.
    fn retry_while_full_unless<T>(
        &self,
        what: &dyn Fn() -> String,
        mut op: impl FnMut() -> Result<T, StorageError>,
        give_way: impl Fn(&State) -> bool,
    ) -> Result<Option<T>, QueueError> {
        let mut delay = Duration::from_millis(10);
        let mut log: Option<Repeated> = None;
        loop {
            match op() {
                Ok(v) => {
                    if let Some(log) = &mut log {
                        log.succeeded();
                    }
                    return Ok(Some(v));
                }
                Err(e) if e.is_disk_full() => {
                    // Woken early by acks (which may free space) and by close.
                    let st = lock(&self.state);
                    if st.closed {
                        return Err(QueueError::Closed);
                    }
                    if give_way(&st) {
                        if let Some(log) = &mut log {
                            log.succeeded();
                        }
                        return Ok(None);
                    }
                    drop(st);
                    log.get_or_insert_with(|| Repeated::new(what()))
                        .failed(&e, "retrying (writers wait, nothing queued is lost)");
                    let mut st = lock(&self.state);
                    if !st.spares.is_empty() {
                        // Spare pages give their space back first.
                        let spares = std::mem::take(&mut st.spares);
                        drop(st);
                        self.remove_spares(&spares);
                        continue;
                    }
                    st.room_waiting += 1;
                    let mut st = self
                        .room
                        .wait_timeout(st, delay)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                    st.room_waiting -= 1;
                    drop(st);
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
                Err(e) => {
                    let msg = e.to_string();
                    tracing::error!(queue = %self.storage.describe(), "{msg}; the queue accepts no more writes");
                    lock(&self.state).failed = Some(msg.clone());
                    self.wake_all();
                    return Err(QueueError::Failed(msg));
                }
            }
        }
    }
}

impl PersistedQueue {
    /// Opens (recovering) or creates the queue in `storage`. Opening needs no new disk space:
    /// on a full disk the queue opens, its events can be read and acked (freeing space), and
    /// writers wait for space.
    pub fn open(
        storage: Arc<dyn Storage>,
        cfg: QueueConfig,
    ) -> Result<Arc<PersistedQueue>, QueueError> {
        Self::open_numbering_from(storage, cfg, 0)
    }

    /// [`PersistedQueue::open`], giving new records sequences from `first_seq` on at least:
    /// a queue rebuilt by `queue repair` goes on from the old one's numbering, so that no
    /// sequence (and no replay-safe id made of it) is given to two events.
    pub fn open_numbering_from(
        storage: Arc<dyn Storage>,
        cfg: QueueConfig,
        first_seq: u64,
    ) -> Result<Arc<PersistedQueue>, QueueError> {
        cfg.validate()?;
        let location = storage.describe();
        let fail = |source| QueueError::Storage {
            location: location.clone(),
            source,
        };
        let recovered = crate::recovery::recover(storage.as_ref())?;
        let mut checkpoints =
            CheckpointStore::new(Arc::clone(&storage), &recovered.checkpoint).map_err(fail)?;
        checkpoints.set_retry(cfg.checkpoint_retry);
        let mut pages: VecDeque<PageState> = recovered
            .pages
            .iter()
            .map(|p| PageState::new(&p.entry, None))
            .collect();
        let next_seq = recovered.next_seq.max(first_seq);
        // The checkpoint, rewritten now (in place: no new space) to say what recovery found:
        // from here on the last page is the open-ended one, scanned from its end at the next
        // start, whatever the previous checkpoint said (its head page may be gone, or cut
        // short below what it vouched for). A queue without a checkpoint file gets one here,
        // before any record relies on it.
        let cp = Checkpoint {
            next_seq,
            pages: pages.iter().map(PageState::checkpoint).collect(),
        };
        let checkpointed = match checkpoints.write(&cp) {
            Ok(()) => true,
            Err(e) if e.is_disk_full() => {
                tracing::warn!(
                    queue = %location,
                    "no disk space for the queue's checkpoint ({e}); acked pages are freed once it can be written"
                );
                false
            }
            Err(e) => return Err(fail(e)),
        };
        // New records go on after the last page's, in its file when it ends where its valid
        // data does (any damage inside is skipped by the reader, record by record, so records
        // appended behind it are safe) and its last sequence is the last given out; in a new
        // page when the file was cut short, when sequences were given out past it (records
        // lost, or acked pages gone), or when no checkpoint could say that the last page is
        // open-ended.
        let mut head = None;
        let reusable = |p: &&mut PageState| checkpointed && p.end_seq() == next_seq;
        if let Some(p) = pages.back_mut().filter(reusable) {
            let file = storage
                .open(&page_name(p.num))
                .context(|| format!("opening queue page {}", p.num))
                .map_err(fail)?;
            let len = file
                .len()
                .context(|| format!("reading queue page {}", p.num))
                .map_err(fail)?;
            if len == p.bytes {
                p.file = Some(Arc::clone(&file));
                head = Some(writer::Head::new(file, p.num, p.bytes, len, next_seq));
            }
        }
        let mut next_page = recovered
            .last_page_num
            .max(head.as_ref().map_or(0, |h| h.num))
            + 1;
        if head.is_none() {
            tracing::debug!(queue = %location, page = next_page, "starting a new head page");
            match create_page(storage.as_ref(), next_page, next_seq) {
                Ok(file) => {
                    let entry = PageCheckpoint::empty(next_page, next_seq);
                    pages.push_back(PageState::new(&entry, Some(Arc::clone(&file))));
                    let header = PAGE_HEADER_LEN as u64;
                    head = Some(writer::Head::new(file, next_page, header, header, next_seq));
                    next_page += 1;
                }
                // The first push creates it, waiting for space.
                Err(e) if is_disk_full(&e) => tracing::warn!(
                    queue = %location,
                    "no disk space for a new queue page ({e}); the first push will wait for space"
                ),
                Err(e) => {
                    return Err(fail(StorageError::new(
                        format!("creating queue page {next_page}"),
                        e,
                    )))
                }
            }
        }
        let unacked = pages
            .iter()
            .map(|p| p.end_seq() - p.acks.first_unacked().0)
            .sum();
        let used_bytes = pages.iter().map(|p| p.bytes).sum();
        let lost = recovered.lost_before_reading();
        let reader = reader::Reader::new(pages.front());
        let (journal, suspects) = match storage.local_dir() {
            Some(dir) => {
                let first_unacked = pages.front().map_or(next_seq, |p| p.acks.first_unacked().0);
                let inflight = crate::inflight::read_inflight(dir);
                let suspects =
                    crate::inflight::Suspects::read(dir).after_crash(&inflight, first_unacked);
                report_suspects(&location, &inflight, &suspects);
                suspects.write(dir);
                (crate::inflight::Journal::create(dir), suspects)
            }
            None => (None, crate::inflight::Suspects::default()),
        };
        let head_num = head.as_ref().map(|h| h.num);
        tracing::info!(
            queue = %location,
            pages = pages.len(),
            unacked_events = unacked,
            bytes = used_bytes,
            "opened persisted queue"
        );
        let inner = Arc::new(Inner {
            write: Mutex::new(writer::Writer::new(head, next_page, next_seq)),
            read: Mutex::new(reader),
            state: Mutex::new(State {
                head: head_num,
                pages,
                next_seq,
                synced_seq: next_seq,
                unacked,
                unread: unacked,
                used_bytes,
                closed: false,
                no_drain: false,
                stopping_flusher: false,
                flusher_done: false,
                flush_requested: false,
                wakes: 0,
                journal,
                suspects,
                set_aside: 0,
                readers_waiting: 0,
                room_waiting: 0,
                sync_waiting: 0,
                flusher_waiting: false,
                checkpoint_dirty: true,
                acks_since_checkpoint: 0,
                unsynced_files: Vec::new(),
                pending_delete: recovered.stale,
                spares: Vec::new(),
                batches: HashMap::new(),
                next_token: 1,
                failed: None,
                lost,
                full_logged: false,
            }),
            readable: Condvar::new(),
            room: Condvar::new(),
            synced: Condvar::new(),
            flush_wanted: Condvar::new(),
            checkpoints: Mutex::new(checkpoints),
            shut_down: AtomicBool::new(false),
            storage,
            cfg,
        });
        let worker = Arc::clone(&inner);
        let handle = std::thread::Builder::new()
            .name("queue-flusher".to_owned())
            .spawn(move || worker.flusher_thread())
            .map_err(|e| fail(StorageError::new("starting the queue flusher thread", e)))?;
        Ok(Arc::new(PersistedQueue {
            inner,
            flusher: Mutex::new(Some(handle)),
        }))
    }

    pub fn config(&self) -> &QueueConfig {
        &self.inner.cfg
    }

    /// Appends a batch; blocks while the queue is full or the disk has no space. Returns once
    /// the records are in the page file and, per `checkpoint.writes`, synced.
    pub fn push(&self, batch: &mut crate::format::RecordBatch) -> Result<(), QueueError> {
        self.inner.push(batch, &mut |_| {})
    }

    /// [`PersistedQueue::push`], calling `written` for each run of the batch's records once
    /// it is in the page file and before any reader can take it: the caller can keep the
    /// records' source and hand it to readers itself ([`PersistedQueue::read_batch_with`];
    /// see `PersistedEventQueue` in the pipeline crate). Runs come in order, under the
    /// queue's write lock, so `written` must be quick.
    pub fn push_with(
        &self,
        batch: &mut crate::format::RecordBatch,
        written: &mut dyn FnMut(Written),
    ) -> Result<(), QueueError> {
        self.inner.push(batch, written)
    }

    /// Takes up to `max` records. Waits for a first record, then at most `delay` for more.
    /// `None` once the queue is closed (and, with `queue.drain`, empty).
    pub fn read_batch(&self, max: usize, delay: Duration) -> Option<RawBatch> {
        self.inner
            .read_batch(max, delay, &mut |_, _, _| Held::default())
    }

    /// [`PersistedQueue::read_batch`] for a caller that keeps what it pushed: before reading
    /// records at `(page, seq)`, the queue asks `held(page, seq, max)` whether the caller
    /// holds the next records itself. If it takes some ([`Held::taken`], ending at
    /// [`Held::end`], from what [`Written::ends`] said), the batch is those records, without
    /// their bytes ([`RawBatch::held`]), and the reader moves past them without reading
    /// them; otherwise the records are read, up to the next one the caller holds
    /// ([`Held::next`]). Called under the queue's read lock, so `held` must be quick. The
    /// records are on disk all the same (written, synced, acked as any); only their reading
    /// back is skipped.
    pub fn read_batch_with(
        &self,
        max: usize,
        delay: Duration,
        held: &mut dyn FnMut(u64, u64, u64) -> Held,
    ) -> Option<RawBatch> {
        self.inner.read_batch(max, delay, held)
    }

    /// Readers waiting on an empty queue return an empty batch now (token
    /// [`EMPTY_BATCH`], which acks nothing): a periodic flush's tick.
    pub fn wake_readers(&self) {
        let mut st = lock(&self.inner.state);
        st.wakes += 1;
        if st.readers_waiting > 0 {
            self.inner.readable.notify_all();
        }
    }

    /// Marks a batch's records as processed. Unknown tokens are ignored.
    pub fn ack(&self, token: u64) {
        self.inner.ack(token)
    }

    /// Stops accepting writes and wakes everyone: writers waiting for room or disk space
    /// return [`QueueError::Closed`]; readers stop (or, with `queue.drain`, drain first).
    pub fn close(&self) {
        self.inner.close()
    }

    /// Closes without draining, whatever `queue.drain` says: for a pipeline that stopped
    /// delivering (its output is gone), whose unacked batches must wait for the next start.
    pub fn close_without_drain(&self) {
        lock(&self.inner.state).no_drain = true;
        self.inner.close();
    }

    /// Closes, syncs, writes the final checkpoint and stops the flusher. Call after every
    /// reader has acked its last batch: then a restart replays nothing twice. Dropping the
    /// queue does the same.
    pub fn shutdown(&self) {
        let inner = &self.inner;
        if inner.shut_down.swap(true, Ordering::SeqCst) {
            return;
        }
        inner.close();
        let mut st = lock(&inner.state);
        st.stopping_flusher = true;
        st.checkpoint_dirty = true;
        inner.request_flush(&mut st);
        drop(st);
        if let Some(h) = lock(&self.flusher).take() {
            let _ = h.join();
        }
        // A head page made from a spare ends where its records do, so the next start goes
        // on in it without scanning old records; spares are not kept across runs.
        if let Some(head) = lock(&inner.write).head_mut() {
            let num = head.num;
            let cut = head.cut_spare_tail().and_then(|cut| match cut {
                true => head
                    .file
                    .sync()
                    .context(|| format!("syncing queue page {num}")),
                false => Ok(()),
            });
            if let Err(e) = cut {
                tracing::warn!(queue = %inner.storage.describe(), error = %e, "the next start cuts the old records of the head page");
            }
        }
        let spares = std::mem::take(&mut lock(&inner.state).spares);
        inner.remove_spares(&spares);
        // A stop, not a crash: what was in flight is not suspect.
        if let Some(journal) = lock(&inner.state).journal.take() {
            journal.remove();
        }
    }

    pub fn stats(&self) -> QueueStats {
        let st = lock(&self.inner.state);
        QueueStats {
            pages: st.pages.iter().map(PageState::checkpoint).collect(),
            unacked_events: st.unacked,
            unread_events: st.unread,
            used_bytes: st.used_bytes,
            next_seq: st.next_seq,
            lost_events: st.lost,
            spares: st.spares.len(),
            set_aside_events: st.set_aside,
        }
    }
}

impl Drop for PersistedQueue {
    fn drop(&mut self) {
        // The flusher thread holds the inner state, not this handle: stop it.
        self.shutdown();
    }
}

impl Inner {
    fn remove_spares(&self, names: &[String]) {
        for name in names {
            if let Err(e) = self.storage.remove(name) {
                tracing::warn!(file = %name, error = %e, "removing a spare queue page failed; it is removed at the next start");
            }
        }
    }

    fn request_flush(&self, st: &mut State) {
        st.flush_requested = true;
        if st.flusher_waiting {
            self.flush_wanted.notify_one();
        }
    }

    fn close(&self) {
        let mut st = lock(&self.state);
        st.closed = true;
        drop(st);
        self.wake_all();
    }

    /// Wakes every sleeper but the flusher: the queue closed or failed, or the flusher ended.
    fn wake_all(&self) {
        self.readable.notify_all();
        self.room.notify_all();
        self.synced.notify_all();
    }

    /// After acks (or records lost): writers waiting for room may go on, and at a draining
    /// close readers wait for the last acks.
    fn acked(&self, st: &State) {
        if st.room_waiting > 0 {
            self.room.notify_all();
        }
        if st.closed && st.readers_waiting > 0 {
            self.readable.notify_all();
        }
    }

    /// Pages whose every record is acked leave the page list (all but the head page); the
    /// flusher deletes their files once a checkpoint no longer names them. Writers waiting for
    /// the room this frees are woken by the caller's [`Inner::acked`] (a writer calls this
    /// holding the `write` lock, so no other writer can be waiting for room then).
    fn release_acked_pages(&self, st: &mut State) {
        let head = st.head;
        let mut freed = 0;
        let mut i = 0;
        while i < st.pages.len() {
            let p = &st.pages[i];
            if Some(p.num) != head && p.acks.all_acked_before(p.end_seq()) {
                let p = st.pages.remove(i).expect("index in range");
                freed += p.bytes;
                st.pending_delete.push(p.num);
            } else {
                i += 1;
            }
        }
        if freed > 0 {
            st.used_bytes -= freed;
            st.checkpoint_dirty = true;
            if st.flusher_waiting {
                self.flush_wanted.notify_one();
            }
        }
    }
}

/// Says what the start found of a crash: the batches in flight when the last process died,
/// and the records now set aside as poison.
fn report_suspects(
    location: &str,
    inflight: &[std::ops::Range<u64>],
    suspects: &crate::inflight::Suspects,
) {
    if inflight.is_empty() {
        return;
    }
    let events: u64 = inflight.iter().map(|r| r.end - r.start).sum();
    tracing::warn!(
        queue = %location,
        "the last run ended without a stop while processing {} batch(es) ({events} event(s)); their events are processed one at a time, so that one that crashes the process again is found and set aside",
        inflight.len()
    );
    for (r, n) in &suspects.ranges {
        if *n >= crate::inflight::POISON_AFTER && r.end - r.start == 1 {
            tracing::error!(
                queue = %location,
                sequence = r.start,
                crashes = n,
                "queued event {} was being processed at {n} crashes: it is set aside (dead letter queue, or skipped)",
                r.start
            );
        }
    }
}

/// A `queue.checkpoint.*` count as a limit: 0 (no limit, as in Logstash) is the largest number.
fn limit(setting: u64) -> u64 {
    match setting {
        0 => u64::MAX,
        n => n,
    }
}

/// Puts the reader's cursor on a page it moves to: at its first unacked record (keeping the
/// cursor's buffer allocation).
fn move_to(cursor: &mut RecordCursor, p: &PageState) {
    let (seq, offset) = p.acks.first_unacked();
    cursor.reset(offset, seq.max(p.first_seq));
}
