//! CSV text as Ruby's standard `csv` library reads and writes it, which is what Logstash's csv
//! filter and codec call: [`parse_line`] is `CSV.parse_line(text, col_sep:, quote_char:)`,
//! [`generate_line`] is `CSV.generate_line(fields, col_sep:, quote_char:)`, and
//! [`Convert`] is the library's `:integer`, `:float`, `:date` and `:date_time` converters
//! (with the plugin's own `:boolean`).
//!
//! Written here rather than taken from the `csv` crate because the plugins' behaviour hangs on
//! Ruby's reading, which that crate does not share: separators of several characters (`||`,
//! two spaces), an unquoted empty field that is nil rather than an empty string, and strict
//! quoting (a quote inside an unquoted field, text after a closing quote, an unclosed quote
//! are errors, which the filter turns into `_csvparsefailure`).

use sluice_event::{Timestamp, Value};

/// Why a line is not CSV, in Ruby's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    IllegalQuoting,
    AfterQuotedField,
    UnclosedQuote,
    NewLineInUnquoted,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Malformed::IllegalQuoting => "Illegal quoting in line 1.",
            Malformed::AfterQuotedField => "Any value after quoted field isn't allowed in line 1.",
            Malformed::UnclosedQuote => "Unclosed quoted field in line 1.",
            Malformed::NewLineInUnquoted => "Unquoted fields do not allow new line in line 1.",
        })
    }
}

/// Where `needle` first is in `hay` (a separator is looked for once per column of every
/// line).
fn find(hay: &str, needle: &str) -> Option<usize> {
    crate::codecs::find(hay.as_bytes(), needle.as_bytes())
}

/// The row separator Ruby detects: the first `\r\n`, `\r` or `\n` in the text.
fn row_separator(text: &str) -> &'static str {
    match text.find(['\r', '\n']) {
        Some(at) if text[at..].starts_with("\r\n") => "\r\n",
        Some(at) if text.as_bytes()[at] == b'\r' => "\r",
        _ => "\n",
    }
}

/// The first row of `text`: `None` for empty text (Ruby's nil), each field `None` when it
/// is empty and unquoted, `Some("")` when it is `""`. `quote` `None` reads quotes as text.
pub fn parse_line(
    text: &str,
    sep: &str,
    quote: Option<char>,
) -> Result<Option<Vec<Option<String>>>, Malformed> {
    if text.is_empty() {
        return Ok(None);
    }
    let row_sep = row_separator(text);
    if text.starts_with(row_sep) {
        return Ok(Some(Vec::new()));
    }
    let mut fields = Vec::new();
    // Where the row separator next appears (found again only once passed).
    let mut row_end: Option<usize> = None;
    let mut at = 0;
    loop {
        let rest = &text[at..];
        let field;
        if let Some(q) = quote.filter(|&q| rest.starts_with(q)) {
            // A quoted field: `qq` is one quote; it ends at a lone quote.
            let mut value = String::new();
            let mut body = &rest[q.len_utf8()..];
            loop {
                let Some(i) = body.find(q) else {
                    return Err(Malformed::UnclosedQuote);
                };
                value.push_str(&body[..i]);
                body = &body[i + q.len_utf8()..];
                if body.starts_with(q) {
                    value.push(q);
                    body = &body[q.len_utf8()..];
                } else {
                    break;
                }
            }
            if !(body.is_empty() || body.starts_with(sep) || body.starts_with(row_sep)) {
                return Err(Malformed::AfterQuotedField);
            }
            field = Some(value);
            at = text.len() - body.len();
        } else {
            let row = match row_end {
                Some(r) if r >= at => r,
                _ => {
                    let r = find(rest, row_sep).map_or(text.len(), |i| at + i);
                    row_end = Some(r);
                    r
                }
            };
            let end = find(&text[at..row], sep).map_or(row, |i| at + i);
            let value = &text[at..end];
            if quote.is_some_and(|q| value.contains(q)) {
                return Err(Malformed::IllegalQuoting);
            }
            if value.contains(['\r', '\n']) {
                return Err(Malformed::NewLineInUnquoted);
            }
            field = (!value.is_empty()).then(|| value.to_owned());
            at = end;
        }
        fields.push(field);
        if text[at..].starts_with(sep) {
            at += sep.len();
        } else {
            return Ok(Some(fields));
        }
    }
}

