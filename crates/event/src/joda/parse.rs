//! Parsing dates with Joda-Time patterns (`dd/MMM/yyyy:HH:mm:ss Z`, `MMM  d HH:mm:ss`), as
//! Logstash's date filter does through Joda's `DateTimeFormat.forPattern(..).parseMillis`.
//!
//! A pattern is compiled once ([`JodaParser::compile`]); parsing a string yields the fields it
//! held ([`Parsed`], no allocation), and [`Parsed::to_local`] turns them into a local date-time
//! with Joda's rules: missing fields default to the start of their unit (a year-less date takes
//! the default year; a time alone lands on 1970-01-01), every value is range-checked (day 31 of
//! a 30-day month fails), a parsed day-of-week moves the date within its Monday-based week
//! (Joda sets it after the day of month), and `h` without `a` means AM. Time zones are left to
//! the caller: the parse reports an offset (`Z`, `ZZ`) or a zone name (`ZZZ`, `z`) if the
//! pattern had one.
//!
//! Joda's parsing details kept here: literals match case-insensitively; numbers take 1 up to
//! their maximum digits (a year takes up to 9 unless the next pattern field is numeric, then
//! exactly its pattern width at most); `yy` is a two-digit year in the 100-year window starting
//! 80 years before the pivot year (SimpleDateFormat's); `S..S` reads at most as many fraction
//! digits as letters; month and day names match their short or full form in the exact case,
//! all lower case or all upper case, longest first; the whole input must be consumed.

use std::sync::Arc;

use super::calendar::{civil_from_days, days_from_civil, days_in_month, is_leap, weekday};
use super::locale::DateLocale;
use super::pattern::{tokenize, Token};

/// The date-time fields a pattern can set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    Era,
    Century,
    Year,
    YearOfEra,
    Weekyear,
    Month,
    DayOfYear,
    Week,
    Day,
    DayOfWeek,
    Halfday,
    Hour,
    ClockHourOfDay,
    HourOfHalfday,
    ClockHourOfHalfday,
    Minute,
    Second,
}

const NFIELDS: usize = 17;

#[derive(Debug, Clone)]
enum Item {
    /// Literal text, matched ignoring case.
    Literal(Box<str>),
    Number {
        field: Field,
        max_digits: usize,
        signed: bool,
    },
    TwoDigitYear {
        field: Field,
        lenient: bool,
        pivot: i32,
    },
    /// Fraction of second with at most this many digits.
    Fraction(usize),
    /// A name (month, day of week, AM/PM, era): candidates longest first.
    Text(Field, Arc<[(Box<str>, i32)]>),
    /// `Z` / `ZZ`: `+hh`, `+hhmm`, `+hh:mm` or `Z`.
    Offset,
    /// `ZZZ`: a time zone id such as `Europe/Paris`.
    ZoneId,
    /// `z` / `zzzz`: one of Joda's default zone names (UTC, GMT, EST, PDT...).
    ZoneName,
}

/// Where a parsed value's time zone came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParsedZone<'a> {
    /// A fixed offset from UTC, in milliseconds.
    Offset(i32),
    /// A zone id to look up (`Europe/Paris`, `America/New_York`, `UTC`).
    Id(&'a str),
}

/// The fields one parse found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed<'a> {
    values: [Option<i32>; NFIELDS],
    pub(super) millis: Option<u32>,
    /// Milliseconds into the hour / minute from an ISO fractional hour or minute (`T10.5`).
    pub(super) millis_of_hour: Option<u32>,
    pub(super) millis_of_minute: Option<u32>,
    pub zone: Option<ParsedZone<'a>>,
}

/// A wall-clock date and time, without a zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalDateTime {
    pub year: i32,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub millis: u32,
}

#[derive(Debug, Clone)]
pub struct JodaParser {
    items: Vec<Item>,
    has_year: bool,
    has_zone: bool,
}

