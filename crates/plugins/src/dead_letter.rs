//! `dlq_on_failure`, for filters: instead of going on tagged, an event the filter fails on goes
//! to the pipeline's dead letter queue with why (beyond Logstash, whose filters cannot do
//! this). The filter adds its failure tags as usual, then hands the event to
//! [`OnFailure::take`], which keeps it and cancels the slot it leaves in the batch; the worker
//! collects what was taken after each batch ([`sluice_pipeline::Filter::take_dead_letters`])
//! and writes it to the DLQ in one go.

use sluice_event::Event;
use sluice_pipeline::{ConfigError, Options};

/// A filter's `dlq_on_failure` and the events it has set aside. Cloning it (for another
/// worker) gives an empty one.
#[derive(Default)]
pub struct OnFailure {
    enabled: bool,
    taken: Vec<(Event, String)>,
}

impl Clone for OnFailure {
    fn clone(&self) -> Self {
        OnFailure {
            enabled: self.enabled,
            taken: Vec::new(),
        }
    }
}

impl OnFailure {
    /// Reads `dlq_on_failure` (default false); the pipeline must have a dead letter queue.
    pub fn from_options(opts: &mut Options) -> Result<OnFailure, ConfigError> {
        let enabled = opts.boolean_or("dlq_on_failure", false)?;
        if enabled && !opts.pipeline_dead_letter_queue() {
            return Err(opts.error(
                "dlq_on_failure",
                "the pipeline has no dead letter queue: set dead_letter_queue.enable: true \
                 (in sluice.yml, or for this pipeline in pipelines.yml)",
            ));
        }
        Ok(OnFailure {
            enabled,
            taken: Vec::new(),
        })
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// When enabled, takes `event` out of the batch for the dead letter queue with `reason`
    /// (what stays in its place is cancelled).
    pub fn take(&mut self, event: &mut Event, reason: impl FnOnce(&Event) -> String) {
        if self.enabled {
            let why = reason(event);
            let failed = std::mem::take(event);
            event.cancel();
            self.taken.push((failed, why));
        }
    }

    /// For [`sluice_pipeline::Filter::take_dead_letters`].
    pub fn drain_into(&mut self, out: &mut Vec<(Event, String)>) {
        out.append(&mut self.taken);
    }
}
