//! Crash-loop protection: which records were being processed when the process died, so that a
//! record that takes the process down every time it is processed (a "poison" record: Ruby code
//! that kills the process, a native library that crashes on it) is set aside instead of
//! replayed into the same crash at every start.
//!
//! - `inflight`: one slot per batch handed to a reader and not yet acked (its sequence range),
//!   in a small memory-mapped file: recording and clearing a slot are plain memory stores, no
//!   system call, and what a killed process stored is in the page cache for the next start. A
//!   graceful stop removes the file; a start that finds slots in it knows the previous process
//!   died with those batches in its hands.
//! - `suspects`: the ranges that were in flight at a crash, each with how many crashes it has
//!   been part of. The reader hands a suspect's records out one at a time, so that a second
//!   crash names the one record being processed. A record in flight alone at a second crash is
//!   poison: the reader hands it out flagged ([`crate::RawBatch::poison`]), and the caller sets
//!   it aside (the dead letter queue, or a logged and counted skip) and acks it.
//!
//! Both are advisory. Nothing here decides what is durable: a missing, damaged or unwritable
//! file (a full disk) only turns the protection off (a power loss may lose the slots too, and
//! then a crash loop needs another crash to be seen). Queues on other storage than the real
//! file system (the simulator) have no journal; [`Suspects`] is plain data and tested as such.

use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::format::crc32c;

pub const INFLIGHT_FILE: &str = "inflight";
pub const SUSPECTS_FILE: &str = "suspects";

/// Batches in flight the journal can name at once; beyond, a batch goes unrecorded.
const SLOTS: usize = 256;
/// A slot: first sequence, end sequence, check (both mixed with a constant; 0 = empty).
const SLOT_WORDS: usize = 3;
const CHECK: u64 = 0x534c_5146_4c49_4748; // "SLQFLIGH"

fn check(start: u64, end: u64) -> u64 {
    (start ^ end.rotate_left(29) ^ CHECK) | 1
}

/// The slots file of a running queue.
pub struct Journal {
    map: memmap2::MmapMut,
    free: Vec<u16>,
    path: PathBuf,
}

impl Journal {
    /// Creates `<dir>/inflight` with every slot empty (its blocks written, so that a store
    /// into the mapping never meets a full disk). `None` (logged) when that fails.
    pub fn create(dir: &Path) -> Option<Journal> {
        let path = dir.join(INFLIGHT_FILE);
        let made = (|| -> std::io::Result<memmap2::MmapMut> {
            let mut f = File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)?;
            f.write_all(&[0u8; SLOTS * SLOT_WORDS * 8])?;
            // Safety: the file is this queue's own (its directory is locked by this process),
            // nothing else maps or resizes it while the mapping lives.
            unsafe { memmap2::MmapMut::map_mut(&f) }
        })();
        match made {
            Ok(map) => Some(Journal {
                map,
                free: (0..SLOTS as u16).rev().collect(),
                path,
            }),
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "no in-flight journal (crash-loop protection is off)");
                None
            }
        }
    }

    fn words(&self) -> &[AtomicU64] {
        let len = self.map.len() / 8;
        // Safety: the mapping is page-aligned, `len` words long, and lives as long as `self`;
        // AtomicU64 has u64's layout.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr() as *const AtomicU64, len) }
    }

    /// Records `range` as in flight; the slot to clear when it is acked (`None` when all are
    /// taken).
    pub fn record(&mut self, range: Range<u64>) -> Option<u16> {
        let slot = self.free.pop()?;
        let w = &self.words()[slot as usize * SLOT_WORDS..][..SLOT_WORDS];
        w[0].store(range.start, Ordering::Relaxed);
        w[1].store(range.end, Ordering::Relaxed);
        w[2].store(check(range.start, range.end), Ordering::Release);
        Some(slot)
    }

    pub fn clear(&mut self, slot: u16) {
        let w = &self.words()[slot as usize * SLOT_WORDS..][..SLOT_WORDS];
        w[2].store(0, Ordering::Release);
        self.free.push(slot);
    }

    /// A graceful stop: nothing is in flight, the file goes.
    pub fn remove(self) {
        let path = self.path.clone();
        drop(self);
        let _ = std::fs::remove_file(path);
    }
}