/// Why a pattern did not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError(pub String);

impl std::fmt::Display for PatternError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn is_numeric_token(t: Option<&Token>) -> bool {
    match t {
        Some(Token::Letters(c, n)) => match c {
            'c' | 'C' | 'x' | 'y' | 'Y' | 'd' | 'h' | 'H' | 'm' | 's' | 'S' | 'e' | 'D' | 'F'
            | 'W' | 'k' | 'K' => true,
            'M' => *n <= 2,
            _ => false,
        },
        _ => false,
    }
}

/// Candidate spellings for a name field: each name as written, in lower case and in upper
/// case, longest first (Joda's text parser tries the longest match first).
fn text_candidates(names: &[(&str, i32)]) -> Arc<[(Box<str>, i32)]> {
    let mut out: Vec<(Box<str>, i32)> = Vec::new();
    for &(name, value) in names {
        for variant in [name.to_owned(), name.to_lowercase(), name.to_uppercase()] {
            if !out.iter().any(|(n, _)| **n == *variant) {
                out.push((variant.into_boxed_str(), value));
            }
        }
    }
    out.sort_by_key(|n| std::cmp::Reverse(n.0.len()));
    out.into()
}

const ERAS: &[(&str, i32)] = &[("AD", 1), ("BC", 0), ("CE", 1), ("BCE", 0)];

impl JodaParser {
    /// Compiles `pattern` for `locale`. `pivot_year` is the year two-digit years centre on
    /// (Joda uses the current year minus 30).
    pub fn compile(
        pattern: &str,
        locale: &DateLocale,
        pivot_year: i32,
    ) -> Result<JodaParser, PatternError> {
        let tokens = tokenize(pattern);
        let mut items = Vec::with_capacity(tokens.len());
        for (i, t) in tokens.iter().enumerate() {
            let (c, n) = match t {
                Token::Literal(s) => {
                    if !s.is_empty() {
                        items.push(Item::Literal(s.clone().into_boxed_str()));
                    }
                    continue;
                }
                Token::Letters(c, n) => (*c, *n),
            };
            let next_numeric = is_numeric_token(tokens.get(i + 1));
            let num = |field, default_max: usize| Item::Number {
                field,
                max_digits: default_max.max(n),
                signed: false,
            };
            let item = match c {
                'G' => Item::Text(Field::Era, text_candidates(ERAS)),
                'C' => num(Field::Century, n),
                'x' | 'y' | 'Y' => {
                    let field = match c {
                        'x' => Field::Weekyear,
                        'y' => Field::Year,
                        _ => Field::YearOfEra,
                    };
                    if n == 2 {
                        Item::TwoDigitYear {
                            field,
                            lenient: !next_numeric,
                            pivot: pivot_year,
                        }
                    } else {
                        Item::Number {
                            field,
                            max_digits: if next_numeric { n } else { 9.max(n) },
                            signed: c != 'Y',
                        }
                    }
                }
                'M' if n >= 3 => Item::Text(Field::Month, text_candidates(locale.months)),
                'M' => num(Field::Month, 2),
                'd' => num(Field::Day, 2),
                'a' => Item::Text(Field::Halfday, text_candidates(locale.halfdays)),
                'h' => num(Field::ClockHourOfHalfday, 2),
                'H' => num(Field::Hour, 2),
                'k' => num(Field::ClockHourOfDay, 2),
                'K' => num(Field::HourOfHalfday, 2),
                'm' => num(Field::Minute, 2),
                's' => num(Field::Second, 2),
                'S' => Item::Fraction(n),
                'e' => num(Field::DayOfWeek, 1),
                'E' => Item::Text(Field::DayOfWeek, text_candidates(locale.days)),
                'D' => num(Field::DayOfYear, 3),
                'w' => num(Field::Week, 2),
                'z' => Item::ZoneName,
                'Z' if n <= 2 => Item::Offset,
                'Z' => Item::ZoneId,
                other => {
                    return Err(PatternError(format!(
                        "illegal pattern component {:?} in date pattern {pattern:?}",
                        other.to_string().repeat(n)
                    )))
                }
            };
            items.push(item);
        }
        Ok(JodaParser {
            items,
            // Logstash decides these on the pattern text itself.
            has_year: pattern.contains('y') || pattern.contains('Y'),
            has_zone: pattern.contains('Z'),
        })
    }

