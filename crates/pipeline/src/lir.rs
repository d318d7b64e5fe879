//! The pipeline as Logstash's monitoring API draws it (its "LIR" graph, served by
//! `GET /_node/pipelines?graph=true` and read by Kibana's pipeline viewer through Metricbeat):
//! a vertex per plugin, per conditional and for the queue, and the edges events take between
//! them.
//!
//! Built from the parsed config and the compiled plugins (for their ids, which the stats
//! vertices share): inputs → `__QUEUE__` → the filter section → the output section. A
//! conditional is a vertex with a `true` edge into its branch and a `false` edge to what
//! follows (an `else if` is the `false` branch's own conditional), as Logstash's graph has
//! them; the separator Logstash puts between filters and outputs is not drawn, so the
//! filters' last vertices lead straight to the outputs. Ids: the plugin's `id` option, else
//! sluice's generated id (the same the stats use); a conditional's id and every edge's id are
//! SHA-256 hex digests of their source position and ends, as Logstash makes them.

use sha2::{Digest, Sha256};
use sluice_config::{CompareOp, Expr, Number, Operand};
use sluice_config::{Config, SectionKind, Statement};

use crate::graph::Compiled;

/// The graph of one pipeline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Graph {
    pub vertices: Vec<Vertex>,
    pub edges: Vec<Edge>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Vertex {
    pub id: String,
    /// The id came from the config's `id` option.
    pub explicit_id: bool,
    pub kind: VertexKind,
    /// Where it is in the config (none for the queue).
    pub source: Option<Source>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum VertexKind {
    /// `plugin_type` is `input`, `filter` or `output`.
    Plugin {
        config_name: String,
        plugin_type: &'static str,
    },
    /// The condition as text (`[status] >= 500`).
    If {
        condition: String,
    },
    Queue,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// `file` (id: the file's path) or `string` (id: `config_string`).
    pub protocol: &'static str,
    pub id: String,
    pub line: u32,
    pub column: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    pub id: String,
    pub from: String,
    pub to: String,
    /// A conditional's branch: `true` into it, `false` past it. `None`: a plain edge.
    pub when: Option<bool>,
}

pub const QUEUE_ID: &str = "__QUEUE__";

fn digest(text: &str) -> String {
    let mut hex = String::with_capacity(64);
    for b in Sha256::digest(text.as_bytes()) {
        hex.push_str(&format!("{b:02x}"));
    }
    hex
}

fn source_of(file: &str, span: sluice_config::Span) -> Source {
    let is_file =
        !file.is_empty() && !file.starts_with("config string") && !file.contains("config.string");
    Source {
        protocol: if is_file { "file" } else { "string" },
        id: if is_file {
            file.to_owned()
        } else {
            "config_string".to_owned()
        },
        line: span.line,
        column: span.column,
    }
}

/// Where events leave a part of the graph: a vertex, and the branch they take out of it.
type Tails = Vec<(String, Option<bool>)>;

struct Builder<'a> {
    compiled: &'a Compiled,
    graph: Graph,
    filters: usize,
    outputs: usize,
}

impl Builder<'_> {
    fn edge(&mut self, from: &str, to: &str, when: Option<bool>) {
        let id = match when {
            None => digest(&format!("{from}->{to}")),
            Some(w) => digest(&format!("{from}[{w}]->{to}")),
        };
        self.graph.edges.push(Edge {
            id,
            from: from.to_owned(),
            to: to.to_owned(),
            when,
        });
    }

    fn connect(&mut self, tails: &Tails, to: &str) {
        for (from, when) in tails {
            self.edge(from, to, *when);
        }
    }

    /// Adds the statements' vertices, fed by `tails`; returns where events leave them.
    fn statements(
        &mut self,
        kind: SectionKind,
        file: &str,
        body: &[Statement],
        mut tails: Tails,
    ) -> Tails {
        for st in body {
            match st {
                Statement::Plugin(p) => {
                    let (id, plugin_type) = match kind {
                        SectionKind::Filter => {
                            self.filters += 1;
                            (self.compiled.filters[self.filters - 1].id.clone(), "filter")
                        }
                        _ => {
                            self.outputs += 1;
                            (self.compiled.outputs[self.outputs - 1].id.clone(), "output")
                        }
                    };
                    self.graph.vertices.push(Vertex {
                        explicit_id: p.attributes.iter().any(|a| a.name == "id"),
                        id: id.clone(),
                        kind: VertexKind::Plugin {
                            config_name: p.name.clone(),
                            plugin_type,
                        },
                        source: Some(source_of(file, p.span)),
                    });
                    self.connect(&tails, &id);
                    tails = vec![(id, None)];
                }
                Statement::If(stmt) => {
                    let mut out: Tails = Vec::new();
                    for b in &stmt.branches {
                        let condition = expr_text(&b.condition);
                        let source = source_of(file, b.span);
                        let id = digest(&format!(
                            "{}|{}|{}|{}|{condition}",
                            source.id, source.protocol, source.line, source.column
                        ));
                        self.graph.vertices.push(Vertex {
                            id: id.clone(),
                            explicit_id: false,
                            kind: VertexKind::If { condition },
                            source: Some(source),
                        });
                        self.connect(&tails, &id);
                        out.extend(self.statements(
                            kind,
                            file,
                            &b.body,
                            vec![(id.clone(), Some(true))],
                        ));
                        tails = vec![(id, Some(false))];
                    }
                    if let Some(body) = &stmt.else_body {
                        tails = self.statements(kind, file, body, tails);
                    }
                    out.extend(tails);
                    tails = out;
                }
            }
        }
        tails
    }
}

