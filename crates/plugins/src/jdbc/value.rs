//! Values between databases, events and SQL text: [`Cell`] is what a driver reads out of a
//! row and what a parameter puts into a statement.
//!
//! Data flows two ways through here:
//! - database → event: each driver ([`super::postgres`], [`super::mysql`], [`super::sqlite`])
//!   decodes a column into a [`Cell`]; [`Cell::to_value`] makes the event value as Logstash's
//!   value handler leaves it (integers stay integers, decimals stay exact decimals as
//!   Logstash's BigDecimal, dates and timestamps become `LogStash::Timestamp`, NULL stays a
//!   null field);
//! - event or config → SQL: [`Cell::from_value`] turns an event value (a jdbc_streaming
//!   parameter, a `parameters` entry) or the tracked `:sql_last_value` into a cell, and
//!   [`bind_named`] / [`bind_positional`] put cells into a statement as SQL literals, the way
//!   Sequel does for `db[sql, params]` (client-side, quoted per [`Dialect`]).
//!
//! Times keep nanoseconds here ([`jiff::Timestamp`]) although events keep milliseconds: a
//! tracked timestamp column must not lose its microseconds, or `> :sql_last_value` would read
//! the last row again. [`Zones`] says in which zone a timestamp without a zone is read, and
//! in which one a time literal is written (`jdbc_default_timezone`, `plugin_timezone`).

use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use sluice_event::{Map, Timestamp, Value};

/// The SQL dialect a statement is written in: how literals are quoted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Postgres,
    Mysql,
    Sqlite,
}

/// One column of one row, as a driver decoded it.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    /// An exact decimal (NUMERIC, DECIMAL) as its text.
    Decimal(String),
    Text(String),
    /// A date or a timestamp, as an instant.
    Time(jiff::Timestamp),
    Array(Vec<Cell>),
}

/// Where times without a zone are placed, and where time literals are written.
#[derive(Clone, Debug)]
pub struct Zones {
    /// The zone of the database's `TIMESTAMP WITHOUT TIME ZONE`/`DATETIME` values:
    /// `jdbc_default_timezone`, else the machine's.
    pub naive: TimeZone,
    /// `jdbc_default_timezone`'s `[dst_enabled_on_overlap:...]`: which of two readings of an
    /// ambiguous local time wins (`true` the first, in daylight saving time).
    pub dst_on_overlap: Option<bool>,
    /// The zone time literals are written in: `jdbc_default_timezone`, else UTC (or the
    /// machine's with `plugin_timezone => local`).
    pub literal: TimeZone,
}

impl Zones {
    /// UTC both ways: the jdbc_static filter's local database.
    pub fn utc() -> Zones {
        Zones {
            naive: TimeZone::UTC,
            dst_on_overlap: None,
            literal: TimeZone::UTC,
        }
    }

    /// `jdbc_default_timezone` (an IANA name, optionally followed by
    /// `[dst_enabled_on_overlap:true|false]`) and `plugin_timezone` (`utc` or `local`).
    pub fn parse(default_timezone: Option<&str>, plugin_local: bool) -> Result<Zones, String> {
        let system = TimeZone::system();
        let Some(spec) = default_timezone else {
            return Ok(Zones {
                naive: system.clone(),
                dst_on_overlap: None,
                literal: if plugin_local { system } else { TimeZone::UTC },
            });
        };
        let (name, extensions) = match spec.split_once('[') {
            Some((name, rest)) => match rest.strip_suffix(']') {
                Some(ext) => (name, Some(ext)),
                None => return Err(format!("{spec:?}: an extension must end with ]")),
            },
            None => (spec, None),
        };
        let zone = TimeZone::get(name).map_err(|e| format!("{name:?}: {e}"))?;
        let mut dst_on_overlap = None;
        for ext in extensions.into_iter().flat_map(|e| e.split(';')) {
            dst_on_overlap = match ext {
                "dst_enabled_on_overlap:true" => Some(true),
                "dst_enabled_on_overlap:false" => Some(false),
                other => return Err(format!("invalid timezone extension `{other}`")),
            };
        }
        Ok(Zones {
            naive: zone.clone(),
            dst_on_overlap,
            literal: zone,
        })
    }

