//! The persisted queue: append-only page files, group commit, acks, recovery.
//!
//! Locks, always taken in this order and never held across another's wait:
//! - `write` serialises appends: the head page handle and write position. Held while a batch
//!   is written with one `write_at` (a copy into the page cache) and during page rollover.
//! - `read` serialises readers: the read cursor and its read-ahead buffer. Held while reading
//!   record bytes; a worker decodes its batch after releasing it.
//! - `state` is the shared bookkeeping (published records, acks, sizes, sync progress). Held
//!   only for counter updates; never during I/O.
//!
//! Durability: a push returns once its records are in the page file (so a killed process
//! loses nothing). With `checkpoint.writes = N`, the push that leaves N or more records
//! unsynced waits until a sync covers it; one flusher thread syncs for every waiting writer
//! at once (group commit), so `N = 1` costs one fsync per *round*, not per writer. A push
//! that leaves N/2 unsynced asks for a sync without waiting, so writers rarely reach N. The
//! flusher also writes checkpoints (every `checkpoint.acks` acks, at rollover, at close) and
//! deletes fully acked pages after a checkpoint that no longer lists them.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::ackset::{AckRange, AckSet};
use crate::format::{
    scan_record, Checkpoint, PageCheckpoint, PageHeader, RecordBatch, Scan, PAGE_HEADER_LEN,
    RECORD_HEADER_LEN,
};
use crate::storage::{PageFile, Storage};

/// The `queue.*` settings the queue itself uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueConfig {
    pub page_capacity: u64,
    pub max_events: u64,
    pub max_bytes: u64,
    pub checkpoint_acks: u64,
    pub checkpoint_writes: u64,
    pub drain: bool,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            page_capacity: 64 << 20,
            max_events: 0,
            max_bytes: 1024 << 20,
            checkpoint_acks: 1024,
            checkpoint_writes: 1024,
            drain: false,
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    #[error("the queue is closed")]
    Closed,
    #[error("an event of {size} bytes does not fit in a page: queue.page_capacity is {page_capacity} bytes (each page also holds a {header}-byte header and each record a {record}-byte header)", header = PAGE_HEADER_LEN, record = RECORD_HEADER_LEN)]
    TooLarge { size: usize, page_capacity: u64 },
    #[error("invalid queue settings: {0}")]
    Config(String),
    #[error("queue at {location} is corrupt: {message} (run `sluice queue verify {location}`, then `sluice queue repair {location}`)")]
    Corrupt { location: String, message: String },
    #[error("queue I/O error: {0}")]
    Io(#[from] io::Error),
    #[error("the queue failed earlier and accepts no more writes: {0}")]
    Failed(String),
}

/// Records read from the queue, to be acked with `token` once processed.
#[derive(Debug, Default)]
pub struct RawBatch {
    pub data: Vec<u8>,
    /// Each record's payload range in `data`.
    pub records: Vec<std::ops::Range<usize>>,
    pub first_seq: u64,
    pub token: u64,
}

#[derive(Debug, Clone, Copy)]
struct BatchInfo {
    page: u64,
    range: AckRange,
}

struct PageState {
    num: u64,
    first_seq: u64,
    /// Published records and bytes (header included).
    count: u64,
    bytes: u64,
    acks: AckSet,
    file: Option<Arc<dyn PageFile>>,
}

impl PageState {
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
    next_seq: u64,
    synced_seq: u64,
    unacked: u64,
    /// Published records not yet handed to a reader.
    unread: u64,
    used_bytes: u64,
    closed: bool,
    stopping_flusher: bool,
    flush_requested: bool,
    checkpoint_dirty: bool,
    acks_since_checkpoint: u64,
    unsynced_files: Vec<Arc<dyn PageFile>>,
    pending_delete: Vec<u64>,
    batches: HashMap<u64, BatchInfo>,
    next_token: u64,
    failed: Option<String>,
    corrupt_skipped: u64,
    full_logged: bool,
}

