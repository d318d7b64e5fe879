//! The `schedule` option of Logstash's polling inputs, read the way rufus-scheduler reads it.
//!
//! The elasticsearch and jdbc inputs take a cron string (`schedule => "*/5 * * * *"`), and
//! http_poller takes a hash with exactly one of `cron`, `every`, `in` or `at`
//! (`schedule => { every => "1h" }`). Logstash hands these values to rufus-scheduler, which
//! parses cron strings, durations and points in time with the fugit gem. This module parses
//! the same strings: [`Cron`] for cron lines, [`parse_duration`] for `every` and `in`,
//! [`parse_at`] for `at`, and [`Schedule`] for the whole option.
//!
//! A plugin parses its option once when it is built (a bad value is a config error that names
//! the field at fault), then loops: ask [`Schedule::next_after`] for the next run time, sleep
//! until then, run, and ask again with the time it was due. `None` means the schedule is done
//! (an `in` or `at` that has run) or can never fire again.

use std::time::Duration;

use jiff::civil::DateTime;
use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use jiff::Timestamp;

/// How far [`Cron::next_after`] looks before it gives up. Eight years reach the next
/// February 29 from anywhere, across 2100 (which is not a leap year) too.
const SEARCH_YEARS: i64 = 8;

const MONTH_NAMES: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAY_NAMES: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
/// The most days each month can have (February counts its leap day), as fugit checks them.
const MAX_DAYS: [i32; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

const ALL_SECONDS: u64 = (1 << 60) - 1;
const ALL_HOURS: u64 = (1 << 24) - 1;
const ALL_DAYS: u64 = ((1 << 32) - 1) & !1; // bits 1..=31
const ALL_WEEKDAYS: u64 = (1 << 7) - 1;

/// fugit's `@` shortcuts. `@reboot` is refused: a pipeline has no boot to run at.
const SPECIALS: [(&str, &str); 8] = [
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@noon", "0 12 * * *"),
    ("@hourly", "0 * * * *"),
];

/// A parsed cron line, as fugit (and so rufus-scheduler and Logstash) reads it.
///
/// Five fields (`minute hour day-of-month month day-of-week`) or six with seconds first,
/// then optionally a time zone: an IANA name (`Europe/Berlin`, `UTC`) or an offset
/// (`+09:00`). Without a zone the cron runs in the system's local zone. Each field takes
/// `*`, numbers, ranges `a-b` (a range may wrap, `22-2` is 22, 23, 0, 1, 2), steps `*/n`,
/// `a-b/n` and `a/n` (from `a` to the end), and comma lists. Months take `jan`..`dec` and
/// days of the week `sun`..`sat` (any case); the day of the week is 0-7 with 0 and 7 both
/// Sunday, and `mon#2`, `fri#-1` or `fri#L` pick the 2nd Monday or the last Friday of the
/// month. The day of the month takes `L` or `last` (the last day), `-1`..`-31` (counted from
/// the end, -1 is the last day), and `25-L`. Hours take 24 for 0. The shortcuts `@yearly`,
/// `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`, `@noon` and `@hourly` stand
/// for their five fields.
///
/// As in `man 5 crontab` and fugit, when both the day of the month and the day of the week
/// are restricted, a day matches if either matches (`0 0 1 * mon` runs on the 1st and on
/// every Monday); fugit's `&` after either field (`0 0 1-7 * mon&`) asks for both instead.
/// A field that covers its whole range (`1-31`, `0-6`) counts as unrestricted.
#[derive(Clone, Debug)]
pub struct Cron {
    source: String,
    seconds: u64,
    minutes: u64,
    hours: u64,
    /// Bits 1..=31: days counted from the start of the month.
    days: u64,
    /// Bits 1..=31: days counted from the end (bit 1 is the last day).
    days_from_end: u64,
    /// Bits 1..=12.
    months: u64,
    /// Bits 0..=6, 0 is Sunday.
    weekdays: u64,
    /// `(weekday, n)`: the nth such weekday of the month, negative from the end.
    nth_weekdays: Vec<(i32, i32)>,
    /// Both day fields are restricted and joined by OR (no `&`).
    days_or: bool,
    zone: Option<TimeZone>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Field {
    Second,
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::Second => "second",
            Field::Minute => "minute",
            Field::Hour => "hour",
            Field::DayOfMonth => "day-of-month",
            Field::Month => "month",
            Field::DayOfWeek => "day-of-week",
        }
    }

    /// What one value of the field looks like, for error messages.
    fn value_desc(self) -> &'static str {
        match self {
            Field::Second => "a second (0-59)",
            Field::Minute => "a minute (0-59)",
            Field::Hour => "an hour (0-23, or 24 for 0)",
            Field::DayOfMonth => "a day of the month (1-31, L or last, or -1 to -31 from the end)",
            Field::Month => "a month (1-12 or jan-dec)",
            Field::DayOfWeek => "a day of the week (0-7 where 0 and 7 are Sunday, or sun-sat)",
        }
    }

    /// What the whole field may hold, for error messages.
    fn expected(self) -> &'static str {
        match self {
            Field::Second | Field::Minute => {
                "*, 0-59, a range like 10-20, a step like */15 or 10-40/5, or a comma list of these"
            }
            Field::Hour => {
                "*, 0-23, a range like 9-17 or 22-2, a step like */6, or a comma list of these"
            }
            Field::DayOfMonth => {
                "*, 1-31, L or last, -1 to -31 (from the end), a range like 1-15 or 25-L, a step \
                 like */2, or a comma list of these, optionally followed by &"
            }
            Field::Month => {
                "*, 1-12 or jan-dec, a range like jan-mar, a step like */3, or a comma list of \
                 these"
            }
            Field::DayOfWeek => {
                "*, 0-7 (0 and 7 are Sunday) or sun-sat, a range like mon-fri, a step like */2, \
                 an nth weekday like mon#2, fri#-1 or fri#L, or a comma list of these, optionally \
                 followed by &"
            }
        }
    }

    /// The values a `*` covers.
    fn domain(self) -> (i32, i32) {
        match self {
            Field::Second | Field::Minute => (0, 59),
            Field::Hour => (0, 23),
            Field::DayOfMonth => (1, 31),
            Field::Month => (1, 12),
            Field::DayOfWeek => (0, 6),
        }
    }
}

/// One field's values after parsing.
#[derive(Default)]
struct FieldValues {
    values: Vec<i32>,
    nth: Vec<(i32, i32)>,
    and: bool,
}

