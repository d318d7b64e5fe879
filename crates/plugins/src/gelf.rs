//! GELF, Graylog's log format, as the `gelf` input reads it and the `gelf` output writes it.
//!
//! A GELF message is one JSON object (`version`, `host`, `short_message`, `full_message`,
//! `timestamp` in seconds, `level` 0-7, and `_`-prefixed additional fields). Over UDP it is
//! sent whole in one datagram, zlib- or gzip-compressed or plain, or cut into **chunks** when
//! it does not fit: each chunk is a datagram of its own that starts with a 12-byte header
//! (`0x1e 0x0f`, an 8-byte message id, the chunk's sequence number, the chunk count; at most
//! 128 chunks). Over TCP messages are uncompressed JSON, each ended by a zero byte.
//!
//! [`Reassembler`] puts chunks back together. It holds what is incomplete for at most
//! [`CHUNK_TIMEOUT`] (as Graylog does) and at most [`MAX_PENDING_BYTES`] in all, so that a
//! flood of partial messages costs bounded memory: past the bound the oldest partial
//! messages are dropped, and every drop is counted by the caller. [`decompress`] opens a whole
//! message; [`chunks`] cuts one for sending.

use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The two bytes that start a chunk.
pub const CHUNK_MAGIC: [u8; 2] = [0x1e, 0x0f];
/// Magic, message id, sequence number, count.
pub const CHUNK_HEADER: usize = 12;
/// GELF's limit on the chunks of one message.
pub const MAX_CHUNKS: usize = 128;
/// How long the chunks of an incomplete message are kept (Graylog's default).
pub const CHUNK_TIMEOUT: Duration = Duration::from_secs(5);
/// What all incomplete messages may hold together.
pub const MAX_PENDING_BYTES: usize = 64 << 20;
/// The largest message a datagram's compression may open to.
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// What a datagram was, once added.
#[derive(Debug, PartialEq)]
pub enum Datagram {
    /// A whole message (still compressed, when it was).
    Message(Vec<u8>),
    /// A chunk of a message not yet complete.
    Pending,
    /// Not a GELF datagram, or a chunk that contradicts its message's others.
    Invalid(String),
}

/// Incomplete chunked messages, by sender and message id.
pub struct Reassembler {
    pending: HashMap<(SocketAddr, [u8; 8]), Partial>,
    /// Messages in the order their first chunk came, for expiry and eviction; an entry whose
    /// message completed is skipped when reached (its serial no longer matches).
    order: VecDeque<(Instant, (SocketAddr, [u8; 8]), u64)>,
    bytes: usize,
    max_bytes: usize,
    timeout: Duration,
    serial: u64,
}

struct Partial {
    serial: u64,
    chunks: Vec<Option<Vec<u8>>>,
    received: usize,
    bytes: usize,
}

impl Default for Reassembler {
    fn default() -> Self {
        Reassembler::new(MAX_PENDING_BYTES, CHUNK_TIMEOUT)
    }
}

impl Reassembler {
    pub fn new(max_bytes: usize, timeout: Duration) -> Reassembler {
        Reassembler {
            pending: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
            max_bytes,
            timeout,
            serial: 0,
        }
    }

