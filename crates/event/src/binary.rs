//! The binary form of an [`Event`] that the persisted queue writes to disk.
//!
//! This comment is the specification of the format. Records written by one build are read
//! by later ones, so a change to the layout needs a new [`FORMAT_VERSION`], and every later
//! build must keep decoding version 1 exactly as described here.
//!
//! # Version 1
//!
//! ```text
//! event  := version fields metadata
//! version:= 0x01                            one byte, FORMAT_VERSION
//! fields := map                             the event's fields
//! metadata := map                           the event's @metadata
//!
//! map    := count:varint entry{count}
//! entry  := key:str value
//! str    := len:varint byte{len}            the bytes are UTF-8
//!
//! value  := tag:u8 payload
//!   tag  payload                            Value
//!   0x01 (none)                             Null
//!   0x02 (none)                             Bool(false)
//!   0x03 (none)                             Bool(true)
//!   0x04 zigzag varint                      Int(i64)
//!   0x05 8 bytes, little-endian             Float(f64): the IEEE-754 bits (f64::to_bits)
//!   0x06 str                                String
//!   0x07 zigzag varint                      Timestamp: milliseconds since the Unix epoch
//!   0x08 count:varint value{count}          Array
//!   0x09 map                                Object
//!   0x0a 16 bytes, little-endian            BigInt: a two's-complement i128 outside i64's
//!                                           range (added after the first release: a record
//!                                           without one is byte for byte as before)
//!   0x0b str                                Decimal: a number's canonical decimal text, as
//!                                           `Value::decimal` makes it (never digits alone
//!                                           that fit in 128 bits); added later, the same way
//! ```
//!
//! Every other tag, 0x00 included, is invalid (so a run of zero bytes never decodes as
//! values). The event's `cancelled` flag is not stored: a decoded event is never cancelled.
//!
//! - **varint**: an unsigned 64-bit number in LEB128: 7 bits per byte, least significant
//!   group first; the high bit (0x80) is set on every byte but the last. It is at most 10
//!   bytes long, and the 10th byte, if any, is 0x00 or 0x01 (the number fits in 64 bits).
//!   It is minimal: a varint of more than one byte never ends in 0x00. Lengths and counts
//!   are varints.
//! - **zigzag varint**: a signed 64-bit `n` is written as the varint of
//!   `(n << 1) ^ (n >> 63)` (arithmetic shift), so 0, -1, 1, -2, ... become 0, 1, 2, 3, ...
//! - **big integers** are never in `i64`'s range (those are Int).
//! - **map keys** are strictly ascending in byte order (the order [`crate::Map`] keeps them in),
//!   hence unique.
//! - **nesting**: an Array or Object directly inside the fields or metadata map is at depth
//!   1, a container inside that one at depth 2, and so on; depth never exceeds
//!   [`MAX_DEPTH`].
//! - The record is exactly one event: nothing follows the metadata map.
//!
//! A decoder of version 1 rejects any input that breaks one of these rules, which makes the
//! encoding canonical: an input that decodes re-encodes to the same bytes.
//!
//! # Example
//!
//! Fields `{"a": 1}`, empty metadata: `01 01 01 61 04 02 00`
//! (version, 1 entry, key length 1, `a`, Int tag, zigzag(1) = 2, 0 metadata entries).
//!
//! # Hostile input
//!
//! [`decode`] never panics: a length or count larger than the bytes that remain is an error
//! before anything is allocated, and nesting is bounded by [`MAX_DEPTH`] so a crafted record
//! cannot overflow the stack. The encoder writes what it is given; a value nested deeper than
//! [`MAX_DEPTH`] (which the JSON codec, limited to 128 levels, never produces) would encode
//! but not decode.

use crate::event::Event;
use crate::timestamp::Timestamp;
use crate::value::{by_parts, put, Key, Map, Str, Value};

/// The version byte this build writes, and the only one it reads.
pub const FORMAT_VERSION: u8 = 1;

/// The deepest nesting of arrays and objects a record may hold (see the module docs).
///
/// Well above what the JSON codec accepts (128 levels), so that parsed JSON moved under a
/// nested target still fits, and low enough that decoding cannot exhaust a thread's stack.
pub const MAX_DEPTH: usize = 512;

const TAG_NULL: u8 = 0x01;
const TAG_FALSE: u8 = 0x02;
const TAG_TRUE: u8 = 0x03;
const TAG_INT: u8 = 0x04;
const TAG_FLOAT: u8 = 0x05;
const TAG_STRING: u8 = 0x06;
const TAG_TIMESTAMP: u8 = 0x07;
const TAG_ARRAY: u8 = 0x08;
const TAG_OBJECT: u8 = 0x09;
const TAG_BIGINT: u8 = 0x0a;
const TAG_DECIMAL: u8 = 0x0b;

