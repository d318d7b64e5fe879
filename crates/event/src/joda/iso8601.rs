//! ISO 8601 as Joda's `ISODateTimeFormat.dateTimeParser()` reads it, the first of the formats
//! Logstash's `ISO8601` keyword tries.
//!
//! ```text
//!   datetime          = time | date-opt-time
//!   time              = 'T' time-element [offset]
//!   date-opt-time     = date-element ['T' [time-element] [offset]]
//!   date-element      = yyyy ['-' MM ['-' dd]] | xxxx '-W' ww ['-' e] | yyyy '-' DDD
//!   time-element      = HH [':' mm [':' ss [fraction] | fraction] | fraction]
//!   fraction          = ('.' | ',') digit+
//!   offset            = 'Z' | ('+' | '-') HH [':'] [mm]
//! ```

use super::parse::{parse_fraction, parse_number, parse_offset, Field, Parsed, ParsedZone};

fn lit(text: &str, pos: usize, c: u8) -> Option<usize> {
    let b = text.as_bytes();
    (pos < b.len() && b[pos].eq_ignore_ascii_case(&c)).then_some(pos + 1)
}

fn decimal_point(text: &str, pos: usize) -> Option<usize> {
    lit(text, pos, b'.').or_else(|| lit(text, pos, b','))
}

fn iso_number<'a>(
    text: &str,
    pos: usize,
    p: &mut Parsed<'a>,
    f: Field,
    max: usize,
    signed: bool,
) -> Option<usize> {
    let (v, end) = parse_number(text, pos, max, signed)?;
    p.set(f, i32::try_from(v).ok()?);
    Some(end)
}

/// One way to parse the text at a position (an alternative of the ISO grammar).
type Alternative<'f, 'a> = &'f dyn Fn(&'a str, usize, &mut Parsed<'a>) -> Option<usize>;

/// Runs alternatives from `pos` and keeps the one that got furthest.
fn longest<'a>(
    text: &'a str,
    pos: usize,
    p: &mut Parsed<'a>,
    alts: &[Alternative<'_, 'a>],
) -> Option<usize> {
    let mut best: Option<(usize, Parsed<'a>)> = None;
    for alt in alts {
        let mut trial = p.clone();
        if let Some(end) = alt(text, pos, &mut trial) {
            if best.as_ref().is_some_and(|(b, _)| end <= *b) {
                continue;
            }
            best = Some((end, trial));
        }
    }
    let (end, parsed) = best?;
    *p = parsed;
    Some(end)
}

fn iso_date<'a>(text: &'a str, pos: usize, p: &mut Parsed<'a>) -> Option<usize> {
    let ymd = |text: &'a str, pos: usize, p: &mut Parsed<'a>| {
        let mut at = iso_number(text, pos, p, Field::Year, 9, true)?;
        let mut q = p.clone();
        if let Some(m) =
            lit(text, at, b'-').and_then(|a| iso_number(text, a, &mut q, Field::Month, 2, false))
        {
            at = m;
            let mut r = q.clone();
            if let Some(d) =
                lit(text, at, b'-').and_then(|a| iso_number(text, a, &mut r, Field::Day, 2, false))
            {
                at = d;
                q = r;
            }
            *p = q;
        }
        Some(at)
    };
    let week = |text: &'a str, pos: usize, p: &mut Parsed<'a>| {
        let at = iso_number(text, pos, p, Field::Weekyear, 9, true)?;
        let at = lit(text, at, b'-')?;
        let at = lit(text, at, b'W')?;
        let mut at = iso_number(text, at, p, Field::Week, 2, false)?;
        let mut q = p.clone();
        if let Some(e) = lit(text, at, b'-')
            .and_then(|a| iso_number(text, a, &mut q, Field::DayOfWeek, 1, false))
        {
            at = e;
            *p = q;
        }
        Some(at)
    };
    let ordinal = |text: &'a str, pos: usize, p: &mut Parsed<'a>| {
        let at = iso_number(text, pos, p, Field::Year, 9, true)?;
        let at = lit(text, at, b'-')?;
        iso_number(text, at, p, Field::DayOfYear, 3, false)
    };
    longest(text, pos, p, &[&ymd, &week, &ordinal])
}

