//! The xml filter's `xpath` option: XPath 1.0 queries (xpath-eval) over [`Document`], and
//! their results as the strings Logstash stores (Ruby's `to_s` of what Nokogiri returns).
//!
//! A query is compiled once at load. Each event's document is evaluated from its document
//! node; prefixes resolve through the `namespaces` option or, without it, through the root
//! element's declarations (Nokogiri's default, the default namespace under `xmlns`). A prefix
//! bound to nothing is an error, as Nokogiri's "Undefined namespace prefix". The namespace
//! axis selects nothing: sluice keeps no namespace nodes.
//!
//! Results: a node set gives one string per node (elements and text serialized as JRuby
//! Nokogiri's `to_xml`, attributes their value); a number, boolean or string gives one
//! string, as Ruby's `Float#to_s`, `true` and the string itself (false gives none: Logstash
//! skips a result that is not truthy).

use std::cell::RefCell;
use std::cmp::Ordering;

use xpath_eval::{EvaluationContext, ExpandedName, Expr, Node, NodeKind};

use super::doc::{Document, Kind};

/// A node of a [`Document`] as xpath-eval sees it.
#[derive(Clone, Copy)]
struct XNode<'a> {
    doc: &'a Document,
    idx: u32,
}

impl PartialEq for XNode<'_> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.doc, other.doc) && self.idx == other.idx
    }
}

impl Eq for XNode<'_> {}

impl<'a> XNode<'a> {
    fn at(self, idx: u32) -> XNode<'a> {
        XNode { doc: self.doc, idx }
    }
}

impl<'a> Node<'a> for XNode<'a> {
    fn kind(self) -> NodeKind {
        match self.doc.node(self.idx).kind {
            Kind::Document => NodeKind::Root,
            Kind::Element => NodeKind::Element,
            Kind::Attribute => NodeKind::Attribute,
            Kind::Text => NodeKind::Text,
            Kind::Comment => NodeKind::Comment,
            Kind::Instruction => NodeKind::ProcessingInstruction,
        }
    }

    fn parent(self) -> Option<Self> {
        let p = self.doc.node(self.idx).parent;
        (p != u32::MAX).then(|| self.at(p))
    }

    fn children(self) -> impl Iterator<Item = Self> + 'a {
        let doc = self.doc;
        doc.node(self.idx)
            .children
            .iter()
            .map(move |&idx| XNode { doc, idx })
    }

    fn attributes(self) -> impl Iterator<Item = Self> + 'a {
        let doc = self.doc;
        doc.node(self.idx)
            .attributes
            .iter()
            .filter(move |&&a| !doc.node(a).declaration)
            .map(move |&idx| XNode { doc, idx })
    }

    fn namespaces(self) -> impl Iterator<Item = Self> + 'a {
        std::iter::empty()
    }

    fn expanded_name(self) -> Option<ExpandedName> {
        let n = self.doc.node(self.idx);
        match n.kind {
            Kind::Element | Kind::Attribute => Some(ExpandedName {
                namespace_uri: self.doc.uri(n).map(str::to_owned),
                local_name: n.local_name().to_owned(),
            }),
            Kind::Instruction => Some(ExpandedName {
                namespace_uri: None,
                local_name: n.name.clone(),
            }),
            _ => None,
        }
    }

    fn has_expanded_name(self, namespace_uri: Option<&str>, local_name: &str) -> bool {
        let n = self.doc.node(self.idx);
        match n.kind {
            Kind::Element | Kind::Attribute => {
                n.local_name() == local_name && self.doc.uri(n) == namespace_uri
            }
            Kind::Instruction => namespace_uri.is_none() && n.name == local_name,
            _ => false,
        }
    }

    fn string_value(self) -> String {
        self.with_string_value(str::to_owned)
    }

    fn with_string_value<R>(self, f: impl FnOnce(&str) -> R) -> R {
        let n = self.doc.node(self.idx);
        match n.kind {
            Kind::Document | Kind::Element => {
                let mut out = String::new();
                self.doc.text_of(self.idx, &mut out);
                f(&out)
            }
            _ => f(&n.value),
        }
    }

    fn document_order(self, other: Self) -> Ordering {
        self.idx.cmp(&other.idx)
    }
}

/// One compiled query.
#[derive(Clone)]
pub(crate) struct Query {
    pub source: String,
    expr: Expr,
}

impl Query {
    pub fn compile(source: &str) -> Result<Query, String> {
        let expr = xpath_eval::parse(source)
            .map_err(|e| format!("{} (at offset {} of {source:?})", e.message, e.position))?;
        Ok(Query {
            source: source.to_owned(),
            expr,
        })
    }

    /// Evaluates the query from the document node; prefixes resolve through `namespaces`.
    /// Each result is pushed to `out` as a string.
    pub fn run(
        &self,
        doc: &Document,
        namespaces: &[(String, String)],
        out: &mut Vec<String>,
    ) -> Result<(), String> {
        let unbound = RefCell::new(None);
        let lookup = |prefix: &str| -> Option<String> {
            let found = namespaces
                .iter()
                .find(|(p, _)| p == prefix)
                .map(|(_, uri)| uri.clone());
            if found.is_none() && prefix != "xml" {
                *unbound.borrow_mut() = Some(prefix.to_owned());
            }
            found.or_else(|| (prefix == "xml").then(|| super::doc::XML_NAMESPACE.to_owned()))
        };
        let mut ctx = EvaluationContext::new(XNode { doc, idx: 0 });
        ctx.namespaces = Some(&lookup);
        let value = xpath_eval::evaluate(&self.expr, &ctx).map_err(|e| e.to_string())?;
        if let Some(prefix) = unbound.into_inner() {
            return Err(format!("Undefined namespace prefix: {prefix}"));
        }
        match value {
            xpath_eval::Value::NodeSet(nodes) => {
                for n in nodes {
                    let mut s = String::new();
                    to_s(doc, n.idx, &mut s);
                    out.push(s);
                }
            }
            // Logstash keeps only truthy results: false is left out.
            xpath_eval::Value::Boolean(true) => out.push("true".to_owned()),
            xpath_eval::Value::Boolean(false) => {}
            xpath_eval::Value::Number(f) => out.push(sluice_event::value::ruby_float_to_s(f)),
            xpath_eval::Value::String(s) => out.push(s),
        }
        Ok(())
    }
}

