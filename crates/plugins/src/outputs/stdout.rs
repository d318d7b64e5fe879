//! `stdout`: encodes a batch with its codec (`rubydebug` by default) into one buffer and writes
//! it to standard output in one call. A closed standard output (`sluice ... | head -1`) stops
//! the pipeline; other write errors are retried.

use std::io::Write;
use std::sync::Mutex;

use sluice_event::Event;
use sluice_pipeline::{Codec, ConfigError, Options, Output, OutputError, WriteContext};

pub struct Stdout {
    codec: Mutex<Box<dyn Codec>>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    Ok(Box::new(Stdout {
        codec: Mutex::new(opts.codec("rubydebug")?),
    }))
}

impl Output for Stdout {
    fn write(&self, events: &[&Event], _ctx: &WriteContext) -> Result<(), OutputError> {
        let mut buf = Vec::with_capacity(events.len() * 128);
        {
            let mut codec = self.codec.lock().unwrap_or_else(|p| p.into_inner());
            for e in events {
                codec.encode(e, &mut buf);
            }
        }
        let mut out = std::io::stdout().lock();
        out.write_all(&buf)
            .and_then(|()| out.flush())
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::BrokenPipe => {
                    OutputError::closed("standard output is closed (broken pipe)")
                }
                _ => OutputError::retryable(format!("writing to standard output: {e}")),
            })
    }
}
