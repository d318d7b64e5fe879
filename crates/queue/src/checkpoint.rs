//! Reading and writing the checkpoint file: two slots rewritten in place, alternately.
//!
//! Write protocol (the crash-safety argument is in the crate docs):
//! - in place: a checkpoint goes into the slot that does not hold the newest *synced* one, so
//!   that slot stays intact whatever a crash does to the write, and the write needs no new disk
//!   space: acked pages can be freed on a full disk (Logstash #8098, #16389 could not even
//!   start there). A durable write syncs the file and so becomes the newest synced slot (the
//!   slots alternate); a lazy one ([`CheckpointStore::write_lazily`], for acks alone) is not
//!   synced, and the next write goes into the same slot. Readers take the valid slot with the
//!   highest generation, wherever it is.
//! - a new file, when there is none yet or the page list outgrows the slots: the whole file
//!   (both slots, every byte written so that later in-place writes have their blocks) goes to
//!   `checkpoint.tmp`, which is synced, renamed over `checkpoint`, and the directory synced
//!   (Logstash #8218: a checkpoint left 0 bytes long). A leftover `checkpoint.tmp` is never
//!   read; recovery removes it.

use std::io;
use std::sync::Arc;

use crate::error::{Context, FormatError, StorageError};
use crate::format::{Checkpoint, SLOT_HEADER_LEN};
use crate::storage::{QueueFile, Storage};

pub const CHECKPOINT_FILE: &str = "checkpoint";
pub const CHECKPOINT_TMP: &str = "checkpoint.tmp";
/// The smallest slot: 84 pages' entries.
const MIN_SLOT: usize = 4096;

/// What the checkpoint file holds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CheckpointRead {
    /// The checkpoint in force (the valid slot with the highest generation) and its generation.
    pub current: Option<(u64, Checkpoint)>,
    /// Whether there is a checkpoint file at all.
    pub exists: bool,
    /// Slots that could not be decoded, with why. One is normal after a crash in mid-write;
    /// when the slot in force is not the newest one written, acks recorded after it are lost.
    pub damaged_slots: Vec<(usize, FormatError)>,
    /// A damaged slot may be newer than the one in force (its header names a later
    /// generation, or cannot be read): the checkpoint in force fell back, and acks recorded
    /// after it may be lost.
    pub fell_back: bool,
    /// Whether the file is the unslotted version 1 format.
    pub legacy: bool,
    /// Slot size of the file (0 when it has no usable slots).
    slot_size: usize,
    /// The slot `current` was read from.
    current_slot: usize,
}

impl CheckpointRead {
    pub fn generation(&self) -> Option<u64> {
        self.current.as_ref().map(|(g, _)| *g)
    }

    pub fn checkpoint(&self) -> Option<&Checkpoint> {
        self.current.as_ref().map(|(_, c)| c)
    }
}

/// Reads the checkpoint file. A checkpoint written by a newer build is an error: nothing of
/// its queue can be interpreted safely.
pub fn read(storage: &dyn Storage) -> Result<CheckpointRead, ReadError> {
    let file = match storage.open(CHECKPOINT_FILE) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(CheckpointRead::default()),
        Err(e) => return Err(StorageError::new("opening the checkpoint", e).into()),
    };
    let len = file
        .len()
        .context(|| "reading the checkpoint's length".into())?;
    let mut b = vec![0u8; len as usize];
    let got = file
        .read_at(0, &mut b)
        .context(|| "reading the checkpoint".into())?;
    b.truncate(got);
    Ok(decode_file(&b)?)
}

/// A checkpoint that cannot be read, or one from a newer build.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Format(#[from] FormatError),
}

