//! `drop`: cancels events (all of them, or `percentage` percent at random).

use sluice_event::Event;
use sluice_pipeline::{ConfigError, Filter, Options};

#[derive(Clone)]
pub struct Drop {
    percentage: u32,
    rng: u64,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let percentage = opts.int("percentage")?.unwrap_or(100);
    if !(0..=100).contains(&percentage) {
        return Err(opts.error("percentage", "must be between 0 and 100"));
    }
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0x9E37_79B9_7F4A_7C15, |d| d.as_nanos() as u64)
        | 1;
    Ok(Box::new(Drop {
        percentage: percentage as u32,
        rng: seed,
    }))
}

impl Drop {
    /// xorshift64: cheap, and good enough to pick a share of events.
    fn next_percent(&mut self) -> u32 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng % 100) as u32
    }
}

impl Filter for Drop {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        if self.percentage >= 100 || self.next_percent() < self.percentage {
            event.cancel();
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        let mut c = self.clone();
        c.rng = c.rng.rotate_left(17) ^ 0xA076_1D64_78BD_642F;
        Box::new(c)
    }
}
