//! `anonymize`: replaces fields' values with a consistent hash, as logstash-filter-anonymize
//! (once in Logstash's bundle, and still in configs) does: `fields` (required), `key`
//! (required), `algorithm` `SHA1` (default), `SHA256`, `SHA384`, `SHA512`, `MD5` (an HMAC with
//! `key`, lower-case hex), `MURMUR3` (32 bits, a number; `key` unused), `IPV4_NETWORK` (the
//! address masked to `key` bits). An array field has each element hashed; an absent field is
//! left alone. The hashing is the `fingerprint` filter's.

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

use super::fingerprint::Fingerprint;

#[derive(Clone)]
pub struct Anonymize {
    fields: Vec<FieldRef>,
    hasher: Fingerprint,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let names = opts
        .string_list("fields")?
        .ok_or_else(|| opts.error("fields", "is required (the fields to anonymize)"))?;
    let mut fields = Vec::with_capacity(names.len());
    for n in &names {
        fields.push(FieldRef::parse(n).map_err(|e| opts.error("fields", e.to_string()))?);
    }
    let key = opts.string("key")?.ok_or_else(|| {
        opts.error(
            "key",
            "is required (the hashing key; with MURMUR3 it is unused but must be set)",
        )
    })?;
    let algorithm = opts.string_or("algorithm", "SHA1")?;
    let hasher =
        Fingerprint::for_values(&algorithm, &key).map_err(|e| opts.error("algorithm", e))?;
    Ok(Box::new(Anonymize { fields, hasher }))
}

impl Filter for Anonymize {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        for f in &self.fields {
            let Some(v) = event.get(f) else { continue };
            let hashed = match v {
                Value::Array(items) => Value::Array(
                    items
                        .iter()
                        .map(|i| self.hasher.hash_value(i).unwrap_or_else(|| i.clone()))
                        .collect(),
                ),
                other => match self.hasher.hash_value(other) {
                    Some(h) => h,
                    None => continue,
                },
            };
            event.set(f, hashed);
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}
