//! `logfmt`: parses a field written in logfmt (`level=info msg="a b" took=12ms`), as the
//! community plugin logstash-filter-logfmt (on the `logfmt` gem) does. Not in Logstash's
//! bundle, but Prometheus-, Grafana- and Go-style services log this way and configs use it.
//!
//! Options: `source` (required: the field to parse), `target` (default `logfmt`: where the
//! pairs go), `remove_source` (default false: the source is then set to null, as the plugin
//! does). Per event: the text is scanned pair by pair (below); a line without a non-empty
//! `level` is left alone, untouched and not counted as a match (the plugin's own rule), as is
//! a source that is absent or not text. A `stacktrace` value is split into a list (`[a][b]`
//! at `][`, otherwise at commas). Dotted keys nest (`a.b=1` → `[target][a][b]`). Values are
//! the gem's: a bare key (`flag`, `key=` before a space) is `true`, an unquoted integer
//! (`[-+]?[0-9]+`) an integer (`007` → 7), an unquoted decimal number a float, anything else
//! text. A key that is both a value and a parent of dotted keys (`a=1 a.b=2`) fails the
//! line, which is logged and left alone, as in Logstash.
//!
//! The scan is the gem's state machine: a key is a run of characters above space other than
//! `"` and `=`; `key=` then a space gives `true`; an unquoted value runs to the next space or
//! `"` (`=` is part of it: `token=abc==`); a quoted one to the next `"` not after a backslash
//! (`\"` becomes `"`, any other backslash stays), and a quote ending the line is an empty
//! value; anything else between pairs is skipped.

use sluice_event::value::{Key, Map};
use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

#[derive(Clone)]
pub struct Logfmt {
    source: FieldRef,
    target: FieldRef,
    remove_source: bool,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let source = opts
        .string("source")?
        .ok_or_else(|| opts.error("source", "is required (the field holding the logfmt text)"))?;
    let target = opts.string_or("target", "logfmt")?;
    let remove_source = opts.boolean_or("remove_source", false)?;
    let field = |name: &str, value: &str| {
        FieldRef::parse(value).map_err(|e| opts.error(name, e.to_string()))
    };
    Ok(Box::new(Logfmt {
        source: field("source", &source)?,
        target: field("target", &target)?,
        remove_source,
    }))
}

impl Filter for Logfmt {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let Some(Value::String(text)) = event.get(&self.source) else {
            return false;
        };
        let text = text.to_string();
        let pairs = parse(&text);
        let has_level = pairs
            .iter()
            .any(|(k, v)| k == "level" && matches!(v, Value::String(t) if !t.is_empty()));
        if !has_level {
            return false;
        }
        match nest(pairs) {
            Ok(map) => {
                event.set(&self.target, Value::Object(map));
                if self.remove_source {
                    event.set(&self.source, Value::Null);
                }
                true
            }
            Err(why) => {
                tracing::error!(error = %why, data = %text, "logfmt: failed to parse logfmt string");
                false
            }
        }
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}

/// Whether `c` can be part of a key (or start an unquoted value).
fn word(c: char) -> bool {
    c > ' ' && c != '"' && c != '='
}

/// Whether `c` continues an unquoted value (`=` does: `token=abc==`).
fn value_char(c: char) -> bool {
    c > ' ' && c != '"'
}

