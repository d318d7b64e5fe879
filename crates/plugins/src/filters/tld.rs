//! `tld`: splits a domain name by the Public Suffix List, as logstash-filter-tld does (with
//! the `public_suffix` gem): `www.google.co.uk` gives `tld` `co.uk`, `sld` `google`, `trd`
//! `www`, `domain` `google.co.uk`, `subdomain` `www.google.co.uk` and `top_level_domain`
//! (the `tld` again) under `target` (default `tld`); `trd` and `subdomain` are null without
//! a third level. Names the list does not cover (no listed suffix), that are a suffix
//! themselves (`co.uk`) or that are not host names are left alone. The list, ICANN and
//! private sections, is compiled in (the `psl` crate, kept current with the upstream list).

use sluice_event::{Event, FieldRef, Map, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

#[derive(Clone)]
pub struct Tld {
    source: FieldRef,
    target: FieldRef,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let source = opts.string_or("source", "message")?;
    let target = opts.string_or("target", "tld")?;
    let parse = |opts: &Options, name: &str, text: &str| {
        FieldRef::parse(text).map_err(|e| opts.error(name, e.to_string()))
    };
    Ok(Box::new(Tld {
        source: parse(opts, "source", &source)?,
        target: parse(opts, "target", &target)?,
    }))
}

/// The parts of `name`, as `PublicSuffix.parse` gives them.
fn split(name: &str) -> Option<Map> {
    let name = name.trim().trim_end_matches('.').to_ascii_lowercase();
    let host_like = |l: &str| {
        !l.is_empty()
            && l.chars()
                .all(|c| c.is_alphanumeric() || c == '-' || c == '_' || c == '*')
    };
    if !name.split('.').all(host_like) {
        return None;
    }
    let suffix = psl::suffix(name.as_bytes()).filter(|s| s.is_known())?;
    let domain = psl::domain(name.as_bytes())?;
    let tld = std::str::from_utf8(suffix.as_bytes()).ok()?.to_owned();
    let domain = std::str::from_utf8(domain.as_bytes()).ok()?.to_owned();
    let sld = domain.strip_suffix(&format!(".{tld}"))?.to_owned();
    let trd = name.strip_suffix(&format!(".{domain}")).map(str::to_owned);
    let text = |s: Option<String>| s.map_or(Value::Null, |s| Value::String(s.into()));
    let mut m = Map::new();
    m.insert("tld".into(), text(Some(tld.clone())));
    m.insert("top_level_domain".into(), text(Some(tld)));
    m.insert("sld".into(), text(Some(sld)));
    m.insert("domain".into(), text(Some(domain)));
    m.insert("subdomain".into(), text(trd.as_ref().map(|_| name.clone())));
    m.insert("trd".into(), text(trd));
    Some(m)
}

impl Filter for Tld {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let parts = match event.get(&self.source) {
            Some(Value::String(s)) => split(s),
            _ => None,
        };
        match parts {
            Some(m) => {
                event.set(&self.target, Value::Object(m));
                true
            }
            None => false,
        }
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}
