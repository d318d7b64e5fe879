//! A small YAML document tree that remembers where each node was written, built from
//! `yaml-rust2`'s event parser (its own `Yaml` tree drops positions). Anchors and aliases are
//! resolved here (an alias is a copy of its anchored node); merge keys (`<<`) are left to the
//! settings code, which flattens mappings anyway.

use std::collections::HashMap;

use yaml_rust2::parser::{MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};
use yaml_rust2::Event;

use crate::error::SettingsError;

/// 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Pos {
    pub line: u32,
    pub column: u32,
}

impl Pos {
    fn from_marker(m: &Marker) -> Pos {
        Pos {
            line: u32::try_from(m.line()).unwrap_or(u32::MAX),
            // yaml-rust2 counts columns from 0.
            column: u32::try_from(m.col() + 1).unwrap_or(u32::MAX),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    /// `~`, `null`, or nothing at all after `key:`.
    Null,
    /// Any other scalar, as written (after YAML unescaping); `plain` is false when quoted or
    /// a block scalar.
    Scalar {
        text: String,
        plain: bool,
    },
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub kind: Kind,
    pub pos: Pos,
}

impl Node {
    /// What the node is, for error messages ("a list", "a mapping", `"abc"`).
    pub fn describe(&self) -> String {
        match &self.kind {
            Kind::Null => "nothing (null)".to_string(),
            Kind::Scalar { text, .. } => format!("{text:?}"),
            Kind::Seq(_) => "a list".to_string(),
            Kind::Map(_) => "a mapping".to_string(),
        }
    }
}

/// Parses `text` into at most one document. `Ok(None)` for an empty stream (nothing, or only
/// comments).
pub(crate) fn parse(source_name: &str, text: &str) -> Result<Option<Node>, SettingsError> {
    let mut builder = Builder::default();
    let mut parser = Parser::new_from_str(text);
    if let Err(e) = parser.load(&mut builder, true) {
        let pos = Pos::from_marker(e.marker());
        return Err(SettingsError::new(
            source_name,
            pos,
            format!("invalid YAML: {}", e.info()),
        ));
    }
    if let Some(err) = builder.error {
        return Err(SettingsError::new(source_name, err.0, err.1));
    }
    let mut docs = builder.documents.into_iter();
    let first = docs.next();
    if let Some(second) = docs.next() {
        return Err(SettingsError::new(
            source_name,
            second.pos,
            "only one YAML document is expected (found a second `---` document)",
        ));
    }
    Ok(first)
}

enum Open {
    Seq(Vec<Node>),
    /// Entries so far, and a key waiting for its value.
    Map(Vec<(Node, Node)>, Option<Node>),
}

#[derive(Default)]
struct Builder {
    /// Open collections, each with its start position and anchor id.
    stack: Vec<(Open, Pos, usize)>,
    anchors: HashMap<usize, Node>,
    documents: Vec<Node>,
    error: Option<(Pos, String)>,
}

impl Builder {
    fn add(&mut self, node: Node, anchor: usize) {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => self.documents.push(node),
            Some((Open::Seq(items), _, _)) => items.push(node),
            Some((Open::Map(entries, pending), _, _)) => match pending.take() {
                None => *pending = Some(node),
                Some(key) => entries.push((key, node)),
            },
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        let pos = Pos::from_marker(&mark);
        match ev {
            Event::Scalar(text, style, anchor, _tag) => {
                let plain = style == TScalarStyle::Plain;
                let kind = if plain && matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL")
                {
                    Kind::Null
                } else {
                    Kind::Scalar { text, plain }
                };
                self.add(Node { kind, pos }, anchor);
            }
            Event::SequenceStart(anchor, _) => {
                self.stack.push((Open::Seq(Vec::new()), pos, anchor))
            }
            Event::MappingStart(anchor, _) => {
                self.stack.push((Open::Map(Vec::new(), None), pos, anchor))
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((open, start, anchor)) = self.stack.pop() {
                    let kind = match open {
                        Open::Seq(items) => Kind::Seq(items),
                        Open::Map(entries, _) => Kind::Map(entries),
                    };
                    // A block mapping's start event is marked after its first key; the key
                    // itself is a better place to point at.
                    let pos = match &kind {
                        Kind::Map(entries) => entries.first().map_or(start, |(k, _)| k.pos),
                        _ => start,
                    };
                    self.add(Node { kind, pos }, anchor);
                }
            }
            Event::Alias(id) => match self.anchors.get(&id) {
                Some(node) => {
                    let node = Node {
                        kind: node.kind.clone(),
                        pos,
                    };
                    self.add(node, 0);
                }
                None => self.error = Some((pos, "unknown YAML alias".to_string())),
            },
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd => {}
        }
    }
}
