//! `split`: one event per part of a field, as logstash-filter-split does.
//!
//! A string `field` (default `message`) is cut at each `terminator` (default `"\n"`; a single
//! space cuts at runs of whitespace, as Ruby's `String#split(" ")`); an array is taken item by
//! item. Each part that is not empty or null becomes a copy of the event with the part in
//! `target` (default: `field` itself; without `target` an array field is removed from the
//! copies first). The original is dropped. A string with no terminator passes unchanged (and
//! unmatched: `add_tag` and the like do not apply); an empty string yields nothing. Any other
//! value, or no value, tags `_split_type_failure`. The common options apply to the copies.

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

const TYPE_FAILURE: &str = "_split_type_failure";

#[derive(Clone)]
pub struct Split {
    field: FieldRef,
    target: Option<FieldRef>,
    terminator: String,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let reference = |opts: &mut Options, name: &str, text: &str| {
        FieldRef::parse(text).map_err(|e| opts.error(name, e.to_string()))
    };
    let field = opts.string_or("field", "message")?;
    let field = reference(opts, "field", &field)?;
    let target = match opts.string("target")? {
        Some(t) => Some(reference(opts, "target", &t)?),
        None => None,
    };
    let terminator = opts.string_or("terminator", "\n")?;
    if terminator.is_empty() {
        return Err(opts.error("terminator", "must not be empty"));
    }
    Ok(Box::new(Split {
        field,
        target,
        terminator,
    }))
}

/// Ruby's `text.split(terminator, -1)`: empty text has no pieces; a single space splits
/// at runs of whitespace after skipping leading whitespace (a trailing run leaves one empty
/// piece).
fn ruby_split<'a>(text: &'a str, terminator: &str) -> Vec<&'a str> {
    if text.is_empty() {
        return Vec::new();
    }
    if terminator != " " {
        return text.split(terminator).collect();
    }
    let space = |c: char| matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r');
    let rest = text.trim_start_matches(space);
    let mut pieces: Vec<&str> = rest.split(space).filter(|p| !p.is_empty()).collect();
    if !rest.is_empty() && rest.ends_with(space) {
        pieces.push("");
    }
    pieces
}

impl Filter for Split {
    fn filter(&mut self, event: &mut Event, emit: &mut Vec<Event>) -> bool {
        let parts: Vec<Value> = match event.get(&self.field) {
            Some(Value::Array(_)) if self.target.is_none() => match event.remove(&self.field) {
                Some(Value::Array(items)) => items,
                _ => unreachable!("an array was just read there"),
            },
            Some(Value::Array(items)) => items.clone(),
            Some(Value::String(s)) => {
                let pieces = ruby_split(s, &self.terminator);
                if pieces.len() == 1 {
                    return false;
                }
                pieces
                    .into_iter()
                    .map(|p| Value::String(p.into()))
                    .collect()
            }
            other => {
                tracing::warn!(
                    field = %self.field,
                    value = ?other,
                    "split: only strings and arrays can be split"
                );
                event.add_tag(TYPE_FAILURE);
                return false;
            }
        };
        let target = self.target.as_ref().unwrap_or(&self.field);
        for part in parts {
            let empty = match &part {
                Value::Null => true,
                Value::String(s) => s.is_empty(),
                _ => false,
            };
            if !empty {
                let mut copy = event.clone();
                copy.set(target, part);
                emit.push(copy);
            }
        }
        event.cancel();
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }

    fn matches_new_events_only(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::ruby_split;

    #[test]
    fn splits_as_ruby() {
        assert_eq!(ruby_split("a\nb\n", "\n"), ["a", "b", ""]);
        assert_eq!(ruby_split("", "\n"), Vec::<&str>::new());
        assert_eq!(ruby_split("abc", ","), ["abc"]);
        assert_eq!(ruby_split(" a  b", " "), ["a", "b"]);
        assert_eq!(ruby_split(" a", " "), ["a"]);
        assert_eq!(ruby_split("a\tb ", " "), ["a", "b", ""]);
        assert_eq!(ruby_split("   ", " "), Vec::<&str>::new());
    }
}
