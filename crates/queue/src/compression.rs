//! `queue.compression`: zstd compression of each queued record's payload, as Logstash 9.2's
//! persisted queue does it.
//!
//! The setting only decides how new records are written. A payload that starts with zstd's
//! frame magic (`28 b5 2f fd`) is a zstd frame holding the real payload, with its size in the
//! frame header; any other payload is stored as it is (sluice's event encoding starts with its
//! version byte, `0x01`). So a queue written under one setting opens under any other, and a
//! reader never needs to know which setting wrote a record.
//!
//! Levels follow Logstash's goals: `speed` is zstd level -1, `balanced` 3, `size` 22. A
//! compressed payload is kept only when it is smaller than the plain one (a short event can
//! come out larger). `none`, the default, writes plain payloads and reads both kinds, as in
//! Logstash; so does `disabled`, which in Logstash also stops reading compressed records:
//! sluice reads them anyway rather than skip events.
//!
//! Writers compress in their own thread (the input's) with [`compress_tail`], readers
//! decompress in theirs with [`with_plain`]; each thread keeps its zstd context.

use std::cell::RefCell;

/// zstd's frame magic number, as the first four bytes of a frame.
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// The largest payload a compressed record may expand to. Records are written by sluice and
/// checksummed; the bound only keeps a damaged-but-valid-looking frame from asking for an
/// absurd allocation.
pub const MAX_DECOMPRESSED: u64 = 1 << 30;

/// `queue.compression`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Writes plain payloads, reads compressed ones too (Logstash's default).
    #[default]
    None,
    /// As `none` here (see the module docs).
    Disabled,
    Speed,
    Balanced,
    Size,
}

impl Compression {
    /// The setting's value as written in `sluice.yml`/`logstash.yml`.
    pub fn parse(value: &str) -> Option<Compression> {
        Some(match value {
            "none" => Compression::None,
            "disabled" => Compression::Disabled,
            "speed" => Compression::Speed,
            "balanced" => Compression::Balanced,
            "size" => Compression::Size,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Disabled => "disabled",
            Compression::Speed => "speed",
            Compression::Balanced => "balanced",
            Compression::Size => "size",
        }
    }

    /// The zstd level new records are compressed at, if they are.
    pub fn level(self) -> Option<i32> {
        match self {
            Compression::None | Compression::Disabled => None,
            Compression::Speed => Some(-1),
            Compression::Balanced => Some(3),
            Compression::Size => Some(22),
        }
    }
}

/// Whether a stored payload is a zstd frame.
pub fn is_compressed(payload: &[u8]) -> bool {
    payload.starts_with(&ZSTD_MAGIC)
}

/// The size a stored payload has once decompressed: its own length when it is plain, the
/// frame header's content size when it is compressed (`None` when that header is unreadable).
pub fn plain_len(payload: &[u8]) -> Option<u64> {
    if !is_compressed(payload) {
        return Some(payload.len() as u64);
    }
    zstd::zstd_safe::get_frame_content_size(payload)
        .ok()
        .flatten()
}

struct Packer {
    level: i32,
    context: zstd::bulk::Compressor<'static>,
    scratch: Vec<u8>,
}

thread_local! {
    static PACKER: RefCell<Option<Packer>> = const { RefCell::new(None) };
    static UNPACKER: RefCell<Decompressor> = RefCell::new(Decompressor::new());
}

/// Calls `f` with the plain payload of a stored one, decompressed if need be with this
/// thread's [`Decompressor`].
pub fn with_plain<R>(payload: &[u8], f: impl FnOnce(Result<&[u8], UnpackError>) -> R) -> R {
    if !is_compressed(payload) {
        return f(Ok(payload));
    }
    UNPACKER.with(|cell| f(cell.borrow_mut().plain(payload)))
}

/// Compresses `buf[start..]` (one payload just appended) in place at `level`, when that makes
/// it smaller; otherwise leaves it as it is. Returns whether it was compressed.
pub fn compress_tail(buf: &mut Vec<u8>, start: usize, level: i32) -> bool {
    if buf.len() <= start || is_compressed(&buf[start..]) {
        // A plain payload must never look compressed; sluice's events never do (they start
        // with their version byte), and an empty one gains nothing.
        return false;
    }
    PACKER.with(|cell| {
        let plain = &buf[start..];
        let mut cell = cell.borrow_mut();
        if cell.as_ref().is_none_or(|p| p.level != level) {
            let Ok(context) = zstd::bulk::Compressor::new(level) else {
                return false;
            };
            *cell = Some(Packer {
                level,
                context,
                scratch: Vec::new(),
            });
        }
        let p = cell.as_mut().expect("set above");
        p.scratch.clear();
        p.scratch
            .reserve(zstd::zstd_safe::compress_bound(plain.len()));
        match p.context.compress_to_buffer(plain, &mut p.scratch) {
            Ok(n) if n < plain.len() => {
                buf.truncate(start);
                buf.extend_from_slice(&p.scratch);
                true
            }
            _ => false,
        }
    })
}

/// Why a compressed payload could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnpackError {
    #[error("zstd frame header unreadable or without its content size")]
    NoSize,
    #[error("zstd frame declares {0} bytes, more than the {MAX_DECOMPRESSED} allowed")]
    TooLarge(u64),
    #[error("zstd: {0}")]
    Zstd(String),
    #[error("zstd frame holds {found} bytes, its header said {declared}")]
    SizeMismatch { declared: u64, found: usize },
}

