//! `generator`: produces test events — `message` (or each of `lines` in turn) `count` times
//! (0 = until stopped), in `threads` threads. Each event carries its iteration number in
//! `[event][sequence]` (`sequence` with `ecs_compatibility => disabled`) and the host name, as
//! Logstash's generator does. Events are pushed in batches.

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{Codec, ConfigError, Input, InputContext, Options};

use crate::ecs::Ecs;
use sluice_pipeline::hostname;

pub struct Generator {
    spec: Spec,
    threads: usize,
    codec: Box<dyn Codec>,
}

/// What every generator thread produces (shared read-only between them).
struct Spec {
    lines: Vec<String>,
    count: u64,
    sequence_field: FieldRef,
    host_field: FieldRef,
    host: String,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let message = opts.string_or("message", "Hello world!")?;
    let lines = opts.string_list("lines")?.unwrap_or_else(|| vec![message]);
    if lines.is_empty() {
        return Err(opts.error("lines", "must not be empty"));
    }
    let count = opts.int("count")?.unwrap_or(0);
    if count < 0 {
        return Err(opts.error("count", "must be 0 (no limit) or more"));
    }
    let threads = opts.int("threads")?.unwrap_or(1);
    if threads < 1 {
        return Err(opts.error("threads", "must be at least 1"));
    }
    let codec = opts.codec("plain")?;
    let ecs = Ecs::from_options(opts)?;
    let (sequence_field, host_field) = if ecs.enabled() {
        (
            FieldRef::parse("[event][sequence]"),
            FieldRef::parse("[host][name]"),
        )
    } else {
        (
            Ok(FieldRef::top_level("sequence")),
            Ok(FieldRef::top_level("host")),
        )
    };
    Ok(Box::new(Generator {
        spec: Spec {
            lines,
            count: count as u64,
            sequence_field: sequence_field.expect("valid reference"),
            host_field: host_field.expect("valid reference"),
            host: hostname(),
        },
        threads: threads as usize,
        codec,
    }))
}

impl Spec {
    fn generate(&self, mut codec: Box<dyn Codec>, ctx: &InputContext) {
        let push_at = ctx.batch_size().max(1);
        let mut batch: Vec<Event> = Vec::with_capacity(push_at + self.lines.len());
        let mut sequence: u64 = 0;
        while self.count == 0 || sequence < self.count {
            if ctx.is_stopping() {
                break;
            }
            for line in &self.lines {
                let first = batch.len();
                codec.decode(line.as_bytes(), &mut batch);
                for e in &mut batch[first..] {
                    // As Logstash's generator: decorated, then the host unless the event
                    // (or `add_field`) gives one, then the sequence.
                    ctx.decorate(e);
                    self.stamp_host(e);
                    e.set(&self.sequence_field, Value::Int(sequence as i64));
                }
            }
            sequence += 1;
            if batch.len() >= push_at {
                // The next batch gets its room at once rather than growing into it.
                let next = Vec::with_capacity(push_at + self.lines.len());
                if ctx
                    .push_decorated(std::mem::replace(&mut batch, next))
                    .is_err()
                {
                    return;
                }
            }
        }
        // As Logstash: what the codec still holds (a last line without its delimiter) becomes
        // events at the end, with the host but no sequence number.
        let first = batch.len();
        codec.flush(&mut batch);
        for e in &mut batch[first..] {
            ctx.decorate(e);
            self.stamp_host(e);
        }
        let _ = ctx.push_decorated(batch);
    }

    /// The generating host, unless the event names one.
    fn stamp_host(&self, e: &mut Event) {
        if e.get(&self.host_field).is_none() {
            e.set(&self.host_field, Value::String(self.host.as_str().into()));
        }
    }
}

impl Input for Generator {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        if self.threads == 1 {
            self.spec.generate(self.codec.clone_box(), ctx);
            return Ok(());
        }
        let spec = &self.spec;
        let codecs: Vec<_> = (0..self.threads).map(|_| self.codec.clone_box()).collect();
        std::thread::scope(|s| {
            for codec in codecs {
                s.spawn(move || spec.generate(codec, ctx));
            }
        });
        Ok(())
    }
}
