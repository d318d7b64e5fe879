//! The flusher thread: one sync round for everyone waiting (group commit), then the
//! checkpoint, then the deletion of pages the checkpoint no longer lists (or their renaming
//! to spares, which the writer makes its next head pages). A checkpoint that only records
//! acks is written without a sync (at most a second's worth): after a power loss the previous
//! synced one brings back more acked events, and nothing is lost. In that order, so
//! that what a checkpoint vouches for is on disk before it, and a page is gone only once no
//! durable checkpoint needs it.
//!
//! A failed fsync fails the queue for good (after one, the kernel may have dropped the dirty
//! data: nothing written since the last good sync can be called durable again). A failed
//! checkpoint write is retried with back-off and logged once (then a count); it never needs
//! new disk space unless the page list outgrows the checkpoint's slots.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{lock, Inner, PageState, MAX_SPARES};
use crate::format::Checkpoint;
use crate::page::{page_name, spare_name};
use crate::repeated::Repeated;
use crate::storage::QueueFile;

/// How long a checkpoint may stay unsynced.
const LAZY_CHECKPOINT_FOR: Duration = Duration::from_secs(1);

impl Inner {
    /// The flusher thread. When it ends (shutdown, or a failed fsync), writers still waiting
    /// for a sync are told: nothing will sync for them any more.
    pub(super) fn flusher_thread(self: Arc<Self>) {
        self.flusher_loop();
        lock(&self.state).flusher_done = true;
        self.wake_all();
    }

    fn flusher_loop(&self) {
        let mut checkpoint_errors = Repeated::new("writing the queue checkpoint");
        let mut retry_delay = Duration::from_millis(100);
        // When the oldest checkpoint written without a sync since the last synced one was.
        let mut lazy_since: Option<Instant> = None;
        loop {
            let mut st = lock(&self.state);
            while !st.flush_requested && !st.stopping_flusher && st.pending_delete.is_empty() {
                let dirty =
                    st.next_seq > st.synced_seq || st.checkpoint_dirty || lazy_since.is_some();
                st.flusher_waiting = true;
                let (g, t) = self
                    .flush_wanted
                    .wait_timeout(st, Duration::from_secs(1))
                    .unwrap_or_else(|p| p.into_inner());
                st = g;
                st.flusher_waiting = false;
                if t.timed_out() && dirty {
                    break;
                }
            }
            st.flush_requested = false;
            let stopping = st.stopping_flusher;
            // A checkpoint that lets pages go, the last one, and one a second after an unsynced
            // one are synced; the others (acks alone) are not: a power loss then brings back
            // at most a second's acked events, and loses none.
            let overdue = lazy_since.is_some_and(|t| t.elapsed() >= LAZY_CHECKPOINT_FOR);
            if overdue {
                st.checkpoint_dirty = true;
            }
            let durable = stopping || overdue || !st.pending_delete.is_empty();
            // Snapshot what this round makes durable.
            let target = st.next_seq;
            let mut files: Vec<Arc<dyn QueueFile>> = std::mem::take(&mut st.unsynced_files);
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

            let sync_error = files.iter().find_map(|f| f.sync().err());
            let mut st = lock(&self.state);
            if let Some(e) = sync_error {
                let msg = format!("syncing queue pages failed: {e}");
                tracing::error!(queue = %self.storage.describe(), "{msg}");
                st.failed = Some(msg);
                drop(st);
                self.wake_all();
                return;
            }
            st.synced_seq = st.synced_seq.max(target);
            if st.sync_waiting > 0 {
                self.synced.notify_all();
            }
            drop(st);
            let Some(cp) = checkpoint else {
                if stopping {
                    return;
                }
                continue;
            };
            let mut store = lock(&self.checkpoints);
            let written = match durable {
                true => store.write(&cp),
                false => store.write_lazily(&cp),
            };
            if written.is_ok() {
                lazy_since = match durable {
                    true => None,
                    false => lazy_since.or_else(|| Some(Instant::now())),
                };
            }
            let absent = store.is_absent();
            drop(store);
            if let Err(e) = written {
                let mut deletes = deletes;
                if absent && e.is_disk_full() {
                    // No checkpoint file at all (a queue whose first one could not be written
                    // on a full disk): none lists any page, and a start rebuilds from the page
                    // files. Deleting the acked pages below every other page loses nothing,
                    // leaves no gap, and frees the space the checkpoint needs.
                    let first = cp.pages.first().map(|p| p.num);
                    let (prefix, rest): (Vec<u64>, Vec<u64>) =
                        deletes.iter().partition(|&&n| first.is_none_or(|f| n < f));
                    self.delete_pages(&prefix);
                    deletes = rest;
                }
                checkpoint_errors.failed(
                    &e,
                    "retrying; acked pages are deleted once a checkpoint is written",
                );
                let mut st = lock(&self.state);
                st.checkpoint_dirty = true;
                st.pending_delete.extend(deletes);
                drop(st);
                if stopping {
                    return;
                }
                std::thread::sleep(retry_delay);
                retry_delay = (retry_delay * 2).min(Duration::from_secs(5));
                continue;
            }
            checkpoint_errors.succeeded();
            retry_delay = Duration::from_millis(100);
            let deletes = match stopping {
                true => &deletes[..],
                false => self.keep_spares(&deletes),
            };
            self.delete_pages(deletes);
            if stopping {
                return;
            }
        }
    }

    /// Renames the newest of `nums` (pages no durable checkpoint lists) to spares, up to
    /// [`MAX_SPARES`], and syncs the directory, so that a spare handed to the writer is one
    /// after a crash too (never a stray `page.<N>` holding another page's header). Returns
    /// the pages left to delete.
    fn keep_spares<'a>(&self, nums: &'a [u64]) -> &'a [u64] {
        let room = MAX_SPARES.saturating_sub(lock(&self.state).spares.len());
        let keep = room.min(nums.len());
        if keep == 0 {
            return nums;
        }
        let (rest, newest) = nums.split_at(nums.len() - keep);
        let mut spared = Vec::new();
        for &num in newest {
            match self.storage.rename(&page_name(num), &spare_name(num)) {
                Ok(()) => spared.push(spare_name(num)),
                Err(e) => {
                    tracing::debug!(page = num, error = %e, "keeping an acked queue page as a spare failed; deleting it");
                    self.delete_pages(&[num]);
                }
            }
        }
        if spared.is_empty() {
            return rest;
        }
        if let Err(e) = self.storage.sync_dir() {
            tracing::debug!(error = %e, "syncing the queue directory failed; spares are deleted");
            self.remove_spares(&spared);
            return rest;
        }
        lock(&self.state).spares.extend(spared);
        rest
    }

    fn delete_pages(&self, nums: &[u64]) {
        for &num in nums {
            if let Err(e) = self.storage.remove(&page_name(num)) {
                tracing::warn!(page = num, error = %e, "deleting a fully acked queue page failed; it is deleted at the next start");
            }
        }
    }
}
