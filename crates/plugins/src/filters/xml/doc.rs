//! The XML document the xml filter works on: one arena of nodes in document order, read
//! with quick-xml, and written back as JRuby Nokogiri's `Node#to_s` writes a node.
//!
//! Node 0 is the document; an element is followed by its attribute nodes (`xmlns`
//! declarations among them, flagged), then by its subtree, so document order is index order.
//! Names are kept as written (`h:div`); each element and attribute also carries the URI its
//! prefix was bound to. Text, CDATA, comments and processing instructions are nodes of their
//! own; consecutive text pieces (split by entity references) are one node.
//!
//! A document that is not well-formed stops being read at the first error: the nodes read
//! until then stay, open elements closed, and the error is reported beside them. The store_xml
//! path refuses such a document (XmlSimple raises); the XPath path keeps it, as Nokogiri's
//! RECOVER mode keeps what Xerces built, unless `parse_options` leaves RECOVER out.

use quick_xml::events::Event as XmlEvent;

pub(crate) const XML_NAMESPACE: &str = "http://www.w3.org/XML/1998/namespace";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Document,
    Element,
    Attribute,
    Text,
    Comment,
    Instruction,
}

#[derive(Debug)]
pub(crate) struct NodeData {
    pub kind: Kind,
    pub parent: u32,
    /// Element and attribute names as written, a processing instruction's target.
    pub name: String,
    /// Index into [`Document::uris`] of the namespace the name's prefix is bound to; 0 for none.
    pub uri: u32,
    /// An attribute's value, a text's or comment's text, an instruction's data.
    pub value: String,
    pub children: Vec<u32>,
    pub attributes: Vec<u32>,
    /// A text node that was a CDATA section.
    pub cdata: bool,
    /// An attribute that declares a namespace (`xmlns`, `xmlns:p`).
    pub declaration: bool,
}

impl NodeData {
    fn new(kind: Kind, parent: u32) -> NodeData {
        NodeData {
            kind,
            parent,
            name: String::new(),
            uri: 0,
            value: String::new(),
            children: Vec::new(),
            attributes: Vec::new(),
            cdata: false,
            declaration: false,
        }
    }

    /// The name without its prefix.
    pub fn local_name(&self) -> &str {
        self.name.rsplit_once(':').map_or(&self.name, |(_, l)| l)
    }
}

#[derive(Debug)]
pub(crate) struct Document {
    pub nodes: Vec<NodeData>,
    /// Namespace URIs; index 0 is "no namespace".
    pub uris: Vec<String>,
}

/// What reading gave: the document, the first error that stopped it, if any, and the first
/// prefix bound to no namespace (an error to Xerces, not to XmlSimple).
pub(crate) struct Parsed {
    pub doc: Document,
    pub error: Option<String>,
    pub unbound: Option<String>,
}

/// How to read: libxml's options as far as they change what sluice builds.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ReadOptions {
    /// Whitespace-only text between elements is dropped (NOBLANKS).
    pub no_blanks: bool,
    /// CDATA sections become plain text (NOCDATA).
    pub no_cdata: bool,
}

impl Document {
    pub fn node(&self, idx: u32) -> &NodeData {
        &self.nodes[idx as usize]
    }

    pub fn uri(&self, node: &NodeData) -> Option<&str> {
        (node.uri != 0).then(|| self.uris[node.uri as usize].as_str())
    }

    /// The document's root element.
    pub fn root_element(&self) -> Option<u32> {
        self.nodes[0]
            .children
            .iter()
            .copied()
            .find(|&c| self.node(c).kind == Kind::Element)
    }

    fn intern(&mut self, uri: &str) -> u32 {
        if uri.is_empty() {
            return 0;
        }
        match self.uris.iter().position(|u| u == uri) {
            Some(i) => i as u32,
            None => {
                self.uris.push(uri.to_owned());
                (self.uris.len() - 1) as u32
            }
        }
    }

    fn push(&mut self, data: NodeData) -> u32 {
        let idx = self.nodes.len() as u32;
        self.nodes.push(data);
        idx
    }

