//! Compiling a parsed config into the pipeline graph, and running batches through it.
//!
//! Filters and outputs become trees of plugin indexes and compiled [`Condition`]s. A worker
//! runs a whole batch through each filter in turn; at a conditional the batch is split into
//! one sub-batch per branch (only when events actually diverge), each branch runs on its
//! sub-batch, and the results are concatenated in branch order, as Logstash's execution does. Outputs get, per batch, the list of events that reached
//! them through the output section's conditionals.

use std::sync::Arc;
use std::time::Instant;

use sluice_config::{Config, SectionKind, Span, Statement};
use sluice_event::Event;

use crate::condition::Condition;
use crate::metrics::{PipelineMetrics, PluginInfo, PluginList};
use crate::options::{error_at, ConfigError};
use crate::plugin::Filter;
use crate::registry::{BuiltFilter, BuiltInput, BuiltOutput, FilterCommon, Registry};
use crate::tap::TapPoint;

#[derive(Debug)]
pub enum Node {
    /// A plugin, by index into the pipeline's filters or outputs.
    Plugin(usize),
    If {
        branches: Vec<(Condition, Vec<Node>)>,
        otherwise: Vec<Node>,
    },
}

/// A config turned into plugins and trees.
pub struct Compiled {
    pub inputs: Vec<BuiltInput>,
    pub filters: Vec<BuiltFilter>,
    pub filter_tree: Arc<Vec<Node>>,
    pub outputs: Vec<BuiltOutput>,
    pub output_tree: Vec<Node>,
}

struct Builder<'a> {
    /// The file of the section being compiled, for error messages.
    source: &'a str,
    registry: &'a Registry,
    compiled: Compiled,
    /// This compilation's [`crate::options::Options::compile_id`].
    compile: u64,
}

impl Builder<'_> {
    fn statements(
        &mut self,
        kind: SectionKind,
        span: Span,
        body: &[Statement],
    ) -> Result<Vec<Node>, ConfigError> {
        let mut nodes = Vec::with_capacity(body.len());
        for st in body {
            match st {
                Statement::Plugin(p) => match kind {
                    SectionKind::Input => {
                        let built = self.registry.build_input(self.source, p)?;
                        self.compiled.inputs.push(built);
                    }
                    SectionKind::Filter => {
                        let built = self.registry.build_filter(self.source, p, self.compile)?;
                        self.compiled.filters.push(built);
                        nodes.push(Node::Plugin(self.compiled.filters.len() - 1));
                    }
                    SectionKind::Output => {
                        let built = self.registry.build_output(self.source, p)?;
                        self.compiled.outputs.push(built);
                        nodes.push(Node::Plugin(self.compiled.outputs.len() - 1));
                    }
                },
                Statement::If(stmt) => {
                    if kind == SectionKind::Input {
                        let span = stmt.branches.first().map_or(span, |b| b.span);
                        return Err(error_at(
                            self.source,
                            span,
                            "conditionals are not allowed in the input section",
                        ));
                    }
                    let mut branches = Vec::with_capacity(stmt.branches.len());
                    for b in &stmt.branches {
                        let cond = Condition::compile(self.source, b.span, &b.condition)?;
                        branches.push((cond, self.statements(kind, b.span, &b.body)?));
                    }
                    let otherwise = match &stmt.else_body {
                        Some(body) => self.statements(kind, span, body)?,
                        None => Vec::new(),
                    };
                    nodes.push(Node::If {
                        branches,
                        otherwise,
                    });
                }
            }
        }
        Ok(nodes)
    }
}

impl Compiled {
    /// A filter chain for one worker: its own instance of every filter, sharing the tree.
    pub fn filter_chain(&self) -> FilterChain {
        FilterChain::new(
            self.filters
                .iter()
                .map(|f| (f.filter.clone_box(), Arc::clone(&f.common)))
                .collect(),
            Arc::clone(&self.filter_tree),
        )
    }

