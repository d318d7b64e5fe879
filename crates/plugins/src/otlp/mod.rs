//! OpenTelemetry's protocol (OTLP): the messages and the mapping between OTLP records and
//! events, which the `opentelemetry` input and output (issue 42) are built on.
//!
//! - [`proto`]: the OTLP messages as protobuf (prost) types, field for field as
//!   `opentelemetry-proto` defines them.
//! - [`json`]: a request in OTLP's JSON encoding, read into the same messages.
//! - [`logs`] and [`traces`]: an export request's log records, or spans, become one event
//!   each, in the shape Elastic's OTLP intake gives them (each module's documentation has its
//!   table); `fields` holds what they share (values, the resource and scope objects).
//!
//! Data flows request → [`proto`] (decoded, strings checked as UTF-8) or [`json`] → [`logs`]
//! or [`traces`] (one event per record or span, the resource's and scope's fields copied onto
//! each) → the input's queue.

pub mod export;
mod fields;
pub mod grpc;
pub mod json;
pub mod logs;
pub mod metrics;
pub mod proto;
pub mod raw;
pub mod traces;
mod wire;
