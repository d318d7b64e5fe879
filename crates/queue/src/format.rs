//! The on-disk formats: page header, record framing and checkpoint. All integers are
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
//! sequence. A record whose length runs past the end of the file, whose checksum does not
//! match, or whose sequence is not the next one marks the end of the valid data: that is how
//! a torn write at the end of the head page is found and cut off.
//!
//! Checkpoint file `checkpoint` (replaced atomically):
//! ```text
//! "SLQC" | version u32 = 1 | body length u32 | crc32c(body) u32 | body
//! body: next sequence u64 | page count u32 | per page (48 bytes):
//!       page number u64 | first sequence u64 | record count u64 | byte length u64
//!       | first unacked sequence u64 | byte offset of the first unacked record u64
//! ```
//! The last page listed is the head page as of the checkpoint; its count and length are a
//! durable prefix (more records may follow it and are found by scanning).

pub const PAGE_MAGIC: &[u8; 4] = b"SLQP";
pub const CHECKPOINT_MAGIC: &[u8; 4] = b"SLQC";
pub const VERSION: u32 = 1;
pub const PAGE_HEADER_LEN: usize = 32;
pub const RECORD_HEADER_LEN: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    pub num: u64,
    pub first_seq: u64,
}

impl PageHeader {
    pub fn encode(&self) -> [u8; PAGE_HEADER_LEN] {
        let mut b = [0u8; PAGE_HEADER_LEN];
        b[0..4].copy_from_slice(PAGE_MAGIC);
        b[4..8].copy_from_slice(&VERSION.to_le_bytes());
        b[8..16].copy_from_slice(&self.num.to_le_bytes());
        b[16..24].copy_from_slice(&self.first_seq.to_le_bytes());
        let crc = crc32c::crc32c(&b[0..24]);
        b[24..28].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<PageHeader, String> {
        if b.len() < PAGE_HEADER_LEN {
            return Err(format!(
                "page header is {} bytes long, expected {PAGE_HEADER_LEN}",
                b.len()
            ));
        }
        if &b[0..4] != PAGE_MAGIC {
            return Err(format!("not a page file (magic {:02x?})", &b[0..4]));
        }
        let version = u32_at(b, 4);
        if version != VERSION {
            return Err(format!(
                "page format version {version}, this build reads version {VERSION}"
            ));
        }
        if crc32c::crc32c(&b[0..24]) != u32_at(b, 24) {
            return Err("page header checksum mismatch".to_owned());
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
        let crc = crc32c::crc32c(payload);
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
            let crc = crc32c::crc32c_append(payload_crc, &seq.to_le_bytes());
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

/// What a scan of record bytes found at one position.
#[derive(Debug, PartialEq, Eq)]
pub enum Scan<'a> {
    /// A valid record: its payload and total size.
    Record {
        seq: u64,
        payload: &'a [u8],
        size: usize,
    },
    /// Not enough bytes for the record's header or payload.
    Incomplete,
    /// A checksum or sequence mismatch (a torn write, or corruption).
    Invalid(String),
}

/// Reads the record at the start of `b`, expecting sequence `expect_seq`.
pub fn scan_record(b: &[u8], expect_seq: u64) -> Scan<'_> {
    if b.len() < RECORD_HEADER_LEN {
        return Scan::Incomplete;
    }
    let crc = u32_at(b, 0);
    let len = u32_at(b, 4) as usize;
    let seq = u64_at(b, 8);
    if crc == 0 && len == 0 && seq == 0 {
        return Scan::Incomplete;
    }
    if b.len() - RECORD_HEADER_LEN < len {
        return Scan::Incomplete;
    }
    let payload = &b[RECORD_HEADER_LEN..RECORD_HEADER_LEN + len];
    if crc32c::crc32c_append(crc32c::crc32c(payload), &seq.to_le_bytes()) != crc {
        return Scan::Invalid(format!(
            "record checksum mismatch (sequence field {seq}, length {len})"
        ));
    }
    if seq != expect_seq {
        return Scan::Invalid(format!("record sequence {seq}, expected {expect_seq}"));
    }
    Scan::Record {
        seq,
        payload,
        size: RECORD_HEADER_LEN + len,
    }
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

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Checkpoint {
    pub next_seq: u64,
    pub pages: Vec<PageCheckpoint>,
}

impl Checkpoint {
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(12 + self.pages.len() * 48);
        body.extend_from_slice(&self.next_seq.to_le_bytes());
        body.extend_from_slice(&(self.pages.len() as u32).to_le_bytes());
        for p in &self.pages {
            for v in [
                p.num,
                p.first_seq,
                p.count,
                p.bytes,
                p.first_unacked_seq,
                p.first_unacked_offset,
            ] {
                body.extend_from_slice(&v.to_le_bytes());
            }
        }
        let mut out = Vec::with_capacity(16 + body.len());
        out.extend_from_slice(CHECKPOINT_MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    pub fn decode(b: &[u8]) -> Result<Checkpoint, String> {
        if b.len() < 16 || &b[0..4] != CHECKPOINT_MAGIC {
            return Err("not a checkpoint file (bad magic or too short)".to_owned());
        }
        let version = u32_at(b, 4);
        if version != VERSION {
            return Err(format!(
                "checkpoint format version {version}, this build reads version {VERSION}"
            ));
        }
        let len = u32_at(b, 8) as usize;
        if b.len() != 16 + len {
            return Err(format!(
                "checkpoint body is {} bytes, header says {len}",
                b.len() - 16
            ));
        }
        let body = &b[16..];
        if crc32c::crc32c(body) != u32_at(b, 12) {
            return Err("checkpoint checksum mismatch".to_owned());
        }
        if body.len() < 12 {
            return Err("checkpoint body too short".to_owned());
        }
        let next_seq = u64_at(body, 0);
        let n = u32_at(body, 8) as usize;
        if body.len() != 12 + n * 48 {
            return Err(format!(
                "checkpoint lists {n} pages but holds {} bytes",
                body.len()
            ));
        }
        let pages = (0..n)
            .map(|i| {
                let at = 12 + i * 48;
                PageCheckpoint {
                    num: u64_at(body, at),
                    first_seq: u64_at(body, at + 8),
                    count: u64_at(body, at + 16),
                    bytes: u64_at(body, at + 24),
                    first_unacked_seq: u64_at(body, at + 32),
                    first_unacked_offset: u64_at(body, at + 40),
                }
            })
            .collect();
        Ok(Checkpoint { next_seq, pages })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
        assert!(PageHeader::decode(&bad).unwrap_err().contains("checksum"));
        assert!(PageHeader::decode(&[0; 32])
            .unwrap_err()
            .contains("not a page"));
    }

    proptest! {
        #[test]
        fn checkpoint_round_trips(next in any::<u64>(), pages in proptest::collection::vec(any::<[u64; 6]>(), 0..20)) {
            let cp = Checkpoint {
                next_seq: next,
                pages: pages.iter().map(|p| PageCheckpoint {
                    num: p[0], first_seq: p[1], count: p[2], bytes: p[3], first_unacked_seq: p[4], first_unacked_offset: p[5],
                }).collect(),
            };
            prop_assert_eq!(Checkpoint::decode(&cp.encode()), Ok(cp));
        }

        #[test]
        fn checkpoint_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Checkpoint::decode(&bytes);
        }

        #[test]
        fn corrupted_checkpoint_is_rejected(flip in 0usize..(16 + 12 + 48), bit in 0u8..8) {
            let cp = Checkpoint { next_seq: 9, pages: vec![PageCheckpoint { num: 1, first_seq: 2, count: 3, bytes: 4, first_unacked_seq: 5, first_unacked_offset: 6 }] };
            let mut b = cp.encode();
            b[flip] ^= 1 << bit;
            prop_assert!(Checkpoint::decode(&b).is_err());
        }

        #[test]
        fn scan_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..100), seq in any::<u64>()) {
            let _ = scan_record(&bytes, seq);
        }
    }
}
