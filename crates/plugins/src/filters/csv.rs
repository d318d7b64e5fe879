//! `csv`: splits a field holding one line of CSV into fields, as logstash-filter-csv does.
//!
//! The line is read as Ruby's `CSV.parse_line` reads it ([`crate::csv`]): `separator` (any
//! string, default `,`), `quote_char` (default `"`; `"\x00"` reads quotes as text). Column `i`
//! is named by `columns[i]`, else `column<i+1>` (or skipped, with
//! `autogenerate_column_names => false`); a name in brackets is a nested reference. Values
//! go under `target` when set (`[target][name]`), else at the top level; an empty unquoted
//! column is null, or not set with `skip_empty_columns`. `convert` converts columns by name
//! (`integer`, `float`, `date`, `date_time`, `boolean`, as the csv library does).
//!
//! - Empty text: tagged `_csvskippedemptyfield` with `skip_empty_rows`, else (as Logstash,
//!   which fails on the missing row) `_csvparsefailure`.
//! - Text that is not CSV (a stray quote, an unclosed one), a source that is not a string, or
//!   a column name that is not a field reference: `_csvparsefailure`, nothing more set.
//! - `skip_header`: a line equal to `columns` is dropped. `autodetect_column_names`: the first
//!   line read (by any worker: the columns are shared) names the columns and is dropped. As
//!   in Logstash, that needs `pipeline.workers: 1` to be the file's first line.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

use crate::csv::{column_name, header_names, parse_line, Convert};

const PARSE_FAILURE: &str = "_csvparsefailure";
const EMPTY_ROW: &str = "_csvskippedemptyfield";

#[derive(Clone)]
pub struct Csv {
    source: FieldRef,
    /// `[target]`, or empty.
    target: String,
    separator: String,
    quote: Option<char>,
    columns: Arc<Vec<String>>,
    /// With `autodetect_column_names` and no `columns`: the header, once read.
    detected: Option<Arc<OnceLock<Arc<Vec<String>>>>>,
    autogenerate: bool,
    skip_header: bool,
    skip_empty_columns: bool,
    skip_empty_rows: bool,
    convert: Arc<HashMap<String, Convert>>,
    /// What to do with column `i`, worked out once: `None` to skip it.
    plan: Vec<Option<Column>>,
    /// The column names `plan` was made from.
    plan_of: Arc<Vec<String>>,
}

#[derive(Clone)]
struct Column {
    /// `None`: the name is not a valid field reference.
    field: Option<FieldRef>,
    convert: Option<Convert>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let source = opts.string_or("source", "message")?;
    let source = FieldRef::parse(&source).map_err(|e| opts.error("source", e.to_string()))?;
    let target = match opts.string("target")? {
        Some(t) => {
            FieldRef::parse(&t).map_err(|e| opts.error("target", e.to_string()))?;
            if t.starts_with('[') {
                t
            } else {
                format!("[{t}]")
            }
        }
        None => String::new(),
    };
    let columns = opts.string_list("columns")?.unwrap_or_default();
    let separator = opts.string_or("separator", ",")?;
    if separator.is_empty() {
        return Err(opts.error("separator", "must not be empty"));
    }
    let quote_text = opts.string_or("quote_char", "\"")?;
    let quote = match quote_text.as_str() {
        "\\x00" | "\0" => None,
        q => {
            let mut chars = q.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Some(c),
                _ => {
                    return Err(
                        opts.error("quote_char", format!("must be one character, got {q:?}"))
                    )
                }
            }
        }
    };
    if quote.is_some_and(|q| separator.contains(q)) {
        return Err(opts.error("quote_char", "must not be part of the separator"));
    }
    let mut convert = HashMap::new();
    let mut bad = Vec::new();
    for (column, kind) in opts.string_hash("convert")?.unwrap_or_default() {
        match Convert::parse(&kind) {
            Some(c) => {
                convert.insert(column, c);
            }
            None => bad.push(kind),
        }
    }
    if !bad.is_empty() {
        bad.sort();
        bad.dedup();
        return Err(opts.error(
            "convert",
            format!(
                "Invalid conversion types: {} (expected integer, float, date, date_time or boolean)",
                bad.join(", ")
            ),
        ));
    }
    let autodetect = opts.boolean_or("autodetect_column_names", false)?;
    let csv = Csv {
        source,
        target,
        separator,
        quote,
        detected: (autodetect && columns.is_empty()).then(Default::default),
        columns: Arc::new(columns),
        autogenerate: opts.boolean_or("autogenerate_column_names", true)?,
        skip_header: opts.boolean_or("skip_header", false)?,
        skip_empty_columns: opts.boolean_or("skip_empty_columns", false)?,
        skip_empty_rows: opts.boolean_or("skip_empty_rows", false)?,
        convert: Arc::new(convert),
        plan: Vec::new(),
        plan_of: Arc::default(),
    };
    crate::ecs::Ecs::from_options(opts)?;
    Ok(Box::new(csv))
}

