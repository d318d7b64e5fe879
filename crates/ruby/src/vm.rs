//! The VM thread: starts CRuby once, loads the prelude, then serves jobs (compile a script,
//! run a batch, free a script) until the process exits.
//!
//! Ruby values live only on this thread: compiled filter contexts are kept in `BoxValue`s
//! (registered with the GC), a batch's events in a Ruby array on this thread's stack. A
//! batch's loop over its events runs in Ruby (the prelude's `__run`), so one call crosses
//! into Ruby per batch, not per event.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::OnceLock;

use magnus::value::{BoxValue, ReprValue};
use magnus::{prelude::*, Error, RArray, RModule, Ruby, Value};
use sluice_event::Event;

use crate::event::{self, RbEvent};
use crate::{EventResult, Outcome, Source, Spec};

const PRELUDE: &str = include_str!("prelude.rb");
const AGGREGATE: &str = include_str!("aggregate.rb");

pub(crate) enum Job {
    Compile(Spec, mpsc::SyncSender<Result<u64, String>>),
    Run(u64, Vec<Event>, mpsc::SyncSender<(Vec<Event>, Outcome)>),
    Flush(u64, bool, mpsc::SyncSender<Result<Vec<Event>, String>>),
    Close(u64),
}

static JOBS: OnceLock<Result<mpsc::Sender<Job>, String>> = OnceLock::new();

/// The VM thread's job queue, starting the thread the first time.
pub(crate) fn jobs() -> Result<mpsc::Sender<Job>, String> {
    JOBS.get_or_init(start).clone()
}

fn start() -> Result<mpsc::Sender<Job>, String> {
    let (tx, rx) = mpsc::channel::<Job>();
    let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<(), String>>(1);
    std::thread::Builder::new()
        .name("ruby-vm".to_owned())
        // Ruby measures this thread's stack for its "stack level too deep" check.
        .stack_size(64 << 20)
        .spawn(move || {
            let saved = SavedSignals::save();
            // SAFETY: called once per process (JOBS is a OnceLock), from the outermost frame
            // of the thread that makes every later Ruby call; the guard lives until the
            // thread ends.
            let cleanup = unsafe { magnus::embed::init() };
            // Stop signals stay sluice's: Ruby's handlers would only queue them for a VM
            // thread that is waiting for jobs.
            saved.restore();
            let ruby: &Ruby = &cleanup;
            let booted = boot(ruby).map_err(|e| format!("starting Ruby: {}", describe(&e)));
            let ok = booted.is_ok();
            let _ = ready_tx.send(booted);
            if ok {
                serve(ruby, rx);
            }
            // Ruby is never torn down: other threads may still hold scripts, and the process
            // exits soon after the last pipeline stops.
            std::mem::forget(cleanup);
        })
        .map_err(|e| format!("starting the Ruby VM thread: {e}"))?;
    ready_rx
        .recv()
        .map_err(|_| "the Ruby VM thread died while starting".to_owned())??;
    Ok(tx)
}

/// The handlers of the signals Ruby installs its own for, as they were before Ruby started.
struct SavedSignals(Vec<(libc::c_int, libc::sigaction)>);

const TAKEN_BY_RUBY: &[libc::c_int] = &[
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGPIPE,
];

impl SavedSignals {
    fn save() -> SavedSignals {
        let mut saved = Vec::new();
        for &sig in TAKEN_BY_RUBY {
            // SAFETY: sigaction with a null new action only reads the current one into `old`.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) == 0 {
                    saved.push((sig, old));
                }
            }
        }
        SavedSignals(saved)
    }

    fn restore(&self) {
        for (sig, old) in &self.0 {
            // SAFETY: puts back an action read by `save`, unchanged.
            unsafe {
                libc::sigaction(*sig, old, std::ptr::null_mut());
            }
        }
    }
}

fn boot(ruby: &Ruby) -> Result<(), Error> {
    event::define(ruby)?;
    let sluice: RModule = ruby.define_module("Sluice")?;
    sluice.define_module_function("__log", magnus::function!(log, 3))?;
    sluice.define_module_function("__log_enabled", magnus::function!(log_enabled, 1))?;
    sluice.define_module_function("__interrupted?", magnus::function!(interrupted, 0))?;
    let _: Value = ruby.eval(PRELUDE)?;
    let _: Value = ruby.eval(AGGREGATE)?;
    Ok(())
}

fn serve(ruby: &Ruby, jobs: mpsc::Receiver<Job>) {
    let mut scripts: HashMap<u64, BoxValue<Value>> = HashMap::new();
    let mut next = 0u64;
    for job in jobs {
        match job {
            Job::Compile(spec, reply) => {
                let r = compile(ruby, &spec).map_err(|e| describe(&e));
                let _ = reply.send(r.map(|ctx| {
                    next += 1;
                    scripts.insert(next, BoxValue::new(ctx));
                    next
                }));
            }
            Job::Run(id, batch, reply) => {
                let out = match scripts.get(&id) {
                    Some(ctx) => run(ruby, **ctx, batch),
                    None => {
                        let n = batch.len();
                        let freed = EventResult::Failed("the script was freed".to_owned());
                        (
                            batch,
                            Outcome {
                                results: vec![freed; n],
                                made: Vec::new(),
                            },
                        )
                    }
                };
                let _ = reply.send(out);
            }
            Job::Flush(id, last, reply) => {
                let r = match scripts.get(&id) {
                    Some(ctx) => flush(**ctx, last).map_err(|e| describe(&e)),
                    None => Ok(Vec::new()),
                };
                let _ = reply.send(r);
            }
            Job::Close(id) => {
                if let Some(ctx) = scripts.remove(&id) {
                    if ctx.respond_to("__close", false).unwrap_or(false) {
                        if let Err(e) = ctx.funcall::<_, _, Value>("__close", ()) {
                            tracing::error!("closing a Ruby filter: {}", describe(&e));
                        }
                    }
                }
            }
        }
    }
}

