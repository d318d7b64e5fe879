//! The one routine that reads records out of a page file, used by the reader (within the
//! bytes published to it), by recovery (past the last checkpoint) and by `queue verify` and
//! `queue repair` (every page).
//!
//! A [`RecordCursor`] walks a page from a known position and sequence. At a position that does
//! not hold the expected record (a checksum or sequence mismatch, a length that runs past the
//! end, zeros) it looks further for the next intact record, whose sequence must be higher: each
//! record carries its own checksum and sequence, so one damaged record costs that record only
//! (Vector #18336, #17644: a reader stuck on one bad record). What it finds is one of:
//! - [`Step::Record`]: the expected record;
//! - [`Step::Damaged`]: bytes skipped to reach the next intact record, and the sequences lost;
//! - [`Step::End`]: no intact record before the limit. Zeros or a partial record at the end
//!   of a page are what a crash leaves (a torn tail); within bytes known to hold records, the
//!   caller counts the records that should have been there as lost.

use std::io;
use std::ops::Range;

use crate::error::RecordError;
use crate::format::{scan_record, u32_at, u64_at, Scan, RECORD_HEADER_LEN};
use crate::storage::QueueFile;

/// Bytes read from a page file at once.
pub const READ_CHUNK: usize = 1 << 20;

/// Bytes that did not hold the expected record, followed by an intact one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub offset: u64,
    pub bytes: u64,
    /// Sequences of the records that were there.
    pub lost: Range<u64>,
    pub reason: RecordError,
}

/// How the valid records of a page end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// At the limit: nothing after the last record.
    Clean,
    /// Zeros from `offset` to the limit.
    Zeroed { offset: u64, bytes: u64 },
    /// Bytes from `offset` to the limit that hold no intact record (a torn write after a
    /// crash, or damage).
    Torn {
        offset: u64,
        bytes: u64,
        reason: RecordError,
    },
}

impl End {
    /// Why records that should be there are not, when the end comes before them.
    pub fn reason(&self) -> RecordError {
        match self {
            End::Torn { reason, .. } => reason.clone(),
            End::Zeroed { .. } => RecordError::Zeros,
            End::Clean => RecordError::FileTooShort,
        }
    }