struct Writer {
    head: Arc<dyn PageFile>,
    head_num: u64,
    offset: u64,
    next_seq: u64,
}

struct Reader {
    page: u64,
    offset: u64,
    seq: u64,
    buf: Vec<u8>,
    /// File offset of `buf[0]` in page `buf_page`.
    buf_offset: u64,
    buf_page: u64,
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
    pub corrupt_records_skipped: u64,
}

pub struct PersistedQueue {
    storage: Arc<dyn Storage>,
    cfg: QueueConfig,
    write: Mutex<Writer>,
    read: Mutex<Reader>,
    state: Mutex<State>,
    /// Published records, freed space, sync progress, close.
    changed: Condvar,
    /// Wakes the flusher.
    flush_wanted: Condvar,
    flusher: Mutex<Option<JoinHandle<()>>>,
    shut_down: AtomicBool,
}

/// Bytes a reader fetches from a page file at once.
const READ_CHUNK: usize = 1 << 20;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves its data consistent before anything that can panic.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Retries `op` with back-off while it fails with an I/O error, logging once; gives up when
/// `give_up` says so.
fn retry_io<T>(
    what: &str,
    give_up: &dyn Fn() -> bool,
    mut op: impl FnMut() -> io::Result<T>,
) -> Result<T, QueueError> {
    let mut delay = Duration::from_millis(10);
    let mut logged = false;
    loop {
        match op() {
            Ok(v) => {
                if logged {
                    tracing::info!("{what}: succeeded after retrying");
                }
                return Ok(v);
            }
            Err(e) => {
                if give_up() {
                    return Err(QueueError::Closed);
                }
                if !logged {
                    tracing::warn!(
                        "{what} failed: {e}; retrying (writers wait, nothing queued is lost)"
                    );
                    logged = true;
                }
                std::thread::sleep(delay);
                delay = (delay * 2).min(Duration::from_secs(1));
            }
        }
    }
}