    /// A filter chain for worker `worker`, counting into that worker's [`PipelineMetrics`].
    pub fn filter_chain_counted(
        &self,
        metrics: Arc<PipelineMetrics>,
        worker: usize,
    ) -> FilterChain {
        let mut chain = self.filter_chain();
        chain.metrics = metrics;
        chain.worker = worker;
        chain
    }

    /// The plugins, as the monitoring API lists them.
    pub fn plugin_list(&self) -> PluginList {
        let info = |id: &str, name: &str, metrics: bool| PluginInfo {
            id: id.to_owned(),
            name: name.to_owned(),
            metrics,
        };
        PluginList {
            inputs: self
                .inputs
                .iter()
                .map(|i| info(&i.id, &i.name, i.metrics))
                .collect(),
            filters: self
                .filters
                .iter()
                .map(|f| info(&f.id, &f.name, f.metrics))
                .collect(),
            outputs: self
                .outputs
                .iter()
                .map(|o| info(&o.id, &o.name, o.metrics))
                .collect(),
            codecs: (self.inputs.iter().flat_map(|i| &i.codecs))
                .chain(self.outputs.iter().flat_map(|o| &o.codecs))
                .cloned()
                .collect(),
        }
    }
}

/// Builds every plugin of `config` and the filter and output trees.
pub fn compile(config: &Config, registry: &Registry) -> Result<Compiled, ConfigError> {
    static COMPILATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let mut b = Builder {
        source: "",
        registry,
        compile: COMPILATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        compiled: Compiled {
            inputs: Vec::new(),
            filters: Vec::new(),
            filter_tree: Arc::new(Vec::new()),
            outputs: Vec::new(),
            output_tree: Vec::new(),
        },
    };
    let mut filter_nodes = Vec::new();
    for section in &config.sections {
        b.source = &section.source;
        let nodes = b.statements(section.kind, section.span, &section.body)?;
        match section.kind {
            SectionKind::Input => {}
            SectionKind::Filter => filter_nodes.extend(nodes),
            SectionKind::Output => b.compiled.output_tree.extend(nodes),
        }
    }
    b.compiled.filter_tree = Arc::new(filter_nodes);
    Ok(b.compiled)
}

/// One worker's filters: its own instance of every filter, and the shared tree. Each filter's
/// events in and out and its time are added to this worker's counters once per (sub-)batch.
pub struct FilterChain {
    filters: Vec<(Box<dyn Filter>, Arc<FilterCommon>)>,
    tree: Arc<Vec<Node>>,
    emitted: Vec<Event>,
    /// Filters' dead letters of the last batch, on their way to the DLQ. Reused.
    dead_letters: Vec<(Event, String)>,
    /// `[@metadata][replay_safe_id]` and the pipeline's id, when events carry one: events a
    /// filter creates get an id derived from their parent's.
    replay_ids: Option<(sluice_event::FieldRef, String)>,
    metrics: Arc<PipelineMetrics>,
    worker: usize,
    /// `pipeline.ordered`: each event goes through the filters alone, so that events (and
    /// those filters make from them) leave in the order they came, conditionals and all.
    ordered: bool,
    /// The one event an ordered run passes down at a time. Reused.
    single: Vec<Event>,
    /// Per filter, its `pipeline/id` for `[@metadata][lineage]` (`pipeline.lineage`).
    lineage: Option<Box<[Arc<str>]>>,
    /// Whether any filter had a tap attached when the batch began ([`Self::run`]).
    tapped: bool,
}

impl FilterChain {
    /// True when the pipeline has no filters: events reach the outputs as inputs made them.
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    pub fn new(filters: Vec<(Box<dyn Filter>, Arc<FilterCommon>)>, tree: Arc<Vec<Node>>) -> Self {
        let plugins = PluginList {
            filters: vec![
                PluginInfo {
                    id: String::new(),
                    name: String::new(),
                    metrics: true,
                };
                filters.len()
            ],
            ..PluginList::default()
        };
        FilterChain {
            filters,
            tree,
            emitted: Vec::new(),
            dead_letters: Vec::new(),
            replay_ids: None,
            metrics: Arc::new(PipelineMetrics::new(plugins, 1)),
            worker: 0,
            ordered: false,
            single: Vec::new(),
            lineage: None,
            tapped: false,
        }
    }

