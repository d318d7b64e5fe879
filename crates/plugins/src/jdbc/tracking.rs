//! `:sql_last_value`: where the jdbc input's next run starts, and the file that keeps it
//! across restarts (`last_run_metadata_path`).
//!
//! As Logstash's value trackers: with `use_column_value` and a numeric `tracking_column` the
//! value is a number (0 at first); otherwise it is a time (the epoch at first). After a run,
//! the value becomes the tracking column of the run's last row (`use_column_value`) or the
//! time the run started; the input writes it to the file only once the run's events are
//! queued ([`LastRun::store`]). `clean_run` starts from the first value again,
//! `record_last_run => false` neither reads nor writes the file.
//!
//! The file is in Logstash's format (Ruby YAML), so that a state file moves between Logstash
//! and sluice both ways: `--- 42`, `--- 2015-01-02 02:00:00.722000000 Z` (a time), `---
//! !ruby/object:DateTime '2015-01-02 02:00:00.722000000 +00:00'` (a time when
//! `jdbc_default_timezone` is set), `--- !ruby/object:BigDecimal 18:0.1234e2`. It is replaced
//! whole (written aside, synced, renamed): a crash leaves the old value or the new one.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::value::{parse_naive, Cell};

/// Which kind of value is tracked.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Numeric,
    /// A time; `datetime` writes it as Ruby's DateTime (Logstash does so when
    /// `jdbc_default_timezone` is set).
    Time {
        datetime: bool,
    },
}

pub struct LastRun {
    /// `None` with `record_last_run => false`.
    path: Option<PathBuf>,
    kind: Kind,
    value: Cell,
}

impl LastRun {
    /// The value to start from: the file's when it holds one of `kind` (and `clean` is not
    /// set), else 0 or the epoch. A file that holds something else is removed, as Logstash
    /// does.
    pub fn load(path: Option<PathBuf>, kind: Kind, clean: bool) -> LastRun {
        let initial = match kind {
            Kind::Numeric => Cell::Int(0),
            Kind::Time { .. } => Cell::Time(jiff::Timestamp::UNIX_EPOCH),
        };
        let mut value = initial.clone();
        if let Some(p) = &path {
            if clean {
                let _ = std::fs::remove_file(p);
            } else if let Ok(text) = std::fs::read_to_string(p) {
                match parse(&text).filter(|v| fits(v, kind)) {
                    Some(v) => value = v,
                    None => {
                        tracing::warn!(path = %p.display(), content = %text.trim(), "jdbc input: the last run file holds no usable value; starting over");
                        let _ = std::fs::remove_file(p);
                    }
                }
            }
        }
        LastRun { path, kind, value }
    }

