//! The on-disk formats: page header, record framing and checkpoint slots. All integers are
//! little-endian; checksums are CRC-32C.
//!
//! Page file `page.<N>`:
//! ```text
//! header (32 bytes): "SLQP" | version u32 = 1 | page number u64 | first sequence u64
//!                    | crc32c(previous 24 bytes) u32 | zero u32
//! records, back to back:
//!     crc u32 | payload length u32 | sequence u64 | payload
//!     crc = crc32c(payload ++ sequence as 8 LE bytes)
//! ```
//! Records in a page carry consecutive sequence numbers starting at the header's first
//! sequence, and pages follow each other without gaps. Each record is self-describing (its
//! sequence, length and checksum), so records can be found again past damaged bytes: a
//! position holds a record if its checksum matches and its sequence is the one expected or
//! later ([`crate::scan`]).
//!
//! Checkpoint file `checkpoint`: two slots of `slot size` bytes each, rewritten in place, each
//! write into the slot that does not hold the newest synced checkpoint, so that writing a
//! checkpoint needs no new disk space and a torn write leaves the other slot intact:
//! ```text
//! slot (32-byte header): "SLQC" | version u32 = 2 | slot size u32 | body length u32
//!                        | generation u64 | crc32c(bytes 4..24 ++ body) u32 | zero u32 | body
//! body: next sequence u64 | page count u32 | per page (48 bytes):
//!       page number u64 | first sequence u64 | record count u64 | byte length u64
//!       | first unacked sequence u64 | byte offset of the first unacked record u64
//! ```
//! The valid slot with the highest generation is the checkpoint. The last page it lists is the
//! head page as of the checkpoint; its count and length are a durable prefix (more records may
//! follow and are found by scanning). Version 1 (one unslotted checkpoint:
//! `"SLQC" | 1 | body length u32 | crc32c(body) u32 | body`) is still read.

use crate::error::{FormatError, RecordError};

/// CRC-32C (Castagnoli), the checksum of every queue file. Inputs up to [`SHORT_CRC`] bytes
/// (a log event's record) go through the CPU's `crc32` instruction one 8-byte word after
/// another; longer ones (pages' worth, checkpoints) through `crc-fast`, which runs several
/// streams at once with carry-less multiplication and pays a set-up for it.
pub fn crc32c(data: &[u8]) -> u32 {
    if data.len() <= SHORT_CRC {
        if let Some(state) = crc32c_words(!0, data) {
            return !state;
        }
    }
    crc_fast::crc32_iscsi(data)
}

/// The longest input [`crc32c`] checksums word by word. `crc-fast`'s short path stops at 256
/// bytes; past that its set-up costs more than one stream of `crc32` instructions until about
/// 700 (on this project's 2-core VM: 300 bytes 27 against 46 ns, 400 bytes 35 against 54,
/// 751 bytes 80 against 81, 1 KB 105 against 94).
pub const SHORT_CRC: usize = 640;

/// The running CRC-32C state (the checksum with its final XOR undone) after `data`, by the
/// CPU's CRC instruction: `None` where the CPU has none.
fn crc32c_words(state: u32, data: &[u8]) -> Option<u32> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        #[target_feature(enable = "sse4.2")]
        fn words(mut state: u32, data: &[u8]) -> u32 {
            use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
            let mut chunks = data.chunks_exact(8);
            for w in &mut chunks {
                let w = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
                // Truncation: the instruction leaves the 32-bit state in the low half.
                state = _mm_crc32_u64(u64::from(state), w) as u32;
            }
            for &b in chunks.remainder() {
                state = _mm_crc32_u8(state, b);
            }
            state
        }
        // SAFETY: the CPU has SSE 4.2, checked just above.
        return Some(unsafe { words(state, data) });
    }
    #[cfg(target_arch = "aarch64")]
    if std::arch::is_aarch64_feature_detected!("crc") {
        #[target_feature(enable = "crc")]
        fn words(mut state: u32, data: &[u8]) -> u32 {
            use std::arch::aarch64::{__crc32cb, __crc32cd};
            let mut chunks = data.chunks_exact(8);
            for w in &mut chunks {
                let w = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
                state = __crc32cd(state, w);
            }
            for &b in chunks.remainder() {
                state = __crc32cb(state, b);
            }
            state
        }
        // SAFETY: the CPU has the CRC extension, checked just above.
        return Some(unsafe { words(state, data) });
    }
    let _ = (state, data);
    None
}

