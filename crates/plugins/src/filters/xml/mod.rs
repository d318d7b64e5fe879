//! `xml`: parses a field holding XML, as logstash-filter-xml does: `xpath` queries (Nokogiri
//! there, [`xpath`] here) store their results in fields, and `store_xml` stores the whole
//! document as a hash under `target` (Ruby's XmlSimple `xml_in`, the root element dropped).
//!
//! The text is read once into a [`doc::Document`]. Queries see it as Nokogiri would:
//! by default (libxml's RECOVER) a document that is not well-formed is queried as far as it
//! was read, without a tag; `parse_options` without RECOVER (`strict`) tags it
//! `_xmlparsefailure`. `remove_namespaces` strips prefixes and namespaces before the queries.
//! Each query's strings go to its field as an array, or as the one string when
//! `force_array => false`; a query that finds nothing sets nothing, and one that fails (an
//! unknown function, an undefined prefix) tags the event.
//!
//! For `store_xml` an element becomes a hash of its attributes (by their written names:
//! `xmlns`, `xsi:type`) and its child elements (by local name). With `force_array => true`
//! (the default) every child's value is an array; without, only repeated children make one.
//! An element with text only is that text, or `{"content" => text}` with `force_content` or
//! when it has attributes; mixed text beside elements goes to `content`. `suppress_empty`
//! (default true) drops empty children (when their parent has no attributes, as XmlSimple
//! does) and makes an empty root null. A document that is not well-formed tags the event.
//!
//! A source that is missing, empty or blank is left alone; one that is not a string (or a
//! one-item array of one) tags `_xmlparsefailure`.

mod doc;
mod xpath;

use std::borrow::Cow;

use doc::{Document, Kind, ReadOptions};
use sluice_event::{Event, FieldRef, Map, Value};
use sluice_pipeline::{ConfigError, Filter, Options};
use xpath::Query;

const FAILURE: &str = "_xmlparsefailure";

#[derive(Clone)]
pub struct Xml {
    source: FieldRef,
    target: Option<FieldRef>,
    force_array: bool,
    force_content: bool,
    suppress_empty: bool,
    queries: Vec<(Query, FieldRef)>,
    /// The `namespaces` option, prefixes without `xmlns:`; `None` to use the root's.
    namespaces: Option<Vec<(String, String)>>,
    remove_namespaces: bool,
    recover: bool,
    read: ReadOptions,
}

/// libxml's parse options by name, and their bits (Nokogiri's `ParseOptions`).
const PARSE_OPTIONS: &[(&str, u32)] = &[
    ("STRICT", 0),
    ("RECOVER", 1),
    ("NOENT", 2),
    ("DTDLOAD", 4),
    ("DTDATTR", 8),
    ("DTDVALID", 16),
    ("NOERROR", 32),
    ("NOWARNING", 64),
    ("PEDANTIC", 128),
    ("NOBLANKS", 256),
    ("SAX1", 512),
    ("XINCLUDE", 1024),
    ("NONET", 2048),
    ("NODICT", 4096),
    ("NSCLEAN", 8192),
    ("NOCDATA", 16384),
    ("NOXINCNODE", 32768),
    ("COMPACT", 65536),
    ("OLD10", 131072),
    ("NOBASEFIX", 262144),
    ("HUGE", 524288),
    ("BIGLINES", 4194304),
    ("DEFAULTXML", 1 | 2048 | 4194304),
    ("DEFAULTHTML", 1 | 32 | 64 | 2048 | 4194304),
    ("DEFAULTXSLT", 1 | 2048 | 2 | 4 | 8 | 16384 | 4194304),
    ("DEFAULTSCHEMA", 2048 | 4194304),
];

