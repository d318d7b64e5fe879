//! Appending: a pushed batch is written to the head page with one `write_at` per page it
//! spans, under the `write` lock, then published in `state` for readers.
//!
//! Durability: a push returns once its records are in the page file (so a killed process
//! loses nothing). With `checkpoint.writes = N`, a push returns only with fewer than N
//! records unsynced (at most the last N - 1 records of returned pushes can be lost to a power
//! loss): the push that would leave N or more waits until a sync brings them below N; the
//! flusher syncs for every waiting writer at once (group commit), so `N = 1` costs one fsync
//! per *round*, not per writer. A push that leaves N/2 unsynced asks for a sync without
//! waiting, so a writer that reaches N usually waits only for the rest of that round, not
//! for a round of its own; unless readers are 2N or more records behind, when waiting costs
//! them nothing and syncs that cover N records each are half as many. Large records fill
//! many bytes before N/2 of them ask for a sync: every 256 KB of them is handed to the device
//! at once (`sync_file_range`, no waiting), so that the sync finds them written.
//!
//! A full disk: the write (or the creation of the next page) is retried with back-off while
//! the writer holds the `write` lock, so other writers queue behind it; readers and acks go
//! on and free space. [`super::PersistedQueue::close`] makes a waiting writer give up.

use std::sync::Arc;

use super::{lock, Inner, PageState};
use crate::error::{Context, QueueError};
use crate::format::{PageCheckpoint, RecordBatch, PAGE_HEADER_LEN, RECORD_HEADER_LEN};
use crate::page::{create_page, reuse_spare};
use crate::storage::QueueFile;

/// The page being appended to.
pub(super) struct Head {
    pub file: Arc<dyn QueueFile>,
    pub num: u64,
    /// Where the next record goes.
    pub offset: u64,
    /// The file's length when it became the head page: a page made from a spare holds old
    /// records up to here, cut off when the page stops being the head.
    pub end: u64,
    /// Where the device was last asked to start writing the page's bytes (see
    /// [`WRITEBACK_EVERY`]).
    pub kicked: u64,
    /// The sequence of the first record after `kicked` (about).
    pub kicked_seq: u64,
}

/// The writer asks the device to start writing every this many bytes of a page (without
/// waiting), so that the flusher's sync finds most of them written already: large records
/// then stream to the device while more are written, instead of in one burst per sync.
const WRITEBACK_EVERY: u64 = 256 << 10;

/// The largest record (header included): its length field is 32 bits, and a page holding
/// it (header included) must stay within 4 GiB.
pub const MAX_RECORD: usize = u32::MAX as usize - PAGE_HEADER_LEN;

/// The operating system's page of memory: writeback hints cover whole ones.
const MEMORY_PAGE: u64 = 4096;

impl Head {
    /// The head page `num`, its next record at `offset` (of sequence `next_seq`), the file
    /// `end` bytes long.
    pub fn new(file: Arc<dyn QueueFile>, num: u64, offset: u64, end: u64, next_seq: u64) -> Head {
        Head {
            file,
            num,
            offset,
            end,
            kicked: offset & !(MEMORY_PAGE - 1),
            kicked_seq: next_seq,
        }
    }

    /// Cuts the old records a page made from a spare still holds after the new ones, so that
    /// a tail page (and the head page after a graceful stop) ends where its records do.
    /// Returns whether there were any.
    pub fn cut_spare_tail(&mut self) -> Result<bool, crate::error::StorageError> {
        if self.end <= self.offset {
            return Ok(false);
        }
        let num = self.num;
        self.file
            .set_len(self.offset)
            .context(|| format!("cutting queue page {num} to its records"))?;
        self.end = self.offset;
        Ok(true)
    }
}

pub(super) struct Writer {
    /// `None` until a page could be created (a full disk at open or at rollover).
    head: Option<Head>,
    next_page: u64,
    next_seq: u64,
    /// Where each record of the run being written ends (kept for its allocation).
    ends: Vec<u64>,
}

/// A run of a pushed batch's records, once written: what
/// [`super::PersistedQueue::push_with`] tells its caller.
#[derive(Debug)]
pub struct Written<'a> {
    /// The sequence of the run's first record; the others follow.
    pub first_seq: u64,
    /// The records' indices in the batch.
    pub records: std::ops::Range<usize>,
    /// The page they are in, and where in it each one ends.
    pub page: u64,
    pub ends: &'a [u64],
}