/// The CRC-32C of the bytes `crc` is the checksum of, followed by `data`.
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    // The running state of a reflected CRC-32 is the finished value with its final XOR
    // undone.
    let mut d =
        crc_fast::Digest::new_with_init_state(crc_fast::CrcAlgorithm::Crc32Iscsi, u64::from(!crc));
    d.update(data);
    d.finalize() as u32
}

/// The CRC-32C of the bytes `crc` is the checksum of, followed by `v`'s 8 little-endian
/// bytes: a record's sequence. One instruction where the CPU has one (`crc32` of SSE 4.2 on
/// x86-64, `crc32cx` on aarch64); `crc-fast`'s digest, made for longer inputs, costs more
/// than the payload's own checksum for these 8 bytes.
pub fn crc32c_append_u64(crc: u32, v: u64) -> u32 {
    match crc32c_words(!crc, &v.to_le_bytes()) {
        Some(state) => !state,
        None => crc32c_append(crc, &v.to_le_bytes()),
    }
}

pub const PAGE_MAGIC: &[u8; 4] = b"SLQP";
pub const CHECKPOINT_MAGIC: &[u8; 4] = b"SLQC";
/// Version of the page format.
pub const VERSION: u32 = 1;
/// Version of the checkpoint format (slots).
pub const CHECKPOINT_VERSION: u32 = 2;
pub const PAGE_HEADER_LEN: usize = 32;
pub const RECORD_HEADER_LEN: usize = 16;
pub const SLOT_HEADER_LEN: usize = 32;
/// Bytes per page in a checkpoint body, and the body's fixed part.
pub const CHECKPOINT_PAGE_LEN: usize = 48;
pub const CHECKPOINT_BODY_FIXED: usize = 12;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    pub num: u64,
    pub first_seq: u64,
}

fn magic(b: &[u8]) -> [u8; 4] {
    b[0..4].try_into().expect("4 bytes")
}

impl PageHeader {
    pub fn encode(&self) -> [u8; PAGE_HEADER_LEN] {
        let mut b = [0u8; PAGE_HEADER_LEN];
        b[0..4].copy_from_slice(PAGE_MAGIC);
        b[4..8].copy_from_slice(&VERSION.to_le_bytes());
        b[8..16].copy_from_slice(&self.num.to_le_bytes());
        b[16..24].copy_from_slice(&self.first_seq.to_le_bytes());
        let crc = crc32c(&b[0..24]);
        b[24..28].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<PageHeader, FormatError> {
        const WHAT: &str = "page header";
        if b.len() < PAGE_HEADER_LEN {
            return Err(FormatError::TooShort {
                what: WHAT,
                len: b.len(),
                need: PAGE_HEADER_LEN,
            });
        }
        if &b[0..4] != PAGE_MAGIC {
            return Err(FormatError::BadMagic {
                what: "page file",
                found: magic(b),
            });
        }
        if crc32c(&b[0..24]) != u32_at(b, 24) {
            return Err(FormatError::Checksum { what: WHAT });
        }
        let version = u32_at(b, 4);
        if version != VERSION {
            return Err(FormatError::UnsupportedVersion {
                what: "page",
                found: version,
                supported: VERSION,
            });
        }
        Ok(PageHeader {
            num: u64_at(b, 8),
            first_seq: u64_at(b, 16),
        })
    }
}

pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// A batch of records being built by a writer, outside any lock: payloads are framed and
/// checksummed here; [`RecordBatch::stamp`] fills in sequence numbers under the queue's lock
/// (an 8-byte write and an 8-byte checksum extension per record).
#[derive(Debug, Default, Clone)]
pub struct RecordBatch {
    buf: Vec<u8>,
    /// Start offset of each record in `buf`, and the checksum of its payload alone.
    records: Vec<(usize, u32)>,
}

impl RecordBatch {
    pub fn new() -> Self {
        RecordBatch::default()
    }