/// Options that need a DTD or other documents, which sluice does not load.
const REFUSED_OPTIONS: u32 = 4 | 8 | 16 | 1024;

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let source = opts.required_string("source")?;
    let source = FieldRef::parse(&source).map_err(|e| opts.error("source", e.to_string()))?;
    let target = opts.string("target")?.filter(|t| !t.is_empty());
    let store_xml = opts.boolean_or("store_xml", true)?;
    let mut queries = Vec::new();
    for (src, dest) in opts.string_hash("xpath")?.unwrap_or_default() {
        let query = Query::compile(&src)
            .map_err(|e| opts.error("xpath", format!("invalid XPath expression: {e}")))?;
        let dest = FieldRef::parse(&dest).map_err(|e| opts.error("xpath", e.to_string()))?;
        queries.push((query, dest));
    }
    if store_xml && target.is_none() {
        return Err(opts.error(
            "target",
            "When the 'store_xml' configuration option is true, 'target' must also be set",
        ));
    }
    let mut flags = PARSE_OPTIONS[22].1;
    if let Some(p) = opts.string("parse_options")? {
        flags = 0;
        for opt in p.split([',', '|']) {
            let name = opt.trim().replace('_', "").to_uppercase();
            if name.is_empty() {
                continue;
            }
            let Some(&(_, bits)) = PARSE_OPTIONS.iter().find(|(n, _)| *n == name) else {
                return Err(opts.error(
                    "parse_options",
                    format!("unsupported parse option: {opt:?}"),
                ));
            };
            if bits & REFUSED_OPTIONS != 0 {
                return Err(opts.error(
                    "parse_options",
                    format!(
                        "{opt:?} needs a DTD or other documents loaded, which sluice's xml filter does not do"
                    ),
                ));
            }
            flags |= bits;
        }
    }
    let namespaces = opts.string_hash("namespaces")?.map(|ns| {
        ns.into_iter()
            .map(|(p, uri)| {
                (
                    p.rsplit_once(':').map_or(p.as_str(), |(_, l)| l).to_owned(),
                    uri,
                )
            })
            .collect()
    });
    let remove_namespaces = opts.boolean_or("remove_namespaces", false)?;
    let target = match target {
        Some(t) if store_xml => {
            Some(FieldRef::parse(&t).map_err(|e| opts.error("target", e.to_string()))?)
        }
        _ => None,
    };
    Ok(Box::new(Xml {
        source,
        target,
        force_array: opts.boolean_or("force_array", true)?,
        force_content: opts.boolean_or("force_content", false)?,
        suppress_empty: opts.boolean_or("suppress_empty", true)?,
        queries,
        namespaces,
        remove_namespaces,
        recover: flags & 1 != 0,
        read: ReadOptions {
            no_blanks: flags & 256 != 0,
            no_cdata: flags & 16384 != 0,
        },
    }))
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

impl Xml {
    /// XmlSimple's `merge`: a repeated key collects an array.
    fn merge(&self, hash: &mut Map, key: &str, value: Value) {
        match hash.get_mut(key) {
            Some(Value::Array(items)) => items.push(value),
            Some(existing) => {
                let first = std::mem::take(existing);
                *existing = Value::Array(vec![first, value]);
            }
            None => {
                let value = match value {
                    Value::Array(_) => Value::Array(vec![value]),
                    v if self.force_array && key != "content" => Value::Array(vec![v]),
                    v => v,
                };
                hash.insert(key.into(), value);
            }
        }
    }

    /// XmlSimple's `collapse` of element `idx`. Text pieces (CDATA among them) that only
    /// comments or instructions separate are one text, as REXML reads them.
    fn collapse(&self, doc: &Document, idx: u32) -> Value {
        let el = doc.node(idx);
        let mut hash: Map = el
            .attributes
            .iter()
            .map(|&a| doc.node(a))
            .map(|a| {
                (
                    a.name.as_str().into(),
                    Value::String(a.value.as_str().into()),
                )
            })
            .collect();
        let mut has_elements = false;
        let mut texts: Vec<Cow<str>> = Vec::new();
        let mut joined = false;
        for &c in &el.children {
            let child = doc.node(c);
            match child.kind {
                Kind::Text if joined => texts.last_mut().unwrap().to_mut().push_str(&child.value),
                Kind::Text => {
                    texts.push(Cow::Borrowed(&child.value));
                    joined = true;
                }
                Kind::Element => {
                    has_elements = true;
                    joined = false;
                }
                _ => {}
            }
        }
        if has_elements {
            for &c in &el.children {
                let child = doc.node(c);
                if child.kind != Kind::Element {
                    continue;
                }
                let value = self.collapse(doc, c);
                if is_empty(&value) && el.attributes.is_empty() && self.suppress_empty {
                    continue;
                }
                self.merge(&mut hash, child.local_name(), value);
            }
            let mixed: Vec<&Cow<str>> = texts.iter().filter(|t| !t.trim().is_empty()).collect();
            if !mixed.is_empty() {
                let content = if mixed.len() == 1 {
                    Value::String(mixed[0].as_ref().into())
                } else {
                    Value::Array(
                        mixed
                            .iter()
                            .map(|t| Value::String(t.as_ref().into()))
                            .collect(),
                    )
                };
                hash.insert("content".into(), content);
            }
        } else if !texts.is_empty() {
            let text = if texts.len() == 1 {
                texts.pop().unwrap()
            } else {
                Cow::Owned(texts.concat())
            };
            if text.is_empty() && el.attributes.is_empty() {
                return Value::Object(Map::new());
            }
            if !el.attributes.is_empty() || self.force_content {
                self.merge(&mut hash, "content", Value::String(text.as_ref().into()));
                return Value::Object(hash);
            }
            return Value::String(text.as_ref().into());
        }
        if hash.is_empty() && self.suppress_empty {
            return Value::Null;
        }
        Value::Object(hash)
    }