fn decode_file(b: &[u8]) -> Result<CheckpointRead, FormatError> {
    let mut out = CheckpointRead {
        exists: true,
        ..CheckpointRead::default()
    };
    if let Some(v1) = Checkpoint::decode_v1(b) {
        out.legacy = true;
        match v1 {
            Ok(cp) => out.current = Some((0, cp)),
            Err(e) => out.damaged_slots.push((0, e)),
        }
        return Ok(out);
    }
    let first = Checkpoint::decode_slot(b);
    // The second slot starts where the first says; if the first is unreadable, at half the
    // file (every slotted file is two equal slots).
    let slot_size = match &first {
        Ok(s) => s.slot_size as usize,
        Err(_) => b.len() / 2,
    };
    let second = if slot_size >= SLOT_HEADER_LEN && b.len() >= 2 * slot_size {
        Checkpoint::decode_slot(&b[slot_size..])
    } else {
        Err(FormatError::TooShort {
            what: "checkpoint file",
            len: b.len(),
            need: 2 * slot_size.max(SLOT_HEADER_LEN),
        })
    };
    // The generation each slot's header claims, damaged or not (`None`: no slot header there).
    let claimed = |i: usize| {
        let h = b.get(i * slot_size..i * slot_size + SLOT_HEADER_LEN)?;
        (&h[0..4] == crate::format::CHECKPOINT_MAGIC)
            .then(|| u64::from_le_bytes(h[16..24].try_into().unwrap_or_default()))
    };
    for (i, slot) in [first, second].into_iter().enumerate() {
        match slot {
            Ok(s) => {
                if out.current.as_ref().is_none_or(|(g, _)| s.generation > *g) {
                    out.current = Some((s.generation, s.checkpoint));
                    out.current_slot = i;
                }
            }
            Err(e) if e.is_newer_version() => return Err(e),
            // A slot never written yet (a new file) is all zeros: not damage.
            Err(_) if is_blank(b, i, slot_size) => {}
            Err(e) => out.damaged_slots.push((i, e)),
        }
    }
    if slot_size >= SLOT_HEADER_LEN && slot_size * 2 == b.len() {
        out.slot_size = slot_size;
    }
    if let Some(using) = out.generation() {
        out.fell_back =
            (out.damaged_slots.iter()).any(|(i, _)| claimed(*i).is_none_or(|g| g > using));
    }
    Ok(out)
}

fn is_blank(b: &[u8], slot: usize, slot_size: usize) -> bool {
    let start = slot * slot_size;
    start < b.len()
        && b[start..(start + slot_size).min(b.len())]
            .iter()
            .all(|&x| x == 0)
}

/// Writes checkpoints, continuing the generations of the file as read.
pub struct CheckpointStore {
    storage: Arc<dyn Storage>,
    file: Option<Arc<dyn QueueFile>>,
    slot_size: usize,
    next_generation: u64,
    /// Whether a `checkpoint` file exists (of any version).
    exists: bool,
    /// A rename of `checkpoint.tmp` whose directory sync failed: synced before the next write
    /// is relied on.
    dir_unsynced: bool,
    /// `queue.checkpoint.retry`: retry a failed rename of `checkpoint.tmp`.
    retry: bool,
    buf: Vec<u8>,
    /// The slot holding the newest synced checkpoint: writes go into the other one.
    synced_slot: usize,
}

/// Pauses before each retry of a failed `checkpoint.tmp` rename (`queue.checkpoint.retry`):
/// Logstash's `ExponentialBackoff(3)`, four more attempts, without its random extra wait.
const RENAME_RETRY_PAUSES_MS: [u64; 4] = [0, 100, 200, 400];

impl CheckpointStore {
    /// A store that continues after what `read` found. The file is synced first: what was
    /// read may be a lazy write of a killed process, still only in the page cache, and the
    /// next write must not overwrite the only synced slot before it is synced too.
    pub fn new(storage: Arc<dyn Storage>, read: &CheckpointRead) -> Result<Self, StorageError> {
        let file = if read.exists && read.slot_size > 0 {
            let f = storage
                .open(CHECKPOINT_FILE)
                .context(|| "opening the checkpoint".into())?;
            f.sync().context(|| "syncing the checkpoint".into())?;
            Some(f)
        } else {
            None
        };
        Ok(CheckpointStore {
            storage,
            slot_size: if file.is_some() { read.slot_size } else { 0 },
            file,
            next_generation: read.generation().map_or(1, |g| g + 1),
            exists: read.exists,
            dir_unsynced: false,
            retry: true,
            buf: Vec::new(),
            synced_slot: read.current_slot,
        })
    }