/// One row of text, as Ruby writes it: a field is quoted (its quotes doubled) when it holds
/// the separator, a quote, `\r` or `\n`, or is empty; a missing (nil) field is nothing;
/// the row ends with `\n`.
pub fn generate_line(fields: &[Option<String>], sep: &str, quote: Option<char>, out: &mut Vec<u8>) {
    let format = RowFormat {
        sep: sep.to_owned(),
        quote,
        ..RowFormat::default()
    };
    format.write(fields, out);
}

/// How [`RowFormat::write`] writes a row: Ruby's `to_csv` options `col_sep`, `row_sep`,
/// `quote_char`, `force_quotes` and `quote_empty`.
#[derive(Debug, Clone)]
pub struct RowFormat {
    pub sep: String,
    pub row_sep: String,
    pub quote: Option<char>,
    /// Every field quoted (nil ones too, as `""`).
    pub force_quotes: bool,
    /// An empty string quoted (`""`), so that it differs from nil (Ruby's default).
    pub quote_empty: bool,
}

impl Default for RowFormat {
    fn default() -> Self {
        RowFormat {
            sep: ",".into(),
            row_sep: "\n".into(),
            quote: Some('"'),
            force_quotes: false,
            quote_empty: true,
        }
    }
}

impl RowFormat {
    /// Appends one row.
    pub fn write(&self, fields: &[Option<String>], out: &mut Vec<u8>) {
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(self.sep.as_bytes());
            }
            let text = match f {
                Some(t) => t.as_str(),
                None if self.force_quotes => "",
                None => continue,
            };
            let needs = self.force_quotes
                || (text.is_empty() && self.quote_empty)
                || (!text.is_empty() && text.contains(self.sep.as_str()))
                || text.contains(['\r', '\n'])
                || self.quote.is_some_and(|q| text.contains(q));
            match self.quote.filter(|_| needs) {
                Some(q) => {
                    let mut buf = [0u8; 4];
                    let q_text: &str = q.encode_utf8(&mut buf);
                    out.extend_from_slice(q_text.as_bytes());
                    out.extend_from_slice(text.replace(q, &format!("{q}{q}")).as_bytes());
                    out.extend_from_slice(q_text.as_bytes());
                }
                None => out.extend_from_slice(text.as_bytes()),
            }
        }
        out.extend_from_slice(self.row_sep.as_bytes());
    }
}

/// The name of column `i` (from 0): its name in `columns`, else `column<i+1>` when names are
/// generated, else none (the column is not set), as the csv filter and codec name them.
pub fn column_name(columns: &[String], i: usize, autogenerate: bool) -> Option<String> {
    match columns.get(i) {
        Some(name) => Some(name.clone()),
        None if autogenerate => Some(format!("column{}", i + 1)),
        None => None,
    }
}

/// A header line as column names (`autodetect_column_names`): an empty one keeps its
/// generated name.
pub fn header_names(values: &[Option<String>]) -> Vec<String> {
    (values.iter().enumerate())
        .map(|(i, v)| v.clone().unwrap_or_else(|| format!("column{}", i + 1)))
        .collect()
}

/// A column conversion (`convert => { "col" => "integer" }`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Convert {
    Integer,
    Float,
    Date,
    DateTime,
    Boolean,
}

impl Convert {
    pub fn parse(name: &str) -> Option<Convert> {
        Some(match name {
            "integer" => Convert::Integer,
            "float" => Convert::Float,
            "date" => Convert::Date,
            "date_time" => Convert::DateTime,
            "boolean" => Convert::Boolean,
            _ => return None,
        })
    }

