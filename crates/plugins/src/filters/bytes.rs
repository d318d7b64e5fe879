//! `bytes`: reads a size such as `"1.5 KB"`, `"10M"` or `"3,072 b"` into a number of bytes,
//! as logstash-filter-bytes does: digits with `_`, `,`, `.` or space as group separators
//! and `decimal_separator` (`.` or `,`) once at most, then an optional unit prefix
//! (`k`, `m`, `g`, `t`, `p`, `e`, any case) and `b`. `conversion_method` `binary` (default:
//! powers of 1024) or `metric` (powers of 1000); the result is rounded to an integer. A
//! missing or non-string source, or text that is not a size, tags `tag_on_failure`
//! (`_bytesparsefailure`).

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

#[derive(Clone)]
pub struct Bytes {
    source: FieldRef,
    target: FieldRef,
    base: f64,
    decimal: char,
    tag_on_failure: Vec<String>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let source = opts.string_or("source", "message")?;
    let source = FieldRef::parse(&source).map_err(|e| opts.error("source", e.to_string()))?;
    let Some(target) = opts.string("target")? else {
        return Err(opts.plugin_error(
            "the bytes filter needs `target`, the field to store the number of bytes in",
        ));
    };
    let target = FieldRef::parse(&target).map_err(|e| opts.error("target", e.to_string()))?;
    let base = match opts
        .choice("conversion_method", &["binary", "metric"], "binary")?
        .as_str()
    {
        "metric" => 1000.0,
        _ => 1024.0,
    };
    let decimal = match opts.choice("decimal_separator", &[".", ","], ".")?.as_str() {
        "," => ',',
        _ => '.',
    };
    let tag_on_failure = opts
        .string_list("tag_on_failure")?
        .unwrap_or_else(|| vec!["_bytesparsefailure".to_owned()]);
    Ok(Box::new(Bytes {
        source,
        target,
        base,
        decimal,
        tag_on_failure,
    }))
}

impl Bytes {
    fn parse(&self, text: &str) -> Option<i64> {
        let text = text.trim();
        // The unit: an optional prefix letter, then an optional `b`, at the end.
        let mut rest = text;
        if rest.ends_with(['b', 'B']) {
            rest = &rest[..rest.len() - 1];
        }
        let power = match rest.chars().last().map(|c| c.to_ascii_lowercase()) {
            Some(c @ ('k' | 'm' | 'g' | 't' | 'p' | 'e')) => {
                rest = &rest[..rest.len() - 1];
                "kmgtpe".find(c).map_or(0, |i| i as i32 + 1)
            }
            _ => 0,
        };
        let number = rest.trim_end();
        let allowed = |c: char| c.is_ascii_digit() || " _,.".contains(c) || c == self.decimal;
        if !number.chars().all(allowed) || number.matches(self.decimal).count() > 1 {
            return None;
        }
        let normalized: String = number
            .chars()
            .filter(|&c| c.is_ascii_digit() || c == self.decimal)
            .map(|c| if c == self.decimal { '.' } else { c })
            .collect();
        if normalized.is_empty() {
            return None;
        }
        // Ruby's `to_f`: the leading number ("." alone is 0).
        let value: f64 = if normalized == "." {
            0.0
        } else {
            normalized.parse().ok()?
        };
        Some((value * self.base.powi(power)).round() as i64)
    }
}

impl Filter for Bytes {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let parsed = match event.get(&self.source) {
            Some(Value::String(s)) => self.parse(s),
            _ => None,
        };
        match parsed {
            Some(n) => {
                event.set(&self.target, Value::Int(n));
                true
            }
            None => {
                for t in &self.tag_on_failure {
                    event.add_tag(t);
                }
                false
            }
        }
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}
