//! The pipeline bus: how `pipeline { send_to => ... }` outputs reach `pipeline { address => ... }`
//! inputs of other pipelines in the same process.
//!
//! A `pipeline` input registers its address with a handle to its pipeline's queue while it
//! runs. A sending output looks addresses up per batch and pushes copies of the events through
//! those handles — so it blocks while a receiver's queue is full (back-pressure, no drop), and
//! with a persisted receiver an event is durable once that push returns. A missing receiver
//! makes the sender wait for it (or, with `ensure_delivery => false`, drop and count).

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use crate::plugin::InputContext;

#[derive(Default)]
pub struct PipelineBus {
    receivers: Mutex<HashMap<String, InputContext>>,
    changed: Condvar,
}

/// Why an address could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pipeline address {0:?} is already used by another running pipeline input")]
pub struct AddressInUse(pub String);

impl PipelineBus {
    /// The process-wide bus.
    pub fn global() -> &'static PipelineBus {
        static BUS: OnceLock<PipelineBus> = OnceLock::new();
        BUS.get_or_init(PipelineBus::default)
    }

    pub fn register(&self, address: &str, ctx: InputContext) -> Result<(), AddressInUse> {
        let mut r = self.receivers.lock().unwrap_or_else(|p| p.into_inner());
        if r.contains_key(address) {
            return Err(AddressInUse(address.to_owned()));
        }
        r.insert(address.to_owned(), ctx);
        drop(r);
        self.changed.notify_all();
        Ok(())
    }

    pub fn unregister(&self, address: &str) {
        self.receivers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(address);
        self.changed.notify_all();
    }

    /// The receiver at `address`, waiting up to `wait` for one to register.
    pub fn receiver(&self, address: &str, wait: Duration) -> Option<InputContext> {
        let r = self.receivers.lock().unwrap_or_else(|p| p.into_inner());
        let (r, _) = self
            .changed
            .wait_timeout_while(r, wait, |r| !r.contains_key(address))
            .unwrap_or_else(|p| p.into_inner());
        r.get(address).cloned()
    }
}