impl Cron {
    /// Parses a cron line; the error says which field is wrong and what it takes.
    pub fn parse(text: &str) -> Result<Cron, String> {
        let trimmed = text.trim();
        let tokens: Vec<&str> = trimmed.split_whitespace().collect();
        let Some(first) = tokens.first() else {
            return Err(format!(
                "invalid cron {text:?}: it is empty; expected 5 fields (minute hour \
                 day-of-month month day-of-week), or 6 with seconds first, optionally followed \
                 by a time zone"
            ));
        };

        let (fields, zone_token): (Vec<&str>, Option<&str>) = if first.starts_with('@') {
            let lower = first.to_ascii_lowercase();
            if lower == "@reboot" {
                return Err(format!(
                    "invalid cron {text:?}: @reboot is not supported (a pipeline has no boot to \
                     run at)"
                ));
            }
            let Some((_, expansion)) = SPECIALS.iter().find(|(name, _)| *name == lower) else {
                return Err(format!(
                    "invalid cron {text:?}: unknown shortcut {first:?}; expected one of @yearly, \
                     @annually, @monthly, @weekly, @daily, @midnight, @noon or @hourly"
                ));
            };
            if tokens.len() > 2 {
                return Err(format!(
                    "invalid cron {text:?}: {first} may only be followed by a time zone, not \
                     {:?}",
                    tokens[1..].join(" ")
                ));
            }
            (
                expansion.split_whitespace().collect(),
                tokens.get(1).copied(),
            )
        } else {
            match tokens.len() {
                5 => (tokens.clone(), None),
                7 => (tokens[..6].to_vec(), Some(tokens[6])),
                6 => {
                    // Six tokens are either six fields (seconds first) or five and a zone.
                    let last = tokens[5];
                    if parse_field(Field::DayOfWeek, last).is_ok() {
                        (tokens.clone(), None)
                    } else if parse_zone(last).is_ok() {
                        (tokens[..5].to_vec(), Some(last))
                    } else {
                        return Err(format!(
                            "invalid cron {text:?}: {last:?} is neither a day-of-week field (of a \
                             6-field cron with seconds first) nor a time zone (an IANA name like \
                             Europe/Berlin or UTC, or an offset like +09:00)"
                        ));
                    }
                }
                n => {
                    return Err(format!(
                        "invalid cron {text:?}: it has {n} fields; expected 5 (minute hour \
                         day-of-month month day-of-week), or 6 with seconds first, optionally \
                         followed by a time zone"
                    ))
                }
            }
        };

        let zone = match zone_token {
            Some(token) => {
                Some(parse_zone(token).map_err(|e| format!("invalid cron {text:?}: {e}"))?)
            }
            None => None,
        };

        let kinds: &[Field] = if fields.len() == 6 {
            &[
                Field::Second,
                Field::Minute,
                Field::Hour,
                Field::DayOfMonth,
                Field::Month,
                Field::DayOfWeek,
            ]
        } else {
            &[
                Field::Minute,
                Field::Hour,
                Field::DayOfMonth,
                Field::Month,
                Field::DayOfWeek,
            ]
        };
        let count = fields.len();
        let mut parsed = Vec::with_capacity(6);
        for (position, (kind, token)) in kinds.iter().zip(&fields).enumerate() {
            let values = parse_field(*kind, token).map_err(|problem| {
                format!(
                    "invalid cron {text:?}: the {} field (field {} of {count}) is {token:?}: \
                     {problem}; it takes {}",
                    kind.name(),
                    position + 1,
                    kind.expected()
                )
            })?;
            parsed.push(values);
        }
        if count == 5 {
            parsed.insert(
                0,
                FieldValues {
                    values: vec![0],
                    ..FieldValues::default()
                },
            );
        }
        let [seconds, minutes, hours, days, months, weekdays]: [FieldValues; 6] = parsed
            .try_into()
            .map_err(|_| format!("invalid cron {text:?}: wrong number of fields"))?;

        let mask = |values: &[i32]| values.iter().fold(0u64, |m, v| m | (1u64 << v));
        let day_mask = mask(
            &days
                .values
                .iter()
                .copied()
                .filter(|d| *d > 0)
                .collect::<Vec<_>>(),
        );
        let from_end_mask = mask(
            &days
                .values
                .iter()
                .filter(|d| **d < 0)
                .map(|d| -d)
                .collect::<Vec<_>>(),
        );
        let mut nth_weekdays = weekdays.nth;
        nth_weekdays.sort_unstable();
        nth_weekdays.dedup();

        let mut cron = Cron {
            source: trimmed.to_string(),
            seconds: mask(&seconds.values),
            minutes: mask(&minutes.values),
            hours: mask(&hours.values),
            days: day_mask,
            days_from_end: from_end_mask,
            months: mask(&months.values),
            weekdays: mask(&weekdays.values),
            nth_weekdays,
            days_or: false,
            zone,
        };
        let days_restricted = cron.days != ALL_DAYS && cron.days_from_end != ALL_DAYS;
        let weekdays_restricted = cron.weekdays != ALL_WEEKDAYS;
        cron.days_or = days_restricted && weekdays_restricted && !(days.and || weekdays.and);
        if !days_restricted {
            cron.days = ALL_DAYS;
        }

        // fugit refuses a day of the month that no chosen month has (`0 0 30 2 *`). When the
        // day of the week can match on its own (the OR rule), the line can still run.
        if days_restricted && !cron.days_or {
            let possible = (1..=12).filter(|m| cron.months & (1 << m) != 0).any(|m| {
                let max = MAX_DAYS[m as usize - 1];
                (1..=max).any(|d| cron.days & (1 << d) != 0 || cron.days_from_end & (1 << d) != 0)
            });
            if !possible {
                return Err(format!(
                    "invalid cron {text:?}: the day-of-month field {:?} never falls in the month \
                     field {:?}, so it would never run",
                    fields[count - 3],
                    fields[count - 2]
                ));
            }
        }
        Ok(cron)
    }

    /// The cron line as it was given (trimmed).
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The time zone given in the line, if any (without one the system's local zone is used).
    pub fn zone(&self) -> Option<&TimeZone> {
        self.zone.as_ref()
    }

    /// The first firing time strictly after `t`, or `None` if there is none in the next eight
    /// years.
    ///
    /// Times are matched on the wall clock of the cron's zone (or the system's local zone).
    /// Across DST changes: a wall-clock time that does not exist (the hour skipped in spring)
    /// is skipped, not moved. A wall-clock time that happens twice (the hour repeated in
    /// autumn) fires once, at its first occurrence, when the cron names its hours
    /// (`30 1 * * *`); a cron that runs every hour (`*/5 * * * *`, `0 * * * *`) follows real
    /// time through the repeated hour and fires in both passes, rather than pausing an hour.
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let system;
        let tz = match &self.zone {
            Some(zone) => zone,
            None => {
                system = TimeZone::system();
                &system
            }
        };
        let floor = t.as_second() - i64::from(t.subsec_nanosecond() < 0);
        let start = Timestamp::from_second(floor.checked_add(1)?).ok()?;
        let limit = floor
            .checked_add(SEARCH_YEARS * 366 * 86_400)
            .and_then(|s| Timestamp::from_second(s).ok())
            .unwrap_or(Timestamp::MAX);

        // Walk the stretches of constant UTC offset; inside one, wall-clock time runs evenly,
        // so the search is a plain calendar search. Wall-clock times in a spring gap belong to
        // no stretch; those in an autumn fold belong to two.
        let mut stretch_start = start;
        while stretch_start <= limit {
            let offset = tz.to_offset(stretch_start);
            let stretch_end = tz.following(stretch_start).next().map(|tr| tr.timestamp());
            let last = match stretch_end {
                Some(end) if end <= limit => Timestamp::from_second(end.as_second() - 1).ok()?,
                _ => limit,
            };
            let until = Civil::from_datetime(offset.to_datetime(last));
            let mut cursor = Civil::from_datetime(offset.to_datetime(stretch_start));
            while let Some(found) = self.next_civil(cursor, until) {
                let dt = found.to_datetime()?;
                if self.hours != ALL_HOURS && repeats_earlier_time(tz, dt, offset) {
                    cursor = found.next_second();
                    continue;
                }
                return offset.to_timestamp(dt).ok();
            }
            stretch_start = stretch_end?;
        }
        None
    }

    /// The first wall-clock time at or after `from`, and not after `until`, that matches.
    /// Skips by field: a wrong month jumps to the next chosen month, a wrong day to the next
    /// day, a wrong hour to the next chosen hour, and so on.
    fn next_civil(&self, from: Civil, until: Civil) -> Option<Civil> {
        let mut c = from;
        loop {
            if c > until {
                return None;
            }
            if self.months & (1 << c.month) == 0 {
                c = match next_bit(self.months, c.month + 1) {
                    Some(month) => Civil::month_start(c.year, month),
                    None => Civil::month_start(c.year + 1, self.months.trailing_zeros() as i32),
                };
                continue;
            }
            if !self.day_matches(c.year, c.month, c.day) {
                c = c.next_day();
                continue;
            }
            match next_bit(self.hours, c.hour) {
                None => {
                    c = c.next_day();
                    continue;
                }
                Some(hour) if hour != c.hour => {
                    c.hour = hour;
                    c.minute = 0;
                    c.second = 0;
                }
                Some(_) => {}
            }
            match next_bit(self.minutes, c.minute) {
                None => {
                    c = c.next_hour();
                    continue;
                }
                Some(minute) if minute != c.minute => {
                    c.minute = minute;
                    c.second = 0;
                }
                Some(_) => {}
            }
            match next_bit(self.seconds & ALL_SECONDS, c.second) {
                None => {
                    c = c.next_minute();
                    continue;
                }
                Some(second) => c.second = second,
            }
            return (c <= until).then_some(c);
        }
    }