impl PersistedQueue {
    /// Opens (recovering) or creates the queue in `storage`.
    pub fn open(
        storage: Arc<dyn Storage>,
        cfg: QueueConfig,
    ) -> Result<Arc<PersistedQueue>, QueueError> {
        if cfg.page_capacity < (PAGE_HEADER_LEN + RECORD_HEADER_LEN + 1) as u64 {
            return Err(QueueError::Config(format!(
                "queue.page_capacity {} is too small",
                cfg.page_capacity
            )));
        }
        if cfg.page_capacity > u32::MAX as u64 {
            return Err(QueueError::Config(format!(
                "queue.page_capacity {} is over the 4gb limit",
                cfg.page_capacity
            )));
        }
        if cfg.max_bytes < cfg.page_capacity {
            return Err(QueueError::Config(format!(
                "queue.max_bytes ({}) must be at least queue.page_capacity ({})",
                cfg.max_bytes, cfg.page_capacity
            )));
        }
        let recovered = crate::recovery::recover(storage.as_ref())?;
        let mut pages: VecDeque<PageState> = recovered
            .pages
            .iter()
            .map(|p| PageState {
                num: p.num,
                first_seq: p.first_seq,
                count: p.count,
                bytes: p.bytes,
                acks: AckSet::new(p.first_unacked_seq, p.first_unacked_offset),
                file: None,
            })
            .collect();
        let next_seq = recovered.next_seq;
        // The head page: the last recovered one if it holds no unacked record, else a new
        // one (as Logstash does). New records never go behind unacked records written by an
        // earlier process: if those are damaged, the reader skips the rest of their page,
        // which would take the new records with it.
        let reuse = pages
            .back()
            .is_some_and(|p| p.acks.first_unacked().0 >= p.end_seq());
        let (head, head_num, offset) = match pages.back_mut().filter(|_| reuse) {
            Some(p) => {
                let f = storage.open_page(p.num)?;
                p.file = Some(Arc::clone(&f));
                (f, p.num, p.bytes)
            }
            None => {
                let num = (recovered.last_page_num.into_iter())
                    .chain(pages.back().map(|p| p.num))
                    .max()
                    .map_or(1, |n| n + 1);
                let header = PageHeader {
                    num,
                    first_seq: next_seq,
                }
                .encode();
                let f = storage.create_page(num, &header)?;
                pages.push_back(PageState {
                    num,
                    first_seq: next_seq,
                    count: 0,
                    bytes: PAGE_HEADER_LEN as u64,
                    acks: AckSet::new(next_seq, PAGE_HEADER_LEN as u64),
                    file: Some(Arc::clone(&f)),
                });
                (f, num, PAGE_HEADER_LEN as u64)
            }
        };
        let unacked = pages
            .iter()
            .map(|p| p.end_seq() - p.acks.first_unacked().0)
            .sum();
        let used_bytes = pages.iter().map(|p| p.bytes).sum();
        let front = pages.front().expect("at least the head page");
        let reader = Reader {
            page: front.num,
            offset: front.acks.first_unacked().1,
            seq: front.acks.first_unacked().0,
            buf: Vec::new(),
            buf_offset: 0,
            buf_page: u64::MAX,
        };
        tracing::info!(
            queue = %storage.describe(),
            pages = pages.len(),
            unacked_events = unacked,
            bytes = used_bytes,
            "opened persisted queue{}",
            if recovered.notes.is_empty() { String::new() } else { format!(": {}", recovered.notes.join("; ")) }
        );
        let q = Arc::new(PersistedQueue {
            storage,
            write: Mutex::new(Writer {
                head,
                head_num,
                offset,
                next_seq,
            }),
            read: Mutex::new(reader),
            state: Mutex::new(State {
                pages,
                next_seq,
                synced_seq: next_seq,
                unacked,
                unread: unacked,
                used_bytes,
                closed: false,
                stopping_flusher: false,
                flush_requested: false,
                checkpoint_dirty: true,
                acks_since_checkpoint: 0,
                unsynced_files: Vec::new(),
                pending_delete: recovered.stale_pages,
                batches: HashMap::new(),
                next_token: 1,
                failed: None,
                corrupt_skipped: 0,
                full_logged: false,
            }),
            changed: Condvar::new(),
            flush_wanted: Condvar::new(),
            flusher: Mutex::new(None),
            shut_down: AtomicBool::new(false),
            cfg,
        });
        let worker = Arc::clone(&q);
        let handle = std::thread::Builder::new()
            .name("queue-flusher".to_owned())
            .spawn(move || worker.flusher_loop())?;
        *lock(&q.flusher) = Some(handle);
        Ok(q)
    }

    pub fn config(&self) -> &QueueConfig {
        &self.cfg
    }

    fn request_flush(&self, st: &mut State) {
        st.flush_requested = true;
        self.flush_wanted.notify_one();
    }

