//! `pipe` output: writes each event as a line to the standard input of a command
//! (`/bin/sh -c command`), as Logstash's pipe output. `command` may hold `%{field}`: each
//! distinct command line gets a process of its own, started at its first event and kept
//! running. The line is `message_format` rendered for the event, or the event's JSON.
//!
//! A process that no event has written to for `ttl` seconds (default 10; 0 or less: never)
//! is closed (its standard input ends, and it is waited for). A write that fails (the
//! process ended) closes it; the batch is retried, starting the command again. At the
//! pipeline's end every process's input is closed and it is waited for. One batch's lines
//! for one command go in one write.

use std::collections::HashMap;
use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sluice_event::{Event, Template};
use sluice_pipeline::{ConfigError, Options, Output, OutputError, WriteContext};

pub struct PipeOutput {
    command: Template,
    format: Option<Template>,
    ttl: Option<Duration>,
    pipes: Mutex<HashMap<String, Pipe>>,
}

struct Pipe {
    child: Child,
    stdin: Option<ChildStdin>,
    written: Instant,
}

impl Pipe {
    fn start(command: &str) -> Result<Pipe, String> {
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(command)
            .stdin(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {command:?}: {e}"))?;
        let stdin = child.stdin.take();
        tracing::info!(command, "pipe output: opened a pipe");
        Ok(Pipe {
            child,
            stdin,
            written: Instant::now(),
        })
    }

    /// Ends its input and waits for it.
    fn close(mut self, command: &str) {
        drop(self.stdin.take());
        match self.child.wait() {
            Ok(status) => tracing::info!(command, %status, "pipe output: closed a pipe"),
            Err(e) => tracing::warn!(command, "pipe output: waiting for the command: {e}"),
        }
    }
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let command = opts.required_string("command")?;
    let format = opts.string("message_format")?.map(|f| Template::parse(&f));
    let ttl = opts.float("ttl")?.unwrap_or(10.0);
    let ttl = (ttl > 0.0 && ttl.is_finite()).then(|| Duration::from_secs_f64(ttl));
    Ok(Box::new(PipeOutput {
        command: Template::parse(&command),
        format,
        ttl,
        pipes: Mutex::new(HashMap::new()),
    }))
}

impl PipeOutput {
    fn line(&self, e: &Event, out: &mut Vec<u8>) {
        match &self.format {
            Some(f) => out.extend_from_slice(f.render(e).as_bytes()),
            None => sluice_event::json::write_event(e, out),
        }
        out.push(b'\n');
    }
}

impl Output for PipeOutput {
    fn write(&self, events: &[&Event], _ctx: &WriteContext) -> Result<(), OutputError> {
        // The batch's lines, by command line, in order.
        let mut by_command: Vec<(String, Vec<u8>)> = Vec::new();
        for e in events {
            let command = self.command.render(e);
            let at = match by_command.iter().position(|(c, _)| *c == command) {
                Some(i) => i,
                None => {
                    by_command.push((command, Vec::new()));
                    by_command.len() - 1
                }
            };
            self.line(e, &mut by_command[at].1);
        }
        let mut pipes = self.pipes.lock().unwrap_or_else(|p| p.into_inner());
        for (command, lines) in &by_command {
            if !pipes.contains_key(command) {
                let pipe = Pipe::start(command).map_err(OutputError::retryable)?;
                pipes.insert(command.clone(), pipe);
            }
            let pipe = pipes.get_mut(command).expect("just inserted");
            let written = match pipe.stdin.as_mut() {
                Some(stdin) => stdin.write_all(lines).and_then(|()| stdin.flush()),
                None => Err(std::io::ErrorKind::BrokenPipe.into()),
            };
            match written {
                Ok(()) => pipe.written = Instant::now(),
                Err(e) => {
                    tracing::error!(
                        command,
                        "pipe output: writing to the pipe failed, closing it: {e}"
                    );
                    if let Some(p) = pipes.remove(command) {
                        p.close(command);
                    }
                    return Err(OutputError::retryable(format!(
                        "pipe output: writing to {command:?} failed: {e}"
                    )));
                }
            }
        }
        if let Some(ttl) = self.ttl {
            let stale: Vec<String> = (pipes.iter())
                .filter(|(_, p)| p.written.elapsed() >= ttl)
                .map(|(c, _)| c.clone())
                .collect();
            for c in stale {
                if let Some(p) = pipes.remove(&c) {
                    p.close(&c);
                }
            }
        }
        Ok(())
    }

    fn close(&self) -> Result<(), OutputError> {
        let mut pipes = self.pipes.lock().unwrap_or_else(|p| p.into_inner());
        for (command, pipe) in pipes.drain() {
            pipe.close(&command);
        }
        Ok(())
    }
}