    /// Events carry replay-safe ids (see [`crate::queue::ReplayIds`]): the `k`-th event
    /// filter `i` of pipeline `pipeline` creates from an event of id `P` gets id
    /// `P:pipeline:i.k` (1-based), the same at every replay, and different from every other
    /// event's, however many filters of however many pipelines create events.
    pub fn derive_replay_ids(&mut self, pipeline: &str) {
        let field = sluice_event::FieldRef::parse(crate::queue::REPLAY_SAFE_ID_FIELD)
            .expect("a valid field reference");
        self.replay_ids = Some((field, pipeline.to_owned()));
    }

    /// Runs a batch through the filters. Dropped events stay in place, cancelled.
    pub fn run(&mut self, events: &mut Vec<Event>) {
        let tree = Arc::clone(&self.tree);
        // Whether a filter is tapped, looked at once per batch (an ordered run goes through
        // the filters once per event).
        self.tapped = self.metrics.taps.filters.iter().any(TapPoint::is_attached);
        if !self.ordered || events.len() < 2 {
            return self.nodes(&tree, events);
        }
        // As Logstash's ordered execution: one event at a time through every filter, what
        // comes out of it (itself, and the events made from it) before the next one.
        let mut single = std::mem::take(&mut self.single);
        let mut out = Vec::with_capacity(events.len());
        for e in events.drain(..) {
            single.push(e);
            self.nodes(&tree, &mut single);
            out.append(&mut single);
        }
        *events = out;
        self.single = single;
    }

    /// Makes [`Self::run`] keep the events' order (`pipeline.ordered`): each event through
    /// the filters alone, rather than the batch split by conditionals and rejoined branch by
    /// branch, with filters' new events after the batch.
    pub fn set_ordered(&mut self, ordered: bool) {
        self.ordered = ordered;
    }

    /// True when a filter says a stop cut its last call short ([`Filter::cut_short`]): the
    /// batch just run must be neither delivered nor acked. Asks every filter (each says it once).
    pub fn cut_short(&mut self) -> bool {
        let mut cut = false;
        for (f, _) in &mut self.filters {
            cut |= f.cut_short();
        }
        cut
    }

    /// Drops the events filters set aside during a batch that is given up (not acked, so
    /// replayed by a persisted queue): they go to the dead letter queue when it comes again.
    pub fn discard_dead_letters(&mut self) {
        let mut taken = std::mem::take(&mut self.dead_letters);
        for (f, _) in &mut self.filters {
            f.take_dead_letters(&mut taken);
            taken.clear();
        }
        self.dead_letters = taken;
    }

    /// Writes the events filters set aside during the last batch to the dead letter queue,
    /// one write per filter that has some, and counts them for that filter. Without a DLQ
    /// (which filters check when they are built) they are dropped with an error.
    pub fn send_dead_letters(&mut self, dlq: Option<&crate::dead_letter::DeadLetterQueue>) {
        let mut taken = std::mem::take(&mut self.dead_letters);
        for (i, (f, _)) in self.filters.iter_mut().enumerate() {
            f.take_dead_letters(&mut taken);
            if taken.is_empty() {
                continue;
            }
            let info = self.metrics.plugins.filters.get(i);
            let (name, id) = info.map_or(("", ""), |p| (p.name.as_str(), p.id.as_str()));
            let items: Vec<(&Event, &str)> = taken.iter().map(|(e, r)| (e, r.as_str())).collect();
            let written = match dlq {
                Some(dlq) => dlq.write(name, id, &items),
                None => {
                    tracing::error!(filter = %id, events = items.len(), "no dead letter queue: events dropped");
                    0
                }
            };
            if let Some(c) = self.metrics.filter_dlq_routed.get(i) {
                c.fetch_add(written as u64, std::sync::atomic::Ordering::Relaxed);
            }
            drop(items);
            taken.clear();
        }
        self.dead_letters = taken;
    }