    /// Appends a batch; blocks while the queue is full. Returns once the records are in the
    /// page file and, per `checkpoint.writes`, synced.
    pub fn push(&self, batch: &mut RecordBatch) -> Result<(), QueueError> {
        let n = batch.len();
        if n == 0 {
            return Ok(());
        }
        let room = self.cfg.page_capacity - PAGE_HEADER_LEN as u64;
        for i in 0..n {
            if batch.record_size(i) as u64 > room {
                return Err(QueueError::TooLarge {
                    size: batch.record_size(i) - RECORD_HEADER_LEN,
                    page_capacity: self.cfg.page_capacity,
                });
            }
        }
        let mut w = lock(&self.write);
        self.wait_for_space(n as u64, batch.bytes() as u64)?;
        let mut i = 0;
        while i < n {
            let room = self.cfg.page_capacity - w.offset;
            let (mut j, mut bytes) = (i, 0u64);
            while j < n && bytes + batch.record_size(j) as u64 <= room {
                bytes += batch.record_size(j) as u64;
                j += 1;
            }
            if j == i {
                self.rollover(&mut w)?;
                continue;
            }
            let first_seq = w.next_seq;
            let data = batch.stamp(i..j, first_seq);
            let (head, offset) = (Arc::clone(&w.head), w.offset);
            retry_io(
                &format!("writing queue page {}", w.head_num),
                &|| lock(&self.state).closed,
                || head.write_at(offset, data),
            )?;
            w.offset += bytes;
            w.next_seq += (j - i) as u64;
            let mut st = lock(&self.state);
            let page = st.pages.back_mut().expect("head page");
            debug_assert_eq!(page.num, w.head_num);
            page.count += (j - i) as u64;
            page.bytes += bytes;
            st.next_seq = w.next_seq;
            st.unacked += (j - i) as u64;
            st.unread += (j - i) as u64;
            st.used_bytes += bytes;
            drop(st);
            self.changed.notify_all();
            i = j;
        }
        let end_seq = w.next_seq;
        drop(w);
        let mut st = lock(&self.state);
        let limit = self.cfg.checkpoint_writes.max(1);
        let unsynced = end_seq.saturating_sub(st.synced_seq);
        if unsynced < limit && unsynced >= limit.div_ceil(2) && !st.flush_requested {
            // Halfway to the limit: start a sync now, so that it is usually done before a
            // push reaches the limit and would have to wait for one.
            self.request_flush(&mut st);
        }
        if unsynced >= limit {
            self.request_flush(&mut st);
            while st.synced_seq < end_seq {
                if let Some(f) = &st.failed {
                    return Err(QueueError::Failed(f.clone()));
                }
                st = self.changed.wait(st).unwrap_or_else(|p| p.into_inner());
            }
        }
        Ok(())
    }

    fn wait_for_space(&self, events: u64, bytes: u64) -> Result<(), QueueError> {
        let mut st = lock(&self.state);
        loop {
            if st.closed {
                return Err(QueueError::Closed);
            }
            if let Some(f) = &st.failed {
                return Err(QueueError::Failed(f.clone()));
            }
            // An empty queue always takes a batch, so a batch that alone exceeds a limit
            // cannot hang its writer (Logstash #16172).
            let empty = st.unacked == 0;
            let events_ok = self.cfg.max_events == 0 || st.unacked + events <= self.cfg.max_events;
            let bytes_ok = st.used_bytes + bytes <= self.cfg.max_bytes;
            if empty || (events_ok && bytes_ok) {
                st.full_logged = false;
                return Ok(());
            }
            if !st.full_logged {
                st.full_logged = true;
                tracing::debug!(
                    unacked = st.unacked,
                    bytes = st.used_bytes,
                    "queue full (queue.max_events / queue.max_bytes): inputs wait for acks"
                );
            }
            st = self.changed.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Starts a new head page. The old head becomes a tail page; the flusher syncs it.
    fn rollover(&self, w: &mut Writer) -> Result<(), QueueError> {
        let num = w.head_num + 1;
        let header = PageHeader {
            num,
            first_seq: w.next_seq,
        }
        .encode();
        let file = retry_io(
            &format!("creating queue page {num}"),
            &|| lock(&self.state).closed,
            || match self.storage.create_page(num, &header) {
                // A file left by an attempt that failed half-way: start it again.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    self.storage.remove_page(num)?;
                    self.storage.create_page(num, &header)
                }
                other => other,
            },
        )?;
        let old = std::mem::replace(&mut w.head, Arc::clone(&file));
        w.head_num = num;
        w.offset = PAGE_HEADER_LEN as u64;
        let mut st = lock(&self.state);
        st.unsynced_files.push(old);
        st.pages.push_back(PageState {
            num,
            first_seq: w.next_seq,
            count: 0,
            bytes: PAGE_HEADER_LEN as u64,
            acks: AckSet::new(w.next_seq, PAGE_HEADER_LEN as u64),
            file: Some(file),
        });
        st.used_bytes += PAGE_HEADER_LEN as u64;
        st.checkpoint_dirty = true;
        self.release_acked_tails(&mut st);
        self.request_flush(&mut st);
        Ok(())
    }

    /// Tail pages whose every record is acked leave the page list; the flusher deletes their
    /// files once a checkpoint no longer names them.
    fn release_acked_tails(&self, st: &mut State) {
        let head = st.pages.back().map(|p| p.num);
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
            self.changed.notify_all();
            self.flush_wanted.notify_one();
        }
    }