    fn day_matches(&self, year: i32, month: i32, day: i32) -> bool {
        let last = days_in_month(year, month);
        let by_month_day =
            self.days & (1 << day) != 0 || self.days_from_end & (1 << (last - day + 1)) != 0;
        let weekday = weekday(year, month, day);
        let by_weekday = self.weekdays & (1 << weekday) != 0
            || self.nth_weekdays.iter().any(|&(w, n)| {
                w == weekday
                    && if n > 0 {
                        (day - 1) / 7 + 1 == n
                    } else {
                        -((last - day) / 7 + 1) == n
                    }
            });
        if self.days_or {
            by_month_day || by_weekday
        } else {
            by_month_day && by_weekday
        }
    }
}

/// Whether `dt`, read with `offset`, is the second pass of a wall-clock time that an autumn
/// fold repeats.
fn repeats_earlier_time(tz: &TimeZone, dt: DateTime, offset: Offset) -> bool {
    matches!(
        tz.to_ambiguous_timestamp(dt).offset(),
        AmbiguousOffset::Fold { before, after } if after == offset && before != after
    )
}

/// The lowest set bit of `mask` at or above `from`.
fn next_bit(mask: u64, from: i32) -> Option<i32> {
    if !(0..64).contains(&from) {
        return None;
    }
    let rest = mask >> from;
    (rest != 0).then(|| from + rest.trailing_zeros() as i32)
}

fn is_leap(year: i32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i32, month: i32) -> i32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Day of the week, 0 for Sunday (Sakamoto's method, proleptic Gregorian).
fn weekday(year: i32, month: i32, day: i32) -> i32 {
    const T: [i32; 12] = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4];
    let y = if month < 3 { year - 1 } else { year };
    (y + y.div_euclid(4) - y.div_euclid(100) + y.div_euclid(400) + T[month as usize - 1] + day)
        .rem_euclid(7)
}

/// A wall-clock time, compared field by field.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Civil {
    year: i32,
    month: i32,
    day: i32,
    hour: i32,
    minute: i32,
    second: i32,
}

impl Civil {
    fn from_datetime(dt: DateTime) -> Civil {
        Civil {
            year: i32::from(dt.year()),
            month: i32::from(dt.month()),
            day: i32::from(dt.day()),
            hour: i32::from(dt.hour()),
            minute: i32::from(dt.minute()),
            second: i32::from(dt.second()),
        }
    }

    fn to_datetime(self) -> Option<DateTime> {
        DateTime::new(
            i16::try_from(self.year).ok()?,
            self.month as i8,
            self.day as i8,
            self.hour as i8,
            self.minute as i8,
            self.second as i8,
            0,
        )
        .ok()
    }

    fn month_start(year: i32, month: i32) -> Civil {
        Civil {
            year,
            month,
            day: 1,
            hour: 0,
            minute: 0,
            second: 0,
        }
    }

    fn next_day(self) -> Civil {
        if self.day >= days_in_month(self.year, self.month) {
            if self.month == 12 {
                Civil::month_start(self.year + 1, 1)
            } else {
                Civil::month_start(self.year, self.month + 1)
            }
        } else {
            Civil {
                day: self.day + 1,
                hour: 0,
                minute: 0,
                second: 0,
                ..self
            }
        }
    }

    fn next_hour(self) -> Civil {
        if self.hour == 23 {
            self.next_day()
        } else {
            Civil {
                hour: self.hour + 1,
                minute: 0,
                second: 0,
                ..self
            }
        }
    }

    fn next_minute(self) -> Civil {
        if self.minute == 59 {
            self.next_hour()
        } else {
            Civil {
                minute: self.minute + 1,
                second: 0,
                ..self
            }
        }
    }

    fn next_second(self) -> Civil {
        if self.second == 59 {
            self.next_minute()
        } else {
            Civil {
                second: self.second + 1,
                ..self
            }
        }
    }
}

/// Parses one cron field; the error describes the problem, the caller adds which field.
fn parse_field(field: Field, text: &str) -> Result<FieldValues, String> {
    let mut out = FieldValues::default();
    let mut body = text;
    if matches!(field, Field::DayOfMonth | Field::DayOfWeek) {
        if let Some(rest) = body.strip_suffix('&') {
            body = rest;
            out.and = true;
        }
    }
    let mut items = 0;
    for item in body.split(',').filter(|item| !item.is_empty()) {
        items += 1;
        parse_item(field, item, &mut out)?;
    }
    if items == 0 {
        return Err("it holds no value".to_string());
    }
    Ok(out)
}

fn parse_item(field: Field, item: &str, out: &mut FieldValues) -> Result<(), String> {
    if item.contains('%') {
        return Err(format!(
            "{item:?} uses fugit's % (every nth week) extension, which is not supported"
        ));
    }
    if field == Field::DayOfWeek {
        if let Some((day, nth)) = item.split_once('#') {
            let day = parse_bound(field, day)? % 7;
            let n = match nth.to_ascii_lowercase().as_str() {
                "l" | "last" => -1,
                other => other
                    .parse::<i32>()
                    .ok()
                    .filter(|n| (1..=5).contains(n) || (-5..=-1).contains(n))
                    .ok_or_else(|| {
                        format!(
                            "in {item:?}, #{nth} is not an nth weekday (#1 to #5, #-1 to #-5, or \
                             #L for the last)"
                        )
                    })?,
            };
            out.nth.push((day, n));
            return Ok(());
        }
    }
    let (base, step) = match item.split_once('/') {
        Some((base, step)) => {
            let n = step
                .parse::<usize>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| {
                    format!("in {item:?}, the step {step:?} is not a whole number of 1 or more")
                })?;
            (base, Some(n))
        }
        None => (item, None),
    };
    let (lo, hi) = field.domain();
    let sequence: Vec<i32> = if base == "*" || (base.is_empty() && step.is_some()) {
        (lo..=hi).collect()
    } else if let Some((a, b)) = split_range(base) {
        let a = parse_bound(field, a)?;
        let b = parse_bound(field, b)?;
        range_values(field, a, b).map_err(|e| format!("in {item:?}, {e}"))?
    } else {
        let a = parse_bound(field, base)?;
        match (field, step) {
            // `a/n` runs from a to the end of the field.
            (Field::DayOfMonth, Some(_)) if a < 0 => (a..=-1).collect(),
            (_, Some(_)) => (normalize(field, a)..=hi).collect(),
            (_, None) => vec![normalize(field, a)],
        }
    };
    out.values
        .extend(sequence.into_iter().step_by(step.unwrap_or(1)));
    Ok(())
}

/// Splits `a-b`, leaving a leading minus to the first bound (`-7-L`, `-3--1`).
fn split_range(base: &str) -> Option<(&str, &str)> {
    let at = base.get(1..)?.find('-')? + 1;
    Some((&base[..at], &base[at + 1..]))
}

/// Hours take 24 for 0, days of the week 7 for 0.
fn normalize(field: Field, value: i32) -> i32 {
    match (field, value) {
        (Field::Hour, 24) | (Field::DayOfWeek, 7) => 0,
        _ => value,
    }
}

/// The values from `a` to `b`, wrapping past the end of the field when `a > b`.
fn range_values(field: Field, a: i32, b: i32) -> Result<Vec<i32>, String> {
    let (lo, hi) = field.domain();
    let wrap = |a: i32, b: i32, lo: i32, hi: i32| -> Vec<i32> {
        if a <= b {
            (a..=b).collect()
        } else {
            (a..=hi).chain(lo..=b).collect()
        }
    };
    Ok(match field {
        Field::DayOfMonth => match (a > 0, b > 0) {
            (true, true) => wrap(a, b, 1, 31),
            (false, false) => wrap(a, b, -31, -1),
            (true, false) if b == -1 => (a..=31).collect(),
            _ => {
                return Err(
                    "a range of days counts both ends from the start (1-15) or both from the \
                     end (-7--1); the one mix is N-L"
                        .to_string(),
                )
            }
        },
        // 0-7 and 0-24 cover the whole field; otherwise 7 and 24 are 0.
        Field::DayOfWeek if a == 0 && b == 7 => (0..=6).collect(),
        Field::Hour if a == 0 && b == 24 => (0..=23).collect(),
        _ => wrap(normalize(field, a), normalize(field, b), lo, hi),
    })
}

