//! SQLite through rusqlite (SQLite compiled in): `jdbc:sqlite:` files for the jdbc input and
//! filters, and the in-memory database the jdbc_static filter keeps its local tables in.
//!
//! A value is read by its storage class (integer, real, text, blob, null) and its column's
//! declared type, as sqlite-jdbc and Sequel read it for Logstash: text in a column declared
//! DATE, DATETIME or TIMESTAMP that reads as a time becomes an instant (in
//! `jdbc_default_timezone` or the machine's zone; the jdbc_static tables keep UTC), an integer
//! in a BOOLEAN column a boolean; blobs become their bytes read as UTF-8.

use std::sync::Arc;
use std::time::Duration;

use rusqlite::types::ValueRef;

use super::connection::{Flow, JdbcError, RowSink};
use super::value::{parse_naive, Cell, Zones};

/// Opens a database file (`:memory:` for a private in-memory one).
pub fn open(path: &str) -> rusqlite::Result<rusqlite::Connection> {
    let conn = if path == ":memory:" {
        rusqlite::Connection::open_in_memory()?
    } else {
        rusqlite::Connection::open(path)?
    };
    conn.busy_timeout(Duration::from_secs(5))?;
    Ok(conn)
}

/// How a column's declared type asks its values to be read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Declared {
    Plain,
    Time,
    Bool,
}

pub fn declared(decl: Option<&str>) -> Declared {
    let Some(d) = decl else {
        return Declared::Plain;
    };
    let d = d.to_ascii_uppercase();
    if d.contains("BOOL") {
        Declared::Bool
    } else if d.contains("DATE") || d.contains("TIMESTAMP") {
        Declared::Time
    } else {
        Declared::Plain
    }
}

/// One value by its storage class and its column's declared type.
pub fn cell(v: ValueRef<'_>, declared: Declared, zones: &Zones) -> Cell {
    match v {
        ValueRef::Null => Cell::Null,
        ValueRef::Integer(i) if declared == Declared::Bool => Cell::Bool(i != 0),
        ValueRef::Integer(i) => Cell::Int(i.into()),
        ValueRef::Real(f) => Cell::Float(f),
        ValueRef::Text(t) => {
            let s = String::from_utf8_lossy(t);
            if declared == Declared::Time {
                if let Some(at) = parse_naive(&s).and_then(|dt| zones.naive_to_instant(dt)) {
                    return Cell::Time(at);
                }
                if let Ok(at) = s.trim().parse::<jiff::Timestamp>() {
                    return Cell::Time(at);
                }
            }
            Cell::Text(s.into_owned())
        }
        ValueRef::Blob(b) => Cell::Text(String::from_utf8_lossy(b).into_owned()),
    }
}

/// The names and declared types of a prepared statement's columns.
pub fn columns(stmt: &rusqlite::Statement<'_>) -> (Arc<[String]>, Vec<Declared>) {
    let names: Vec<String> = stmt.column_names().map(str::to_owned).collect();
    let types = stmt.columns().map(|c| declared(c.decl_type())).collect();
    (names.into(), types)
}

pub fn query(
    conn: &mut rusqlite::Connection,
    sql: &str,
    zones: &Zones,
    row: &mut RowSink<'_>,
) -> Result<bool, JdbcError> {
    let statement = |e: rusqlite::Error| JdbcError::Statement(e.to_string());
    let mut stmt = conn.prepare(sql).map_err(statement)?;
    let (names, types) = columns(&stmt);
    let mut rows = stmt.query([]).map_err(statement)?;
    while let Some(r) = rows.next().map_err(statement)? {
        let cells = (0..names.len())
            .map(|i| {
                r.get_ref(i)
                    .map(|v| cell(v, types[i], zones))
                    .unwrap_or(Cell::Null)
            })
            .collect();
        if row(&names, cells) == Flow::Stop {
            return Ok(false);
        }
    }
    Ok(true)
}