/// The ranges a journal file left by a process that died names as in flight.
pub fn read_inflight(dir: &Path) -> Vec<Range<u64>> {
    let Ok(bytes) = std::fs::read(dir.join(INFLIGHT_FILE)) else {
        return Vec::new();
    };
    let word = |i: usize| {
        bytes
            .get(i * 8..i * 8 + 8)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
    };
    (0..bytes.len() / (SLOT_WORDS * 8))
        .filter_map(|s| {
            let (start, end, c) = (
                word(s * SLOT_WORDS),
                word(s * SLOT_WORDS + 1),
                word(s * SLOT_WORDS + 2),
            );
            (c != 0 && c == check(start, end) && start < end).then_some(start..end)
        })
        .collect()
}

/// Ranges of records that were in flight at crashes, with how many crashes each was part of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Suspects {
    /// Sorted by start; ranges do not overlap.
    pub ranges: Vec<(Range<u64>, u32)>,
}

/// Crashes a record must have been in flight for, alone, to be set aside.
pub const POISON_AFTER: u32 = 2;

impl Suspects {
    /// What the next start knows, given the suspects before the crash and the ranges in flight
    /// when it happened. A record in flight alone that was a suspect has one crash more; any
    /// other range in flight is a suspect of one crash. Suspects wholly below `first_unacked`
    /// were processed since: dropped.
    pub fn after_crash(&self, inflight: &[Range<u64>], first_unacked: u64) -> Suspects {
        let mut out: Vec<(Range<u64>, u32)> = self
            .ranges
            .iter()
            .filter(|(r, _)| r.end > first_unacked)
            .cloned()
            .collect();
        for r in inflight.iter().filter(|r| r.end > first_unacked) {
            let alone = r.end - r.start == 1;
            let before = out
                .iter()
                .filter(|(s, _)| s.start < r.end && r.start < s.end)
                .map(|(_, n)| *n)
                .max();
            let crashes = match (alone, before) {
                (true, Some(n)) => n + 1,
                _ => 1,
            };
            if alone && before.is_some() {
                // The record gets a range of its own, cut out of its suspect range.
                let mut split = Vec::with_capacity(out.len() + 2);
                for (s, n) in out.drain(..) {
                    if s.start <= r.start && r.start < s.end {
                        if s.start < r.start {
                            split.push((s.start..r.start, n));
                        }
                        split.push((r.clone(), crashes));
                        if r.end < s.end {
                            split.push((r.end..s.end, n));
                        }
                    } else {
                        split.push((s, n));
                    }
                }
                out = split;
            } else if before.is_none() {
                out.push((r.clone(), crashes));
            }
        }
        out.sort_by_key(|(r, _)| r.start);
        Suspects { ranges: out }
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// What the reader may hand out from sequence `seq` on: `(how many records at most,
    /// whether the first is poison)`; `None` when no suspect lies at or after `seq`.
    pub fn limit_at(&self, seq: u64) -> Option<(u64, bool)> {
        let (r, n) = self.ranges.iter().find(|(r, _)| r.end > seq)?;
        Some(if r.start <= seq {
            (1, *n >= POISON_AFTER && r.end - r.start == 1)
        } else {
            (r.start - seq, false)
        })
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = b"SLQS".to_vec();
        out.extend_from_slice(&(self.ranges.len() as u32).to_le_bytes());
        for (r, n) in &self.ranges {
            out.extend_from_slice(&r.start.to_le_bytes());
            out.extend_from_slice(&r.end.to_le_bytes());
            out.extend_from_slice(&n.to_le_bytes());
        }
        let crc = crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    fn decode(b: &[u8]) -> Option<Suspects> {
        let (body, crc) = b.split_at_checked(b.len().checked_sub(4)?)?;
        if body.get(..4)? != b"SLQS" || crc32c(body).to_le_bytes() != *crc {
            return None;
        }
        let n = u32::from_le_bytes(body.get(4..8)?.try_into().ok()?) as usize;
        let entries = body.get(8..)?;
        if entries.len() != n * 20 {
            return None;
        }
        let ranges = entries
            .chunks_exact(20)
            .map(|e| {
                let u =
                    |at: usize| u64::from_le_bytes(e[at..at + 8].try_into().unwrap_or_default());
                let crashes = u32::from_le_bytes(e[16..20].try_into().unwrap_or_default());
                (u(0)..u(8), crashes)
            })
            .collect();
        Some(Suspects { ranges })
    }

    /// The suspects `<dir>/suspects` holds (none when absent or damaged).
    pub fn read(dir: &Path) -> Suspects {
        std::fs::read(dir.join(SUSPECTS_FILE))
            .ok()
            .and_then(|b| Suspects::decode(&b))
            .unwrap_or_default()
    }

    /// Writes them to `<dir>/suspects` (whole, through a renamed temporary file), or removes
    /// the file when there are none.
    pub fn write(&self, dir: &Path) {
        let path = dir.join(SUSPECTS_FILE);
        if self.is_empty() {
            let _ = std::fs::remove_file(&path);
            return;
        }
        let tmp = dir.join(format!("{SUSPECTS_FILE}.tmp"));
        let written =
            std::fs::write(&tmp, self.encode()).and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "cannot record the events in flight at the crash (crash-loop protection is off for them)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_in_flight_becomes_a_suspect_then_its_record_alone_is_poison() {
        let none = Suspects::default();
        let first = none.after_crash(&[10..20, 40..45], 0);
        assert_eq!(first.ranges, vec![(10..20, 1), (40..45, 1)]);
        // Read one by one from a suspect; before one, up to it.
        assert_eq!(first.limit_at(0), Some((10, false)));
        assert_eq!(first.limit_at(12), Some((1, false)));
        assert_eq!(first.limit_at(20), Some((20, false)));
        assert_eq!(first.limit_at(45), None);
        // The second crash comes with record 13 in flight alone (and another batch).
        let second = first.after_crash(&[13..14, 60..70], 0);
        assert_eq!(
            second.ranges,
            vec![
                (10..13, 1),
                (13..14, 2),
                (14..20, 1),
                (40..45, 1),
                (60..70, 1)
            ]
        );
        assert_eq!(second.limit_at(13), Some((1, true)));
        assert_eq!(second.limit_at(12), Some((1, false)));
        // Once acked past, suspects go.
        let third = second.after_crash(&[], 50);
        assert_eq!(third.ranges, vec![(60..70, 1)]);
    }

    #[test]
    fn suspects_round_trip_and_damage_reads_as_none() {
        let s = Suspects {
            ranges: vec![(1..5, 1), (7..8, 2)],
        };
        assert_eq!(Suspects::decode(&s.encode()), Some(s.clone()));
        let mut bad = s.encode();
        bad[10] ^= 1;
        assert_eq!(Suspects::decode(&bad), None);
        assert_eq!(Suspects::decode(&[]), None);
    }

    #[test]
    fn slots_left_by_a_dead_process_are_read_back() {
        let dir = std::env::temp_dir().join(format!("sluice-inflight-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut j = Journal::create(&dir).unwrap();
        let a = j.record(5..10).unwrap();
        let _b = j.record(10..12).unwrap();
        j.clear(a);
        let _c = j.record(12..13).unwrap();
        // As a killed process leaves it: the mapping's stores are in the file.
        std::mem::forget(j);
        let mut got = read_inflight(&dir);
        got.sort_by_key(|r| r.start);
        assert_eq!(got, vec![10..12, 12..13]);
        Journal::create(&dir).unwrap().remove();
        assert!(read_inflight(&dir).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
