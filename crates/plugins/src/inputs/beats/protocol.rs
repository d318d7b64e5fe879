//! The Lumberjack protocol as Beats speak it: frames of a version byte (`1` or `2`), a type byte
//! and big-endian integers.
//!
//! ```text
//! window      V 'W' count u32                       the next `count` events form a window
//! compressed  V 'C' length u32, zlib(frames)        frames inside, whole
//! json (v2)   '2' 'J' seq u32, length u32, JSON     one event
//! data (v1)   V 'D' seq u32, pairs u32, (key length u32, key, value length u32, value)*
//! ack         V 'A' seq u32                         (server → client) events up to seq taken
//! ```
//! Sequence numbers count from 1 in each window; the server acknowledges a window with the
//! sequence of its last event, and may send an ACK with a lower sequence (0) as a keep-alive.

use std::io::Read;

/// One frame from a client; payloads borrow the bytes read.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    Window {
        version: u8,
        count: u32,
    },
    Compressed {
        version: u8,
        data: &'a [u8],
    },
    Json {
        seq: u32,
        payload: &'a [u8],
    },
    Data {
        version: u8,
        seq: u32,
        pairs: Vec<(String, String)>,
    },
}

#[derive(Debug, PartialEq, Eq)]
pub enum ProtocolError {
    Version(u8),
    Type(u8, u8),
    TooLarge {
        what: &'static str,
        size: u64,
        limit: usize,
    },
    Utf8(&'static str),
    Inflate(String),
    /// A compressed frame whose content ends inside a frame.
    Truncated,
}

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProtocolError::Version(v) => {
                write!(f, "unknown protocol version {v:#04x} (expected '1' or '2')")
            }
            ProtocolError::Type(v, t) => write!(
                f,
                "unknown frame type {:?} for version {}",
                char::from(*t),
                char::from(*v)
            ),
            ProtocolError::TooLarge { what, size, limit } => {
                write!(
                    f,
                    "{what} of {size} bytes is over the limit of {limit} bytes"
                )
            }
            ProtocolError::Utf8(what) => write!(f, "{what} is not UTF-8"),
            ProtocolError::Inflate(e) => write!(f, "compressed frame cannot be inflated: {e}"),
            ProtocolError::Truncated => write!(f, "compressed frame ends inside a frame"),
        }
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Reads one frame from the front of `buf`: the frame and how many bytes it took, or `None`
/// when `buf` does not hold a whole frame yet. Payloads over `limit` bytes are errors (before
/// they are read, so a client cannot make the server buffer them).
pub fn parse(buf: &[u8], limit: usize) -> Result<Option<(Frame<'_>, usize)>, ProtocolError> {
    if buf.len() < 2 {
        return Ok(None);
    }
    let (version, kind) = (buf[0], buf[1]);
    if version != b'1' && version != b'2' {
        return Err(ProtocolError::Version(version));
    }
    let need = |n: usize| buf.len() >= n;
    let check = |what: &'static str, size: u32| {
        if size as u64 > limit as u64 {
            Err(ProtocolError::TooLarge {
                what,
                size: size as u64,
                limit,
            })
        } else {
            Ok(size as usize)
        }
    };
    match kind {
        b'W' => {
            if !need(6) {
                return Ok(None);
            }
            let count = u32_at(buf, 2);
            Ok(Some((Frame::Window { version, count }, 6)))
        }
        b'C' => {
            if !need(6) {
                return Ok(None);
            }
            let len = check("a compressed frame", u32_at(buf, 2))?;
            if !need(6 + len) {
                return Ok(None);
            }
            let data = &buf[6..6 + len];
            Ok(Some((Frame::Compressed { version, data }, 6 + len)))
        }
        b'J' if version == b'2' => {
            if !need(10) {
                return Ok(None);
            }
            let seq = u32_at(buf, 2);
            let len = check("a JSON frame", u32_at(buf, 6))?;
            if !need(10 + len) {
                return Ok(None);
            }
            let payload = &buf[10..10 + len];
            Ok(Some((Frame::Json { seq, payload }, 10 + len)))
        }
        b'D' => {
            if !need(10) {
                return Ok(None);
            }
            let seq = u32_at(buf, 2);
            let count = u32_at(buf, 6) as usize;
            // Each pair takes at least its two 4-byte lengths: refuse at once what cannot fit.
            check(
                "a data frame",
                (count as u64 * 8).min(u32::MAX as u64) as u32,
            )?;
            let mut at = 10;
            let mut pairs = Vec::with_capacity(count.min(1024));
            let mut total = 0usize;
            for _ in 0..count {
                let mut pair = [String::new(), String::new()];
                for (i, what) in ["a data frame's key", "a data frame's value"]
                    .iter()
                    .enumerate()
                {
                    if !need(at + 4) {
                        return Ok(None);
                    }
                    let len = check(what, u32_at(buf, at))?;
                    total += len + 4;
                    check("a data frame", total.min(u32::MAX as usize) as u32)?;
                    if !need(at + 4 + len) {
                        return Ok(None);
                    }
                    pair[i] = std::str::from_utf8(&buf[at + 4..at + 4 + len])
                        .map_err(|_| ProtocolError::Utf8(what))?
                        .to_owned();
                    at += 4 + len;
                }
                let [k, v] = pair;
                pairs.push((k, v));
            }
            Ok(Some((
                Frame::Data {
                    version,
                    seq,
                    pairs,
                },
                at,
            )))
        }
        other => Err(ProtocolError::Type(version, other)),
    }
}

