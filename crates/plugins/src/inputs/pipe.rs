//! `pipe` input: runs a long-lived command (`/bin/sh -c command`) and makes each line of its
//! standard output into events through the codec (plain by default: one event per line, the
//! line without its end), as Logstash's pipe input. When the command ends, it is started
//! again 10 s later; at a stop it is sent SIGTERM, what it wrote until then being queued.
//!
//! Each event gets (unless it has them) `[host][name]` and `[process][command_line]`; `host`
//! and `command` with `ecs_compatibility => disabled`. Lines that arrive together are queued
//! as one batch.

use std::io::{BufRead, BufReader};
use std::os::fd::{AsRawFd, RawFd};
use std::process::{Command, Stdio};
use std::time::Duration;

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{hostname, Codec, ConfigError, Input, InputContext, Options};

use crate::ecs::Ecs;

/// How long Logstash waits before it starts an ended command again.
const RESTART_DELAY: Duration = Duration::from_secs(10);

pub struct PipeInput {
    command: String,
    codec: Box<dyn Codec>,
    host_field: FieldRef,
    command_field: FieldRef,
    host: String,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let command = opts.required_string("command")?;
    let codec = opts.codec("plain")?;
    let ecs = Ecs::from_options(opts)?;
    let (host_field, command_field) = if ecs.enabled() {
        ("[host][name]", "[process][command_line]")
    } else {
        ("host", "command")
    };
    Ok(Box::new(PipeInput {
        command,
        codec,
        host_field: FieldRef::parse(host_field).expect("valid reference"),
        command_field: FieldRef::parse(command_field).expect("valid reference"),
        host: hostname(),
    }))
}

impl PipeInput {
    /// Runs the command once, until it ends or the pipeline stops.
    fn run_once(&mut self, ctx: &InputContext) {
        let mut child = match Command::new("/bin/sh")
            .arg("-c")
            .arg(&self.command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
        {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(command = %self.command, "pipe input: the command could not start: {e}");
                return;
            }
        };
        let stdout = child.stdout.take().expect("piped");
        if !self.read(BufReader::new(stdout), ctx) {
            // The pipeline is stopping: the command is told to end.
            // SAFETY: kill(2) with our own child's pid, which it keeps until waited for.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        }
        match child.wait() {
            Ok(status) if !ctx.is_stopping() => {
                tracing::warn!(command = %self.command, %status, "pipe input: the command ended; starting it again in 10 s")
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(command = %self.command, "pipe input: waiting for the command: {e}")
            }
        }
    }

    /// Reads lines until the end of the output (true) or the pipeline's stop (false),
    /// queueing what has arrived whenever the reader has nothing more buffered.
    fn read(
        &mut self,
        mut reader: BufReader<std::process::ChildStdout>,
        ctx: &InputContext,
    ) -> bool {
        let mut batch: Vec<Event> = Vec::new();
        let mut line = Vec::new();
        let fd = reader.get_ref().as_raw_fd();
        loop {
            // Waits for output a tenth of a second at a time, so that a stop is seen.
            while reader.buffer().is_empty() && !readable_within(fd, Duration::from_millis(100)) {
                if ctx.is_stopping() {
                    let _ = ctx.push_decorated(batch);
                    return false;
                }
            }
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(command = %self.command, "pipe input: reading the command's output: {e}");
                    break;
                }
            }
            // Ruby's chomp: the line's end, \n, \r\n or \r.
            let mut end = line.len();
            if line[..end].ends_with(b"\n") {
                end -= 1;
            }
            if line[..end].ends_with(b"\r") {
                end -= 1;
            }
            let first = batch.len();
            self.codec.decode(&line[..end], &mut batch);
            for e in &mut batch[first..] {
                self.stamp(e, ctx);
            }
            let send = reader.buffer().is_empty() || batch.len() >= ctx.batch_size();
            if send && ctx.push_decorated(std::mem::take(&mut batch)).is_err() {
                return false;
            }
        }
        let first = batch.len();
        self.codec.flush(&mut batch);
        for e in &mut batch[first..] {
            self.stamp(e, ctx);
        }
        let _ = ctx.push_decorated(batch);
        true
    }

    fn stamp(&self, e: &mut Event, ctx: &InputContext) {
        ctx.decorate(e);
        if e.get(&self.host_field).is_none() {
            e.set(&self.host_field, Value::String(self.host.as_str().into()));
        }
        if e.get(&self.command_field).is_none() {
            e.set(
                &self.command_field,
                Value::String(self.command.as_str().into()),
            );
        }
    }
}

/// Whether `fd` has something to read (or its end) within `wait`.
fn readable_within(fd: RawFd, wait: Duration) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = wait.as_millis().clamp(1, i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    n != 0
}

impl Input for PipeInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        while !ctx.is_stopping() {
            self.run_once(ctx);
            if !sluice_pipeline::plugin::sleep_unless(RESTART_DELAY, || ctx.is_stopping()) {
                break;
            }
        }
        Ok(())
    }
}
