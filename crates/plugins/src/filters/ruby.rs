//! `ruby`: runs the Ruby code of a config on each event, as logstash-filter-ruby does, on the
//! embedded CRuby of `sluice-ruby` (one VM thread for the process).
//!
//! `code` is compiled once at load into `filter_method(event, &new_event_block)` of the
//! filter's own context, after `init` ran there (its `@ivars` are seen by `code`; `@logger`
//! logs into sluice's log). The chain hands the filter whole batches ([`Filter::filter_batch`])
//! and each batch crosses to the VM in one round trip; every worker's copy shares the one
//! compiled context, as Logstash's workers share one filter instance. An exception in the code
//! tags the event `tag_on_exception` (and, with `tag_with_exception_message`, the tag with the
//! message), is logged with the plugin's location, and leaves the event otherwise as the code
//! left it; the common options apply to an event whose code ran through. Events given to
//! `new_event_block` join the batch undecorated, as Logstash yields them.
//!
//! With `path`, the script file is loaded into its own object, its `test` blocks run (a
//! failing test fails the config, as in Logstash), then `register(script_params)`; its
//! `filter(event)` returns the events to keep: the original is cancelled unless among them,
//! the others are new events. Without the `ruby` Cargo feature the filter reports that it is
//! not compiled in.

#[cfg(feature = "ruby")]
use sluice_event::Event;
use sluice_pipeline::{ConfigError, Filter, Options};

#[cfg(not(feature = "ruby"))]
pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    Err(opts.plugin_error(
        "this sluice was built without the `ruby` feature, so the ruby filter is not compiled in (build with default features, after scripts/install-ruby)",
    ))
}

#[cfg(feature = "ruby")]
pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    use sluice_ruby::Source;
    let code = opts.string("code")?;
    let init = opts.string("init")?;
    let path = opts.string("path")?;
    let params: Vec<(String, sluice_event::Value)> = opts
        .hash("script_params")?
        .unwrap_or_default()
        .iter()
        .map(|(k, v)| (k.clone(), sluice_pipeline::options::ast_to_value(v)))
        .collect();
    let tag_on_exception = opts.string_or("tag_on_exception", "_rubyexception")?;
    let tag_with_message = opts.boolean_or("tag_with_exception_message", false)?;
    let source = match (code, path) {
        (Some(code), None) => Source::Inline { init, code },
        (None, Some(path)) => {
            let content = std::fs::read_to_string(&path)
                .map_err(|e| opts.error("path", format!("cannot read {path}: {e}")))?;
            Source::File {
                path,
                content,
                params,
            }
        }
        _ => {
            return Err(opts.plugin_error(
                "You must either use an inline script with the \"code\" option or a script file using \"path\".",
            ))
        }
    };
    let label = opts.location();
    let script = sluice_ruby::Script::compile(sluice_ruby::Spec {
        label: label.clone(),
        source,
    })
    .map_err(|e| {
        opts.plugin_error(format!(
            "the Ruby code does not compile or failed to start: {e}"
        ))
    })?;
    Ok(Box::new(Ruby {
        script,
        label,
        tag_on_exception,
        tag_with_message,
        cut: false,
        flushes: None,
    }))
}

/// Gives up on Ruby code still running (a stop that waits on it); a no-op without Ruby.
pub fn interrupt() {
    #[cfg(feature = "ruby")]
    sluice_ruby::interrupt();
}

/// A filter whose work is done by a script on the embedded Ruby: the ruby filter, and the
/// aggregate filter (which also releases events on the periodic and final flushes).
#[cfg(feature = "ruby")]
#[derive(Clone)]
pub(crate) struct Ruby {
    pub script: sluice_ruby::Script,
    pub label: String,
    pub tag_on_exception: String,
    pub tag_with_message: bool,
    /// The last batch ran after a stop gave up on Ruby code (see [`Filter::cut_short`]).
    pub cut: bool,
    /// For scripts that release events on their own: one flush per period for all the
    /// workers' copies, and one final flush.
    pub flushes: Option<std::sync::Arc<Flushes>>,
}

#[cfg(feature = "ruby")]
#[derive(Default)]
pub(crate) struct Flushes {
    periodic: std::sync::Mutex<super::SharedFlush>,
    last: std::sync::atomic::AtomicBool,
}

#[cfg(feature = "ruby")]
impl Ruby {
    fn release(&self, last: bool, emit: &mut Vec<Event>) {
        match self.script.flush(last) {
            Ok(events) => emit.extend(events),
            Err(e) => tracing::error!(plugin = %self.label, "flush failed: {e}"),
        }
    }
}

#[cfg(feature = "ruby")]
impl Filter for Ruby {
    fn filter(&mut self, event: &mut Event, emit: &mut Vec<Event>) -> bool {
        let mut matched = Vec::with_capacity(1);
        let mut made = Vec::new();
        self.filter_batch(std::slice::from_mut(event), &mut matched, &mut made);
        emit.extend(made.into_iter().map(|(_, e)| e));
        matched[0]
    }

    fn is_batched(&self) -> bool {
        true
    }

    fn filter_batch(
        &mut self,
        events: &mut [Event],
        matched: &mut Vec<bool>,
        made: &mut Vec<(usize, Event)>,
    ) {
        let outcome = match self.script.run(events) {
            Ok(o) => o,
            // The VM thread is gone with the batch: nothing sensible can go on.
            Err(e) => panic!("{}: {e}", self.label),
        };
        // Given up on at a stop: events after the one interrupted did not run, and that one
        // did not finish.
        self.cut = sluice_ruby::is_interrupted();
        for (e, result) in events.iter_mut().zip(&outcome.results) {
            matched.push(*result == sluice_ruby::EventResult::Matched);
            if let sluice_ruby::EventResult::Failed(message) = result {
                tracing::error!(plugin = %self.label, "Ruby exception occurred: {message}");
                if self.tag_with_message {
                    e.add_tag(&format!("{}: {message}", self.tag_on_exception));
                }
                e.add_tag(&self.tag_on_exception);
            }
        }
        made.extend(outcome.made);
    }

    fn decorates_new_events(&self) -> bool {
        false
    }

    fn cut_short(&mut self) -> bool {
        std::mem::take(&mut self.cut)
    }

    fn wants_periodic_flush(&self) -> bool {
        self.flushes.is_some()
    }

    fn flush_periodic(&mut self, emit: &mut Vec<Event>) {
        let Some(f) = &self.flushes else { return };
        let first = f
            .periodic
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .first_in_period(std::time::Instant::now());
        if first {
            self.release(false, emit);
        }
    }

    fn flush(&mut self, emit: &mut Vec<Event>) {
        let Some(f) = &self.flushes else { return };
        if !f.last.swap(true, std::sync::atomic::Ordering::SeqCst) {
            self.release(true, emit);
        }
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}
