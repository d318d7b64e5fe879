//! `dots`: one `.` per event, for watching throughput.

use sluice_event::Event;
use sluice_pipeline::{Codec, ConfigError, Options};

#[derive(Clone)]
pub struct Dots;

pub fn build(_opts: &mut Options) -> Result<Box<dyn Codec>, ConfigError> {
    Ok(Box::new(Dots))
}

impl Codec for Dots {
    fn decode(&mut self, data: &[u8], out: &mut Vec<Event>) {
        out.extend(data.iter().filter(|&&b| b == b'.').map(|_| Event::new()));
    }

    fn encode(&mut self, _event: &Event, out: &mut Vec<u8>) {
        out.push(b'.');
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        Box::new(Dots)
    }
}