impl Csv {
    /// The column names now: configured, or detected from the header.
    fn current_columns(&self) -> Arc<Vec<String>> {
        match self.detected.as_ref().and_then(|d| d.get()) {
            Some(c) => Arc::clone(c),
            None => Arc::clone(&self.columns),
        }
    }

    /// What to do with column `i` of `columns`.
    fn column(&mut self, columns: &Arc<Vec<String>>, i: usize) -> Option<&Column> {
        if !Arc::ptr_eq(columns, &self.plan_of) {
            self.plan.clear();
            self.plan_of = Arc::clone(columns);
        }
        while self.plan.len() <= i {
            let n = self.plan.len();
            let name = column_name(columns, n, self.autogenerate);
            let column = name.map(|name| {
                let text = if name.starts_with('[') {
                    format!("{}{name}", self.target)
                } else {
                    format!("{}[{name}]", self.target)
                };
                Column {
                    field: FieldRef::parse(&text).ok(),
                    convert: self.convert.get(&name).copied(),
                }
            });
            self.plan.push(column);
        }
        self.plan[i].as_ref()
    }

    fn set_columns(&mut self, event: &mut Event, values: Vec<Option<String>>) -> bool {
        let columns = self.current_columns();
        for (i, value) in values.into_iter().enumerate() {
            if self.skip_empty_columns && value.as_deref().is_none_or(str::is_empty) {
                continue;
            }
            let Some(column) = self.column(&columns, i) else {
                continue;
            };
            let value = match column.convert {
                Some(c) => match c.apply(value) {
                    Some(v) => v,
                    None => return false,
                },
                None => value.map_or(Value::Null, |s| Value::String(s.into())),
            };
            let Some(field) = &column.field else {
                return false;
            };
            event.set(field, value);
        }
        true
    }
}

impl Filter for Csv {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let text = match event.get(&self.source) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => return false,
            Some(Value::String(s)) => s.to_string(),
            Some(other) => {
                tracing::warn!(field = %self.source, value = ?other, "csv: error parsing csv: the source is not a string");
                event.add_tag(PARSE_FAILURE);
                return false;
            }
        };
        let values = match parse_line(&text, &self.separator, self.quote) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(field = %self.source, source = %text, error = %e, "csv: error parsing csv");
                event.add_tag(PARSE_FAILURE);
                return false;
            }
        };
        if let Some(detected) = &self.detected {
            if detected.get().is_none() {
                let header = header_names(values.as_deref().unwrap_or_default());
                if detected.set(Arc::new(header)).is_ok() {
                    event.cancel();
                    return false;
                }
            }
        }
        let Some(values) = values else {
            if self.skip_empty_rows {
                event.add_tag(EMPTY_ROW);
            } else {
                tracing::warn!(field = %self.source, "csv: error parsing csv: an empty line");
                event.add_tag(PARSE_FAILURE);
            }
            return false;
        };
        let columns = self.current_columns();
        if self.skip_header
            && !columns.is_empty()
            && values.len() == columns.len()
            && values
                .iter()
                .zip(columns.iter())
                .all(|(v, c)| v.as_deref() == Some(c.as_str()))
        {
            event.cancel();
            return false;
        }
        if !self.set_columns(event, values) {
            tracing::warn!(field = %self.source, source = %text, "csv: error parsing csv: a column could not be set");
            event.add_tag(PARSE_FAILURE);
            return false;
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}