    /// The instant of a database time without a zone.
    pub fn naive_to_instant(&self, dt: DateTime) -> Option<jiff::Timestamp> {
        let ambiguous = self.naive.to_ambiguous_timestamp(dt);
        match self.dst_on_overlap {
            Some(true) => ambiguous.earlier(),
            Some(false) => ambiguous.later(),
            None => ambiguous.compatible(),
        }
        .ok()
    }
}

/// A date (no time of day) as Ruby's `Date#to_time` makes it: midnight in the machine's zone.
pub fn date_to_instant(date: jiff::civil::Date) -> Option<jiff::Timestamp> {
    TimeZone::system()
        .to_ambiguous_timestamp(date.to_datetime(jiff::civil::Time::midnight()))
        .compatible()
        .ok()
}

/// Parses `YYYY-MM-DD[ T]HH:MM:SS[.fraction]` (a database's text for a time without a zone),
/// or a date alone (midnight).
pub fn parse_naive(text: &str) -> Option<DateTime> {
    let text = text.trim();
    let (date, time) = match text.split_once([' ', 'T']) {
        Some((d, t)) => (d, Some(t)),
        None => (text, None),
    };
    let date: jiff::civil::Date = date.parse().ok()?;
    let time = match time {
        None => jiff::civil::Time::midnight(),
        Some(t) => t.parse().ok()?,
    };
    Some(date.to_datetime(time))
}

impl Cell {
    /// The event value of a cell, as Logstash's event gets it from a Sequel row.
    pub fn to_value(&self) -> Value {
        match self {
            Cell::Null => Value::Null,
            Cell::Bool(b) => Value::Bool(*b),
            Cell::Int(i) => Value::integer(*i),
            Cell::Float(f) => Value::Float(*f),
            Cell::Decimal(d) => Value::decimal(d).unwrap_or_else(|| Value::String(d.into())),
            Cell::Text(s) => Value::String(s.into()),
            Cell::Time(t) => Value::Timestamp(Timestamp::from_millis(t.as_millisecond())),
            Cell::Array(items) => Value::Array(items.iter().map(Cell::to_value).collect()),
        }
    }

    /// A parameter from an event or a config value. Objects have no SQL literal.
    pub fn from_value(v: &Value) -> Result<Cell, String> {
        Ok(match v {
            Value::Null => Cell::Null,
            Value::Bool(b) => Cell::Bool(*b),
            Value::Int(i) => Cell::Int(i128::from(*i)),
            Value::BigInt(b) => Cell::Int(b.get()),
            Value::Float(f) => Cell::Float(*f),
            Value::Decimal(d) => Cell::Decimal(d.to_string()),
            Value::String(s) => Cell::Text(s.to_string()),
            Value::Timestamp(t) => Cell::Time(
                jiff::Timestamp::from_millisecond(t.millis()).map_err(|e| e.to_string())?,
            ),
            Value::Array(items) => Cell::Array(
                items
                    .iter()
                    .map(Cell::from_value)
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(_) => return Err("an object cannot be a SQL parameter".to_owned()),
        })
    }

    /// Whether the value is a number (what a numeric `tracking_column` keeps).
    pub fn is_numeric(&self) -> bool {
        matches!(self, Cell::Int(_) | Cell::Float(_) | Cell::Decimal(_))
    }

    /// Appends the cell as a SQL literal of `dialect`, times written in `zone`: Sequel's
    /// literalisation (`'it''s'`, `NULL`, `true` or `1`, `'2024-01-02 03:04:05.000006+0000'`
    /// on PostgreSQL, without the offset elsewhere, `(1, 2)` for a list).
    pub fn write_literal(&self, dialect: Dialect, zone: &TimeZone, out: &mut String) {
        match self {
            Cell::Null => out.push_str("NULL"),
            Cell::Bool(b) => out.push_str(match (dialect, b) {
                (Dialect::Postgres, true) => "true",
                (Dialect::Postgres, false) => "false",
                (_, true) => "1",
                (_, false) => "0",
            }),
            Cell::Int(i) => out.push_str(&i.to_string()),
            Cell::Float(f) if f.is_finite() => {
                out.push_str(&sluice_event::value::ruby_float_to_s(*f))
            }
            Cell::Float(f) => {
                let text = if f.is_nan() {
                    "'NaN'"
                } else if *f > 0.0 {
                    "'Infinity'"
                } else {
                    "'-Infinity'"
                };
                out.push_str(text);
            }
            Cell::Decimal(d) => out.push_str(d),
            Cell::Text(s) => {
                out.push('\'');
                for c in s.chars() {
                    match c {
                        '\'' => out.push_str("''"),
                        '\\' if dialect == Dialect::Mysql => out.push_str("\\\\"),
                        c => out.push(c),
                    }
                }
                out.push('\'');
            }
            Cell::Time(t) => {
                out.push('\'');
                out.push_str(&format_time(*t, zone, dialect == Dialect::Postgres));
                out.push('\'');
            }
            Cell::Array(items) => {
                out.push('(');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write_literal(dialect, zone, out);
                }
                out.push(')');
            }
        }
    }
}