/// The pairs of a logfmt line, in order (a repeated key keeps its first place, last value).
fn parse(line: &str) -> Vec<(String, Value)> {
    enum State {
        Garbage,
        Key,
        Equal,
        Unquoted,
        Quoted { escaped: bool },
    }
    let mut out: Vec<(String, Value)> = Vec::new();
    let mut places: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut put = |key: &str, value: Value| match places.get(key) {
        Some(&i) => out[i].1 = value,
        None => {
            places.insert(key.to_owned(), out.len());
            out.push((key.to_owned(), value));
        }
    };
    let mut state = State::Garbage;
    let (mut key, mut value) = (String::new(), String::new());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        state = match state {
            State::Garbage if word(c) => {
                key.clear();
                key.push(c);
                State::Key
            }
            State::Garbage => State::Garbage,
            State::Key if word(c) => {
                key.push(c);
                State::Key
            }
            State::Key => {
                put(&key, Value::Bool(true));
                if c == '=' {
                    State::Equal
                } else {
                    State::Garbage
                }
            }
            State::Equal if word(c) => {
                value.clear();
                value.push(c);
                State::Unquoted
            }
            // A quote that is the line's last character: an empty value, as the gem has it.
            State::Equal if c == '"' && chars.peek().is_none() => {
                put(&key, Value::from(""));
                State::Garbage
            }
            State::Equal if c == '"' => {
                value.clear();
                State::Quoted { escaped: false }
            }
            State::Equal => State::Garbage,
            State::Unquoted if value_char(c) => {
                value.push(c);
                State::Unquoted
            }
            State::Unquoted => {
                put(&key, number(&value));
                State::Garbage
            }
            State::Quoted { escaped } => match c {
                '\\' => {
                    value.push('\\');
                    State::Quoted { escaped: true }
                }
                '"' if escaped => {
                    value.pop();
                    value.push('"');
                    State::Quoted { escaped: false }
                }
                '"' => {
                    put(&key, Value::from(std::mem::take(&mut value)));
                    State::Garbage
                }
                c => {
                    value.push(c);
                    State::Quoted { escaped: false }
                }
            },
        };
    }
    // The end of the line ends a key or an unquoted value; an open quote is dropped.
    match state {
        State::Key => put(&key, Value::Bool(true)),
        State::Unquoted => put(&key, number(&value)),
        _ => {}
    }
    out
}

/// An unquoted value as the gem reads it: an integer for `[-+]?[0-9]+` (exact at any size,
/// as Ruby's Bignum), a float for a decimal number a float holds, else the text.
fn number(text: &str) -> Value {
    let digits = crate::numbers::split_sign(text).1;
    let integral = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    // The gem's `[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?`: a decimal number, as Value::decimal reads.
    match Value::decimal(text) {
        Some(v) if integral => v,
        Some(_) => match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Value::Float(f),
            _ => Value::from(text),
        },
        None => Value::from(text),
    }
}

/// The pairs as the plugin nests them: keys split at dots, `stacktrace` split into a list.
fn nest(pairs: Vec<(String, Value)>) -> Result<Map, String> {
    let mut root = Map::new();
    for (key, value) in pairs {
        let value = match (key.as_str(), value) {
            ("stacktrace", Value::String(t)) => {
                // Ruby's `[1..-2]`: without the first and the last character.
                let parts: Vec<&str> = match t.strip_prefix('[') {
                    Some(inner) => {
                        let end = inner.char_indices().next_back().map_or(0, |(i, _)| i);
                        inner[..end].split("][").collect()
                    }
                    None => t.split(',').collect(),
                };
                Value::Array(ruby_split(parts).map(Value::from).collect())
            }
            ("stacktrace", _) => return Err("stacktrace is not text to split".to_owned()),
            (_, v) => v,
        };
        // Ruby's `split('.')`: empty parts dropped from the end.
        let parts: Vec<&str> = ruby_split(key.split('.').collect()).collect();
        let Some((last, parents)) = parts.split_last() else {
            return Err(format!("key {key:?} has no name"));
        };
        let mut at = &mut root;
        for p in parents {
            let slot = at
                .entry(Key::from(*p))
                .or_insert_with(|| Value::Object(Map::new()));
            at = match slot {
                Value::Object(m) => m,
                _ => return Err(format!("{p:?} is a value and the parent of {key:?}")),
            };
        }
        at.insert(Key::from(*last), value);
    }
    Ok(root)
}