    /// The converted value; text the conversion does not read stays as it was. `None` where
    /// Ruby raises: `boolean` of an empty (nil) field.
    pub fn apply(self, value: Option<String>) -> Option<Value> {
        let Some(text) = value else {
            return match self {
                Convert::Boolean => None,
                _ => Some(Value::Null),
            };
        };
        let converted = match self {
            Convert::Integer => ruby_integer(&text),
            Convert::Float => ruby_float(&text).map(Value::Float),
            Convert::Date => date(&text).map(Value::Timestamp),
            Convert::DateTime => date_time(&text).map(Value::Timestamp),
            Convert::Boolean => match text.trim().to_lowercase().as_str() {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
        };
        Some(converted.unwrap_or_else(|| Value::String(text.into())))
    }
}

/// Ruby's `Integer(text)`: surrounding whitespace allowed, then decimal, `0x`, `0b`, `0o` or
/// leading-`0` octal digits.
fn ruby_integer(text: &str) -> Option<Value> {
    crate::numbers::ruby_integer(text.trim()).map(Value::integer)
}

/// Ruby's `Float(text)`: surrounding whitespace allowed, decimal or hexadecimal.
fn ruby_float(text: &str) -> Option<f64> {
    let t = text.trim();
    crate::numbers::ruby_float(t).or_else(|| crate::numbers::ruby_hex_float(t))
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// A month's name, full or its first three letters, any case.
fn month(name: &str) -> Option<i8> {
    let lower = name.to_ascii_lowercase();
    let i = MONTHS.iter().position(|m| lower.starts_with(m))?;
    const FULL: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    (lower.len() == 3 || FULL[i] == lower || (i == 8 && lower == "sept")).then_some(i as i8 + 1)
}

/// Ruby's reading of a two-digit year (69-99 → 19xx, else 20xx).
fn year(digits: &str) -> Option<i16> {
    let y: i16 = digits.parse().ok()?;
    Some(match digits.len() {
        2 if y >= 69 => 1900 + y,
        2 => 2000 + y,
        _ => y,
    })
}

/// `yyyy-mm-dd` at the start of `text`, and what follows.
fn iso_date(text: &str) -> Option<(jiff::civil::Date, &str)> {
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| {
        b.get(r.clone())
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    if !(digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10))
    {
        return None;
    }
    let date = jiff::civil::Date::new(
        text[..4].parse().ok()?,
        text[5..7].parse().ok()?,
        text[8..10].parse().ok()?,
    )
    .ok()?;
    Some((date, &text[10..]))
}

/// `[weekday[,]] month day[,] year`, the text form csv's date matcher lets through to
/// `Date.parse`; the words split on whitespace and commas.
fn text_date(words: &[&str]) -> Option<jiff::civil::Date> {
    let words = match words.len() {
        3 => words,
        4 => &words[1..],
        _ => return None,
    };
    let m = month(words[0])?;
    let d: i8 = words[1].parse().ok()?;
    let y = year(words[2]).filter(|_| (2..=4).contains(&words[2].len()))?;
    jiff::civil::Date::new(y, m, d).ok()
}

fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect()
}

/// csv's `:date` converter: `yyyy-mm-dd` or `[weekday] month day[,] year` becomes that day's
/// midnight in the local time zone (Ruby's `Date#to_time`); anything else stays text.
pub fn date(text: &str) -> Option<Timestamp> {
    let day = match iso_date(text) {
        Some((d, "")) => d,
        Some(_) => return None,
        None => text_date(&words(text))?,
    };
    let zoned = day.to_zoned(jiff::tz::TimeZone::system()).ok()?;
    Some(Timestamp::from_millis(zoned.timestamp().as_millisecond()))
}

/// csv's `:date_time` converter: `yyyy-mm-dd hh:mm:ss`, ISO-8601 (`T`, fraction, `Z` or an
/// offset; the time optional) or `[weekday] month day hh:mm:ss[,] year`, as an instant (UTC
/// where no offset is given, as Ruby's `DateTime.parse`); anything else stays text.
pub fn date_time(text: &str) -> Option<Timestamp> {
    let (day, rest) = match iso_date(text) {
        Some(found) => found,
        None => {
            let w = words(text);
            let w = if w.len() == 5 { &w[1..] } else { &w[..] };
            if w.len() != 4 {
                return None;
            }
            let day = text_date(&[w[0], w[1], w[3]])?;
            let time = clock(w[2], false)?;
            return instant(day, time, 0);
        }
    };
    if rest.is_empty() {
        return instant(day, (0, 0, 0, 0), 0);
    }
    if let Some(time) = rest.strip_prefix(' ') {
        // `yyyy-mm-dd hh:mm:ss` exactly.
        return if time.len() == 8 {
            instant(day, clock(time, true)?, 0)
        } else {
            None
        };
    }
    let rest = rest.strip_prefix('T')?;
    let (time, zone) = match rest.find(['Z', '+', '-']) {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, ""),
    };
    // A zone only after the seconds.
    if !zone.is_empty() && time.len() < 8 {
        return None;
    }
    let hms = clock(time, true)?;
    let offset = match zone {
        "" | "Z" => 0,
        z => {
            let (sign, hhmm) = (if z.starts_with('-') { -1 } else { 1 }, &z[1..]);
            let (h, m) = hhmm.split_once(':')?;
            if h.len() != 2 || m.len() != 2 {
                return None;
            }
            sign * (h.parse::<i32>().ok()? * 3600 + m.parse::<i32>().ok()? * 60)
        }
    };
    instant(day, hms, offset)
}