    /// Takes up to `max` records. Waits for a first record, then at most `delay` for more.
    /// `None` once the queue is closed (and, with `queue.drain`, empty).
    pub fn read_batch(&self, max: usize, delay: Duration) -> Option<RawBatch> {
        let max = max.max(1) as u64;
        let mut r = lock(&self.read);
        let mut deadline: Option<Instant> = None;
        let (file, end_offset, available) = loop {
            let mut st = lock(&self.state);
            // Move past pages that are fully read or gone.
            let pos = st.pages.iter().position(|p| p.num >= r.page);
            let Some(pos) = pos else {
                unreachable!("the head page is always listed")
            };
            if st.pages[pos].num != r.page
                || (r.seq >= st.pages[pos].end_seq() && pos + 1 < st.pages.len())
            {
                let next = if st.pages[pos].num != r.page {
                    pos
                } else {
                    pos + 1
                };
                let p = &st.pages[next];
                let (s, o) = p.acks.first_unacked();
                r.page = p.num;
                r.seq = s.max(p.first_seq);
                r.offset = o;
                continue;
            }
            let p = &st.pages[pos];
            let available = p.end_seq().saturating_sub(r.seq);
            if st.closed && !(self.cfg.drain && st.unacked > 0) {
                return None;
            }
            if available > 0 {
                let now = Instant::now();
                let d = *deadline.get_or_insert(now + delay);
                if available >= max || now >= d || st.closed {
                    if p.file.is_none() {
                        match self.storage.open_page(p.num) {
                            Ok(f) => st.pages[pos].file = Some(f),
                            Err(e) => {
                                tracing::error!(page = r.page, error = %e, "cannot open queue page; skipping its records");
                                let skip = st.pages[pos].end_seq() - r.seq;
                                st.corrupt_skipped += skip;
                                st.unread -= skip;
                                r.seq += skip;
                                continue;
                            }
                        }
                    }
                    let p = &st.pages[pos];
                    break (
                        Arc::clone(p.file.as_ref().expect("opened above")),
                        p.bytes,
                        available.min(max),
                    );
                }
                let _ = self.changed.wait_timeout(st, d - now);
            } else {
                drop(self.changed.wait(st).unwrap_or_else(|p| p.into_inner()));
            }
        };
        let batch = self.read_records(&mut r, file.as_ref(), end_offset, available);
        drop(r);
        let mut st = lock(&self.state);
        match batch {
            Ok((mut raw, range)) => {
                let token = st.next_token;
                st.next_token += 1;
                st.batches.insert(
                    token,
                    BatchInfo {
                        page: range.0,
                        range: range.1,
                    },
                );
                st.unread -= range.1.end_seq - range.1.start_seq;
                raw.token = token;
                Some(raw)
            }
            Err((page, range, skipped, why)) => {
                // Corrupt data inside published bytes: skip the rest of the page, count it,
                // and ack it so the page can go (never spin on a bad record).
                tracing::error!(page, skipped, reason = %why, "corrupt record in queue page; skipping the rest of the page");
                st.corrupt_skipped += skipped;
                st.unread -= range.end_seq - range.start_seq;
                let token = st.next_token;
                st.next_token += 1;
                st.batches.insert(token, BatchInfo { page, range });
                drop(st);
                self.ack(token);
                Some(RawBatch {
                    token: 0,
                    ..RawBatch::default()
                })
            }
        }
    }

