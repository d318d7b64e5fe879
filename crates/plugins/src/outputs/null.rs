//! `null`: discards events (for benchmarks and tests).

use sluice_event::Event;
use sluice_pipeline::{ConfigError, Options, Output, OutputError, WriteContext};

pub struct Null;

pub fn build(_opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    Ok(Box::new(Null))
}

impl Output for Null {
    fn write(&self, _events: &[&Event], _ctx: &WriteContext) -> Result<(), OutputError> {
        Ok(())
    }
}
