//! The agent: every pipeline of the process, started, linked, reloaded and stopped in order.
//!
//! Pipelines come from `-f`/`-e` (one pipeline, `main`) or from `pipelines.yml`. Each has its
//! own queue and workers. Pipelines that send to others (`pipeline { send_to => ... }`) are
//! *upstream* of the pipelines whose `pipeline { address => ... }` inputs they reach; a
//! pipeline finishes only after all its upstream pipelines have finished, so shutting down
//! never strands events in flight between pipelines. Reload (SIGHUP or
//! `config.reload.automatic`) restarts only pipelines whose config or settings changed,
//! keeping their persisted queues; a new config that does not compile leaves the old pipeline
//! running and logs the error with its location.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sluice_config::settings::{DlqSettings, QueueSettings, QueueType};
use sluice_config::{Config, ParseOptions, SectionKind, Statement, Value as Ast};
use sluice_pipeline::queue::{EventQueue, MemoryEventQueue, PersistedEventQueue};
use sluice_pipeline::{
    graph, runtime, DeadLetterQueue, PipelineSettings, Recoverable, Registry, RunningPipeline,
};
use sluice_queue::dlq::{DlqConfig, StoragePolicy};
use sluice_queue::QueueConfig;

/// How long shutdown waits for inputs to return before closing the queue under them.
pub const INPUT_GRACE: Duration = Duration::from_millis(500);

/// Where a pipeline's config comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Source {
    /// `-f` / `path.config`: a file, directory or glob.
    Path(String),
    /// `config.string` (from pipelines.yml or sluice.yml).
    Text(String),
    /// `-e`: missing input/output sections default to stdin/stdout, as in Logstash.
    CommandLine(String),
}

/// Everything needed to (re)build one pipeline.
#[derive(Debug, Clone)]
pub struct Spec {
    pub id: String,
    pub source: Source,
    pub escapes: bool,
    pub settings: PipelineSettings,
    pub queue: QueueSettings,
    pub dlq: DlqSettings,
    /// `pipeline.ecs_compatibility`: the default for the plugins of this pipeline.
    pub ecs_compatibility: Option<String>,
    /// `ssl.reload.automatic`: the certificate, key and authority files the config names are
    /// part of its fingerprint, so that a reload restarts the pipeline when they change.
    pub ssl_reload: bool,
}

/// A parsed spec, with what identifies its content for reloads.
pub struct Loaded {
    pub config: Config,
    pub fingerprint: u64,
}

impl Spec {
    pub fn load(&self) -> Result<Loaded, String> {
        let opts = ParseOptions {
            support_escapes: self.escapes,
        };
        let mut h = DefaultHasher::new();
        format!(
            "{:?}{:?}{:?}{}{:?}",
            self.settings, self.queue, self.dlq, self.escapes, self.ecs_compatibility
        )
        .hash(&mut h);
        let mut config = match &self.source {
            Source::Path(p) => {
                let sources = sluice_config::load_path(p).map_err(|e| e.to_string())?;
                sources.hash(&mut h);
                sluice_config::parse_sources_with(&sources, &opts).map_err(|e| e.to_string())?
            }
            Source::Text(t) => {
                t.hash(&mut h);
                let name = format!("config.string of pipeline {}", self.id);
                sluice_config::parse_with(&name, t, &opts).map_err(|e| e.to_string())?
            }
            Source::CommandLine(t) => {
                t.hash(&mut h);
                sluice_config::parse_with("config string", t, &opts).map_err(|e| e.to_string())?
            }
        };
        if matches!(self.source, Source::CommandLine(_)) {
            let has = |k: SectionKind| config.sections.iter().any(|s| s.kind == k);
            let mut defaults = String::new();
            if !has(SectionKind::Input) {
                defaults.push_str("input { stdin { type => stdin } }\n");
            }
            if !has(SectionKind::Output) {
                defaults.push_str("output { stdout { codec => rubydebug } }\n");
            }
            if !defaults.is_empty() {
                let extra =
                    sluice_config::parse("default config", &defaults).map_err(|e| e.to_string())?;
                config.sections.extend(extra.sections);
            }
        }
        config
            .substitute_env(&|name| std::env::var(name).ok())
            .map_err(|e| e.to_string())?;
        if self.ssl_reload {
            for path in tls_files(&config) {
                // A file that cannot be read counts as its error: it changes when it can.
                match std::fs::read(&path) {
                    Ok(bytes) => bytes.hash(&mut h),
                    Err(e) => e.kind().hash(&mut h),
                }
            }
        }
        Ok(Loaded {
            config,
            fingerprint: h.finish(),
        })
    }
}

