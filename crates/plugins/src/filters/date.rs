//! `date`: parses a date out of a field and stores it as the event's `@timestamp` (or
//! `target`), as Logstash's date filter (its Java `DateFilter`) does.
//!
//! - `match => [field, format, ...]`: formats are tried in order; the first that parses wins.
//!   A format is a Joda-Time pattern (`dd/MMM/yyyy:HH:mm:ss Z`) or one of `ISO8601`, `UNIX`,
//!   `UNIX_MS`, `TAI64N`. Patterns are compiled once ([`sluice_event::joda`]).
//! - `timezone`: an IANA zone (`Europe/Paris`), `UTC` or an offset (`+05:00`), used when the
//!   text has no offset of its own; it may be a sprintf template (`%{tz}`) resolved per event.
//!   Without it, the machine's zone (as the JVM's default zone in Logstash).
//! - `locale`: month and day names (`en` default; `fr`, `de`, `es`, `it`, `pt`, `nl`; `fr-FR` and
//!   `fr_FR` also accepted).
//! - Year-less patterns (no `y`/`Y`) take the current year, except that a December date seen in
//!   January is last year's and a January date seen in December is next year's
//!   (logstash-filter-date's `JodaParser.parseAndGuessYear`).
//! - A wall-clock time that does not exist in the zone (the hour skipped by a DST switch)
//!   fails; an ambiguous one (the repeated hour) takes the earlier instant (Joda's rules).
//! - Values: strings for every format; integers and floats for `UNIX` / `UNIX_MS` only
//!   (`UNIX` rejects seconds past 2^31-1). Anything else (arrays, hashes, booleans) fails, as in
//!   the Java filter. A missing or null field is left alone (no tag, no match).
//! - Failure tags the event with `tag_on_failure` (`_dateparsefailure`); success applies the
//!   common options (add_tag...).

use std::cell::Cell;