/// `YYYY-MM-DD HH:MM:SS.ffffff` in `zone`, with `+HHMM` after it when `offset`.
pub fn format_time(t: jiff::Timestamp, zone: &TimeZone, offset: bool) -> String {
    let dt = zone.to_datetime(t);
    let mut s = format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:06}",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second(),
        dt.subsec_nanosecond() / 1000
    );
    if offset {
        let secs = zone.to_offset(t).seconds();
        let sign = if secs < 0 { '-' } else { '+' };
        let secs = secs.abs();
        s.push_str(&format!("{sign}{:02}{:02}", secs / 3600, secs / 60 % 60));
    }
    s
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Sequel's `db[sql, params]`: each `:name` whose whole name is a key of `params` becomes
/// that parameter's literal; every other colon stays as it is (`::text` casts, times).
pub fn bind_named(
    sql: &str,
    params: &[(String, Cell)],
    dialect: Dialect,
    zone: &TimeZone,
) -> String {
    if params.is_empty() {
        return sql.to_owned();
    }
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 16);
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b':' {
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut end = start;
        while end < bytes.len() && is_word(bytes[end]) {
            end += 1;
        }
        let name = &sql[start..end];
        match params.iter().find(|(k, _)| k == name) {
            Some((_, cell)) if end > start => {
                out.push_str(&sql[copied..i]);
                cell.write_literal(dialect, zone, &mut out);
                copied = end;
                i = end;
            }
            _ => i = start,
        }
    }
    out.push_str(&sql[copied..]);
    out
}

/// The byte offsets of the `?` placeholders of `sql` outside quotes and comments.
pub fn positional_marks(sql: &str) -> Vec<usize> {
    let bytes = sql.as_bytes();
    let mut marks = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < bytes.len() && bytes[i] != q {
                    i += 1;
                }
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'?' => marks.push(i),
            _ => {}
        }
        i += 1;
    }
    marks
}

/// A prepared statement's `?` placeholders filled, in order, with `values` as literals.
pub fn bind_positional(
    sql: &str,
    values: &[Cell],
    dialect: Dialect,
    zone: &TimeZone,
) -> Result<String, String> {
    let marks = positional_marks(sql);
    if marks.len() != values.len() {
        return Err(format!(
            "the statement has {} `?` placeholders but {} values are bound",
            marks.len(),
            values.len()
        ));
    }
    let mut out = String::with_capacity(sql.len() + 16);
    let mut copied = 0;
    for (at, v) in marks.iter().zip(values) {
        out.push_str(&sql[copied..*at]);
        v.write_literal(dialect, zone, &mut out);
        copied = at + 1;
    }
    out.push_str(&sql[copied..]);
    Ok(out)
}

