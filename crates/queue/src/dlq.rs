//! The dead letter queue's storage: events an output (or a filter) could not deliver, kept in
//! a directory of segment files for a `dead_letter_queue` input to read back. Payloads are
//! opaque here (the pipeline crate encodes the event, plugin and reason); each carries the
//! time it was written, for `retain.age`.
//!
//! Segment file `segment.<N>`:
//! ```text
//! header (32 bytes): "SLDQ" | version u32 = 1 | segment number u64 | first sequence u64
//!                    | crc32c(previous 24 bytes) u32 | zero u32
//! records: the queue's own framing (crc u32 | length u32 | sequence u64 | payload), with
//!          payload = entry time (Unix milliseconds) u64 | the caller's bytes
//! ```
//! A crash can leave only a torn tail in the newest segment: a writer never appends to a
//! segment it did not create (after a restart it starts a new one), and readers stop at the
//! first bytes that hold no intact record and go on with the next segment. So a DLQ can always
//! be opened, and nothing written before the torn bytes is lost.
//!
//! Writing takes one lock per batch of entries. The bytes are written at once (a crash of the
//! process loses nothing), and synced every `flush_interval` and when a segment is sealed.
//! Above `max_bytes`, `drop_newer` refuses new entries and `drop_older` deletes the oldest
//! segments; either way the entries lost are counted, as are those `retain_age` expires.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::format::{u32_at, u64_at, RecordBatch};
use crate::page::{create_with_header, list_numbered};
use crate::scan::{RecordCursor, Step};
use crate::storage::{QueueFile, Storage};

pub const SEGMENT_MAGIC: &[u8; 4] = b"SLDQ";
pub const SEGMENT_HEADER_LEN: u64 = 32;
const SEGMENT_PREFIX: &str = "segment.";

fn segment_name(num: u64) -> String {
    format!("{SEGMENT_PREFIX}{num}")
}

fn list_segments(storage: &dyn Storage) -> io::Result<Vec<u64>> {
    list_numbered(storage, SEGMENT_PREFIX)
}

fn encode_header(num: u64, first_seq: u64) -> [u8; SEGMENT_HEADER_LEN as usize] {
    let mut b = [0u8; SEGMENT_HEADER_LEN as usize];
    b[0..4].copy_from_slice(SEGMENT_MAGIC);
    b[4..8].copy_from_slice(&1u32.to_le_bytes());
    b[8..16].copy_from_slice(&num.to_le_bytes());
    b[16..24].copy_from_slice(&first_seq.to_le_bytes());
    let crc = crate::format::crc32c(&b[0..24]);
    b[24..28].copy_from_slice(&crc.to_le_bytes());
    b
}

/// (segment number, first sequence) from a header; `None` when it is not a valid one.
fn decode_header(b: &[u8]) -> Option<(u64, u64)> {
    if b.len() < SEGMENT_HEADER_LEN as usize
        || &b[0..4] != SEGMENT_MAGIC
        || u32_at(b, 4) != 1
        || crate::format::crc32c(&b[0..24]) != u32_at(b, 24)
    {
        return None;
    }
    Some((u64_at(b, 8), u64_at(b, 16)))
}

fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoragePolicy {
    DropNewer,
    DropOlder,
}

impl StoragePolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            StoragePolicy::DropNewer => "drop_newer",
            StoragePolicy::DropOlder => "drop_older",
        }
    }
}

#[derive(Debug, Clone)]
pub struct DlqConfig {
    pub max_bytes: u64,
    /// A segment is sealed when the next batch would take it past this.
    pub segment_bytes: u64,
    pub policy: StoragePolicy,
    pub flush_interval: Duration,
    /// How often the flusher looks for a segment to seal or sync
    /// (`dead_letter_queue.flush_check_interval`).
    pub check_interval: Duration,
    pub retain_age: Option<Duration>,
}

impl Default for DlqConfig {
    fn default() -> Self {
        DlqConfig {
            max_bytes: 1024 * 1024 * 1024,
            segment_bytes: 10 * 1024 * 1024,
            policy: StoragePolicy::DropNewer,
            flush_interval: Duration::from_millis(5000),
            check_interval: Duration::from_millis(1000),
            retain_age: None,
        }
    }
}

