//! Building the pipelines under test, as logstash-filter-verifier's daemon mode rewrites them:
//! plugin mocks first (by id, anywhere, conditionals included), then every input but
//! `pipeline` becomes a tap (a `pipeline` input keeping its `type`, `tags` and `add_field`;
//! its codec decodes the test's lines) and every output but `pipeline` a collector (a `null`
//! output keeping the original's id). `pipeline` outputs are kept as links between the
//! pipelines: the harness hands their events to the pipelines listening on the addresses.
//! Only filters are built for real, so a config that names an output or input plugin sluice
//! does not have still runs its filters; an unknown filter (or the tapped input's codec) is an
//! error naming it.
//!
//! LFV 1.x's files (standalone mode) run the filters alone: the config's input and output
//! sections are removed and one tap and one collector of the harness's own take their place
//! (the tap's codec and fields then come from each test file).

use std::path::{Path, PathBuf};

use sluice_config::{Attribute, Config, Plugin, SectionKind, Statement, Value as Ast};
use sluice_pipeline::graph;
use sluice_pipeline::plugin::InputDecoration;
use sluice_pipeline::Registry;

/// Where a compiled output's events go.
#[derive(Debug, Clone)]
pub enum Sink {
    /// Collected for comparison, under this output id.
    Collect(String),
    /// A `pipeline` output (its id): sent on to these addresses.
    Send { id: String, to: Vec<String> },
}

/// An input of the config the test's events can enter through.
pub struct Tap {
    pub id: String,
    /// The input's plugin (`stdin`, `beats`, ...), before it became a tap.
    pub input: String,
    /// The input's own `ecs_compatibility`, if it sets one (else the pipeline's applies).
    pub ecs: Option<bool>,
    /// Index of its pipeline in [`Harness::stages`].
    pub stage: usize,
    /// Its `codec` (plain when it has none), built per test-case file.
    pub codec: Plugin,
    pub decoration: InputDecoration,
}

/// A `pipeline` input of a pipeline under test.
pub struct Listen {
    pub address: String,
    pub id: String,
    /// What it adds to the events it gets.
    pub decoration: InputDecoration,
}

/// One pipeline, rewritten and compiled once (to report errors before anything runs).
pub struct Stage {
    /// The rewritten config: each test-case file compiles it again, so that no filter state
    /// (aggregate maps, ruby's `init`, caches, the final flush done) carries over.
    pub config: Config,
    /// Per compiled output, by index.
    pub sinks: Vec<Sink>,
    /// The plugins, with this pipeline's `pipeline.ecs_compatibility` as their default.
    pub registry: Registry,
    /// The `pipeline` inputs.
    pub listens: Vec<Listen>,
    /// The pipeline's id.
    pub id: String,
    /// `pipeline.lineage` (its pipelines.yml entry, or `sluice test --lineage`): events
    /// keep `[@metadata][lineage]` as a running pipeline gives it them.
    pub lineage: bool,
}

pub struct Harness {
    pub stages: Vec<Stage>,
    pub taps: Vec<Tap>,
    /// The order of the final flush: a pipeline after every pipeline that sends to it (as
    /// Logstash stops senders first), so that what a sender's flush releases still meets the
    /// receiver's filters before they flush.
    pub flush_order: Vec<usize>,
    /// LFV 1.x's `--sockets` (see [`Source::sockets`]).
    pub sockets: bool,
}

/// What `sluice test` was told about the config.
pub struct Source<'a> {
    /// A config file, directory or glob; with `pipelines`, the directory relative
    /// `path.config` entries start from.
    pub config: Option<&'a str>,
    pub pipelines: Option<&'a Path>,
    pub mock: Option<&'a Path>,
    /// Plugins without an `id` are named as sluice names them; otherwise they are an error
    /// (LFV's `--add-missing-id`).
    pub add_missing_id: bool,
    /// LFV 1.x's standalone mode: the configs' inputs and outputs are removed and one
    /// pipeline of their filters runs between an input and an output of the harness's own.
    pub standalone: bool,
    /// LFV 1.x's `--sockets`: standalone events come through a unix input, not stdin.
    pub sockets: bool,
    /// `--lineage`: every pipeline keeps `[@metadata][lineage]`.
    pub lineage: bool,
}

const TAP_PREFIX: &str = "__sluice_test_input_";

