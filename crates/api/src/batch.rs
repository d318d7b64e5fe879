//! A pipeline's `batch` section of `/_node/stats` (Logstash 9's
//! `pipeline.batch.metrics.sampling_mode`), from the sampler's history of
//! [`BatchFigures`](sluice_pipeline::batch_metrics::BatchFigures), in the shape of Logstash's
//! `refine_batch_metrics`:
//!
//! - `current`: the last measured batch's event count and byte size (`"undefined"` before
//!   the first, as Logstash's gauge);
//! - `average`: events (bytes) per measured batch, over `lifetime` (0 when nothing was
//!   measured) and each of `last_1_minute`, `last_5_minutes`, `last_15_minutes` where some
//!   batch was measured, rounded to integers;
//! - `p50`, `p90` (and `max` for byte sizes): from the histogram of the batches measured in
//!   the window; byte sizes also over `lifetime`, event counts only over the windows, as
//!   Logstash reports them.

use serde_json::{json, Map, Value};

use sluice_pipeline::batch_metrics::{BatchFigures, Histogram};

use crate::flow::{window_start, Flows, WINDOWS};
use crate::registry::Sample;

/// The `batch` section, or `None` when batch metrics are disabled.
pub(crate) fn batch_stats(flows: &Flows) -> Option<Value> {
    let now = flows.now.batch.as_ref()?;
    let empty = BatchFigures::default();
    let figures = |s: &Sample| s.batch.clone().unwrap_or_default();
    let first = flows.first.batch.as_ref().unwrap_or(&empty);
    // (window name, figures at its start), lifetime first.
    let mut spans: Vec<(&str, BatchFigures)> = vec![("lifetime", first.clone())];
    for (name, window) in WINDOWS.into_iter().skip(1) {
        if let Some(from) = window_start(flows.history, flows.now, window) {
            spans.push((name, figures(from)));
        }
    }

    let average = |pick: fn(&BatchFigures) -> u64| {
        let mut m = Map::new();
        for (name, from) in &spans {
            let batches = now.batches.saturating_sub(from.batches);
            let value = pick(now).saturating_sub(pick(from));
            if batches > 0 {
                m.insert(
                    name.to_string(),
                    json!((value as f64 / batches as f64).round() as u64),
                );
            } else if *name == "lifetime" {
                m.insert(name.to_string(), json!(0));
            }
        }
        Value::Object(m)
    };
    let percentiles = |pick: fn(&BatchFigures) -> &Histogram, lifetime: bool| {
        let (mut p50, mut p90, mut max) = (Map::new(), Map::new(), Map::new());
        for (name, from) in &spans {
            if *name == "lifetime" && !lifetime {
                continue;
            }
            let h = pick(now).since(pick(from));
            p50.insert(name.to_string(), json!(h.percentile(50.0).unwrap_or(0)));
            p90.insert(name.to_string(), json!(h.percentile(90.0).unwrap_or(0)));
            max.insert(name.to_string(), json!(h.max().unwrap_or(0)));
        }
        (Value::Object(p50), Value::Object(p90), Value::Object(max))
    };
    let current = |i: usize| match now.current {
        Some(c) => json!(if i == 0 { c.0 } else { c.1 }),
        None => json!("undefined"),
    };

    let (ep50, ep90, _) = percentiles(|f| &f.event_counts, false);
    let (bp50, bp90, bmax) = percentiles(|f| &f.byte_sizes, true);
    Some(json!({
        "event_count": {
            "current": current(0),
            "average": average(|f| f.events),
            "p50": ep50,
            "p90": ep90,
        },
        "byte_size": {
            "current": current(1),
            "average": average(|f| f.bytes),
            "p50": bp50,
            "p90": bp90,
            "max": bmax,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_pipeline::batch_metrics::BatchMetrics;
    use sluice_pipeline::batch_metrics::SamplingMode;
    use sluice_pipeline::metrics::Totals;
    use sluice_pipeline::queue::QueueFigures;
    use std::time::{Duration, Instant};

    fn sample(at: Instant, batch: Option<BatchFigures>) -> Sample {
        Sample {
            at,
            totals: Totals::default(),
            queue: QueueFigures::default(),
            batch,
        }
    }

    #[test]
    fn nothing_measured_yet_and_old_batches_outside_the_window() {
        let t0 = Instant::now();
        let history = vec![sample(t0, Some(BatchFigures::default()))];
        let now = sample(t0 + Duration::from_secs(1), Some(BatchFigures::default()));
        let flows = Flows {
            history: &history,
            now: &now,
            first: &history[0],
        };
        let b = batch_stats(&flows).unwrap();
        assert_eq!(b["event_count"]["current"], "undefined");
        assert_eq!(b["byte_size"]["average"], json!({"lifetime": 0}));
        assert_eq!(b["byte_size"]["p50"]["last_1_minute"], 0);

        // Batches of 10 events measured in the first two minutes, none since: the last minute
        // has no average and zero percentiles, the longer windows and lifetime have them.
        let m = BatchMetrics::new(SamplingMode::Full);
        let events: Vec<_> = (0..10).map(|_| sluice_event::Event::new()).collect();
        let mut history = vec![sample(t0, m.figures())];
        for s in 1..=120 {
            m.record(&events);
            history.push(sample(t0 + Duration::from_secs(s), m.figures()));
        }
        for s in 121..=200 {
            history.push(sample(t0 + Duration::from_secs(s), m.figures()));
        }
        let now = history.pop().unwrap();
        let flows = Flows {
            history: &history,
            now: &now,
            first: &history[0],
        };
        let b = batch_stats(&flows).unwrap();
        let average = &b["event_count"]["average"];
        assert_eq!(
            average,
            &json!({"lifetime": 10, "last_5_minutes": 10, "last_15_minutes": 10})
        );
        assert_eq!(b["event_count"]["p90"]["last_1_minute"], 0);
        assert_eq!(b["event_count"]["p90"]["last_5_minutes"], 10);
        // An empty event: @timestamp 12 + @version 1.
        assert_eq!(b["byte_size"]["max"]["lifetime"], 130);
        assert_eq!(b["byte_size"]["current"], 130);
    }
}
