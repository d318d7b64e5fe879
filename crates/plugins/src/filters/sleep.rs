//! `sleep`: slows a worker down, as logstash-filter-sleep does: `time` seconds (sprintf'd, read
//! as Ruby's `to_f`) every `every` events (default 1); with `replay => true`, the gap between
//! this event's `@timestamp` and the previous one's, divided by `time` (default 1: real
//! time; 2: twice as fast). Each worker counts its own events.

use std::time::Duration;

use sluice_event::{Event, Template};
use sluice_pipeline::{ConfigError, Filter, Options};

use crate::filters::grok::convert::ruby_to_f;

#[derive(Clone)]
pub struct Sleep {
    time: Template,
    every: f64,
    replay: bool,
    count: u64,
    last_clock: Option<i64>,
}

/// Ruby's `String#to_f` of the text, as a float.
fn to_f(text: &str) -> f64 {
    ruby_to_f(text).as_f64().unwrap_or(0.0)
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let replay = opts.boolean_or("replay", false)?;
    let time = match opts.string("time")? {
        Some(t) => t,
        None if replay => "1".to_owned(),
        None => return Err(opts.plugin_error("Missing required parameter 'time' for filter sleep")),
    };
    let every = to_f(&opts.string_or("every", "1")?);
    Ok(Box::new(Sleep {
        time: Template::parse(&time),
        every,
        replay,
        count: 0,
        last_clock: None,
    }))
}

fn sleep(seconds: f64) {
    if seconds > 0.0 && seconds.is_finite() {
        std::thread::sleep(Duration::from_secs_f64(seconds.min(86_400.0)));
    }
}

impl Filter for Sleep {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        self.count += 1;
        let time = to_f(&self.time.render(event));
        if self.replay {
            let clock = event.timestamp().map_or(0, |t| t.millis());
            if let Some(last) = self.last_clock {
                sleep((clock - last) as f64 / 1000.0 / time);
            }
            self.last_clock = Some(clock);
        } else if self.count as f64 >= self.every {
            self.count = 0;
            sleep(time);
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn to_f_as_ruby() {
        assert_eq!(super::to_f("1.5s"), 1.5);
        assert_eq!(super::to_f(" 2"), 2.0);
        assert_eq!(super::to_f("abc"), 0.0);
        assert_eq!(super::to_f("0.25"), 0.25);
    }
}