fn iso_time<'a>(text: &'a str, pos: usize, p: &mut Parsed<'a>) -> Option<usize> {
    let at = iso_number(text, pos, p, Field::Hour, 2, false)?;
    let minutes = |text: &'a str, pos: usize, p: &mut Parsed<'a>| {
        let at = lit(text, pos, b':')?;
        let at = iso_number(text, at, p, Field::Minute, 2, false)?;
        let seconds = |text: &'a str, pos: usize, p: &mut Parsed<'a>| {
            let at = lit(text, pos, b':')?;
            let at = iso_number(text, at, p, Field::Second, 2, false)?;
            if let Some((ms, end)) =
                decimal_point(text, at).and_then(|a| parse_fraction(text, a, 9, 1000))
            {
                p.millis = Some(ms);
                return Some(end);
            }
            Some(at)
        };
        let minute_fraction = |text: &'a str, pos: usize, p: &mut Parsed<'a>| {
            let (ms, end) = parse_fraction(text, decimal_point(text, pos)?, 9, 60_000)?;
            p.millis_of_minute = Some(ms);
            Some(end)
        };
        let nothing = |_: &'a str, pos: usize, _: &mut Parsed<'a>| Some(pos);
        longest(text, at, p, &[&seconds, &minute_fraction, &nothing])
    };
    let hour_fraction = |text: &'a str, pos: usize, p: &mut Parsed<'a>| {
        let (ms, end) = parse_fraction(text, decimal_point(text, pos)?, 9, 3_600_000)?;
        p.millis_of_hour = Some(ms);
        Some(end)
    };
    let nothing = |_: &'a str, pos: usize, _: &mut Parsed<'a>| Some(pos);
    longest(text, at, p, &[&minutes, &hour_fraction, &nothing])
}

fn iso_offset<'a>(text: &'a str, pos: usize, p: &mut Parsed<'a>) -> Option<usize> {
    let (off, end) = parse_offset(text, pos)?;
    p.zone = Some(ParsedZone::Offset(off));
    Some(end)
}

fn iso_time_only<'a>(text: &'a str, pos: usize, p: &mut Parsed<'a>) -> Option<usize> {
    let at = lit(text, pos, b'T')?;
    let at = iso_time(text, at, p)?;
    let mut q = p.clone();
    Some(match iso_offset(text, at, &mut q) {
        Some(end) => {
            *p = q;
            end
        }
        None => at,
    })
}

fn iso_date_opt_time<'a>(text: &'a str, pos: usize, p: &mut Parsed<'a>) -> Option<usize> {
    let at = iso_date(text, pos, p)?;
    let Some(mut t) = lit(text, at, b'T') else {
        return Some(at);
    };
    let mut q = p.clone();
    if let Some(end) = iso_time(text, t, &mut q) {
        t = end;
        *p = q;
    }
    let mut q = p.clone();
    if let Some(end) = iso_offset(text, t, &mut q) {
        t = end;
        *p = q;
    }
    Some(t)
}

/// Parses ISO 8601 with Joda's `dateTimeParser()` grammar; all of `text` must match.
pub fn parse_iso8601(text: &str) -> Option<Parsed<'_>> {
    let mut p = Parsed::default();
    let end = longest(text, 0, &mut p, &[&iso_time_only, &iso_date_opt_time])?;
    (end == text.len()).then_some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::joda::LocalDateTime;

    fn ymdhms(l: LocalDateTime) -> (i32, u32, u32, u32, u32, u32, u32) {
        (l.year, l.month, l.day, l.hour, l.minute, l.second, l.millis)
    }

    #[test]
    fn iso8601_grammar() {
        #[allow(clippy::type_complexity)]
        fn t(s: &str) -> Option<((i32, u32, u32, u32, u32, u32, u32), Option<ParsedZone<'_>>)> {
            parse_iso8601(s).map(|p| (ymdhms(p.to_local(2000).unwrap()), p.zone))
        }
        assert_eq!(
            t("2001-12-07T23:54:54,123Z"),
            Some(((2001, 12, 7, 23, 54, 54, 123), Some(ParsedZone::Offset(0))))
        );
        assert_eq!(
            t("2016-05-01T08:18:18.123456789"),
            Some(((2016, 5, 1, 8, 18, 18, 123), None))
        );
        assert_eq!(t("2016-05"), Some(((2016, 5, 1, 0, 0, 0, 0), None)));
        assert_eq!(t("2016-032"), Some(((2016, 2, 1, 0, 0, 0, 0), None)));
        assert_eq!(t("2016-W01-1"), Some(((2016, 1, 4, 0, 0, 0, 0), None)));
        assert_eq!(
            t("2016-01-01T10.5"),
            Some(((2016, 1, 1, 10, 30, 0, 0), None))
        );
        assert_eq!(
            t("T10:20-0130"),
            Some((
                (1970, 1, 1, 10, 20, 0, 0),
                Some(ParsedZone::Offset(-5_400_000))
            ))
        );
        assert!(t("2001-11-06 20:45:45").is_none());
        assert!(t("2001-11-06T20:45:45+").is_none());
        assert!(t("yesterday").is_none());
    }
}
