//! Filters: run inside workers, one instance per worker, one event at a time.

pub mod age;
pub mod bytes;
pub mod cidr;
pub mod clone;
pub mod csv;
pub mod date;
pub mod de_dot;
pub mod dissect;
pub mod drop;
pub mod environment;
pub mod fingerprint;
pub mod geoip;
pub mod grok;
pub mod json;
pub mod json_encode;
pub mod kv;
pub mod mutate;
pub mod prune;
pub mod sleep;
pub mod split;
pub mod syslog_pri;
pub mod translate;
pub mod truncate;
pub mod urldecode;
pub mod useragent;
pub mod uuid;
