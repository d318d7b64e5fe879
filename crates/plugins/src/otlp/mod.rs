//! OpenTelemetry's protocol (OTLP): the messages and the mapping between OTLP records and
//! events, which the `opentelemetry` input and output (issue 42) are built on.
//!
//! - [`proto`]: the OTLP messages as protobuf (prost) types, field for field as
//!   `opentelemetry-proto` defines them.
//! - [`json`]: a request in OTLP's JSON encoding, read into the same messages.
//! - [`logs`]: an export request's log records become one event each, in the ECS-style shape
//!   Elastic's OTLP intake gives them (see its documentation for the table).
//!
//! Data flows request → [`proto`] (decoded, strings checked as UTF-8) or [`json`] → [`logs`] (one event
//! per record, the resource's and scope's fields copied onto each) → the input's queue.

pub mod json;
pub mod logs;
pub mod proto;
