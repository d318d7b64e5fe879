//! [`Key`]: a field name, interned once per process so that comparing two names is, nearly
//! always, comparing two integers.
//!
//! Every map of an event ([`crate::Map`]) is a vector sorted by [`Key`], and every field
//! lookup, insert and merge is a binary search over it: field names are compared far more
//! often than they are made. So a name is made into a `Key` once (when a config's field
//! reference is compiled, when a decoder meets a name it did not meet before) and compared
//! cheaply from then on:
//!
//! - **Interning.** `Key::from("status")` returns a handle to the process's one copy of the
//!   name (a [`Name`]: the text and its first 16 bytes as a big-endian integer). Two keys of
//!   the same name hold the same pointer: equality is one pointer compare.
//! - **Order.** Keys order as their text does (byte order), so maps, JSON and rubydebug keep
//!   the output order they had. A key carries its name's first 8 bytes beside the pointer, so
//!   two names that differ there are ordered by one integer compare without reading either
//!   name; then by their 16-byte prefixes; only names that share their first 16 bytes compare
//!   their text.
//! - **Finding a name.** A thread keeps a direct-mapped cache of the names it met (indexed by
//!   the prefix and the length), then a hash map of them; only a name the thread never met
//!   locks the process's table. A decoder that meets the same names event after event finds
//!   them in the cache without hashing.
//! - **Bounds.** Interned names are never freed, so the table is bounded: names longer than
//!   [`MAX_INTERNED_LEN`] bytes, and every new name once [`MAX_INTERNED`] are interned (JSON
//!   with ids for keys, say), are kept in a key of their own instead (reference-counted). A
//!   name is either always interned or never (the table only grows, and a full table stays
//!   full), so pointer equality stays exact.

use std::borrow::Borrow;
use std::cell::{Cell, RefCell};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::num::NonZeroUsize;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, OnceLock};

/// Names longer than this are not interned.
pub const MAX_INTERNED_LEN: usize = 128;
/// The most names the process interns; later new names get keys of their own.
pub const MAX_INTERNED: usize = 1 << 16;

/// One field name: its text, and its first 16 bytes (zero-padded) as a big-endian integer,
/// which orders two names as their text does unless the two are equal.
pub struct Name {
    prefix: u128,
    text: Box<str>,
}

impl Name {
    fn new(text: &str) -> Name {
        Name {
            prefix: prefix(text.as_bytes()),
            text: text.into(),
        }
    }
}

/// The first 16 bytes of `bytes` as a big-endian integer, zero-padded. Built from loads of
/// the name itself (overlapping ones for lengths between the load sizes) rather than by
/// copying the name into a zeroed buffer and loading that back: the processor cannot forward
/// a load from those narrower stores, and the stall was most of a cache hit's cost.
#[inline]
pub(crate) fn prefix(bytes: &[u8]) -> u128 {
    let n = bytes.len();
    let be64 = |at: usize| u64::from_be_bytes(bytes[at..at + 8].try_into().unwrap_or_default());
    let be32 = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap_or_default());
    if n >= 16 {
        return u128::from_be_bytes(bytes[..16].try_into().unwrap_or_default());
    }
    let high: u64 = if n >= 8 {
        be64(0)
    } else if n >= 4 {
        // Bytes 4..n are the low n - 4 bytes of the load ending at n.
        let tail = (be32(n - 4) as u64) & ((1u64 << (8 * (n - 4))) - 1);
        ((be32(0) as u64) << 32) | (tail << (8 * (8 - n)))
    } else {
        let mut v = 0u64;
        for (i, &b) in bytes.iter().enumerate() {
            v |= (b as u64) << (56 - 8 * i);
        }
        v
    };
    let low: u64 = if n > 8 {
        // Bytes 8..n are the low n - 8 bytes of the load ending at n; the shift drops the
        // bytes before 8.
        be64(n - 8) << (8 * (16 - n))
    } else {
        0
    };
    ((high as u128) << 64) | low as u128
}

/// A field name (see the module's documentation). Derefs to `&str`; cloning copies a pointer
/// (and counts a reference, for a key of its own).
///
/// 16 bytes: the name's first 8 bytes, big-endian (the high half of its [`Name`]'s prefix),
/// and a pointer to the name, tagged in its low bit (0: interned, a `&'static Name`; 1: a key
/// of its own, from `Arc::into_raw`; a `Name` is 16-byte aligned, so the bit is free). The
/// head kept beside the pointer lets a binary search order two keys without following either
/// pointer whenever their first 8 bytes differ, as nearly all of a map's names do.
pub struct Key {
    head: u64,
    name: NonNull<Name>,
}