    /// `queue.checkpoint.retry` (on by default, as in Logstash 8.2+).
    pub fn set_retry(&mut self, retry: bool) {
        self.retry = retry;
    }

    /// Renames `checkpoint.tmp` over `checkpoint`, retrying as `queue.checkpoint.retry` says.
    fn rename_into_place(&self) -> io::Result<()> {
        let s = &*self.storage;
        let mut result = s.rename(CHECKPOINT_TMP, CHECKPOINT_FILE);
        if self.retry {
            for pause in RENAME_RETRY_PAUSES_MS {
                let Err(e) = &result else { break };
                tracing::warn!("renaming checkpoint.tmp failed ({e}); retrying in {pause} ms");
                std::thread::sleep(std::time::Duration::from_millis(pause));
                result = s.rename(CHECKPOINT_TMP, CHECKPOINT_FILE);
            }
        }
        result
    }

    /// Whether no checkpoint file exists at all (then no checkpoint lists any page).
    pub fn is_absent(&self) -> bool {
        !self.exists
    }

    /// Makes `cp` the durable checkpoint.
    pub fn write(&mut self, cp: &Checkpoint) -> Result<(), StorageError> {
        self.write_as(cp, true)
    }

    /// Makes `cp` the checkpoint without syncing it: a killed process finds it, a power loss
    /// may leave the last synced one instead (whose acks are older: more events come back,
    /// none is lost). For checkpoints that only record acks; one that lets a page file go
    /// must be durable ([`CheckpointStore::write`]).
    pub fn write_lazily(&mut self, cp: &Checkpoint) -> Result<(), StorageError> {
        self.write_as(cp, false)
    }

    fn write_as(&mut self, cp: &Checkpoint, durable: bool) -> Result<(), StorageError> {
        if self.dir_unsynced {
            self.storage
                .sync_dir()
                .context(|| "syncing the queue directory".into())?;
            self.dir_unsynced = false;
        }
        let generation = self.next_generation;
        let needed = SLOT_HEADER_LEN + Checkpoint::body_len(cp.pages.len());
        let fits = self.file.is_some() && needed <= self.slot_size;
        // Grown before the slots are full, while pages are being added (which needs disk
        // space anyway), so that a checkpoint that frees pages always fits in place.
        if !fits || needed * 4 > self.slot_size * 3 {
            let size = (needed * 2).max(MIN_SLOT).next_multiple_of(4096);
            match self.replace_file(cp, generation, size) {
                Ok(()) => return Ok(()),
                // The new file is in place but its directory entry may not be durable.
                Err(e) if !fits || self.dir_unsynced => return Err(e),
                // No room for a bigger file: this one still holds the checkpoint.
                Err(_) => {}
            }
        }
        let file = self.file.as_ref().expect("checked by `fits`");
        let slot = cp.encode_slot(generation, self.slot_size as u32);
        let target = 1 - self.synced_slot;
        let at = (target * self.slot_size) as u64;
        file.write_at(at, &slot)
            .context(|| "writing the checkpoint".into())?;
        self.next_generation += 1;
        if durable {
            file.sync().context(|| "syncing the checkpoint".into())?;
            self.synced_slot = target;
        }
        Ok(())
    }