/// Figures for `/_node/stats` (`dead_letter_queue`).
#[derive(Debug, Default)]
pub struct DlqStats {
    pub size_bytes: AtomicU64,
    pub dropped_events: AtomicU64,
    pub expired_events: AtomicU64,
    pub last_error: Mutex<Option<String>>,
}

/// What a segment holds, as far as the writer knows.
#[derive(Debug)]
struct Segment {
    num: u64,
    bytes: u64,
    records: u64,
    /// Time of its newest entry (Unix ms).
    newest: u64,
}

struct State {
    /// Oldest first; the last one is the head while `head` is set.
    segments: VecDeque<Segment>,
    head: Option<Arc<dyn QueueFile>>,
    next_num: u64,
    next_seq: u64,
    total: u64,
    dirty: bool,
    last_sync: Instant,
    /// When the head segment was last written: idle for `flush_interval`, it is sealed.
    last_write: Instant,
    batch: RecordBatch,
}

pub struct DlqWriter {
    storage: Box<dyn Storage>,
    config: DlqConfig,
    state: Mutex<State>,
    stats: Arc<DlqStats>,
}

/// Reads every intact record of a segment: (sequence, payload) in order, and where the intact
/// records end.
fn scan_segment(
    file: &dyn QueueFile,
    mut visit: impl FnMut(u64, &[u8]),
) -> io::Result<Option<(u64, u64, u64)>> {
    let len = file.len()?;
    let mut header = [0u8; SEGMENT_HEADER_LEN as usize];
    if file.read_at(0, &mut header)? < header.len() {
        return Ok(None);
    }
    let Some((_, first_seq)) = decode_header(&header) else {
        return Ok(None);
    };
    let mut cursor = RecordCursor::new(SEGMENT_HEADER_LEN, first_seq);
    loop {
        match cursor.next(file, len, None)? {
            Step::Record { seq, payload } => visit(seq, payload),
            Step::Damaged(_) => continue,
            Step::End(_) => break,
        }
    }
    Ok(Some((first_seq, cursor.seq, cursor.offset)))
}

impl DlqWriter {
    /// Opens (or starts) the DLQ in `storage`. Existing segments are surveyed, never changed;
    /// new entries go to a new segment.
    pub fn open(storage: Box<dyn Storage>, config: DlqConfig) -> io::Result<DlqWriter> {
        let mut segments = VecDeque::new();
        let mut next_seq = 0;
        let mut next_num = 1;
        let mut total = 0;
        for num in list_segments(storage.as_ref())? {
            let file = storage.open(&segment_name(num))?;
            let bytes = file.len()?;
            let mut records = 0;
            let mut newest = 0;
            if let Some((_, end_seq, _)) = scan_segment(file.as_ref(), |_, p| {
                records += 1;
                if p.len() >= 8 {
                    newest = u64_at(p, 0);
                }
            })? {
                next_seq = next_seq.max(end_seq);
            }
            next_num = num + 1;
            total += bytes;
            segments.push_back(Segment {
                num,
                bytes,
                records,
                newest,
            });
        }
        let stats = Arc::new(DlqStats::default());
        stats.size_bytes.store(total, Ordering::Relaxed);
        Ok(DlqWriter {
            storage,
            config,
            state: Mutex::new(State {
                segments,
                head: None,
                next_num,
                next_seq,
                total,
                dirty: false,
                last_sync: Instant::now(),
                last_write: Instant::now(),
                batch: RecordBatch::new(),
            }),
            stats,
        })
    }

    pub fn stats(&self) -> Arc<DlqStats> {
        Arc::clone(&self.stats)
    }

    pub fn config(&self) -> &DlqConfig {
        &self.config
    }

    fn set_error(&self, message: String) {
        *self
            .stats
            .last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(message);
    }

