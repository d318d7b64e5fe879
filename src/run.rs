//! Resolving settings and configs into pipeline specs, and running the agent until its
//! pipelines finish or a signal arrives.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use std::path::PathBuf;
use std::time::Instant;

use sluice_config::settings::{PipelineOverrides, Settings};
use sluice_config::ParseOptions;
use sluice_pipeline::batch_metrics::SamplingMode;
use sluice_pipeline::{graph, PipelineSettings};

use crate::agent::{Agent, Source, Spec};
use crate::cli::{Cli, ParseArgs};

pub fn config_parse(args: &ParseArgs) -> Result<(), String> {
    let opts = ParseOptions {
        support_escapes: args.support_escapes,
    };
    let config = if let Some(path) = &args.source.path {
        let sources = sluice_config::load_path(path).map_err(|e| e.to_string())?;
        sluice_config::parse_sources_with(&sources, &opts)
    } else if let Some(text) = &args.source.config_string {
        sluice_config::parse_with("config string", text, &opts)
    } else {
        return Err("no configuration given: use -f PATH or -e CONFIG".to_owned());
    }
    .map_err(|e| e.to_string())?;
    let json = serde_json::to_string_pretty(&sluice_config::to_json(&config))
        .map_err(|e| e.to_string())?;
    print_out(&format!("{json}\n"))?;
    Ok(())
}

/// Files of Logstash's settings directory (`/etc/logstash`) that have no meaning for sluice:
/// said once each, so that `--path.settings /etc/logstash` runs an unchanged Logstash layout.
fn note_logstash_only_files(dir: &std::path::Path) {
    for (file, why) in [
        ("jvm.options", "there is no JVM"),
        (
            "log4j2.properties",
            "sluice logs through log.level, log.format and path.logs",
        ),
        (
            "startup.options",
            "sluice's package installs its own service unit",
        ),
    ] {
        if dir.join(file).is_file() {
            tracing::info!("{}: ignored ({why})", dir.join(file).display());
        }
    }
}

/// Whether the effective user is root.
fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