/// Why a record could not be decoded. Offsets count bytes from the start of the record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The first byte is not a version this build reads.
    #[error("unknown format version {found} (this build reads version {FORMAT_VERSION})")]
    UnknownVersion { found: u8 },
    /// The input ends in the middle of an item (`what`: "format version", "value tag",
    /// "float", "key length", ...) that starts at `offset`.
    #[error("truncated: {what} at offset {offset} runs past the end of the input ({len} bytes)")]
    Truncated {
        what: &'static str,
        offset: usize,
        len: usize,
    },
    /// A length or count (`what`) declares more than the input has left after it.
    #[error("truncated: {what} {declared} at offset {offset} exceeds remaining {remaining} bytes")]
    LengthExceedsInput {
        what: &'static str,
        declared: u64,
        offset: usize,
        remaining: usize,
    },
    /// A varint longer than 64 bits.
    #[error("invalid varint for {what} at offset {offset}: does not fit in 64 bits")]
    VarintOverflow { what: &'static str, offset: usize },
    /// A varint with needless trailing zero groups.
    #[error("invalid varint for {what} at offset {offset}: not minimally encoded")]
    VarintNotMinimal { what: &'static str, offset: usize },
    /// A big integer that fits in an `i64` (which has its own, shorter, encoding).
    #[error("big integer at offset {offset} fits in 64 bits (not canonical)")]
    BigIntInRange { offset: usize },
    /// A decimal whose text is no number, or not as `Value::decimal` writes it (an integer
    /// that fits in 128 bits has its own encodings).
    #[error("decimal at offset {offset} is not a canonical decimal number")]
    DecimalNotCanonical { offset: usize },
    #[error("unknown value tag 0x{tag:02x} at offset {offset}")]
    UnknownTag { tag: u8, offset: usize },
    /// `offset` is that of the first byte that is not valid UTF-8.
    #[error("invalid UTF-8 in {what} at offset {offset}")]
    InvalidUtf8 { what: &'static str, offset: usize },
    /// A key equal to or before the previous key of its map (a duplicate, or out of order).
    #[error("key at offset {offset} does not follow the previous key in ascending order (keys must be unique and sorted)")]
    KeyOutOfOrder { offset: usize },
    /// An array or object (its tag at `offset`) deeper than [`MAX_DEPTH`].
    #[error("nesting deeper than {MAX_DEPTH} levels at offset {offset}")]
    TooDeep { offset: usize },
    /// Bytes after the end of the event.
    #[error("{count} trailing byte(s) at offset {offset} after the end of the event")]
    TrailingBytes { offset: usize, count: usize },
}

// ---------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------

/// Appends the encoding of `event` (fields and metadata) to `out`. `out` grows as a `Vec`
/// does: a caller encoding many events into one buffer grows it rarely. (Measuring the event
/// first to reserve its exact size cost a third of the encoding.)
pub fn encode(event: &Event, out: &mut Vec<u8>) {
    let mut sink = Sink::new(out);
    sink.reserve(1);
    sink.byte(FORMAT_VERSION);
    put_map(event.fields(), &mut sink);
    put_map(event.metadata(), &mut sink);
    sink.finish();
}

/// The exact number of bytes [`encode`] appends for `event` (a walk of the whole event).
pub fn encoded_len(event: &Event) -> usize {
    1 + map_len(event.fields()) + map_len(event.metadata())
}

fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

fn str_len(s: &str) -> usize {
    varint_len(s.len() as u64) + s.len()
}

fn map_len(m: &Map) -> usize {
    varint_len(m.len() as u64)
        + m.iter()
            .map(|(k, v)| str_len(k) + value_len(v))
            .sum::<usize>()
}

fn value_len(v: &Value) -> usize {
    1 + match v {
        Value::Null | Value::Bool(_) => 0,
        Value::Int(i) => varint_len(zigzag(*i)),
        Value::BigInt(_) => 16,
        Value::Float(_) => 8,
        Value::String(s) | Value::Decimal(s) => str_len(s),
        Value::Timestamp(t) => varint_len(zigzag(t.millis())),
        Value::Array(items) => {
            varint_len(items.len() as u64) + items.iter().map(value_len).sum::<usize>()
        }
        Value::Object(m) => map_len(m),
    }
}

/// Where [`encode`] writes: the spare capacity of a `Vec<u8>`, through a cursor kept in
/// locals. `Vec::push` reloads and stores the vector's length and checks its capacity for
/// every byte; here a writer reserves room for a whole item (a tag, a varint, a string) with
/// one compare, then stores, and the length is set once at the end. Strings up to 32 bytes
/// (nearly every key, many values) are copied with two overlapping loads and stores instead
/// of a call to `memcpy`.
struct Sink<'a> {
    out: &'a mut Vec<u8>,
    ptr: *mut u8,
    len: usize,
    cap: usize,
}

impl<'a> Sink<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        Sink {
            ptr: out.as_mut_ptr(),
            len: out.len(),
            cap: out.capacity(),
            out,
        }
    }

    /// Makes room for `n` more bytes.
    #[inline(always)]
    fn reserve(&mut self, n: usize) {
        if self.cap - self.len < n {
            self.grow(n);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, n: usize) {
        // SAFETY: the first `len` bytes are initialised (the vector's own, then ours).
        unsafe { self.out.set_len(self.len) };
        self.out.reserve(n.max(256));
        self.ptr = self.out.as_mut_ptr();
        self.cap = self.out.capacity();
    }

    /// One byte, with room reserved.
    #[inline(always)]
    fn byte(&mut self, b: u8) {
        debug_assert!(self.len < self.cap);
        // SAFETY: `reserve` made room (callers reserve before writing).
        unsafe { self.ptr.add(self.len).write(b) };
        self.len += 1;
    }

    /// A varint, with room for 10 bytes reserved.
    #[inline(always)]
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.byte(v as u8 | 0x80);
            v >>= 7;
        }
        self.byte(v as u8);
    }

    /// Bytes, with room reserved.
    #[inline(always)]
    fn bytes(&mut self, b: &[u8]) {
        let n = b.len();
        debug_assert!(self.cap - self.len >= n);
        let (src, dst) = (b.as_ptr(), unsafe { self.ptr.add(self.len) });
        // SAFETY: every read is within `b` (the two reads of each case overlap inside it, or
        // cover it exactly); every write within the `n` reserved bytes at `dst`; source and
        // destination do not overlap (`b` is not our spare capacity).
        unsafe {
            match n {
                17..=32 => {
                    let head = src.cast::<[u8; 16]>().read_unaligned();
                    let tail = src.add(n - 16).cast::<[u8; 16]>().read_unaligned();
                    dst.cast::<[u8; 16]>().write_unaligned(head);
                    dst.add(n - 16).cast::<[u8; 16]>().write_unaligned(tail);
                }
                8..=16 => {
                    let head = src.cast::<u64>().read_unaligned();
                    let tail = src.add(n - 8).cast::<u64>().read_unaligned();
                    dst.cast::<u64>().write_unaligned(head);
                    dst.add(n - 8).cast::<u64>().write_unaligned(tail);
                }
                4..=7 => {
                    let head = src.cast::<u32>().read_unaligned();
                    let tail = src.add(n - 4).cast::<u32>().read_unaligned();
                    dst.cast::<u32>().write_unaligned(head);
                    dst.add(n - 4).cast::<u32>().write_unaligned(tail);
                }
                0..=3 => {
                    for i in 0..n {
                        dst.add(i).write(*src.add(i));
                    }
                }
                _ => std::ptr::copy_nonoverlapping(src, dst, n),
            }
        }
        self.len += n;
    }

    /// A length-prefixed string, room included.
    #[inline(always)]
    fn str(&mut self, s: &str) {
        self.reserve(10 + s.len());
        self.varint(s.len() as u64);
        self.bytes(s.as_bytes());
    }

    fn finish(self) {
        // SAFETY: every byte up to `len` was written (or was the vector's), and `len` is
        // within the capacity.
        unsafe { self.out.set_len(self.len) };
    }
}