    /// Reads `count` records at the reader's position (under the read lock only).
    #[allow(clippy::type_complexity)]
    fn read_records(
        &self,
        r: &mut Reader,
        file: &dyn PageFile,
        end_offset: u64,
        count: u64,
    ) -> Result<(RawBatch, (u64, AckRange)), (u64, AckRange, u64, String)> {
        let mut out = RawBatch {
            first_seq: r.seq,
            ..RawBatch::default()
        };
        let start_seq = r.seq;
        let mut want = end_offset - r.offset;
        let mut taken = 0;
        while taken < count {
            let in_buf = r.buf_page == r.page
                && r.offset >= r.buf_offset
                && r.offset < r.buf_offset + r.buf.len() as u64;
            let at = if in_buf {
                (r.offset - r.buf_offset) as usize
            } else {
                r.buf.len()
            };
            let have = r.buf.len() - at;
            let damage: String = match scan_record(&r.buf[at..], r.seq) {
                Scan::Record { payload, size, .. } => {
                    let start = out.data.len();
                    out.data.extend_from_slice(payload);
                    out.records.push(start..start + payload.len());
                    r.offset += size as u64;
                    r.seq += 1;
                    taken += 1;
                    want -= size as u64;
                    continue;
                }
                Scan::Incomplete if want as usize > have => {
                    // Refill from r.offset: a chunk, and at least the whole next record.
                    let need = if have >= RECORD_HEADER_LEN {
                        RECORD_HEADER_LEN + crate::format::u32_at(&r.buf[at..], 4) as usize
                    } else {
                        RECORD_HEADER_LEN
                    };
                    let len = need.max(READ_CHUNK).min(want as usize);
                    r.buf.resize(len, 0);
                    let got = file.read_at(r.offset, &mut r.buf).unwrap_or(0);
                    r.buf.truncate(got);
                    r.buf_offset = r.offset;
                    r.buf_page = r.page;
                    if got > have && got >= need.min(len) {
                        continue;
                    }
                    "page file is shorter than recorded".into()
                }
                Scan::Incomplete => "record runs past the page's end".into(),
                Scan::Invalid(why) => why,
            };
            // The intact records before the damage are delivered first (skipping them with
            // the rest of the page would lose them uncounted); the next read meets the
            // damage with nothing taken and skips the rest of the page then.
            if taken > 0 {
                break;
            }
            return Err(self.skip_rest(r, start_seq, end_offset, damage));
        }
        let range = AckRange {
            start_seq,
            end_seq: r.seq,
            end_offset: r.offset,
        };
        Ok((out, (r.page, range)))
    }

    fn skip_rest(
        &self,
        r: &mut Reader,
        start_seq: u64,
        end_offset: u64,
        why: String,
    ) -> (u64, AckRange, u64, String) {
        let st = lock(&self.state);
        let end_seq = st
            .pages
            .iter()
            .find(|p| p.num == r.page)
            .map_or(r.seq, |p| p.end_seq());
        drop(st);
        let skipped = end_seq - r.seq;
        r.seq = end_seq;
        r.offset = end_offset;
        (
            r.page,
            AckRange {
                start_seq,
                end_seq,
                end_offset,
            },
            skipped,
            why,
        )
    }

    /// Marks a batch's records as processed. Unknown tokens are ignored.
    pub fn ack(&self, token: u64) {
        let mut st = lock(&self.state);
        let Some(info) = st.batches.remove(&token) else {
            return;
        };
        let Some(page) = st.pages.iter_mut().find(|p| p.num == info.page) else {
            return;
        };
        let newly = page.acks.ack(info.range);
        st.unacked -= newly;
        st.acks_since_checkpoint += newly;
        if st.acks_since_checkpoint >= self.cfg.checkpoint_acks.max(1) {
            st.checkpoint_dirty = true;
            self.request_flush(&mut st);
        }
        self.release_acked_tails(&mut st);
        self.changed.notify_all();
    }