    fn replace_file(
        &mut self,
        cp: &Checkpoint,
        generation: u64,
        slot_size: usize,
    ) -> Result<(), StorageError> {
        let s = &*self.storage;
        let tmp = match s.create(CHECKPOINT_TMP) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                s.remove(CHECKPOINT_TMP)
                    .context(|| "removing a leftover checkpoint.tmp".into())?;
                s.create(CHECKPOINT_TMP)
            }
            other => other,
        }
        .context(|| "creating checkpoint.tmp".into())?;
        self.buf.clear();
        self.buf.resize(2 * slot_size, 0);
        let slot = cp.encode_slot(generation, slot_size as u32);
        let at = (generation % 2) as usize * slot_size;
        self.buf[at..at + slot.len()].copy_from_slice(&slot);
        let written = tmp
            .write_at(0, &self.buf)
            .and_then(|()| tmp.sync())
            .context(|| "writing checkpoint.tmp".into());
        if let Err(e) = written {
            let _ = s.remove(CHECKPOINT_TMP);
            return Err(e);
        }
        self.rename_into_place()
            .context(|| "renaming checkpoint.tmp to checkpoint".into())?;
        // From here on the directory's checkpoint is the new file, synced or not, and its slot
        // `generation % 2` holds `generation`: the next write goes to the other slot.
        self.file = Some(tmp);
        self.slot_size = slot_size;
        self.next_generation = generation + 1;
        self.synced_slot = at / slot_size;
        self.exists = true;
        self.dir_unsynced = true;
        s.sync_dir()
            .context(|| "syncing the queue directory".into())?;
        self.dir_unsynced = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::PageCheckpoint;
    use crate::sim::SimStorage;

    fn cp(pages: u64) -> Checkpoint {
        Checkpoint {
            next_seq: pages * 10,
            pages: (0..pages)
                .map(|i| PageCheckpoint {
                    num: i + 1,
                    first_seq: i * 10,
                    count: 10,
                    bytes: 1000,
                    first_unacked_seq: i * 10,
                    first_unacked_offset: 32,
                })
                .collect(),
        }
    }

    fn reopen(s: &SimStorage) -> (CheckpointStore, CheckpointRead) {
        let r = read(s).unwrap();
        (CheckpointStore::new(Arc::new(s.clone()), &r).unwrap(), r)
    }

    /// `queue.checkpoint.retry`: a rename that fails a few times is retried (four more
    /// attempts); without retry, or past them, the write fails and the old checkpoint stays.
    #[test]
    fn failed_renames_are_retried_when_asked() {
        let s = SimStorage::new();
        let (mut store, _) = reopen(&s);
        s.fail_next_renames(2);
        store.write(&cp(1)).unwrap();
        assert_eq!(read(&s).unwrap().current, Some((1, cp(1))));

        let s = SimStorage::new();
        let (mut store, _) = reopen(&s);
        store.set_retry(false);
        s.fail_next_renames(1);
        assert!(store.write(&cp(1)).is_err());
        assert!(!read(&s).unwrap().exists);

        let s = SimStorage::new();
        let (mut store, _) = reopen(&s);
        s.fail_next_renames(5);
        assert!(store.write(&cp(1)).is_err());
        store.write(&cp(1)).unwrap();
        assert_eq!(read(&s).unwrap().current, Some((1, cp(1))));
    }

    #[test]
    fn generations_alternate_slots_and_survive_reopening() {
        let s = SimStorage::new();
        let (mut store, r) = reopen(&s);
        assert!(!r.exists);
        for n in 1..=5 {
            store.write(&cp(n)).unwrap();
            let r = read(&s).unwrap();
            assert_eq!(r.current, Some((n, cp(n))));
            assert!(r.damaged_slots.is_empty());
        }
        let (mut store, r) = reopen(&s);
        assert_eq!(r.generation(), Some(5));
        store.write(&cp(2)).unwrap();
        assert_eq!(read(&s).unwrap().current, Some((6, cp(2))));
    }

    /// Lazy writes go into the slot that does not hold the newest synced checkpoint, again
    /// and again: a power loss at any point leaves that synced one (or a newer one) readable;
    /// a killed process leaves the newest; a durable write after them alternates again.
    #[test]
    fn lazy_writes_never_touch_the_newest_synced_slot() {
        use crate::sim::Survival;
        let s = SimStorage::new();
        let (mut store, _) = reopen(&s);
        store.write(&cp(1)).unwrap();
        store.write(&cp(2)).unwrap();
        for n in 3..=6 {
            store.write_lazily(&cp(n)).unwrap();
            for keep in [0.0, 0.5, 1.0] {
                for torn in [0, 7, 40, 4000] {
                    let after = s.power_loss(Survival {
                        keep_fraction: keep,
                        torn_bytes: torn,
                    });
                    let r = read(&after).unwrap();
                    let g = r.generation().expect("a valid checkpoint");
                    assert!((2..=n).contains(&g), "generation {g} after lazy {n}");
                    assert_eq!(r.checkpoint(), Some(&cp(g)));
                }
            }
            assert_eq!(read(&s.after_kill()).unwrap().current, Some((n, cp(n))));
        }
        // Synced: the newest is durable, and the next writes go to the other slot.
        store.write(&cp(7)).unwrap();
        store.write_lazily(&cp(8)).unwrap();
        let after = s.power_loss(Survival {
            keep_fraction: 0.0,
            torn_bytes: 40,
        });
        assert_eq!(read(&after).unwrap().current, Some((7, cp(7))));
    }

    #[test]
    fn a_damaged_slot_falls_back_to_the_other() {
        let s = SimStorage::new();
        let (mut store, _) = reopen(&s);
        store.write(&cp(1)).unwrap();
        store.write(&cp(2)).unwrap();
        // Generation 2 is in slot 0: damage it.
        s.corrupt(CHECKPOINT_FILE, 40, &[0xFF]);
        let r = read(&s).unwrap();
        assert_eq!(r.current, Some((1, cp(1))));
        assert_eq!(r.damaged_slots.len(), 1);
        // Writing goes on from the newest generation seen, into the damaged slot.
        let (mut store, _) = reopen(&s);
        store.write(&cp(3)).unwrap();
        let r = read(&s).unwrap();
        assert_eq!(r.current, Some((2, cp(3))));
        assert!(r.damaged_slots.is_empty());
    }

    /// A grown file renamed into place whose directory sync failed holds the checkpoint in
    /// its slot `g % 2`: the next write must go to the other slot (it used to overwrite the
    /// only valid one, which a torn write would then destroy).
    #[test]
    fn a_failed_directory_sync_after_growing_keeps_two_valid_slots() {
        let s = SimStorage::new();
        let (mut store, _) = reopen(&s);
        store.write(&cp(1)).unwrap();
        s.set_fail_dir_sync(true);
        assert!(store.write(&cp(200)).is_err());
        s.set_fail_dir_sync(false);
        store.write(&cp(3)).unwrap();
        let r = read(&s).unwrap();
        let (generation, current) = r.current.clone().unwrap();
        assert_eq!(current, cp(3));
        // Damage the slot in force: the other one holds the previous checkpoint.
        let slot_size = s.file_bytes(CHECKPOINT_FILE).unwrap().len() as u64 / 2;
        s.corrupt(CHECKPOINT_FILE, (generation % 2) * slot_size + 40, &[0xFF]);
        assert_eq!(read(&s).unwrap().current, Some((generation - 1, cp(200))));
    }

    #[test]
    fn in_place_writes_need_no_space_and_the_file_grows_with_the_page_list() {
        let s = SimStorage::new();
        let (mut store, _) = reopen(&s);
        store.write(&cp(100)).unwrap();
        let size = s.file_bytes(CHECKPOINT_FILE).unwrap().len();
        assert!(size >= 2 * (SLOT_HEADER_LEN + Checkpoint::body_len(100)));
        s.set_space_left(Some(0));
        for n in [100, 50, 1, 0] {
            store.write(&cp(n)).unwrap();
        }
        assert_eq!(read(&s).unwrap().checkpoint(), Some(&cp(0)));
        // Outgrowing the slots needs space: an error, the last checkpoint stays in force.
        assert!(store.write(&cp(1000)).is_err());
        assert_eq!(read(&s).unwrap().checkpoint(), Some(&cp(0)));
        s.set_space_left(None);
        store.write(&cp(1000)).unwrap();
        assert_eq!(read(&s).unwrap().checkpoint(), Some(&cp(1000)));
        assert!(!s.names().contains(&CHECKPOINT_TMP.to_owned()));
    }
}