/// A varint on its own, for tests that build records by hand.
#[cfg(test)]
fn put_varint(v: u64, out: &mut Vec<u8>) {
    let mut sink = Sink::new(out);
    sink.reserve(10);
    sink.varint(v);
    sink.finish();
}

#[inline]
fn put_map(m: &Map, out: &mut Sink) {
    out.reserve(10);
    out.varint(m.len() as u64);
    for (k, v) in m {
        out.str(k);
        put_value(v, out);
    }
}

#[inline]
fn put_value(v: &Value, out: &mut Sink) {
    // Room for a tag and a varint or 16 bytes; strings reserve their own.
    out.reserve(17);
    match v {
        Value::Null => out.byte(TAG_NULL),
        Value::Bool(false) => out.byte(TAG_FALSE),
        Value::Bool(true) => out.byte(TAG_TRUE),
        Value::Int(i) => {
            out.byte(TAG_INT);
            out.varint(zigzag(*i));
        }
        Value::BigInt(b) => {
            out.byte(TAG_BIGINT);
            out.bytes(&b.get().to_le_bytes());
        }
        Value::Float(f) => {
            out.byte(TAG_FLOAT);
            out.bytes(&f.to_bits().to_le_bytes());
        }
        Value::String(s) => {
            out.byte(TAG_STRING);
            out.str(s);
        }
        Value::Decimal(d) => {
            out.byte(TAG_DECIMAL);
            out.str(d);
        }
        Value::Timestamp(t) => {
            out.byte(TAG_TIMESTAMP);
            out.varint(zigzag(t.millis()));
        }
        Value::Array(items) => {
            out.byte(TAG_ARRAY);
            out.varint(items.len() as u64);
            for item in items {
                put_value(item, out);
            }
        }
        Value::Object(m) => {
            out.byte(TAG_OBJECT);
            put_map(m, out);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------

/// Decodes one event from exactly `bytes`. Never panics; trailing bytes are an error.
pub fn decode(bytes: &[u8]) -> Result<Event, DecodeError> {
    // The keys it keeps go unused: a few copies. A limit of 0 for this case slowed the
    // `Decoder` itself (binary_bench, five short fields: 122 → 128 ns), which matters more.
    Decoder::new().decode(bytes)
}

/// Decodes records one after another, keeping the keys of the last one: the records of a
/// queue mostly share their keys, in the same order, and a key that matches the one met at
/// the same place in the last record is copied from it rather than built anew.
///
/// (Building a short key writes its bytes into a zeroed buffer on the stack and then loads
/// that buffer back whole, which the processor cannot forward from its store buffer; copying
/// a key made long ago loads settled memory. `binary_bench`'s decode row measures it.) Each
/// kept key has its length and its first 16 bytes beside it, so that matching a name of up
/// to 16 bytes compares two integers and reads neither the key nor its name.
#[derive(Debug, Default)]
pub struct Decoder {
    /// The keys of the last record, in the order they were read (nested maps' included).
    keys: Vec<KeptKey>,
}

#[derive(Debug)]
struct KeptKey {
    prefix: u128,
    len: usize,
    key: Key,
}

/// The most keys a [`Decoder`] keeps from one record.
const CACHED_KEYS: usize = 64;

impl Decoder {
    pub fn new() -> Self {
        Decoder::default()
    }

    /// Decodes one record, as [`decode`] does.
    pub fn decode(&mut self, bytes: &[u8]) -> Result<Event, DecodeError> {
        let mut r = self.reader(bytes);
        match r.event() {
            Ok(event) => Ok(event),
            Err(Failed) => Err(r.error.take().expect("a failure records its error")),
        }
    }

    /// Decodes one record onto the end of `events`, as [`Decoder::decode`] does; on an error
    /// `events` is as it was. The event is built where it stays: returning it moved it
    /// through the caller's stack, reloading bytes just stored (as in [`Reader::map_into`]).
    pub fn decode_into(
        &mut self,
        bytes: &[u8],
        events: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        events.push(Event::from_parts(Map::new(), Map::new()));
        let event = events.last_mut().expect("just pushed");
        let mut r = self.reader(bytes);
        match r.event_into(event) {
            Ok(()) => Ok(()),
            Err(Failed) => {
                events.pop();
                Err(r.error.take().expect("a failure records its error"))
            }
        }
    }

    fn reader<'a, 'k>(&'k mut self, bytes: &'a [u8]) -> Reader<'a, 'k> {
        Reader {
            buf: bytes,
            pos: 0,
            error: None,
            keys: &mut self.keys,
            next_key: 0,
        }
    }
}

/// A decoding step failed; the error is in [`Reader::error`]. Zero-sized, so that a
/// `Result<Value, Failed>` is no larger than a `Value` and the hot path moves little.
struct Failed;

struct Reader<'a, 'k> {
    buf: &'a [u8],
    pos: usize,
    error: Option<DecodeError>,
    /// The [`Decoder`]'s keys of the last record, and the place of the next key in this one.
    keys: &'k mut Vec<KeptKey>,
    next_key: usize,
}

impl<'a> Reader<'a, '_> {
    fn event(&mut self) -> Result<Event, Failed> {
        let mut event = Event::from_parts(Map::new(), Map::new());
        self.event_into(&mut event)?;
        Ok(event)
    }

    /// Fills `event`, whose maps are empty.
    fn event_into(&mut self, event: &mut Event) -> Result<(), Failed> {
        let version = self.byte("format version")?;
        if version != FORMAT_VERSION {
            return Err(self.fail(DecodeError::UnknownVersion { found: version }));
        }
        let (fields, metadata) = event.maps_mut();
        self.map_into(0, fields)?;
        self.map_into(0, metadata)?;
        if self.pos != self.buf.len() {
            return Err(self.fail(DecodeError::TrailingBytes {
                offset: self.pos,
                count: self.buf.len() - self.pos,
            }));
        }
        Ok(())
    }

    #[cold]
    fn fail(&mut self, error: DecodeError) -> Failed {
        self.error = Some(error);
        Failed
    }

    #[cold]
    fn truncated(&mut self, what: &'static str, offset: usize) -> Failed {
        let len = self.buf.len();
        self.fail(DecodeError::Truncated { what, offset, len })
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    #[inline(always)]
    fn byte(&mut self, what: &'static str) -> Result<u8, Failed> {
        match self.buf.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.truncated(what, self.pos)),
        }
    }

    #[inline(always)]
    fn varint(&mut self, what: &'static str) -> Result<u64, Failed> {
        // Most varints (lengths, counts, small numbers) are one byte.
        if let Some(&b) = self.buf.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b));
            }
        }
        self.long_varint(what)
    }

    fn long_varint(&mut self, what: &'static str) -> Result<u64, Failed> {
        let start = self.pos;
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(self.truncated(what, start));
            };
            self.pos += 1;
            if shift == 63 && b > 1 {
                return Err(self.fail(DecodeError::VarintOverflow {
                    what,
                    offset: start,
                }));
            }
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                if b == 0 && shift > 0 {
                    return Err(self.fail(DecodeError::VarintNotMinimal {
                        what,
                        offset: start,
                    }));
                }
                return Ok(value);
            }
            // Below 63 here: at shift 63 only 0x00 and 0x01 pass, and both end the varint.
            shift += 7;
        }
    }

    /// A length or count that must not exceed the bytes left after it; returned as usize.
    #[inline(always)]
    fn length(&mut self, what: &'static str) -> Result<usize, Failed> {
        let offset = self.pos;
        let declared = self.varint(what)?;
        let remaining = self.remaining();
        if declared > remaining as u64 {
            return Err(self.fail(DecodeError::LengthExceedsInput {
                what,
                declared,
                offset,
                remaining,
            }));
        }
        Ok(declared as usize)
    }

    /// A length-prefixed UTF-8 string.
    #[inline(always)]
    fn str(&mut self, what_len: &'static str, what: &'static str) -> Result<&'a str, Failed> {
        let len = self.length(what_len)?;
        let start = self.pos;
        let bytes = &self.buf[start..start + len];
        self.pos += len;
        // Nearly every key and most values are ASCII, which a word-at-a-time check settles.
        if is_ascii(bytes) {
            // SAFETY: ASCII is valid UTF-8.
            return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
        }
        std::str::from_utf8(bytes).map_err(|e| {
            self.fail(DecodeError::InvalidUtf8 {
                what,
                offset: start + e.valid_up_to(),
            })
        })
    }

    /// A map whose entries are values at `depth + 1` if they are containers, into `dst`
    /// (empty).
    ///
    /// The entries are made empty first and then filled in place (the key replaced whole, the
    /// value written into its slot): building each entry on the stack and moving it in
    /// reloaded freshly written bytes in wider loads than they were stored with, which the
    /// processor cannot forward from its store buffer; those stalls cost more than the rest
    /// of the decoding. A key is built whole (`Key::from`) rather than appended to the empty
    /// one: 24 bytes written at once, where appending went through the string's length and
    /// capacity checks (`binary_bench`: 165 → 141 ns for five short fields).
    fn map_into(&mut self, depth: usize, dst: &mut Map) -> Result<(), Failed> {
        // Every entry takes at least two bytes, so `count` (checked against the remaining
        // bytes) bounds the allocation by the input's size.
        let count = self.length("map count")?;
        let mut entries: Vec<(Key, Value)> = Vec::with_capacity(count);
        entries.resize_with(count, Default::default);
        let mut previous: (&[u8], u128) = (&[], 0);
        for (i, (k, v)) in entries.iter_mut().enumerate() {
            let key_offset = self.pos;
            let key = self.str("key length", "key")?;
            let p = crate::key::prefix(key.as_bytes());
            self.set_key(k, key, p);
            self.value_into(depth, v)?;
            // Keys ascend in byte order, which is `Key`'s order too.
            if i > 0 && !follows(previous, (key.as_bytes(), p)) {
                return Err(self.fail(DecodeError::KeyOutOfOrder { offset: key_offset }));
            }
            previous = (key.as_bytes(), p);
        }
        // Passed on by its parts (see `by_parts`): moved whole, this was most of an empty
        // record's decoding.
        *dst = Map::from_sorted_store_unchecked(by_parts(entries));
        Ok(())
    }

    /// Sets the empty `k` to `key` (whose [`crate::key::prefix`] is `p`): a copy of the key
    /// at the same place in the last record if it is the same (see [`Decoder`]), else a new
    /// one, kept for the next record. (Not inlined unoptimized, for the reason
    /// [`Reader::scalar_into`] gives.)
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn set_key(&mut self, k: &mut Key, key: &str, p: u128) {
        let i = self.next_key;
        self.next_key += 1;
        let last = self.keys.get_mut(i);
        // Names of up to 16 bytes are equal when their lengths and prefixes are.
        if let Some(last) = &last {
            if last.len == key.len()
                && last.prefix == p
                && (key.len() <= 16 || last.key.as_str() == key)
            {
                return k.clone_from(&last.key);
            }
        }
        *k = Key::from(key);
        let kept = KeptKey {
            prefix: p,
            len: key.len(),
            key: k.clone(),
        };
        match last {
            Some(last) => *last = kept,
            None if i < CACHED_KEYS => self.keys.push(kept),
            None => {}
        }
    }

    /// One value held by a container at `depth` (0 = the fields or metadata map), written
    /// into `slot` (which holds `Null`).
    fn value_into(&mut self, depth: usize, slot: &mut Value) -> Result<(), Failed> {
        let offset = self.pos;
        let tag = self.byte("value tag")?;
        match tag {
            TAG_ARRAY | TAG_OBJECT => {
                if depth >= MAX_DEPTH {
                    return Err(self.fail(DecodeError::TooDeep { offset }));
                }
                if tag == TAG_OBJECT {
                    put(slot, Value::Object(Map::new()));
                    let Value::Object(map) = slot else {
                        unreachable!("just set")
                    };
                    self.map_into(depth + 1, map)?;
                } else {
                    // Every element takes at least one byte, so `count` (checked against
                    // the remaining bytes) bounds the allocation by the input's size.
                    let count = self.length("array count")?;
                    // Made in its slot, then filled: a vector built on the stack and moved
                    // in was reloaded in wider loads than it was stored with (as in `map_into`).
                    put(slot, Value::Array(Vec::with_capacity(count)));
                    let Value::Array(items) = slot else {
                        unreachable!("just set")
                    };
                    items.resize_with(count, Default::default);
                    for item in items {
                        self.value_into(depth + 1, item)?;
                    }
                }
            }
            tag => self.scalar_into(tag, offset, slot)?,
        }
        Ok(())
    }

    /// A value that holds no other (`tag` read at `offset`), written into `slot` (`Null`).
    /// Apart from [`Reader::value_into`] so that its temporaries are not in the frame of
    /// every level of a deep record's recursion: unoptimized (the tests' builds), those
    /// frames overflowed the stack at [`MAX_DEPTH`]; optimized, it is inlined.
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn scalar_into(&mut self, tag: u8, offset: usize, slot: &mut Value) -> Result<(), Failed> {
        match tag {
            TAG_NULL => {}
            TAG_FALSE => put(slot, Value::Bool(false)),
            TAG_TRUE => put(slot, Value::Bool(true)),
            TAG_INT => put(slot, Value::Int(unzigzag(self.varint("int")?))),
            TAG_FLOAT => {
                let start = self.pos;
                let Some(bytes) = self.buf.get(start..start + 8) else {
                    return Err(self.truncated("float", start));
                };
                self.pos += 8;
                let mut bits = [0u8; 8];
                bits.copy_from_slice(bytes);
                put(slot, Value::Float(f64::from_bits(u64::from_le_bytes(bits))));
            }
            TAG_BIGINT => {
                let start = self.pos;
                let Some(bytes) = self.buf.get(start..start + 16) else {
                    return Err(self.truncated("big integer", start));
                };
                self.pos += 16;
                let mut raw = [0u8; 16];
                raw.copy_from_slice(bytes);
                let value = Value::integer(i128::from_le_bytes(raw));
                if matches!(value, Value::Int(_)) {
                    return Err(self.fail(DecodeError::BigIntInRange { offset }));
                }
                put(slot, value);
            }
            TAG_DECIMAL => {
                let s = self.str("decimal length", "decimal")?;
                match Value::decimal(s) {
                    Some(Value::Decimal(d)) if d == s => put(slot, Value::Decimal(d)),
                    _ => return Err(self.fail(DecodeError::DecimalNotCanonical { offset })),
                }
            }
            TAG_STRING => {
                let s = self.str("string length", "string")?;
                put(slot, Value::String(Str::from(s)));
            }
            TAG_TIMESTAMP => {
                let millis = unzigzag(self.varint("timestamp")?);
                put(slot, Value::Timestamp(Timestamp::from_millis(millis)));
            }
            tag => return Err(self.fail(DecodeError::UnknownTag { tag, offset })),
        }
        Ok(())
    }
}