/// A filter context: for inline code, `init` run in it and `code` defined as its
/// `filter_method`; for a script file, the file loaded, its tests run and `register` called.
fn compile(ruby: &Ruby, spec: &Spec) -> Result<Value, Error> {
    match &spec.source {
        Source::Inline { init, code } => {
            let class: Value = ruby.eval("Sluice::FilterContext")?;
            let ctx: Value = class.funcall("new", (spec.label.as_str(),))?;
            if let Some(init) = init {
                let _: Value =
                    ctx.funcall("instance_eval", (init.as_str(), "(ruby filter init)", 1))?;
            }
            let code = format!(
                "define_singleton_method :filter_method do |event, &new_event_block|\n{code}\nend"
            );
            let _: Value = ctx.funcall("instance_eval", (code, "(ruby filter code)", 0))?;
            Ok(ctx)
        }
        Source::Aggregate { scope, options } => {
            let hash = ruby.hash_new();
            for (k, v) in options {
                hash.aset(ruby.str_new(k), event::to_ruby(ruby, v)?)?;
            }
            let class: Value = ruby.eval("LogStash::Filters::Aggregate")?;
            class.funcall("new", (spec.label.as_str(), scope.as_str(), hash))
        }
        Source::File {
            path,
            content,
            params,
        } => {
            let hash = ruby.hash_new();
            for (k, v) in params {
                hash.aset(ruby.str_new(k), event::to_ruby(ruby, v)?)?;
            }
            let class: Value = ruby.eval("Sluice::ScriptFilter")?;
            class.funcall(
                "new",
                (spec.label.as_str(), path.as_str(), content.as_str(), hash),
            )
        }
    }
}

/// Runs a batch through the context's `__run`, then takes the events back.
fn run(ruby: &Ruby, ctx: Value, batch: Vec<Event>) -> (Vec<Event>, Outcome) {
    let n = batch.len();
    let events = ruby.ary_new_capa(n);
    let mut skipped = Vec::with_capacity(n);
    for e in batch {
        skipped.push(e.is_cancelled());
        let _ = events.push(ruby.obj_wrap(RbEvent::new(e)));
    }
    let made = ruby.ary_new();
    let results: Result<RArray, Error> = ctx.funcall("__run", (events, made));
    let mut outcome = Outcome {
        results: vec![EventResult::Unmatched; n],
        made: Vec::new(),
    };
    match results {
        Ok(results) => {
            for (i, r) in results.into_iter().enumerate().take(n) {
                outcome.results[i] = if r.is_nil() {
                    if skipped[i] {
                        EventResult::Unmatched
                    } else {
                        EventResult::Matched
                    }
                } else if r.is_kind_of(ruby.class_false_class()) {
                    EventResult::Unmatched
                } else {
                    EventResult::Failed(exception_text(r))
                };
            }
        }
        Err(e) => {
            let text = describe(&e);
            for (i, s) in skipped.iter().enumerate() {
                if !s {
                    outcome.results[i] = EventResult::Failed(text.clone());
                }
            }
        }
    }
    let mut back = Vec::with_capacity(n);
    for v in events.into_iter() {
        back.push(event::take(v).unwrap_or_default());
    }
    // `made` holds index, event pairs.
    let made: Vec<Value> = made.into_iter().collect();
    for pair in made.chunks(2) {
        let [i, e] = pair else { continue };
        let Ok(i) = usize::try_convert(*i) else {
            continue;
        };
        if let Some(e) = event::take(*e) {
            outcome.made.push((i, e));
        }
    }
    (back, outcome)
}

/// The events a context releases on its own (`__flush`), when it has any.
fn flush(ctx: Value, last: bool) -> Result<Vec<Event>, Error> {
    if !ctx.respond_to("__flush", false)? {
        return Ok(Vec::new());
    }
    let released: RArray = ctx.funcall("__flush", (last,))?;
    Ok(released.into_iter().filter_map(event::take).collect())
}

/// `to_s` of an exception (what Logstash's tag and log line show).
fn exception_text(exc: Value) -> String {
    exc.funcall::<_, _, magnus::RString>("to_s", ())
        .and_then(|s| s.to_string())
        .unwrap_or_default()
}

/// An error's class and message, for config errors and logs.
pub(crate) fn describe(e: &Error) -> String {
    match e.value() {
        Some(exc) => {
            let class = exc.class().inspect();
            let message: String = exc
                .funcall::<_, _, magnus::RString>("message", ())
                .and_then(|s| s.to_string())
                .unwrap_or_default();
            format!("{class}: {message}")
        }
        None => e.to_string(),
    }
}

/// Set once sluice gives up waiting for code still running at a stop.
pub(crate) static INTERRUPTED: AtomicBool = AtomicBool::new(false);

fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

fn log(level: i64, label: String, message: String) {
    match level {
        0 => tracing::trace!(plugin = %label, "{message}"),
        1 => tracing::debug!(plugin = %label, "{message}"),
        2 => tracing::info!(plugin = %label, "{message}"),
        3 => tracing::warn!(plugin = %label, "{message}"),
        _ => tracing::error!(plugin = %label, "{message}"),
    }
}

fn log_enabled(level: i64) -> bool {
    match level {
        0 => tracing::enabled!(tracing::Level::TRACE),
        1 => tracing::enabled!(tracing::Level::DEBUG),
        2 => tracing::enabled!(tracing::Level::INFO),
        3 => tracing::enabled!(tracing::Level::WARN),
        _ => tracing::enabled!(tracing::Level::ERROR),
    }
}
