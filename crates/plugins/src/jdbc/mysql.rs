//! MySQL and MariaDB through the `mysql` crate: a statement's rows over the text protocol,
//! each column read by its declared type into a [`Cell`].
//!
//! Rows stream as the server sends them (`jdbc_fetch_size` has nothing to ask for). Types map
//! as Connector/J and Sequel give them to Logstash: integers (BIGINT UNSIGNED past `i64`
//! too), FLOAT/DOUBLE as floats, DECIMAL as an exact decimal, `TINYINT(1)` and `BIT(1)` as
//! booleans (Connector/J's `tinyInt1isBit`), DATE, DATETIME and TIMESTAMP as instants (read
//! in `jdbc_default_timezone` or the machine's zone; the zero date is null, as Sequel asks
//! with `zeroDateTimeBehavior=convertToNull`), YEAR as an integer, TIME, text, JSON, ENUM and
//! SET as text, binary strings as their bytes read as UTF-8.

use std::sync::Arc;

use mysql::consts::ColumnType;
use mysql::prelude::Queryable;

use super::connection::{Flow, JdbcError, RowSink};
use super::value::{parse_naive, Cell, Zones};

pub fn query(
    conn: &mut mysql::Conn,
    sql: &str,
    zones: &Zones,
    row: &mut RowSink<'_>,
) -> Result<bool, JdbcError> {
    let statement = |e: mysql::Error| JdbcError::Statement(e.to_string());
    let result = conn.query_iter(sql).map_err(statement)?;
    let mut names: Option<Arc<[String]>> = None;
    for r in result {
        let r = r.map_err(statement)?;
        let columns = r.columns_ref();
        let names = names.get_or_insert_with(|| {
            columns
                .iter()
                .map(|c| c.name_str().into_owned())
                .collect::<Vec<_>>()
                .into()
        });
        let cells = (0..r.len())
            .map(|i| match r.as_ref(i) {
                None | Some(mysql::Value::NULL) => Cell::Null,
                Some(mysql::Value::Bytes(b)) => decode(&columns[i], b, zones),
                // The text protocol sends everything else as bytes; kept for completeness.
                Some(v) => Cell::Text(v.as_sql(true).trim_matches('\'').to_owned()),
            })
            .collect();
        if row(names, cells) == Flow::Stop {
            return Ok(false);
        }
    }
    Ok(true)
}

fn decode(col: &mysql::Column, b: &[u8], zones: &Zones) -> Cell {
    let text = || String::from_utf8_lossy(b).into_owned();
    match col.column_type() {
        ColumnType::MYSQL_TYPE_TINY if col.column_length() == 1 => Cell::Bool(b != b"0"),
        ColumnType::MYSQL_TYPE_TINY
        | ColumnType::MYSQL_TYPE_SHORT
        | ColumnType::MYSQL_TYPE_INT24
        | ColumnType::MYSQL_TYPE_LONG
        | ColumnType::MYSQL_TYPE_LONGLONG
        | ColumnType::MYSQL_TYPE_YEAR => {
            let t = text();
            match t.parse::<i128>() {
                Ok(i) => Cell::Int(i),
                Err(_) => Cell::Text(t),
            }
        }
        ColumnType::MYSQL_TYPE_FLOAT | ColumnType::MYSQL_TYPE_DOUBLE => {
            let t = text();
            match t.parse::<f64>() {
                Ok(f) => Cell::Float(f),
                Err(_) => Cell::Text(t),
            }
        }
        ColumnType::MYSQL_TYPE_DECIMAL | ColumnType::MYSQL_TYPE_NEWDECIMAL => Cell::Decimal(text()),
        ColumnType::MYSQL_TYPE_BIT => {
            if col.column_length() == 1 {
                Cell::Bool(b.iter().any(|x| *x != 0))
            } else {
                Cell::Int(b.iter().fold(0i128, |acc, x| (acc << 8) | i128::from(*x)))
            }
        }
        ColumnType::MYSQL_TYPE_DATE | ColumnType::MYSQL_TYPE_NEWDATE => {
            let t = text();
            match parse_naive(&t) {
                Some(dt) => super::value::date_to_instant(dt.date()).map_or(Cell::Null, Cell::Time),
                None => Cell::Null, // 0000-00-00
            }
        }
        ColumnType::MYSQL_TYPE_DATETIME
        | ColumnType::MYSQL_TYPE_DATETIME2
        | ColumnType::MYSQL_TYPE_TIMESTAMP
        | ColumnType::MYSQL_TYPE_TIMESTAMP2 => {
            let t = text();
            parse_naive(&t)
                .and_then(|dt| zones.naive_to_instant(dt))
                .map_or(Cell::Null, Cell::Time)
        }
        _ => Cell::Text(text()),
    }
}