    /// Whether the pattern mentions a year (`y`/`Y` anywhere in it, as Logstash checks).
    pub fn has_year(&self) -> bool {
        self.has_year
    }

    /// Whether the pattern mentions a zone offset (`Z` anywhere in it, as Logstash checks).
    pub fn has_zone(&self) -> bool {
        self.has_zone
    }

    /// Parses all of `text`, or returns `None`.
    pub fn parse<'a>(&self, text: &'a str) -> Option<Parsed<'a>> {
        let mut p = Parsed::default();
        let mut pos = 0;
        for item in &self.items {
            pos = parse_item(item, text, pos, &mut p)?;
        }
        (pos == text.len()).then_some(p)
    }
}

/// Matches `lit` at the start of `text` ignoring case; returns the bytes consumed.
fn starts_with_ignore_case(text: &str, lit: &str) -> Option<usize> {
    let mut t = text.char_indices();
    for lc in lit.chars() {
        let (_, tc) = t.next()?;
        if tc != lc
            && !tc.eq_ignore_ascii_case(&lc)
            && !tc.to_uppercase().eq(lc.to_uppercase())
            && !tc.to_lowercase().eq(lc.to_lowercase())
        {
            return None;
        }
    }
    Some(t.next().map_or(text.len(), |(i, _)| i))
}

fn digits_at(b: &[u8], pos: usize, max: usize) -> usize {
    b[pos.min(b.len())..]
        .iter()
        .take(max)
        .take_while(|c| c.is_ascii_digit())
        .count()
}

/// Joda's number parser: an optional sign (when signed), then 1 to `max` digits.
pub(super) fn parse_number(
    text: &str,
    pos: usize,
    max: usize,
    signed: bool,
) -> Option<(i64, usize)> {
    let b = text.as_bytes();
    let mut p = pos;
    let mut negative = false;
    if signed && p < b.len() && (b[p] == b'-' || b[p] == b'+') {
        negative = b[p] == b'-';
        p += 1;
    }
    let n = digits_at(b, p, max);
    if n == 0 {
        return None;
    }
    let mut v: i64 = 0;
    for &d in &b[p..p + n] {
        v = v * 10 + (d - b'0') as i64;
    }
    Some((if negative { -v } else { v }, p + n))
}

/// Digits after a decimal point as milliseconds of `unit_millis` (truncated).
pub(super) fn parse_fraction(
    text: &str,
    pos: usize,
    max: usize,
    unit_millis: u64,
) -> Option<(u32, usize)> {
    let b = text.as_bytes();
    let n = digits_at(b, pos, max);
    if n == 0 {
        return None;
    }
    // value = 0.d1d2d3... * unit, computed exactly in nanoseconds-of-unit scale.
    let mut num: u128 = 0;
    let mut den: u128 = 1;
    for &d in &b[pos..pos + n] {
        num = num * 10 + (d - b'0') as u128;
        den *= 10;
    }
    let ms = (num * unit_millis as u128 / den) as u32;
    Some((ms, pos + n))
}