    /// Deletes the oldest segment that is not the head; its records count as `lost_to`. When
    /// that was the last segment, an empty head takes its place at once: the directory never
    /// ends up empty, so that a writer opened later goes on with the next segment number and
    /// sequence, and a reader's saved position never points into a reused number.
    fn remove_oldest(&self, st: &mut State, lost_to: &AtomicU64) -> io::Result<bool> {
        let sealed = st.segments.len() - usize::from(st.head.is_some());
        if sealed == 0 {
            return Ok(false);
        }
        let Some(seg) = st.segments.pop_front() else {
            return Ok(false);
        };
        self.storage.remove(&segment_name(seg.num))?;
        st.total -= seg.bytes;
        lost_to.fetch_add(seg.records, Ordering::Relaxed);
        if st.segments.is_empty() {
            self.start_segment(st, now_millis())?;
        }
        Ok(true)
    }

    /// Removes sealed segments whose newest entry is older than `retain_age`.
    fn expire(&self, st: &mut State, now: u64) -> io::Result<()> {
        let Some(age) = self.config.retain_age else {
            return Ok(());
        };
        let limit = now.saturating_sub(age.as_millis() as u64);
        let due = |st: &State| {
            st.segments
                .front()
                .is_some_and(|s| s.newest < limit && (st.head.is_none() || st.segments.len() > 1))
        };
        if due(st) {
            // Not the segments a reader with `clean_consumed` has deleted already: those
            // are not expired entries.
            self.forget_removed(st)?;
        }
        while due(st) {
            if !self.remove_oldest(st, &self.stats.expired_events)? {
                break;
            }
        }
        Ok(())
    }

    /// Seals the head (if any) and starts a new, empty one.
    fn start_segment(&self, st: &mut State, now: u64) -> io::Result<()> {
        self.seal(st)?;
        let num = st.next_num;
        let header = encode_header(num, st.next_seq);
        let file = create_with_header(self.storage.as_ref(), &segment_name(num), &header)?;
        st.next_num += 1;
        st.total += SEGMENT_HEADER_LEN;
        st.segments.push_back(Segment {
            num,
            bytes: SEGMENT_HEADER_LEN,
            records: 0,
            newest: now,
        });
        st.head = Some(file);
        self.stats.size_bytes.store(st.total, Ordering::Relaxed);
        Ok(())
    }

    /// Whether the head holds entries (an empty one is not worth sealing).
    fn head_has_records(st: &State) -> bool {
        st.head.is_some() && st.segments.back().is_some_and(|s| s.records > 0)
    }

    /// Whether writing `size` more bytes needs a new segment.
    fn needs_segment(&self, st: &State, size: u64) -> bool {
        st.head.is_none()
            || st.segments.back().is_some_and(|s| {
                s.bytes > SEGMENT_HEADER_LEN && s.bytes + size > self.config.segment_bytes
            })
    }

    fn seal(&self, st: &mut State) -> io::Result<()> {
        if let Some(head) = st.head.take() {
            if st.dirty {
                head.sync()?;
                st.dirty = false;
            }
        }
        Ok(())
    }