impl Harness {
    pub fn build(src: &Source) -> Result<Harness, String> {
        let mocks = match src.mock {
            Some(p) => load_mocks(p)?,
            None => Vec::new(),
        };
        let mut used = vec![false; mocks.len()];
        let plugins = sluice_plugins::registry();
        let mut stages = Vec::new();
        let mut taps = Vec::new();
        let mut loaded = load_configs(src)?;
        if src.standalone {
            if loaded.len() > 1 {
                return Err(format!(
                    "LFV 1.x test files (no \"input_plugin\") run one pipeline's filters; \
                     the pipelines file names {}",
                    loaded.len()
                ));
            }
            for l in &mut loaded {
                standalone(&mut l.config);
            }
        }
        for Loaded {
            id,
            mut config,
            ecs_compatibility,
            lineage,
        } in loaded
        {
            let mut registry = plugins.clone();
            registry.set_ecs_compatibility(ecs_compatibility);
            apply_mocks(&mut config, &mocks, &mut used)?;
            if !src.add_missing_id {
                require_ids(&config)?;
            }
            let stage = stages.len();
            let mut listens = Vec::new();
            let mut sinks = Vec::new();
            // Per input, in order: whether it became a tap (true) or is a `pipeline` input.
            let mut slots = Vec::new();
            for section in &mut config.sections {
                match section.kind {
                    SectionKind::Input => {
                        for st in &mut section.body {
                            if let Statement::Plugin(p) = st {
                                slots.push(tap_input(p, stage, &mut taps, &mut listens)?);
                            }
                        }
                    }
                    SectionKind::Output => collect_outputs(&mut section.body, &mut sinks)?,
                    SectionKind::Filter => {}
                }
            }
            let compiled = graph::compile(&config, &registry).map_err(|e| e.to_string())?;
            // Inputs compile in the order they were rewritten: what each adds to its events.
            let mut stage_taps = taps.iter_mut().filter(|t| t.stage == stage);
            let mut stage_listens = listens.iter_mut();
            for (is_tap, built) in slots.iter().zip(&compiled.inputs) {
                let slot = match is_tap {
                    true => stage_taps.next().map(|t| &mut t.decoration),
                    false => stage_listens.next().map(|l| &mut l.decoration),
                };
                if let Some(d) = slot {
                    *d = built.decoration.clone();
                }
            }
            if sinks.len() != compiled.outputs.len() {
                return Err(format!(
                    "pipeline {id}: {} outputs compiled for {} rewritten (a bug)",
                    compiled.outputs.len(),
                    sinks.len()
                ));
            }
            stages.push(Stage {
                config,
                sinks,
                registry,
                listens,
                id,
                lineage,
            });
        }
        // As LFV, a mock file may hold mocks for other configs: said, not an error.
        for (i, _) in used.iter().enumerate().filter(|(_, u)| !**u) {
            eprintln!(
                "note: mock {:?} matches no plugin of the config (unused)",
                mocks[i].0
            );
        }
        let flush_order = senders_first(&stages);
        Ok(Harness {
            stages,
            taps,
            flush_order,
            sockets: src.sockets,
        })
    }

    /// The config's only input (for a test file that names none).
    pub fn only_tap(&self) -> Result<&Tap, String> {
        match &self.taps[..] {
            [tap] => Ok(tap),
            [] => Err("the config has no input for the test's events to enter through".to_owned()),
            taps => {
                let ids: Vec<&str> = taps.iter().map(|t| t.id.as_str()).collect();
                Err(format!(
                    "the config has several inputs ({}): name one with `input:`",
                    ids.join(", ")
                ))
            }
        }
    }

    pub fn tap(&self, id: &str) -> Result<&Tap, String> {
        self.taps.iter().find(|t| t.id == id).ok_or_else(|| {
            let ids: Vec<&str> = self.taps.iter().map(|t| t.id.as_str()).collect();
            format!(
                "input plugin {id:?} defined in test case but not present in the config (inputs: {})",
                ids.join(", ")
            )
        })
    }
}

/// The input LFV 1.x files' events enter through (see [`standalone`]).
pub const STANDALONE_INPUT: &str = "__lfv1_input";

/// The `path` LFV 1.x's unix input (`--sockets`) gives its events.
pub const SOCKET_PATH: &str = "/tmp/sluice-test/socket";