    /// Adds one datagram from `from`. A plain datagram is a message at once; a chunk
    /// completes its message or waits for the rest. `dropped` counts the incomplete messages
    /// this call evicted to stay within its memory bound.
    pub fn add(
        &mut self,
        from: SocketAddr,
        data: &[u8],
        now: Instant,
        dropped: &mut u64,
    ) -> Datagram {
        if !data.starts_with(&CHUNK_MAGIC) {
            return Datagram::Message(data.to_vec());
        }
        if data.len() < CHUNK_HEADER {
            return Datagram::Invalid(format!(
                "a chunk of {} bytes, shorter than its header",
                data.len()
            ));
        }
        let id: [u8; 8] = data[2..10].try_into().expect("8 bytes");
        let (seq, count) = (data[10] as usize, data[11] as usize);
        if count == 0 || count > MAX_CHUNKS {
            return Datagram::Invalid(format!(
                "a chunk says its message has {count} chunks (1 to {MAX_CHUNKS})"
            ));
        }
        if seq >= count {
            return Datagram::Invalid(format!("chunk number {seq} of a message of {count}"));
        }
        let body = &data[CHUNK_HEADER..];
        if count == 1 {
            return Datagram::Message(body.to_vec());
        }
        let key = (from, id);
        if !self.pending.contains_key(&key) {
            self.serial += 1;
            self.order.push_back((now, key, self.serial));
            self.pending.insert(
                key,
                Partial {
                    serial: self.serial,
                    chunks: vec![None; count],
                    received: 0,
                    bytes: 0,
                },
            );
        }
        let p = self.pending.get_mut(&key).expect("just ensured");
        if p.chunks.len() != count {
            let had = p.chunks.len();
            self.forget(&key);
            return Datagram::Invalid(format!(
                "chunks of one message disagree on their count ({had} and {count}); the message is dropped"
            ));
        }
        if p.chunks[seq].is_none() {
            p.chunks[seq] = Some(body.to_vec());
            p.received += 1;
            p.bytes += body.len();
            self.bytes += body.len();
        }
        if p.received == count {
            let p = self.pending.remove(&key).expect("present");
            self.bytes -= p.bytes;
            let mut whole = Vec::with_capacity(p.bytes);
            for c in p.chunks.into_iter().flatten() {
                whole.extend_from_slice(&c);
            }
            return Datagram::Message(whole);
        }
        while self.bytes > self.max_bytes {
            match self.evict_oldest() {
                Some(_) => *dropped += 1,
                None => break,
            }
        }
        // (This message may be among those evicted: it is counted in `dropped`.)
        Datagram::Pending
    }

    /// Drops the messages whose first chunk came more than the timeout ago; returns how many.
    pub fn expire(&mut self, now: Instant) -> u64 {
        let mut n = 0;
        while let Some((since, key, serial)) = self.order.front() {
            let live = self.pending.get(key).is_some_and(|p| p.serial == *serial);
            if live && now.duration_since(*since) < self.timeout {
                break;
            }
            if self.evict_oldest().is_some() {
                n += 1;
            }
        }
        n
    }

    /// Messages waiting for chunks, and the bytes they hold.
    pub fn pending(&self) -> (usize, usize) {
        (self.pending.len(), self.bytes)
    }

    /// Removes the oldest entry of `order`; `Some` when it was still incomplete.
    fn evict_oldest(&mut self) -> Option<()> {
        let (_, key, serial) = self.order.pop_front()?;
        match self.pending.get(&key) {
            Some(p) if p.serial == serial => {
                self.forget(&key);
                Some(())
            }
            _ => None,
        }
    }

    fn forget(&mut self, key: &(SocketAddr, [u8; 8])) {
        if let Some(p) = self.pending.remove(key) {
            self.bytes -= p.bytes;
        }
    }
}