    /// The `xpath` queries, each result stored at its field. `Err` when a query fails.
    fn query(&self, doc: &Document, event: &mut Event) -> Result<bool, String> {
        let root_namespaces;
        let namespaces = match &self.namespaces {
            Some(ns) => ns.as_slice(),
            None => {
                root_namespaces = doc.root_namespaces();
                root_namespaces.as_slice()
            }
        };
        let mut matched = false;
        for (query, dest) in &self.queries {
            let mut data = Vec::new();
            query
                .run(doc, namespaces, &mut data)
                .map_err(|e| format!("{e} in {:?}", query.source))?;
            matched |= !data.is_empty();
            if data.len() == 1 && !self.force_array {
                event.set(dest, Value::String(data.pop().unwrap().into()));
            } else if !data.is_empty() {
                event.set(
                    dest,
                    Value::Array(data.into_iter().map(|s| Value::String(s.into())).collect()),
                );
            }
        }
        Ok(matched)
    }
}

impl Filter for Xml {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let text = match event.get(&self.source) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => return false,
            Some(Value::String(s)) => s.to_string(),
            Some(Value::Array(items)) if items.len() == 1 => match &items[0] {
                Value::String(s) => s.to_string(),
                _ => {
                    tracing::warn!(source = %self.source, "xml: expects a string");
                    event.add_tag(FAILURE);
                    return false;
                }
            },
            Some(other) => {
                tracing::warn!(source = %self.source, value = ?other, "xml: expects a string or a single item array");
                event.add_tag(FAILURE);
                return false;
            }
        };
        if text.trim().is_empty() {
            return false;
        }
        let parsed = doc::parse(&text, self.read);
        // Nokogiri reads the document first, whether or not there are queries.
        let nokogiri_error = parsed.error.as_ref().or(parsed.unbound.as_ref());
        if let (Some(e), false) = (nokogiri_error, self.recover) {
            tracing::warn!(source = %self.source, value = %text, error = %e, "xml: error parsing xml");
            event.add_tag(FAILURE);
            return false;
        }
        // XmlSimple reads the text as it is, before prefixes are removed for the queries.
        let stored = match &self.target {
            Some(_) if parsed.error.is_some() => None,
            Some(_) if self.read.no_blanks => {
                let again = doc::parse(&text, ReadOptions::default());
                again
                    .doc
                    .root_element()
                    .map(|r| self.collapse(&again.doc, r))
            }
            Some(_) => parsed
                .doc
                .root_element()
                .map(|r| self.collapse(&parsed.doc, r)),
            None => None,
        };
        let mut matched = false;
        if !self.queries.is_empty() {
            let mut doc = parsed.doc;
            if self.remove_namespaces {
                doc.remove_namespaces();
            }
            match self.query(&doc, event) {
                Ok(m) => matched = m,
                Err(e) => {
                    tracing::warn!(source = %self.source, error = %e, "xml: XPath query failed");
                    event.add_tag(FAILURE);
                    return false;
                }
            }
        }
        if let Some(target) = &self.target {
            let Some(value) = stored else {
                let e = parsed.error.as_deref().unwrap_or("no root element");
                tracing::warn!(source = %self.source, value = %text, error = %e, "xml: error parsing xml with XmlSimple");
                event.add_tag(FAILURE);
                return false;
            };
            event.set(target, value);
            matched = true;
        }
        matched
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}