/// The graph of a compiled config (`compiled` must come from `config`).
pub fn describe(config: &Config, compiled: &Compiled) -> Graph {
    let mut b = Builder {
        compiled,
        graph: Graph::default(),
        filters: 0,
        outputs: 0,
    };
    let mut inputs = 0;
    for section in config
        .sections
        .iter()
        .filter(|s| s.kind == SectionKind::Input)
    {
        for st in &section.body {
            if let Statement::Plugin(p) = st {
                let id = compiled.inputs[inputs].id.clone();
                inputs += 1;
                b.graph.vertices.push(Vertex {
                    explicit_id: p.attributes.iter().any(|a| a.name == "id"),
                    id,
                    kind: VertexKind::Plugin {
                        config_name: p.name.clone(),
                        plugin_type: "input",
                    },
                    source: Some(source_of(&section.source, p.span)),
                });
            }
        }
    }
    let input_ids: Vec<String> = b.graph.vertices.iter().map(|v| v.id.clone()).collect();
    b.graph.vertices.push(Vertex {
        id: QUEUE_ID.to_owned(),
        explicit_id: false,
        kind: VertexKind::Queue,
        source: None,
    });
    for id in &input_ids {
        b.edge(id, QUEUE_ID, None);
    }
    let mut tails: Tails = vec![(QUEUE_ID.to_owned(), None)];
    for kind in [SectionKind::Filter, SectionKind::Output] {
        for section in config.sections.iter().filter(|s| s.kind == kind) {
            tails = b.statements(kind, &section.source, &section.body, tails);
        }
    }
    b.graph
}

/// A condition as text, as Logstash prints it (operands and operators as written, compound
/// operands in parentheses).
pub fn expr_text(e: &Expr) -> String {
    let paren = |e: &Expr| match e {
        Expr::And(..) | Expr::Or(..) | Expr::Xor(..) | Expr::Nand(..) => {
            format!("({})", expr_text(e))
        }
        _ => expr_text(e),
    };
    match e {
        Expr::And(a, b) => format!("{} and {}", paren(a), paren(b)),
        Expr::Or(a, b) => format!("{} or {}", paren(a), paren(b)),
        Expr::Xor(a, b) => format!("{} xor {}", paren(a), paren(b)),
        Expr::Nand(a, b) => format!("{} nand {}", paren(a), paren(b)),
        Expr::Not(a) => format!("!({})", expr_text(a)),
        Expr::Compare(op, a, b) => {
            format!("{} {} {}", operand(a), CompareOp::as_str(*op), operand(b))
        }
        Expr::Match(a, r) => format!("{} =~ /{}/", operand(a), r.source),
        Expr::NotMatch(a, r) => format!("{} !~ /{}/", operand(a), r.source),
        Expr::In(a, b) => format!("{} in {}", operand(a), operand(b)),
        Expr::NotIn(a, b) => format!("{} not in {}", operand(a), operand(b)),
        Expr::Truthy(a) => operand(a),
    }
}

