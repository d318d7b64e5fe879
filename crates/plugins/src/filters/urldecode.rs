//! `urldecode`: decodes `%XX` escapes in a field (or every field), as logstash-filter-urldecode
//! does. Only `%XX` runs are decoded (a `+` stays a `+`); the bytes are then read in `charset`
//! (default UTF-8; invalid UTF-8 shows as Ruby's `inspect` does, see the codecs' charset).
//! Arrays and hashes are decoded item by item; other values are left alone. A missing `field`
//! is set to null, as the plugin's `event.set(field, nil)` does.

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

use crate::codecs::charset::Charset;

#[derive(Clone)]
pub struct Urldecode {
    field: FieldRef,
    all_fields: bool,
    charset: Charset,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let field = opts.string_or("field", "message")?;
    let field = FieldRef::parse(&field).map_err(|e| opts.error("field", e.to_string()))?;
    let all_fields = opts.boolean_or("all_fields", false)?;
    // Nothing the decoding does can fail: the option is accepted and has nothing to tag.
    opts.string_list("tag_on_failure")?;
    let charset = Charset::from_options(opts)?;
    Ok(Box::new(Urldecode {
        field,
        all_fields,
        charset,
    }))
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// `%XX` escapes decoded; `None` when the text has none.
pub fn unescape(text: &str) -> Option<Vec<u8>> {
    let b = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                let o = out.get_or_insert_with(|| b[..i].to_vec());
                o.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        if let Some(o) = &mut out {
            o.push(b[i]);
        }
        i += 1;
    }
    out
}

impl Urldecode {
    fn decode(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => match unescape(s) {
                Some(bytes) => Value::String(self.charset.decode(&bytes).as_ref().into()),
                None => v.clone(),
            },
            Value::Array(items) => Value::Array(items.iter().map(|i| self.decode(i)).collect()),
            Value::Object(m) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), self.decode(v))).collect())
            }
            other => other.clone(),
        }
    }
}

impl Filter for Urldecode {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        if self.all_fields {
            let decoded: Vec<(FieldRef, Value)> = event
                .fields()
                .iter()
                .map(|(k, v)| (FieldRef::top_level(k), self.decode(v)))
                .collect();
            for (k, v) in decoded {
                event.set(&k, v);
            }
        } else {
            let decoded = event
                .get(&self.field)
                .map_or(Value::Null, |v| self.decode(v));
            event.set(&self.field, decoded);
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::unescape;

    #[test]
    fn only_percent_escapes() {
        assert_eq!(unescape("a%20b+c%2"), Some(b"a b+c%2".to_vec()));
        assert_eq!(unescape("%E2%82%AC"), Some("€".as_bytes().to_vec()));
        assert_eq!(unescape("plain"), None);
        assert_eq!(unescape("%zz%4"), None);
    }
}