/// One number or name of a field.
fn parse_bound(field: Field, text: &str) -> Result<i32, String> {
    if text.is_empty() {
        return Err(format!("{} is missing", field.value_desc()));
    }
    let lower = text.to_ascii_lowercase();
    match field {
        Field::Month => {
            if let Some(i) = MONTH_NAMES.iter().position(|m| *m == lower) {
                return Ok(i as i32 + 1);
            }
        }
        Field::DayOfWeek => {
            if let Some(i) = DAY_NAMES.iter().position(|d| *d == lower) {
                return Ok(i as i32);
            }
        }
        Field::DayOfMonth if lower == "l" || lower == "last" => return Ok(-1),
        _ => {}
    }
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) if field == Field::DayOfMonth => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{text:?} is not {}", field.value_desc()));
    }
    let max = match field {
        Field::Second | Field::Minute => 59,
        Field::Hour => 24,
        Field::DayOfMonth => 31,
        Field::Month => 12,
        Field::DayOfWeek => 7,
    };
    let min = match field {
        Field::DayOfMonth | Field::Month => 1,
        _ => 0,
    };
    match digits.parse::<i32>() {
        Ok(n) if (min..=max).contains(&n) => Ok(if negative { -n } else { n }),
        _ => Err(format!("{text} is out of range for {}", field.value_desc())),
    }
}

/// A time zone as fugit takes it after a cron line or a point in time: an IANA name
/// (`Europe/Berlin`, `UTC`) or an offset (`+09:00`, `-0500`, `+09`).
fn parse_zone(text: &str) -> Result<TimeZone, String> {
    if text.eq_ignore_ascii_case("z") {
        return Ok(TimeZone::UTC);
    }
    if let Some(rest) = text.strip_prefix('+').or_else(|| text.strip_prefix('-')) {
        let sign = if text.starts_with('-') { -1 } else { 1 };
        let (hours, minutes) = match (rest.is_ascii(), rest.len()) {
            (true, 2) => (rest, "00"),
            (true, 4) => (&rest[..2], &rest[2..]),
            (true, 5) if rest.as_bytes()[2] == b':' => (&rest[..2], &rest[3..]),
            _ => ("", ""),
        };
        let number = |digits: &str| {
            Some(digits)
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|d| d.parse::<i32>().ok())
        };
        let (Some(hours), Some(minutes)) = (number(hours), number(minutes)) else {
            return Err(format!(
                "{text:?} is not a UTC offset (expected one like +09:00, -0500 or +01)"
            ));
        };
        if hours > 24 || minutes > 59 {
            return Err(format!("{text:?} is out of range for a UTC offset"));
        }
        let offset = Offset::from_seconds(sign * (hours * 3600 + minutes * 60))
            .map_err(|e| format!("{text:?} is not a usable UTC offset: {e}"))?;
        return Ok(TimeZone::fixed(offset));
    }
    TimeZone::get(text).map_err(|_| {
        format!(
            "{text:?} is not a known time zone (expected an IANA name like Europe/Berlin or \
             UTC, or an offset like +09:00)"
        )
    })
}

/// Parses a duration the way rufus-scheduler (through fugit) reads `every` and `in` values.
///
/// A duration is one or more numbers, each followed by a unit: `y` (year, 365 days), `M`
/// (month, 30 days), `w` (week), `d` (day), `h` (hour), `m` (minute) and `s` (second), or
/// their long forms (`2 hours`, `30 min`, `1 day and 2 hours`); the units are
/// case-insensitive except `M` and `m`. Parts may be separated by spaces, commas and "and".
/// A number may have decimals (`1.5s`, `.5h`), and a last number without a unit counts
/// seconds (`10`, `1h30` is 1h 30s). ISO 8601 durations (`PT1H30M`, `P1D`) work too. There is
/// no millisecond unit in rufus or fugit (`500ms` is an error; write `0.5s`), and a negative
/// total is an error.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    let seconds = if trimmed.starts_with(['P', 'p']) {
        parse_iso_duration(trimmed)
    } else {
        parse_plain_duration(trimmed)
    }
    .map_err(|problem| {
        format!(
            "invalid duration {text:?}: {problem}; expected numbers with units like 30s, 1m, \
             1h30m, 2d, 1w, 1M (30 days) or 1y (365 days), a plain number of seconds, or an ISO \
             8601 duration like PT1H"
        )
    })?;
    if seconds < 0.0 {
        return Err(format!("invalid duration {text:?}: it is negative"));
    }
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("invalid duration {text:?}: it is too long"))
}

fn unit_seconds(unit: &str) -> Option<f64> {
    const DAY: f64 = 86_400.0;
    let seconds = match unit {
        "M" => 30.0 * DAY,
        "m" => 60.0,
        _ => match unit.to_ascii_lowercase().as_str() {
            "y" | "year" | "years" => 365.0 * DAY,
            "month" | "months" => 30.0 * DAY,
            "w" | "week" | "weeks" => 7.0 * DAY,
            "d" | "day" | "days" => DAY,
            "h" | "hour" | "hours" => 3600.0,
            "min" | "mins" | "minute" | "minutes" => 60.0,
            "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
            _ => return None,
        },
    };
    Some(seconds)
}

/// Takes a number (`12`, `1.5`, `.5`, `3.`) from the front of `text`.
fn take_number(text: &str) -> Option<(f64, &str)> {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let number = &text[..end];
    if number.matches('.').count() > 1 || !number.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((number.parse().ok()?, &text[end..]))
}

fn parse_plain_duration(text: &str) -> Result<f64, String> {
    let mut rest = text;
    let mut total = 0.0;
    let mut parts = 0;
    loop {
        // Separators: blanks, commas and "and".
        loop {
            let trimmed = rest.trim_start_matches([' ', '\t', ',']);
            match trimmed.get(..3) {
                Some(word) if word.eq_ignore_ascii_case("and") => rest = &trimmed[3..],
                _ => {
                    rest = trimmed;
                    break;
                }
            }
        }
        if rest.is_empty() {
            break;
        }
        let (sign, unsigned) = match rest.as_bytes()[0] {
            b'-' => (-1.0, &rest[1..]),
            b'+' => (1.0, &rest[1..]),
            _ => (1.0, rest),
        };
        let Some((value, after)) = take_number(unsigned) else {
            return Err(format!("expected a number at {rest:?}"));
        };
        let after = after.trim_start_matches(' ');
        let unit_end = after
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(after.len());
        let unit = &after[..unit_end];
        let factor = if unit.is_empty() {
            if !after.trim().is_empty() {
                return Err(format!(
                    "the number {value} has no unit, which only the last number may omit"
                ));
            }
            1.0
        } else if unit.eq_ignore_ascii_case("ms") {
            return Err("ms is not a unit here (rufus has no milliseconds; write 0.5s)".into());
        } else {
            unit_seconds(unit).ok_or_else(|| format!("{unit:?} is not a duration unit"))?
        };
        total += sign * value * factor;
        parts += 1;
        rest = &after[unit_end..];
    }
    if parts == 0 {
        return Err("it is empty".to_string());
    }
    Ok(total)
}

/// `P[nY][nM][nW][nD][T[nH][nM][nS]]`, any case, each number optionally negative.
fn parse_iso_duration(text: &str) -> Result<f64, String> {
    const DAY: f64 = 86_400.0;
    let upper = text.to_ascii_uppercase();
    let mut rest = &upper[1..];
    let mut in_time = false;
    let mut total = 0.0;
    let mut parts = 0;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('T') {
            if in_time {
                return Err("T appears twice".to_string());
            }
            in_time = true;
            rest = after;
            continue;
        }
        let (sign, unsigned) = match rest.strip_prefix('-') {
            Some(after) => (-1.0, after),
            None => (1.0, rest),
        };
        let Some((value, after)) = take_number(unsigned) else {
            return Err(format!("expected a number at {rest:?}"));
        };
        let Some(designator) = after.chars().next() else {
            return Err(format!("{value} lacks a designator (Y, M, W, D, H or S)"));
        };
        let factor = match (in_time, designator) {
            (false, 'Y') => 365.0 * DAY,
            (false, 'M') => 30.0 * DAY,
            (false, 'W') => 7.0 * DAY,
            (false, 'D') => DAY,
            (true, 'H') => 3600.0,
            (true, 'M') => 60.0,
            (true, 'S') => 1.0,
            _ => {
                return Err(format!(
                    "{designator:?} is not an ISO 8601 designator here (Y, M, W, D before T; H, \
                     M, S after it)"
                ))
            }
        };
        total += sign * value * factor;
        parts += 1;
        rest = &after[1..];
    }
    if parts == 0 {
        return Err("it has no parts".to_string());
    }
    Ok(total)
}