/// Opens a whole message: gzip (`1f 8b`), zlib (`78`) or plain JSON.
pub fn decompress(data: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>, String> {
    let mut out = Vec::new();
    let read = match data {
        [0x1f, 0x8b, ..] => flate2::read::MultiGzDecoder::new(data)
            .take(MAX_MESSAGE_BYTES as u64 + 1)
            .read_to_end(&mut out),
        [0x78, ..] => flate2::read::ZlibDecoder::new(data)
            .take(MAX_MESSAGE_BYTES as u64 + 1)
            .read_to_end(&mut out),
        _ => return Ok(std::borrow::Cow::Borrowed(data)),
    };
    match read {
        Ok(_) if out.len() > MAX_MESSAGE_BYTES => Err(format!(
            "a compressed message opens to more than {MAX_MESSAGE_BYTES} bytes"
        )),
        Ok(_) => Ok(std::borrow::Cow::Owned(out)),
        Err(e) => Err(format!("cannot decompress a message: {e}")),
    }
}

/// Cuts `payload` into datagrams of at most `chunk_size` bytes of it each (plus the header),
/// all with message id `id`; one datagram, without a header, when it fits. `None` when it
/// needs more than [`MAX_CHUNKS`].
pub fn chunks(payload: &[u8], chunk_size: usize, id: [u8; 8]) -> Option<Vec<Vec<u8>>> {
    if payload.len() <= chunk_size {
        return Some(vec![payload.to_vec()]);
    }
    let count = payload.len().div_ceil(chunk_size);
    if count > MAX_CHUNKS {
        return None;
    }
    let out = payload
        .chunks(chunk_size)
        .enumerate()
        .map(|(seq, piece)| {
            let mut d = Vec::with_capacity(CHUNK_HEADER + piece.len());
            d.extend_from_slice(&CHUNK_MAGIC);
            d.extend_from_slice(&id);
            d.push(seq as u8);
            d.push(count as u8);
            d.extend_from_slice(piece);
            d
        })
        .collect();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(data).unwrap();
        z.finish().unwrap()
    }

    /// Chunks in any order, duplicated or interleaved with another sender's, give back the
    /// message; a message cut and put back is what was cut, compressed or not.
    #[test]
    fn chunks_round_trip_in_any_order() {
        let text: Vec<u8> = (0..20_000u32).flat_map(|i| i.to_le_bytes()).collect();
        for payload in [text.clone(), zlib(&text)] {
            let mut parts = chunks(&payload, 1000, *b"abcdefgh").unwrap();
            let others = chunks(&payload, 1000, *b"abcdefgh").unwrap();
            fastrand::seed(7);
            fastrand::shuffle(&mut parts);
            let mut r = Reassembler::default();
            let now = Instant::now();
            let mut dropped = 0;
            let mut whole = None;
            for (i, p) in parts.iter().enumerate() {
                // The same id from another sender is another message.
                assert_eq!(
                    r.add(addr(2), &others[i % 2], now, &mut dropped),
                    Datagram::Pending
                );
                if i == 3 {
                    assert_eq!(r.add(addr(1), p, now, &mut dropped), Datagram::Pending);
                }
                match r.add(addr(1), p, now, &mut dropped) {
                    Datagram::Message(m) => whole = Some(m),
                    Datagram::Pending => {}
                    Datagram::Invalid(e) => panic!("{e}"),
                }
            }
            let whole = whole.expect("complete");
            assert_eq!(whole, payload);
            assert_eq!(&*decompress(&whole).unwrap(), &text[..]);
            assert_eq!(r.pending().0, 1, "the other sender's message still waits");
            assert_eq!(dropped, 0);
        }
    }

    #[test]
    fn incomplete_messages_expire_and_stay_within_their_bound() {
        let mut r = Reassembler::new(10_000, Duration::from_secs(5));
        let t0 = Instant::now();
        let mut dropped = 0;
        for i in 0..100u64 {
            let d = chunks(&[7u8; 2000], 1000, i.to_le_bytes()).unwrap();
            let got = r.add(addr(1), &d[0], t0, &mut dropped);
            assert!(matches!(got, Datagram::Pending), "{got:?}");
            assert!(r.pending().1 <= 10_000);
        }
        assert_eq!(dropped, 90);
        assert_eq!(r.pending(), (10, 10_000));
        assert_eq!(r.expire(t0 + Duration::from_secs(4)), 0);
        assert_eq!(r.expire(t0 + Duration::from_secs(5)), 10);
        assert_eq!(r.pending(), (0, 0));
    }

    #[test]
    fn bad_chunks_are_refused() {
        let mut r = Reassembler::default();
        let now = Instant::now();
        let mut d = 0;
        let bad = |r: &mut Reassembler, data: &[u8], d: &mut u64| {
            matches!(r.add(addr(1), data, now, d), Datagram::Invalid(_))
        };
        assert!(bad(&mut r, &[0x1e, 0x0f, 1, 2], &mut d));
        let mut c = chunks(&[1u8; 300], 100, [1; 8]).unwrap();
        c[0][11] = 0;
        assert!(bad(&mut r, &c[0], &mut d));
        c[0][11] = 129;
        assert!(bad(&mut r, &c[0], &mut d));
        c[0][10] = 5;
        c[0][11] = 3;
        assert!(bad(&mut r, &c[0], &mut d));
        // Two counts for one message: refused, and the message forgotten.
        assert_eq!(r.add(addr(1), &c[1], now, &mut d), Datagram::Pending);
        let mut other = c[2].clone();
        other[11] = 4;
        assert!(bad(&mut r, &other, &mut d));
        assert_eq!(r.pending(), (0, 0));
        assert!(chunks(&[0u8; 129], 1, [0; 8]).is_none());
        assert!(decompress(&[0x78, 1, 2, 3]).is_err());
        assert_eq!(&*decompress(b"{}").unwrap(), b"{}");
    }

    #[test]
    fn a_compression_bomb_is_refused() {
        let big = vec![b' '; MAX_MESSAGE_BYTES + 10];
        let err = decompress(&zlib(&big)).unwrap_err();
        assert!(err.contains("more than"), "{err}");
    }
}
