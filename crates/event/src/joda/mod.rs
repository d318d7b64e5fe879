//! Dates written and read with Java's date patterns, as Logstash does.
//!
//! One pattern tokenizer ([`pattern`]) feeds three users: [`JodaParser`] parses text with a Joda
//! pattern for the `date` filter (with [`DateLocale`] names and the [`parse_iso8601`] grammar);
//! [`JodaFormat`] formats `@timestamp` for sprintf's `%{+yyyy.MM.dd}`; [`JavaTimeFormat`]
//! formats it for `%{{yyyy-MM-dd}}` with `java.time.format.DateTimeFormatter`'s letters.
//! [`calendar`] holds the day-number arithmetic they share.

pub mod calendar;
mod format;
mod iso8601;
mod java_time;
mod locale;
mod parse;
mod pattern;

pub use format::JodaFormat;
pub use iso8601::parse_iso8601;
pub use java_time::JavaTimeFormat;
pub use locale::DateLocale;
pub use parse::{JodaParser, LocalDateTime, Parsed, ParsedZone, PatternError};