    /// Where the valid data ends.
    pub fn offset(&self, limit: u64) -> u64 {
        match self {
            End::Clean => limit,
            End::Zeroed { offset, .. } | End::Torn { offset, .. } => *offset,
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum Step<'a> {
    /// The expected record; the cursor is past it.
    Record { seq: u64, payload: &'a [u8] },
    /// Damaged bytes; the cursor is at the next intact record.
    Damaged(Damage),
    /// No intact record at or after the cursor, which stays where the valid data ends.
    End(End),
}

/// A position in a page file and the sequence expected there, with a read buffer.
#[derive(Debug, Default)]
pub struct RecordCursor {
    pub offset: u64,
    pub seq: u64,
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    buf_offset: u64,
}

impl RecordCursor {
    pub fn new(offset: u64, seq: u64) -> Self {
        RecordCursor {
            offset,
            seq,
            buf: Vec::new(),
            buf_offset: 0,
        }
    }

    /// Moves to another position, keeping the buffer (valid for the same file only).
    pub fn seek(&mut self, offset: u64, seq: u64) {
        self.offset = offset;
        self.seq = seq;
    }

    /// Forgets the buffer (the cursor moves to another file).
    pub fn reset(&mut self, offset: u64, seq: u64) {
        self.seek(offset, seq);
        self.buf.clear();
        self.buf_offset = 0;
    }

    /// Bytes buffered from `offset`.
    fn buffered(&self, offset: u64) -> &[u8] {
        let end = self.buf_offset + self.buf.len() as u64;
        if offset < self.buf_offset || offset >= end {
            return &[];
        }
        &self.buf[(offset - self.buf_offset) as usize..]
    }

    /// Makes `need` bytes from `offset` (as many as the file and `limit` have) buffered, reading
    /// a chunk or more. Returns how many bytes from `offset` are buffered, at most up to `limit`.
    fn fill(
        &mut self,
        file: &dyn QueueFile,
        offset: u64,
        need: usize,
        limit: u64,
    ) -> io::Result<usize> {
        let room = limit.saturating_sub(offset) as usize;
        let have = self.buffered(offset).len();
        if have < need.min(room) {
            let len = need.max(READ_CHUNK).min(room);
            self.buf.resize(len, 0);
            let got = file.read_at(offset, &mut self.buf)?;
            self.buf.truncate(got);
            self.buf_offset = offset;
        }
        Ok(self.buffered(offset).len().min(room))
    }

    /// The next step from the cursor, reading no further than `limit` (a file offset). Intact
    /// records found past damage must have a sequence below `seq_bound` (the end of the page
    /// when known; otherwise the most records the bytes could hold).
    pub fn next(
        &mut self,
        file: &dyn QueueFile,
        limit: u64,
        seq_bound: Option<u64>,
    ) -> io::Result<Step<'_>> {
        if self.offset >= limit {
            return Ok(Step::End(End::Clean));
        }
        let (offset, seq) = (self.offset, self.seq);
        let mut have = self.fill(file, offset, RECORD_HEADER_LEN, limit)?;
        let reason = loop {
            let b = &self.buffered(offset)[..have];
            match scan_record(b, seq) {
                Scan::Record { size, .. } => {
                    self.offset += size as u64;
                    self.seq += 1;
                    let start = (offset - self.buf_offset) as usize + RECORD_HEADER_LEN;
                    let payload = &self.buf[start..start + size - RECORD_HEADER_LEN];
                    return Ok(Step::Record { seq, payload });
                }
                Scan::Invalid(reason) => break reason,
                Scan::Incomplete => {
                    let room = limit - offset;
                    if b.len() < RECORD_HEADER_LEN {
                        break if room < RECORD_HEADER_LEN as u64 {
                            RecordError::PartialHeader
                        } else {
                            RecordError::FileTooShort
                        };
                    }
                    let len = u32_at(b, 4);
                    let need = RECORD_HEADER_LEN + len as usize;
                    if need as u64 > room {
                        break RecordError::RunsPastEnd { len };
                    }
                    if have >= need {
                        // Only an all-zero header is incomplete with its bytes all there.
                        break RecordError::Zeros;
                    }
                    let got = self.fill(file, offset, need, limit)?;
                    if got < need {
                        break RecordError::FileTooShort;
                    }
                    have = got;
                }
            }
        };
        let bound =
            seq_bound.unwrap_or_else(|| seq + (limit - offset) / RECORD_HEADER_LEN as u64 + 1);
        match self.find_record(file, offset, limit, seq + 1..bound)? {
            Found::Record(at, found) => {
                self.seek(at, found);
                Ok(Step::Damaged(Damage {
                    offset,
                    bytes: at - offset,
                    lost: seq..found,
                    reason,
                }))
            }
            Found::Zeros => Ok(Step::End(End::Zeroed {
                offset,
                bytes: limit - offset,
            })),
            Found::Nothing => Ok(Step::End(End::Torn {
                offset,
                bytes: limit - offset,
                reason,
            })),
        }
    }

    /// Looks from `from` (inclusive) to `limit` for an intact record whose sequence is in
    /// `seqs`; returns its offset and sequence, and moves the cursor there.
    pub fn find(
        &mut self,
        file: &dyn QueueFile,
        from: u64,
        limit: u64,
        seqs: Range<u64>,
    ) -> io::Result<Option<(u64, u64)>> {
        Ok(match self.find_record(file, from, limit, seqs)? {
            Found::Record(at, seq) => {
                self.seek(at, seq);
                Some((at, seq))
            }
            Found::Zeros | Found::Nothing => None,
        })
    }

    fn find_record(
        &mut self,
        file: &dyn QueueFile,
        from: u64,
        limit: u64,
        seqs: Range<u64>,
    ) -> io::Result<Found> {
        let mut pos = from;
        let mut zeros = true;
        let mut record = Vec::new();
        loop {
            let have = self.fill(file, pos, READ_CHUNK, limit)?;
            let window = &self.buffered(pos)[..have];
            zeros &= window.iter().all(|&b| b == 0);
            let headers = have.saturating_sub(RECORD_HEADER_LEN - 1);
            for o in 0..headers {
                let h = &window[o..];
                let seq = u64_at(h, 8);
                if !seqs.contains(&seq) {
                    continue;
                }
                let need = RECORD_HEADER_LEN + u32_at(h, 4) as usize;
                let at = pos + o as u64;
                if at + need as u64 > limit {
                    continue;
                }
                let candidate = if o + need <= window.len() {
                    &window[o..o + need]
                } else {
                    record.resize(need, 0);
                    if file.read_at(at, &mut record)? < need {
                        continue;
                    }
                    &record[..]
                };
                if matches!(scan_record(candidate, seq), Scan::Record { .. }) {
                    return Ok(Found::Record(at, seq));
                }
            }
            // The last RECORD_HEADER_LEN - 1 bytes start the next window.
            let next = pos + headers as u64;
            if next == pos || pos + have as u64 >= limit {
                // Bytes the file lacks (it is shorter than `limit`) are not zeros.
                let short = pos + (have as u64) < limit;
                return Ok(if zeros && !short {
                    Found::Zeros
                } else {
                    Found::Nothing
                });
            }
            pos = next;
        }
    }
}

enum Found {
    Record(u64, u64),
    Zeros,
    Nothing,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::RecordBatch;
    use crate::sim::SimStorage;
    use crate::storage::Storage;
    use proptest::prelude::*;

    /// A file holding records `first..first + n` (payload `rec-<seq>` padded), and each
    /// record's offset.
    fn page(first: u64, n: u64, lead: usize) -> (Vec<u8>, Vec<u64>) {
        let mut b = RecordBatch::new();
        for s in first..first + n {
            b.push(format!("rec-{s}-{}", "x".repeat((s % 7) as usize)).as_bytes());
        }
        let mut out = vec![0xEEu8; lead];
        let mut offsets = Vec::new();
        for i in 0..n as usize {
            offsets.push((out.len() + (0..i).map(|j| b.record_size(j)).sum::<usize>()) as u64);
        }
        out.extend_from_slice(b.stamp(0..n as usize, first));
        (out, offsets)
    }

    fn file(bytes: &[u8]) -> std::sync::Arc<dyn QueueFile> {
        let s = SimStorage::new();
        s.put("f", bytes);
        s.open("f").unwrap()
    }

    /// Walks the whole file: records' sequences, damages, and the end.
    fn walk(bytes: &[u8], start: u64, seq: u64) -> (Vec<u64>, Vec<Damage>, End) {
        let f = file(bytes);
        let mut c = RecordCursor::new(start, seq);
        let (mut seqs, mut damages) = (Vec::new(), Vec::new());
        loop {
            match c.next(f.as_ref(), bytes.len() as u64, None).unwrap() {
                Step::Record { seq, payload } => {
                    assert!(payload.starts_with(format!("rec-{seq}-").as_bytes()));
                    seqs.push(seq);
                }
                Step::Damaged(d) => damages.push(d),
                Step::End(e) => return (seqs, damages, e),
            }
        }
    }

    #[test]
    fn a_damaged_record_costs_that_record_only() {
        let (mut bytes, offsets) = page(100, 10, 32);
        bytes[offsets[4] as usize + 18] ^= 0x40;
        let (seqs, damages, end) = walk(&bytes, 32, 100);
        assert_eq!(seqs, [100, 101, 102, 103, 105, 106, 107, 108, 109]);
        assert_eq!(damages.len(), 1);
        assert_eq!(damages[0].lost, 104..105);
        assert_eq!(damages[0].offset, offsets[4]);
        assert_eq!(damages[0].bytes, offsets[5] - offsets[4]);
        assert_eq!(end, End::Clean);
    }

    #[test]
    fn a_damaged_length_or_a_zeroed_block_is_skipped_too() {
        let (mut bytes, offsets) = page(0, 10, 32);
        bytes[offsets[2] as usize + 4..offsets[2] as usize + 8].copy_from_slice(&[0xFF; 4]);
        let z = offsets[6] as usize;
        bytes[z..offsets[8] as usize].fill(0);
        let (seqs, damages, end) = walk(&bytes, 32, 0);
        assert_eq!(seqs, [0, 1, 3, 4, 5, 8, 9]);
        let lost: Vec<_> = damages.iter().map(|d| d.lost.clone()).collect();
        assert_eq!(lost, [2..3, 6..8]);
        assert_eq!(end, End::Clean);
    }

    #[test]
    fn torn_and_zeroed_tails_end_the_page() {
        let (bytes, offsets) = page(0, 5, 32);
        let cut = &bytes[..offsets[4] as usize + 9];
        let (seqs, damages, end) = walk(cut, 32, 0);
        assert_eq!(seqs, [0, 1, 2, 3]);
        assert!(damages.is_empty());
        assert!(matches!(end, End::Torn { offset, bytes: 9, .. } if offset == offsets[4]));
        let mut zeroed = bytes.clone();
        zeroed.extend_from_slice(&[0; 100]);
        let (seqs, _, end) = walk(&zeroed, 32, 0);
        assert_eq!(seqs.len(), 5);
        assert_eq!(
            end,
            End::Zeroed {
                offset: bytes.len() as u64,
                bytes: 100
            }
        );
    }

    #[test]
    fn records_past_a_large_damaged_stretch_are_found_across_chunks() {
        let (good, _) = page(0, 3, 32);
        let (later, _) = page(3 + 5, 4, 0);
        let mut bytes = good.clone();
        bytes.extend(std::iter::repeat_n(0x5Au8, READ_CHUNK + 777));
        bytes.extend_from_slice(&later);
        let (seqs, damages, end) = walk(&bytes, 32, 0);
        assert_eq!(seqs, [0, 1, 2, 8, 9, 10, 11]);
        assert_eq!(damages[0].lost, 3..8);
        assert_eq!(damages[0].bytes, READ_CHUNK as u64 + 777);
        assert_eq!(end, End::Clean);
    }

    #[test]
    fn a_file_shorter_than_the_limit_ends_torn() {
        let (bytes, offsets) = page(0, 5, 32);
        let f = file(&bytes[..offsets[3] as usize]);
        let mut c = RecordCursor::new(32, 0);
        let limit = bytes.len() as u64;
        let mut n = 0;
        let end = loop {
            match c.next(f.as_ref(), limit, Some(5)).unwrap() {
                Step::Record { .. } => n += 1,
                Step::Damaged(d) => panic!("{d:?}"),
                Step::End(e) => break e,
            }
        };
        assert_eq!(n, 3);
        assert!(matches!(end, End::Torn { offset, .. } if offset == offsets[3]));
        assert_eq!(c.offset, offsets[3]);
    }

    proptest! {
        #[test]
        fn any_damage_loses_only_the_records_it_touches(
            n in 1u64..40,
            at in any::<prop::sample::Index>(),
            len in 1usize..64,
            fill in any::<u8>(),
        ) {
            let (mut bytes, offsets) = page(1000, n, 32);
            let start = 32 + at.index(bytes.len() - 32);
            let end = (start + len).min(bytes.len());
            let changed = bytes[start..end].iter().any(|&b| b != fill);
            bytes[start..end].fill(fill);
            let (seqs, damages, tail) = walk(&bytes, 32, 1000);
            let record_end = |i: usize| offsets.get(i + 1).copied().unwrap_or(bytes.len() as u64);
            // Records wholly outside the damaged bytes are all delivered, in order.
            for (i, &o) in offsets.iter().enumerate() {
                let touched = (o as usize) < end && record_end(i) as usize > start;
                if !touched {
                    prop_assert!(seqs.contains(&(1000 + i as u64)), "record {} lost: {:?} {:?}", i, damages, tail);
                }
            }
            prop_assert!(seqs.windows(2).all(|w| w[0] < w[1]));
            let lost: u64 = damages.iter().map(|d| d.lost.end - d.lost.start).sum();
            let torn = offsets.iter().filter(|&&o| o >= tail.offset(bytes.len() as u64)).count() as u64;
            prop_assert_eq!(seqs.len() as u64 + lost + torn, n);
            if !changed {
                prop_assert_eq!(seqs.len() as u64, n);
            }
        }

        #[test]
        fn never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..300), seq in any::<u64>()) {
            walk(&bytes, 0, seq);
        }
    }
}