/// Parses a point in time for `at`, as fugit's `parse_at` does.
///
/// Takes ISO 8601 / RFC 3339 with an offset (`2026-12-01T10:00:00Z`,
/// `2026-12-01T10:00:00+01:00`), or a date and time (`2026-12-01 10:00:00`, `2026-12-01T10:00`,
/// or a date alone for midnight) optionally followed by a zone: `UTC`, `Z`, an IANA name
/// (`Europe/Berlin`) or an offset (`+01:00`). Without a zone the time is read in the system's
/// local zone. A wall-clock time that a DST change skips or repeats is read as jiff's
/// "compatible" rule does: later across a gap, the first one in a fold.
pub fn parse_at(text: &str) -> Result<Timestamp, String> {
    let trimmed = text.trim();
    let error = || {
        format!(
            "invalid time {text:?}: expected an ISO 8601 time like 2026-12-01T10:00:00Z or a \
             date and time like \"2026-12-01 10:00:00\", optionally followed by a zone (UTC, \
             Europe/Berlin, +01:00)"
        )
    };
    if let Ok(ts) = trimmed.parse::<Timestamp>() {
        return Ok(ts);
    }
    if let Ok(zoned) = trimmed.parse::<jiff::Zoned>() {
        return Ok(zoned.timestamp());
    }
    let (datetime_text, zone) = match trimmed.rsplit_once([' ', '\t']) {
        Some((head, tail))
            if tail.starts_with(|c: char| c.is_ascii_alphabetic() || c == '+' || c == '-') =>
        {
            let zone = parse_zone(tail).map_err(|e| format!("{}: {e}", error()))?;
            (head.trim_end(), zone)
        }
        _ => (trimmed, TimeZone::system()),
    };
    let dt: DateTime = datetime_text.parse().map_err(|_| error())?;
    zone.to_ambiguous_timestamp(dt)
        .compatible()
        .map_err(|_| error())
}

/// What a plugin's `schedule` option holds: a cron line (the elasticsearch and jdbc inputs
/// take a string), or one of http_poller's `cron`, `every`, `in` and `at`.
///
/// How each one runs, following rufus-scheduler as Logstash drives it:
///
/// - `Cron`: at each firing time of the cron, after now. Runs missed while the previous run
///   was still going are not made up (rufus discards the past).
/// - `Every(interval)`: first at start, then every interval after the previous due time. Plain
///   rufus would wait one interval before the first run, but http_poller schedules `every`
///   with `first_in: 0.01` so the first poll is right away; this follows http_poller. When a
///   run overruns, the next is the first slot of the original rhythm that is still ahead
///   (again, the past is discarded, not made up).
/// - `In(delay)`: once, `delay` after start.
/// - `At(time)`: once, at `time`; a time already past is due at once (rufus triggers an
///   overdue `at` job on its next tick).
#[derive(Clone, Debug)]
pub enum Schedule {
    Cron(Cron),
    Every(Duration),
    In(Duration),
    At(Timestamp),
}

impl Schedule {
    /// A `schedule => "..."` string option, which is a cron line.
    pub fn parse_cron(text: &str) -> Result<Schedule, String> {
        Cron::parse(text).map(Schedule::Cron)
    }

    /// http_poller's `schedule => { every => "1h" }`: a hash with exactly one of `cron`,
    /// `every`, `in` and `at`.
    pub fn from_hash(pairs: &[(String, String)]) -> Result<Schedule, String> {
        const KEYS: &str = "exactly one of the keys cron, every, in or at";
        let [(key, value)] = pairs else {
            let keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
            return Err(format!(
                "schedule must hold {KEYS} (like {{ every => \"1h\" }}), but it has {}",
                if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.join(", ")
                }
            ));
        };
        match key.as_str() {
            "cron" => Cron::parse(value)
                .map(Schedule::Cron)
                .map_err(|e| format!("schedule cron: {e}")),
            "every" => {
                let interval = parse_duration(value).map_err(|e| format!("schedule every: {e}"))?;
                if interval.is_zero() {
                    return Err(format!(
                        "schedule every: {value:?} is zero; an interval must be longer than that"
                    ));
                }
                Ok(Schedule::Every(interval))
            }
            "in" => parse_duration(value)
                .map(Schedule::In)
                .map_err(|e| format!("schedule in: {e}")),
            "at" => parse_at(value)
                .map(Schedule::At)
                .map_err(|e| format!("schedule at: {e}")),
            other => Err(format!("schedule has the key {other:?}; it takes {KEYS}")),
        }
    }

    /// Whether the schedule runs more than once (`cron` and `every`).
    pub fn repeats(&self) -> bool {
        matches!(self, Schedule::Cron(_) | Schedule::Every(_))
    }

    /// When to run next: `previous_fire` is the time the last run was due (as this method
    /// returned it; `None` before the first run), `started` is when the plugin started, and
    /// `now` is the current time. A returned time at or before `now` is due at once. `None`
    /// means there is nothing more to run: a one-shot `in` or `at` that has run, or a cron
    /// with no firing in the next eight years.
    pub fn next_after(
        &self,
        previous_fire: Option<Timestamp>,
        started: Timestamp,
        now: Timestamp,
    ) -> Option<Timestamp> {
        match self {
            Schedule::Cron(cron) => cron.next_after(previous_fire.map_or(now, |p| p.max(now))),
            Schedule::Every(interval) => {
                let Some(previous) = previous_fire else {
                    return Some(started);
                };
                let step = i128::try_from(interval.as_nanos()).ok()?;
                if step == 0 {
                    return None;
                }
                let (previous, now) = (previous.as_nanosecond(), now.as_nanosecond());
                let steps = if now < previous {
                    1
                } else {
                    (now - previous) / step + 1
                };
                Timestamp::from_nanosecond(previous.checked_add(steps.checked_mul(step)?)?).ok()
            }
            Schedule::In(delay) => match previous_fire {
                Some(_) => None,
                None => {
                    let delay = i128::try_from(delay.as_nanos()).ok()?;
                    Timestamp::from_nanosecond(started.as_nanosecond().checked_add(delay)?).ok()
                }
            },
            Schedule::At(at) => match previous_fire {
                Some(_) => None,
                None => Some(*at),
            },
        }
    }
}