    /// Stops accepting writes and wakes everyone. Readers stop (or, with `queue.drain`,
    /// drain what is left first).
    pub fn close(&self) {
        let mut st = lock(&self.state);
        st.closed = true;
        drop(st);
        self.changed.notify_all();
    }

    /// Closes, syncs, writes the final checkpoint and stops the flusher. Call after every
    /// reader has acked its last batch: then a restart replays nothing twice.
    pub fn shutdown(&self) {
        if self.shut_down.swap(true, Ordering::SeqCst) {
            return;
        }
        self.close();
        let mut st = lock(&self.state);
        st.stopping_flusher = true;
        st.checkpoint_dirty = true;
        self.request_flush(&mut st);
        drop(st);
        if let Some(h) = lock(&self.flusher).take() {
            let _ = h.join();
        }
    }

    pub fn stats(&self) -> QueueStats {
        let st = lock(&self.state);
        QueueStats {
            pages: st.pages.iter().map(PageState::checkpoint).collect(),
            unacked_events: st.unacked,
            unread_events: st.unread,
            used_bytes: st.used_bytes,
            next_seq: st.next_seq,
            corrupt_records_skipped: st.corrupt_skipped,
        }
    }

    fn flusher_loop(self: Arc<Self>) {
        loop {
            let mut st = lock(&self.state);
            while !st.flush_requested && !st.stopping_flusher && st.pending_delete.is_empty() {
                let dirty = st.next_seq > st.synced_seq || st.checkpoint_dirty;
                let (g, t) = self
                    .flush_wanted
                    .wait_timeout(st, Duration::from_secs(1))
                    .unwrap_or_else(|p| p.into_inner());
                st = g;
                if t.timed_out() && dirty {
                    break;
                }
            }
            st.flush_requested = false;
            let stopping = st.stopping_flusher;
            // Snapshot what this round makes durable.
            let target = st.next_seq;
            let mut files: Vec<Arc<dyn PageFile>> = std::mem::take(&mut st.unsynced_files);
            if target > st.synced_seq {
                if let Some(f) = st.pages.back().and_then(|p| p.file.clone()) {
                    files.push(f);
                }
            }
            let checkpoint = (st.checkpoint_dirty || !st.pending_delete.is_empty()).then(|| {
                st.checkpoint_dirty = false;
                st.acks_since_checkpoint = 0;
                Checkpoint {
                    next_seq: st.next_seq,
                    pages: st.pages.iter().map(PageState::checkpoint).collect(),
                }
            });
            let deletes = std::mem::take(&mut st.pending_delete);
            drop(st);

            let mut sync_error = None;
            for f in &files {
                if let Err(e) = f.sync() {
                    sync_error = Some(e);
                    break;
                }
            }
            let mut st = lock(&self.state);
            if let Some(e) = sync_error {
                // After a failed fsync the kernel may have dropped the dirty data: nothing
                // written since the last good sync can be called durable again.
                let msg = format!("syncing queue pages failed: {e}");
                tracing::error!("{msg}");
                st.failed = Some(msg);
                drop(st);
                self.changed.notify_all();
                return;
            }
            st.synced_seq = st.synced_seq.max(target);
            drop(st);
            self.changed.notify_all();
            if let Some(cp) = checkpoint {
                let bytes = cp.encode();
                if let Err(e) = self.storage.write_checkpoint(&bytes) {
                    tracing::warn!(error = %e, "writing queue checkpoint failed; will retry");
                    let mut st = lock(&self.state);
                    st.checkpoint_dirty = true;
                    st.pending_delete.extend(deletes);
                    drop(st);
                    if stopping {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
                for num in deletes {
                    if let Err(e) = self.storage.remove_page(num) {
                        tracing::warn!(page = num, error = %e, "deleting a fully acked queue page failed");
                    }
                }
            }
            if stopping {
                return;
            }
        }
    }
}

impl Drop for PersistedQueue {
    fn drop(&mut self) {
        // The flusher holds an Arc, so by the time this runs it has already exited.
    }
}