/// The content of a compressed frame, inflated to at most `limit` bytes (see [`parse_all`]).
pub fn inflate(data: &[u8], limit: usize) -> Result<Vec<u8>, ProtocolError> {
    let mut out = Vec::with_capacity((data.len() * 4).min(limit));
    let mut z = flate2::read::ZlibDecoder::new(data).take(limit as u64 + 1);
    z.read_to_end(&mut out)
        .map_err(|e| ProtocolError::Inflate(e.to_string()))?;
    if out.len() > limit {
        return Err(ProtocolError::TooLarge {
            what: "an inflated compressed frame",
            size: out.len() as u64,
            limit,
        });
    }
    Ok(out)
}

/// Every frame of `out` (an inflated compressed frame), which must end with a whole frame.
pub fn parse_all(out: &[u8], limit: usize) -> Result<Vec<Frame<'_>>, ProtocolError> {
    let mut frames = Vec::new();
    let mut at = 0;
    while at < out.len() {
        match parse(&out[at..], limit)? {
            Some((frame, n)) => {
                frames.push(frame);
                at += n;
            }
            None => return Err(ProtocolError::Truncated),
        }
    }
    Ok(frames)
}

/// An ACK frame for `seq`, in the client's protocol version.
pub fn ack(version: u8, seq: u32) -> [u8; 6] {
    let s = seq.to_be_bytes();
    [version, b'A', s[0], s[1], s[2], s[3]]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn json(seq: u32, text: &str) -> Vec<u8> {
        let mut b = vec![b'2', b'J'];
        b.extend_from_slice(&seq.to_be_bytes());
        b.extend_from_slice(&(text.len() as u32).to_be_bytes());
        b.extend_from_slice(text.as_bytes());
        b
    }

    #[test]
    fn frames_parse_whole_or_wait_for_more() {
        let mut b = vec![b'2', b'W', 0, 0, 0, 2];
        b.extend(json(1, r#"{"a":1}"#));
        b.extend(json(2, r#"{"a":2}"#));
        for cut in 0..b.len() {
            // Any prefix parses to whole frames only.
            let mut at = 0;
            while let Some((_, n)) = parse(&b[at..cut], 1 << 20).unwrap() {
                at += n;
            }
            assert!(at <= cut);
        }
        let (f, n) = parse(&b, 1 << 20).unwrap().unwrap();
        assert_eq!(
            (f, n),
            (
                Frame::Window {
                    version: b'2',
                    count: 2
                },
                6
            )
        );
        let (f, _) = parse(&b[6..], 1 << 20).unwrap().unwrap();
        assert_eq!(
            f,
            Frame::Json {
                seq: 1,
                payload: br#"{"a":1}"#
            }
        );
    }

    #[test]
    fn v1_data_frames_and_compressed_frames() {
        let mut d = vec![b'1', b'D', 0, 0, 0, 7, 0, 0, 0, 1];
        for s in ["line", "hello"] {
            d.extend_from_slice(&(s.len() as u32).to_be_bytes());
            d.extend_from_slice(s.as_bytes());
        }
        let (f, n) = parse(&d, 1 << 20).unwrap().unwrap();
        assert_eq!(n, d.len());
        assert_eq!(
            f,
            Frame::Data {
                version: b'1',
                seq: 7,
                pairs: vec![("line".into(), "hello".into())]
            }
        );
        let inner: Vec<u8> = [json(1, "{}"), json(2, "{}")].concat();
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&inner).unwrap();
        let zipped = z.finish().unwrap();
        let inflated = inflate(&zipped, 1 << 20).unwrap();
        assert_eq!(parse_all(&inflated, 1 << 20).unwrap().len(), 2);
        assert!(matches!(
            inflate(&zipped, 10),
            Err(ProtocolError::TooLarge { .. })
        ));
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&inner[..inner.len() - 1]).unwrap();
        let cut = inflate(&z.finish().unwrap(), 1 << 20).unwrap();
        assert_eq!(parse_all(&cut, 1 << 20), Err(ProtocolError::Truncated));
    }

    #[test]
    fn bad_frames_are_errors_and_large_ones_are_refused_before_reading() {
        assert_eq!(parse(b"3W", 10), Err(ProtocolError::Version(b'3')));
        assert_eq!(parse(b"2X", 10), Err(ProtocolError::Type(b'2', b'X')));
        assert_eq!(parse(b"1J", 10), Err(ProtocolError::Type(b'1', b'J')));
        let big = [b'2', b'J', 0, 0, 0, 1, 0x7f, 0, 0, 0];
        assert!(matches!(
            parse(&big, 1 << 20),
            Err(ProtocolError::TooLarge { .. })
        ));
        // Billions of empty pairs cannot make the server wait for (and buffer) them.
        let pairs = [b'1', b'D', 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff];
        assert!(matches!(
            parse(&pairs, 1 << 20),
            Err(ProtocolError::TooLarge { .. })
        ));
        assert_eq!(ack(b'2', 258), [b'2', b'A', 0, 0, 1, 2]);
    }
}