use jiff::tz::{AmbiguousOffset, TimeZone};
use sluice_config::Value as Ast;
use sluice_event::joda::{self, DateLocale, JodaParser, LocalDateTime, Parsed, ParsedZone};
use sluice_event::{Event, FieldRef, Template, Timestamp, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

thread_local! {
    static MOCK_NOW: Cell<Option<i64>> = const { Cell::new(None) };
}

/// While alive, "now" (for guessing the year of year-less dates, and for the two-digit-year
/// pivot of filters built meanwhile) reads as a fixed instant, in UTC, on this thread. Meant
/// for tests, as Logstash's `JodaParser.setDefaultClock`.
pub struct MockClock {
    previous: Option<i64>,
}

/// Fixes "now" at `millis` since the epoch on this thread until the guard drops.
pub fn mock_now(millis: i64) -> MockClock {
    MockClock {
        previous: MOCK_NOW.with(|c| c.replace(Some(millis))),
    }
}

impl Drop for MockClock {
    fn drop(&mut self) {
        MOCK_NOW.with(|c| c.set(self.previous));
    }
}

#[derive(Clone)]
enum Format {
    /// Joda's ISO parser, then Logstash's space-separated variants.
    Iso8601(Vec<JodaParser>),
    Unix,
    UnixMs,
    Tai64n,
    Joda(JodaParser),
}

#[derive(Clone)]
enum Zone {
    Fixed(TimeZone),
    Dynamic(Template),
}

#[derive(Clone)]
pub struct DateFilter {
    source: FieldRef,
    target: FieldRef,
    target_is_timestamp: bool,
    formats: Vec<Format>,
    zone: Zone,
    /// The machine's zone: where "now" is read for year guessing.
    system_zone: TimeZone,
    tag_on_failure: Vec<String>,
    /// The year when the filter was built: Joda's default year for patterns that name a year
    /// letter but set none.
    build_year: i32,
    /// The last zone name a `%{...}` timezone rendered to, and its zone.
    zone_cache: Option<(String, Option<TimeZone>)>,
    /// `dlq_on_failure`.
    on_failure: crate::dead_letter::OnFailure,
}

/// A zone by Joda's `DateTimeZone.forID` rules: `UTC`, an offset (`+05:00`, `-08`), or an
/// IANA name.
pub fn zone_for_id(id: &str) -> Option<TimeZone> {
    if id == "UTC" {
        return Some(TimeZone::UTC);
    }
    if let Some(rest) = id.strip_prefix(['+', '-']) {
        let negative = id.starts_with('-');
        let digits: String = rest.chars().filter(|c| *c != ':').collect();
        if !digits.bytes().all(|b| b.is_ascii_digit()) || !(digits.len() == 2 || digits.len() == 4)
        {
            return None;
        }
        let h: i32 = digits[..2].parse().ok()?;
        let m: i32 = if digits.len() == 4 {
            digits[2..].parse().ok()?
        } else {
            0
        };
        if h > 23 || m > 59 {
            return None;
        }
        let secs = (h * 3600 + m * 60) * if negative { -1 } else { 1 };
        return jiff::tz::Offset::from_seconds(secs)
            .ok()
            .map(TimeZone::fixed);
    }
    TimeZone::get(id).ok()
}

fn offset_millis(tz: &TimeZone, utc_millis: i64) -> Option<i64> {
    let ts = jiff::Timestamp::from_millisecond(utc_millis).ok()?;
    Some(tz.to_offset(ts).seconds() as i64 * 1000)
}

/// The instant a wall-clock time names in `tz`; `None` in a DST gap.
fn local_to_instant(tz: &TimeZone, l: &LocalDateTime) -> Option<i64> {
    let dt = jiff::civil::DateTime::new(
        i16::try_from(l.year).ok()?,
        l.month as i8,
        l.day as i8,
        l.hour as i8,
        l.minute as i8,
        l.second as i8,
        l.millis as i32 * 1_000_000,
    )
    .ok()?;
    let offset = match tz.to_ambiguous_timestamp(dt).offset() {
        AmbiguousOffset::Unambiguous { offset } => offset,
        AmbiguousOffset::Gap { .. } => return None,
        AmbiguousOffset::Fold { before, .. } => before,
    };
    Some(l.utc_millis() - offset.seconds() as i64 * 1000)
}

/// The wall-clock time of an instant in `tz`.
fn instant_to_local(tz: &TimeZone, millis: i64) -> Option<LocalDateTime> {
    Some(LocalDateTime::from_utc_millis(
        millis + offset_millis(tz, millis)?,
    ))
}

/// The instant of parsed fields: their own offset or zone if they had one, else `tz`.
fn resolve(local: &LocalDateTime, zone: Option<ParsedZone>, tz: &TimeZone) -> Option<i64> {
    match zone {
        Some(ParsedZone::Offset(ms)) => Some(local.utc_millis() - ms as i64),
        Some(ParsedZone::Id(id)) => local_to_instant(&zone_for_id(id)?, local),
        None => local_to_instant(tz, local),
    }
}

/// Logstash's year guess: this year, but last year for a December date seen in January and
/// next year for a January date seen in December.
fn guess_year(month: u32, now: &LocalDateTime) -> i32 {
    match (month, now.month) {
        (12, 1) => now.year - 1,
        (1, 12) => now.year + 1,
        _ => now.year,
    }
}

/// `Long.parseLong`: optional sign, decimal digits, nothing else.
fn java_long(s: &str) -> Option<i64> {
    if s.is_empty() || s == "+" || s == "-" {
        return None;
    }
    s.parse().ok()
}

const MAX_EPOCH_SECONDS: i64 = i32::MAX as i64;

fn unix_seconds_to_millis(seconds: i64) -> Option<i64> {
    if seconds > MAX_EPOCH_SECONDS {
        return None;
    }
    seconds.checked_mul(1000)
}

/// `UNIX` on a string: seconds, with at most 3 fraction digits used.
fn parse_unix_str(s: &str) -> Option<i64> {
    match s.find('.') {
        None => unix_seconds_to_millis(java_long(s)?),
        Some(dot) => {
            let millis = unix_seconds_to_millis(java_long(&s[..dot])?)?;
            let frac = &s[dot + 1..];
            // At most three characters after the dot are read, as Logstash does (on bytes,
            // which only differs for text that would fail anyway).
            let n = frac.len().min(3);
            let sub = java_long(frac.get(..n)?)?;
            let scale = match n {
                1 => 100,
                2 => 10,
                _ => 1,
            };
            millis.checked_add(sub.checked_mul(scale)?)
        }
    }
}

fn parse_unix_float(f: f64) -> Option<i64> {
    if !f.is_finite() || (f as i64) > MAX_EPOCH_SECONDS {
        return None;
    }
    Some((f * 1000.0) as i64)
}

fn parse_tai64n(s: &str) -> Option<i64> {
    let s = s.strip_prefix('@').unwrap_or(s);
    let secs = i64::from_str_radix(s.get(..16)?, 16).ok()? & ((1i64 << 62) - 1);
    let nanos = i32::from_str_radix(s.get(16..24)?, 16).ok()?;
    // TAI is 10 seconds ahead of UTC in Logstash's reckoning (leap seconds ignored).
    (secs - 10)
        .checked_mul(1000)?
        .checked_add((nanos / 1_000_000) as i64)
}

fn now_millis() -> i64 {
    MOCK_NOW
        .with(|c| c.get())
        .unwrap_or_else(|| Timestamp::now().millis())
}

impl DateFilter {
    /// "Now" as a wall-clock time: in UTC when mocked, else in the machine's zone.
    fn now_local(&self) -> LocalDateTime {
        match MOCK_NOW.with(|c| c.get()) {
            Some(ms) => LocalDateTime::from_utc_millis(ms),
            None => {
                let ms = Timestamp::now().millis();
                instant_to_local(&self.system_zone, ms)
                    .unwrap_or_else(|| LocalDateTime::from_utc_millis(ms))
            }
        }
    }

    fn parse_joda(&self, p: &JodaParser, text: &str, tz: &TimeZone) -> Option<i64> {
        let parsed: Parsed = p.parse(text)?;
        if p.has_year() {
            let local = parsed.to_local(self.build_year)?;
            return resolve(&local, parsed.zone, tz);
        }
        let now = self.now_local();
        let local = parsed.to_local(now.year)?;
        if p.has_zone() {
            // Parsed with its own offset, then read and re-dated in the filter's zone.
            let instant = resolve(&local, parsed.zone, tz)?;
            let in_zone = instant_to_local(tz, instant)?;
            let year = guess_year(in_zone.month, &now);
            local_to_instant(tz, &in_zone.with_year(year))
        } else {
            // Parsed as a local date-time (any zone name ignored), then placed in the zone.
            let year = guess_year(local.month, &now);
            local_to_instant(tz, &local.with_year(year))
        }
    }

    fn parse_text(&self, format: &Format, text: &str, tz: Option<&TimeZone>) -> Option<i64> {
        match format {
            Format::Unix => parse_unix_str(text),
            Format::UnixMs => java_long(text),
            Format::Tai64n => parse_tai64n(text),
            Format::Iso8601(extra) => {
                let tz = tz?;
                if let Some(p) = joda::parse_iso8601(text) {
                    if let Some(ms) = p.to_local(2000).and_then(|l| resolve(&l, p.zone, tz)) {
                        return Some(ms);
                    }
                }
                extra.iter().find_map(|f| {
                    let p = f.parse(text)?;
                    resolve(&p.to_local(2000)?, p.zone, tz)
                })
            }
            Format::Joda(p) => self.parse_joda(p, text, tz?),
        }
    }

    fn parse_value(&self, format: &Format, v: &Value, tz: Option<&TimeZone>) -> Option<i64> {
        match (v, format) {
            (Value::String(s), _) => self.parse_text(format, s, tz),
            (Value::Int(i), Format::Unix) => unix_seconds_to_millis(*i),
            (Value::Int(i), Format::UnixMs) => Some(*i),
            (Value::Float(f), Format::Unix) => parse_unix_float(*f),
            (Value::Float(f), Format::UnixMs) if f.is_finite() => Some(*f as i64),
            // A number past what Int and Float hold (a BigDecimal from dissect, a Bignum): its
            // text, read as a UNIX time is read from a string.
            (Value::Decimal(d), Format::Unix | Format::UnixMs) => self.parse_text(format, d, tz),
            (Value::BigInt(_), Format::Unix | Format::UnixMs) => {
                self.parse_text(format, &v.to_display_string(), tz)
            }
            _ => None,
        }
    }

    /// The zone for this event, rendering and caching a `%{...}` timezone.
    fn event_zone(&mut self, e: &Event) -> Option<&TimeZone> {
        match &self.zone {
            Zone::Fixed(_) => {}
            Zone::Dynamic(t) => {
                let name = t.render(e);
                if self.zone_cache.as_ref().map(|(n, _)| n) != Some(&name) {
                    let tz = zone_for_id(&name);
                    self.zone_cache = Some((name, tz));
                }
            }
        }
        match &self.zone {
            Zone::Fixed(tz) => Some(tz),
            Zone::Dynamic(_) => self.zone_cache.as_ref().and_then(|(_, z)| z.as_ref()),
        }
    }
}

/// The `match` option: an array `[field, format...]` (a hash `{field => format}` is also
/// accepted, as Logstash turns it into an array).
fn match_list(opts: &mut Options) -> Result<Vec<String>, ConfigError> {
    fn text(v: &Ast) -> Option<String> {
        match v {
            Ast::String(s) | Ast::Bareword(s) => Some(s.clone()),
            Ast::Number(n) => Some(match n {
                sluice_config::Number::Int(i) => i.to_string(),
                sluice_config::Number::Float(f) => f.to_string(),
            }),
            _ => None,
        }
    }
    let Some((_, v)) = opts.take("match") else {
        return Ok(Vec::new());
    };
    fn push(out: &mut Vec<String>, v: &Ast) -> bool {
        match v {
            Ast::Array(items) => items.iter().all(|i| text(i).map(|s| out.push(s)).is_some()),
            other => text(other).map(|s| out.push(s)).is_some(),
        }
    }
    let mut out = Vec::new();
    let ok = match &v {
        Ast::Hash(entries) => entries.iter().all(|e| {
            out.push(e.key.clone());
            push(&mut out, &e.value)
        }),
        other => push(&mut out, other),
    };
    if !ok {
        return Err(opts.error(
            "match",
            "expected an array of strings: [field, format, ...]",
        ));
    }
    Ok(out)
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let matches = match_list(opts)?;
    if matches.len() < 2 {
        return Err(opts.error(
            "match",
            format!(
                "the match setting should contain first a field name and at least one date format, current value is {matches:?}"
            ),
        ));
    }
    let source = FieldRef::parse(&matches[0]).map_err(|e| opts.error("match", e.to_string()))?;
    let target_name = opts.string_or("target", "@timestamp")?;
    let target = FieldRef::parse(&target_name).map_err(|e| opts.error("target", e.to_string()))?;
    let target_is_timestamp = target.segments() == ["@timestamp"];
    let tag_on_failure = opts
        .string_list("tag_on_failure")?
        .unwrap_or_else(|| vec!["_dateparsefailure".to_owned()]);

    let locale = match opts.string("locale")? {
        None => DateLocale::english(),
        Some(tag) => match DateLocale::for_tag(&tag) {
            Some(l) => l,
            None => {
                tracing::warn!(
                    "date filter: no month/day names for locale {tag:?}; using English names"
                );
                DateLocale::english()
            }
        },
    };

    let system_zone = TimeZone::try_system().unwrap_or(TimeZone::UTC);
    let zone = match opts.string("timezone")? {
        None => Zone::Fixed(system_zone.clone()),
        Some(name) if name.contains("%{") => Zone::Dynamic(Template::parse(&name)),
        Some(name) => Zone::Fixed(zone_for_id(&name).ok_or_else(|| {
            opts.error(
                "timezone",
                format!("unknown time zone {name:?} (expected an IANA name such as \"Europe/Paris\", \"UTC\" or an offset such as \"+05:00\")"),
            )
        })?),
    };

    let now = LocalDateTime::from_utc_millis(now_millis());
    let pivot = now.year - 30;
    let english = DateLocale::english();
    let mut formats = Vec::with_capacity(matches.len() - 1);
    for f in &matches[1..] {
        let compile = |pattern: &str, locale| {
            JodaParser::compile(pattern, locale, pivot).map_err(|e| opts.error("match", e.0))
        };
        formats.push(match f.as_str() {
            "ISO8601" => Format::Iso8601(vec![
                compile("yyyy-MM-dd HH:mm:ss.SSSZ", english)?,
                compile("yyyy-MM-dd HH:mm:ss.SSS", english)?,
                compile("yyyy-MM-dd HH:mm:ss,SSSZ", english)?,
                compile("yyyy-MM-dd HH:mm:ss,SSS", english)?,
            ]),
            "UNIX" => Format::Unix,
            "UNIX_MS" => Format::UnixMs,
            "TAI64N" => Format::Tai64n,
            pattern => Format::Joda(compile(pattern, locale)?),
        });
    }

    let on_failure = crate::dead_letter::OnFailure::from_options(opts)?;
    Ok(Box::new(DateFilter {
        source,
        target,
        target_is_timestamp,
        formats,
        zone,
        system_zone,
        tag_on_failure,
        build_year: now.year,
        zone_cache: None,
        on_failure,
    }))
}

impl Filter for DateFilter {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        if event.is_cancelled() {
            return false;
        }
        match event.get(&self.source) {
            None | Some(Value::Null) => return false,
            Some(_) => {}
        }
        let needs_zone = matches!(self.zone, Zone::Dynamic(_))
            && event
                .get(&self.source)
                .is_some_and(|v| matches!(v, Value::String(_)));
        if needs_zone {
            self.event_zone(event);
        }
        let tz = match &self.zone {
            Zone::Fixed(tz) => Some(tz),
            Zone::Dynamic(_) => self.zone_cache.as_ref().and_then(|(_, z)| z.as_ref()),
        };
        let Some(value) = event.get(&self.source) else {
            return false;
        };
        let result = self
            .formats
            .iter()
            .find_map(|f| self.parse_value(f, value, tz));
        match result {
            Some(ms) => {
                let ts = Value::Timestamp(Timestamp::from_millis(ms));
                if self.target_is_timestamp {
                    event.set_field("@timestamp", ts);
                } else {
                    event.set(&self.target, ts);
                }
                true
            }
            None => {
                for t in &self.tag_on_failure {
                    event.add_tag(t);
                }
                let source = &self.source;
                self.on_failure.take(event, |e| {
                    let value = e.get(source).map(|v| v.to_display_string());
                    format!(
                        "date: no format matched {source} ({:?})",
                        value.unwrap_or_default()
                    )
                });
                false
            }
        }
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }

    fn take_dead_letters(&mut self, out: &mut Vec<(Event, String)>) {
        self.on_failure.drain_into(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_strings_follow_logstash() {
        assert_eq!(parse_unix_str("1350414944.123456"), Some(1_350_414_944_123));
        assert_eq!(parse_unix_str("1.5"), Some(1500));
        assert_eq!(parse_unix_str("1.05"), Some(1050));
        assert_eq!(parse_unix_str("12."), None);
        assert_eq!(parse_unix_str(".5"), None);
        assert_eq!(parse_unix_str("1000000000123"), None);
        assert_eq!(parse_unix_str("%{x}"), None);
        assert_eq!(parse_unix_float(1478207457.456), Some(1_478_207_457_456));
    }

    #[test]
    fn tai64n() {
        assert_eq!(
            parse_tai64n("@4000000050d506482dbdf024"),
            Some(1_356_138_046_767)
        );
        assert_eq!(parse_tai64n("4000"), None);
        assert_eq!(parse_tai64n("7fffffffffffffff00000000"), None);
        assert_eq!(parse_unix_str("-9223372036854775808"), None);
        // Java reads "-99" as the fraction, as Logstash does.
        assert_eq!(parse_unix_str("1.-99"), Some(901));
    }

    #[test]
    fn zones_by_id() {
        assert!(zone_for_id("Europe/Paris").is_some());
        assert!(zone_for_id("CET").is_some());
        assert!(zone_for_id("+05:30").is_some());
        assert!(zone_for_id("-08").is_some());
        assert!(zone_for_id("Mars/Olympus").is_none());
        assert!(zone_for_id("%{tz}").is_none());
    }

    #[test]
    fn dst_gap_fails_and_fold_takes_the_earlier_instant() {
        let cet = zone_for_id("CET").unwrap();
        let l = |h, m| LocalDateTime {
            year: 2016,
            month: 3,
            day: 27,
            hour: h,
            minute: m,
            second: 0,
            millis: 0,
        };
        assert_eq!(local_to_instant(&cet, &l(2, 30)), None);
        assert!(local_to_instant(&cet, &l(3, 0)).is_some());
        let fold = LocalDateTime {
            month: 10,
            day: 30,
            ..l(2, 30)
        };
        // 02:30 happens at 00:30Z (CEST) and 01:30Z (CET); Joda takes the first.
        let ms = local_to_instant(&cet, &fold).unwrap();
        assert_eq!(
            Timestamp::from_millis(ms).to_iso8601(),
            "2016-10-30T00:30:00.000Z"
        );
    }
}
