//! Logstash's merging of a plugin's options (`lscl.rb`, `Plugin#map_expr_attributes`):
//! - an option given once keeps its value;
//! - a repeated option whose first value is a hash is merged key by key
//!   (`LogStash::Util.hash_merge_many`): a key present in both becomes an array of both values;
//! - a repeated option whose first value is an array gets the new value(s) appended;
//! - a repeated scalar becomes `[first, new]`, unless both are equal (then it stays as is);
//! - a `codec` whose merged value is an array (two different codecs) is an error
//!   (Logstash: `invalid_plugin_settings_multiple_codecs`);
//! - one hash literal with the same key written twice is an error (Logstash:
//!   `invalid_plugin_settings_duplicate_keys`; keys compare as written, quotes included);
//! - codec plugins given as values (`codec => json { ... }`) get their own options merged.

use crate::ast::*;
use crate::ParseError;

impl Plugin {
    /// One [`Attribute`] per distinct name (at its first occurrence's position), with
    /// repeated options merged as Logstash's compiler merges them.
    pub fn merged_attributes(&self) -> Result<Vec<Attribute>, ParseError> {
        let mut out: Vec<Attribute> = Vec::new();
        let mut second_codec: Option<Span> = None;
        for attr in &self.attributes {
            let value = self.normalize(&attr.value)?;
            match out.iter_mut().find(|a| a.name == attr.name) {
                None => out.push(Attribute {
                    name: attr.name.clone(),
                    span: attr.span,
                    value,
                }),
                Some(existing) => {
                    if attr.name == "codec" && second_codec.is_none() {
                        second_codec = Some(attr.span);
                    }
                    let old = std::mem::replace(&mut existing.value, Value::Array(Vec::new()));
                    existing.value = combine(old, value).map_err(|message| {
                        ParseError::at(
                            &self.source,
                            attr.span,
                            format!(
                                "option {:?} of plugin {:?}: {message}",
                                attr.name, self.name
                            ),
                        )
                    })?;
                }
            }
        }
        if let Some(codec) = out.iter().find(|a| a.name == "codec") {
            if let Value::Array(_) = codec.value {
                let message = match second_codec {
                    Some(_) => format!("duplicate \"codec\" option in plugin {:?}", self.name),
                    None => format!(
                        "the \"codec\" option of plugin {:?} must be one codec, not a list",
                        self.name
                    ),
                };
                let span = second_codec.unwrap_or(codec.span);
                return Err(ParseError::at(&self.source, span, message));
            }
        }
        Ok(out)
    }

    /// A value as Logstash's compiler sees it: hashes checked for duplicate keys (then the
    /// last value of a key wins), nested codec plugins merged.
    fn normalize(&self, value: &Value) -> Result<Value, ParseError> {
        Ok(match value {
            Value::Hash(entries) => {
                self.check_duplicate_keys(entries)?;
                let mut out: Vec<HashEntry> = Vec::with_capacity(entries.len());
                for e in entries {
                    let v = self.normalize(&e.value)?;
                    match out.iter_mut().find(|o| o.key == e.key) {
                        Some(o) => o.value = v,
                        None => out.push(HashEntry {
                            value: v,
                            ..e.clone()
                        }),
                    }
                }
                Value::Hash(out)
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| self.normalize(v))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Plugin(p) => Value::Plugin(Plugin {
                attributes: p.merged_attributes()?,
                ..p.clone()
            }),
            other => other.clone(),
        })
    }

    fn check_duplicate_keys(&self, entries: &[HashEntry]) -> Result<(), ParseError> {
        let mut dups: Vec<&str> = Vec::new();
        let mut first_dup_span = None;
        for (i, e) in entries.iter().enumerate() {
            if entries[..i].iter().any(|p| p.raw_key == e.raw_key) {
                first_dup_span.get_or_insert(e.span);
                if !dups.contains(&e.raw_key.as_str()) {
                    dups.push(&e.raw_key);
                }
            }
        }
        match first_dup_span {
            None => Ok(()),
            Some(span) => Err(ParseError::at(
                &self.source,
                span,
                format!("duplicate keys found in hash: [{}]", dups.join(", ")),
            )),
        }
    }
}

/// `existing` merged with a repeated option's `value` (the `reduce` in `map_expr_attributes`).
fn combine(existing: Value, value: Value) -> Result<Value, String> {
    Ok(match existing {
        Value::Hash(dst) => match value {
            Value::Hash(src) => Value::Hash(merge_hashes(dst, src, true)),
            _ => return Err("cannot merge a hash with a value that is not a hash".to_string()),
        },
        Value::Array(mut items) => {
            match value {
                Value::Array(more) => items.extend(more),
                other => items.push(other),
            }
            Value::Array(items)
        }
        scalar if ruby_eq(&scalar, &value) => scalar,
        scalar => Value::Array(vec![scalar, value]),
    })
}

/// `hash_merge_with_dups` (`keep_dups`) / `hash_merge` (not): `src` merged into `dst`.
fn merge_hashes(mut dst: Vec<HashEntry>, src: Vec<HashEntry>, keep_dups: bool) -> Vec<HashEntry> {
    for entry in src {
        match dst.iter_mut().find(|d| d.key == entry.key) {
            None => dst.push(entry),
            Some(d) => {
                let old = std::mem::replace(&mut d.value, Value::Array(Vec::new()));
                d.value = merge_values(old, entry.value, keep_dups);
            }
        }
    }
    dst
}

fn merge_values(dv: Value, sv: Value, keep_dups: bool) -> Value {
    match (dv, sv) {
        (Value::Hash(d), Value::Hash(s)) => Value::Hash(merge_hashes(d, s, false)),
        (dv, Value::Array(s)) => {
            let d = match dv {
                Value::Array(d) => d,
                other => vec![other],
            };
            if keep_dups {
                Value::Array(d.into_iter().chain(s).collect())
            } else {
                let mut out: Vec<Value> = Vec::new();
                for v in d.into_iter().chain(s) {
                    if !out.iter().any(|o| ruby_eq(o, &v)) {
                        out.push(v);
                    }
                }
                Value::Array(out)
            }
        }
        (Value::Array(mut d), sv) => {
            if !d.iter().any(|o| ruby_eq(o, &sv)) {
                d.push(sv);
            }
            Value::Array(d)
        }
        (dv, sv) if ruby_eq(&dv, &sv) => dv,
        (dv, sv) => Value::Array(vec![dv, sv]),
    }
}

/// Ruby `==` on compiled values: barewords and strings are both strings, `1 == 1.0`,
/// hashes compare regardless of order, plugins are never equal.
pub(crate) fn ruby_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x) | Value::Bareword(x), Value::String(y) | Value::Bareword(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| ruby_eq(a, b))
        }
        (Value::Hash(x), Value::Hash(y)) => {
            x.len() == y.len()
                && x.iter().all(|e| {
                    y.iter()
                        .any(|f| f.key == e.key && ruby_eq(&e.value, &f.value))
                })
        }
        _ => false,
    }
}