/// LFV 1.x's rewrite: the config's inputs and outputs removed, one input and one output
/// added (the input's codec and fields come from each test file).
fn standalone(config: &mut Config) {
    config
        .sections
        .retain(|s| matches!(s.kind, SectionKind::Filter));
    let ends = format!(
        "input {{ stdin {{ id => \"{STANDALONE_INPUT}\" }} }}\noutput {{ null {{ id => \"__lfv1_output\" }} }}"
    );
    let ends = sluice_config::parse("LFV 1.x's input and output", &ends)
        .expect("the harness's own input and output parse");
    config.sections.extend(ends.sections);
}

/// The pipelines in an order where each comes after those whose `pipeline` outputs reach it
/// (pipelines in a loop keep their order among themselves).
fn senders_first(stages: &[Stage]) -> Vec<usize> {
    let sends_to = |from: &Stage, to: &Stage| {
        from.sinks.iter().any(|sink| match sink {
            Sink::Send { to: addresses, .. } => addresses
                .iter()
                .any(|a| to.listens.iter().any(|l| &l.address == a)),
            Sink::Collect(_) => false,
        })
    };
    let n = stages.len();
    let mut order = Vec::with_capacity(n);
    let mut placed = vec![false; n];
    while order.len() < n {
        // The first pipeline not placed that no unplaced pipeline sends to; in a loop, the
        // first not placed.
        let next = (0..n)
            .filter(|&t| !placed[t])
            .find(|&t| (0..n).all(|s| placed[s] || s == t || !sends_to(&stages[s], &stages[t])))
            .or_else(|| (0..n).find(|&t| !placed[t]))
            .expect("a pipeline is left");
        placed[next] = true;
        order.push(next);
    }
    order
}

/// A pipeline under test, as its settings say to read it.
struct Loaded {
    id: String,
    config: Config,
    /// `pipeline.ecs_compatibility` of its `pipelines.yml` entry.
    ecs_compatibility: Option<String>,
    /// `pipeline.lineage` of its entry, or `--lineage`.
    lineage: bool,
}