/// The addresses a config listens on and sends to (`pipeline` inputs and outputs).
pub fn links(config: &Config) -> (BTreeSet<String>, BTreeSet<String>) {
    fn strings(v: &Ast, out: &mut BTreeSet<String>) {
        match v {
            Ast::String(s) | Ast::Bareword(s) => {
                out.insert(s.clone());
            }
            Ast::Array(items) => items.iter().for_each(|i| strings(i, out)),
            _ => {}
        }
    }
    fn walk(
        kind: SectionKind,
        body: &[Statement],
        addr: &mut BTreeSet<String>,
        send: &mut BTreeSet<String>,
    ) {
        for st in body {
            match st {
                Statement::Plugin(p) if p.name == "pipeline" => {
                    for a in &p.attributes {
                        match (kind, a.name.as_str()) {
                            (SectionKind::Input, "address") => strings(&a.value, addr),
                            (SectionKind::Output, "send_to") => strings(&a.value, send),
                            _ => {}
                        }
                    }
                }
                Statement::Plugin(_) => {}
                Statement::If(i) => {
                    for b in &i.branches {
                        walk(kind, &b.body, addr, send);
                    }
                    if let Some(e) = &i.else_body {
                        walk(kind, e, addr, send);
                    }
                }
            }
        }
    }
    let (mut addr, mut send) = (BTreeSet::new(), BTreeSet::new());
    for s in &config.sections {
        walk(s.kind, &s.body, &mut addr, &mut send);
    }
    (addr, send)
}

/// Whether any plugin option mentions `replay_safe_id` (`document_id =>
/// "%{[@metadata][replay_safe_id]}"`, a `copy` of it...): then the queue stamps the ids.
pub fn refers_to_replay_ids(config: &Config) -> bool {
    fn value(v: &Ast) -> bool {
        match v {
            Ast::String(s) | Ast::Bareword(s) => s.contains("replay_safe_id"),
            Ast::Array(items) => items.iter().any(value),
            Ast::Hash(entries) => entries
                .iter()
                .any(|e| e.key.contains("replay_safe_id") || value(&e.value)),
            Ast::Plugin(p) => p.attributes.iter().any(|a| value(&a.value)),
            Ast::Number(_) => false,
        }
    }
    fn body(statements: &[Statement]) -> bool {
        statements.iter().any(|st| match st {
            Statement::Plugin(p) => p.attributes.iter().any(|a| value(&a.value)),
            Statement::If(i) => {
                // A condition's field references show in its debug form.
                i.branches.iter().any(|b| {
                    format!("{:?}", b.condition).contains("replay_safe_id") || body(&b.body)
                }) || i.else_body.as_deref().is_some_and(body)
            }
        })
    }
    config.sections.iter().any(|s| body(&s.body))
}

