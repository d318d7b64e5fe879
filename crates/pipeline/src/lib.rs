//! The pipeline runtime: turns a parsed config into running inputs, a queue, workers,
//! filters and outputs, and shuts it all down without losing what was queued.
//!
//! Data flow: [`registry::Registry`] builds each plugin from its typed [`options::Options`];
//! [`graph::compile`] arranges filters and outputs into trees with compiled
//! [`condition::Condition`]s; [`runtime::start`] spawns one thread per input (pushing batches
//! into an [`queue::EventQueue`]) and `pipeline.workers` threads that read batches, run them
//! through a [`graph::FilterChain`], route them to outputs and ack them. Knows no particular
//! plugin: those live in `sluice-plugins`.

pub mod bus;
pub mod condition;
pub mod dead_letter;
pub mod graph;
pub mod metrics;
pub mod options;
pub mod plugin;
pub mod queue;
pub mod registry;
pub mod runtime;

pub use dead_letter::DeadLetterQueue;
pub use options::{ConfigError, Options, PluginKind};
pub use plugin::{
    Codec, Failure, Filter, Input, InputContext, Output, OutputError, Stopped, WriteContext,
};
pub use registry::Registry;
pub use runtime::{PipelineSettings, RunningPipeline};

/// This machine's host name: for inputs that record where an event was read, and for the
/// monitoring API's node info.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_owned())
}