    /// Appends text to `parent`, joining it to a text node just before.
    fn push_text(&mut self, parent: u32, text: &str, cdata: bool) {
        if let Some(&last) = self.nodes[parent as usize].children.last() {
            let prev = &mut self.nodes[last as usize];
            if prev.kind == Kind::Text && !prev.cdata && !cdata {
                prev.value.push_str(text);
                return;
            }
        }
        let mut data = NodeData::new(Kind::Text, parent);
        data.value = text.to_owned();
        data.cdata = cdata;
        let idx = self.push(data);
        self.nodes[parent as usize].children.push(idx);
    }

    /// The root element's namespace declarations, as `Node#namespaces` lists them:
    /// (prefix, URI), the default namespace under the prefix `xmlns`.
    pub fn root_namespaces(&self) -> Vec<(String, String)> {
        let Some(root) = self.root_element() else {
            return Vec::new();
        };
        self.node(root)
            .attributes
            .iter()
            .map(|&a| self.node(a))
            .filter(|a| a.declaration)
            .map(|a| {
                let prefix = a.name.strip_prefix("xmlns:").unwrap_or("xmlns");
                (prefix.to_owned(), a.value.clone())
            })
            .collect()
    }

    /// Nokogiri's `remove_namespaces!`: every element and attribute loses its prefix and
    /// namespace, and namespace declarations are gone.
    pub fn remove_namespaces(&mut self) {
        let mut removed = vec![false; self.nodes.len()];
        for (i, n) in self.nodes.iter_mut().enumerate() {
            match n.kind {
                Kind::Element | Kind::Attribute => {
                    removed[i] = n.declaration;
                    n.uri = 0;
                    if let Some((_, local)) = n.name.rsplit_once(':') {
                        n.name = local.to_owned();
                    }
                }
                _ => {}
            }
        }
        for n in &mut self.nodes {
            n.attributes.retain(|&a| !removed[a as usize]);
        }
    }

    /// The concatenated text of every text node under `idx` (XPath's string-value).
    pub fn text_of(&self, idx: u32, out: &mut String) {
        for &c in &self.node(idx).children {
            let n = self.node(c);
            match n.kind {
                Kind::Text => out.push_str(&n.value),
                Kind::Element => self.text_of(c, out),
                _ => {}
            }
        }
    }
}

/// Reads `text` into a document. Reading stops at the first error, which is returned beside
/// what was read until then. A prefix bound to no namespace is reported apart, and reading
/// goes on.
pub(crate) fn parse(text: &str, options: ReadOptions) -> Parsed {
    let mut doc = Document {
        nodes: vec![NodeData::new(Kind::Document, u32::MAX)],
        uris: vec![String::new()],
    };
    let mut reader = quick_xml::Reader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut error = None;
    let mut unbound_prefix = None;
    // Open elements, and the namespace bindings in scope: (prefix, uri index), with the
    // length of the bindings when each element opened.
    let mut open: Vec<(u32, usize)> = Vec::new();
    let mut scope: Vec<(String, u32)> = Vec::new();
    let mut has_root = false;
    loop {
        let at = reader.buffer_position();
        let event = match reader.read_event() {
            Ok(e) => e,
            Err(e) => {
                error = Some(format!("{e} (at byte {at})"));
                break;
            }
        };
        let parent = open.last().map_or(0, |&(i, _)| i);
        match event {
            XmlEvent::Start(ref e) | XmlEvent::Empty(ref e) => {
                if open.is_empty() && has_root {
                    error = Some(format!("a second root element (at byte {at})"));
                    break;
                }
                has_root = true;
                let empty = matches!(event, XmlEvent::Empty(_));
                match start_element(&mut doc, parent, e, &mut scope) {
                    Ok((idx, declared, unbound)) => {
                        if let (None, Some(prefix)) = (&unbound_prefix, unbound) {
                            unbound_prefix = Some(format!(
                                "the prefix \"{prefix}\" is not bound to a namespace (at byte {at})"
                            ));
                        }
                        doc.nodes[parent as usize].children.push(idx);
                        let before = scope.len() - declared;
                        if empty {
                            scope.truncate(before);
                        } else {
                            open.push((idx, before));
                        }
                    }
                    Err(e) => {
                        error = Some(format!("{e} (at byte {at})"));
                        break;
                    }
                }
            }
            XmlEvent::End(_) => {
                if let Some((_, len)) = open.pop() {
                    scope.truncate(len);
                }
            }
            XmlEvent::Text(t) => {
                let text = t.xml_content(quick_xml::XmlVersion::Implicit1_0);
                if open.is_empty() {
                    if !text.trim().is_empty() {
                        error = Some(format!("text outside the root element (at byte {at})"));
                        break;
                    }
                } else if !(options.no_blanks && text.trim().is_empty()) {
                    doc.push_text(parent, &text, false);
                }
            }
            XmlEvent::CData(c) => {
                if open.is_empty() {
                    error = Some(format!("CDATA outside the root element (at byte {at})"));
                    break;
                }
                let text = c.into_inner();
                doc.push_text(parent, &text, !options.no_cdata);
            }
            XmlEvent::GeneralRef(r) => {
                let c = if r.is_char_ref() {
                    r.resolve_char_ref().ok().flatten()
                } else {
                    predefined(&r.into_inner())
                };
                let Some(c) = c else {
                    error = Some(format!("an undefined entity (at byte {at})"));
                    break;
                };
                if open.is_empty() {
                    error = Some(format!("text outside the root element (at byte {at})"));
                    break;
                }
                doc.push_text(parent, c.encode_utf8(&mut [0u8; 4]), false);
            }
            XmlEvent::Comment(c) => {
                let mut data = NodeData::new(Kind::Comment, parent);
                data.value = c.into_inner().into_owned();
                let idx = doc.push(data);
                doc.nodes[parent as usize].children.push(idx);
            }
            XmlEvent::PI(pi) => {
                let mut data = NodeData::new(Kind::Instruction, parent);
                data.name = pi.target().to_owned();
                data.value = pi.content().trim_start().to_owned();
                let idx = doc.push(data);
                doc.nodes[parent as usize].children.push(idx);
            }
            XmlEvent::Eof => {
                if !open.is_empty() {
                    error = Some("an element is not closed at the end".to_owned());
                } else if !has_root {
                    error = Some("no root element".to_owned());
                }
                break;
            }
            XmlEvent::Decl(_) | XmlEvent::DocType(_) => {}
        }
    }
    Parsed {
        doc,
        error,
        unbound: unbound_prefix,
    }
}