/// Joda's time zone offset parser: `Z` (any case) or `+hh[[:]mm[[:]ss[[.]SSS]]]`.
pub(super) fn parse_offset(text: &str, pos: usize) -> Option<(i32, usize)> {
    let b = text.as_bytes();
    if pos < b.len() && (b[pos] == b'Z' || b[pos] == b'z') {
        return Some((0, pos + 1));
    }
    if b.len() - pos.min(b.len()) <= 1 {
        return None;
    }
    let negative = match b[pos] {
        b'-' => true,
        b'+' => false,
        _ => return None,
    };
    let mut p = pos + 1;
    let two = |p: usize| -> Option<i32> {
        if digits_at(b, p, 2) < 2 {
            return None;
        }
        Some(((b[p] - b'0') * 10 + (b[p + 1] - b'0')) as i32)
    };
    let hours = two(p)?;
    if hours > 23 {
        return None;
    }
    let mut offset = hours * 3_600_000;
    p += 2;
    'parse: {
        if p >= b.len() {
            break 'parse;
        }
        let separators = match b[p] {
            b':' => {
                p += 1;
                true
            }
            b'0'..=b'9' => false,
            _ => break 'parse,
        };
        let count = digits_at(b, p, 2);
        if count == 0 && !separators {
            break 'parse;
        }
        let minutes = two(p)?;
        if minutes > 59 {
            return None;
        }
        offset += minutes * 60_000;
        p += 2;
        if p >= b.len() {
            break 'parse;
        }
        if separators {
            if b[p] != b':' {
                break 'parse;
            }
            p += 1;
        }
        let count = digits_at(b, p, 2);
        if count == 0 && !separators {
            break 'parse;
        }
        let seconds = two(p)?;
        if seconds > 59 {
            return None;
        }
        offset += seconds * 1000;
        p += 2;
        if p >= b.len() {
            break 'parse;
        }
        if separators {
            if b[p] != b'.' && b[p] != b',' {
                break 'parse;
            }
            p += 1;
        }
        let count = digits_at(b, p, 3);
        if count == 0 && !separators {
            break 'parse;
        }
        if count == 0 {
            return None;
        }
        let mut scale = 100;
        for i in 0..count {
            offset += (b[p + i] - b'0') as i32 * scale;
            scale /= 10;
        }
        p += count;
    }
    Some((if negative { -offset } else { offset }, p))
}

/// Joda's default zone short names, for `z`.
const ZONE_NAMES: &[(&str, &str)] = &[
    ("UTC", "UTC"),
    ("GMT", "UTC"),
    ("EST", "America/New_York"),
    ("EDT", "America/New_York"),
    ("CST", "America/Chicago"),
    ("CDT", "America/Chicago"),
    ("MST", "America/Denver"),
    ("MDT", "America/Denver"),
    ("PST", "America/Los_Angeles"),
    ("PDT", "America/Los_Angeles"),
    ("UT", "UTC"),
];

fn parse_item<'a>(item: &Item, text: &'a str, pos: usize, p: &mut Parsed<'a>) -> Option<usize> {
    let rest = &text[pos..];
    match item {
        Item::Literal(lit) => starts_with_ignore_case(rest, lit).map(|n| pos + n),
        Item::Number {
            field,
            max_digits,
            signed,
        } => {
            let (v, end) = parse_number(text, pos, *max_digits, *signed)?;
            p.set(*field, i32::try_from(v).ok()?);
            Some(end)
        }
        Item::TwoDigitYear {
            field,
            lenient,
            pivot,
        } => {
            let b = text.as_bytes();
            if *lenient {
                let signed = pos < b.len() && (b[pos] == b'-' || b[pos] == b'+');
                let (v, end) = parse_number(text, pos, 9, true)?;
                let ndigits = end - pos - signed as usize;
                if signed || ndigits != 2 {
                    p.set(*field, i32::try_from(v).ok()?);
                    return Some(end);
                }
            }
            if digits_at(b, pos, 2) < 2 {
                return None;
            }
            let yy = ((b[pos] - b'0') * 10 + (b[pos + 1] - b'0')) as i32;
            let low = pivot - 50;
            let t = if low >= 0 {
                low % 100
            } else {
                99 + ((low + 1) % 100)
            };
            let year = yy + low + if yy < t { 100 } else { 0 } - t;
            p.set(*field, year);
            Some(pos + 2)
        }
        Item::Fraction(max) => {
            let (ms, end) = parse_fraction(text, pos, *max, 1000)?;
            p.millis = Some(ms);
            Some(end)
        }
        Item::Text(field, names) => {
            for (name, value) in names.iter() {
                if rest.starts_with(&**name) {
                    p.set(*field, *value);
                    return Some(pos + name.len());
                }
            }
            None
        }
        Item::Offset => {
            let (off, end) = parse_offset(text, pos)?;
            p.zone = Some(ParsedZone::Offset(off));
            Some(end)
        }
        Item::ZoneId => {
            let n = rest
                .bytes()
                .take_while(|c| c.is_ascii_alphanumeric() || b"/_+-".contains(c))
                .count();
            if n == 0 {
                return None;
            }
            p.zone = Some(ParsedZone::Id(&rest[..n]));
            Some(pos + n)
        }
        Item::ZoneName => {
            for (name, id) in ZONE_NAMES {
                if rest.starts_with(name) {
                    p.zone = Some(ParsedZone::Id(id));
                    return Some(pos + name.len());
                }
            }
            None
        }
    }
}

