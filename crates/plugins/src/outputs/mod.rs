//! Outputs: shared by all workers; each call gets one batch's events for this output.

pub mod csv;
pub mod elasticsearch;
pub mod email;
pub mod file;
pub mod gelf;
pub mod http;
pub mod logstash;
pub mod lumberjack;
pub mod null;
pub mod opentelemetry;
pub mod pipe;
pub mod pipeline;
pub mod rabbitmq;
pub mod redis;
pub mod s3;
pub mod stdout;
pub mod syslog;
pub mod tcp;
pub mod udp;
