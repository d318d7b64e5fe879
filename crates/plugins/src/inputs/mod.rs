//! Inputs: each runs on its own thread and pushes batches into the pipeline's queue.

pub mod beats;
pub mod dead_letter_queue;
pub mod elasticsearch;
pub mod exec;
pub mod file;
pub mod gelf;
pub mod generator;
pub mod heartbeat;
pub mod http;
pub mod http_poller;
pub mod opentelemetry;
pub mod pipe;
pub mod pipeline;
pub mod rabbitmq;
pub mod redis;
pub mod relp;
pub mod s3;
pub mod snmp;
pub mod snmptrap;
pub mod sqs;
pub mod stdin;
pub mod syslog;
pub mod tcp;
pub mod udp;
pub mod unix;
