//! Formatting with `java.time.format.DateTimeFormatter` patterns, for sprintf's `%{{…}}`
//! (`%{{yyyy-MM-dd}}`, `%{{YYYY-'W'ww}}`): Logstash formats `@timestamp` in UTC with
//! `DateTimeFormatter.ofPattern(pattern)`, which differs from Joda's letters (`u` is the year,
//! `Y` the week-based year, `e`/`c` localized days of the week, `Q` quarters, `X`/`x`/`O`
//! offsets) and refuses patterns Joda would print something for.
//!
//! A pattern is checked when it compiles, with java.time's rules: an unknown letter, too many
//! letters for a field, an unclosed quote or a reserved character is an error, so a config
//! with one is refused rather than failing on every event. Names and week rules are those of
//! the `en-US` locale, which Logstash's JVM uses unless told otherwise: weeks start on Sunday
//! and week 1 is the one holding January 1st.

use std::fmt::Write as _;

use chrono::{DateTime, Datelike, Timelike, Utc};

use super::calendar::days_from_civil;
use super::locale::{day_name, month_name};
use super::parse::PatternError;
use super::pattern::{render, tokenize_java, Token};

/// A compiled java.time pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct JavaTimeFormat {
    tokens: Vec<Token>,
}

/// The largest letter count each pattern letter accepts, as `DateTimeFormatterBuilder` checks.
fn max_letters(c: char) -> Option<usize> {
    Some(match c {
        'G' | 'M' | 'L' | 'Q' | 'q' | 'E' | 'e' | 'c' | 'X' | 'x' | 'Z' => 5,
        'y' | 'u' | 'Y' | 'A' | 'n' | 'N' => 19,
        'S' => 9,
        'D' => 3,
        'd' | 'h' | 'H' | 'k' | 'K' | 'm' | 's' | 'w' | 'V' => 2,
        'W' | 'F' | 'a' => 1,
        'z' | 'v' | 'O' => 4,
        _ => return None,
    })
}

impl JavaTimeFormat {
    pub fn compile(pattern: &str) -> Result<JavaTimeFormat, PatternError> {
        let tokens = tokenize_java(pattern)?;
        for t in &tokens {
            let Token::Letters(c, n) = *t else { continue };
            let Some(max) = max_letters(c) else {
                return Err(PatternError(if matches!(c, 'B' | 'g' | 'p') {
                    format!("the date pattern letter {c:?} in {pattern:?} is not supported")
                } else {
                    format!("unknown date pattern letter {c:?} in {pattern:?}")
                }));
            };
            let invalid = n > max
                || (c == 'V' && n != 2)
                || (c == 'v' && n != 1 && n != 4)
                || (c == 'O' && n != 1 && n != 4)
                || (c == 'c' && n == 2);
            if invalid {
                return Err(PatternError(format!(
                    "invalid date pattern {:?} in {pattern:?}",
                    c.to_string().repeat(n)
                )));
            }
        }
        Ok(JavaTimeFormat { tokens })
    }

    /// Formats `dt` (UTC) into `out`.
    pub fn format_into(&self, dt: &DateTime<Utc>, out: &mut String) {
        render(&self.tokens, out, |c, n, out| format_field(c, n, dt, out));
    }

    pub fn format(&self, dt: &DateTime<Utc>) -> String {
        let mut s = String::new();
        self.format_into(dt, &mut s);
        s
    }
}

/// A number at least `width` digits wide. Past `exceeds_pad` digits a `+` goes first, as
/// java.time's `SignStyle.EXCEEDS_PAD` prints years beyond their pattern width.
fn num(out: &mut String, v: i64, width: usize, exceeds_pad: bool) {
    if v < 0 {
        let _ = write!(out, "-{:0width$}", v.unsigned_abs());
    } else if exceeds_pad && width >= 4 && v >= 10i64.saturating_pow(width as u32) {
        let _ = write!(out, "+{v}");
    } else {
        let _ = write!(out, "{v:0width$}");
    }
}

/// Short, full or narrow text by letter count (1-3, 4, 5).
fn text(out: &mut String, full: &str, n: usize) {
    match n {
        4 => out.push_str(full),
        5 => out.push_str(&full[..1]),
        _ => out.push_str(&full[..3]),
    }
}

