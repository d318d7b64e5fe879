//! `exec`: runs a shell command every `interval` seconds, or on a cron `schedule`, and makes
//! its whole standard output into events through the codec (plain: one event holding it all),
//! as Logstash's exec input.
//!
//! Each event gets (unless it has them already) the host name, the command line and its exit
//! status: `[host][name]`, `[process][command_line]`, `[process][exit_code]`, and
//! `[@metadata][input][exec][process][elapsed_time]`; with `ecs_compatibility => disabled`
//! `host`, `command`, `[@metadata][exit_status]` and `[@metadata][duration]` (seconds, a
//! float). The elapsed time is Logstash's figure: seconds × 1,000,000, so microseconds,
//! although Logstash names it nanoseconds.
//!
//! With `interval`, the next run starts one interval after the previous one started (at
//! once when it ran longer, with a warning); with `schedule`, at the cron's next time. A
//! command that cannot start is logged and makes no event; one that fails still makes its
//! event, with its exit status. At a stop, a running command is waited for.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sluice_event::{FieldRef, Value};
use sluice_pipeline::{hostname, Codec, ConfigError, Input, InputContext, Options};

use crate::ecs::Ecs;
use crate::schedule::Schedule;

enum When {
    Every(Duration),
    Cron(Schedule),
}

/// Where the fields go, by ECS mode.
struct Fields {
    host: FieldRef,
    command_line: FieldRef,
    exit_code: FieldRef,
    /// ECS: elapsed "nanoseconds" (microseconds, as Logstash computes them).
    elapsed: Option<FieldRef>,
    /// Without ECS: seconds.
    duration: Option<FieldRef>,
}

pub struct Exec {
    command: String,
    when: When,
    fields: Fields,
    host: String,
    codec: Box<dyn Codec>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let command = opts.required_string("command")?;
    let interval = opts.float("interval")?;
    let schedule = opts.string("schedule")?;
    let when = match (interval, schedule) {
        (Some(i), None) if i > 0.0 && i.is_finite() => When::Every(Duration::from_secs_f64(i)),
        (Some(_), None) => {
            return Err(opts.error("interval", "must be a number of seconds above 0"))
        }
        (None, Some(s)) => {
            When::Cron(Schedule::parse_cron(&s).map_err(|e| opts.error("schedule", e))?)
        }
        _ => {
            return Err(opts.plugin_error(
                "exec input: either 'interval' or 'schedule' option must be defined.",
            ))
        }
    };
    let codec = opts.codec("plain")?;
    let ecs = Ecs::from_options(opts)?;
    let field = |s: &str| FieldRef::parse(s).expect("valid reference");
    let fields = if ecs.enabled() {
        Fields {
            host: field("[host][name]"),
            command_line: field("[process][command_line]"),
            exit_code: field("[process][exit_code]"),
            elapsed: Some(field("[@metadata][input][exec][process][elapsed_time]")),
            duration: None,
        }
    } else {
        Fields {
            host: field("host"),
            command_line: field("command"),
            exit_code: field("[@metadata][exit_status]"),
            elapsed: None,
            duration: Some(field("[@metadata][duration]")),
        }
    };
    Ok(Box::new(Exec {
        command,
        when,
        fields,
        host: hostname(),
        codec,
    }))
}

impl Exec {
    /// Runs the command once and queues its events; how long it took. `Err` once the
    /// pipeline stops.
    fn execute(&self, codec: &mut dyn Codec, ctx: &InputContext) -> Result<Duration, ()> {
        let start = Instant::now();
        let run = Command::new("/bin/sh")
            .arg("-c")
            .arg(&self.command)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output();
        let took = start.elapsed();
        let out = match run {
            Ok(o) => o,
            Err(e) => {
                tracing::error!(command = %self.command, "exec input: the command could not run: {e}");
                return Ok(took);
            }
        };
        // A command killed by a signal has no exit status: null, as Ruby's `$?.exitstatus`.
        let status = out
            .status
            .code()
            .map_or(Value::Null, |c| Value::Int(i64::from(c)));
        let mut events = Vec::new();
        codec.decode(&out.stdout, &mut events);
        codec.flush(&mut events);
        let f = &self.fields;
        for e in &mut events {
            ctx.decorate(e);
            let mut set_unless_there = |r: &FieldRef, v: Value| {
                if e.get(r).is_none() {
                    e.set(r, v);
                }
            };
            set_unless_there(&f.host, Value::String(self.host.as_str().into()));
            set_unless_there(&f.command_line, Value::String(self.command.as_str().into()));
            set_unless_there(&f.exit_code, status.clone());
            if let Some(r) = &f.elapsed {
                e.set(r, Value::Int((took.as_secs_f64() * 1_000_000.0) as i64));
            }
            if let Some(r) = &f.duration {
                e.set(r, Value::Float(took.as_secs_f64()));
            }
        }
        ctx.push_decorated(events).map_err(|_| ())?;
        Ok(took)
    }
}

impl Input for Exec {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let mut codec = self.codec.clone_box();
        match &self.when {
            When::Every(interval) => {
                while !ctx.is_stopping() {
                    let Ok(took) = self.execute(codec.as_mut(), ctx) else {
                        break;
                    };
                    match interval.checked_sub(took) {
                        Some(left) if !left.is_zero() => {
                            if !sluice_pipeline::plugin::sleep_unless(left, || ctx.is_stopping()) {
                                break;
                            }
                        }
                        _ => tracing::warn!(
                            command = %self.command,
                            "exec input: the command ran {took:?}, longer than the interval {interval:?}; running it again at once"
                        ),
                    }
                }
            }
            When::Cron(schedule) => {
                crate::schedule::run(
                    schedule,
                    || ctx.is_stopping(),
                    || {
                        let _ = self.execute(codec.as_mut(), ctx);
                    },
                );
            }
        }
        Ok(())
    }
}