/// Ruby's `String#split` drops the empty strings at the end.
fn ruby_split(mut parts: Vec<&str>) -> impl Iterator<Item = &str> {
    while parts.last() == Some(&"") {
        parts.pop();
    }
    parts.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(line: &str) -> serde_json::Value {
        let pairs: Vec<serde_json::Value> = parse(line)
            .into_iter()
            .map(|(k, v)| json!([k, serde_json::to_value(v).unwrap()]))
            .collect();
        serde_json::Value::Array(pairs)
    }

    #[test]
    fn pairs_quotes_bare_keys_and_numbers() {
        assert_eq!(
            p(r#"level=info msg="Request Completed" host= uname= status=400 trace=000 d=6.5ms f"#),
            json!([
                ["level", "info"],
                ["msg", "Request Completed"],
                ["host", true],
                ["uname", true],
                ["status", 400],
                ["trace", 0],
                ["d", "6.5ms"],
                ["f", true]
            ])
        );
        // `\"` in quotes becomes `"`; another backslash stays; quoted numbers stay text.
        assert_eq!(
            p(r#"msg="match \"a.*\", slow \d" x="1""#),
            json!([["msg", r#"match "a.*", slow \d"#], ["x", "1"]])
        );
        // A repeated key: its first place, the last value; an open quote is dropped, but a
        // quote ending the line is an empty value.
        assert_eq!(
            p(r#"a=1 b=2 a=3 c="open"#),
            json!([["a", 3], ["b", 2], ["c", true]])
        );
        assert_eq!(p(r#"a=""#), json!([["a", ""]]));
        // `=` goes on in an unquoted value.
        assert_eq!(
            p("level=info token=abc== url=/p?a=1&b=2"),
            json!([["level", "info"], ["token", "abc=="], ["url", "/p?a=1&b=2"]])
        );
    }

    #[test]
    fn numbers_as_the_gem_reads_them() {
        assert_eq!(number("-012"), Value::Int(-12));
        assert_eq!(number("+5"), Value::Int(5));
        assert_eq!(number("1.50"), Value::Float(1.5));
        assert_eq!(number(".5"), Value::Float(0.5));
        assert_eq!(number("1e3"), Value::Float(1000.0));
        assert_eq!(number("18446744073709551616"), Value::integer(1 << 64));
        let bignum = "123456789012345678901234567890123456789012";
        assert_eq!(number(bignum), Value::decimal(bignum).unwrap());
        for kept in ["6.683093ms", "1.", "0x10", "1e", "-", "v1.2.3"] {
            assert_eq!(number(kept), Value::from(kept));
        }
    }

    #[test]
    fn nesting_stacktraces_and_conflicts() {
        let m = nest(parse(
            r#"level=error a.b=1 a.c=x stacktrace="[f.rb:1][g.rb:2]""#,
        ))
        .unwrap();
        assert_eq!(
            serde_json::to_value(Value::Object(m)).unwrap(),
            json!({"level": "error", "a": {"b": 1, "c": "x"}, "stacktrace": ["f.rb:1", "g.rb:2"]})
        );
        // Ruby's `[1..-2]` by characters, not bytes.
        let m = nest(parse("level=error stacktrace=[é")).unwrap();
        assert_eq!(
            serde_json::to_value(Value::Object(m)).unwrap()["stacktrace"],
            json!([])
        );
        let m = nest(parse("level=error stacktrace=a,b,")).unwrap();
        assert_eq!(
            serde_json::to_value(Value::Object(m)).unwrap()["stacktrace"],
            json!(["a", "b"])
        );
        assert!(nest(parse("level=error a=1 a.b=2")).is_err());
        // The other order: the plain key replaces the nested one, as in Ruby.
        let m = nest(parse("level=error a.b=2 a=1")).unwrap();
        assert_eq!(serde_json::to_value(Value::Object(m)).unwrap()["a"], 1);
    }
}
