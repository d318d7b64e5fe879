//! Formatting with Joda-Time patterns (`yyyy.MM.dd`, `dd/MMM/yyyy:HH:mm:ss Z`): sprintf's
//! `%{+FORMAT}` formats `@timestamp` in UTC with one, as Logstash does.

use std::fmt::Write as _;

use chrono::{DateTime, Datelike, Timelike, Utc};

use super::locale::{day_name, month_name};
use super::pattern::{render, tokenize, Token};

/// A compiled Joda pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct JodaFormat {
    tokens: Vec<Token>,
}

impl JodaFormat {
    /// Compiles a pattern. ASCII letters are pattern fields, text in single quotes is literal
    /// (`''` is a quote), everything else is literal.
    pub fn compile(pattern: &str) -> JodaFormat {
        JodaFormat {
            tokens: tokenize(pattern),
        }
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

fn num(out: &mut String, v: i64, width: usize) {
    let _ = write!(out, "{v:0width$}");
}

fn text(out: &mut String, full: &str, n: usize) {
    if n >= 4 {
        out.push_str(full);
    } else {
        out.push_str(&full[..3]);
    }
}

fn format_field(c: char, n: usize, dt: &DateTime<Utc>, out: &mut String) {
    match c {
        'y' | 'Y' | 'u' => {
            let y = dt.year() as i64;
            if n == 2 {
                num(out, y.rem_euclid(100), 2)
            } else {
                num(out, y, n)
            }
        }
        'x' => {
            let y = dt.iso_week().year() as i64;
            if n == 2 {
                num(out, y.rem_euclid(100), 2)
            } else {
                num(out, y, n)
            }
        }
        'w' => num(out, dt.iso_week().week() as i64, n),
        'C' => num(out, dt.year() as i64 / 100, n),
        'G' => out.push_str(if dt.year() > 0 { "AD" } else { "BC" }),
        'M' if n >= 3 => text(out, month_name(dt.month()), n),
        'M' => num(out, dt.month() as i64, n),
        'd' => num(out, dt.day() as i64, n),
        'D' => num(out, dt.ordinal() as i64, n),
        'e' => num(out, dt.weekday().number_from_monday() as i64, n),
        'E' => text(out, day_name(dt.weekday().number_from_monday()), n),
        'a' => out.push_str(if dt.hour() < 12 { "AM" } else { "PM" }),
        'H' => num(out, dt.hour() as i64, n),
        'k' => num(out, if dt.hour() == 0 { 24 } else { dt.hour() as i64 }, n),
        'K' => num(out, (dt.hour() % 12) as i64, n),
        'h' => {
            let h = (dt.hour() % 12) as i64;
            num(out, if h == 0 { 12 } else { h }, n)
        }
        'm' => num(out, dt.minute() as i64, n),
        's' => num(out, dt.second() as i64, n),
        'S' => {
            // Fraction of second: the first n digits of the millisecond value.
            let ms = format!("{:03}", dt.timestamp_subsec_millis());
            let mut digits: String = ms.chars().take(n).collect();
            while digits.len() < n {
                digits.push('0');
            }
            out.push_str(&digits);
        }
        'Z' => out.push_str(match n {
            1 => "+0000",
            2 => "+00:00",
            _ => "UTC",
        }),
        'z' => out.push_str("UTC"),
        other => {
            for _ in 0..n {
                out.push(other);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dt() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2013-02-04T05:06:07.089Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn common_patterns() {
        assert_eq!(
            JodaFormat::compile("yyyy.MM.dd").format(&dt()),
            "2013.02.04"
        );
        assert_eq!(
            JodaFormat::compile("YYYY.MM.dd").format(&dt()),
            "2013.02.04"
        );
        assert_eq!(
            JodaFormat::compile("dd/MMM/yyyy:HH:mm:ss Z").format(&dt()),
            "04/Feb/2013:05:06:07 +0000"
        );
        assert_eq!(
            JodaFormat::compile("yyyy-MM-dd'T'HH:mm:ss.SSS").format(&dt()),
            "2013-02-04T05:06:07.089"
        );
        assert_eq!(
            JodaFormat::compile("EEE, MMMM d yy").format(&dt()),
            "Mon, February 4 13"
        );
        assert_eq!(JodaFormat::compile("'it''s' HH").format(&dt()), "it's 05");
    }
}
