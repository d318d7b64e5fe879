//! PostgreSQL through the `postgres` crate: a statement's rows, each column decoded from
//! PostgreSQL's binary format into a [`Cell`].
//!
//! Statements arrive with their parameters already in them as literals (Sequel's way, see
//! [`super::value::bind_named`]) and run through the extended protocol with no parameters.
//! With `jdbc_fetch_size` they run in a transaction through a portal, that many rows at a
//! time, as the JDBC driver does with a fetch size; otherwise rows stream as they arrive.
//!
//! Types map as the JDBC driver and Sequel give them to Logstash: integers, floats, booleans;
//! NUMERIC as an exact decimal; DATE, TIMESTAMP and TIMESTAMPTZ as instants (a TIMESTAMP in
//! `jdbc_default_timezone` or the machine's zone, a DATE at the machine's midnight); text,
//! JSON, enums, UUIDs, TIME and INTERVAL as text; arrays as lists. A type with no known form
//! becomes its bytes as text when they are UTF-8, else null (logged once per query).

use std::sync::Arc;

use postgres::fallible_iterator::FallibleIterator;
use postgres::types::{FromSql, Kind, Type};

use super::connection::{Flow, JdbcError, RowSink};
use super::value::{Cell, Zones};

/// Days from 1970-01-01 to PostgreSQL's epoch, 2000-01-01.
const PG_EPOCH_DAYS: i64 = 10_957;
const PG_EPOCH_MICROS: i64 = PG_EPOCH_DAYS * 86_400 * 1_000_000;

/// A column's raw bytes, whatever its type.
struct Raw<'a>(Option<&'a [u8]>);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(Some(raw)))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

pub fn error_text(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {} ({})", db.severity(), db.message(), db.code().code()),
        None => e.to_string(),
    }
}

fn statement_error(e: postgres::Error) -> JdbcError {
    JdbcError::Statement(error_text(&e))
}

