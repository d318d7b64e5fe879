//! `csv`: the file output (every option of it: `path` with references, stale files closed,
//! batches written whole) writing each event as one CSV row, as Logstash's csv output does.
//!
//! The row holds `fields` in order, each read by field reference: a missing one is empty, an
//! object is written as its JSON, anything else as its text. `csv_options` are Ruby's `to_csv`
//! options (`col_sep`, `row_sep`, `quote_char`, `force_quotes`, `quote_empty`); others are
//! refused. With `spreadsheet_safe` (the default) a text that a spreadsheet would run as a
//! formula (starting with `=`, `+`, `-` or `@`) gets a leading `'`.

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{Codec, ConfigError, Options, Output};

use crate::csv::RowFormat;

#[derive(Clone)]
struct Rows {
    fields: Vec<FieldRef>,
    format: RowFormat,
    spreadsheet_safe: bool,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let names = opts.string_list("fields")?.ok_or_else(|| {
        opts.plugin_error("missing required setting \"fields\" for output plugin \"csv\"")
    })?;
    let fields = names
        .iter()
        .map(|f| FieldRef::parse(f).map_err(|e| opts.error("fields", e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    let mut format = RowFormat::default();
    for (key, value) in opts.string_hash("csv_options")?.unwrap_or_default() {
        let flag = || match value.as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(opts.error("csv_options", format!("{key} must be true or false"))),
        };
        match key.as_str() {
            "col_sep" if !value.is_empty() => format.sep = value,
            "row_sep" => format.row_sep = value,
            "quote_char" => {
                let mut chars = value.chars();
                format.quote = match (chars.next(), chars.next()) {
                    (Some(q), None) => Some(q),
                    _ => {
                        return Err(opts.error(
                            "csv_options",
                            format!("quote_char must be one character, got {value:?}"),
                        ))
                    }
                }
            }
            "force_quotes" => format.force_quotes = flag()?,
            "quote_empty" => format.quote_empty = flag()?,
            "col_sep" => return Err(opts.error("csv_options", "col_sep must not be empty")),
            other => {
                return Err(opts.error(
                    "csv_options",
                    format!("{other:?} is not supported (col_sep, row_sep, quote_char, force_quotes and quote_empty are)"),
                ))
            }
        }
    }
    let spreadsheet_safe = opts.boolean_or("spreadsheet_safe", true)?;
    // Logstash's csv output takes a codec and writes without it: the same here.
    opts.codec("plain")?;
    let rows = Rows {
        fields,
        format,
        spreadsheet_safe,
    };
    super::file::build_with(opts, Box::new(rows))
}

impl Codec for Rows {
    fn decode(&mut self, _data: &[u8], _out: &mut Vec<Event>) {}

    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        let values: Vec<Option<String>> = self
            .fields
            .iter()
            .map(|f| match event.get(f) {
                None | Some(Value::Null) => None,
                Some(v @ Value::Object(_)) => Some(sluice_event::json::to_string(v)),
                Some(Value::Array(items)) => Some(inspect(items)),
                Some(Value::String(s))
                    if self.spreadsheet_safe && s.starts_with(['=', '+', '-', '@']) =>
                {
                    Some(format!("'{s}"))
                }
                Some(v) => Some(v.to_display_string()),
            })
            .collect();
        self.format.write(&values, out);
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        Box::new(self.clone())
    }
}

/// A list as Ruby's `Array#to_s` prints it: `[1, "a", [2]]`.
fn inspect(items: &[Value]) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|v| match v {
            Value::Array(inner) => inspect(inner),
            Value::Null => "nil".to_owned(),
            Value::String(_) | Value::Object(_) => sluice_event::json::to_string(v),
            Value::Timestamp(_) => format!("{:?}", v.to_display_string()),
            v => v.to_display_string(),
        })
        .collect();
    format!("[{}]", parts.join(", "))
}