/// The pipelines that stamp replay-safe ids: those in `refers` (their config mentions the
/// field) and every pipeline upstream of one of them, so that an event keeps the id of the
/// first queue it went through (an upstream replay then repeats it downstream too).
pub fn replay_id_pipelines(
    refers: &BTreeSet<String>,
    links: &BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>,
) -> BTreeSet<String> {
    let mut on = refers.clone();
    loop {
        let upstream: Vec<String> = (links.iter())
            .filter(|(id, (_, send))| {
                !on.contains(*id)
                    && (on.iter()).any(|d| links.get(d).is_some_and(|(a, _)| !a.is_disjoint(send)))
            })
            .map(|(id, _)| id.clone())
            .collect();
        if upstream.is_empty() {
            return on;
        }
        on.extend(upstream);
    }
}

struct Entry {
    fingerprint: u64,
    running: RunningPipeline,
    /// What it was built from, to start it again after a crash (`pipeline.recoverable`).
    spec: Spec,
    started: std::time::Instant,
    /// Its queue stamps replay-safe ids.
    replay_ids: bool,
    addresses: BTreeSet<String>,
    send_to: BTreeSet<String>,
}

pub struct Agent {
    registry: Registry,
    path_data: PathBuf,
    pipelines: BTreeMap<String, Entry>,
    shutting_down: bool,
    /// Addresses that finished pipelines sent to: their listeners may finish too.
    finished_send_to: BTreeSet<String>,
    /// What the monitoring API sees: running pipelines and reload outcomes.
    monitor: sluice_api::Registry,
    live: crate::shutdown::Live,
    /// Events lost by pipelines that finished (memory queues whose pipeline halted).
    lost: u64,
}

/// Builds a pipeline's queue from its settings.
fn open_queue(spec: &Spec, path_data: &std::path::Path) -> Result<Arc<dyn EventQueue>, String> {
    let s = &spec.settings;
    Ok(match spec.queue.queue_type {
        QueueType::Memory => {
            let q = MemoryEventQueue::new(s.workers * s.batch_size);
            if s.replay_safe_ids {
                Arc::new(q.with_replay_safe_ids())
            } else {
                Arc::new(q)
            }
        }
        QueueType::Persisted => {
            let root = spec
                .queue
                .path
                .clone()
                .unwrap_or_else(|| path_data.join("queue"));
            let dir = root.join(&spec.id);
            let q = &spec.queue;
            let cfg = QueueConfig {
                page_capacity: q.page_capacity,
                max_events: q.max_events,
                max_bytes: q.max_bytes,
                checkpoint_acks: q.checkpoint_acks,
                checkpoint_writes: q.checkpoint_writes,
                checkpoint_retry: q.checkpoint_retry,
                drain: q.drain,
                compression: sluice_queue::Compression::parse(&q.compression).ok_or_else(|| {
                    format!(
                        "pipeline {}: queue.compression {:?} is not one of none, disabled, speed, balanced, size",
                        spec.id, q.compression
                    )
                })?,
            };
            let failed = |e: &dyn std::fmt::Display| {
                format!(
                    "pipeline {}: opening the persisted queue at {}: {e}",
                    spec.id,
                    dir.display()
                )
            };
            // Readers that keep up take events as pushed, holding no more than a memory
            // queue would.
            let mut queue = PersistedEventQueue::open(&dir, cfg)
                .map_err(|e| failed(&e))?
                .hold_events(s.workers * s.batch_size);
            if s.replay_safe_ids {
                queue = queue.with_replay_safe_ids().map_err(|e| failed(&e))?;
            }
            Arc::new(queue)
        }
    })
}

