//! The event model of sluice: what flows through a pipeline.
//!
//! An [`Event`] is a JSON-like tree of [`Value`]s with Logstash's reserved fields
//! (`@timestamp`, `@version`, `tags`) and a separate `@metadata` map that never leaves the
//! process. Plugins address fields with Logstash field references ([`FieldRef`], `[a][b]`),
//! build strings with sprintf [`Template`]s (`%{[a][b]}`, `%{+yyyy.MM.dd}`), and codecs turn
//! events into JSON and back ([`json`]). Nothing here knows about configs, queues or I/O.

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