fn in_range(v: i32, lo: i32, hi: i32) -> Option<i32> {
    (lo..=hi).contains(&v).then_some(v)
}

impl LocalDateTime {
    /// Milliseconds since the epoch if this wall-clock time were UTC.
    pub fn utc_millis(&self) -> i64 {
        let days = days_from_civil(self.year, self.month, self.day);
        days * 86_400_000
            + self.hour as i64 * 3_600_000
            + self.minute as i64 * 60_000
            + self.second as i64 * 1000
            + self.millis as i64
    }

    /// The wall-clock time `millis` after the epoch in UTC.
    pub fn from_utc_millis(millis: i64) -> LocalDateTime {
        let days = millis.div_euclid(86_400_000);
        let ms = millis.rem_euclid(86_400_000);
        let (year, month, day) = civil_from_days(days);
        LocalDateTime {
            year,
            month,
            day,
            hour: (ms / 3_600_000) as u32,
            minute: (ms / 60_000 % 60) as u32,
            second: (ms / 1000 % 60) as u32,
            millis: (ms % 1000) as u32,
        }
    }

    /// The same wall-clock time in another year; February 29th becomes the 28th when the
    /// year has none (Joda's `withYear`).
    pub fn with_year(mut self, year: i32) -> LocalDateTime {
        self.year = year;
        self.day = self.day.min(days_in_month(year, self.month));
        self
    }
}

impl<'a> Parsed<'a> {
    pub(super) fn set(&mut self, f: Field, v: i32) {
        self.values[f as usize] = Some(v);
    }

    fn get(&self, f: Field) -> Option<i32> {
        self.values[f as usize]
    }

    /// Whether the parse set a month.
    pub fn month(&self) -> Option<i32> {
        self.get(Field::Month)
    }