/// Opens a pipeline's dead letter queue (`<path.dead_letter_queue>/<id>`), when enabled.
fn open_dlq(
    spec: &Spec,
    path_data: &std::path::Path,
) -> Result<Option<Arc<DeadLetterQueue>>, String> {
    let d = &spec.dlq;
    if !d.enable {
        return Ok(None);
    }
    if d.flush_check_interval > d.flush_interval {
        return Err(format!(
            "pipeline {}: dead_letter_queue.flush_check_interval ({} ms) cannot be greater than dead_letter_queue.flush_interval ({} ms)",
            spec.id,
            d.flush_check_interval.as_millis(),
            d.flush_interval.as_millis()
        ));
    }
    let root = (d.path.clone()).unwrap_or_else(|| path_data.join("dead_letter_queue"));
    let dir = root.join(&spec.id);
    let config = DlqConfig {
        max_bytes: d.max_bytes,
        policy: if d.storage_policy == "drop_older" {
            StoragePolicy::DropOlder
        } else {
            StoragePolicy::DropNewer
        },
        flush_interval: d.flush_interval,
        check_interval: d.flush_check_interval,
        retain_age: d.retain_age,
        ..DlqConfig::default()
    };
    DeadLetterQueue::open(&spec.id, &dir, config)
        .map(Some)
        .map_err(|e| {
            format!(
                "pipeline {}: opening the dead letter queue at {}: {e}",
                spec.id,
                dir.display()
            )
        })
}