// SAFETY: a key shares only a `Name` (immutable after it is made), through a `&'static` or
// an `Arc`, both of which are Send and Sync for a Send + Sync `Name`.
unsafe impl Send for Key {}
unsafe impl Sync for Key {}

/// The tag bit of [`Key::name`]: set for a key of its own.
const OWN: usize = 1;

impl Key {
    /// The key of `text`: the interned one where there is (or may be) one.
    pub fn new(text: &str) -> Key {
        let interned = if text.len() > MAX_INTERNED_LEN {
            None
        } else {
            intern(text)
        };
        match interned {
            Some(name) => Key::interned(name),
            None => {
                let name = Arc::new(Name::new(text));
                let head = (name.prefix >> 64) as u64;
                let raw = NonNull::new(Arc::into_raw(name).cast_mut())
                    .expect("an Arc's pointer is not null");
                Key {
                    head,
                    name: raw.map_addr(|a| a | OWN),
                }
            }
        }
    }

    #[inline]
    fn interned(name: &'static Name) -> Key {
        Key {
            head: (name.prefix >> 64) as u64,
            name: NonNull::from(name),
        }
    }

    /// The pointer without its tag.
    #[inline]
    fn untagged(&self) -> NonNull<Name> {
        // The pointer is 16-byte aligned, so clearing the tag leaves it non-null.
        self.name
            .map_addr(|a| NonZeroUsize::new(a.get() & !OWN).unwrap_or(a))
    }

    #[inline]
    fn name(&self) -> &Name {
        // SAFETY: the pointer is a `&'static Name` or an `Arc<Name>` this key holds a count
        // of, so the name outlives the borrow of `self`.
        unsafe { self.untagged().as_ref() }
    }

    /// Whether this key is the process's shared copy of its name (else a key of its own: a
    /// long name, or a new name met once the table was full).
    #[inline]
    pub fn is_interned(&self) -> bool {
        self.name.addr().get() & OWN == 0
    }

    #[inline]
    pub fn as_str(&self) -> &str {
        &self.name().text
    }

    /// The name's text, kept for the rest of the process: `Some` for an interned key.
    pub fn static_str(&self) -> Option<&'static str> {
        if !self.is_interned() {
            return None;
        }
        // SAFETY: an interned key's pointer is a `&'static Name` (leaked into the table).
        let name: &'static Name = unsafe { self.untagged().as_ref() };
        Some(&name.text)
    }
}

impl Clone for Key {
    #[inline]
    fn clone(&self) -> Key {
        if !self.is_interned() {
            // SAFETY: the untagged pointer came from `Arc::into_raw` and this key holds a
            // count, so the allocation is live.
            unsafe { Arc::increment_strong_count(self.untagged().as_ptr().cast_const()) };
        }
        Key {
            head: self.head,
            name: self.name,
        }
    }
}

impl Drop for Key {
    #[inline]
    fn drop(&mut self) {
        if !self.is_interned() {
            // SAFETY: releases the count this key holds (taken by `Arc::into_raw` or by
            // `clone`), once.
            unsafe { Arc::decrement_strong_count(self.untagged().as_ptr().cast_const()) };
        }
    }
}

impl Default for Key {
    /// The empty name.
    #[inline]
    fn default() -> Key {
        static EMPTY: OnceLock<&'static Name> = OnceLock::new();
        Key::interned(EMPTY.get_or_init(|| {
            let table = table().lock().unwrap_or_else(|e| e.into_inner());
            table[""]
        }))
    }
}

impl PartialEq for Key {
    #[inline]
    fn eq(&self, other: &Key) -> bool {
        if self.head != other.head {
            return false;
        }
        if (self.name.addr().get() | other.name.addr().get()) & OWN == 0 {
            // Both interned: the same name is the same pointer.
            return self.name == other.name;
        }
        self.as_str() == other.as_str()
    }
}

impl Eq for Key {}

impl Ord for Key {
    #[inline]
    fn cmp(&self, other: &Key) -> Ordering {
        if self.head != other.head {
            return self.head.cmp(&other.head);
        }
        if self.name == other.name {
            return Ordering::Equal;
        }
        let (a, b) = (self.name(), other.name());
        match a.prefix.cmp(&b.prefix) {
            Ordering::Equal => a.text.cmp(&b.text),
            unequal => unequal,
        }
    }
}