/// Whether every byte is ASCII. `<[u8]>::is_ascii` checks the bytes after its last 64-byte
/// block one by one, which is most of a short string; here they are read as a few words, the
/// last ones overlapping the ones before.
#[inline(always)]
fn is_ascii(b: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let n = b.len();
    let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    if n >= 8 {
        let mut any = word(n - 8);
        let mut words = b.chunks_exact(8);
        for w in &mut words {
            any |= u64::from_le_bytes(w.try_into().expect("8 bytes"));
        }
        any & HIGH == 0
    } else if n >= 4 {
        let half = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        (half(0) | half(n - 4)) & HIGH as u32 == 0
    } else {
        b.iter().fold(0, |any, &c| any | c) < 0x80
    }
}

/// Whether `key` comes after `previous` in byte order, each with its
/// [`crate::key::prefix`]: the prefixes settle it unless they are equal.
#[inline(always)]
fn follows(previous: (&[u8], u128), key: (&[u8], u128)) -> bool {
    if previous.1 != key.1 {
        return key.1 > previous.1;
    }
    let (previous, key) = (previous.0, key.0);
    if previous.len() <= 16 && key.len() <= 16 {
        // The same first bytes, zero-padded: the shorter is the other's start.
        return key.len() > previous.len();
    }
    // Keys are short: a loop beats a call to `memcmp`.
    for (a, b) in previous.iter().zip(key) {
        if a != b {
            return b > a;
        }
    }
    key.len() > previous.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(e: &Event) -> Vec<u8> {
        let mut out = Vec::new();
        encode(e, &mut out);
        out
    }

    fn obj(entries: &[(&str, Value)]) -> Map {
        entries
            .iter()
            .map(|(k, v)| (Key::from(*k), v.clone()))
            .collect()
    }

    /// Equality that compares floats by their bits (NaN payloads, -0.0).
    fn same_value(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
            }
            (Value::Object(x), Value::Object(y)) => same_map(x, y),
            _ => a == b,
        }
    }

    fn same_map(a: &Map, b: &Map) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|((ka, va), (kb, vb))| ka == kb && same_value(va, vb))
    }

    fn assert_round_trip(e: &Event) -> Vec<u8> {
        let bytes = enc(e);
        assert_eq!(bytes.len(), encoded_len(e));
        let back = decode(&bytes).unwrap();
        assert!(same_map(back.fields(), e.fields()), "fields differ");
        assert!(same_map(back.metadata(), e.metadata()), "metadata differ");
        bytes
    }

    fn all_kinds() -> Event {
        let nested = obj(&[
            ("empty_array", Value::Array(vec![])),
            ("empty_object", Value::Object(Map::new())),
            (
                "list",
                Value::Array(vec![
                    Value::Null,
                    Value::Bool(true),
                    Value::Int(-1),
                    Value::Float(2.5),
                    "x".into(),
                    Value::Timestamp(Timestamp::from_millis(-1)),
                    Value::Array(vec![Value::Object(obj(&[("deep", Value::Int(7))]))]),
                ]),
            ),
        ]);
        let fields = obj(&[
            (
                "@timestamp",
                Value::Timestamp(Timestamp::from_millis(1_600_000_000_123)),
            ),
            ("@version", "1".into()),
            ("message", "héllo wörld ✓ 🚀".into()),
            ("null", Value::Null),
            ("yes", Value::Bool(true)),
            ("no", Value::Bool(false)),
            ("int_min", Value::Int(i64::MIN)),
            ("int_max", Value::Int(i64::MAX)),
            ("zero", Value::Int(0)),
            ("float", Value::Float(-1234.5678)),
            ("neg_zero", Value::Float(-0.0)),
            ("inf", Value::Float(f64::NEG_INFINITY)),
            ("nan", Value::Float(f64::from_bits(0x7ff8_dead_beef_0001))),
            ("ts_min", Value::Timestamp(Timestamp::from_millis(i64::MIN))),
            ("ünïcödé kéy 🔑", "v".into()),
            ("", "empty key".into()),
            ("nested", Value::Object(nested)),
        ]);
        let metadata = obj(&[
            ("index", "logs-2020".into()),
            ("count", Value::Int(3)),
            (
                "sub",
                Value::Object(obj(&[("a", Value::Array(vec![1i64.into()]))])),
            ),
        ]);
        Event::from_parts(fields, metadata)
    }

    #[test]
    fn round_trips_every_kind() {
        let e = all_kinds();
        assert_round_trip(&e);
        // Types are kept, not just values.
        let back = decode(&enc(&e)).unwrap();
        assert_eq!(back.get_field("zero"), Some(&Value::Int(0)));
        assert!(matches!(back.get_field("float"), Some(Value::Float(_))));
        assert!(back.timestamp().is_some());
        match back.get_field("neg_zero") {
            Some(Value::Float(f)) => assert!(f.is_sign_negative() && *f == 0.0),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn round_trips_empty_and_real_events() {
        assert_round_trip(&Event::from_parts(Map::new(), Map::new()));
        let mut e = Event::with_message("a log line");
        e.add_tag("t");
        e.cancel();
        let back = decode(&assert_round_trip(&e)).unwrap();
        assert!(!back.is_cancelled(), "cancelled is not serialised");
        assert_eq!(back.into_parts(), e.into_parts());
    }

    #[test]
    fn fields_and_metadata_stay_apart() {
        let e = Event::from_parts(obj(&[("k", "field".into())]), obj(&[("k", "meta".into())]));
        let back = decode(&enc(&e)).unwrap();
        assert_eq!(back.get_field("k"), Some(&"field".into()));
        assert_eq!(back.metadata().get("k"), Some(&"meta".into()));
    }

    #[test]
    fn layout_matches_the_documented_example() {
        let e = Event::from_parts(obj(&[("a", Value::Int(1))]), Map::new());
        assert_eq!(enc(&e), [0x01, 0x01, 0x01, b'a', TAG_INT, 0x02, 0x00]);
        let e = Event::from_parts(
            obj(&[
                ("f", Value::Float(1.0)),
                ("n", Value::Int(-65)),
                ("t", Value::Timestamp(Timestamp::from_millis(64))),
            ]),
            obj(&[("b", Value::Bool(true))]),
        );
        let mut want = vec![0x01, 0x03];
        want.extend([0x01, b'f', TAG_FLOAT]);
        want.extend(1.0f64.to_bits().to_le_bytes());
        want.extend([0x01, b'n', TAG_INT, 0x81, 0x01]); // zigzag(-65) = 129
        want.extend([0x01, b't', TAG_TIMESTAMP, 0x80, 0x01]); // zigzag(64) = 128
        want.extend([0x01, 0x01, b'b', TAG_TRUE]);
        assert_eq!(enc(&e), want);
    }

    #[test]
    fn encode_appends() {
        let e = all_kinds();
        let mut out = vec![0xaa, 0xbb];
        encode(&e, &mut out);
        assert_eq!(&out[..2], &[0xaa, 0xbb]);
        assert_eq!(out.len() - 2, encoded_len(&e));
        assert_eq!(decode(&out[2..]).unwrap().fields().len(), e.fields().len());
    }

    #[test]
    fn varints_and_zigzag() {
        for v in [0u64, 1, 127, 128, 16383, 16384, u64::MAX >> 1, u64::MAX] {
            let mut out = Vec::new();
            put_varint(v, &mut out);
            assert_eq!(out.len(), varint_len(v), "{v}");
            let mut keys = Vec::new();
            let mut r = Reader {
                buf: &out,
                pos: 0,
                error: None,
                keys: &mut keys,
                next_key: 0,
            };
            assert!(matches!(r.varint("test"), Ok(x) if x == v));
            assert_eq!(r.pos, out.len());
        }
        for n in [0i64, -1, 1, -2, 2, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(n)), n);
        }
        assert_eq!(zigzag(0), 0);
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        assert_eq!(zigzag(i64::MIN), u64::MAX);
    }

    #[test]
    fn version_byte_is_checked() {
        let mut bytes = enc(&all_kinds());
        assert_eq!(bytes[0], FORMAT_VERSION);
        bytes[0] = 7;
        let err = decode(&bytes).unwrap_err();
        assert_eq!(err, DecodeError::UnknownVersion { found: 7 });
        assert_eq!(
            err.to_string(),
            "unknown format version 7 (this build reads version 1)"
        );
    }

    #[test]
    fn empty_input_is_truncated() {
        let err = decode(&[]).unwrap_err();
        assert_eq!(
            err,
            DecodeError::Truncated {
                what: "format version",
                offset: 0,
                len: 0
            }
        );
        assert_eq!(
            err.to_string(),
            "truncated: format version at offset 0 runs past the end of the input (0 bytes)"
        );
    }

    #[test]
    fn truncated_items() {
        // Missing metadata map.
        assert_eq!(
            decode(&[1, 0]).unwrap_err(),
            DecodeError::Truncated {
                what: "map count",
                offset: 2,
                len: 2
            }
        );
        // Missing value tag.
        assert_eq!(
            decode(&[1, 1, 1, b'a']).unwrap_err(),
            DecodeError::Truncated {
                what: "value tag",
                offset: 4,
                len: 4
            }
        );
        // Float with 3 of its 8 bytes.
        assert_eq!(
            decode(&[1, 1, 1, b'a', TAG_FLOAT, 0, 0, 0]).unwrap_err(),
            DecodeError::Truncated {
                what: "float",
                offset: 5,
                len: 8
            }
        );
        // Varint cut after a continuation byte.
        assert_eq!(
            decode(&[1, 1, 1, b'a', TAG_INT, 0x80]).unwrap_err(),
            DecodeError::Truncated {
                what: "int",
                offset: 5,
                len: 6
            }
        );
    }

    #[test]
    fn lengths_beyond_the_input_fail_before_allocating() {
        // Key length 0xAC 0x02 = 300 at offset 2, 3 bytes left.
        let err = decode(&[1, 1, 0xac, 0x02, b'a', b'b', b'c']).unwrap_err();
        assert_eq!(
            err,
            DecodeError::LengthExceedsInput {
                what: "key length",
                declared: 300,
                offset: 2,
                remaining: 3
            }
        );
        assert_eq!(
            err.to_string(),
            "truncated: key length 300 at offset 2 exceeds remaining 3 bytes"
        );
        // String length.
        let err = decode(&[1, 1, 1, b'a', TAG_STRING, 5, b'x']).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated: string length 5 at offset 5 exceeds remaining 1 bytes"
        );
        // An array claiming u64::MAX elements.
        let mut bytes = vec![1, 1, 1, b'a', TAG_ARRAY];
        put_varint(u64::MAX, &mut bytes);
        bytes.extend([TAG_NULL, 0]);
        assert_eq!(
            decode(&bytes).unwrap_err(),
            DecodeError::LengthExceedsInput {
                what: "array count",
                declared: u64::MAX,
                offset: 5,
                remaining: 2
            }
        );
        // A map claiming a billion entries.
        let mut bytes = vec![1];
        put_varint(1 << 30, &mut bytes);
        assert!(matches!(
            decode(&bytes).unwrap_err(),
            DecodeError::LengthExceedsInput {
                what: "map count",
                declared: 1073741824,
                offset: 1,
                remaining: 0
            }
        ));
    }

    #[test]
    fn bad_varints() {
        // 11 bytes of continuation.
        let mut bytes = vec![1];
        bytes.extend([0xff; 10]);
        bytes.push(0x01);
        assert_eq!(
            decode(&bytes).unwrap_err(),
            DecodeError::VarintOverflow {
                what: "map count",
                offset: 1
            }
        );
        // 10th byte carrying more than the 64th bit.
        let mut bytes = vec![1, 1, 1, b'a', TAG_INT];
        bytes.extend([0xff; 9]);
        bytes.extend([0x02, 0]);
        let err = decode(&bytes).unwrap_err();
        assert_eq!(
            err,
            DecodeError::VarintOverflow {
                what: "int",
                offset: 5
            }
        );
        assert_eq!(
            err.to_string(),
            "invalid varint for int at offset 5: does not fit in 64 bits"
        );
        // Non-minimal: 0 written as 0x80 0x00.
        let err = decode(&[1, 0x80, 0x00, 0]).unwrap_err();
        assert_eq!(
            err,
            DecodeError::VarintNotMinimal {
                what: "map count",
                offset: 1
            }
        );
        assert_eq!(
            err.to_string(),
            "invalid varint for map count at offset 1: not minimally encoded"
        );
    }

    #[test]
    fn unknown_tags() {
        for tag in [0x00, 0x0c, 0xff] {
            let err = decode(&[1, 1, 1, b'a', tag, 0]).unwrap_err();
            assert_eq!(err, DecodeError::UnknownTag { tag, offset: 4 });
        }
    }

    #[test]
    fn big_integers_round_trip_and_are_canonical() {
        let big = Value::integer(-(1i128 << 90) + 7);
        let e = Event::from_parts(obj(&[("b", big.clone())]), Map::new());
        let bytes = enc(&e);
        assert_eq!(decode(&bytes).unwrap().get_field("b"), Some(&big));
        // The same tag holding a value that fits in 64 bits is refused.
        let mut small = vec![1, 1, 1, b'b', 0x0a];
        small.extend_from_slice(&5i128.to_le_bytes());
        small.push(0);
        assert_eq!(
            decode(&small).unwrap_err(),
            DecodeError::BigIntInRange { offset: 4 }
        );
        assert_eq!(
            decode(&[1, 1, 1, b'a', 0x00, 0]).unwrap_err().to_string(),
            "unknown value tag 0x00 at offset 4"
        );
    }

    #[test]
    fn decimals_round_trip_and_are_canonical() {
        for text in [
            "123456789012345678901234567890123456789012",
            "-0.12345678901234567890",
            "1.5E+400",
        ] {
            let d = Value::decimal(text).unwrap();
            let e = Event::from_parts(obj(&[("d", d.clone())]), Map::new());
            assert_eq!(decode(&enc(&e)).unwrap().get_field("d"), Some(&d), "{text}");
        }
        // Text that is no number, not canonical, or an integer with its own encoding.
        for bad in [&b"abc"[..], b"+1.5", b"007.5", b"12", b"1.", b""] {
            let mut rec = vec![1, 1, 1, b'd', TAG_DECIMAL, bad.len() as u8];
            rec.extend_from_slice(bad);
            rec.push(0);
            assert_eq!(
                decode(&rec).unwrap_err(),
                DecodeError::DecimalNotCanonical { offset: 4 },
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn invalid_utf8() {
        // Key "a\xff" at offset 2, its bytes from 3: the bad byte is at 4.
        let err = decode(&[1, 1, 2, b'a', 0xff, TAG_NULL, 0]).unwrap_err();
        assert_eq!(
            err,
            DecodeError::InvalidUtf8 {
                what: "key",
                offset: 4
            }
        );
        assert_eq!(err.to_string(), "invalid UTF-8 in key at offset 4");
        // A string value cut in the middle of a multi-byte character.
        let err = decode(&[1, 1, 1, b'a', TAG_STRING, 1, 0xc3, 0]).unwrap_err();
        assert_eq!(
            err,
            DecodeError::InvalidUtf8 {
                what: "string",
                offset: 6
            }
        );
    }

    #[test]
    fn keys_must_be_sorted_and_unique() {
        // "b" then "a".
        let bytes = [1, 2, 1, b'b', TAG_NULL, 1, b'a', TAG_NULL, 0];
        let err = decode(&bytes).unwrap_err();
        assert_eq!(err, DecodeError::KeyOutOfOrder { offset: 5 });
        assert!(err.to_string().starts_with("key at offset 5 "));
        // Duplicate "a" in the metadata map.
        let bytes = [1, 0, 2, 1, b'a', TAG_NULL, 1, b'a', TAG_TRUE];
        assert_eq!(
            decode(&bytes).unwrap_err(),
            DecodeError::KeyOutOfOrder { offset: 6 }
        );
        // "" < "a" < "aa" < "b" is fine.
        let bytes = [
            1, 4, 0, TAG_NULL, 1, b'a', TAG_NULL, 2, b'a', b'a', TAG_NULL, 1, b'b', TAG_NULL, 0,
        ];
        assert_eq!(decode(&bytes).unwrap().fields().len(), 4);
    }

    #[test]
    fn trailing_bytes_are_rejected() {
        let mut bytes = enc(&all_kinds());
        let n = bytes.len();
        bytes.extend([0, 0]);
        let err = decode(&bytes).unwrap_err();
        assert_eq!(
            err,
            DecodeError::TrailingBytes {
                offset: n,
                count: 2
            }
        );
        assert_eq!(
            err.to_string(),
            format!("2 trailing byte(s) at offset {n} after the end of the event")
        );
    }

    fn nested(depth: usize) -> Value {
        let mut v = Value::Int(1);
        for i in 0..depth {
            v = if i % 2 == 0 {
                Value::Array(vec![v])
            } else {
                Value::Object(obj(&[("k", v)]))
            };
        }
        v
    }

    #[test]
    fn nesting_up_to_the_limit_round_trips() {
        let e = Event::from_parts(obj(&[("deep", nested(MAX_DEPTH))]), Map::new());
        assert_round_trip(&e);
    }

    /// The encoder's copies of short strings (overlapping loads and stores, by length class)
    /// and its growth of the output: every length from 0 to 80, keys and values, into
    /// vectors with no room, a byte of room, and room to spare, each already holding bytes.
    #[test]
    fn strings_of_every_length_encode_byte_for_byte() {
        for len in 0..=80usize {
            let text: String = (0..len)
                .map(|i| char::from(b'a' + (i % 26) as u8))
                .collect();
            let mut fields = Map::new();
            fields.insert(
                Key::from(text.as_str()),
                Value::String(Str::from(text.as_str())),
            );
            let event = Event::from_parts(fields, Map::new());
            let mut want = vec![0xee, FORMAT_VERSION, 1, len as u8];
            want.extend_from_slice(text.as_bytes());
            want.extend_from_slice(&[TAG_STRING, len as u8]);
            want.extend_from_slice(text.as_bytes());
            want.push(0);
            for spare in [0, 1, 3 + 2 * len, 4096] {
                let mut out = Vec::with_capacity(1 + spare);
                out.push(0xee);
                encode(&event, &mut out);
                assert_eq!(out, want, "length {len}, spare capacity {spare}");
                assert_eq!(decode(&out[1..]).unwrap(), event);
            }
        }
    }

    #[test]
    fn nesting_beyond_the_limit_is_an_error() {
        let e = Event::from_parts(Map::new(), obj(&[("deep", nested(MAX_DEPTH + 1))]));
        let bytes = enc(&e);
        // metadata: version, empty fields, count 1, key "deep" (5 bytes), then the tags.
        let first_tag = 1 + 1 + 1 + 5;
        assert!(
            matches!(decode(&bytes).unwrap_err(), DecodeError::TooDeep { offset } if offset > first_tag)
        );

        // A hostile record: a million nested one-element arrays must not overflow the stack.
        let mut bytes = vec![1, 1, 1, b'a'];
        for _ in 0..1_000_000 {
            bytes.extend([TAG_ARRAY, 1]);
        }
        let err = decode(&bytes).unwrap_err();
        assert_eq!(
            err,
            DecodeError::TooDeep {
                offset: 4 + 2 * MAX_DEPTH
            }
        );
        assert_eq!(
            err.to_string(),
            format!(
                "nesting deeper than 512 levels at offset {}",
                4 + 2 * MAX_DEPTH
            )
        );
    }

    #[test]
    fn ascii_check_sees_every_byte() {
        for n in 0..80 {
            let plain = vec![b'a'; n];
            assert!(is_ascii(&plain), "{n}");
            for at in 0..n {
                let mut high = plain.clone();
                high[at] = 0x80;
                assert!(!is_ascii(&high), "{n} bytes, 0x80 at {at}");
            }
        }
    }

    #[test]
    fn decoded_input_re_encodes_to_the_same_bytes() {
        let bytes = enc(&all_kinds());
        assert_eq!(enc(&decode(&bytes).unwrap()), bytes);
    }
}
