//! sluice-ruby: an embedded CRuby for the `ruby` filter.
//!
//! Ruby's VM is single-threaded and bound to the OS thread that started it, so one
//! process-wide VM thread ([`vm`]) is started the first time a script is compiled, after
//! sluice has installed its own signal handlers, and lives until the process exits. Every
//! other thread talks to it through a channel: [`Script::compile`] sends a filter's
//! `init`/`code` to be compiled once; [`Script::run`] sends a whole batch of events and gets
//! them back, with what the script made of each (matched, the exception it raised, the new
//! events it emitted). Only Rust data crosses the channel; Ruby values never leave the VM
//! thread.
//!
//! On the VM thread, each event is a `LogStash::Event` ([`event`]) that owns the sluice event
//! for the time of the batch: `get`/`set` convert values both ways as Logstash's Rubyfier
//! and Javafier do (big integers, floats, nested hashes and arrays, timestamps as
//! `LogStash::Timestamp`). The Ruby side of the API (the filter context, `@logger`) is the
//! prelude in `prelude.rb`.

mod event;
mod vm;

use std::sync::mpsc;
use std::sync::Arc;

use sluice_event::Event;

/// What compiling a filter's script needs.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The plugin's name in logs (`ruby@3:5`).
    pub label: String,
    pub source: Source,
}

/// Where a filter's Ruby comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// Inline: `init` runs once in the filter's context before the first event (`@ivars` it
    /// sets are seen by `code`); `code` is the body of `filter(event, &new_event_block)`.
    Inline { init: Option<String>, code: String },
    /// A script file (`path`): it defines `filter(event)` returning the events to keep, and
    /// may define `register(params)` and `test` blocks, which run when it loads.
    File {
        path: String,
        content: String,
        params: Vec<(String, sluice_event::Value)>,
    },
    /// The aggregate filter, its options by name. Aggregate filters compiled with the same
    /// `scope` (one pipeline) share their maps.
    Aggregate {
        scope: String,
        options: Vec<(String, sluice_event::Value)>,
    },
}

/// What a script made of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventResult {
    /// The code ran through (Logstash's `filter_matched`).
    Matched,
    /// The filter did not apply to the event (aggregate without its task id, ...).
    Unmatched,
    /// The code raised: Ruby's `to_s` of the exception.
    Failed(String),
}

/// What a script made of one batch.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Per event of the batch (a cancelled event is `Unmatched`).
    pub results: Vec<EventResult>,
    /// The events given to `new_event_block` (or yielded), each with the index of the event
    /// whose code made it.
    pub made: Vec<(usize, Event)>,
}

/// A compiled script on the VM thread, shared by every worker's copy of the filter. The
/// last copy dropped frees it on the VM.
#[derive(Clone)]
pub struct Script {
    inner: Arc<Handle>,
}

struct Handle {
    id: u64,
    jobs: mpsc::Sender<vm::Job>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let _ = self.jobs.send(vm::Job::Close(self.id));
    }
}

/// The error of every call once the VM thread is gone.
const STOPPED: &str = "the Ruby VM thread has stopped";

impl Script {
    /// Compiles `spec` on the VM (starting it if needed): runs `init`, then defines the
    /// filter method. A syntax error, or an exception raised by `init`, is the `Err`.
    pub fn compile(spec: Spec) -> Result<Script, String> {
        let jobs = vm::jobs()?;
        let id = ask(&jobs, |reply| vm::Job::Compile(spec, reply))??;
        Ok(Script {
            inner: Arc::new(Handle { id, jobs }),
        })
    }

    /// Runs the script on each event of `events` (cancelled ones are skipped), in one round
    /// trip to the VM. The events come back in place, changed by the script. `Err` only when
    /// the VM is gone: before the batch was sent the events are unchanged; a VM that died
    /// with the batch took it along.
    pub fn run(&self, events: &mut [Event]) -> Result<Outcome, String> {
        let batch: Vec<Event> = events.iter_mut().map(std::mem::take).collect();
        let (reply, answer) = mpsc::sync_channel(1);
        let job = vm::Job::Run(self.inner.id, batch, reply);
        if let Err(mpsc::SendError(vm::Job::Run(_, batch, _))) = self.inner.jobs.send(job) {
            put_back(events, batch);
            return Err(STOPPED.to_owned());
        }
        let (batch, outcome) = answer.recv().map_err(|_| STOPPED.to_owned())?;
        put_back(events, batch);
        Ok(outcome)
    }

    /// Events the script releases on its own (aggregate timeouts); `last` at the pipeline's
    /// end.
    pub fn flush(&self, last: bool) -> Result<Vec<Event>, String> {
        ask(&self.inner.jobs, |reply| {
            vm::Job::Flush(self.inner.id, last, reply)
        })?
    }
}

fn put_back(events: &mut [Event], batch: Vec<Event>) {
    for (slot, e) in events.iter_mut().zip(batch) {
        *slot = e;
    }
}

/// Sends the job `make` builds around a reply channel, and waits for the reply.
fn ask<T>(
    jobs: &mpsc::Sender<vm::Job>,
    make: impl FnOnce(mpsc::SyncSender<T>) -> vm::Job,
) -> Result<T, String> {
    let (reply, answer) = mpsc::sync_channel(1);
    jobs.send(make(reply)).map_err(|_| STOPPED.to_owned())?;
    answer.recv().map_err(|_| STOPPED.to_owned())
}

/// Gives up on Ruby code still running, for a stop that waits on it: the code running now is
/// interrupted (a `Sluice::Shutdown` exception, within 0.2 s while it runs Ruby), and no code
/// runs any more: events get that exception (and the filter's exception tag) instead.
pub fn interrupt() {
    vm::INTERRUPTED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether [`interrupt`] was called: from then on a batch may have events whose code did not
/// run (or did not finish).
pub fn is_interrupted() -> bool {
    vm::INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed)
}