impl PartialOrd for Key {
    #[inline]
    fn partial_cmp(&self, other: &Key) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Hashes as the text does, as [`Borrow<str>`] requires.
impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl Deref for Key {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Key {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Key {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl From<&str> for Key {
    fn from(s: &str) -> Key {
        Key::new(s)
    }
}

impl From<&String> for Key {
    fn from(s: &String) -> Key {
        Key::new(s)
    }
}

impl From<String> for Key {
    fn from(s: String) -> Key {
        Key::new(&s)
    }
}

impl From<Box<str>> for Key {
    fn from(s: Box<str>) -> Key {
        Key::new(&s)
    }
}

impl From<std::borrow::Cow<'_, str>> for Key {
    fn from(s: std::borrow::Cow<'_, str>) -> Key {
        Key::new(&s)
    }
}

impl From<&Key> for Key {
    fn from(k: &Key) -> Key {
        k.clone()
    }
}

impl From<crate::value::Str> for Key {
    fn from(s: crate::value::Str) -> Key {
        Key::new(&s)
    }
}

impl From<&crate::value::Str> for Key {
    fn from(s: &crate::value::Str) -> Key {
        Key::new(s)
    }
}

impl From<Key> for String {
    fn from(k: Key) -> String {
        k.as_str().to_owned()
    }
}

impl From<Key> for crate::value::Str {
    fn from(k: Key) -> crate::value::Str {
        crate::value::Str::from(k.as_str())
    }
}

impl PartialEq<str> for Key {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Key {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Key {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<Key> for str {
    fn eq(&self, other: &Key) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Key> for &str {
    fn eq(&self, other: &Key) -> bool {
        *self == other.as_str()
    }
}

/// The [`Key`] of a name fixed at compile time, looked up once per call site:
/// `key!("message")` costs an atomic load where `Key::from("message")` hashes or probes.
#[macro_export]
macro_rules! key {
    ($text:expr) => {{
        static KEY: ::std::sync::OnceLock<$crate::Key> = ::std::sync::OnceLock::new();
        KEY.get_or_init(|| $crate::Key::from($text)).clone()
    }};
}

// ---- the table ----

/// The process's interned names, by text.
fn table() -> &'static Mutex<HashMap<&'static str, &'static Name>> {
    static TABLE: OnceLock<Mutex<HashMap<&'static str, &'static Name>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        // The empty name is there from the start, so that a full table still has it.
        let empty: &'static Name = Box::leak(Box::new(Name::new("")));
        Mutex::new(HashMap::from([(&*empty.text, empty)]))
    })
}

/// Slots of a thread's direct-mapped cache (a power of two).
const CACHE_SLOTS: usize = 512;

thread_local! {
    /// Direct-mapped: a name's slot is a hash of its prefix and length. Constant-initialised
    /// cells, so that the hit path has no lazy set-up and no borrow flag.
    static CACHE: [Cell<Option<&'static Name>>; CACHE_SLOTS] =
        const { [const { Cell::new(None) }; CACHE_SLOTS] };
    /// Every interned name this thread met.
    static SEEN: RefCell<HashMap<&'static str, &'static Name, foldhash::fast::RandomState>> =
        RefCell::new(HashMap::default());
}

#[inline]
fn slot(prefix: u128, len: usize) -> usize {
    let x = (prefix as u64) ^ ((prefix >> 64) as u64) ^ (len as u64);
    (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 55) as usize % CACHE_SLOTS
}

/// The interned name of `text`, interning it if the table has room; `None` when it is full
/// and `text` is not in it.
#[inline]
fn intern(text: &str) -> Option<&'static Name> {
    let p = prefix(text.as_bytes());
    let s = slot(p, text.len());
    let cached = CACHE.with(|c| c[s].get());
    if let Some(n) = cached {
        // Names of up to 16 bytes are equal when their prefixes and lengths are.
        if n.prefix == p && n.text.len() == text.len() && (text.len() <= 16 || *n.text == *text) {
            return Some(n);
        }
    }
    let found = intern_slowly(text)?;
    CACHE.with(|c| c[s].set(Some(found)));
    Some(found)
}

/// [`intern`] past the cache: this thread's map of names, then the process's table.
fn intern_slowly(text: &str) -> Option<&'static Name> {
    SEEN.with(|seen| {
        let mut seen = seen.borrow_mut();
        if let Some(n) = seen.get(text) {
            return Some(*n);
        }
        let n = intern_globally(text)?;
        seen.insert(&n.text, n);
        Some(n)
    })
}

#[cold]
fn intern_globally(text: &str) -> Option<&'static Name> {
    let mut table = table().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = table.get(text) {
        return Some(n);
    }
    if table.len() >= MAX_INTERNED {
        return None;
    }
    let name: &'static Name = Box::leak(Box::new(Name::new(text)));
    table.insert(&name.text, name);
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same_interned(a: &Key, b: &Key) -> bool {
        a.is_interned() && b.is_interned() && a.name == b.name
    }

    /// How many keys share a key of its own's name.
    fn owners(k: &Key) -> usize {
        assert!(!k.is_interned());
        // SAFETY: the key holds a count of this Arc; ManuallyDrop leaves it as it is.
        let arc = std::mem::ManuallyDrop::new(unsafe { Arc::from_raw(k.untagged().as_ptr()) });
        Arc::strong_count(&arc)
    }

    /// A key of its own counts its clones, on any thread, and its name goes with the last.
    #[test]
    fn keys_of_their_own_count_their_clones() {
        let a = Key::from("x".repeat(MAX_INTERNED_LEN + 1));
        assert_eq!(owners(&a), 1);
        let b = a.clone();
        assert_eq!(owners(&a), 2);
        let mut c = Key::from("other");
        c.clone_from(&b);
        assert_eq!(owners(&a), 3);
        std::thread::scope(|s| {
            s.spawn(|| {
                let d = c.clone();
                assert_eq!(d, a);
                assert_eq!(owners(&d), 4);
            });
        });
        drop(b);
        drop(c);
        assert_eq!(owners(&a), 1);
        assert_eq!(a.as_str().len(), MAX_INTERNED_LEN + 1);
    }

    #[test]
    fn same_name_same_pointer_and_order_is_byte_order() {
        let a = Key::from("status");
        let b = Key::from(String::from("status"));
        assert!(same_interned(&a, &b));
        assert_eq!(a, b);
        let names = [
            "",
            "a",
            "a\0",
            "ab",
            "country_code2",
            "country_code3",
            "country_name",
            "http_user_agent_original_long",
            "http_user_agent_original_longer",
            "\u{e9}t\u{e9}",
            "Z",
            "@timestamp",
        ];
        for x in names {
            for y in names {
                let (kx, ky) = (Key::from(x), Key::from(y));
                assert_eq!(kx.cmp(&ky), x.cmp(y), "{x:?} vs {y:?}");
                assert_eq!(kx == ky, x == y);
            }
        }
    }

    #[test]
    fn prefixes_are_the_zero_padded_first_16_bytes() {
        let text: Vec<u8> = (1..=40).map(|i| i as u8 * 6).collect();
        for n in 0..=40 {
            let mut buf = [0u8; 16];
            let k = n.min(16);
            buf[..k].copy_from_slice(&text[..k]);
            assert_eq!(prefix(&text[..n]), u128::from_be_bytes(buf), "length {n}");
        }
    }

    #[test]
    fn long_names_are_not_interned_but_compare_the_same() {
        let long = "x".repeat(MAX_INTERNED_LEN + 1);
        let a = Key::from(long.as_str());
        let b = Key::from(long.clone());
        assert!(!a.is_interned());
        assert_eq!(a, b);
        assert_eq!(a.cmp(&b), Ordering::Equal);
        assert_eq!(a.cmp(&Key::from("y")), Ordering::Less);
        assert_eq!(&*a, long);
    }

    #[test]
    fn names_met_on_other_threads_are_the_same_keys() {
        let here = Key::from("from_another_thread");
        let there = std::thread::spawn(|| Key::from("from_another_thread"))
            .join()
            .unwrap();
        assert!(same_interned(&here, &there));
    }

    #[test]
    fn a_cache_slot_shared_by_two_names_finds_each() {
        // Many names through the 512-slot cache: collisions must fall back, not confuse.
        let keys: Vec<Key> = (0..5000).map(|i| Key::from(format!("f{i}"))).collect();
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(k.as_str(), format!("f{i}"));
            assert_eq!(*k, Key::from(format!("f{i}")));
        }
    }

    proptest::proptest! {
        /// Keys order and compare exactly as their text, whatever the bytes (the maps' binary
        /// searches and the queue's sorted-key check rely on it).
        #[test]
        fn order_and_equality_are_the_texts(a in ".{0,40}", b in ".{0,40}", shared in "[a-z_]{0,20}") {
            let (a, b) = (format!("{shared}{a}"), format!("{shared}{b}"));
            let (ka, kb) = (Key::from(a.as_str()), Key::from(b.as_str()));
            proptest::prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
            proptest::prop_assert_eq!(ka == kb, a == b);
            proptest::prop_assert_eq!(ka.as_str(), a.as_str());
        }
    }
}
