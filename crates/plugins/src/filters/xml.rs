//! `xml`: parses a field holding XML into a hash under `target`, as logstash-filter-xml's
//! `store_xml` does with Ruby's XmlSimple (`xml_in`, the root element dropped).
//!
//! An element becomes a hash of its attributes (by their written names: `xmlns`, `xsi:type`)
//! and its child elements (by local name). With `force_array => true` (the default) every
//! child's value is an array; without, only repeated children make one. An element with
//! text only is that text, or `{"content" => text}` with `force_content` or when it has
//! attributes; mixed text beside elements goes to `content`. `suppress_empty` (default true)
//! drops empty children (when their parent has no attributes, as XmlSimple does) and makes an
//! empty root null.
//!
//! A source that is missing, empty or blank is left alone; one that is not a string (or a
//! one-item array of one), or text that is not well-formed XML, tags `_xmlparsefailure`.
//! `xpath` (XPath queries) is not supported yet and is refused; `namespaces`,
//! `remove_namespaces` and `parse_options` only affect XPath and are checked and accepted.

use quick_xml::events::Event as XmlEvent;
use sluice_event::{Event, FieldRef, Map, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

const FAILURE: &str = "_xmlparsefailure";

#[derive(Clone)]
pub struct Xml {
    source: FieldRef,
    target: Option<FieldRef>,
    force_array: bool,
    force_content: bool,
    suppress_empty: bool,
}

const PARSE_OPTIONS: &[&str] = &[
    "STRICT",
    "RECOVER",
    "NOENT",
    "DTDLOAD",
    "DTDATTR",
    "DTDVALID",
    "NOERROR",
    "NOWARNING",
    "PEDANTIC",
    "NOBLANKS",
    "SAX1",
    "XINCLUDE",
    "NONET",
    "NODICT",
    "NSCLEAN",
    "NOCDATA",
    "NOXINCNODE",
    "COMPACT",
    "OLD10",
    "NOBASEFIX",
    "HUGE",
    "BIGLINES",
    "DEFAULTXML",
    "DEFAULTHTML",
    "DEFAULTXSLT",
    "DEFAULTSCHEMA",
];

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let source = opts.required_string("source")?;
    let source = FieldRef::parse(&source).map_err(|e| opts.error("source", e.to_string()))?;
    let target = opts.string("target")?.filter(|t| !t.is_empty());
    let store_xml = opts.boolean_or("store_xml", true)?;
    if let Some(x) = opts.hash("xpath")? {
        if !x.is_empty() {
            return Err(opts.error(
                "xpath",
                "XPath queries are not supported by sluice's xml filter yet (store_xml is)",
            ));
        }
    }
    if store_xml && target.is_none() {
        return Err(opts.error(
            "target",
            "When the 'store_xml' configuration option is true, 'target' must also be set",
        ));
    }
    if let Some(p) = opts.string("parse_options")? {
        for opt in p.split([',', '|']) {
            let name = opt.trim().replace('_', "").to_uppercase();
            if !name.is_empty() && !PARSE_OPTIONS.contains(&name.as_str()) {
                return Err(opts.error(
                    "parse_options",
                    format!("unsupported parse option: {opt:?}"),
                ));
            }
        }
    }
    opts.string_hash("namespaces")?;
    opts.boolean("remove_namespaces")?;
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
    }))
}

/// An element as XmlSimple sees it.
#[derive(Debug, Default)]
struct Element {
    name: String,
    attributes: Vec<(String, String)>,
    children: Vec<Node>,
}

#[derive(Debug)]
enum Node {
    Element(Element),
    Text(String),
}

fn predefined(name: &str) -> Option<char> {
    Some(match name {
        "lt" => '<',
        "gt" => '>',
        "amp" => '&',
        "apos" => '\'',
        "quot" => '"',
        _ => return None,
    })
}

