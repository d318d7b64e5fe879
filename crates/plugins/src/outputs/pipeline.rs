//! `pipeline { send_to => ["x", "y"] }`: hands each batch to the pipelines listening on those
//! addresses (their `pipeline` inputs), in this process.
//!
//! Returns only when every receiver's queue has taken the batch: a full receiver blocks the
//! sender (back-pressure, as in Logstash), and with a persisted receiver queue the events are
//! durable once this returns. A missing receiver (not started yet, restarting, or stopped) is
//! waited for, unless `ensure_delivery => false`, which drops the events for that address and
//! counts them. Waiting before any address took the batch is a retryable error (the worker
//! retries with back-off, and a stop signal ends it); once one address has the batch, the
//! others are waited for here, so that no address gets it twice. With `pipeline.lineage`, each
//! copy handed on gets this output's `pipeline/id` in its `[@metadata][lineage]`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sluice_event::Event;
use sluice_pipeline::bus::PipelineBus;
use sluice_pipeline::{ConfigError, Options, Output, OutputError, WriteContext};

pub struct PipelineOutput {
    send_to: Vec<String>,
    ensure_delivery: bool,
    dropped: AtomicU64,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let send_to = opts.string_list("send_to")?.unwrap_or_default();
    if send_to.is_empty() {
        return Err(opts
            .plugin_error("missing required setting \"send_to\" for output plugin \"pipeline\""));
    }
    Ok(Box::new(PipelineOutput {
        send_to,
        ensure_delivery: opts.boolean_or("ensure_delivery", true)?,
        dropped: AtomicU64::new(0),
    }))
}

impl PipelineOutput {
    /// Hands the batch to `address`. Without a receiver: an error if `may_give_up` (nothing
    /// was delivered yet), else waits for one.
    fn deliver(
        &self,
        address: &str,
        events: &[&Event],
        may_give_up: bool,
        lineage: Option<&str>,
    ) -> Result<(), OutputError> {
        let bus = PipelineBus::global();
        let mut warned = false;
        loop {
            let wait = if self.ensure_delivery {
                Duration::from_secs(1)
            } else {
                Duration::ZERO
            };
            match bus.receiver(address, wait) {
                Some(rx) => {
                    let mut batch: Vec<Event> = events.iter().map(|e| (*e).clone()).collect();
                    if let Some(label) = lineage {
                        for e in &mut batch {
                            sluice_pipeline::lineage::append(e, label);
                        }
                    }
                    if rx.push(batch).is_ok() {
                        if warned {
                            tracing::info!(address, "pipeline receiver is back; delivering");
                        }
                        return Ok(());
                    }
                    // The receiver stopped between lookup and push (a reload): look again.
                }
                None if !self.ensure_delivery => {
                    let n = self
                        .dropped
                        .fetch_add(events.len() as u64, Ordering::Relaxed)
                        + events.len() as u64;
                    tracing::debug!(address, dropped_total = n, "no pipeline listens on this address; events dropped (ensure_delivery => false)");
                    return Ok(());
                }
                None if may_give_up => {
                    return Err(OutputError::retryable(format!(
                    "no running pipeline listens on address {address:?} (ensure_delivery => true)"
                )))
                }
                None => {}
            }
            if !warned {
                tracing::warn!(address, "no running pipeline listens on this address; waiting for it (ensure_delivery => true)");
                warned = true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Output for PipelineOutput {
    fn write(&self, events: &[&Event], ctx: &WriteContext) -> Result<(), OutputError> {
        for (i, address) in self.send_to.iter().enumerate() {
            self.deliver(address, events, i == 0, ctx.lineage())?;
        }
        Ok(())
    }
}