impl Writer {
    pub fn new(head: Option<Head>, next_page: u64, next_seq: u64) -> Self {
        Writer {
            head,
            next_page,
            next_seq,
            ends: Vec::new(),
        }
    }
}

impl Writer {
    pub fn head_mut(&mut self) -> Option<&mut Head> {
        self.head.as_mut()
    }
}

impl Inner {
    pub(super) fn push(
        &self,
        batch: &mut RecordBatch,
        written: &mut dyn FnMut(Written),
    ) -> Result<(), QueueError> {
        let n = batch.len();
        if n == 0 {
            return Ok(());
        }
        for i in 0..n {
            if batch.record_size(i) > MAX_RECORD {
                return Err(QueueError::TooLarge {
                    size: batch.record_size(i) - RECORD_HEADER_LEN,
                });
            }
        }
        let mut guard = lock(&self.write);
        // Through a plain reference, so that the head page and the scratch list of record
        // ends can be borrowed apart.
        let w: &mut Writer = &mut guard;
        self.wait_for_space(n as u64, batch.bytes() as u64)?;
        let mut i = 0;
        while i < n {
            let Some(head) = &w.head else {
                self.start_page(w)?;
                continue;
            };
            // A page that holds a record larger than the capacity is past it.
            let room = self.cfg.page_capacity.saturating_sub(head.offset);
            let (mut j, mut bytes) = (i, 0u64);
            let start = head.offset;
            w.ends.clear();
            while j < n && bytes + batch.record_size(j) as u64 <= room {
                bytes += batch.record_size(j) as u64;
                w.ends.push(start + bytes);
                j += 1;
            }
            if j == i && start == PAGE_HEADER_LEN as u64 {
                // A record larger than a page gets a page of its own, which it makes larger
                // than `queue.page_capacity`: stored, never acknowledged and then dropped.
                bytes = batch.record_size(i) as u64;
                w.ends.push(start + bytes);
                j += 1;
            }
            if j == i {
                // The head page is full: it becomes a tail page, synced by the flusher.
                self.retire_head(w)?;
                self.start_page(w)?;
                continue;
            }
            let data = batch.stamp(i..j, w.next_seq);
            let (file, num, offset) = (Arc::clone(&head.file), head.num, head.offset);
            let wrote = self.retry_while_full_unless(
                &|| format!("writing queue page {num}"),
                || {
                    file.write_at(offset, data)
                        .context(|| format!("writing queue page {num}"))
                },
                // A head page whose records are all acked holds only freeable bytes: on a disk
                // smaller than a page, waiting would be for good (its own bytes are the space
                // it waits for). It gives way to a new page instead, and is freed as a tail.
                |st| {
                    st.pages.back().is_some_and(|p| {
                        p.num == num && p.count > 0 && p.acks.all_acked_before(p.end_seq())
                    })
                },
            )?;
            if wrote.is_none() {
                let head = w.head.as_mut().expect("checked above");
                // The failed write may have left part of its bytes past the records.
                if let Ok(len) = head.file.len() {
                    head.end = head.end.max(len);
                }
                tracing::info!(
                    page = num,
                    "the disk is full and queue page {num} is all acked: going on in a new page"
                );
                self.retire_head(w)?;
                self.start_page(w)?;
                continue;
            }
            written(Written {
                first_seq: w.next_seq,
                records: i..j,
                page: num,
                ends: &w.ends,
            });
            let head = w.head.as_mut().expect("checked above");
            head.offset += bytes;
            w.next_seq += (j - i) as u64;
            // Whole pages of memory only: the last one is still being filled, and the next
            // write would have to wait for it if it were being written out.
            let whole = head.offset & !(MEMORY_PAGE - 1);
            if whole.saturating_sub(head.kicked) >= WRITEBACK_EVERY {
                // Unless they are so many records that a sync is asked for anyway (at half
                // of queue.checkpoint.writes): small records are synced often enough.
                let records = w.next_seq - head.kicked_seq;
                if records < super::limit(self.cfg.checkpoint_writes).div_ceil(2) {
                    head.file.start_writeback(head.kicked, whole - head.kicked);
                }
                head.kicked = whole;
                head.kicked_seq = w.next_seq;
            }
            let mut st = lock(&self.state);
            let page = st.pages.back_mut().expect("the head page is listed");
            debug_assert_eq!(page.num, num);
            page.count += (j - i) as u64;
            page.bytes += bytes;
            st.next_seq = w.next_seq;
            st.unacked += (j - i) as u64;
            st.unread += (j - i) as u64;
            st.used_bytes += bytes;
            // One reader; it wakes the next if it leaves records behind.
            if st.readers_waiting > 0 {
                self.readable.notify_one();
            }
            drop(st);
            i = j;
        }
        let end_seq = w.next_seq;
        drop(guard);
        let mut st = lock(&self.state);
        let limit = super::limit(self.cfg.checkpoint_writes);
        let unsynced = end_seq.saturating_sub(st.synced_seq);
        // Halfway to the limit: start a sync now, so that it is usually done before a push
        // reaches the limit and would have to wait for one. Not when readers are far behind
        // (twice the limit or more unread): a writer that waits for a sync then costs them
        // nothing, and syncs that each cover the whole limit are half as many.
        let readers_behind = st.unread >= limit.saturating_mul(2);
        if unsynced < limit
            && unsynced >= limit.div_ceil(2)
            && !readers_behind
            && !st.flush_requested
        {
            self.request_flush(&mut st);
        }
        if unsynced >= limit {
            self.request_flush(&mut st);
            while end_seq.saturating_sub(st.synced_seq) >= limit {
                if let Some(f) = &st.failed {
                    return Err(QueueError::Failed(f.clone()));
                }
                // Closed while this push waited, after the flusher's last round: the records
                // are written but not synced; the caller must not take them as durable (a
                // start finds them after the checkpoint, unless a power loss took them).
                if st.flusher_done {
                    return Err(QueueError::Closed);
                }
                st.sync_waiting += 1;
                st = self.synced.wait(st).unwrap_or_else(|p| p.into_inner());
                st.sync_waiting -= 1;
            }
        }
        Ok(())
    }

