//! `fingerprint`: a hash of one or more fields, as logstash-filter-fingerprint does.
//!
//! `method`: `SHA1` (default), `SHA256`, `SHA384`, `SHA512`, `MD5` (lower-case hex, or base64
//! with `base64encode`; an HMAC with `key`), `MURMUR3` (32-bit, seed 0, as a number),
//! `MURMUR3_128` (x64, seed 2, hex or base64), `IPV4_NETWORK` (the address masked to `key`
//! bits), `UUID` (a random one), `PUNCTUATION` (only the punctuation and symbol characters).
//! The result goes to `target` (`fingerprint`, or `[event][hash]` with ECS).
//!
//! Values are read as the plugin reads them: a hash is its sorted `key|value` pairs joined
//! with `|`, an array its items joined with `|`, null the empty string, a timestamp its
//! ISO-8601 text with milliseconds. Each `source` field is hashed on its own (an array field
//! gives an array of hashes, and the last field present wins), or with
//! `concatenate_sources` all of them as one `|name|value|…|` text (names sorted), or with
//! `concatenate_all_fields` every field of the event (without `@metadata`). Integers
//! are hashed as their 4 or 8 bytes by the murmur methods, as the murmurhash3 gem does.

use base64::Engine;
use hmac::{Mac, SimpleHmac};
use sha1::Digest;
use sluice_event::{Event, FieldRef, Map, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

use crate::ecs::Ecs;
use crate::numbers::hex;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Sha1,
    Sha256,
    Sha384,
    Sha512,
    Md5,
    Murmur3,
    Murmur3_128,
    Ipv4Network,
    Uuid,
    Punctuation,
}

#[derive(Clone)]
pub struct Fingerprint {
    method: Method,
    /// `source` as written and as references, in the order given…
    sources: Vec<(String, FieldRef)>,
    /// …and sorted by name (`PUNCTUATION` and the concatenated text go in that order).
    sorted_sources: Vec<(String, FieldRef)>,
    target: FieldRef,
    key: Option<String>,
    /// `IPV4_NETWORK`: the prefix length `key` names.
    prefix: u8,
    base64: bool,
    concatenate_sources: bool,
    concatenate_all_fields: bool,
    punctuation: regex::Regex,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let method = match opts.string_or("method", "SHA1")?.as_str() {
        "SHA1" => Method::Sha1,
        "SHA256" => Method::Sha256,
        "SHA384" => Method::Sha384,
        "SHA512" => Method::Sha512,
        "MD5" => Method::Md5,
        "MURMUR3" => Method::Murmur3,
        "MURMUR3_128" => Method::Murmur3_128,
        "IPV4_NETWORK" => Method::Ipv4Network,
        "UUID" => Method::Uuid,
        "PUNCTUATION" => Method::Punctuation,
        other => {
            return Err(opts.error(
                "method",
                format!("expected one of SHA1, SHA256, SHA384, SHA512, MD5, MURMUR3, MURMUR3_128, IPV4_NETWORK, UUID, PUNCTUATION, got {other:?}"),
            ))
        }
    };
    let mut sources = Vec::new();
    for s in opts
        .string_list("source")?
        .unwrap_or_else(|| vec!["message".to_owned()])
    {
        let r = FieldRef::parse(&s).map_err(|e| opts.error("source", e.to_string()))?;
        sources.push((s, r));
    }
    let ecs = Ecs::from_options(opts)?;
    let target = opts.string("target")?.unwrap_or_else(|| {
        if ecs.enabled() {
            "[event][hash]".to_owned()
        } else {
            "fingerprint".to_owned()
        }
    });
    let target = FieldRef::parse(&target).map_err(|e| opts.error("target", e.to_string()))?;
    let key = opts.string("key")?;
    let prefix = if method == Method::Ipv4Network {
        let Some(k) = &key else {
            return Err(opts.error(
                "key",
                "Key value is empty. please fill in a subnet prefix length",
            ));
        };
        k.trim()
            .parse::<u8>()
            .ok()
            .filter(|&p| p <= 128)
            .ok_or_else(|| opts.error("key", format!("{k:?} is not a subnet prefix length")))?
    } else {
        0
    };
    Ok(Box::new(Fingerprint {
        method,
        sorted_sources: {
            let mut sorted = sources.clone();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            sorted
        },
        sources,
        target,
        key,
        prefix,
        base64: opts.boolean_or("base64encode", false)?,
        concatenate_sources: opts.boolean_or("concatenate_sources", false)?,
        concatenate_all_fields: opts.boolean_or("concatenate_all_fields", false)?,
        punctuation: regex::Regex::new(r"[^\p{P}\p{S}]").expect("a valid regex"),
    }))
}