/// A year field: two letters print the last two digits, one letter the value as it is.
fn year(out: &mut String, y: i64, n: usize) {
    match n {
        2 => num(out, y.rem_euclid(100), 2, false),
        _ => num(out, y, n, true),
    }
}

/// Day number of `dt` (days since 1970-01-01).
fn day_number(dt: &DateTime<Utc>) -> i64 {
    days_from_civil(dt.year(), dt.month(), dt.day())
}

/// Day of the week counted from Sunday = 0.
fn sunday_based(days: i64) -> i64 {
    (days + 4).rem_euclid(7)
}

/// The en-US week-based year and week of `dt`: weeks run Sunday to Saturday and week 1 is the
/// one holding January 1st, so a week belongs to the year its Saturday is in.
fn us_week(dt: &DateTime<Utc>) -> (i64, i64) {
    let days = day_number(dt);
    let week_start = days - sunday_based(days);
    let (wby, _, _) = super::calendar::civil_from_days(week_start + 6);
    let jan1 = days_from_civil(wby, 1, 1);
    let week1 = jan1 - sunday_based(jan1);
    (wby as i64, (week_start - week1) / 7 + 1)
}

fn format_field(c: char, n: usize, dt: &DateTime<Utc>, out: &mut String) {
    let nanos = dt.timestamp_subsec_nanos().min(999_999_999) as i64;
    let millis_of_day = dt.num_seconds_from_midnight() as i64 * 1000 + nanos / 1_000_000;
    match c {
        'G' => {
            let (short, full) = if dt.year() > 0 {
                ("AD", "Anno Domini")
            } else {
                ("BC", "Before Christ")
            };
            match n {
                4 => out.push_str(full),
                5 => out.push_str(&short[..1]),
                _ => out.push_str(short),
            }
        }
        'u' => year(out, dt.year() as i64, n),
        'y' => {
            let y = dt.year() as i64;
            year(out, if y > 0 { y } else { 1 - y }, n)
        }
        'Y' => year(out, us_week(dt).0, n),
        'Q' | 'q' => {
            let q = (dt.month0() / 3 + 1) as i64;
            match n {
                1 | 2 => num(out, q, n, false),
                3 => {
                    let _ = write!(out, "Q{q}");
                }
                4 => out.push_str(["1st", "2nd", "3rd", "4th"][q as usize - 1]),
                _ => num(out, q, 1, false),
            }
            if n == 4 {
                out.push_str(" quarter");
            }
        }
        'M' | 'L' if n >= 3 => text(out, month_name(dt.month()), n),
        'M' | 'L' => num(out, dt.month() as i64, n, false),
        'w' => num(out, us_week(dt).1, n, false),
        'W' => {
            let first = day_number(dt) - dt.day0() as i64;
            num(
                out,
                (dt.day0() as i64 + sunday_based(first)) / 7 + 1,
                1,
                false,
            )
        }
        'E' => text(out, day_name(dt.weekday().number_from_monday()), n),
        'e' | 'c' if n <= 2 => num(out, sunday_based(day_number(dt)) + 1, n, false),
        'e' | 'c' => text(out, day_name(dt.weekday().number_from_monday()), n),
        'd' => num(out, dt.day() as i64, n, false),
        'D' => num(out, dt.ordinal() as i64, n, false),
        'F' => num(out, dt.day0() as i64 / 7 + 1, 1, false),
        'a' => out.push_str(if dt.hour() < 12 { "AM" } else { "PM" }),
        'h' => {
            let h = (dt.hour() % 12) as i64;
            num(out, if h == 0 { 12 } else { h }, n, false)
        }
        'K' => num(out, (dt.hour() % 12) as i64, n, false),
        'k' => num(
            out,
            if dt.hour() == 0 { 24 } else { dt.hour() as i64 },
            n,
            false,
        ),
        'H' => num(out, dt.hour() as i64, n, false),
        'm' => num(out, dt.minute() as i64, n, false),
        's' => num(out, dt.second() as i64, n, false),
        'S' => {
            let digits = format!("{nanos:09}");
            out.push_str(&digits[..n]);
        }
        'A' => num(out, millis_of_day, n, false),
        'n' => num(out, nanos, n, false),
        'N' => num(out, millis_of_day * 1_000_000 + nanos % 1_000_000, n, false),
        // The zone is UTC as a fixed offset: its id and names print as "Z".
        'V' | 'z' | 'v' => out.push('Z'),
        'O' => out.push_str("GMT"),
        'X' => out.push('Z'),
        'x' => out.push_str(match n {
            1 => "+00",
            2 | 4 => "+0000",
            _ => "+00:00",
        }),
        'Z' => out.push_str(match n {
            4 => "GMT",
            5 => "Z",
            _ => "+0000",
        }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(iso: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(iso)
            .unwrap()
            .with_timezone(&Utc)
    }

    fn f(pattern: &str, iso: &str) -> String {
        JavaTimeFormat::compile(pattern).unwrap().format(&at(iso))
    }

    #[test]
    fn logstash_spec_patterns() {
        // logstash-core's StringInterpolationTest, on 2015-10-01T00:00:00Z.
        assert_eq!(f("YYYY-DDD", "2015-10-01T00:00:00Z"), "2015-274");
        assert_eq!(f("YYYY-'W'ww", "2015-10-01T00:00:00Z"), "2015-W40");
        assert_eq!(f("yyyy-MM-dd", "2021-08-11T10:00:00Z"), "2021-08-11");
    }

    #[test]
    fn us_weeks_start_on_sunday_and_hold_january_first() {
        // 2016-01-01 was a Friday: its week (from Sunday 2015-12-27) is week 1 of 2016, where
        // ISO puts it in week 53 of 2015.
        assert_eq!(f("YYYY ww e", "2015-12-27T00:00:00Z"), "2016 01 1");
        assert_eq!(f("YYYY ww e", "2016-01-02T00:00:00Z"), "2016 01 7");
        assert_eq!(f("YYYY ww e", "2016-01-03T00:00:00Z"), "2016 02 1");
        assert_eq!(f("YYYY w", "2015-12-26T00:00:00Z"), "2015 52");
        // Week of month: 2016-10-01 is a Saturday, so the 2nd starts week 2.
        assert_eq!(f("W F", "2016-10-01T00:00:00Z"), "1 1");
        assert_eq!(f("W F", "2016-10-02T00:00:00Z"), "2 1");
        assert_eq!(f("W F", "2016-10-08T00:00:00Z"), "2 2");
    }

    #[test]
    fn fields_text_and_offsets() {
        let t = "2013-02-04T15:06:07.089Z";
        assert_eq!(
            f("uuuu-MM-dd'T'HH:mm:ss.SSSX", t),
            "2013-02-04T15:06:07.089Z"
        );
        assert_eq!(f("yy y yyy yyyyy", t), "13 2013 2013 02013");
        assert_eq!(f("MMM MMMM MMMMM LLL", t), "Feb February F Feb");
        assert_eq!(f("E EEEE EEEEE eee c", t), "Mon Monday M Mon 2");
        assert_eq!(f("Q QQ QQQ QQQQ", t), "1 01 Q1 1st quarter");
        assert_eq!(f("G GGGG GGGGG", t), "AD Anno Domini A");
        assert_eq!(f("h a K k", t), "3 PM 3 15");
        assert_eq!(f("h K k", "2013-02-04T00:30:00Z"), "12 0 24");
        assert_eq!(f("S SSSSSS n", t), "0 089000 89000000");
        assert_eq!(f("A", t), "54367089");
        assert_eq!(
            f("x xx xxx Z ZZZZ ZZZZZ O VV z", t),
            "+00 +0000 +00:00 +0000 GMT Z GMT Z Z"
        );
        assert_eq!(f("[yyyy]'o''clock'", t), "2013o'clock");
    }

    #[test]
    fn java_time_refuses_what_it_refuses() {
        for bad in [
            "yyyy-MM-ddd",
            "aa",
            "HHH",
            "MMMMMM",
            "b",
            "V",
            "cc",
            "OO",
            "yyyy{",
            "'x",
        ] {
            assert!(JavaTimeFormat::compile(bad).is_err(), "{bad}");
        }
    }
}