/// A reader's zstd context and buffer, reused from record to record.
pub struct Decompressor {
    context: Option<zstd::bulk::Decompressor<'static>>,
    buf: Vec<u8>,
}

impl Default for Decompressor {
    fn default() -> Self {
        Decompressor::new()
    }
}

impl Decompressor {
    pub fn new() -> Decompressor {
        Decompressor {
            context: None,
            buf: Vec::new(),
        }
    }

    /// The plain payload of a stored one: `payload` itself, or its frame decompressed into
    /// this decompressor's buffer.
    pub fn plain<'a>(&'a mut self, payload: &'a [u8]) -> Result<&'a [u8], UnpackError> {
        if !is_compressed(payload) {
            return Ok(payload);
        }
        let declared = zstd::zstd_safe::get_frame_content_size(payload)
            .ok()
            .flatten()
            .ok_or(UnpackError::NoSize)?;
        if declared > MAX_DECOMPRESSED {
            return Err(UnpackError::TooLarge(declared));
        }
        if self.context.is_none() {
            let context =
                zstd::bulk::Decompressor::new().map_err(|e| UnpackError::Zstd(e.to_string()))?;
            self.context = Some(context);
        }
        let context = self.context.as_mut().expect("set above");
        self.buf.clear();
        self.buf.reserve(declared as usize);
        let n = context
            .decompress_to_buffer(payload, &mut self.buf)
            .map_err(|e| UnpackError::Zstd(e.to_string()))?;
        if n as u64 != declared {
            return Err(UnpackError::SizeMismatch { declared, found: n });
        }
        Ok(&self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample(n: usize) -> Vec<u8> {
        let mut v = vec![0x01];
        while v.len() < n {
            v.extend_from_slice(b"GET /index.html HTTP/1.1 200 ");
        }
        v.truncate(n);
        v
    }

    #[test]
    fn settings_parse_and_map_to_logstash_levels() {
        for (name, level) in [
            ("none", None),
            ("disabled", None),
            ("speed", Some(-1)),
            ("balanced", Some(3)),
            ("size", Some(22)),
        ] {
            let c = Compression::parse(name).unwrap();
            assert_eq!(c.name(), name);
            assert_eq!(c.level(), level);
        }
        assert_eq!(Compression::parse("fast"), None);
    }

    #[test]
    fn repetitive_payloads_shrink_and_come_back() {
        for level in [-1, 3, 22] {
            let plain = sample(600);
            let mut buf = b"earlier record".to_vec();
            let start = buf.len();
            buf.extend_from_slice(&plain);
            assert!(compress_tail(&mut buf, start, level));
            assert!(
                buf.len() - start < plain.len() / 2,
                "level {level}: {}",
                buf.len() - start
            );
            assert_eq!(&buf[..start], b"earlier record");
            let stored = &buf[start..];
            assert!(is_compressed(stored));
            assert_eq!(plain_len(stored), Some(600));
            let mut d = Decompressor::new();
            assert_eq!(d.plain(stored).unwrap(), &plain[..]);
        }
    }

    #[test]
    fn payloads_that_do_not_shrink_stay_plain() {
        let plain = vec![0x01, 0x02, 0x03];
        let mut buf = plain.clone();
        assert!(!compress_tail(&mut buf, 0, 3));
        assert_eq!(buf, plain);
        let mut d = Decompressor::new();
        assert_eq!(d.plain(&buf).unwrap(), &plain[..]);
        assert_eq!(plain_len(&buf), Some(3));
    }

    #[test]
    fn damaged_frames_are_errors() {
        let mut buf = sample(600);
        assert!(compress_tail(&mut buf, 0, 3));
        let mut d = Decompressor::new();
        assert_eq!(d.plain(&ZSTD_MAGIC).unwrap_err(), UnpackError::NoSize);
        let mut cut = buf.clone();
        cut.truncate(buf.len() - 3);
        assert!(d.plain(&cut).is_err());
    }

    proptest! {
        #[test]
        fn any_payload_round_trips_at_any_goal(
            body in proptest::collection::vec(any::<u8>(), 0..2000),
            level in prop_oneof![Just(-1), Just(3), Just(22)],
        ) {
            let mut plain = vec![0x01];
            plain.extend_from_slice(&body);
            let mut buf = plain.clone();
            compress_tail(&mut buf, 0, level);
            prop_assert!(buf.len() <= plain.len());
            let mut d = Decompressor::new();
            prop_assert_eq!(d.plain(&buf).unwrap(), &plain[..]);
        }

        #[test]
        fn reading_arbitrary_frames_never_panics(tail in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut payload = ZSTD_MAGIC.to_vec();
            payload.extend_from_slice(&tail);
            let _ = Decompressor::new().plain(&payload);
            let _ = plain_len(&payload);
        }
    }
}