    /// Writes entries (the caller's bytes each). Returns how many were written; the others
    /// were dropped by the storage policy (counted, and `last_error` says why).
    pub fn write(&self, entries: &[&[u8]]) -> io::Result<usize> {
        if entries.is_empty() {
            return Ok(0);
        }
        let now = now_millis();
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let st = &mut *st;
        self.expire(st, now)?;
        st.batch.clear();
        for e in entries {
            st.batch.push_with(|b| {
                b.extend_from_slice(&now.to_le_bytes());
                b.extend_from_slice(e);
            });
        }
        let mut size = st.batch.bytes() as u64;
        // What writing `size` bytes takes, a new segment's header included.
        let need = |w: &DlqWriter, st: &State, size: u64| {
            size + if w.needs_segment(st, size) {
                SEGMENT_HEADER_LEN
            } else {
                0
            }
        };
        if st.total + need(self, st, size) > self.config.max_bytes {
            // A reader with `clean_consumed` may have deleted segments meanwhile.
            self.forget_removed(st)?;
        }
        if st.total + need(self, st, size) > self.config.max_bytes {
            if self.config.policy == StoragePolicy::DropOlder {
                while st.total + need(self, st, size) > self.config.max_bytes {
                    if !self.remove_oldest(st, &self.stats.dropped_events)? {
                        // Only the head is left: seal it so that it can go too.
                        if Self::head_has_records(st) {
                            self.seal(st)?;
                            continue;
                        }
                        break;
                    }
                }
            }
            if st.total + need(self, st, size) > self.config.max_bytes {
                // The entries that still fit go in (a new segment's header counted); the
                // rest are refused, as Logstash refuses entry by entry.
                let header = need(self, st, size) - size;
                let mut room = (self.config.max_bytes).saturating_sub(st.total + header);
                let mut keep = 0;
                while keep < st.batch.len() && st.batch.record_size(keep) as u64 <= room {
                    room -= st.batch.record_size(keep) as u64;
                    keep += 1;
                }
                self.stats
                    .dropped_events
                    .fetch_add((entries.len() - keep) as u64, Ordering::Relaxed);
                self.set_error(format!(
                    "cannot write event to the dead letter queue ({}): it reached its max size of {} bytes",
                    self.storage.describe(),
                    self.config.max_bytes
                ));
                if keep == 0 {
                    self.stats.size_bytes.store(st.total, Ordering::Relaxed);
                    return Ok(0);
                }
                st.batch.truncate(keep);
                size = st.batch.bytes() as u64;
            }
        }
        if self.needs_segment(st, size) {
            self.start_segment(st, now)?;
        }
        let n = st.batch.len();
        let first = st.next_seq;
        let bytes = st.batch.stamp(0..n, first);
        let head = st.head.as_ref().expect("a head segment");
        let seg = st.segments.back_mut().expect("a head segment");
        if let Err(e) = head.write_at(seg.bytes, bytes) {
            self.set_error(format!("writing the dead letter queue: {e}"));
            // A failed write may have left part of the batch: seal, so that the next write
            // starts a new segment after it.
            st.head = None;
            return Err(e);
        }
        seg.bytes += size;
        seg.records += n as u64;
        seg.newest = now;
        st.total += size;
        st.next_seq += n as u64;
        st.dirty = true;
        st.last_write = Instant::now();
        self.stats.size_bytes.store(st.total, Ordering::Relaxed);
        if st.last_sync.elapsed() >= self.config.flush_interval {
            if let Some(h) = &st.head {
                h.sync()?;
            }
            st.dirty = false;
            st.last_sync = Instant::now();
        }
        Ok(n)
    }