/// The plugin's `to_canonical_value`, then `to_s`.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => canonical_map(m, out),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push('|');
                }
                canonical(item, out);
            }
        }
        other => other.write_display(out),
    }
}

fn canonical_map(m: &Map, out: &mut String) {
    for (i, (k, v)) in m.iter().enumerate() {
        if i > 0 {
            out.push('|');
        }
        out.push_str(k);
        out.push('|');
        canonical(v, out);
    }
}

fn digest<D: Digest + hmac::digest::core_api::BlockSizeUser>(
    data: &[u8],
    key: Option<&str>,
) -> Vec<u8> {
    match key {
        None => D::digest(data).to_vec(),
        Some(k) => {
            let mut mac = <SimpleHmac<D> as hmac::digest::KeyInit>::new_from_slice(k.as_bytes())
                .expect("HMAC takes a key of any length");
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
    }
}

impl Fingerprint {
    /// A hasher of single values for the `anonymize` filter: `algorithm` (SHA1, SHA256,
    /// SHA384, SHA512, MD5: an HMAC with `key`, in hex; MURMUR3: 32 bits, as a number;
    /// IPV4_NETWORK: `key` is the prefix length).
    pub(crate) fn for_values(algorithm: &str, key: &str) -> Result<Fingerprint, String> {
        let method = match algorithm {
            "SHA1" => Method::Sha1,
            "SHA256" => Method::Sha256,
            "SHA384" => Method::Sha384,
            "SHA512" => Method::Sha512,
            "MD5" => Method::Md5,
            "MURMUR3" => Method::Murmur3,
            "IPV4_NETWORK" => Method::Ipv4Network,
            other => {
                return Err(format!(
                    "expected one of SHA1, SHA256, SHA384, SHA512, MD5, MURMUR3, IPV4_NETWORK, got {other:?}"
                ))
            }
        };
        let prefix = match method {
            Method::Ipv4Network => key
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|&p| p <= 32)
                .ok_or_else(|| format!("key {key:?} is not a subnet prefix length"))?,
            _ => 0,
        };
        Ok(Fingerprint {
            method,
            sources: Vec::new(),
            sorted_sources: Vec::new(),
            target: FieldRef::top_level("fingerprint"),
            key: (method != Method::Murmur3).then(|| key.to_owned()),
            prefix,
            base64: false,
            concatenate_sources: false,
            concatenate_all_fields: false,
            punctuation: regex::Regex::new(r"[^\p{P}\p{S}]").expect("a valid regex"),
        })
    }

    /// The hash of one value (`None`: not an address, for IPV4_NETWORK).
    pub(crate) fn hash_value(&self, v: &Value) -> Option<Value> {
        self.of(v)
    }

    fn encode(&self, bytes: &[u8]) -> Value {
        Value::String(
            if self.base64 {
                base64::engine::general_purpose::STANDARD.encode(bytes)
            } else {
                hex(bytes)
            }
            .into(),
        )
    }

    /// The fingerprint of one value (`None`: not an address, for `IPV4_NETWORK`).
    fn of(&self, v: &Value) -> Option<Value> {
        let int = match v {
            Value::Int(i) => Some(*i),
            _ => None,
        };
        let mut text = String::new();
        canonical(v, &mut text);
        let data = text.as_bytes();
        let key = self.key.as_deref();
        Some(match self.method {
            Method::Sha1 => self.encode(&digest::<sha1::Sha1>(data, key)),
            Method::Sha256 => self.encode(&digest::<sha2::Sha256>(data, key)),
            Method::Sha384 => self.encode(&digest::<sha2::Sha384>(data, key)),
            Method::Sha512 => self.encode(&digest::<sha2::Sha512>(data, key)),
            Method::Md5 => self.encode(&digest::<md5::Md5>(data, key)),
            Method::Murmur3 => {
                let bytes = int.map(i64::to_le_bytes);
                let input: &[u8] = bytes.as_ref().map_or(data, |b| &b[..]);
                let h = murmur3::murmur3_32(&mut std::io::Cursor::new(input), 0)
                    .expect("reading from memory");
                Value::Int(h as i64)
            }
            Method::Murmur3_128 => {
                let bytes: Vec<u8> = match int {
                    Some(i) if i32::try_from(i).is_ok() => (i as i32).to_le_bytes().to_vec(),
                    Some(i) => i.to_le_bytes().to_vec(),
                    None => data.to_vec(),
                };
                let h = murmur3::murmur3_x64_128(&mut std::io::Cursor::new(bytes), 2)
                    .expect("reading from memory");
                self.encode(&h.to_le_bytes())
            }
            Method::Ipv4Network => {
                let ip: std::net::IpAddr = text.trim().parse().ok()?;
                Value::String(mask(ip, self.prefix).to_string().into())
            }
            Method::Uuid | Method::Punctuation => unreachable!("not a hash of values"),
        })
    }
}

