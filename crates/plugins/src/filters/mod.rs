//! Filters: run inside workers, one instance per worker, one event at a time.

pub mod age;
pub mod aggregate;
pub mod anonymize;
pub mod bytes;
pub mod cidr;
pub mod clone;
pub mod csv;
pub mod date;
pub mod de_dot;
pub mod dissect;
pub mod dns;
pub mod drop;
pub mod elapsed;
pub mod elasticsearch;
pub mod environment;
pub mod fingerprint;
pub mod geoip;
pub mod grok;
pub mod http;
pub mod json;
pub mod json_encode;
pub mod kv;
pub mod logfmt;
pub mod memcached;
pub mod metrics;
pub mod mutate;
pub mod prune;
pub mod rest;
pub mod ruby;
pub mod sleep;
pub mod split;
pub mod syslog_pri;
pub mod throttle;
pub mod tld;
pub mod translate;
pub mod truncate;
pub mod urldecode;
pub mod useragent;
pub mod uuid;
pub mod xml;

/// The periodic flush of state all workers share: each worker flushes its copy of the filter
/// every [`sluice_pipeline::plugin::PERIODIC_FLUSH`], and the shared state is to be flushed
/// once a period, by whichever worker comes first.
#[derive(Debug, Default)]
pub struct SharedFlush {
    last: Option<std::time::Instant>,
}

impl SharedFlush {
    /// True for the first call of a period (a period less a second, for the workers' drift).
    pub fn first_in_period(&mut self, now: std::time::Instant) -> bool {
        let period = sluice_pipeline::plugin::PERIODIC_FLUSH - std::time::Duration::from_secs(1);
        if self.last.is_some_and(|t| now.duration_since(t) < period) {
            return false;
        }
        self.last = Some(now);
        true
    }
}