    /// The final flush, at the pipeline's end: filters that hold events back release them,
    /// and each filter's go through the filters that follow it (as at a periodic flush,
    /// without the common options).
    pub fn flush(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        for i in 0..self.filters.len() {
            let mut released = Vec::new();
            self.filters[i].0.flush(&mut released);
            if released.is_empty() {
                continue;
            }
            self.filtered(i, &mut released);
            let tree = Arc::clone(&self.tree);
            self.run_after(i, &tree, &mut released);
            out.append(&mut released);
        }
        out
    }

    /// Whether any filter asks for the periodic flush.
    pub fn wants_periodic_flush(&self) -> bool {
        self.filters.iter().any(|(f, _)| f.wants_periodic_flush())
    }

    /// Logstash's periodic flush: each filter that asks for it releases events, which get its
    /// common options and go through the filters that follow it (the rest of its branch, then
    /// what follows each enclosing conditional), as events that filter made.
    pub fn periodic_flush(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        for i in 0..self.filters.len() {
            let (filter, common) = &mut self.filters[i];
            if !filter.wants_periodic_flush() {
                continue;
            }
            let mut released = Vec::new();
            filter.flush_periodic(&mut released);
            if released.is_empty() {
                continue;
            }
            if !common.is_empty() && filter.decorates_new_events() {
                for e in &mut released {
                    common.apply(e);
                }
            }
            self.filtered(i, &mut released);
            let tree = Arc::clone(&self.tree);
            self.run_after(i, &tree, &mut released);
            out.append(&mut released);
        }
        out
    }

    /// Runs `events` through what follows filter `target` in `nodes`; false when `target` is
    /// not in them.
    fn run_after(&mut self, target: usize, nodes: &[Node], events: &mut Vec<Event>) -> bool {
        for (k, node) in nodes.iter().enumerate() {
            let found = match node {
                Node::Plugin(i) => *i == target,
                Node::If {
                    branches,
                    otherwise,
                } => {
                    branches
                        .iter()
                        .any(|(_, body)| self.run_after(target, body, events))
                        || self.run_after(target, otherwise, events)
                }
            };
            if found {
                self.nodes(&nodes[k + 1..], events);
                return true;
            }
        }
        false
    }

    fn nodes(&mut self, nodes: &[Node], events: &mut Vec<Event>) {
        for node in nodes {
            match node {
                Node::Plugin(i) => self.filter(*i, events),
                Node::If {
                    branches,
                    otherwise,
                } => self.branch(branches, otherwise, events),
            }
        }
    }

    fn filter(&mut self, i: usize, events: &mut Vec<Event>) {
        if self.filters[i].0.is_batched() {
            return self.filter_batched(i, events);
        }
        let started = Instant::now();
        let (filter, common) = &mut self.filters[i];
        let mut emitted = std::mem::take(&mut self.emitted);
        let (mut seen, mut kept) = (0u64, 0u64);
        let new_only = filter.matches_new_events_only();
        for e in events.iter_mut() {
            if e.is_cancelled() {
                continue;
            }
            seen += 1;
            let first_new = emitted.len();
            if filter.filter(e, &mut emitted) && !common.is_empty() {
                if !new_only {
                    common.apply(e);
                }
                for n in &mut emitted[first_new..] {
                    common.apply(n);
                }
            }
            if let (Some((field, pipeline)), true) = (&self.replay_ids, emitted.len() > first_new) {
                derive_ids(field, pipeline, e, &mut emitted[first_new..], i);
            }
            kept += u64::from(!e.is_cancelled());
        }
        let created = emitted.iter().filter(|e| !e.is_cancelled()).count() as u64;
        events.append(&mut emitted);
        self.emitted = emitted;
        if let Some(c) = self.metrics.workers[self.worker].filters.get(i) {
            c.record(seen, kept + created, started.elapsed());
        }
        self.filtered(i, events);
    }