fn operand(o: &Operand) -> String {
    match o {
        Operand::Field(f) => f.clone(),
        Operand::String(s) => format!("{s:?}"),
        Operand::Number(Number::Int(i)) => i.to_string(),
        Operand::Number(Number::Float(f)) => f.to_string(),
        Operand::Regex(r) => format!("/{}/", r.source),
        Operand::Array(items) => {
            format!(
                "[{}]",
                items.iter().map(operand).collect::<Vec<_>>().join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nothing;
    impl crate::Input for Nothing {
        fn run(&mut self, _: &crate::InputContext) -> Result<(), String> {
            Ok(())
        }
    }
    impl crate::Filter for Nothing {
        fn filter(
            &mut self,
            _: &mut sluice_event::Event,
            _: &mut Vec<sluice_event::Event>,
        ) -> bool {
            true
        }
        fn clone_box(&self) -> Box<dyn crate::Filter> {
            Box::new(Nothing)
        }
    }
    impl crate::Output for Nothing {
        fn write(
            &self,
            _: &[&sluice_event::Event],
            _: &crate::plugin::WriteContext,
        ) -> Result<(), crate::plugin::OutputError> {
            Ok(())
        }
    }

    /// Plugins that do nothing, under the names the configs below use.
    fn registry() -> crate::registry::Registry {
        let mut r = crate::registry::Registry::new();
        r.add_input("stdin", |_| Ok(Box::new(Nothing)));
        for name in ["mutate", "drop", "uuid", "kv"] {
            r.add_filter(name, |_| Ok(Box::new(Nothing)));
        }
        r.add_output("stdout", |_| Ok(Box::new(Nothing)));
        r
    }

    fn graph(text: &str) -> Graph {
        let config = sluice_config::parse("config string", text).unwrap();
        let compiled = crate::graph::compile(&config, &registry()).unwrap();
        describe(&config, &compiled)
    }

    fn edges(g: &Graph) -> Vec<(String, String, Option<bool>)> {
        let name = |id: &str| {
            let v = g.vertices.iter().find(|v| v.id == id).unwrap();
            match &v.kind {
                VertexKind::Plugin { config_name, .. } => config_name.clone(),
                VertexKind::If { condition } => format!("if {condition}"),
                VertexKind::Queue => "queue".to_owned(),
            }
        };
        let mut e: Vec<_> = g
            .edges
            .iter()
            .map(|e| (name(&e.from), name(&e.to), e.when))
            .collect();
        e.sort();
        e
    }

    #[test]
    fn conditionals_branch_and_join_as_logstash_draws_them() {
        let g = graph(
            r#"input { stdin { id => "in" } }
               filter {
                 if [a] == "x" { mutate { } } else if [b] { drop { } } else { uuid { } }
                 kv { }
               }
               output { if [c] in ["p", "q"] { stdout { } } }"#,
        );
        let s = |a: &str, b: &str, w: Option<bool>| (a.to_owned(), b.to_owned(), w);
        assert_eq!(edges(&g), {
            let mut want = vec![
                s("stdin", "queue", None),
                s("queue", "if [a] == \"x\"", None),
                s("if [a] == \"x\"", "mutate", Some(true)),
                s("if [a] == \"x\"", "if [b]", Some(false)),
                s("if [b]", "drop", Some(true)),
                s("if [b]", "uuid", Some(false)),
                s("mutate", "kv", None),
                s("drop", "kv", None),
                s("uuid", "kv", None),
                s("kv", "if [c] in [\"p\", \"q\"]", None),
                s("if [c] in [\"p\", \"q\"]", "stdout", Some(true)),
            ];
            want.sort();
            want
        });
        let input = g.vertices.iter().find(|v| v.id == "in").unwrap();
        assert!(input.explicit_id);
        assert_eq!(input.source.as_ref().unwrap().protocol, "string");
        // Ids are unique, and edge ids follow their ends.
        let mut ids: Vec<&str> = g.vertices.iter().map(|v| v.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), g.vertices.len());
        assert!(g.edges.iter().all(|e| e.id.len() == 64));
    }

    #[test]
    fn conditions_print_as_written() {
        let config = sluice_config::parse(
            "config string",
            r#"filter { if ([a] > 1 and [b] =~ /x\/y/) or ![c] { } }"#,
        )
        .unwrap();
        let Statement::If(stmt) = &config.sections[0].body[0] else {
            panic!()
        };
        assert_eq!(
            expr_text(&stmt.branches[0].condition),
            "([a] > 1 and [b] =~ /x/y/) or !([c])"
        );
    }
}
