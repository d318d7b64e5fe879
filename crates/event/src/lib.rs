//! The event model of sluice: what flows through a pipeline.
//!
//! An [`Event`] is a JSON-like tree of [`Value`]s with Logstash's reserved fields
//! (`@timestamp`, `@version`, `tags`) and a separate `@metadata` map that never leaves the
//! process. Plugins address fields with Logstash field references ([`FieldRef`], `[a][b]`),
//! build strings with sprintf [`Template`]s (`%{[a][b]}`, `%{+yyyy.MM.dd}`), and codecs turn
//! events into JSON and back ([`json`]) and the persisted queue into its records
//! ([`binary`]). Nothing here knows about configs, queues or I/O.
//!
//! # Design: what a field lookup costs
//!
//! A worker spends much of its time finding, adding and replacing fields (grok's captures,
//! geoip's and useragent's fields, every `mutate`), so the model is built around that:
//!
//! - **Names are symbols** ([`Key`], [`mod@key`]). A field name is interned once per process:
//!   a key is a pointer to the one copy of its name (which also holds the name's first 16
//!   bytes as an integer) and, beside it, the name's first 8 bytes. Equal names are equal
//!   pointers; two different names order by one integer compare of the key itself unless
//!   their first 8 bytes agree, then by the prefixes, then by their text. Field references, grok captures and
//!   plugin options resolve their names when the config is compiled; decoders resolve each
//!   name through a per-thread cache (the queue's decoder first reuses the keys of the record
//!   before). The table is bounded: long names, and new names once it is full, get keys of
//!   their own, which compare by text.
//! - **Maps are sorted vectors** ([`Map`], litemap): one allocation per object, a binary
//!   search by key, entries of 48 bytes (a 16-byte key, a 32-byte value). Keys order as
//!   their text does, so iteration is in name order and output that depends on it (JSON,
//!   rubydebug, the queue's records, whose decoder checks that keys ascend) is deterministic
//!   and unchanged by interning. Maps built from sorted input (the queue, our JSON) append;
//!   bulk inserts sort once.
//! - **Values are written where they stay.** Moving a freshly built value (returning it,
//!   then inserting it) reloads bytes just stored in wider loads than they were written
//!   with, which the processor cannot forward from its store buffer; on these paths those
//!   stalls cost more than the work. So the JSON and queue decoders push each entry empty
//!   and build its value in its slot, and [`Event::slot`] hands a filter the field's place
//!   (made null if absent) in one walk, for it to look at and fill.
//! - **Strings** ([`Str`]) keep up to 24 bytes inline (status codes, verbs, addresses), so
//!   the common short value costs no allocation. A longer text that every event of an input
//!   gets (the beats codec's tag) is a constant ([`value::constant_str`]): kept once in the
//!   names' table, pointed at by each copy.
//! - **Maps are made the size they end up.** The outermost object of a JSON text, which
//!   usually becomes an event, has room for the fields an event is given (`@timestamp`,
//!   `@version`, a tag, `event`); a new `tags` list has room for one. Fewer and smaller
//!   allocations showed in the beats input's CPU per event where no single one did.
//! - **Decoding builds each event once, where it stays.** The queue's reader decodes a
//!   record straight onto the end of its batch ([`binary::Decoder::decode_into`]); a
//!   decoder keeps the last record's keys with their lengths and prefixes, so the next
//!   record's names (nearly always the same) are matched by integer compares and copied.
//! - **Borrowed values: measured, not adopted.** Values that point into the queue's page
//!   or the input's buffer would save a decode its allocations and copies, but not its
//!   checks (lengths, UTF-8, key order, depth), which are most of what is left: a walk
//!   that checks a record and builds nothing takes a third to a half of a full decode
//!   (`bench/README.md`), and a reader that keeps up decodes nothing at all (it takes the
//!   events the queue still holds). Sharing bytes would have meant a reference-counted
//!   string variant in every plugin's hands, for the lagging reader alone.
//! - **The queue's format** ([`binary`], version 1) writes names as text: interning is a
//!   property of the process, not of the file, so queues written before keys were interned
//!   open and drain unchanged (their keys are interned as they are read). No new record
//!   version was needed: the format already wrote what the model holds.
//!
//! `bench/event_model.sh` measures each step against a baseline build; `bench/README.md`
//! keeps its figures, the steps that did not pay included.

pub mod binary;
pub mod event;
pub mod fieldref;
pub mod joda;
pub mod json;
pub mod key;
pub mod template;
pub mod timestamp;
pub mod value;

pub use event::{
    Event, METADATA, TAGS, TAGS_FAILURE_FIELD, TAGS_PARSE_FAILURE, TIMESTAMP, VERSION,
};
pub use fieldref::{FieldRef, FieldRefError};
pub use template::Template;
pub use timestamp::Timestamp;
pub use value::{BigInt, Key, Map, Str, Value};