    /// Makes the head page a tail page (synced by the flusher, freed once acked), cut to its
    /// records.
    fn retire_head(&self, w: &mut Writer) -> Result<(), QueueError> {
        let head = w.head.as_mut().expect("a head page to retire");
        let num = head.num;
        self.retry_while_full(&|| format!("cutting queue page {num}"), || {
            head.cut_spare_tail()
        })?;
        let old = w.head.take().expect("checked above");
        let mut st = lock(&self.state);
        st.unsynced_files.push(old.file);
        // Until the next page exists (the disk may be full), the old head page can be freed
        // like any other once it is acked.
        st.head = None;
        self.release_acked_pages(&mut st);
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
            st.room_waiting += 1;
            st = self.room.wait(st).unwrap_or_else(|p| p.into_inner());
            st.room_waiting -= 1;
        }
    }

    /// Makes the next head page from a spare, or creates it (waiting for disk space if need
    /// be).
    fn start_page(&self, w: &mut Writer) -> Result<(), QueueError> {
        let (num, first_seq) = (w.next_page, w.next_seq);
        let spare = lock(&self.state).spares.pop();
        let reused = spare.and_then(|name| {
            let made = reuse_spare(self.storage.as_ref(), &name, num, first_seq)
                .and_then(|file| Ok((file.len()?, file)));
            match made {
                Ok(made) => Some(made),
                Err(e) => {
                    tracing::debug!(spare = %name, error = %e, "reusing a spare queue page failed; creating a new one");
                    let _ = self.storage.remove(&name);
                    None
                }
            }
        });
        let (end, file) = match reused {
            Some(made) => made,
            None => {
                let file =
                    self.retry_while_full(&|| format!("creating queue page {num}"), || {
                        create_page(self.storage.as_ref(), num, first_seq)
                            .context(|| format!("creating queue page {num}"))
                    })?;
                (PAGE_HEADER_LEN as u64, file)
            }
        };
        w.next_page += 1;
        w.head = Some(Head::new(
            Arc::clone(&file),
            num,
            PAGE_HEADER_LEN as u64,
            end,
            first_seq,
        ));
        let mut st = lock(&self.state);
        let entry = PageCheckpoint::empty(num, first_seq);
        st.pages.push_back(PageState::new(&entry, Some(file)));
        st.head = Some(num);
        st.used_bytes += PAGE_HEADER_LEN as u64;
        st.checkpoint_dirty = true;
        // The old head page, if fully acked, can go now.
        self.release_acked_pages(&mut st);
        self.request_flush(&mut st);
        Ok(())
    }
}