    /// The local date-time these fields describe, `default_year` standing in for a missing
    /// year when a month or day was parsed. `None` when a value is out of range.
    pub fn to_local(&self, default_year: i32) -> Option<LocalDateTime> {
        use Field::*;
        let any = |fs: &[Field]| fs.iter().any(|f| self.get(*f).is_some());
        let mut year = if any(&[Era, Century, Year, YearOfEra, Weekyear]) {
            1970
        } else if any(&[Month, DayOfYear, Week, Day, DayOfWeek]) {
            default_year
        } else {
            1970
        };
        if let Some(c) = self.get(Century) {
            year = in_range(c, 0, 2_922_789)? * 100;
        }
        if let Some(yoe) = self.get(YearOfEra) {
            in_range(yoe, 1, 292_278_993)?;
            year = if self.get(Era) == Some(0) {
                1 - yoe
            } else {
                yoe
            };
        } else if let Some(era) = self.get(Era) {
            if era == 0 && year > 0 {
                year = 1 - year;
            }
        }
        if let Some(y) = self.get(Year) {
            year = y;
        }
        // Beyond what an i64 of milliseconds (and chrono's printing) can hold.
        in_range(year, -262_000, 262_000)?;
        let mut days;
        if self.get(Weekyear).is_some() || self.get(Week).is_some() {
            let wy = in_range(self.get(Weekyear).unwrap_or(year), -262_000, 262_000)?;
            // ISO week 1 holds January 4th.
            let jan4 = days_from_civil(wy, 1, 4);
            let week1 = jan4 - (weekday(jan4) - 1);
            let next_jan4 = days_from_civil(wy + 1, 1, 4);
            let weeks = (next_jan4 - (weekday(next_jan4) - 1) - week1) / 7;
            let week = in_range(self.get(Week).unwrap_or(1), 1, weeks as i32)?;
            let dow = in_range(self.get(DayOfWeek).unwrap_or(1), 1, 7)?;
            days = week1 + (week as i64 - 1) * 7 + (dow as i64 - 1);
        } else {
            let month = in_range(self.get(Month).unwrap_or(1), 1, 12)? as u32;
            days = days_from_civil(year, month, 1);
            if let Some(doy) = self.get(DayOfYear) {
                let len = if is_leap(year) { 366 } else { 365 };
                days = days_from_civil(year, 1, 1) + in_range(doy, 1, len)? as i64 - 1;
            }
            if let Some(d) = self.get(Day) {
                let (y, m, _) = civil_from_days(days);
                days = days_from_civil(y, m, in_range(d, 1, days_in_month(y, m) as i32)? as u32);
            }
            if let Some(dow) = self.get(DayOfWeek) {
                days += in_range(dow, 1, 7)? as i64 - weekday(days);
            }
        }
        let mut hour = 0;
        if let Some(h) = self.get(Halfday) {
            hour = in_range(h, 0, 1)? * 12;
        }
        if let Some(h) = self.get(Hour) {
            hour = in_range(h, 0, 23)?;
        }
        if let Some(h) = self.get(ClockHourOfDay) {
            hour = in_range(h, 1, 24)? % 24;
        }
        if let Some(h) = self.get(HourOfHalfday) {
            hour = hour / 12 * 12 + in_range(h, 0, 11)?;
        }
        if let Some(h) = self.get(ClockHourOfHalfday) {
            hour = hour / 12 * 12 + in_range(h, 1, 12)? % 12;
        }
        let mut minute = self.get(Minute).map_or(Some(0), |m| in_range(m, 0, 59))? as u32;
        let mut second = self.get(Second).map_or(Some(0), |s| in_range(s, 0, 59))? as u32;
        let mut millis = self.millis.unwrap_or(0);
        if let Some(ms) = self.millis_of_hour {
            minute = ms / 60_000;
            second = ms / 1000 % 60;
            millis = ms % 1000;
        }
        if let Some(ms) = self.millis_of_minute {
            second = ms / 1000;
            millis = ms % 1000;
        }
        let (year, month, day) = civil_from_days(days);
        Some(LocalDateTime {
            year,
            month,
            day,
            hour: hour as u32,
            minute,
            second,
            millis,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pattern: &str) -> JodaParser {
        JodaParser::compile(pattern, DateLocale::english(), 2000).unwrap()
    }

    fn local(pattern: &str, text: &str) -> Option<LocalDateTime> {
        p(pattern).parse(text)?.to_local(2016)
    }

    fn ymdhms(l: LocalDateTime) -> (i32, u32, u32, u32, u32, u32, u32) {
        (l.year, l.month, l.day, l.hour, l.minute, l.second, l.millis)
    }

    #[test]
    fn apache_and_syslog_patterns() {
        let f = p("dd/MMM/yyyy:HH:mm:ss Z");
        let parsed = f.parse("25/Mar/2013:20:33:56 +0100").unwrap();
        assert_eq!(parsed.zone, Some(ParsedZone::Offset(3_600_000)));
        assert_eq!(
            ymdhms(parsed.to_local(1).unwrap()),
            (2013, 3, 25, 20, 33, 56, 0)
        );
        assert_eq!(
            ymdhms(local("MMM  d HH:mm:ss", "Feb  3 01:02:03").unwrap()),
            (2016, 2, 3, 1, 2, 3, 0)
        );
        assert_eq!(
            ymdhms(local("yyyy-MM-dd HH:mm:ss,SSS", "2014-01-02 03:04:05,6").unwrap()),
            (2014, 1, 2, 3, 4, 5, 600)
        );
        assert!(local("MMM dd HH:mm:ss", "Feb  3 01:02:03").is_none());
        assert!(local("yyyy/MM/dd", "2013/Apr/21").is_none());
        assert!(local("yyyy/MM/dd", "2013/04/31").is_none());
        assert!(local("yyyy/MM/dd", "2013/04/21 ").is_none());
        assert!(local("yyyy/MM/dd", "999999999/04/21").is_none());
    }

    #[test]
    fn names_numbers_and_halfdays() {
        assert_eq!(
            ymdhms(local("yyyyMMdd'T'hhmmss a", "20130405t113000 pm").unwrap()),
            (2013, 4, 5, 23, 30, 0, 0)
        );
        assert_eq!(local("hh", "12").unwrap().hour, 0);
        assert_eq!(local("MMM", "SEPTEMBER").unwrap().month, 9);
        assert!(local("MMM", "sEP").is_none());
        assert_eq!(local("yy", "99").unwrap().year, 1999);
        assert_eq!(local("yy", "49").unwrap().year, 2049);
        assert_eq!(local("yy", "1999").unwrap().year, 1999);
        // Joda sets the day of week after the day of month: 2016-06-02 is a Thursday.
        assert_eq!(local("EEE MMM dd", "Sun Jun 02").unwrap().day, 5);
        assert!(JodaParser::compile("yyyy-MM-ddTHH", DateLocale::english(), 2000).is_err());
    }

    #[test]
    fn locales() {
        let fr = DateLocale::for_tag("fr_FR").unwrap();
        let f = JodaParser::compile("dd MMMM yyyy", fr, 2000).unwrap();
        assert_eq!(
            f.parse("14 juillet 1789")
                .unwrap()
                .to_local(0)
                .unwrap()
                .month,
            7
        );
        assert_eq!(
            f.parse("14 JUIL. 1789").unwrap().to_local(0).unwrap().month,
            7
        );
        let de = DateLocale::for_tag("de").unwrap();
        let f = JodaParser::compile("EEEE, d. MMMM yyyy", de, 2000).unwrap();
        let l = f
            .parse("Montag, 2. März 2020")
            .unwrap()
            .to_local(0)
            .unwrap();
        assert_eq!((l.month, l.day), (3, 2));
    }

    #[test]
    fn offsets_and_zones() {
        for (text, off) in [
            ("+0800", 8 * 3_600_000),
            ("-08:30", -(8 * 3_600_000 + 30 * 60_000)),
            ("+05", 5 * 3_600_000),
            ("Z", 0),
        ] {
            assert_eq!(parse_offset(text, 0), Some((off, text.len())), "{text}");
        }
        let f = p("yyyy-MM-dd HH:mm ZZZ");
        assert_eq!(
            f.parse("2020-01-01 10:00 Europe/Paris").unwrap().zone,
            Some(ParsedZone::Id("Europe/Paris"))
        );
        let f = p("yyyy-MM-dd HH:mm z");
        assert_eq!(
            f.parse("2020-01-01 10:00 PST").unwrap().zone,
            Some(ParsedZone::Id("America/Los_Angeles"))
        );
    }
}