    /// What follows filter `i` on a batch: its id in each event's lineage (when kept), its
    /// tap.
    fn filtered(&self, i: usize, events: &mut [Event]) {
        if let Some(label) = self.lineage.as_ref().and_then(|l| l.get(i)) {
            for e in events.iter_mut().filter(|e| !e.is_cancelled()) {
                crate::lineage::append(e, label);
            }
        }
        if self.tapped {
            if let Some(tap) = self.metrics.taps.filters.get(i) {
                tap.offer(events);
            }
        }
    }

    /// `pipeline.lineage`: each filter adds `pipeline_id/its id` to the events it passes
    /// (`filters`: the pipeline's, in config order; a chain that counts nothing, as
    /// `sluice test`'s, has no ids of its own).
    pub fn set_lineage(&mut self, pipeline_id: &str, filters: &[PluginInfo]) {
        self.lineage = Some(crate::lineage::labels(pipeline_id, filters));
    }

    /// [`Self::filter`] for a filter that takes the whole batch in one call.
    fn filter_batched(&mut self, i: usize, events: &mut Vec<Event>) {
        let started = Instant::now();
        let (filter, common) = &mut self.filters[i];
        let seen = events.iter().filter(|e| !e.is_cancelled()).count() as u64;
        let mut matched = Vec::with_capacity(events.len());
        let mut made = Vec::new();
        filter.filter_batch(events, &mut matched, &mut made);
        let new_only = filter.matches_new_events_only();
        let decorate_new = filter.decorates_new_events();
        if !common.is_empty() {
            for (e, _) in events.iter_mut().zip(&matched).filter(|(_, m)| **m) {
                if !new_only {
                    common.apply(e);
                }
            }
            if decorate_new {
                for (k, n) in &mut made {
                    if matched.get(*k).copied().unwrap_or(false) {
                        common.apply(n);
                    }
                }
            }
        }
        let kept = events.iter().filter(|e| !e.is_cancelled()).count() as u64;
        let mut emitted: Vec<Event> = Vec::with_capacity(made.len());
        let mut start = 0;
        while start < made.len() {
            let parent = made[start].0;
            let end = start
                + made[start..]
                    .iter()
                    .take_while(|(k, _)| *k == parent)
                    .count();
            let first_new = emitted.len();
            emitted.extend(made[start..end].iter_mut().map(|(_, e)| std::mem::take(e)));
            if let (Some((field, pipeline)), Some(p)) = (&self.replay_ids, events.get(parent)) {
                derive_ids(field, pipeline, p, &mut emitted[first_new..], i);
            }
            start = end;
        }
        let created = emitted.iter().filter(|e| !e.is_cancelled()).count() as u64;
        events.append(&mut emitted);
        if let Some(c) = self.metrics.workers[self.worker].filters.get(i) {
            c.record(seen, kept + created, started.elapsed());
        }
        self.filtered(i, events);
    }