/// `ip` with all but its first `prefix` bits cleared.
fn mask(ip: std::net::IpAddr, prefix: u8) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V4(a) => {
            let bits = u32::from(a);
            let m = u32::MAX
                .checked_shl(32 - u32::from(prefix.min(32)))
                .unwrap_or(0);
            std::net::IpAddr::V4((bits & m).into())
        }
        std::net::IpAddr::V6(a) => {
            let bits = u128::from(a);
            let m = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            std::net::IpAddr::V6((bits & m).into())
        }
    }
}

impl Filter for Fingerprint {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        match self.method {
            Method::Uuid => {
                let id = uuid::Uuid::new_v4().to_string();
                event.set(&self.target, Value::String(id.into()));
            }
            Method::Punctuation => {
                for (_, field) in &self.sorted_sources {
                    let Some(v) = event.get(field) else { continue };
                    let text = v.to_display_string();
                    let kept = self.punctuation.replace_all(&text, "").into_owned();
                    event.set(&self.target, Value::String(kept.into()));
                }
            }
            _ if self.concatenate_sources || self.concatenate_all_fields => {
                let mut text = String::new();
                if self.concatenate_all_fields {
                    for (k, v) in event.fields().iter() {
                        text.push('|');
                        text.push_str(k);
                        text.push('|');
                        canonical(v, &mut text);
                    }
                } else {
                    for (name, field) in &self.sorted_sources {
                        text.push('|');
                        text.push_str(name);
                        text.push('|');
                        if let Some(v) = event.get(field) {
                            canonical(v, &mut text);
                        }
                    }
                }
                text.push('|');
                match self.of(&Value::String(text.into())) {
                    Some(f) => event.set(&self.target, f),
                    None => return self.not_an_address(event),
                }
            }
            _ => {
                for (_, field) in &self.sources {
                    let Some(v) = event.get(field) else { continue };
                    let result = match v {
                        Value::Array(items) => items
                            .iter()
                            .map(|item| self.of(item))
                            .collect::<Option<Vec<_>>>()
                            .map(Value::Array),
                        other => self.of(other),
                    };
                    match result {
                        Some(f) => event.set(&self.target, f),
                        None => return self.not_an_address(event),
                    }
                }
            }
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}

impl Fingerprint {
    /// `IPV4_NETWORK` of text that is no address: Logstash's worker dies on the exception;
    /// sluice logs it and leaves the event as it was.
    fn not_an_address(&self, event: &Event) -> bool {
        tracing::warn!(
            sources = ?self.sources.iter().map(|s| &s.0).collect::<Vec<_>>(),
            event = %sluice_event::json::event_to_string(event),
            "fingerprint: IPV4_NETWORK of a value that is not an IP address; the event is left unchanged"
        );
        false
    }
}
