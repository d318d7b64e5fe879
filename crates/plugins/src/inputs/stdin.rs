//! `stdin`: reads standard input through a codec (`line` by default) and records the host it
//! ran on (`[host][hostname]`, or `host` with `ecs_compatibility => disabled`). At end of
//! input the input returns, so the pipeline drains and exits; as in Logstash the codec is not
//! flushed, so what it still holds (a last line without its newline, an open multiline
//! event) is not an event, and a warning says how many bytes that was.

use std::io::Read;

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{Codec, ConfigError, Input, InputContext, Options};

use crate::ecs::Ecs;
use sluice_pipeline::hostname;

pub struct Stdin {
    codec: Box<dyn Codec>,
    host_field: FieldRef,
    host: String,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    // Logstash's `fix_streaming_codecs`: a whole-document codec reads the stream by lines.
    let codec = opts.codec_streaming("line", &[("plain", "line"), ("json", "json_lines")])?;
    let ecs = Ecs::from_options(opts)?;
    let host_field = if ecs.enabled() {
        FieldRef::parse("[host][hostname]").expect("valid reference")
    } else {
        FieldRef::top_level("host")
    };
    Ok(Box::new(Stdin {
        codec,
        host_field,
        host: hostname(),
    }))
}

impl Stdin {
    fn push(&self, ctx: &InputContext, mut events: Vec<Event>) -> bool {
        for e in &mut events {
            // As Logstash's stdin: decorated first, so that `add_field` may set the host.
            ctx.decorate(e);
            if e.get(&self.host_field).is_none() {
                e.set(&self.host_field, Value::String(self.host.as_str().into()));
            }
        }
        ctx.push_decorated(events).is_ok()
    }
}

impl Input for Stdin {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let mut stdin = std::io::stdin().lock();
        let mut buf = vec![0u8; 64 * 1024];
        let mut events = Vec::new();
        // A codec that gives out idle records (multiline's `auto_flush_interval`) is asked
        // every half interval while standard input has nothing to read.
        let idle = self.codec.idle_flush_interval();
        while !ctx.is_stopping() {
            if let Some(interval) = idle {
                if !readable_within(interval / 2) {
                    self.codec
                        .flush_idle(std::time::Instant::now(), &mut events);
                    if !events.is_empty() && !self.push(ctx, std::mem::take(&mut events)) {
                        return Ok(());
                    }
                    continue;
                }
            }
            let n = match stdin.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("reading standard input: {e}")),
            };
            self.codec.decode(&buf[..n], &mut events);
            if !events.is_empty() {
                // The next read likely makes as many events: room for them at once.
                let next = Vec::with_capacity(events.len());
                if !self.push(ctx, std::mem::replace(&mut events, next)) {
                    return Ok(());
                }
            }
        }
        // As Logstash's stdin: the codec is not flushed at the end, so a multiline event
        // still open or a last line without its newline is no event (test suites written for
        // Logstash end their input with a line to be dropped). Said, not silent.
        let pending = self.codec.pending_bytes();
        if pending > 0 {
            tracing::warn!(
                bytes = pending,
                "stdin: the input ended inside an event (a last line without its newline, or a multiline event still open); as in Logstash, it is not emitted"
            );
        }
        Ok(())
    }
}

/// Whether standard input has something to read (or its end) within `wait`. Reads bypass
/// the standard library's buffer (they ask for more than it holds), so the descriptor tells
/// the truth.
fn readable_within(wait: std::time::Duration) -> bool {
    let mut fd = libc::pollfd {
        fd: 0,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = wait.as_millis().clamp(10, i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut fd, 1, ms) };
    n != 0
}