    pub fn value(&self) -> &Cell {
        &self.value
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Takes a new value, if it is of the tracked kind (a numeric tracker ignores anything
    /// else; a time tracker also reads text). Returns whether it did.
    pub fn set(&mut self, v: Cell) -> bool {
        let v = match (self.kind, v) {
            (Kind::Numeric, v) if v.is_numeric() => v,
            (Kind::Time { .. }, Cell::Time(t)) => Cell::Time(t),
            (Kind::Time { .. }, Cell::Text(s)) => match parse_time(&s) {
                Some(t) => Cell::Time(t),
                None => return false,
            },
            _ => return false,
        };
        self.value = v;
        true
    }

    /// Writes the value to the file (nothing with `record_last_run => false`).
    pub fn store(&self) -> std::io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let datetime = matches!(self.kind, Kind::Time { datetime: true });
        write_atomically(path, format(&self.value, datetime).as_bytes())
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
}

fn fits(v: &Cell, kind: Kind) -> bool {
    match kind {
        Kind::Numeric => v.is_numeric(),
        Kind::Time { .. } => matches!(v, Cell::Time(_)),
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// A value as Ruby's `YAML.dump` writes it.
pub fn format(v: &Cell, datetime: bool) -> String {
    match v {
        Cell::Int(i) => format!("--- {i}\n"),
        Cell::Float(f) => format!("--- {}\n", sluice_event::value::ruby_float_to_s(*f)),
        Cell::Decimal(d) => format!("--- !ruby/object:BigDecimal {}\n", ruby_bigdecimal(d)),
        Cell::Time(t) => {
            let utc = jiff::tz::TimeZone::UTC.to_datetime(*t);
            let text = format!(
                "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:09}",
                utc.year(),
                utc.month(),
                utc.day(),
                utc.hour(),
                utc.minute(),
                utc.second(),
                utc.subsec_nanosecond()
            );
            if datetime {
                format!("--- !ruby/object:DateTime '{text} +00:00'\n")
            } else {
                format!("--- {text} Z\n")
            }
        }
        Cell::Text(s) => format!("--- '{}'\n", s.replace('\'', "''")),
        Cell::Bool(b) => format!("--- {b}\n"),
        Cell::Null => "--- \n".to_owned(),
        Cell::Array(_) => "--- []\n".to_owned(),
    }
}

/// BigDecimal's `_dump`: `<precision>:0.<digits>e<exponent>`.
fn ruby_bigdecimal(d: &str) -> String {
    let (neg, body) = match d.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, d.trim_start_matches('+')),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let int = int.trim_start_matches('0');
    let (digits, exp) = if int.is_empty() {
        let zeros = frac.len() - frac.trim_start_matches('0').len();
        (frac.trim_start_matches('0').to_owned(), -(zeros as i64))
    } else {
        (format!("{int}{frac}"), int.len() as i64)
    };
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    let exp = if digits == "0" { 0 } else { exp };
    let sign = if neg { "-" } else { "" };
    format!("18:{sign}0.{digits}e{exp}")
}

/// `0.12345e3` (BigDecimal's scientific form) as plain decimal text, `123.45`.
fn plain_decimal(sci: &str) -> Option<String> {
    let (neg, body) = match sci.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, sci.trim_start_matches('+')),
    };
    let (mantissa, exp) = match body.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().ok()?),
        None => (body, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if !(int.bytes().chain(frac.bytes())).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = format!("{int}{frac}");
    let point = int.len() as i64 + exp;
    let (int, frac) = if point <= 0 {
        (
            "0".to_owned(),
            format!("{}{digits}", "0".repeat((-point) as usize)),
        )
    } else if point as usize >= digits.len() {
        (
            format!("{digits}{}", "0".repeat(point as usize - digits.len())),
            String::new(),
        )
    } else {
        (
            digits[..point as usize].to_owned(),
            digits[point as usize..].to_owned(),
        )
    };
    let int = match int.trim_start_matches('0') {
        "" => "0",
        i => i,
    };
    let frac = frac.trim_end_matches('0');
    let sign = if neg { "-" } else { "" };
    Some(if frac.is_empty() {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    })
}

/// Reads what Ruby's YAML wrote (or a plain value written by hand).
pub fn parse(text: &str) -> Option<Cell> {
    let mut t = text.trim();
    t = t.strip_prefix("---").unwrap_or(t).trim();
    if let Some(rest) = t.strip_prefix("!ruby/object:BigDecimal") {
        let rest = rest.trim();
        let num = rest.split_once(':').map_or(rest, |(_, n)| n);
        let value = sluice_event::Value::decimal(&plain_decimal(num)?)?;
        return Some(match value {
            sluice_event::Value::Int(i) => Cell::Int(i.into()),
            other => Cell::Decimal(other.to_display_string()),
        });
    }
    let tagged = ["!ruby/object:DateTime", "!ruby/object:Time", "!!timestamp"]
        .iter()
        .find_map(|tag| t.strip_prefix(tag));
    let is_tagged = tagged.is_some();
    let t = tagged.unwrap_or(t).trim();
    let quoted = (t.len() >= 2)
        && ((t.starts_with('\'') && t.ends_with('\'')) || (t.starts_with('"') && t.ends_with('"')));
    let unquoted = if quoted { &t[1..t.len() - 1] } else { t };
    if !quoted && !is_tagged {
        if let Ok(i) = unquoted.parse::<i128>() {
            return Some(Cell::Int(i));
        }
        if let Ok(f) = unquoted.parse::<f64>() {
            return Some(Cell::Float(f));
        }
    }
    match parse_time(unquoted) {
        Some(at) => Some(Cell::Time(at)),
        None if quoted => Some(Cell::Text(unquoted.replace("''", "'"))),
        None => None,
    }
}

/// `2015-01-02 02:00:00.722000000 Z`, `... +00:00`, `... -0600`, ISO 8601, or a time without
/// a zone (UTC).
pub fn parse_time(s: &str) -> Option<jiff::Timestamp> {
    let s = s.trim();
    if let Ok(t) = s.parse::<jiff::Timestamp>() {
        return Some(t);
    }
    // `<date> <time> <zone>`: Ruby's form, with a blank before the zone.
    let (main, zone) = match s.rsplit_once(' ') {
        Some((m, z)) if z == "Z" || z == "UTC" || z.starts_with(['+', '-']) => (m, Some(z)),
        _ => (s, None),
    };
    let dt = parse_naive(main)?;
    let offset_secs = match zone {
        None | Some("Z") | Some("UTC") => 0,
        Some(z) => {
            let sign = if z.starts_with('-') { -1 } else { 1 };
            let digits: String = z[1..].chars().filter(char::is_ascii_digit).collect();
            if digits.len() != 4 {
                return None;
            }
            let h: i32 = digits[..2].parse().ok()?;
            let m: i32 = digits[2..].parse().ok()?;
            sign * (h * 3600 + m * 60)
        }
    };
    let offset = jiff::tz::Offset::from_seconds(offset_secs).ok()?;
    offset.to_timestamp(dt).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> jiff::Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn reads_and_writes_logstash_files() {
        assert_eq!(parse("--- 42\n"), Some(Cell::Int(42)));
        assert_eq!(parse("--- 1.5\n"), Some(Cell::Float(1.5)));
        assert_eq!(
            parse("--- 2015-01-02 02:00:00.722000000 Z\n"),
            Some(Cell::Time(ts("2015-01-02T02:00:00.722Z")))
        );
        assert_eq!(
            parse("--- !ruby/object:DateTime '2022-03-08 08:10:00.486889000 Z'"),
            Some(Cell::Time(ts("2022-03-08T08:10:00.486889Z")))
        );
        assert_eq!(
            parse("--- !ruby/object:DateTime '2015-01-02 02:00:00.722000000 -06:00'"),
            Some(Cell::Time(ts("2015-01-02T08:00:00.722Z")))
        );
        assert_eq!(
            parse("--- '2010-03-19T14:48:40.483Z'\n"),
            Some(Cell::Time(ts("2010-03-19T14:48:40.483Z")))
        );
        assert_eq!(
            parse("--- !ruby/object:BigDecimal 18:0.12345e3\n"),
            Some(Cell::Decimal("123.45".into()))
        );
        assert_eq!(
            parse("--- !ruby/object:BigDecimal 18:0.5e1"),
            Some(Cell::Int(5))
        );
        assert_eq!(parse("garbage: [x"), None);

        let t = Cell::Time(ts("2015-01-02T02:00:00.722Z"));
        assert_eq!(format(&t, false), "--- 2015-01-02 02:00:00.722000000 Z\n");
        assert_eq!(
            format(&t, true),
            "--- !ruby/object:DateTime '2015-01-02 02:00:00.722000000 +00:00'\n"
        );
        assert_eq!(format(&Cell::Int(7), false), "--- 7\n");
        for d in ["123.45", "-0.0012", "5000", "0"] {
            let text = format(&Cell::Decimal(d.into()), false);
            let back = parse(&text).unwrap();
            let want = sluice_event::Value::decimal(d).unwrap();
            assert_eq!(
                back.to_value().to_display_string(),
                want.to_display_string(),
                "{d}: {text}"
            );
        }
    }

    #[test]
    fn a_tracker_keeps_its_kind_and_its_file() {
        let dir = std::env::temp_dir().join(format!("sluice-jdbc-tracking-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("sub/last_run");
        let mut n = LastRun::load(Some(path.clone()), Kind::Numeric, false);
        assert_eq!(n.value(), &Cell::Int(0));
        assert!(!n.set(Cell::Text("x".into())));
        assert!(n.set(Cell::Int(9)));
        n.store().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "--- 9\n");
        assert_eq!(
            LastRun::load(Some(path.clone()), Kind::Numeric, false).value(),
            &Cell::Int(9)
        );
        // A time tracker does not take a number from the file: it starts over.
        let t = LastRun::load(Some(path.clone()), Kind::Time { datetime: false }, false);
        assert_eq!(t.value(), &Cell::Time(jiff::Timestamp::UNIX_EPOCH));
        assert!(!path.exists());
        std::fs::write(&path, "--- 5\n").unwrap();
        assert_eq!(
            LastRun::load(Some(path.clone()), Kind::Numeric, true).value(),
            &Cell::Int(0)
        );
        assert!(!path.exists(), "clean_run removes the file");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