/// The document's root element; `Err` when the text is not well-formed XML.
fn parse(text: &str) -> Result<Element, String> {
    let mut reader = quick_xml::Reader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    let open = |e: &quick_xml::events::BytesStart| -> Result<Element, String> {
        let name = e.local_name().as_ref().to_owned();
        let mut attributes = Vec::new();
        for a in e.attributes() {
            let a = a.map_err(|e| e.to_string())?;
            let key = a.key.as_ref().to_owned();
            let value = a
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .map_err(|e| e.to_string())?
                .into_owned();
            attributes.push((key, value));
        }
        Ok(Element {
            name,
            attributes,
            children: Vec::new(),
        })
    };
    let push_text = |stack: &mut Vec<Element>, text: &str| -> Result<(), String> {
        match stack.last_mut() {
            Some(parent) => {
                match parent.children.last_mut() {
                    Some(Node::Text(t)) => t.push_str(text),
                    _ => parent.children.push(Node::Text(text.to_owned())),
                }
                Ok(())
            }
            None if text.trim().is_empty() => Ok(()),
            None => Err("text outside the root element".to_owned()),
        }
    };
    loop {
        match reader.read_event().map_err(|e| e.to_string())? {
            XmlEvent::Start(e) => {
                if root.is_some() {
                    return Err("a second root element".to_owned());
                }
                stack.push(open(&e)?);
            }
            XmlEvent::Empty(e) => {
                let el = open(&e)?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(Node::Element(el)),
                    None if root.is_none() => root = Some(el),
                    None => return Err("a second root element".to_owned()),
                }
            }
            XmlEvent::End(_) => {
                let el = stack.pop().ok_or("an end tag without its start")?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(Node::Element(el)),
                    None => root = Some(el),
                }
            }
            XmlEvent::Text(t) => {
                let text = t.xml_content(quick_xml::XmlVersion::Implicit1_0);
                push_text(&mut stack, &text)?;
            }
            XmlEvent::CData(c) => {
                push_text(&mut stack, &c.into_inner())?;
            }
            XmlEvent::GeneralRef(r) => {
                let c = if r.is_char_ref() {
                    r.resolve_char_ref().map_err(|e| e.to_string())?
                } else {
                    predefined(&r.into_inner())
                };
                let c = c.ok_or("an undefined entity")?;
                push_text(&mut stack, c.encode_utf8(&mut [0u8; 4]))?;
            }
            XmlEvent::Eof => break,
            _ => {}
        }
    }
    if !stack.is_empty() {
        return Err("an element is not closed".to_owned());
    }
    root.ok_or_else(|| "no root element".to_owned())
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

    /// XmlSimple's `collapse`.
    fn collapse(&self, el: &Element) -> Value {
        let mut hash: Map = el
            .attributes
            .iter()
            .map(|(k, v)| (k.as_str().into(), Value::String(v.as_str().into())))
            .collect();
        let has_elements = el.children.iter().any(|c| matches!(c, Node::Element(_)));
        let texts: Vec<&str> = el
            .children
            .iter()
            .filter_map(|c| match c {
                Node::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        if has_elements {
            for child in &el.children {
                let Node::Element(c) = child else { continue };
                let value = self.collapse(c);
                if is_empty(&value) && el.attributes.is_empty() && self.suppress_empty {
                    continue;
                }
                self.merge(&mut hash, &c.name, value);
            }
            let mixed: Vec<&str> = texts
                .iter()
                .copied()
                .filter(|t| !t.trim().is_empty())
                .collect();
            if !mixed.is_empty() {
                let content = if mixed.len() == 1 {
                    Value::String(mixed[0].into())
                } else {
                    Value::Array(mixed.iter().map(|t| Value::String((*t).into())).collect())
                };
                hash.insert("content".into(), content);
            }
        } else if !texts.is_empty() {
            let text: String = texts.concat();
            if text.is_empty() && el.attributes.is_empty() {
                return Value::Object(Map::new());
            }
            if !el.attributes.is_empty() || self.force_content {
                self.merge(&mut hash, "content", Value::String(text.into()));
                return Value::Object(hash);
            }
            return Value::String(text.into());
        }
        if hash.is_empty() && self.suppress_empty {
            return Value::Null;
        }
        Value::Object(hash)
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
        let root = match parse(&text) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(source = %self.source, value = %text, error = %e, "xml: error parsing xml");
                event.add_tag(FAILURE);
                return false;
            }
        };
        let Some(target) = &self.target else {
            // Neither stored nor queried: a well-formed document matches nothing.
            return false;
        };
        let value = self.collapse(&root);
        event.set(target, value);
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}