pub fn query(
    client: &mut postgres::Client,
    sql: &str,
    fetch_size: Option<u32>,
    zones: &Zones,
    row: &mut RowSink<'_>,
) -> Result<bool, JdbcError> {
    let mut names: Option<Arc<[String]>> = None;
    let mut odd_type_logged = false;
    let mut each = |r: &postgres::Row| -> Result<Flow, JdbcError> {
        let names = names.get_or_insert_with(|| {
            r.columns()
                .iter()
                .map(|c| c.name().to_owned())
                .collect::<Vec<_>>()
                .into()
        });
        let mut cells = Vec::with_capacity(r.len());
        for (i, col) in r.columns().iter().enumerate() {
            let raw: Raw = r.try_get(i).map_err(statement_error)?;
            let cell = match raw.0 {
                None => Cell::Null,
                Some(bytes) => decode(col.type_(), bytes, zones).unwrap_or_else(|| {
                    if !odd_type_logged {
                        odd_type_logged = true;
                        tracing::warn!(column = col.name(), r#type = col.type_().name(), "jdbc: no conversion for this PostgreSQL type; the column is null (cast it to text in the statement)");
                    }
                    Cell::Null
                }),
            };
            cells.push(cell);
        }
        Ok(row(names, cells))
    };
    match fetch_size {
        Some(n) if n > 0 => {
            let mut tx = client.transaction().map_err(statement_error)?;
            let portal = tx.bind(sql, &[]).map_err(statement_error)?;
            loop {
                let rows = tx
                    .query_portal(&portal, n as i32)
                    .map_err(statement_error)?;
                let done = rows.len() < n as usize;
                for r in &rows {
                    if each(r)? == Flow::Stop {
                        return Ok(false);
                    }
                }
                if done {
                    break;
                }
            }
            tx.commit().map_err(statement_error)?;
            Ok(true)
        }
        _ => {
            let empty: [&(dyn postgres::types::ToSql + Sync); 0] = [];
            let mut rows = client
                .query_raw(sql, empty.iter().copied())
                .map_err(statement_error)?;
            while let Some(r) = rows.next().map_err(statement_error)? {
                if each(&r)? == Flow::Stop {
                    return Ok(false);
                }
            }
            Ok(true)
        }
    }
}

fn be_i16(b: &[u8], at: usize) -> Option<i16> {
    Some(i16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn be_i32(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be_i64(b: &[u8], at: usize) -> Option<i64> {
    Some(i64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn text(b: &[u8]) -> Cell {
    Cell::Text(String::from_utf8_lossy(b).into_owned())
}

/// One value in PostgreSQL's binary format; `None` for a type with no known form.
fn decode(ty: &Type, b: &[u8], zones: &Zones) -> Option<Cell> {
    Some(match *ty {
        Type::BOOL => Cell::Bool(*b.first()? != 0),
        Type::INT2 => Cell::Int(be_i16(b, 0)?.into()),
        Type::INT4 => Cell::Int(be_i32(b, 0)?.into()),
        Type::INT8 => Cell::Int(be_i64(b, 0)?.into()),
        Type::OID => Cell::Int(u32::from_be_bytes(b.get(..4)?.try_into().ok()?).into()),
        Type::FLOAT4 => Cell::Float(f32::from_be_bytes(b.get(..4)?.try_into().ok()?).into()),
        Type::FLOAT8 => Cell::Float(f64::from_be_bytes(b.get(..8)?.try_into().ok()?)),
        Type::NUMERIC => numeric(b)?,
        Type::TEXT
        | Type::VARCHAR
        | Type::BPCHAR
        | Type::NAME
        | Type::UNKNOWN
        | Type::XML
        | Type::JSON
        | Type::CHAR => text(b),
        Type::JSONB => text(b.get(1..)?),
        Type::BYTEA => text(b),
        Type::UUID => {
            let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
            if h.len() != 32 {
                return None;
            }
            Cell::Text(format!(
                "{}-{}-{}-{}-{}",
                &h[..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..]
            ))
        }
        Type::DATE => {
            let days = be_i32(b, 0)?;
            if days == i32::MAX || days == i32::MIN {
                return Some(Cell::Null);
            }
            let date = jiff::civil::date(2000, 1, 1)
                .checked_add(jiff::Span::new().days(i64::from(days)))
                .ok()?;
            Cell::Time(super::value::date_to_instant(date)?)
        }
        Type::TIMESTAMPTZ => {
            let us = be_i64(b, 0)?;
            if us == i64::MAX || us == i64::MIN {
                return Some(Cell::Null);
            }
            Cell::Time(jiff::Timestamp::from_microsecond(us.checked_add(PG_EPOCH_MICROS)?).ok()?)
        }
        Type::TIMESTAMP => {
            let us = be_i64(b, 0)?;
            if us == i64::MAX || us == i64::MIN {
                return Some(Cell::Null);
            }
            // The wall-clock reading, placed in the zone the database's times are in.
            let wall = jiff::Timestamp::from_microsecond(us.checked_add(PG_EPOCH_MICROS)?).ok()?;
            let dt = jiff::tz::TimeZone::UTC.to_datetime(wall);
            Cell::Time(zones.naive_to_instant(dt)?)
        }
        Type::TIME => Cell::Text(time_of_day(be_i64(b, 0)?)),
        Type::TIMETZ => {
            let offset = -be_i32(b, 8)?;
            let sign = if offset < 0 { '-' } else { '+' };
            let o = offset.abs();
            Cell::Text(format!(
                "{}{sign}{:02}:{:02}",
                time_of_day(be_i64(b, 0)?),
                o / 3600,
                o / 60 % 60
            ))
        }
        Type::INTERVAL => Cell::Text(interval(be_i64(b, 0)?, be_i32(b, 8)?, be_i32(b, 12)?)),
        Type::INET | Type::CIDR => Cell::Text(inet(b, *ty == Type::CIDR)?),
        _ => match ty.kind() {
            Kind::Enum(_) => text(b),
            Kind::Domain(inner) => decode(inner, b, zones)?,
            Kind::Array(member) => array(member, b, zones)?,
            _ => match std::str::from_utf8(b) {
                Ok(s) if !s.contains('\0') => Cell::Text(s.to_owned()),
                _ => return None,
            },
        },
    })
}

/// NUMERIC's binary form (base-10000 digits, weight, sign, scale) as decimal text.
fn numeric(b: &[u8]) -> Option<Cell> {
    let ndigits = be_i16(b, 0)? as usize;
    let weight = i32::from(be_i16(b, 2)?);
    let sign = be_i16(b, 4)? as u16;
    let dscale = be_i16(b, 6)? as usize;
    match sign {
        0xC000 => return Some(Cell::Float(f64::NAN)),
        0xD000 => return Some(Cell::Float(f64::INFINITY)),
        0xF000 => return Some(Cell::Float(f64::NEG_INFINITY)),
        _ => {}
    }
    let digits: Vec<i16> = (0..ndigits)
        .map(|i| be_i16(b, 8 + 2 * i))
        .collect::<Option<_>>()?;
    let mut out = String::new();
    if sign == 0x4000 {
        out.push('-');
    }
    if weight < 0 {
        out.push('0');
    } else {
        for i in 0..=weight as usize {
            let d = digits.get(i).copied().unwrap_or(0);
            if i == 0 {
                out.push_str(&d.to_string());
            } else {
                out.push_str(&format!("{d:04}"));
            }
        }
    }
    if dscale > 0 {
        let mut frac = String::new();
        let mut i = weight + 1;
        while frac.len() < dscale {
            let d = if i < 0 {
                0
            } else {
                digits.get(i as usize).copied().unwrap_or(0)
            };
            frac.push_str(&format!("{d:04}"));
            i += 1;
        }
        frac.truncate(dscale);
        out.push('.');
        out.push_str(&frac);
    }
    Some(Cell::Decimal(out))
}

fn time_of_day(us: i64) -> String {
    let (secs, micros) = (us / 1_000_000, us % 1_000_000);
    let base = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if micros == 0 {
        base
    } else {
        format!("{base}.{micros:06}")
    }
}

/// An interval as PostgreSQL prints it (`1 year 2 mons 3 days 04:05:06`).
fn interval(us: i64, days: i32, months: i32) -> String {
    let mut parts = Vec::new();
    let (years, mons) = (months / 12, months % 12);
    let unit =
        |n: i32, one: &str, many: &str| format!("{n} {}", if n.abs() == 1 { one } else { many });
    if years != 0 {
        parts.push(unit(years, "year", "years"));
    }
    if mons != 0 {
        parts.push(unit(mons, "mon", "mons"));
    }
    if days != 0 {
        parts.push(unit(days, "day", "days"));
    }
    if us != 0 || parts.is_empty() {
        let sign = if us < 0 { "-" } else { "" };
        parts.push(format!("{sign}{}", time_of_day(us.abs())));
    }
    parts.join(" ")
}

fn inet(b: &[u8], cidr: bool) -> Option<String> {
    let (family, bits, len) = (*b.first()?, *b.get(1)?, *b.get(3)? as usize);
    let addr = b.get(4..4 + len)?;
    let (text, full) = match family {
        2 => (
            std::net::Ipv4Addr::from(<[u8; 4]>::try_from(addr).ok()?).to_string(),
            32,
        ),
        _ => (
            std::net::Ipv6Addr::from(<[u8; 16]>::try_from(addr).ok()?).to_string(),
            128,
        ),
    };
    Some(if cidr || bits != full {
        format!("{text}/{bits}")
    } else {
        text
    })
}

/// An array's binary form: dimensions, then the elements (nested lists for several).
fn array(member: &Type, b: &[u8], zones: &Zones) -> Option<Cell> {
    let ndim = be_i32(b, 0)? as usize;
    if ndim == 0 {
        return Some(Cell::Array(Vec::new()));
    }
    let dims: Vec<usize> = (0..ndim)
        .map(|i| be_i32(b, 12 + 8 * i).map(|d| d.max(0) as usize))
        .collect::<Option<_>>()?;
    let mut at = 12 + 8 * ndim;
    let mut flat = Vec::new();
    let total: usize = dims.iter().product();
    for _ in 0..total {
        let len = be_i32(b, at)?;
        at += 4;
        if len < 0 {
            flat.push(Cell::Null);
            continue;
        }
        let bytes = b.get(at..at + len as usize)?;
        at += len as usize;
        flat.push(decode(member, bytes, zones).unwrap_or(Cell::Null));
    }
    // Fold the flat list into nested lists, innermost dimension first.
    for &d in dims.iter().skip(1).rev() {
        let mut grouped = Vec::new();
        let mut it = flat.into_iter();
        loop {
            let chunk: Vec<Cell> = it.by_ref().take(d).collect();
            if chunk.is_empty() {
                break;
            }
            grouped.push(Cell::Array(chunk));
        }
        flat = grouped;
    }
    Some(Cell::Array(flat))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(ndigits: i16, weight: i16, sign: u16, dscale: i16, digits: &[i16]) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [ndigits, weight, sign as i16, dscale] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        for d in digits {
            b.extend_from_slice(&d.to_be_bytes());
        }
        b
    }

    #[test]
    fn numerics() {
        let d = |b: Vec<u8>| match numeric(&b).unwrap() {
            Cell::Decimal(s) => s,
            other => panic!("{other:?}"),
        };
        assert_eq!(d(num(2, 0, 0, 6, &[95, 6700])), "95.670000");
        assert_eq!(d(num(3, 1, 0x4000, 2, &[1, 2345, 6700])), "-12345.67");
        assert_eq!(d(num(1, -1, 0, 4, &[5])), "0.0005");
        assert_eq!(d(num(1, -2, 0, 6, &[1200])), "0.000012");
        assert_eq!(d(num(0, 0, 0, 0, &[])), "0");
        assert_eq!(d(num(1, 1, 0, 0, &[7])), "70000");
        assert_eq!(
            interval(3_600_000_000 + 5_000_000, 3, 14),
            "1 year 2 mons 3 days 01:00:05"
        );
        assert_eq!(
            inet(&[2, 32, 0, 4, 10, 0, 0, 1], false).unwrap(),
            "10.0.0.1"
        );
        assert_eq!(
            inet(&[2, 24, 1, 4, 10, 0, 0, 0], true).unwrap(),
            "10.0.0.0/24"
        );
    }
}