/// JRuby Nokogiri's `Node#to_s` for a node of an XML document: elements, text, comments
/// and instructions as its `SaveContextVisitor` writes them with `AS_XML` (no
/// indentation; attributes in Xerces' order, by name; an `xmlns` declaration already in
/// force within the written subtree is left out), an attribute as its value.
pub(crate) fn to_s(doc: &Document, idx: u32, out: &mut String) {
    let n = doc.node(idx);
    match n.kind {
        Kind::Attribute => out.push_str(&n.value),
        Kind::Document => {
            out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
            let mut ns = Vec::new();
            for &c in &n.children {
                write(doc, c, &mut ns, out);
            }
        }
        _ => write(doc, idx, &mut Vec::new(), out),
    }
}

fn write(doc: &Document, idx: u32, ns: &mut Vec<(String, String)>, out: &mut String) {
    let n = doc.node(idx);
    match n.kind {
        Kind::Element => {
            let in_force = ns.len();
            out.push('<');
            out.push_str(&n.name);
            let mut attributes: Vec<&super::doc::NodeData> =
                n.attributes.iter().map(|&a| doc.node(a)).collect();
            attributes.sort_by(|a, b| a.name.cmp(&b.name));
            for a in attributes {
                if a.declaration {
                    if ns.iter().any(|(p, v)| *p == a.name && *v == a.value) {
                        continue;
                    }
                    ns.push((a.name.clone(), a.value.clone()));
                }
                out.push(' ');
                out.push_str(&a.name);
                out.push_str("=\"");
                escape(&a.value, true, out);
                out.push('"');
            }
            if n.children.is_empty() {
                out.push_str("/>");
            } else {
                out.push('>');
                for &c in &n.children {
                    write(doc, c, ns, out);
                }
                out.push_str("</");
                out.push_str(&n.name);
                out.push('>');
            }
            ns.truncate(in_force);
        }
        Kind::Text if n.cdata => {
            out.push_str("<![CDATA[");
            out.push_str(&n.value);
            out.push_str("]]>");
        }
        Kind::Text => escape(&n.value, false, out),
        Kind::Comment => {
            out.push_str("<!--");
            out.push_str(&n.value);
            out.push_str("-->");
        }
        Kind::Instruction => {
            out.push_str("<?");
            out.push_str(&n.name);
            out.push(' ');
            out.push_str(&n.value);
            out.push_str("?>\n");
        }
        Kind::Attribute | Kind::Document => {}
    }
}

/// Text as Nokogiri's `encodeJavaString` escapes it (`&`, `<`, `>`, CR); attribute values
/// as its `serializeAttrTextContent` (also `"`, LF and tab).
fn escape(text: &str, attribute: bool, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#13;"),
            '"' if attribute => out.push_str("&quot;"),
            '\n' if attribute => out.push_str("&#10;"),
            '\t' if attribute => out.push_str("&#9;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::doc::{parse, ReadOptions};
    use super::*;

    /// Random documents from XML-ish pieces: reading never panics, and a document read
    /// without error is written back as text that reads to the same document. (Instructions
    /// are left out: Nokogiri writes a line break after each, which reads as text.)
    #[test]
    fn written_documents_read_back_the_same() {
        const PIECES: &[&str] = &[
            "<a>",
            "</a>",
            "<b x='1'>",
            "</b>",
            "<h:c xmlns:h='urn:h'>",
            "</h:c>",
            "<d/>",
            "text",
            " ",
            "&amp;",
            "&#233;",
            "<![CDATA[<x>]]>",
            "<!--note-->",
            "&bogus;",
            "<",
            ">",
            "\"",
            "\r\n",
            "<e y=\"&lt;&#10;\t\"/>",
            "<a xmlns='urn:d'>",
        ];
        let mut rng = fastrand::Rng::with_seed(7);
        let mut read_back = 0;
        for _ in 0..5000 {
            let mut text = String::from("<r>");
            for _ in 0..rng.usize(0..12) {
                text.push_str(PIECES[rng.usize(0..PIECES.len())]);
            }
            text.push_str("</r>");
            let parsed = parse(&text, ReadOptions::default());
            let Some(root) = parsed.doc.root_element() else {
                continue;
            };
            let mut first = String::new();
            to_s(&parsed.doc, root, &mut first);
            if parsed.error.is_some() || parsed.unbound.is_some() {
                continue;
            }
            let again = parse(&first, ReadOptions::default());
            assert!(again.error.is_none(), "{text:?} written as {first:?}");
            let mut second = String::new();
            to_s(&again.doc, again.doc.root_element().unwrap(), &mut second);
            assert_eq!(first, second, "{text:?}");
            read_back += 1;
        }
        assert!(
            read_back > 500,
            "only {read_back} documents were well-formed"
        );
    }
}