    /// Forgets sealed segments that are gone from storage (a reader with `clean_consumed`
    /// deleted them), so that the size counts only what is there.
    fn forget_removed(&self, st: &mut State) -> io::Result<()> {
        let present = list_segments(self.storage.as_ref())?;
        let head = st.head.is_some().then(|| st.segments.back().map(|s| s.num));
        let before = st.segments.len();
        let mut gone = 0;
        st.segments.retain(|s| {
            let keep = Some(Some(s.num)) == head || present.binary_search(&s.num).is_ok();
            if !keep {
                gone += s.bytes;
            }
            keep
        });
        if st.segments.len() != before {
            st.total -= gone;
            self.stats.size_bytes.store(st.total, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Syncs what was written, takes account of segments a reader removed, seals a head
    /// segment left idle for `flush_interval` (as Logstash does, so that a reader sees it
    /// complete and `retain_age` can expire it) and expires segments past `retain_age` (at
    /// shutdown, or from a timer: entries expire even when nothing new is written).
    pub fn flush(&self) -> io::Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.forget_removed(&mut st)?;
        if Self::head_has_records(&st) && st.last_write.elapsed() >= self.config.flush_interval {
            self.seal(&mut st)?;
        }
        self.expire(&mut st, now_millis())?;
        self.stats.size_bytes.store(st.total, Ordering::Relaxed);
        if st.dirty {
            if let Some(h) = &st.head {
                h.sync()?;
            }
            st.dirty = false;
            st.last_sync = Instant::now();
        }
        Ok(())
    }
}

impl Drop for DlqWriter {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Where a reader is: the next record to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DlqPosition {
    pub segment: u64,
    pub offset: u64,
    pub seq: u64,
}

/// One entry read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DlqEntry {
    pub seq: u64,
    /// Unix milliseconds.
    pub time: u64,
    pub payload: Vec<u8>,
}

/// Reads entries in order, from a position, following the writer.
pub struct DlqReader {
    storage: Box<dyn Storage>,
    file: Option<Arc<dyn QueueFile>>,
    pos: DlqPosition,
    cursor: RecordCursor,
}

impl DlqReader {
    /// From `from` (a saved position), or from the oldest entry.
    pub fn open(storage: Box<dyn Storage>, from: Option<DlqPosition>) -> DlqReader {
        DlqReader {
            storage,
            file: None,
            pos: from.unwrap_or_default(),
            cursor: RecordCursor::default(),
        }
    }

    pub fn position(&self) -> DlqPosition {
        self.pos
    }

    /// Opens the segment to read: the current one, else the next that exists.
    fn current(&mut self) -> io::Result<Option<Arc<dyn QueueFile>>> {
        if let Some(f) = &self.file {
            return Ok(Some(Arc::clone(f)));
        }
        let segs = list_segments(self.storage.as_ref())?;
        let (num, file, first_seq) = loop {
            let Some(&num) = segs.iter().find(|&&n| n >= self.pos.segment) else {
                return Ok(None);
            };
            let file = self.storage.open(&segment_name(num))?;
            let mut header = [0u8; SEGMENT_HEADER_LEN as usize];
            let got = file.read_at(0, &mut header)?;
            match decode_header(&header[..got]) {
                Some((_, first_seq)) => break (num, file, first_seq),
                // Not yet written (a writer creating it) or damaged: a later segment, if any,
                // is where reading goes on.
                None if segs.iter().any(|&n| n > num) => {
                    self.pos = DlqPosition {
                        segment: num + 1,
                        offset: 0,
                        seq: 0,
                    };
                }
                None => return Ok(None),
            }
        };
        if num != self.pos.segment || self.pos.offset < SEGMENT_HEADER_LEN {
            self.pos = DlqPosition {
                segment: num,
                offset: SEGMENT_HEADER_LEN,
                seq: first_seq,
            };
        }
        self.cursor.reset(self.pos.offset, self.pos.seq);
        self.file = Some(Arc::clone(&file));
        Ok(Some(file))
    }

    /// Up to `max` entries; empty when there is nothing more for now.
    pub fn read(&mut self, max: usize) -> io::Result<Vec<DlqEntry>> {
        let mut out = Vec::new();
        while out.len() < max {
            let Some(file) = self.current()? else {
                break;
            };
            let len = file.len()?;
            let mut ended = false;
            while out.len() < max {
                match self.cursor.next(file.as_ref(), len, None)? {
                    Step::Record { seq, payload } => {
                        if payload.len() >= 8 {
                            out.push(DlqEntry {
                                seq,
                                time: u64_at(payload, 0),
                                payload: payload[8..].to_vec(),
                            });
                        }
                    }
                    Step::Damaged(_) => {}
                    Step::End(_) => {
                        ended = true;
                        break;
                    }
                }
            }
            self.pos.offset = self.cursor.offset;
            self.pos.seq = self.cursor.seq;
            if !ended {
                break;
            }
            // At the end of this segment: move on only if the writer has started a later one
            // (then this one gets no more records), and once what it wrote here before that
            // (after `len` was taken) is read too.
            let later = list_segments(self.storage.as_ref())?
                .into_iter()
                .any(|n| n > self.pos.segment);
            if !later || file.len()? > len {
                if later {
                    continue;
                }
                break;
            }
            self.file = None;
            self.pos = DlqPosition {
                segment: self.pos.segment + 1,
                offset: 0,
                seq: 0,
            };
        }
        Ok(out)
    }

    /// Deletes the segments before the one being read (`clean_consumed`).
    pub fn remove_consumed(&self) -> io::Result<u64> {
        let mut removed = 0;
        for n in list_segments(self.storage.as_ref())? {
            if n < self.pos.segment {
                self.storage.remove(&segment_name(n))?;
                removed += 1;
            }
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::RECORD_HEADER_LEN;
    use crate::storage::FsStorage;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("sluice-dlq-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn fs(d: &std::path::Path) -> Box<dyn Storage> {
        Box::new(FsStorage::new(d).unwrap())
    }

    fn payloads(entries: &[DlqEntry]) -> Vec<String> {
        entries
            .iter()
            .map(|e| String::from_utf8(e.payload.clone()).unwrap())
            .collect()
    }

    #[test]
    fn entries_come_back_in_order_across_segments_and_restarts() {
        let d = dir("order");
        let cfg = DlqConfig {
            segment_bytes: 200,
            ..DlqConfig::default()
        };
        let w = DlqWriter::open(fs(&d), cfg.clone()).unwrap();
        for i in 0..10 {
            let p = format!("event {i}");
            assert_eq!(w.write(&[p.as_bytes()]).unwrap(), 1);
        }
        drop(w);
        let w = DlqWriter::open(fs(&d), cfg).unwrap();
        w.write(&[b"after restart"]).unwrap();
        let mut r = DlqReader::open(fs(&d), None);
        let got = r.read(100).unwrap();
        let mut want: Vec<String> = (0..10).map(|i| format!("event {i}")).collect();
        want.push("after restart".into());
        assert_eq!(payloads(&got), want);
        assert!(got.windows(2).all(|w| w[0].seq < w[1].seq));
        assert!(list_segments(&*fs(&d)).unwrap().len() > 2);
        // From a saved position: only what came later.
        let pos = r.position();
        w.write(&[b"later"]).unwrap();
        let mut r = DlqReader::open(fs(&d), Some(pos));
        assert_eq!(payloads(&r.read(100).unwrap()), vec!["later"]);
        assert!(r.read(100).unwrap().is_empty());
        // clean_consumed removes the segments read.
        assert!(r.remove_consumed().unwrap() > 0);
    }

    #[test]
    fn a_torn_tail_is_skipped_and_the_dlq_still_opens() {
        let d = dir("torn");
        let w = DlqWriter::open(fs(&d), DlqConfig::default()).unwrap();
        w.write(&[b"one", b"two"]).unwrap();
        drop(w);
        // A crash mid-write: half a record at the end.
        let path = d.join("segment.1");
        let mut bytes = std::fs::read(&path).unwrap();
        let keep = bytes.len();
        let torn = bytes[32..32 + 20].to_vec();
        bytes.extend_from_slice(&torn);
        std::fs::write(&path, &bytes).unwrap();
        let w = DlqWriter::open(fs(&d), DlqConfig::default()).unwrap();
        w.write(&[b"three"]).unwrap();
        let mut r = DlqReader::open(fs(&d), None);
        assert_eq!(payloads(&r.read(100).unwrap()), vec!["one", "two", "three"]);
        // A flipped byte in a record costs that record only.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[32 + RECORD_HEADER_LEN + 9] ^= 0xff;
        std::fs::write(&path, &bytes[..keep]).unwrap();
        let mut r = DlqReader::open(fs(&d), None);
        assert_eq!(payloads(&r.read(100).unwrap()), vec!["two", "three"]);
    }

    #[test]
    fn max_bytes_drops_newer_or_older_and_counts() {
        let d = dir("newer");
        let cfg = DlqConfig {
            max_bytes: 400,
            segment_bytes: 150,
            ..DlqConfig::default()
        };
        let w = DlqWriter::open(fs(&d), cfg.clone()).unwrap();
        let mut written = 0;
        for i in 0..20 {
            written += w.write(&[format!("entry {i:02}").as_bytes()]).unwrap();
        }
        let stats = w.stats();
        assert_eq!(
            written as u64 + stats.dropped_events.load(Ordering::Relaxed),
            20
        );
        assert!(stats.dropped_events.load(Ordering::Relaxed) > 0);
        assert!(stats.size_bytes.load(Ordering::Relaxed) <= 400);
        assert!(stats.last_error.lock().unwrap().is_some());
        let mut r = DlqReader::open(fs(&d), None);
        let got = payloads(&r.read(100).unwrap());
        assert_eq!(
            got.first().map(String::as_str),
            Some("entry 00"),
            "drop_newer keeps the oldest"
        );

        let d = dir("older");
        let w = DlqWriter::open(
            fs(&d),
            DlqConfig {
                policy: StoragePolicy::DropOlder,
                ..cfg
            },
        )
        .unwrap();
        for i in 0..20 {
            w.write(&[format!("entry {i:02}").as_bytes()]).unwrap();
        }
        let stats = w.stats();
        assert!(stats.dropped_events.load(Ordering::Relaxed) > 0);
        assert!(stats.size_bytes.load(Ordering::Relaxed) <= 400);
        let mut r = DlqReader::open(fs(&d), None);
        let got = payloads(&r.read(100).unwrap());
        assert_eq!(
            got.last().map(String::as_str),
            Some("entry 19"),
            "drop_older keeps the newest"
        );
        assert_eq!(
            got.len() as u64 + stats.dropped_events.load(Ordering::Relaxed),
            20
        );
    }

    #[test]
    fn retain_age_expires_old_segments() {
        let d = dir("age");
        let w = DlqWriter::open(
            fs(&d),
            DlqConfig {
                segment_bytes: 100,
                retain_age: Some(Duration::from_millis(1)),
                ..DlqConfig::default()
            },
        )
        .unwrap();
        for i in 0..5 {
            w.write(&[format!("old {i}").as_bytes()]).unwrap();
            std::thread::sleep(Duration::from_millis(5));
        }
        w.write(&[b"new"]).unwrap();
        assert!(w.stats().expired_events.load(Ordering::Relaxed) >= 4);
        let mut r = DlqReader::open(fs(&d), None);
        assert!(payloads(&r.read(100).unwrap()).contains(&"new".to_owned()));
    }

    #[test]
    fn an_idle_head_is_sealed_by_flush_and_then_expires_without_new_writes() {
        let d = dir("idle");
        let w = DlqWriter::open(
            fs(&d),
            DlqConfig {
                flush_interval: Duration::from_millis(10),
                retain_age: Some(Duration::from_millis(30)),
                ..DlqConfig::default()
            },
        )
        .unwrap();
        w.write(&[b"a", b"b"]).unwrap();
        w.flush().unwrap();
        assert_eq!(w.stats().expired_events.load(Ordering::Relaxed), 0);
        std::thread::sleep(Duration::from_millis(50));
        let mut reader = DlqReader::open(fs(&d), None);
        assert_eq!(payloads(&reader.read(10).unwrap()), ["a", "b"]);
        w.flush().unwrap();
        assert_eq!(w.stats().expired_events.load(Ordering::Relaxed), 2);
        // An empty head is left: the directory is never empty.
        assert_eq!(
            w.stats().size_bytes.load(Ordering::Relaxed),
            SEGMENT_HEADER_LEN
        );
        assert_eq!(list_segments(&*fs(&d)).unwrap(), [2]);
        assert!(DlqReader::open(fs(&d), None).read(10).unwrap().is_empty());
        // Writing goes on in it, and after a restart in the next segment, with the next
        // sequence: a reader's saved position stays good.
        w.write(&[b"c"]).unwrap();
        let got = DlqReader::open(fs(&d), None).read(10).unwrap();
        assert_eq!(payloads(&got), ["c"]);
        drop(w);
        let w = DlqWriter::open(fs(&d), DlqConfig::default()).unwrap();
        w.write(&[b"d"]).unwrap();
        assert_eq!(list_segments(&*fs(&d)).unwrap(), [2, 3]);
        let got = reader.read(10).unwrap();
        assert_eq!(payloads(&got), ["c", "d"]);
        assert_eq!(got[0].seq, 2);
    }
}