/// Rejects pipelines that send to each other in a cycle: they could never shut down in order.
pub fn check_cycles(
    links: &BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>,
) -> Result<(), String> {
    let downstream = |id: &str| -> Vec<String> {
        let send = &links[id].1;
        links
            .iter()
            .filter(|(_, (addr, _))| !addr.is_disjoint(send))
            .map(|(k, _)| k.clone())
            .collect()
    };
    fn visit(
        id: &str,
        down: &dyn Fn(&str) -> Vec<String>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Result<(), String> {
        if let Some(i) = path.iter().position(|p| p == id) {
            let mut cycle = path[i..].to_vec();
            cycle.push(id.to_owned());
            return Err(format!(
                "pipelines send to each other in a cycle: {}",
                cycle.join(" -> ")
            ));
        }
        if done.contains(id) {
            return Ok(());
        }
        path.push(id.to_owned());
        for d in down(id) {
            visit(&d, down, path, done)?;
        }
        path.pop();
        done.insert(id.to_owned());
        Ok(())
    }
    let mut done = BTreeSet::new();
    for id in links.keys() {
        visit(id, &downstream, &mut Vec::new(), &mut done)?;
    }
    Ok(())
}

impl Agent {
    pub fn new(registry: Registry, path_data: PathBuf) -> Agent {
        Agent {
            registry,
            path_data,
            pipelines: BTreeMap::new(),
            shutting_down: false,
            finished_send_to: BTreeSet::new(),
            monitor: sluice_api::Registry::new(),
            live: Arc::default(),
            lost: 0,
        }
    }

    /// Events lost so far by pipelines that finished (each logged when it finished).
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// A read-only view of the pipelines, for the monitoring API.
    pub fn monitor(&self) -> sluice_api::Registry {
        self.monitor.clone()
    }

    /// The registry with this pipeline's plugin defaults.
    pub fn registry_for(&self, spec: &Spec) -> Registry {
        let mut r = self.registry.clone();
        r.set_ecs_compatibility(spec.ecs_compatibility.clone());
        r.set_dead_letter_queue(spec.dlq.enable);
        r.set_pipeline(&spec.id, &self.path_data);
        r
    }

    /// Loads and compiles every spec (all must be valid), then starts them.
    pub fn start_all(&mut self, specs: Vec<Spec>) -> Result<(), String> {
        let mut built = Vec::new();
        let mut all_links = BTreeMap::new();
        let mut refers = BTreeSet::new();
        for spec in specs {
            // Errors name the file (or the pipeline, for config.string), line and column.
            let loaded = spec.load()?;
            let compiled = graph::compile(&loaded.config, &self.registry_for(&spec))
                .map_err(|e| e.to_string())?;
            let lir = sluice_pipeline::lir::describe(&loaded.config, &compiled);
            all_links.insert(spec.id.clone(), links(&loaded.config));
            if refers_to_replay_ids(&loaded.config) {
                refers.insert(spec.id.clone());
            }
            built.push((spec, loaded.fingerprint, compiled, lir));
        }
        check_cycles(&all_links)?;
        let stamping = replay_id_pipelines(&refers, &all_links);
        for (mut spec, fingerprint, compiled, lir) in built {
            spec.settings.replay_safe_ids = stamping.contains(&spec.id);
            let (addresses, send_to) = all_links.remove(&spec.id).unwrap_or_default();
            self.launch(spec, fingerprint, (compiled, lir), addresses, send_to)?;
        }
        Ok(())
    }

    fn launch(
        &mut self,
        spec: Spec,
        fingerprint: u64,
        (compiled, lir): (graph::Compiled, sluice_pipeline::lir::Graph),
        addresses: BTreeSet<String>,
        send_to: BTreeSet<String>,
    ) -> Result<(), String> {
        let queue = open_queue(&spec, &self.path_data)?;
        let dlq = open_dlq(&spec, &self.path_data)?;
        tracing::info!(
            pipeline = %spec.id,
            workers = spec.settings.workers,
            batch_size = spec.settings.batch_size,
            batch_delay_ms = spec.settings.batch_delay.as_millis() as u64,
            queue = %spec.queue.queue_type,
            ordered = spec.settings.ordered,
            "starting pipeline"
        );
        let mut settings = spec.settings.clone();
        settings.lanes_dir = Some(
            (spec.queue.path.clone())
                .unwrap_or_else(|| self.path_data.join("queue"))
                .join(&spec.id)
                .join("lanes"),
        );
        let running = runtime::start(settings, compiled, queue, dlq)
            .map_err(|e| format!("pipeline {}: starting: {e}", spec.id))?;
        crate::shutdown::lock(&self.live).insert(spec.id.clone(), running.watch());
        self.monitor.pipeline_started(sluice_api::PipelineView {
            id: spec.id.clone(),
            settings: spec.settings.clone(),
            metrics: Arc::clone(running.metrics()),
            queue: Arc::clone(running.queue()),
            dead_letter_queue: running.dead_letter_queue().cloned(),
            hash: format!("{fingerprint:016x}"),
            graph: Arc::new(lir),
        });
        self.pipelines.insert(
            spec.id.clone(),
            Entry {
                fingerprint,
                running,
                spec: spec.clone(),
                started: std::time::Instant::now(),
                replay_ids: spec.settings.replay_safe_ids,
                addresses,
                send_to,
            },
        );
        Ok(())
    }

    /// Ids of running pipelines sending to `id`.
    fn upstream_of(&self, id: &str) -> Vec<String> {
        let addr = &self.pipelines[id].addresses;
        self.pipelines
            .iter()
            .filter(|(k, e)| k.as_str() != id && !e.send_to.is_disjoint(addr))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Asks every pipeline's sources to stop; pipelines then finish upstream first.
    /// (The signal thread has already interrupted them through [`Agent::live`], even while
    /// this thread is busy finishing a pipeline.)
    pub fn request_shutdown(&mut self) {
        self.shutting_down = true;
        for e in self.pipelines.values() {
            e.running.watch().interrupt();
        }
    }

    /// The running pipelines, kept up to date for other threads (the signal thread).
    pub fn live(&self) -> crate::shutdown::Live {
        Arc::clone(&self.live)
    }

    /// Finishes pipelines that are done, upstream first. A pipeline is done when its sources
    /// have finished (or the process is shutting down, or the pipeline halted: an input
    /// blocked on its source is then left behind after a grace period), no running pipeline
    /// sends to it, and — if it listens on addresses — the process is shutting down or a
    /// pipeline that sent to it has finished (a pipeline that only listens waits for its
    /// senders). Returns true when no pipeline is left.
    pub fn step(&mut self) -> bool {
        self.recover_crashed();
        loop {
            let ready: Vec<String> = self
                .pipelines
                .iter()
                // A crashed pipeline that will be started again is not done.
                .filter(|(_, e)| self.shutting_down || self.recovery_of(e).is_none())
                .filter(|(id, e)| {
                    let listens_done = e.addresses.is_empty()
                        || self.shutting_down
                        || !self.finished_send_to.is_disjoint(&e.addresses);
                    let sources_done = e.running.active_inputs_finished()
                        || self.shutting_down
                        || e.running.halted();
                    sources_done && listens_done && self.upstream_of(id).is_empty()
                })
                .map(|(id, _)| id.clone())
                .collect();
            if ready.is_empty() {
                return self.pipelines.is_empty();
            }
            for id in ready {
                if let Some(e) = self.pipelines.remove(&id) {
                    self.finish(id, e);
                }
            }
        }
    }

    /// Why a pipeline crashed, if it did and `pipeline.recoverable` has it started again
    /// (`auto`: with a persisted queue only).
    fn recovery_of(&self, e: &Entry) -> Option<String> {
        let recover = match e.spec.settings.recoverable {
            Recoverable::Yes => true,
            Recoverable::Auto => e.spec.queue.queue_type == QueueType::Persisted,
            Recoverable::No => false,
        };
        recover.then(|| e.running.crashed()).flatten()
    }

    /// Starts crashed pipelines again (`pipeline.recoverable`), each once it has run for
    /// 2^n seconds (n: its restarts in the last 5 minutes; at most 30 s), so that a pipeline
    /// that crashes at once does not spin.
    fn recover_crashed(&mut self) {
        if self.shutting_down {
            return;
        }
        let due: Vec<(String, String)> = (self.pipelines.iter())
            .filter_map(|(id, e)| {
                let why = self.recovery_of(e)?;
                let restarts = self.monitor.recoveries(id).len().min(5) as u32;
                let wait = Duration::from_secs(1 << restarts).min(Duration::from_secs(30));
                (e.started.elapsed() >= wait).then(|| (id.clone(), why))
            })
            .collect();
        for (id, why) in due {
            let Some(e) = self.pipelines.remove(&id) else {
                continue;
            };
            tracing::error!(pipeline = %id, "pipeline crashed ({why}); starting it again (pipeline.recoverable)");
            e.running.stop_inputs();
            self.lost += e.running.finish(INPUT_GRACE);
            crate::shutdown::lock(&self.live).remove(&id);
            let spec = e.spec;
            let started = spec.load().and_then(|loaded| {
                let compiled = graph::compile(&loaded.config, &self.registry_for(&spec))
                    .map_err(|err| err.to_string())?;
                let lir = sluice_pipeline::lir::describe(&loaded.config, &compiled);
                self.launch(
                    spec.clone(),
                    loaded.fingerprint,
                    (compiled, lir),
                    e.addresses,
                    e.send_to,
                )
            });
            match started {
                Ok(()) => self.monitor.pipeline_recovered(&id),
                Err(err) => {
                    tracing::error!(pipeline = %id, "starting the crashed pipeline again failed: {err}");
                    self.monitor
                        .pipeline_stopped(&id, sluice_api::registry::Ended::FailedToStart);
                }
            }
        }
    }

    fn finish(&mut self, id: String, e: Entry) {
        tracing::info!(pipeline = %id, "pipeline finishing: draining in-flight events");
        let halted = e.running.halted();
        self.lost += e.running.finish(INPUT_GRACE);
        crate::shutdown::lock(&self.live).remove(&id);
        self.monitor.pipeline_stopped(
            &id,
            if halted {
                sluice_api::registry::Ended::Terminated
            } else {
                sluice_api::registry::Ended::Finished
            },
        );
        self.finished_send_to.extend(e.send_to);
        tracing::info!(pipeline = %id, "pipeline stopped");
    }
}

impl Agent {
    /// Applies a new set of specs: starts new pipelines, stops removed ones, restarts changed
    /// ones. A spec that fails to load or compile leaves its running pipeline untouched.
    /// Returns (successful reloads, failed reloads).
    pub fn reload(&mut self, specs: Vec<Spec>) -> (usize, usize) {
        let (mut ok, mut failed) = (0, 0);
        let wanted: BTreeSet<String> = specs.iter().map(|s| s.id.clone()).collect();
        let removed: Vec<String> = self
            .pipelines
            .keys()
            .filter(|id| !wanted.contains(*id))
            .cloned()
            .collect();
        for id in removed {
            if let Some(e) = self.pipelines.remove(&id) {
                tracing::info!(pipeline = %id, "pipeline removed from the configuration; stopping it");
                e.running.stop_inputs();
                self.monitor.reload_succeeded(&id);
                self.finish(id.clone(), e);
                self.monitor
                    .pipeline_stopped(&id, sluice_api::registry::Ended::Removed);
                ok += 1;
            }
        }
        for spec in specs {
            let id = spec.id.clone();
            let loaded = match spec.load() {
                Ok(l) => l,
                Err(e) => {
                    tracing::error!(pipeline = %id, "reload failed, the running pipeline keeps running: {e}");
                    self.monitor.reload_failed(&id, &e.to_string());
                    failed += 1;
                    continue;
                }
            };
            if self
                .pipelines
                .get(&id)
                .is_some_and(|e| e.fingerprint == loaded.fingerprint)
            {
                continue;
            }
            if self.pipelines.contains_key(&id) {
                // A config caught while an editor or a deployment writes it: taken only once
                // it reads the same twice, a moment apart (else at a later round).
                std::thread::sleep(SETTLE);
                match spec.load() {
                    Ok(again) if again.fingerprint == loaded.fingerprint => {}
                    _ => {
                        tracing::info!(pipeline = %id, "configuration is changing; reloading once it stops changing");
                        continue;
                    }
                }
                // An empty file, or one cut short, must not replace a running pipeline with
                // one that has nothing to read (it would end at once, and the process too)
                // or nowhere to write (its events would be acknowledged into the void). Such
                // a config still runs when the process starts with it.
                let missing = [
                    (SectionKind::Input, "input"),
                    (SectionKind::Output, "output"),
                ]
                .into_iter()
                .find(|&(k, _)| !has_plugins(&loaded.config, k));
                if let Some((_, kind)) = missing {
                    let e = format!("the new configuration has no {kind} plugin (an empty or half-written file?)");
                    tracing::error!(pipeline = %id, "reload failed, the running pipeline keeps running: {e}");
                    self.monitor.reload_failed(&id, &e);
                    failed += 1;
                    continue;
                }
            }
            let compiled = match graph::compile(&loaded.config, &self.registry_for(&spec)) {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!(pipeline = %id, "reload failed, the running pipeline keeps running: {e}");
                    self.monitor.reload_failed(&id, &e.to_string());
                    failed += 1;
                    continue;
                }
            };
            let (addresses, send_to) = links(&loaded.config);
            let mut spec = spec;
            // Stamped when it refers to them, or when a running pipeline it sends to does.
            spec.settings.replay_safe_ids = refers_to_replay_ids(&loaded.config)
                || (self.pipelines.iter())
                    .any(|(k, e)| *k != id && e.replay_ids && !e.addresses.is_disjoint(&send_to));
            if spec.settings.replay_safe_ids {
                let unstamped: Vec<&String> = (self.pipelines.iter())
                    .filter(|(k, e)| {
                        **k != id && !e.replay_ids && !e.send_to.is_disjoint(&addresses)
                    })
                    .map(|(k, _)| k)
                    .collect();
                if !unstamped.is_empty() {
                    tracing::warn!(pipeline = %id, "pipelines {unstamped:?} send to this one but give no replay-safe ids: restart them so that their events keep ids across their own replays");
                }
            }
            let mut all: BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)> = self
                .pipelines
                .iter()
                .map(|(k, e)| (k.clone(), (e.addresses.clone(), e.send_to.clone())))
                .collect();
            all.insert(id.clone(), (addresses.clone(), send_to.clone()));
            if let Err(e) = check_cycles(&all) {
                tracing::error!(pipeline = %id, "reload failed, the running pipeline keeps running: {e}");
                self.monitor.reload_failed(&id, &e);
                failed += 1;
                continue;
            }
            if let Some(old) = self.pipelines.remove(&id) {
                tracing::info!(pipeline = %id, "configuration changed; restarting the pipeline");
                old.running.stop_inputs();
                self.lost += old.running.finish(INPUT_GRACE);
                crate::shutdown::lock(&self.live).remove(&id);
            }
            let lir = sluice_pipeline::lir::describe(&loaded.config, &compiled);
            match self.launch(
                spec,
                loaded.fingerprint,
                (compiled, lir),
                addresses,
                send_to,
            ) {
                Ok(()) => {
                    self.monitor.reload_succeeded(&id);
                    ok += 1;
                }
                Err(e) => {
                    tracing::error!(pipeline = %id, "reload failed: {e}");
                    self.monitor
                        .pipeline_stopped(&id, sluice_api::registry::Ended::FailedToStart);
                    self.monitor.reload_failed(&id, &e);
                    failed += 1;
                }
            }
        }
        (ok, failed)
    }
}