pub fn run(args: &Cli) -> Result<(), String> {
    let mut settings = match &args.path_settings {
        Some(dir) => sluice_config::settings::load_settings(dir).map_err(|e| e.to_string())?,
        None => Settings::default(),
    };
    crate::log::init(&crate::log::LogOptions {
        level: args.log_level.as_deref().or(settings.log_level.as_deref()),
        format: args
            .log_format
            .as_deref()
            .or(settings.log_format.as_deref()),
        path: args.path_logs.as_deref().or(settings.path_logs.as_deref()),
    })?;
    if settings.allow_superuser == Some(false) && running_as_root() {
        return Err("sluice cannot be run as superuser: allow_superuser is false".into());
    }
    if let Some(dir) = &args.path_settings {
        note_logstash_only_files(dir);
    }
    for w in &settings.warnings {
        tracing::warn!("{w}");
    }
    // --path.data wins over the file's path.data; ./data when neither is given.
    settings.path_data = args
        .path_data
        .clone()
        .or(settings.path_data.take())
        .or_else(|| Some(PathBuf::from("data")));
    let path_data = settings.path_data.clone().unwrap_or_default();

    let initial = specs(args, &settings)?;
    let mut agent = Agent::new(sluice_plugins::registry(), path_data);
    if args.test_and_exit || settings.config_test_and_exit == Some(true) {
        for spec in &initial {
            let loaded = spec.load()?;
            graph::compile(&loaded.config, &agent.registry_for(spec)).map_err(|e| e.to_string())?;
        }
        print_out("Configuration OK\n")?;
        return Ok(());
    }

    let signals = watch_signals(agent.live())?;
    let reload_auto = settings.config_reload_automatic.unwrap_or(false);
    let reload_every = settings
        .config_reload_interval
        .unwrap_or(Duration::from_secs(3));
    // Certificates are picked up as Logstash does: a pipeline whose referenced certificate or
    // key files changed is reloaded, by the automatic reload (the API's own certificate follows
    // its file by itself).
    let ssl_reload = match settings.ssl_reload_automatic {
        Some(true) if !reload_auto => {
            return Err("ssl.reload.automatic: true needs config.reload.automatic: true (as in Logstash: a pipeline whose certificate or key files changed is reloaded by the automatic reload)".to_owned())
        }
        Some(true) => Some(settings.ssl_reload_interval.unwrap_or(reload_every)),
        _ => None,
    };
    // The monitoring API (`api.*`), before the pipelines so that it sees them start.
    let _api = sluice_api::start(
        &settings.api,
        agent.monitor(),
        sluice_api::NodeConfig {
            name: settings.node_name.clone(),
            path_data: settings.path_data.clone(),
            pipeline_defaults: pipeline_settings("main", &base_overrides(args, &settings))?,
            plugins: plugin_gem_names(),
            config_reload_automatic: reload_auto,
            config_reload_interval: reload_every,
            ssl_reload,
        },
    )?;
    agent.start_all(initial)?;
    let mut next_reload = Instant::now() + reload_every;
    let (mut seen_stop, mut seen_hup) = (0, 0);
    loop {
        if agent.step() {
            break;
        }
        let stops = signals.stop.load(Ordering::SeqCst);
        if stops > seen_stop {
            seen_stop = stops;
            agent.request_shutdown();
        }
        let hups = signals.hup.load(Ordering::SeqCst);
        if seen_stop == 0 && (hups > seen_hup || (reload_auto && Instant::now() >= next_reload)) {
            seen_hup = hups;
            next_reload = Instant::now() + reload_every;
            match specs(args, &reloaded_settings(args, &settings)) {
                Ok(new) => {
                    let (ok, failed) = agent.reload(new);
                    if ok + failed > 0 {
                        tracing::info!(reloaded = ok, failed, "configuration reloaded");
                    }
                }
                Err(e) => tracing::error!("reload failed, running pipelines keep running: {e}"),
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    tracing::debug!("all pipelines stopped");
    match agent.lost() {
        0 => Ok(()),
        // The process ends with a failure: a script must not take a run that lost events for
        // a clean one.
        lost => Err(format!(
            "{lost} event(s) were lost (memory queue; see the log above)"
        )),
    }
}

/// Every plugin compiled in, as Logstash names its gem (`logstash-input-beats`).
fn plugin_gem_names() -> Vec<String> {
    use sluice_pipeline::PluginKind;
    let registry = sluice_plugins::registry();
    [
        PluginKind::Input,
        PluginKind::Filter,
        PluginKind::Output,
        PluginKind::Codec,
    ]
    .into_iter()
    .flat_map(|k| {
        registry
            .names(k)
            .into_iter()
            .map(move |n| format!("logstash-{}-{n}", k.as_str()))
    })
    .collect()
}

/// Settings as they are now on disk (for a reload), falling back to the ones we started with.
fn reloaded_settings(args: &Cli, started: &Settings) -> Settings {
    let Some(dir) = &args.path_settings else {
        return started.clone();
    };
    match sluice_config::settings::load_settings(dir) {
        Ok(mut s) => {
            s.path_data = started.path_data.clone();
            s
        }
        Err(e) => {
            tracing::error!("reload: {e}; keeping the settings in use");
            started.clone()
        }
    }
}

/// The pipelines to run: `-f`/`-e` (or path.config/config.string) give one; otherwise
/// `pipelines.yml` in --path.settings lists them.
fn specs(args: &Cli, settings: &Settings) -> Result<Vec<Spec>, String> {
    // Command-line flags override sluice.yml, which pipelines.yml entries override.
    let base = base_overrides(args, settings);
    let escapes = args.support_escapes || settings.config_support_escapes.unwrap_or(false);
    let source = if let Some(p) = &args.source.path {
        Some(Source::Path(p.clone()))
    } else if let Some(e) = &args.source.config_string {
        Some(Source::CommandLine(e.clone()))
    } else if let Some(p) = &settings.path_config {
        Some(Source::Path(p.clone()))
    } else {
        settings.config_string.clone().map(Source::Text)
    };
    if let Some(source) = source {
        let id = args
            .pipeline_id
            .clone()
            .or_else(|| settings.pipeline_id.clone())
            .unwrap_or_else(|| "main".to_owned());
        return Ok(vec![Spec {
            id: id.clone(),
            source,
            escapes,
            settings: pipeline_settings(&id, &base)?,
            queue: settings.queue_settings(),
            dlq: settings.dlq_settings(),
            ecs_compatibility: base.ecs_compatibility.clone(),
            ssl_reload: settings.ssl_reload_automatic == Some(true),
        }]);
    }
    let entries = match &args.path_settings {
        Some(dir) => sluice_config::load_pipelines(dir).map_err(|e| e.to_string())?,
        None => None,
    };
    let Some(entries) = entries else {
        return Err(
            "no configuration given: use -f PATH, -e CONFIG, or a pipelines.yml in --path.settings"
                .to_owned(),
        );
    };
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        for w in &entry.warnings {
            tracing::warn!("{w}");
        }
        let source = match (&entry.path_config, &entry.config_string) {
            (Some(p), _) => Source::Path(p.clone()),
            (None, Some(t)) => Source::Text(t.clone()),
            (None, None) => {
                return Err(format!(
                    "pipeline {}: needs path.config or config.string",
                    entry.id
                ))
            }
        };
        let overrides = entry.pipeline.or(&base);
        out.push(Spec {
            id: entry.id.clone(),
            source,
            escapes: entry.config_support_escapes.unwrap_or(escapes),
            settings: pipeline_settings(&entry.id, &overrides)?,
            ecs_compatibility: overrides.ecs_compatibility.clone(),
            queue: entry.queue_settings(settings),
            dlq: entry.dlq_settings(settings),
            ssl_reload: settings.ssl_reload_automatic == Some(true),
        });
    }
    Ok(out)
}

/// Pipeline settings from the command line over sluice.yml.
fn base_overrides(args: &Cli, settings: &Settings) -> PipelineOverrides {
    let mut base = settings.pipeline.clone();
    base.workers = args.workers.or(base.workers);
    base.batch_size = args.batch_size.or(base.batch_size);
    if let Some(ms) = args.batch_delay {
        base.batch_delay = Some(Duration::from_millis(ms));
    }
    if args.unsafe_shutdown {
        base.unsafe_shutdown = Some(true);
    }
    base
}

fn pipeline_settings(id: &str, o: &PipelineOverrides) -> Result<PipelineSettings, String> {
    let mut ps = PipelineSettings {
        id: id.to_owned(),
        ..PipelineSettings::default()
    };
    if let Some(w) = o.workers {
        if w == 0 {
            return Err(format!(
                "pipeline {id}: pipeline.workers must be at least 1"
            ));
        }
        ps.workers = w;
    }
    if let Some(b) = o.batch_size {
        if b == 0 {
            return Err(format!(
                "pipeline {id}: pipeline.batch.size must be at least 1"
            ));
        }
        ps.batch_size = b;
    }
    if let Some(d) = o.batch_delay {
        ps.batch_delay = d;
    }
    ps.unsafe_shutdown = o.unsafe_shutdown.unwrap_or(false);
    ps.lineage = o.lineage.unwrap_or(false);
    ps.recoverable = match o.recoverable.as_deref() {
        Some("true") => sluice_pipeline::Recoverable::Yes,
        Some("auto") => sluice_pipeline::Recoverable::Auto,
        _ => sluice_pipeline::Recoverable::No,
    };
    if let Some(f) = o.output_chunking_growth_threshold_factor {
        ps.output_chunking_factor = f;
    }
    if let Some(mode) = &o.batch_metrics {
        // Validated when the settings were read.
        ps.batch_metrics = SamplingMode::parse(mode).unwrap_or_default();
    }
    // One worker keeps events in order; several cannot (as in Logstash, which refuses the
    // combination too).
    if o.ordered.as_deref() == Some("true") && ps.workers > 1 {
        return Err(format!(
            "pipeline {id}: pipeline.ordered: true needs pipeline.workers: 1 (it is {})",
            ps.workers
        ));
    }
    ps.output_lanes = match o.output_lanes.as_deref() {
        Some("persisted") => Some(sluice_pipeline::lane::LaneSpec::persisted()),
        Some("memory") => Some(sluice_pipeline::lane::LaneSpec::memory()),
        _ => None,
    };
    // As Logstash: `auto` (the default) orders only when `pipeline.workers: 1` is set.
    ps.ordered = match o.ordered.as_deref() {
        Some("true") => true,
        Some("false") => false,
        _ => o.workers == Some(1),
    };
    Ok(ps)
}

/// Signal counters, updated by a background thread.
struct Signals {
    /// SIGINT and SIGTERM.
    stop: Arc<AtomicUsize>,
    /// SIGHUP (reload).
    hup: Arc<AtomicUsize>,
}

/// Counts SIGINT/SIGTERM and SIGHUP on a background thread. A second SIGINT or SIGTERM exits at
/// once, whatever the shutdown is waiting for.
fn watch_signals(live: crate::shutdown::Live) -> Result<Signals, String> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let s = Signals {
        stop: Arc::new(AtomicUsize::new(0)),
        hup: Arc::new(AtomicUsize::new(0)),
    };
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .map_err(|e| format!("installing signal handlers: {e}"))?;
    let (stop, hup) = (Arc::clone(&s.stop), Arc::clone(&s.hup));
    std::thread::Builder::new()
        .name("signals".to_owned())
        .spawn(move || {
            for sig in signals.forever() {
                if sig == SIGHUP {
                    hup.fetch_add(1, Ordering::SeqCst);
                    continue;
                }
                if stop.fetch_add(1, Ordering::SeqCst) == 0 {
                    crate::shutdown::stop(&live);
                } else {
                    let name = if sig == SIGINT { "SIGINT" } else { "SIGTERM" };
                    eprintln!(
                        "second stop signal ({name}): exiting without finishing in-flight batches (persisted queues replay them at the next start; events in memory queues are lost)"
                    );
                    std::process::exit(128 + sig);
                }
            }
        })
        .map_err(|e| format!("starting signal thread: {e}"))?;
    Ok(s)
}

/// `sluice queue inspect | verify | repair PATH`.
pub fn queue_tool(action: &crate::cli::QueueAction) -> Result<(), String> {
    use crate::cli::QueueAction;
    use sluice_queue::tools;
    match action {
        QueueAction::Inspect { path } => {
            print_out(&tools::inspect(path).map_err(|e| e.to_string())?)
        }
        QueueAction::Verify { path } => {
            let (report, healthy) = tools::verify(path).map_err(|e| e.to_string())?;
            print_out(&report)?;
            if healthy {
                Ok(())
            } else {
                Err(format!(
                    "{}: damaged; `sluice queue repair {}` keeps every intact record",
                    path.display(),
                    path.display()
                ))
            }
        }
        QueueAction::Repair {
            path,
            page_capacity,
        } => {
            let capacity = sluice_config::settings::parse_size(page_capacity)
                .map_err(|e| format!("--queue.page_capacity: {e}"))?;
            print_out(&tools::repair(path, capacity).map_err(|e| e.to_string())?)
        }
    }
}

/// Writes a command's output to standard output; a reader that went away (`| head -1`) ends
/// the output quietly, as for any Unix tool.
fn print_out(text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("writing to standard output: {e}"))
        }
        _ => Ok(()),
    }
}