    pub fn with_capacity(bytes: usize, records: usize) -> Self {
        RecordBatch {
            buf: Vec::with_capacity(bytes),
            records: Vec::with_capacity(records),
        }
    }

    /// Appends one record whose payload `write` appends to the given buffer.
    pub fn push_with(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        let start = self.buf.len();
        self.buf.extend_from_slice(&[0u8; RECORD_HEADER_LEN]);
        write(&mut self.buf);
        let payload = &self.buf[start + RECORD_HEADER_LEN..];
        let len = payload.len() as u32;
        let crc = crc32c(payload);
        self.buf[start + 4..start + 8].copy_from_slice(&len.to_le_bytes());
        self.records.push((start, crc));
    }

    pub fn push(&mut self, payload: &[u8]) {
        self.push_with(|b| b.extend_from_slice(payload));
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Total bytes, headers included.
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }

    /// Size of record `i`, header included.
    pub fn record_size(&self, i: usize) -> usize {
        let end = self.records.get(i + 1).map_or(self.buf.len(), |r| r.0);
        end - self.records[i].0
    }

    /// Writes sequence numbers `first..` into records `range` and completes their checksums;
    /// returns the bytes of those records.
    pub fn stamp(&mut self, range: std::ops::Range<usize>, first_seq: u64) -> &[u8] {
        for (k, i) in range.clone().enumerate() {
            let (start, payload_crc) = self.records[i];
            let seq = first_seq + k as u64;
            let crc = crc32c_append_u64(payload_crc, seq);
            self.buf[start..start + 4].copy_from_slice(&crc.to_le_bytes());
            self.buf[start + 8..start + 16].copy_from_slice(&seq.to_le_bytes());
        }
        let start = self.records[range.start].0;
        let end = self.records.get(range.end).map_or(self.buf.len(), |r| r.0);
        &self.buf[start..end]
    }

    /// Drops records `len..`.
    pub fn truncate(&mut self, len: usize) {
        if len < self.records.len() {
            self.buf.truncate(self.records[len].0);
            self.records.truncate(len);
        }
    }

    pub fn clear(&mut self) {
        self.buf.clear();
        self.records.clear();
    }
}

/// What the bytes at one position hold.
#[derive(Debug, PartialEq, Eq)]
pub enum Scan<'a> {
    /// A valid record: its payload and total size.
    Record {
        seq: u64,
        payload: &'a [u8],
        size: usize,
    },
    /// Fewer bytes than the record's header or payload needs (or a zeroed header).
    Incomplete,
    /// A checksum or sequence mismatch (a torn write, or corruption).
    Invalid(RecordError),
}

/// Reads the record at the start of `b`, expecting sequence `expect_seq`.
pub fn scan_record(b: &[u8], expect_seq: u64) -> Scan<'_> {
    if b.len() < RECORD_HEADER_LEN {
        return Scan::Incomplete;
    }
    let crc = u32_at(b, 0);
    let len = u32_at(b, 4);
    let seq = u64_at(b, 8);
    if crc == 0 && len == 0 && seq == 0 {
        return Scan::Incomplete;
    }
    if b.len() - RECORD_HEADER_LEN < len as usize {
        return Scan::Incomplete;
    }
    let payload = &b[RECORD_HEADER_LEN..RECORD_HEADER_LEN + len as usize];
    if record_crc(payload, seq) != crc {
        return Scan::Invalid(RecordError::Checksum { seq, len });
    }
    if seq != expect_seq {
        return Scan::Invalid(RecordError::Sequence {
            found: seq,
            expected: expect_seq,
        });
    }
    Scan::Record {
        seq,
        payload,
        size: RECORD_HEADER_LEN + len as usize,
    }
}

fn record_crc(payload: &[u8], seq: u64) -> u32 {
    crc32c_append_u64(crc32c(payload), seq)
}

/// One page's entry in a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageCheckpoint {
    pub num: u64,
    pub first_seq: u64,
    pub count: u64,
    pub bytes: u64,
    pub first_unacked_seq: u64,
    pub first_unacked_offset: u64,
}