/// ISO's `hh:mm[:ss[.fff]]` (`iso`), or `h:m:s` with one or two digits each.
fn clock(text: &str, iso: bool) -> Option<(i8, i8, i8, i32)> {
    let (main, frac) = match text.split_once('.') {
        Some((m, f)) if iso && !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit()) => (m, f),
        Some(_) => return None,
        None => (text, ""),
    };
    let parts: Vec<&str> = main.split(':').collect();
    let ok = |p: &&str| {
        !p.is_empty()
            && p.len() <= 2
            && p.bytes().all(|c| c.is_ascii_digit())
            && (!iso || p.len() == 2)
    };
    if !(parts.len() == 3 || (iso && parts.len() == 2 && frac.is_empty())) || !parts.iter().all(ok)
    {
        return None;
    }
    let millis = format!("{frac:0<3}")[..3].parse().ok()?;
    Some((
        parts[0].parse().ok()?,
        parts[1].parse().ok()?,
        parts.get(2).map_or(Some(0), |s| s.parse().ok())?,
        millis,
    ))
}

fn instant(
    day: jiff::civil::Date,
    (h, m, s, ms): (i8, i8, i8, i32),
    offset: i32,
) -> Option<Timestamp> {
    let dt = day.to_datetime(jiff::civil::Time::new(h, m, s, ms * 1_000_000).ok()?);
    let ts = jiff::tz::Offset::from_seconds(offset)
        .ok()?
        .to_timestamp(dt)
        .ok()?;
    Some(Timestamp::from_millis(ts.as_millisecond()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(text: &str) -> Vec<Option<&str>> {
        // Leaked for the comparison's convenience: a test helper.
        let fields = parse_line(text, ",", Some('"')).unwrap().unwrap();
        fields
            .into_iter()
            .map(|f| f.map(|s| &*Box::leak(s.into_boxed_str())))
            .collect()
    }

    /// Cases as Ruby's `CSV.parse_line` answers them.
    #[test]
    fn reads_lines_as_ruby() {
        assert_eq!(
            row("big,bird,sesame street"),
            [Some("big"), Some("bird"), Some("sesame street")]
        );
        assert_eq!(
            row("a,,\"\",b,"),
            [Some("a"), None, Some(""), Some("b"), None]
        );
        assert_eq!(
            row("\"a,b\",\"say \"\"hi\"\"\"\n2,3"),
            [Some("a,b"), Some("say \"hi\"")]
        );
        assert_eq!(row("\"two\nlines\",x\n"), [Some("two\nlines"), Some("x")]);
        assert_eq!(row("a,b\r\n"), [Some("a"), Some("b")]);
        assert_eq!(row(" a , b "), [Some(" a "), Some(" b ")]);
        assert_eq!(row(","), [None, None]);
        assert_eq!(parse_line("", ",", Some('"')), Ok(None));
        assert_eq!(parse_line("\n", ",", Some('"')), Ok(Some(vec![])));
        for (bad, why) in [
            ("a,b\"c", Malformed::IllegalQuoting),
            ("a, \"b\"", Malformed::IllegalQuoting),
            ("\"a\"b,c", Malformed::AfterQuotedField),
            ("\"abc", Malformed::UnclosedQuote),
            ("\"x\ny\",a\rb", Malformed::NewLineInUnquoted),
        ] {
            assert_eq!(parse_line(bad, ",", Some('"')), Err(why), "{bad:?}");
        }
        let fields = parse_line("a||b|c||", "||", Some('"')).unwrap().unwrap();
        assert_eq!(fields, [Some("a".into()), Some("b|c".into()), None]);
        let fields = parse_line("big,bird,\"sesame\" street", ",", None)
            .unwrap()
            .unwrap();
        assert_eq!(fields[2].as_deref(), Some("\"sesame\" street"));
    }

    #[test]
    fn writes_lines_as_ruby() {
        let mut out = Vec::new();
        let fields = [
            Some("a".to_owned()),
            None,
            Some(String::new()),
            Some("b,c".to_owned()),
            Some("say \"hi\"".to_owned()),
            Some("two\nlines".to_owned()),
        ];
        generate_line(&fields, ",", Some('"'), &mut out);
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            "a,,\"\",\"b,c\",\"say \"\"hi\"\"\",\"two\nlines\"\n"
        );
        // What it writes reads back the same.
        let text = String::from_utf8(out).unwrap();
        assert_eq!(parse_line(&text, ",", Some('"')).unwrap().unwrap(), fields);
    }

    #[test]
    fn converts_as_ruby() {
        let c = |k: Convert, s: &str| k.apply(Some(s.to_owned())).unwrap();
        assert_eq!(c(Convert::Integer, "1234"), Value::Int(1234));
        assert_eq!(c(Convert::Integer, " 0x1A "), Value::Int(26));
        assert_eq!(c(Convert::Integer, "010"), Value::Int(8));
        assert_eq!(c(Convert::Integer, "1_000"), Value::Int(1000));
        assert_eq!(c(Convert::Integer, "12.5"), Value::String("12.5".into()));
        assert_eq!(c(Convert::Float, "1.25"), Value::Float(1.25));
        assert_eq!(c(Convert::Float, "1e3"), Value::Float(1000.0));
        assert_eq!(c(Convert::Float, "abc"), Value::String("abc".into()));
        assert_eq!(c(Convert::Boolean, " FALSE "), Value::Bool(false));
        assert_eq!(c(Convert::Boolean, "yes"), Value::String("yes".into()));
        assert_eq!(Convert::Boolean.apply(None), None);
        assert_eq!(Convert::Integer.apply(None), Some(Value::Null));
        let ts = |s: &str| Value::Timestamp(Timestamp::parse_iso8601(s).unwrap());
        assert_eq!(
            c(Convert::DateTime, "2001-02-03 04:05:06"),
            ts("2001-02-03T04:05:06Z")
        );
        assert_eq!(
            c(Convert::DateTime, "2001-02-03T04:05:06.5+01:00"),
            ts("2001-02-03T03:05:06.500Z")
        );
        assert_eq!(
            c(Convert::DateTime, "Sat Feb 3 04:05:06 2001"),
            ts("2001-02-03T04:05:06Z")
        );
        assert_eq!(
            c(Convert::DateTime, "invalid_date_time"),
            Value::String("invalid_date_time".into())
        );
        assert_eq!(
            c(Convert::DateTime, "2001-02-30 04:05:06"),
            Value::String("2001-02-30 04:05:06".into())
        );
        let midnight = |y, m, d| {
            let z = jiff::civil::date(y, m, d)
                .to_zoned(jiff::tz::TimeZone::system())
                .unwrap();
            Value::Timestamp(Timestamp::from_millis(z.timestamp().as_millisecond()))
        };
        assert_eq!(c(Convert::Date, "2017-06-01"), midnight(2017, 6, 1));
        assert_eq!(c(Convert::Date, "Thu, June 1, 2017"), midnight(2017, 6, 1));
        assert_eq!(c(Convert::Date, "Jun 1 17"), midnight(2017, 6, 1));
        assert_eq!(
            c(Convert::Date, "invalid_date"),
            Value::String("invalid_date".into())
        );
    }
}
