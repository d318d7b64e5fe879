//! `csv`: one line of CSV per event, as logstash-codec-csv does.
//!
//! Decoding reads the text as the csv filter does ([`crate::csv`]: `separator`, `quote_char`,
//! `columns`, `autogenerate_column_names`, `skip_empty_columns`, `convert`,
//! `autodetect_column_names`: the first line names the columns and makes no event), after
//! `charset`; the columns go under `target` or at the top level, and with ECS the text to
//! `[event][original]`. A line that is not CSV becomes `message` tagged `_csvparsefailure`.
//! Encoding writes `columns` (or every top-level field), quoted as Ruby's CSV writes them;
//! with `include_headers` the first line written is the column names.

use std::collections::HashMap;

use sluice_event::{Event, FieldRef, Map, Value};
use sluice_pipeline::{Codec, ConfigError, Options};

use super::charset::Charset;
use super::{set_original, targeted_event};
use crate::csv::{column_name, generate_line, header_names, parse_line, Convert};
use crate::ecs::Ecs;

#[derive(Clone)]
pub struct Csv {
    columns: Vec<String>,
    separator: String,
    quote: Option<char>,
    include_headers: bool,
    autogenerate: bool,
    skip_empty_columns: bool,
    autodetect: bool,
    convert: HashMap<String, Convert>,
    charset: Charset,
    target: Option<FieldRef>,
    ecs: Ecs,
    /// Encoding: the columns as references, made once.
    column_refs: Vec<FieldRef>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Codec>, ConfigError> {
    let columns = opts.string_list("columns")?.unwrap_or_default();
    let separator = opts.string_or("separator", ",")?;
    if separator.is_empty() {
        return Err(opts.error("separator", "must not be empty"));
    }
    let quote = match opts.string_or("quote_char", "\"")?.as_str() {
        "\\x00" | "\0" => None,
        q if q.chars().count() == 1 => q.chars().next(),
        q => return Err(opts.error("quote_char", format!("must be one character, got {q:?}"))),
    };
    let mut convert = HashMap::new();
    for (column, kind) in opts.string_hash("convert")?.unwrap_or_default() {
        let c = Convert::parse(&kind).ok_or_else(|| {
            opts.error("convert", format!("Invalid conversion types: {kind} (expected integer, float, date, date_time or boolean)"))
        })?;
        convert.insert(column, c);
    }
    let target = match opts.string("target")? {
        Some(t) => Some(FieldRef::parse(&t).map_err(|e| opts.error("target", e.to_string()))?),
        None => None,
    };
    let column_refs = columns
        .iter()
        .map(|c| FieldRef::parse(c).map_err(|e| opts.error("columns", e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Box::new(Csv {
        columns,
        separator,
        quote,
        include_headers: opts.boolean_or("include_headers", false)?,
        autogenerate: opts.boolean_or("autogenerate_column_names", true)?,
        skip_empty_columns: opts.boolean_or("skip_empty_columns", false)?,
        autodetect: opts.boolean_or("autodetect_column_names", false)?,
        convert,
        charset: Charset::from_options(opts)?,
        target,
        ecs: Ecs::from_options(opts)?,
        column_refs,
    }))
}

impl Codec for Csv {
    fn decode(&mut self, data: &[u8], out: &mut Vec<Event>) {
        let text = self.charset.decode(data).into_owned();
        let values = match parse_line(&text, &self.separator, self.quote) {
            Ok(Some(v)) => v,
            Ok(None) => return,
            Err(e) => {
                tracing::error!(error = %e, data = %text, "csv codec: CSV parse failure. Falling back to plain-text");
                let mut event = Event::with_message(text.as_str());
                event.add_tag("_csvparsefailure");
                out.push(event);
                return;
            }
        };
        if self.autodetect && self.columns.is_empty() {
            self.columns = header_names(&values);
            return;
        }
        let mut decoded = Map::new();
        for (i, value) in values.into_iter().enumerate() {
            if self.skip_empty_columns && value.as_deref().is_none_or(str::is_empty) {
                continue;
            }
            let Some(name) = column_name(&self.columns, i, self.autogenerate) else {
                continue;
            };
            let value = match self.convert.get(&name) {
                // Ruby's boolean converter raises on an empty column: kept as null here.
                Some(c) => c.apply(value.clone()).unwrap_or(Value::Null),
                None => value.map_or(Value::Null, |s| Value::String(s.into())),
            };
            decoded.insert(name.into(), value);
        }
        let mut event = targeted_event(decoded, self.target.as_ref());
        if self.ecs.enabled() {
            set_original(&mut event, &text);
        }
        out.push(event);
    }

    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        let text = |v: Option<&Value>| match v {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.to_display_string()),
        };
        if self.include_headers {
            let header: Vec<Option<String>> = if self.columns.is_empty() {
                event.fields().keys().map(|k| Some(k.to_string())).collect()
            } else {
                self.columns.iter().cloned().map(Some).collect()
            };
            generate_line(&header, &self.separator, self.quote, out);
            self.include_headers = false;
        }
        let values: Vec<Option<String>> = if self.columns.is_empty() {
            event.fields().values().map(|v| text(Some(v))).collect()
        } else {
            self.column_refs
                .iter()
                .map(|r| text(event.get(r)))
                .collect()
        };
        generate_line(&values, &self.separator, self.quote, out);
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        Box::new(self.clone())
    }
}
