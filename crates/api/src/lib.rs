//! Sluice's monitoring API: Logstash's monitoring endpoints over HTTP, Prometheus metrics and
//! a live dashboard, served from inside the sluice process.
//!
//! - `GET /` node info; `/_node` (`/_node/pipelines[/ID]`, `/_node/os`); `/_node/stats`,
//!   `/_node/stats/pipelines[/ID]`, `/_node/stats/{process,events,flow,reloads,os,queue}`,
//!   in Logstash's JSON shape (`?pretty` indents).
//! - `GET /metrics`: the same figures in Prometheus' text format.
//! - `GET /dashboard`: a page (compiled into the binary, nothing fetched from elsewhere)
//!   charting throughput, queue depth, back-pressure and per-plugin time, refreshed every
//!   second; `GET /dashboard/history` gives it the last two minutes of once-a-second samples
//!   so its charts start full.
//!
//! Settings are Logstash's `api.*` (see [`sluice_config::settings::ApiSettings`]): on by
//! default, bound to 127.0.0.1 on the first free port of 9600-9700, optional basic auth and
//! TLS. The agent registers its pipelines in a [`Registry`]; the API only reads counters.

mod base64;
mod batch;
pub mod flow;
pub mod graph;
pub mod health;
pub mod node;
pub mod prometheus;
pub mod registry;
pub mod server;
pub mod stats;
mod tap;
pub mod threads;

pub use registry::{PipelineView, Registry};
pub use server::{start, ApiServer};
pub use stats::NodeConfig;