    fn branch(
        &mut self,
        branches: &[(Condition, Vec<Node>)],
        otherwise: &[Node],
        events: &mut Vec<Event>,
    ) {
        // One event (an ordered run): its branch, without the bookkeeping of a split.
        if let [e] = &events[..] {
            if e.is_cancelled() {
                return;
            }
            let b = branches
                .iter()
                .position(|(c, _)| c.eval(e))
                .unwrap_or(branches.len());
            let body = if b < branches.len() {
                &branches[b].1[..]
            } else {
                otherwise
            };
            return self.nodes(body, events);
        }
        const SKIP: usize = usize::MAX;
        let which: Vec<usize> = events
            .iter()
            .map(|e| {
                if e.is_cancelled() {
                    SKIP
                } else {
                    branches
                        .iter()
                        .position(|(c, _)| c.eval(e))
                        .unwrap_or(branches.len())
                }
            })
            .collect();
        let body = |b: usize| {
            if b < branches.len() {
                &branches[b].1[..]
            } else {
                otherwise
            }
        };
        let mut live = which.iter().copied().filter(|&w| w != SKIP);
        let Some(first) = live.next() else { return };
        if live.all(|w| w == first) {
            // Every live event takes the same branch: run it on the batch as it is.
            self.nodes(body(first), events);
            return;
        }
        let mut buckets: Vec<Vec<Event>> = (0..=branches.len()).map(|_| Vec::new()).collect();
        let mut skipped = Vec::new();
        for (e, &w) in std::mem::take(events).into_iter().zip(&which) {
            if w == SKIP {
                skipped.push(e);
            } else {
                buckets[w].push(e);
            }
        }
        // Like Logstash, the result is each branch's output in branch order (then, else-ifs,
        // else), each keeping its events' order, with events created in a branch after them.
        for (b, mut bucket) in buckets.into_iter().enumerate() {
            if !bucket.is_empty() {
                self.nodes(body(b), &mut bucket);
                events.append(&mut bucket);
            }
        }
        events.append(&mut skipped);
    }
}

/// Gives `children`, created by filter `filter` of `pipeline` from `parent`, ids derived from
/// the parent's.
fn derive_ids(
    field: &sluice_event::FieldRef,
    pipeline: &str,
    parent: &Event,
    children: &mut [Event],
    filter: usize,
) {
    let Some(sluice_event::Value::String(id)) = parent.get(field) else {
        return;
    };
    let id = id.to_string();
    for (k, child) in children.iter_mut().enumerate() {
        let derived = format!("{id}:{pipeline}:{filter}.{}", k + 1);
        child.set(field, sluice_event::Value::String(derived.into()));
    }
}

/// Collects, for each output, the events of a batch that reach it.
pub fn route<'e>(tree: &[Node], events: &'e [Event], per_output: &mut [Vec<&'e Event>]) {
    for e in events {
        if !e.is_cancelled() {
            route_one(tree, e, per_output);
        }
    }
}

fn route_one<'e>(nodes: &[Node], e: &'e Event, per_output: &mut [Vec<&'e Event>]) {
    for node in nodes {
        match node {
            Node::Plugin(i) => per_output[*i].push(e),
            Node::If {
                branches,
                otherwise,
            } => match branches.iter().find(|(c, _)| c.eval(e)) {
                Some((_, body)) => route_one(body, e, per_output),
                None => route_one(otherwise, e, per_output),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_event::{FieldRef, Value};

    /// Emits one copy of every event.
    #[derive(Clone)]
    struct Copy;

    impl Filter for Copy {
        fn filter(&mut self, event: &mut Event, emit: &mut Vec<Event>) -> bool {
            emit.push(event.clone());
            true
        }
        fn clone_box(&self) -> Box<dyn Filter> {
            Box::new(Copy)
        }
    }

    #[test]
    fn events_filters_create_get_ids_derived_from_their_parents() {
        let filters: Vec<(Box<dyn Filter>, Arc<FilterCommon>)> = (0..2)
            .map(|_| (Box::new(Copy) as Box<dyn Filter>, Arc::default()))
            .collect();
        let tree = Arc::new(vec![Node::Plugin(0), Node::Plugin(1)]);
        let mut chain = FilterChain::new(filters, tree);
        chain.derive_replay_ids("main");
        let field = FieldRef::parse(crate::queue::REPLAY_SAFE_ID_FIELD).unwrap();
        let mut e = Event::new();
        e.set(&field, Value::String("Q-5".into()));
        let mut events = vec![e];
        chain.run(&mut events);
        let ids: Vec<&str> = events
            .iter()
            .map(|e| e.get(&field).and_then(Value::as_str).unwrap())
            .collect();
        assert_eq!(
            ids,
            [
                "Q-5",
                "Q-5:main:0.1",
                "Q-5:main:1.1",
                "Q-5:main:0.1:main:1.1"
            ]
        );
    }
}
