//! `pipeline { address => "x" }`: receives what other pipelines' `pipeline { send_to => ["x"] }`
//! outputs send, through the in-process pipeline bus. Passive: it runs until its pipeline
//! finishes, which happens after the pipelines sending to it have finished.

use std::time::Duration;

use sluice_pipeline::bus::PipelineBus;
use sluice_pipeline::{ConfigError, Input, InputContext, Options};

pub struct PipelineInput {
    address: String,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let address = opts.required_string("address")?;
    if address.is_empty() {
        return Err(opts.error("address", "must not be empty"));
    }
    Ok(Box::new(PipelineInput { address }))
}

impl Input for PipelineInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        PipelineBus::global()
            .register(&self.address, ctx.clone())
            .map_err(|e| e.to_string())?;
        while !ctx.is_stopping() {
            std::thread::sleep(Duration::from_millis(20));
        }
        PipelineBus::global().unregister(&self.address);
        Ok(())
    }

    fn is_passive(&self) -> bool {
        true
    }
}
