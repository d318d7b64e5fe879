//! Loading a config and running its pipeline until the inputs finish or a signal arrives.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sluice_config::{Config, ParseOptions, SectionKind};
use std::path::PathBuf;

use sluice_config::settings::{QueueType, Settings};
use sluice_pipeline::queue::{EventQueue, MemoryEventQueue, PersistedEventQueue};
use sluice_pipeline::{graph, runtime, PipelineSettings};
use sluice_queue::QueueConfig;

use crate::cli::{Cli, ConfigSource, ParseArgs};

/// How long shutdown waits for inputs to return before closing the queue under them.
const INPUT_GRACE: Duration = Duration::from_millis(500);

pub fn init_logging(level: Option<&str>) {
    let level = match level.unwrap_or("info") {
        "fatal" | "error" => tracing::Level::ERROR,
        "warn" => tracing::Level::WARN,
        "debug" => tracing::Level::DEBUG,
        "trace" => tracing::Level::TRACE,
        _ => tracing::Level::INFO,
    };
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

/// Reads and parses the config named by `-f` / `-e`. With `-e`, missing input and output
/// sections default to stdin and stdout (rubydebug), as in Logstash.
fn load(src: &ConfigSource, escapes: bool) -> Result<Config, String> {
    let opts = ParseOptions {
        support_escapes: escapes,
    };
    if let Some(path) = &src.path {
        let sources = sluice_config::load_path(path).map_err(|e| e.to_string())?;
        return sluice_config::parse_sources_with(&sources, &opts).map_err(|e| e.to_string());
    }
    let Some(text) = &src.config_string else {
        return Err("no configuration given: use -f PATH or -e CONFIG".to_owned());
    };
    let mut config =
        sluice_config::parse_with("config string", text, &opts).map_err(|e| e.to_string())?;
    let has = |k: SectionKind| config.sections.iter().any(|s| s.kind == k);
    let mut defaults = String::new();
    if !has(SectionKind::Input) {
        defaults.push_str("input { stdin { type => stdin } }\n");
    }
    if !has(SectionKind::Output) {
        defaults.push_str("output { stdout { codec => rubydebug } }\n");
    }
    if !defaults.is_empty() {
        let extra = sluice_config::parse("default config", &defaults).map_err(|e| e.to_string())?;
        config.sections.extend(extra.sections);
    }
    Ok(config)
}

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
    println!("{json}");
    Ok(())
}

pub fn run(args: &Cli) -> Result<(), String> {
    let mut settings = match &args.path_settings {
        Some(dir) => sluice_config::settings::load_settings(dir).map_err(|e| e.to_string())?,
        None => Settings::default(),
    };
    init_logging(args.log_level.as_deref().or(settings.log_level.as_deref()));
    for w in &settings.warnings {
        tracing::warn!("{w}");
    }
    let source = if args.source.path.is_some() || args.source.config_string.is_some() {
        args.source.clone()
    } else {
        ConfigSource {
            path: settings.path_config.clone(),
            config_string: settings.config_string.clone(),
        }
    };
    let escapes = args.support_escapes || settings.config_support_escapes.unwrap_or(false);
    let mut config = load(&source, escapes)?;
    config
        .substitute_env(&|name| std::env::var(name).ok())
        .map_err(|e| e.to_string())?;
    let registry = sluice_plugins::registry();
    let compiled = graph::compile(&config, &registry).map_err(|e| e.to_string())?;
    if args.test_and_exit {
        println!("Configuration OK");
        return Ok(());
    }

    let mut ps = PipelineSettings::default();
    if let Some(id) = args
        .pipeline_id
        .clone()
        .or_else(|| settings.pipeline_id.clone())
    {
        ps.id = id;
    }
    if let Some(w) = args.workers.or(settings.pipeline.workers) {
        if w == 0 {
            return Err("pipeline.workers must be at least 1".to_owned());
        }
        ps.workers = w;
    }
    let batch_size = args
        .batch_size
        .or(settings.pipeline.batch_size)
        .unwrap_or(125);
    if batch_size == 0 {
        return Err("pipeline.batch.size must be at least 1".to_owned());
    }
    ps.batch_size = batch_size;
    ps.batch_delay = match args.batch_delay {
        Some(ms) => Duration::from_millis(ms),
        None => settings
            .pipeline
            .batch_delay
            .unwrap_or(Duration::from_millis(50)),
    };

    // --path.data wins over the file's path.data; ./data when neither is given.
    settings.path_data = args
        .path_data
        .clone()
        .or(settings.path_data.take())
        .or_else(|| Some(PathBuf::from("data")));
    let qs = settings.queue_settings();
    let queue: Arc<dyn EventQueue> = match qs.queue_type {
        QueueType::Memory => Arc::new(MemoryEventQueue::new(ps.workers * ps.batch_size)),
        QueueType::Persisted => {
            let dir = qs
                .path
                .clone()
                .unwrap_or_else(|| PathBuf::from("data/queue"))
                .join(&ps.id);
            let cfg = QueueConfig {
                page_capacity: qs.page_capacity,
                max_events: qs.max_events,
                max_bytes: qs.max_bytes,
                checkpoint_acks: qs.checkpoint_acks,
                checkpoint_writes: qs.checkpoint_writes,
                drain: qs.drain,
            };
            let q = PersistedEventQueue::open(&dir, cfg)
                .map_err(|e| format!("opening the persisted queue at {}: {e}", dir.display()))?;
            Arc::new(q)
        }
    };
    let signals = watch_signals()?;
    tracing::info!(
        pipeline = %ps.id,
        workers = ps.workers,
        batch_size = ps.batch_size,
        batch_delay_ms = ps.batch_delay.as_millis() as u64,
        queue = ?qs.queue_type,
        "starting pipeline"
    );
    let running =
        runtime::start(ps, compiled, queue).map_err(|e| format!("starting pipeline: {e}"))?;
    loop {
        if running.inputs_finished() {
            tracing::debug!("all inputs finished; draining the queue");
            break;
        }
        if signals.load(Ordering::SeqCst) > 0 {
            tracing::info!("shutdown requested; stopping inputs and draining the queue");
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    running.finish(INPUT_GRACE);
    tracing::debug!("pipeline stopped");
    Ok(())
}

/// Counts SIGINT/SIGTERM on a background thread. The second SIGINT exits at once.
fn watch_signals() -> Result<Arc<AtomicUsize>, String> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let count = Arc::new(AtomicUsize::new(0));
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .map_err(|e| format!("installing signal handlers: {e}"))?;
    let seen = Arc::clone(&count);
    std::thread::Builder::new()
        .name("signals".to_owned())
        .spawn(move || {
            for sig in signals.forever() {
                let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
                if n >= 2 && sig == SIGINT {
                    eprintln!("second SIGINT: exiting without draining");
                    std::process::exit(130);
                }
            }
        })
        .map_err(|e| format!("starting signal thread: {e}"))?;
    Ok(count)
}

/// `sluice queue inspect | verify | repair PATH`.
pub fn queue_tool(action: &crate::cli::QueueAction) -> Result<(), String> {
    use crate::cli::QueueAction;
    use sluice_queue::tools;
    match action {
        QueueAction::Inspect { path } => {
            print!("{}", tools::inspect(path).map_err(|e| e.to_string())?);
            Ok(())
        }
        QueueAction::Verify { path } => {
            let (report, healthy) = tools::verify(path).map_err(|e| e.to_string())?;
            print!("{report}");
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
            print!(
                "{}",
                tools::repair(path, capacity).map_err(|e| e.to_string())?
            );
            Ok(())
        }
    }
}