/// Adds an element and its attributes, its declarations to `scope`; returns its index, how
/// many bindings it declared, and a prefix it uses that is bound to nothing.
fn start_element(
    doc: &mut Document,
    parent: u32,
    e: &quick_xml::events::BytesStart,
    scope: &mut Vec<(String, u32)>,
) -> Result<(u32, usize, Option<String>), String> {
    let mut element = NodeData::new(Kind::Element, parent);
    element.name = e.name().as_ref().to_owned();
    let idx = doc.push(element);
    let mut declared = 0;
    for a in e.attributes() {
        let a = a.map_err(|e| e.to_string())?;
        let name = a.key.as_ref().to_owned();
        let value = a
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(|e| e.to_string())?
            .into_owned();
        let mut data = NodeData::new(Kind::Attribute, idx);
        if name == "xmlns" || name.starts_with("xmlns:") {
            data.declaration = true;
            let prefix = name.strip_prefix("xmlns:").unwrap_or("");
            let uri = doc.intern(&value);
            scope.push((prefix.to_owned(), uri));
            declared += 1;
        }
        data.name = name;
        data.value = value;
        let a = doc.push(data);
        doc.nodes[idx as usize].attributes.push(a);
    }
    let mut unbound = None;
    let mut resolve = |doc: &mut Document, node: u32, element: bool| {
        let n = &doc.nodes[node as usize];
        let prefix = match n.name.split_once(':') {
            Some((p, _)) => p,
            None if element => "",
            None => return,
        };
        if prefix == "xml" {
            doc.nodes[node as usize].uri = doc.intern(XML_NAMESPACE);
            return;
        }
        match scope.iter().rev().find(|(p, _)| p == prefix) {
            Some(&(_, uri)) => doc.nodes[node as usize].uri = uri,
            None if prefix.is_empty() => {}
            None => unbound = Some(prefix.to_owned()),
        }
    };
    resolve(doc, idx, true);
    // The attributes are the nodes after the element.
    for a in idx + 1..doc.nodes.len() as u32 {
        if !doc.nodes[a as usize].declaration {
            resolve(doc, a, false);
        }
    }
    Ok((idx, declared, unbound))
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
