//! `heartbeat`: an event every `interval` seconds, to show that the pipeline is alive, as
//! Logstash's heartbeat input makes them.
//!
//! Each event has `message` (default `"ok"`) and `host` (the host name, a string, as
//! Logstash's plugin sets it in both ECS modes). `sequence => "sequence"` adds a counter from
//! 1, `sequence => "epoch"` the time in Unix seconds, under `[event][sequence]` (`clock` with
//! `ecs_compatibility => disabled`). Without ECS, `message => "epoch"` or `"sequence"` still
//! selects the counter (Logstash's older form, deprecated there): the event then has no
//! `message`; with ECS such a message selects nothing and is sent as it is. `count` (default -1, for ever) stops it after that many; `threads` runs that
//! many loops, each with its own counter.

use std::time::{Duration, Instant};

use sluice_event::{Event, FieldRef, Timestamp, Value};
use sluice_pipeline::{hostname, ConfigError, Input, InputContext, Options};

use crate::ecs::Ecs;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Sequence {
    None,
    Epoch,
    Counter,
}

pub struct Heartbeat {
    message: String,
    /// Whether `message` goes into events that carry a sequence ("epoch" and "sequence"
    /// do not).
    message_with_sequence: bool,
    sequence: Sequence,
    field: FieldRef,
    interval: Duration,
    /// `None`: for ever.
    count: Option<u64>,
    threads: usize,
    host: String,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let message = opts.string_or("message", "ok")?;
    let sequence = opts.string("sequence")?.unwrap_or_default();
    if !matches!(sequence.as_str(), "" | "none" | "epoch" | "sequence") {
        return Err(opts.error(
            "sequence",
            format!("expected one of [\"none\", \"epoch\", \"sequence\"], got {sequence:?}"),
        ));
    }
    let interval = opts.float("interval")?.unwrap_or(60.0);
    if !(interval >= 0.0 && interval.is_finite()) {
        return Err(opts.error("interval", "must be a number of seconds, 0 or more"));
    }
    let count = match opts.int("count")?.unwrap_or(-1) {
        n if n < 0 => None,
        n => Some(n as u64),
    };
    let threads = opts.int("threads")?.unwrap_or(1);
    if threads < 1 {
        return Err(opts.error("threads", "must be at least 1"));
    }
    let ecs = Ecs::from_options(opts)?;
    let selector = |s: &str| match s {
        "epoch" => Sequence::Epoch,
        "sequence" => Sequence::Counter,
        _ => Sequence::None,
    };
    // As Logstash: with ECS only `sequence` selects; without, `message` does when
    // `sequence` is not set.
    let selected = match (ecs.enabled(), sequence.as_str()) {
        (false, "") => selector(&message),
        (_, s) => selector(s),
    };
    if sequence.is_empty() && matches!(message.as_str(), "epoch" | "sequence") {
        tracing::warn!(
            "heartbeat input: message => {message:?} selects a sequence only without ECS; use sequence => {message:?}"
        );
    }
    let message_with_sequence = !matches!(message.as_str(), "epoch" | "sequence");
    let field = if ecs.enabled() {
        FieldRef::parse("[event][sequence]").expect("valid reference")
    } else {
        FieldRef::top_level("clock")
    };
    Ok(Box::new(Heartbeat {
        message,
        message_with_sequence,
        sequence: selected,
        field,
        interval: Duration::from_secs_f64(interval),
        count,
        threads: threads as usize,
        host: hostname(),
    }))
}

impl Heartbeat {
    /// The `n`th event (from 1).
    fn event(&self, n: u64) -> Event {
        let mut e = Event::new();
        e.set_field("host", Value::String(self.host.as_str().into()));
        match self.sequence {
            Sequence::None => {
                // The message as it is, even "epoch" or "sequence" (with ECS they select
                // nothing).
                e.set_field("message", Value::String(self.message.as_str().into()));
                return e;
            }
            Sequence::Epoch => {
                let secs = Timestamp::now().millis().div_euclid(1000);
                e.set(&self.field, Value::Int(secs));
            }
            Sequence::Counter => e.set(&self.field, Value::Int(n as i64)),
        }
        if self.message_with_sequence {
            e.set_field("message", Value::String(self.message.as_str().into()));
        }
        e
    }

    fn beat(&self, ctx: &InputContext) {
        let mut n: u64 = 0;
        while !ctx.is_stopping() {
            let start = Instant::now();
            n += 1;
            let mut e = self.event(n);
            ctx.decorate(&mut e);
            if ctx.push_decorated(vec![e]).is_err() || self.count == Some(n) {
                return;
            }
            let left = self.interval.saturating_sub(start.elapsed());
            if !left.is_zero() && !sluice_pipeline::plugin::sleep_unless(left, || ctx.is_stopping())
            {
                return;
            }
        }
    }
}

impl Input for Heartbeat {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        if self.count == Some(0) {
            return Ok(());
        }
        let this = &*self;
        std::thread::scope(|s| {
            for _ in 0..this.threads {
                s.spawn(|| this.beat(ctx));
            }
        });
        Ok(())
    }
}