/// A row as event fields: each column by its name, later columns of the same name winning
/// (as a Ruby hash built from the row).
pub fn row_to_map(names: &[String], cells: &[Cell], lowercase: bool) -> Map {
    let mut m = Map::with_capacity(names.len() + 2);
    for (name, cell) in names.iter().zip(cells) {
        let key = if lowercase {
            name.to_lowercase()
        } else {
            name.clone()
        };
        m.insert(key.into(), cell.to_value());
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(text: &str) -> jiff::Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn literals_follow_sequel() {
        let utc = TimeZone::UTC;
        let lit = |c: Cell, d: Dialect| {
            let mut s = String::new();
            c.write_literal(d, &utc, &mut s);
            s
        };
        assert_eq!(lit(Cell::Text("it's".into()), Dialect::Postgres), "'it''s'");
        assert_eq!(lit(Cell::Text("a\\b".into()), Dialect::Mysql), "'a\\\\b'");
        assert_eq!(lit(Cell::Text("a\\b".into()), Dialect::Sqlite), "'a\\b'");
        assert_eq!(lit(Cell::Bool(true), Dialect::Postgres), "true");
        assert_eq!(lit(Cell::Bool(true), Dialect::Mysql), "1");
        assert_eq!(lit(Cell::Float(1.0), Dialect::Mysql), "1.0");
        assert_eq!(lit(Cell::Null, Dialect::Sqlite), "NULL");
        let t = Cell::Time(ts("2015-01-01T10:00:00.000123Z"));
        assert_eq!(
            lit(t.clone(), Dialect::Postgres),
            "'2015-01-01 10:00:00.000123+0000'"
        );
        assert_eq!(
            lit(t.clone(), Dialect::Mysql),
            "'2015-01-01 10:00:00.000123'"
        );
        let chicago = TimeZone::get("America/Chicago").unwrap();
        let mut s = String::new();
        t.write_literal(Dialect::Postgres, &chicago, &mut s);
        assert_eq!(s, "'2015-01-01 04:00:00.000123-0600'");
        assert_eq!(
            lit(
                Cell::Array(vec![Cell::Int(1), Cell::Int(2)]),
                Dialect::Mysql
            ),
            "(1, 2)"
        );
    }

    #[test]
    fn named_parameters_are_whole_identifiers() {
        let p = vec![
            ("id".to_owned(), Cell::Int(7)),
            ("sql_last_value".to_owned(), Cell::Int(0)),
        ];
        let z = TimeZone::UTC;
        assert_eq!(
            bind_named(
                "SELECT x::text FROM t WHERE id = :id AND n > :sql_last_value AND :idx",
                &p,
                Dialect::Postgres,
                &z
            ),
            "SELECT x::text FROM t WHERE id = 7 AND n > 0 AND :idx"
        );
        assert_eq!(bind_named("a = :id", &[], Dialect::Mysql, &z), "a = :id");
    }

    #[test]
    fn positional_parameters_skip_quotes() {
        let z = TimeZone::UTC;
        let sql = "SELECT '?' , \"?\" FROM t WHERE a = ? -- ?\n AND b = ?";
        assert_eq!(positional_marks(sql).len(), 2);
        let bound = bind_positional(
            sql,
            &[Cell::Text("x".into()), Cell::Int(2)],
            Dialect::Sqlite,
            &z,
        )
        .unwrap();
        assert!(bound.ends_with("a = 'x' -- ?\n AND b = 2"), "{bound}");
        assert!(bind_positional(sql, &[], Dialect::Sqlite, &z).is_err());
    }

    #[test]
    fn zones_and_values() {
        let z = Zones::parse(Some("America/Chicago"), false).unwrap();
        let dt = parse_naive("2015-01-01 11:11:11").unwrap();
        assert_eq!(z.naive_to_instant(dt).unwrap(), ts("2015-01-01T17:11:11Z"));
        // 01:30 happens twice on 2021-11-07 in Chicago.
        let fold = parse_naive("2021-11-07 01:23:45").unwrap();
        let on = Zones::parse(Some("America/Chicago[dst_enabled_on_overlap:true]"), false).unwrap();
        let off =
            Zones::parse(Some("America/Chicago[dst_enabled_on_overlap:false]"), false).unwrap();
        assert_eq!(
            on.naive_to_instant(fold).unwrap(),
            ts("2021-11-07T06:23:45Z")
        );
        assert_eq!(
            off.naive_to_instant(fold).unwrap(),
            ts("2021-11-07T07:23:45Z")
        );
        assert!(Zones::parse(Some("Mars/Olympus"), false).is_err());
        assert!(Zones::parse(Some("UTC[bogus]"), false).is_err());
        assert_eq!(
            Cell::Decimal("95.670000".into())
                .to_value()
                .to_display_string(),
            "95.670000"
        );
        assert_eq!(Cell::Int(1 << 70).to_value(), Value::integer(1 << 70));
        assert!(Cell::from_value(&Value::Object(Map::new())).is_err());
    }
}