/// Runs `job` at each time `schedule` says, until it has nothing more to run or `stop` says
/// so (checked at least every 100 ms while waiting). Returns when done.
pub fn run(schedule: &Schedule, stop: impl Fn() -> bool, mut job: impl FnMut()) {
    let started = Timestamp::now();
    let mut previous = None;
    while !stop() {
        let Some(next) = schedule.next_after(previous, started, Timestamp::now()) else {
            return;
        };
        loop {
            if stop() {
                return;
            }
            let wait = next.as_nanosecond() - Timestamp::now().as_nanosecond();
            if wait <= 0 {
                break;
            }
            let wait = Duration::from_nanos(wait.min(100_000_000) as u64);
            std::thread::sleep(wait);
        }
        job();
        previous = Some(next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    /// The next firing of `cron` after `from`, as RFC 3339 text, or "none".
    fn next(cron: &str, from: &str) -> String {
        let cron = Cron::parse(cron).unwrap_or_else(|e| panic!("{e}"));
        cron.next_after(ts(from))
            .map_or_else(|| "none".to_string(), |t| t.to_string())
    }

    /// The first `n` firings after `from`.
    fn series(cron: &str, from: &str, n: usize) -> Vec<String> {
        let cron = Cron::parse(cron).unwrap_or_else(|e| panic!("{e}"));
        let mut t = ts(from);
        let mut out = Vec::new();
        for _ in 0..n {
            t = cron.next_after(t).unwrap();
            out.push(t.to_string());
        }
        out
    }

    fn cron_error(text: &str) -> String {
        match Cron::parse(text) {
            Ok(cron) => panic!("{text:?} parsed as {cron:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn steps_cross_a_month_end() {
        assert_eq!(
            next("*/5 * * * * UTC", "2026-01-31T23:58:30Z"),
            "2026-02-01T00:00:00Z"
        );
        assert_eq!(
            series("10/20 * * * * UTC", "2026-01-01T12:31:00Z", 3),
            [
                "2026-01-01T12:50:00Z",
                "2026-01-01T13:10:00Z",
                "2026-01-01T13:30:00Z"
            ]
        );
        assert_eq!(
            series("5-20/5 9 * * * UTC", "2026-01-01T09:12:00Z", 3),
            [
                "2026-01-01T09:15:00Z",
                "2026-01-01T09:20:00Z",
                "2026-01-02T09:05:00Z"
            ]
        );
    }

    #[test]
    fn strictly_after() {
        assert_eq!(
            next("0 0 * * * UTC", "2026-01-01T00:00:00Z"),
            "2026-01-02T00:00:00Z"
        );
        assert_eq!(
            next("0 0 * * * UTC", "2025-12-31T23:59:59.999Z"),
            "2026-01-01T00:00:00Z"
        );
    }

    #[test]
    fn day_31_skips_short_months() {
        assert_eq!(
            next("0 12 31 * * UTC", "2026-04-01T00:00:00Z"),
            "2026-05-31T12:00:00Z"
        );
        assert_eq!(
            series("0 0 31 * * UTC", "2026-01-31T00:00:00Z", 3),
            [
                "2026-03-31T00:00:00Z",
                "2026-05-31T00:00:00Z",
                "2026-07-31T00:00:00Z"
            ]
        );
    }

    #[test]
    fn february_29_waits_for_a_leap_year() {
        assert_eq!(
            next("0 0 29 2 * UTC", "2026-03-01T00:00:00Z"),
            "2028-02-29T00:00:00Z"
        );
        assert_eq!(
            next("0 0 29 2 * UTC", "2028-02-29T00:00:00Z"),
            "2032-02-29T00:00:00Z"
        );
        // 2100 is not a leap year: eight years from 2097 to 2104.
        assert_eq!(
            next("0 0 29 2 * UTC", "2097-01-01T00:00:00Z"),
            "2104-02-29T00:00:00Z"
        );
    }

    #[test]
    fn last_day_of_the_month() {
        assert_eq!(
            next("0 0 L * * UTC", "2026-02-10T00:00:00Z"),
            "2026-02-28T00:00:00Z"
        );
        assert_eq!(
            next("0 0 last * * UTC", "2028-02-10T00:00:00Z"),
            "2028-02-29T00:00:00Z"
        );
        assert_eq!(
            next("0 0 L * * UTC", "2026-04-30T00:00:00Z"),
            "2026-05-31T00:00:00Z"
        );
        assert_eq!(
            next("0 0 -2 * * UTC", "2026-04-01T00:00:00Z"),
            "2026-04-29T00:00:00Z"
        );
        assert_eq!(
            series("0 0 25-L 2 * UTC", "2026-02-27T01:00:00Z", 2),
            ["2026-02-28T00:00:00Z", "2027-02-25T00:00:00Z"]
        );
        assert_eq!(
            series("0 0 -3--1 * * UTC", "2026-04-01T00:00:00Z", 4),
            [
                "2026-04-28T00:00:00Z",
                "2026-04-29T00:00:00Z",
                "2026-04-30T00:00:00Z",
                "2026-05-29T00:00:00Z"
            ]
        );
    }

    #[test]
    fn nth_weekday_of_the_month() {
        // March 2026 starts on a Sunday.
        assert_eq!(
            next("0 5 * * mon#2 UTC", "2026-03-01T00:00:00Z"),
            "2026-03-09T05:00:00Z"
        );
        assert_eq!(
            next("0 5 * * 1#1 UTC", "2026-03-03T00:00:00Z"),
            "2026-04-06T05:00:00Z"
        );
        for last_friday in [
            "0 7 * * fri#L UTC",
            "0 7 * * 5#-1 UTC",
            "0 7 * * FRI#last UTC",
        ] {
            assert_eq!(
                next(last_friday, "2026-03-01T00:00:00Z"),
                "2026-03-27T07:00:00Z"
            );
        }
        // The first month after March 2026 with five Fridays is May.
        assert_eq!(
            next("0 0 * * fri#5 UTC", "2026-03-01T00:00:00Z"),
            "2026-05-29T00:00:00Z"
        );
        // The 2nd Monday and every Tuesday.
        assert_eq!(
            series("0 23 * * mon#2,tue UTC", "2026-03-01T00:00:00Z", 3),
            [
                "2026-03-03T23:00:00Z",
                "2026-03-09T23:00:00Z",
                "2026-03-10T23:00:00Z"
            ]
        );
    }

    #[test]
    fn day_of_month_or_day_of_week() {
        // Both restricted: the 1st or a Monday.
        assert_eq!(
            next("0 0 1 * mon UTC", "2026-03-03T00:00:00Z"),
            "2026-03-09T00:00:00Z"
        );
        assert_eq!(
            next("0 0 1 * mon UTC", "2026-03-30T00:00:00Z"),
            "2026-04-01T00:00:00Z"
        );
        assert_eq!(
            next("0 0 13 * fri UTC", "2026-03-14T00:00:00Z"),
            "2026-03-20T00:00:00Z"
        );
        // fugit's & asks for both: the next Friday the 13th.
        assert_eq!(
            next("0 0 13 * fri& UTC", "2026-03-14T00:00:00Z"),
            "2026-11-13T00:00:00Z"
        );
        assert_eq!(
            next("0 0 13& * fri UTC", "2026-03-14T00:00:00Z"),
            "2026-11-13T00:00:00Z"
        );
        // Only the day of week restricted: it alone decides.
        assert_eq!(
            next("0 0 * * mon UTC", "2026-03-03T00:00:00Z"),
            "2026-03-09T00:00:00Z"
        );
        // 1-31 is the whole field, so it is not a restriction and Mondays alone count.
        assert_eq!(
            next("0 0 1-31 * mon UTC", "2026-03-03T00:00:00Z"),
            "2026-03-09T00:00:00Z"
        );
    }

    #[test]
    fn names_ranges_and_wrapping() {
        assert_eq!(
            next("0 0 1 JAN,Jul * UTC", "2026-02-01T00:00:00Z"),
            "2026-07-01T00:00:00Z"
        );
        // Sat-Mon wraps over the end of the week; March 3, 2026 is a Tuesday.
        assert_eq!(
            series("0 0 * * Sat-Mon UTC", "2026-03-03T00:00:00Z", 3),
            [
                "2026-03-07T00:00:00Z",
                "2026-03-08T00:00:00Z",
                "2026-03-09T00:00:00Z"
            ]
        );
        assert_eq!(
            next("0 0 * * 7 UTC", "2026-03-03T00:00:00Z"),
            "2026-03-08T00:00:00Z"
        );
        assert_eq!(
            next("0 0 * * 5-7 UTC", "2026-03-07T12:00:00Z"),
            "2026-03-08T00:00:00Z"
        );
        assert_eq!(
            series("0 22-2 * * * UTC", "2026-01-01T03:00:00Z", 3),
            [
                "2026-01-01T22:00:00Z",
                "2026-01-01T23:00:00Z",
                "2026-01-02T00:00:00Z"
            ]
        );
        assert_eq!(
            next("0 0 1 nov-feb/2 * UTC", "2026-03-01T00:00:00Z"),
            "2026-11-01T00:00:00Z"
        );
        assert_eq!(
            next("0 0 1 nov-feb/2 * UTC", "2026-11-02T00:00:00Z"),
            "2027-01-01T00:00:00Z"
        );
        assert_eq!(
            next("0 24 * * * UTC", "2026-01-01T12:00:00Z"),
            "2026-01-02T00:00:00Z"
        );
        assert_eq!(
            next("0 0 1 */3 * UTC", "2026-02-01T00:00:00Z"),
            "2026-04-01T00:00:00Z"
        );
    }

    #[test]
    fn six_fields_with_seconds() {
        assert_eq!(
            series("*/15 * * * * * UTC", "2026-01-01T12:00:07.5Z", 4),
            [
                "2026-01-01T12:00:15Z",
                "2026-01-01T12:00:30Z",
                "2026-01-01T12:00:45Z",
                "2026-01-01T12:01:00Z"
            ]
        );
        assert_eq!(
            next("30 * * * * * Asia/Tokyo", "2026-01-01T00:00:00Z"),
            "2026-01-01T00:00:30Z"
        );
        // Seven tokens are six fields and a zone; six ending in a day of the week are six fields.
        assert_eq!(
            next("0 30 9 * * mon UTC", "2026-03-03T00:00:00Z"),
            "2026-03-09T09:30:00Z"
        );
        let fired = Cron::parse("15 30 9 * * mon")
            .unwrap()
            .next_after(Timestamp::now())
            .unwrap()
            .to_zoned(TimeZone::system());
        assert_eq!(
            (
                fired.weekday(),
                fired.hour(),
                fired.minute(),
                fired.second()
            ),
            (jiff::civil::Weekday::Monday, 9, 30, 15)
        );
    }

    #[test]
    fn zones() {
        assert_eq!(
            next("0 0 9 * * * Asia/Tokyo", "2026-01-01T01:00:00Z"),
            "2026-01-02T00:00:00Z"
        );
        assert_eq!(
            next("0 9 * * * Europe/Berlin", "2026-01-15T00:00:00Z"),
            "2026-01-15T08:00:00Z"
        );
        assert_eq!(
            next("0 9 * * * Europe/Berlin", "2026-07-15T00:00:00Z"),
            "2026-07-15T07:00:00Z"
        );
        assert_eq!(
            next("0 0 * * * +09:00", "2026-01-01T00:00:00Z"),
            "2026-01-01T15:00:00Z"
        );
        assert_eq!(
            next("0 0 * * * -0500", "2026-01-01T00:00:00Z"),
            "2026-01-01T05:00:00Z"
        );
        assert_eq!(
            next("@daily Europe/Berlin", "2026-01-01T00:00:00Z"),
            "2026-01-01T23:00:00Z"
        );
    }

    #[test]
    fn no_zone_means_system_local_time() {
        let cron = Cron::parse("0 0 * * *").unwrap();
        assert!(cron.zone().is_none());
        let now = Timestamp::now();
        let fired = cron.next_after(now).unwrap().to_zoned(TimeZone::system());
        assert!(fired.timestamp() > now);
        assert_eq!((fired.hour(), fired.minute(), fired.second()), (0, 0, 0));
    }

    #[test]
    fn dst_spring_forward_skips_the_missing_time() {
        // New York skips 02:00-02:59 on 2026-03-08.
        assert_eq!(
            next("30 2 * * * America/New_York", "2026-03-07T12:00:00Z"),
            "2026-03-09T06:30:00Z"
        );
        // 01:30 EST, then 03:00 EDT: one hour of real time.
        assert_eq!(
            next("0 * * * * America/New_York", "2026-03-08T06:30:00Z"),
            "2026-03-08T07:00:00Z"
        );
        assert_eq!(
            series("*/30 * * * * America/New_York", "2026-03-08T06:15:00Z", 3),
            [
                "2026-03-08T06:30:00Z",
                "2026-03-08T07:00:00Z",
                "2026-03-08T07:30:00Z"
            ]
        );
        // 03:00 local still happens, at 07:00Z.
        assert_eq!(
            next("0 3 * * * America/New_York", "2026-03-08T05:00:00Z"),
            "2026-03-08T07:00:00Z"
        );
    }

    #[test]
    fn dst_fall_back_fires_a_repeated_time_once() {
        // New York repeats 01:00-01:59 on 2026-11-01 (EDT, then EST from 06:00Z).
        assert_eq!(
            series("30 1 * * * America/New_York", "2026-11-01T04:00:00Z", 2),
            ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]
        );
        // A cron that runs every hour follows real time through both passes.
        assert_eq!(
            series("*/30 * * * * America/New_York", "2026-11-01T05:10:00Z", 5),
            [
                "2026-11-01T05:30:00Z",
                "2026-11-01T06:00:00Z",
                "2026-11-01T06:30:00Z",
                "2026-11-01T07:00:00Z",
                "2026-11-01T07:30:00Z"
            ]
        );
        assert_eq!(
            series("0 * * * * America/New_York", "2026-11-01T04:30:00Z", 3),
            [
                "2026-11-01T05:00:00Z",
                "2026-11-01T06:00:00Z",
                "2026-11-01T07:00:00Z"
            ]
        );
    }

    #[test]
    fn shortcuts() {
        assert_eq!(
            next("@hourly UTC", "2026-01-01T12:30:00Z"),
            "2026-01-01T13:00:00Z"
        );
        assert_eq!(
            next("@weekly UTC", "2026-03-03T00:00:00Z"),
            "2026-03-08T00:00:00Z"
        );
        assert_eq!(
            next("@YEARLY UTC", "2026-03-03T00:00:00Z"),
            "2027-01-01T00:00:00Z"
        );
        assert_eq!(
            next("@annually UTC", "2026-03-03T00:00:00Z"),
            "2027-01-01T00:00:00Z"
        );
        assert_eq!(
            next("@monthly UTC", "2026-03-03T00:00:00Z"),
            "2026-04-01T00:00:00Z"
        );
        assert_eq!(
            next("@noon UTC", "2026-03-03T13:00:00Z"),
            "2026-03-04T12:00:00Z"
        );
        assert!(cron_error("@reboot").contains("@reboot"));
        assert!(cron_error("@fortnightly").contains("@hourly"));
    }

    #[test]
    fn impossible_schedules() {
        // February 29 on a Monday: 2016, then 2044, beyond the eight-year search.
        assert_eq!(next("0 0 29 2 mon& UTC", "2026-01-01T00:00:00Z"), "none");
        assert_eq!(
            next("0 0 29 2 mon& UTC", "2043-01-01T00:00:00Z"),
            "2044-02-29T00:00:00Z"
        );
        // A day that the month never has is refused when parsed, as fugit does.
        let e = cron_error("0 0 30 2 *");
        assert!(e.contains("never"), "{e}");
        assert!(e.contains("\"30\"") && e.contains("\"2\""), "{e}");
        assert!(Cron::parse("0 0 31 4,6 *").is_err());
        // ... but with the OR rule the day of the week still runs it.
        assert_eq!(
            next("0 0 30 2 mon UTC", "2026-03-03T00:00:00Z"),
            "2027-02-01T00:00:00Z"
        );
        assert_eq!(
            next("0 0 31 2,3 * UTC", "2026-01-01T00:00:00Z"),
            "2026-03-31T00:00:00Z"
        );
    }

    #[test]
    fn parse_errors_name_the_field() {
        let cases = [
            ("61 * * * *", "minute"),
            ("* 25 * * *", "hour"),
            ("* * 32 * *", "day-of-month"),
            ("* * 0 * *", "day-of-month"),
            ("* * * 13 *", "month"),
            ("* * * foo *", "month"),
            ("* * * * 8", "day-of-week"),
            ("* * * * mon#6", "day-of-week"),
            ("* * * * sun%2", "day-of-week"),
            ("*/0 * * * *", "minute"),
            ("60 * * * * *", "second"),
            ("1- * * * *", "minute"),
            ("* * -3-5 * *", "day-of-month"),
        ];
        for (text, field) in cases {
            let e = cron_error(text);
            assert!(e.contains(&format!("the {field} field")), "{text}: {e}");
            assert!(e.contains("it takes"), "{text}: {e}");
        }
        let e = cron_error("* * * *");
        assert!(e.contains("4 fields") && e.contains("expected 5"), "{e}");
        let e = cron_error("");
        assert!(e.contains("empty"), "{e}");
        let e = cron_error("0 0 * * * Mars/Olympus");
        assert!(e.contains("time zone"), "{e}");
        let e = cron_error("0 0 0 * * * Mars/Olympus");
        assert!(e.contains("Mars/Olympus") && e.contains("time zone"), "{e}");
        let e = cron_error("1 2 3 4 5 6 7 8");
        assert!(e.contains("8 fields"), "{e}");
        let e = cron_error("0 61 * * *");
        assert!(e.contains("field 2 of 5") && e.contains("61"), "{e}");
    }

    #[test]
    fn durations() {
        let secs = |text: &str| {
            parse_duration(text)
                .unwrap_or_else(|e| panic!("{e}"))
                .as_secs_f64()
        };
        assert_eq!(secs("30s"), 30.0);
        assert_eq!(secs("1m"), 60.0);
        assert_eq!(secs("1h30m"), 5400.0);
        assert_eq!(secs("2d"), 172_800.0);
        assert_eq!(secs("1w"), 604_800.0);
        assert_eq!(secs("1M"), 2_592_000.0);
        assert_eq!(secs("1y"), 31_536_000.0);
        assert_eq!(secs("10"), 10.0);
        assert_eq!(secs(" 10 "), 10.0);
        assert_eq!(secs("1.5s"), 1.5);
        assert_eq!(secs(".5h"), 1800.0);
        assert_eq!(secs("1h30"), 3630.0);
        assert_eq!(secs("1h30m12"), 5412.0);
        assert_eq!(secs("1w2d"), 777_600.0);
        assert_eq!(secs("1h 30m"), 5400.0);
        assert_eq!(secs("1 hour, 30 minutes and 10 seconds"), 5410.0);
        assert_eq!(secs("2 days"), 172_800.0);
        assert_eq!(secs("1H"), 3600.0);
        assert_eq!(secs("PT1H30M"), 5400.0);
        assert_eq!(secs("P1D"), 86_400.0);
        assert_eq!(secs("p1dt12h"), 129_600.0);
        assert_eq!(secs("P1M"), 2_592_000.0);
        assert_eq!(secs("0s"), 0.0);
        for bad in [
            "", "500ms", "abc", "-1s", "1x", "1.2.3s", "s", "10 20", "P", "PT1D", "1h-",
        ] {
            let e = match parse_duration(bad) {
                Ok(d) => panic!("{bad:?} parsed as {d:?}"),
                Err(e) => e,
            };
            assert!(e.contains("invalid duration"), "{bad}: {e}");
        }
        assert!(parse_duration("500ms").unwrap_err().contains("0.5s"));
    }

    #[test]
    fn points_in_time() {
        assert_eq!(
            parse_at("2026-12-01T10:00:00Z").unwrap(),
            ts("2026-12-01T10:00:00Z")
        );
        assert_eq!(
            parse_at("2026-12-01T10:00:00+01:00").unwrap(),
            ts("2026-12-01T09:00:00Z")
        );
        assert_eq!(
            parse_at("2026-12-01 10:00:00 UTC").unwrap(),
            ts("2026-12-01T10:00:00Z")
        );
        assert_eq!(
            parse_at("2026-12-01 10:00:00 Europe/Berlin").unwrap(),
            ts("2026-12-01T09:00:00Z")
        );
        assert_eq!(
            parse_at("2026-07-01 10:00 America/New_York").unwrap(),
            ts("2026-07-01T14:00:00Z")
        );
        assert_eq!(
            parse_at("2026-12-01 10:00:00 -05:00").unwrap(),
            ts("2026-12-01T15:00:00Z")
        );
        assert_eq!(
            parse_at("2026-12-01 Z").unwrap(),
            ts("2026-12-01T00:00:00Z")
        );
        let local = parse_at("2026-12-01 10:00:00")
            .unwrap()
            .to_zoned(TimeZone::system());
        assert_eq!((local.day(), local.hour(), local.minute()), (1, 10, 0));
        for bad in [
            "tomorrow",
            "2026-13-01 10:00:00",
            "2026-12-01 10:00:00 Mars/Olympus",
            "",
        ] {
            let e = parse_at(bad).unwrap_err();
            assert!(e.contains("invalid time"), "{bad}: {e}");
        }
    }

    fn hash(key: &str, value: &str) -> Vec<(String, String)> {
        vec![(key.to_string(), value.to_string())]
    }

    #[test]
    fn every_runs_at_start_then_keeps_its_rhythm() {
        let schedule = Schedule::from_hash(&hash("every", "1h")).unwrap();
        assert!(schedule.repeats());
        let started = ts("2026-01-01T00:00:00Z");
        assert_eq!(schedule.next_after(None, started, started), Some(started));
        assert_eq!(
            schedule.next_after(Some(started), started, ts("2026-01-01T00:00:02Z")),
            Some(ts("2026-01-01T01:00:00Z"))
        );
        // A run that overran skips the missed slots and keeps the rhythm.
        assert_eq!(
            schedule.next_after(
                Some(ts("2026-01-01T01:00:00Z")),
                started,
                ts("2026-01-01T03:30:00Z")
            ),
            Some(ts("2026-01-01T04:00:00Z"))
        );
        assert_eq!(
            schedule.next_after(
                Some(ts("2026-01-01T01:00:00Z")),
                started,
                ts("2026-01-01T02:00:00Z")
            ),
            Some(ts("2026-01-01T03:00:00Z"))
        );
    }

    #[test]
    fn in_and_at_run_once() {
        let started = ts("2026-01-01T00:00:00Z");
        let delay = Schedule::from_hash(&hash("in", "2s")).unwrap();
        assert!(!delay.repeats());
        assert_eq!(
            delay.next_after(None, started, started),
            Some(ts("2026-01-01T00:00:02Z"))
        );
        assert_eq!(
            delay.next_after(Some(ts("2026-01-01T00:00:02Z")), started, started),
            None
        );
        let at = Schedule::from_hash(&hash("at", "2026-12-01 10:00:00 UTC")).unwrap();
        assert_eq!(
            at.next_after(None, started, started),
            Some(ts("2026-12-01T10:00:00Z"))
        );
        assert_eq!(
            at.next_after(Some(ts("2026-12-01T10:00:00Z")), started, started),
            None
        );
    }

    #[test]
    fn cron_schedules() {
        let started = ts("2026-01-01T00:00:00Z");
        for schedule in [
            Schedule::from_hash(&hash("cron", "*/5 * * * * UTC")).unwrap(),
            Schedule::parse_cron("*/5 * * * * UTC").unwrap(),
        ] {
            assert_eq!(
                schedule.next_after(None, started, ts("2026-01-01T00:03:00Z")),
                Some(ts("2026-01-01T00:05:00Z"))
            );
            // The previous due time wins over a clock that stepped back.
            assert_eq!(
                schedule.next_after(
                    Some(ts("2026-01-01T00:05:00Z")),
                    started,
                    ts("2026-01-01T00:04:59Z")
                ),
                Some(ts("2026-01-01T00:10:00Z"))
            );
        }
    }

    #[test]
    fn schedule_hash_errors() {
        let error = |pairs: &[(String, String)]| Schedule::from_hash(pairs).unwrap_err();
        assert!(error(&[]).contains("exactly one"));
        let two = [hash("every", "1h"), hash("cron", "* * * * *")].concat();
        let e = error(&two);
        assert!(
            e.contains("exactly one") && e.contains("every, cron"),
            "{e}"
        );
        let e = error(&hash("interval", "10"));
        assert!(e.contains("\"interval\""), "{e}");
        let e = error(&hash("every", "0s"));
        assert!(e.contains("zero"), "{e}");
        let e = error(&hash("every", "10 parsecs"));
        assert!(
            e.contains("schedule every") && e.contains("invalid duration"),
            "{e}"
        );
        let e = error(&hash("cron", "* * * * 9"));
        assert!(
            e.contains("schedule cron") && e.contains("day-of-week"),
            "{e}"
        );
        let e = error(&hash("at", "soon"));
        assert!(e.contains("schedule at"), "{e}");
    }

    #[test]
    fn sparse_schedules_are_fast() {
        let start = std::time::Instant::now();
        for text in [
            "0 0 29 2 mon& UTC",
            "0 0 29 2 mon& America/New_York",
            "* * * * * * UTC",
        ] {
            let cron = Cron::parse(text).unwrap();
            for _ in 0..20 {
                cron.next_after(ts("2026-01-01T00:00:00Z"));
            }
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn weekday_agrees_with_jiff() {
        for (y, m, d) in [
            (2026, 3, 1),
            (2000, 2, 29),
            (2100, 3, 1),
            (1970, 1, 1),
            (2024, 12, 31),
        ] {
            let date = jiff::civil::date(y as i16, m as i8, d as i8);
            assert_eq!(
                weekday(y, m, d),
                i32::from(date.weekday().to_sunday_zero_offset())
            );
        }
    }
}