/// The options of every plugin (codecs included) that name certificate, key or authority
/// files, as Logstash's plugins name them.
const TLS_FILE_OPTIONS: &[&str] = &[
    "ssl_certificate",
    "ssl_key",
    "ssl_certificate_authorities",
    "ssl_truststore_path",
    "ssl_keystore_path",
    "ssl_truststore_location",
    "ssl_keystore_location",
    "cacert",
    "tls_certificate",
    "tls_key",
];

/// The files the config's TLS options name, in config order.
fn tls_files(config: &Config) -> Vec<String> {
    fn strings(v: &Ast, out: &mut Vec<String>) {
        match v {
            Ast::String(s) | Ast::Bareword(s) => out.push(s.clone()),
            Ast::Array(items) => items.iter().for_each(|i| strings(i, out)),
            _ => {}
        }
    }
    fn plugin(p: &sluice_config::Plugin, out: &mut Vec<String>) {
        for a in &p.attributes {
            if TLS_FILE_OPTIONS.contains(&a.name.as_str()) {
                strings(&a.value, out);
            }
            if let Ast::Plugin(codec) = &a.value {
                plugin(codec, out);
            }
        }
    }
    fn body(statements: &[Statement], out: &mut Vec<String>) {
        for st in statements {
            match st {
                Statement::Plugin(p) => plugin(p, out),
                Statement::If(i) => {
                    i.branches.iter().for_each(|b| body(&b.body, out));
                    if let Some(e) = &i.else_body {
                        body(e, out);
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    for s in &config.sections {
        body(&s.body, &mut out);
    }
    out
}

/// How long a changed config must stay the same before a reload takes it.
const SETTLE: Duration = Duration::from_millis(200);

/// Whether the config has a section of `kind` with anything in it.
fn has_plugins(config: &Config, kind: SectionKind) -> bool {
    config
        .sections
        .iter()
        .any(|s| s.kind == kind && !s.body.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_ids_are_wanted_when_an_option_mentions_them() {
        let wants = |text: &str| refers_to_replay_ids(&sluice_config::parse("t", text).unwrap());
        assert!(wants(
            r#"output { elasticsearch { document_id => "%{[@metadata][replay_safe_id]}" } }"#
        ));
        assert!(wants(
            r#"filter { if [x] { mutate { copy => { "[@metadata][replay_safe_id]" => "id" } } } }"#
        ));
        assert!(!wants(
            r#"output { elasticsearch { document_id => "%{id}" } }"#
        ));
    }
}