/// Each pipeline under test, parsed (with its entry's `config.support_escapes`).
fn load_configs(src: &Source) -> Result<Vec<Loaded>, String> {
    let finish = |id: &str,
                  parsed: Result<Config, sluice_config::ParseError>,
                  ecs,
                  lineage: Option<bool>| {
        let mut config = parsed.map_err(|e| e.to_string())?;
        config
            .substitute_env(&|name| std::env::var(name).ok())
            .map_err(|e| e.to_string())?;
        Ok::<_, String>(Loaded {
            id: id.to_owned(),
            config,
            ecs_compatibility: ecs,
            lineage: src.lineage || lineage == Some(true),
        })
    };
    let Some(file) = src.pipelines else {
        let Some(config) = src.config else {
            return Err("sluice test: give --config PATH (or --pipelines FILE)".to_owned());
        };
        let sources = sluice_config::load_path(config).map_err(|e| e.to_string())?;
        return Ok(vec![finish(
            "main",
            sluice_config::parse_sources(&sources),
            None,
            None,
        )?]);
    };
    let text =
        std::fs::read_to_string(file).map_err(|e| format!("reading {}: {e}", file.display()))?;
    let entries = sluice_config::parse_pipelines(&file.display().to_string(), &text)
        .map_err(|e| e.to_string())?;
    let base: PathBuf = match src.config {
        Some(c) => PathBuf::from(c),
        None => file.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    let mut out = Vec::new();
    for entry in entries {
        let opts = sluice_config::ParseOptions {
            support_escapes: entry.config_support_escapes.unwrap_or(false),
        };
        let ecs = entry.pipeline.ecs_compatibility.clone();
        let parsed = match (&entry.path_config, &entry.config_string) {
            (Some(p), _) => {
                let path = if Path::new(p).is_absolute() {
                    PathBuf::from(p)
                } else {
                    base.join(p)
                };
                let sources =
                    sluice_config::load_path(&path.to_string_lossy()).map_err(|e| e.to_string())?;
                sluice_config::parse_sources_with(&sources, &opts)
            }
            (None, Some(text)) => {
                let name = format!("config.string of pipeline {}", entry.id);
                sluice_config::parse_with(&name, text, &opts)
            }
            (None, None) => {
                return Err(format!(
                    "pipeline {}: needs path.config or config.string",
                    entry.id
                ))
            }
        };
        out.push(finish(&entry.id, parsed, ecs, entry.pipeline.lineage)?);
    }
    Ok(out)
}

/// LFV's mock file: a YAML list of `{id, mock}`; an empty `mock` removes the plugin, any other
/// is a plugin (as written inside a section) that replaces it, keeping its id.
fn load_mocks(path: &Path) -> Result<Vec<(String, Option<Plugin>)>, String> {
    let at = |m: String| format!("{}: {m}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| at(format!("cannot read: {e}")))?;
    let doc = super::cases::yaml_to_json(&text).map_err(at)?;
    let items = match doc {
        serde_json::Value::Array(items) => items,
        serde_json::Value::Null => Vec::new(),
        _ => return Err(at("expected a list of mocks (`- id: ...`)".to_owned())),
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let id = item
            .get("id")
            .and_then(|v| v.as_str())
            .ok_or_else(|| at(format!("mock {}: needs an \"id\"", i + 1)))?;
        let text = match item.get("mock") {
            None | Some(serde_json::Value::Null) => "",
            Some(serde_json::Value::String(s)) => s.trim(),
            Some(other) => {
                return Err(at(format!(
                    "mock {id}: \"mock\" must be the replacing plugin's text (or empty to remove it), not {other}"
                )))
            }
        };
        let mock = match text {
            "" => None,
            text => {
                let name = format!("{} (mock {id})", path.display());
                let config = sluice_config::parse(&name, &format!("filter {{\n{text}\n}}"))
                    .map_err(|e| e.to_string())?;
                let first = config
                    .sections
                    .into_iter()
                    .flat_map(|s| s.body)
                    .find_map(|st| match st {
                        Statement::Plugin(p) => Some(p),
                        Statement::If(_) => None,
                    })
                    .ok_or_else(|| at(format!("mock {id}: holds no plugin")))?;
                Some(first)
            }
        };
        out.push((id.to_owned(), mock));
    }
    Ok(out)
}

/// The plugin's `id` option as written, if it is a plain string.
fn explicit_id(p: &Plugin) -> Option<String> {
    p.attributes
        .iter()
        .find(|a| a.name == "id")
        .and_then(|a| match &a.value {
            Ast::String(s) | Ast::Bareword(s) => Some(s.clone()),
            _ => None,
        })
}

/// The id sluice gives the plugin (its `id`, or `name@line:column`).
fn plugin_id(p: &Plugin) -> String {
    explicit_id(p).unwrap_or_else(|| format!("{}@{}:{}", p.name, p.span.line, p.span.column))
}

fn apply_mocks(
    config: &mut Config,
    mocks: &[(String, Option<Plugin>)],
    used: &mut [bool],
) -> Result<(), String> {
    fn walk(body: &mut Vec<Statement>, mocks: &[(String, Option<Plugin>)], used: &mut [bool]) {
        let mut i = 0;
        while i < body.len() {
            match &mut body[i] {
                Statement::Plugin(p) => {
                    let id = explicit_id(p);
                    if let Some(k) = mocks.iter().position(|(m, _)| Some(m) == id.as_ref()) {
                        used[k] = true;
                        match &mocks[k].1 {
                            None => {
                                body.remove(i);
                                continue;
                            }
                            Some(mock) => {
                                let mut m = mock.clone();
                                m.attributes.retain(|a| a.name != "id");
                                m.attributes.push(Attribute {
                                    name: "id".to_owned(),
                                    span: m.span,
                                    value: Ast::String(mocks[k].0.clone()),
                                });
                                *p = m;
                            }
                        }
                    }
                }
                Statement::If(stmt) => {
                    for b in &mut stmt.branches {
                        walk(&mut b.body, mocks, used);
                    }
                    if let Some(e) = &mut stmt.else_body {
                        walk(e, mocks, used);
                    }
                }
            }
            i += 1;
        }
    }
    for section in &mut config.sections {
        walk(&mut section.body, mocks, used);
    }
    Ok(())
}

/// LFV needs every plugin to have an `id` unless told to add the missing ones.
fn require_ids(config: &Config) -> Result<(), String> {
    fn walk(body: &[Statement], missing: &mut Vec<String>) {
        for st in body {
            match st {
                Statement::Plugin(p) => {
                    if explicit_id(p).is_none() {
                        missing.push(format!(
                            "{}:{}:{}: {}",
                            p.source, p.span.line, p.span.column, p.name
                        ));
                    }
                }
                Statement::If(stmt) => {
                    for b in &stmt.branches {
                        walk(&b.body, missing);
                    }
                    if let Some(e) = &stmt.else_body {
                        walk(e, missing);
                    }
                }
            }
        }
    }
    let mut missing = Vec::new();
    for s in &config.sections {
        walk(&s.body, &mut missing);
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "plugins without an id (give each an `id`, or run with --add-missing-id):\n  {}",
        missing.join("\n  ")
    ))
}

/// Turns an input into a tap (or, for a `pipeline` input, records its address), leaving a
/// `pipeline` input that compiles its decoration. Returns whether it became a tap.
fn tap_input(
    p: &mut Plugin,
    stage: usize,
    taps: &mut Vec<Tap>,
    listens: &mut Vec<Listen>,
) -> Result<bool, String> {
    let id = plugin_id(p);
    if p.name == "pipeline" {
        let address = p
            .attributes
            .iter()
            .find(|a| a.name == "address")
            .and_then(|a| match &a.value {
                Ast::String(s) | Ast::Bareword(s) => Some(s.clone()),
                _ => None,
            })
            .unwrap_or_default();
        listens.push(Listen {
            address,
            id,
            decoration: InputDecoration::default(),
        });
        return Ok(false);
    }
    if taps.iter().any(|t| t.id == id) {
        return Err(format!(
            "{}:{}:{}: two inputs have the id {id:?}: give each input its own id",
            p.source, p.span.line, p.span.column
        ));
    }
    let codec = p
        .attributes
        .iter()
        .rev()
        .find(|a| a.name == "codec")
        .and_then(|a| match &a.value {
            Ast::Plugin(c) => Some(c.clone()),
            Ast::String(name) | Ast::Bareword(name) => Some(Plugin {
                name: name.clone(),
                span: a.span,
                attributes: Vec::new(),
                source: p.source.clone(),
            }),
            _ => None,
        })
        .unwrap_or_else(|| Plugin {
            name: "plain".to_owned(),
            span: p.span,
            attributes: Vec::new(),
            source: p.source.clone(),
        });
    let mut attributes: Vec<Attribute> = p
        .attributes
        .iter()
        .filter(|a| matches!(a.name.as_str(), "type" | "tags" | "add_field"))
        .cloned()
        .collect();
    for (name, value) in [("id", id.clone()), ("address", format!("{TAP_PREFIX}{id}"))] {
        attributes.push(Attribute {
            name: name.to_owned(),
            span: p.span,
            value: Ast::String(value),
        });
    }
    let ecs = p
        .attributes
        .iter()
        .find(|a| a.name == "ecs_compatibility")
        .and_then(|a| match &a.value {
            Ast::String(s) | Ast::Bareword(s) => Some(s != "disabled"),
            _ => None,
        });
    let input = std::mem::replace(&mut p.name, "pipeline".to_owned());
    p.attributes = attributes;
    taps.push(Tap {
        id,
        input,
        ecs,
        stage,
        codec,
        decoration: InputDecoration::default(),
    });
    Ok(true)
}

/// Replaces every output with a `null` output of the same id, recording where its events go,
/// in the order the compiler numbers outputs (branches in order, then `else`).
fn collect_outputs(body: &mut [Statement], sinks: &mut Vec<Sink>) -> Result<(), String> {
    for st in body {
        match st {
            Statement::Plugin(p) => {
                let id = plugin_id(p);
                if p.name == "pipeline" {
                    let mut to = Vec::new();
                    for a in p.attributes.iter().filter(|a| a.name == "send_to") {
                        match &a.value {
                            Ast::String(s) | Ast::Bareword(s) => to.push(s.clone()),
                            Ast::Array(items) => {
                                for v in items {
                                    if let Ast::String(s) | Ast::Bareword(s) = v {
                                        to.push(s.clone());
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                    if to.is_empty() {
                        return Err(format!(
                            "{}:{}:{}: pipeline output {id:?} has no send_to",
                            p.source, p.span.line, p.span.column
                        ));
                    }
                    sinks.push(Sink::Send { id: id.clone(), to });
                } else {
                    sinks.push(Sink::Collect(id.clone()));
                }
                p.name = "null".to_owned();
                p.attributes = vec![Attribute {
                    name: "id".to_owned(),
                    span: p.span,
                    value: Ast::String(id),
                }];
            }
            Statement::If(stmt) => {
                for b in &mut stmt.branches {
                    collect_outputs(&mut b.body, sinks)?;
                }
                if let Some(e) = &mut stmt.else_body {
                    collect_outputs(e, sinks)?;
                }
            }
        }
    }
    Ok(())
}