impl PageCheckpoint {
    /// A page with no record yet, whose first record will carry `first_seq`.
    pub fn empty(num: u64, first_seq: u64) -> Self {
        PageCheckpoint {
            num,
            first_seq,
            count: 0,
            bytes: PAGE_HEADER_LEN as u64,
            first_unacked_seq: first_seq,
            first_unacked_offset: PAGE_HEADER_LEN as u64,
        }
    }

    pub fn end_seq(&self) -> u64 {
        self.first_seq + self.count
    }

    /// Records from the first unacked one to the end of the page.
    pub fn unacked(&self) -> u64 {
        self.end_seq().saturating_sub(self.first_unacked_seq)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Checkpoint {
    pub next_seq: u64,
    pub pages: Vec<PageCheckpoint>,
}

const CHECKPOINT: &str = "checkpoint";

impl Checkpoint {
    pub fn body_len(pages: usize) -> usize {
        CHECKPOINT_BODY_FIXED + pages * CHECKPOINT_PAGE_LEN
    }

    /// Appends the body to `out`.
    pub fn encode_body(&self, out: &mut Vec<u8>) {
        out.reserve(Checkpoint::body_len(self.pages.len()));
        out.extend_from_slice(&self.next_seq.to_le_bytes());
        out.extend_from_slice(&(self.pages.len() as u32).to_le_bytes());
        for p in &self.pages {
            for v in [
                p.num,
                p.first_seq,
                p.count,
                p.bytes,
                p.first_unacked_seq,
                p.first_unacked_offset,
            ] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }

    pub fn decode_body(body: &[u8]) -> Result<Checkpoint, FormatError> {
        if body.len() < CHECKPOINT_BODY_FIXED {
            return Err(FormatError::TooShort {
                what: "checkpoint body",
                len: body.len(),
                need: CHECKPOINT_BODY_FIXED,
            });
        }
        let next_seq = u64_at(body, 0);
        let n = u32_at(body, 8) as usize;
        if body.len() != Checkpoint::body_len(n) {
            return Err(FormatError::Inconsistent {
                what: CHECKPOINT,
                detail: format!("lists {n} pages but holds {} bytes", body.len()),
            });
        }
        let pages = (0..n)
            .map(|i| {
                let at = CHECKPOINT_BODY_FIXED + i * CHECKPOINT_PAGE_LEN;
                let v = |k: usize| u64_at(body, at + 8 * k);
                PageCheckpoint {
                    num: v(0),
                    first_seq: v(1),
                    count: v(2),
                    bytes: v(3),
                    first_unacked_seq: v(4),
                    first_unacked_offset: v(5),
                }
            })
            .collect();
        Ok(Checkpoint { next_seq, pages })
    }

    /// One slot's bytes (header and body, without padding) for generation `generation` in a
    /// file of `slot_size`-byte slots.
    pub fn encode_slot(&self, generation: u64, slot_size: u32) -> Vec<u8> {
        let mut out = vec![0u8; SLOT_HEADER_LEN];
        self.encode_body(&mut out);
        let body_len = (out.len() - SLOT_HEADER_LEN) as u32;
        out[0..4].copy_from_slice(CHECKPOINT_MAGIC);
        out[4..8].copy_from_slice(&CHECKPOINT_VERSION.to_le_bytes());
        out[8..12].copy_from_slice(&slot_size.to_le_bytes());
        out[12..16].copy_from_slice(&body_len.to_le_bytes());
        out[16..24].copy_from_slice(&generation.to_le_bytes());
        let crc = crc32c_append(crc32c(&out[4..24]), &out[SLOT_HEADER_LEN..]);
        out[24..28].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes the slot at the start of `b` (which may run on past the slot): the checkpoint,
    /// its generation and the file's slot size.
    pub fn decode_slot(b: &[u8]) -> Result<Slot, FormatError> {
        const WHAT: &str = "checkpoint slot";
        if b.len() < SLOT_HEADER_LEN {
            return Err(FormatError::TooShort {
                what: WHAT,
                len: b.len(),
                need: SLOT_HEADER_LEN,
            });
        }
        if &b[0..4] != CHECKPOINT_MAGIC {
            return Err(FormatError::BadMagic {
                what: WHAT,
                found: magic(b),
            });
        }
        let slot_size = u32_at(b, 8);
        let body_len = u32_at(b, 12) as usize;
        if b.len() < SLOT_HEADER_LEN + body_len || SLOT_HEADER_LEN + body_len > slot_size as usize {
            return Err(FormatError::Inconsistent {
                what: WHAT,
                detail: format!("body of {body_len} bytes in a slot of {slot_size}"),
            });
        }
        let body = &b[SLOT_HEADER_LEN..SLOT_HEADER_LEN + body_len];
        if crc32c_append(crc32c(&b[4..24]), body) != u32_at(b, 24) {
            return Err(FormatError::Checksum { what: WHAT });
        }
        let version = u32_at(b, 4);
        if version != CHECKPOINT_VERSION {
            return Err(FormatError::UnsupportedVersion {
                what: CHECKPOINT,
                found: version,
                supported: CHECKPOINT_VERSION,
            });
        }
        Ok(Slot {
            checkpoint: Checkpoint::decode_body(body)?,
            generation: u64_at(b, 16),
            slot_size,
        })
    }

    /// Decodes a version 1 checkpoint file (one unslotted checkpoint), if `b` is one.
    pub fn decode_v1(b: &[u8]) -> Option<Result<Checkpoint, FormatError>> {
        if b.len() < 16 || &b[0..4] != CHECKPOINT_MAGIC || u32_at(b, 4) != 1 {
            return None;
        }
        let len = u32_at(b, 8) as usize;
        let body = &b[16..];
        Some(if body.len() != len {
            Err(FormatError::Inconsistent {
                what: CHECKPOINT,
                detail: format!("body is {} bytes, header says {len}", body.len()),
            })
        } else if crc32c(body) != u32_at(b, 12) {
            Err(FormatError::Checksum { what: CHECKPOINT })
        } else {
            Checkpoint::decode_body(body)
        })
    }
}

/// A decoded checkpoint slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    pub checkpoint: Checkpoint,
    pub generation: u64,
    pub slot_size: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn crc32c_appends_a_sequence_as_its_little_endian_bytes() {
        for (data, seq) in [
            (&b""[..], 0u64),
            (b"payload", 7),
            (b"x", u64::MAX),
            (b"abc", 1 << 40),
        ] {
            let mut whole = data.to_vec();
            whole.extend_from_slice(&seq.to_le_bytes());
            assert_eq!(crc32c_append_u64(crc32c(data), seq), crc32c(&whole));
            assert_eq!(
                crc32c_append_u64(crc32c(data), seq),
                crc32c_append(crc32c(data), &seq.to_le_bytes())
            );
        }
    }

    #[test]
    fn crc32c_is_castagnoli_and_appends() {
        // The catalogue's check value for CRC-32C, and RFC 3720's 32 zero bytes.
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(crc32c(b""), 0);
    }

    proptest! {
        /// Both ways of checksumming (word by word up to `SHORT_CRC`, `crc-fast` past it)
        /// agree with `crc-fast` at every length and alignment around the switch: fails if
        /// the word loop drops or misreads a byte.
        #[test]
        fn crc32c_matches_crc_fast_at_every_length(
            data in proptest::collection::vec(any::<u8>(), 0..(2 * SHORT_CRC)),
            skip in 0usize..8,
        ) {
            let data = &data[skip.min(data.len())..];
            prop_assert_eq!(crc32c(data), crc_fast::crc32_iscsi(data));
        }

        #[test]
        fn crc32c_append_equals_the_checksum_of_both_parts(
            data in proptest::collection::vec(any::<u8>(), 0..3000),
            cut in any::<prop::sample::Index>(),
        ) {
            let cut = cut.index(data.len() + 1);
            prop_assert_eq!(crc32c_append(crc32c(&data[..cut]), &data[cut..]), crc32c(&data));
        }
    }

    #[test]
    fn records_scan_back_and_detect_tears() {
        let mut b = RecordBatch::new();
        b.push(b"hello");
        b.push(b"");
        b.push(b"world!");
        let bytes = b.stamp(0..3, 41).to_vec();
        let mut at = 0;
        let mut seen = Vec::new();
        for seq in 41..44 {
            match scan_record(&bytes[at..], seq) {
                Scan::Record { payload, size, .. } => {
                    seen.push(payload.to_vec());
                    at += size;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(seen, [b"hello".to_vec(), vec![], b"world!".to_vec()]);
        assert_eq!(scan_record(&bytes[at..], 44), Scan::Incomplete);
        assert!(matches!(scan_record(&bytes, 40), Scan::Invalid(_)));
        let mut torn = bytes.clone();
        torn[20] ^= 1;
        assert!(matches!(scan_record(&torn, 41), Scan::Invalid(_)));
        assert_eq!(scan_record(&bytes[..20], 41), Scan::Incomplete);
    }

    #[test]
    fn page_header_round_trip_and_errors() {
        let h = PageHeader {
            num: 7,
            first_seq: 1 << 40,
        };
        assert_eq!(PageHeader::decode(&h.encode()), Ok(h));
        let mut bad = h.encode();
        bad[10] ^= 1;
        assert_eq!(
            PageHeader::decode(&bad),
            Err(FormatError::Checksum {
                what: "page header"
            })
        );
        assert!(matches!(
            PageHeader::decode(&[0; 32]),
            Err(FormatError::BadMagic { .. })
        ));
    }

    fn sample() -> Checkpoint {
        Checkpoint {
            next_seq: 9,
            pages: vec![PageCheckpoint {
                num: 1,
                first_seq: 2,
                count: 3,
                bytes: 4,
                first_unacked_seq: 5,
                first_unacked_offset: 6,
            }],
        }
    }

    #[test]
    fn version_1_checkpoints_are_still_read() {
        let cp = sample();
        let mut body = Vec::new();
        cp.encode_body(&mut body);
        let mut v1 = Vec::new();
        v1.extend_from_slice(CHECKPOINT_MAGIC);
        v1.extend_from_slice(&1u32.to_le_bytes());
        v1.extend_from_slice(&(body.len() as u32).to_le_bytes());
        v1.extend_from_slice(&crc32c(&body).to_le_bytes());
        v1.extend_from_slice(&body);
        assert_eq!(Checkpoint::decode_v1(&v1), Some(Ok(cp.clone())));
        assert_eq!(Checkpoint::decode_v1(&cp.encode_slot(1, 4096)), None);
    }

    proptest! {
        #[test]
        fn checkpoint_slots_round_trip(next in any::<u64>(), generation in any::<u64>(), pages in proptest::collection::vec(any::<[u64; 6]>(), 0..20)) {
            let cp = Checkpoint {
                next_seq: next,
                pages: pages.iter().map(|p| PageCheckpoint {
                    num: p[0], first_seq: p[1], count: p[2], bytes: p[3], first_unacked_seq: p[4], first_unacked_offset: p[5],
                }).collect(),
            };
            let mut slot = cp.encode_slot(generation, 4096);
            // Whatever follows the slot's body (padding, the other slot) is ignored.
            slot.extend_from_slice(&[0xAB; 40]);
            let decoded = Checkpoint::decode_slot(&slot).unwrap();
            prop_assert_eq!(decoded, Slot { checkpoint: cp, generation, slot_size: 4096 });
        }

        #[test]
        fn checkpoint_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Checkpoint::decode_slot(&bytes);
            let _ = Checkpoint::decode_v1(&bytes);
        }

        #[test]
        fn corrupted_checkpoint_slot_is_rejected(flip in 0usize..(SLOT_HEADER_LEN + 12 + 48), bit in 0u8..8) {
            let mut b = sample().encode_slot(3, 4096);
            b[flip] ^= 1 << bit;
            // Bytes 28..32 are reserved (zero, unchecked).
            prop_assume!(!(28..32).contains(&flip));
            prop_assert!(Checkpoint::decode_slot(&b).is_err());
        }

        #[test]
        fn scan_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..100), seq in any::<u64>()) {
            let _ = scan_record(&bytes, seq);
        }
    }
}
