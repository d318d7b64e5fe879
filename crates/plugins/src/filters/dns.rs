//! `dns`: forward (`resolve`) and reverse (`reverse`) lookups of fields, as
//! logstash-filter-dns does with Ruby's `Resolv`.
//!
//! - Resolvers, in order, the first with an answer winning: the `hostsfile` files, the
//!   system's `/etc/hosts`, then DNS: the `nameserver` addresses (an array, or a hash with
//!   `address`, `search` (at most 6 domains) and `ndots`), or without `nameserver` and
//!   `hostsfile` the system's `/etc/resolv.conf`. With `hostsfile` and no `nameserver` there
//!   is no DNS at all, as in the plugin.
//! - DNS over UDP: A records first, then AAAA, for a name tried as Ruby tries it with its
//!   search domains and `ndots`; PTR records for reverse lookups. Each server gets `timeout`
//!   seconds (default 0.5); after `max_retries` more rounds (default 2) with no answer the
//!   event is tagged `tag_on_timeout` (`_dnstimeout`). Names are IDNA-encoded for the query
//!   and decoded in answers.
//! - `action => append` (default) turns the field into `[value, result]` (or adds to the
//!   array); `replace` puts the result in its place. A field holding several values, or not
//!   text, stops the filter for the event (unmatched); a missing field is skipped; a reverse
//!   lookup of text that is not an IP address stops it too.
//! - `hit_cache_size`/`hit_cache_ttl` and `failed_cache_size`/`failed_cache_ttl` (sizes 0 by
//!   default: no cache) keep answers and failures, shared by all workers.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};
use lru::LruCache;
use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

#[derive(Debug, Clone)]
struct DnsConfig {
    servers: Vec<SocketAddr>,
    search: Vec<String>,
    ndots: usize,
}

/// What a lookup found.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    Found(String),
    NotFound,
    Timeout,
}

/// Entries of a hosts file: (address, names).
fn read_hosts(path: &Path) -> Vec<(IpAddr, Vec<String>)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let l = l.split('#').next().unwrap_or("");
            let mut words = l.split_whitespace();
            let ip: IpAddr = words.next()?.parse().ok()?;
            let names: Vec<String> = words.map(str::to_owned).collect();
            (!names.is_empty()).then_some((ip, names))
        })
        .collect()
}

fn read_resolv_conf(path: &Path) -> DnsConfig {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut config = DnsConfig {
        servers: Vec::new(),
        search: Vec::new(),
        ndots: 1,
    };
    for line in text.lines() {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("nameserver") => {
                if let Some(ip) = words.next().and_then(|w| w.parse::<IpAddr>().ok()) {
                    config.servers.push(SocketAddr::new(ip, 53));
                }
            }
            Some("search") | Some("domain") => config.search = words.map(str::to_owned).collect(),
            Some("options") => {
                for w in words {
                    if let Some(n) = w.strip_prefix("ndots:").and_then(|n| n.parse().ok()) {
                        config.ndots = n;
                    }
                }
            }
            _ => {}
        }
    }
    if config.servers.is_empty() {
        config.servers.push(SocketAddr::from(([127, 0, 0, 1], 53)));
    }
    config
}

struct Resolver {
    hosts: Vec<(IpAddr, Vec<String>)>,
    dns: Option<DnsConfig>,
    timeout: Duration,
}

impl Resolver {
    /// One query to one server: its answer records (`Err(())` on timeout or a bad reply).
    fn ask(&self, server: SocketAddr, name: &Name, kind: RecordType) -> Result<Message, ()> {
        let bind: SocketAddr = if server.is_ipv4() {
            ([0, 0, 0, 0], 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let socket = UdpSocket::bind(bind).map_err(|_| ())?;
        let id: u16 = fastrand::u16(..);
        let mut query = Message::new(id, MessageType::Query, OpCode::Query);
        query.metadata.recursion_desired = true;
        query.add_query(Query::query(name.clone(), kind));
        let bytes = query.to_vec().map_err(|_| ())?;
        socket.send_to(&bytes, server).map_err(|_| ())?;
        let deadline = Instant::now() + self.timeout;
        let mut buf = [0u8; 4096];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(());
            }
            socket.set_read_timeout(Some(left)).map_err(|_| ())?;
            let (n, from) = socket.recv_from(&mut buf).map_err(|_| ())?;
            if from != server {
                continue;
            }
            match Message::from_vec(&buf[..n]) {
                Ok(reply) if reply.metadata.id == id => return Ok(reply),
                _ => continue,
            }
        }
    }

    /// The first server that answers, for one name and type.
    fn query(&self, dns: &DnsConfig, name: &Name, kind: RecordType) -> Result<Message, ()> {
        for server in &dns.servers {
            if let Ok(reply) = self.ask(*server, name, kind) {
                return Ok(reply);
            }
        }
        Err(())
    }

    /// Ruby's `Resolv::DNS#generate_candidates`.
    fn candidates(dns: &DnsConfig, name: &str) -> Vec<String> {
        if name.ends_with('.') {
            return vec![name.to_owned()];
        }
        let dots = name.matches('.').count();
        let mut out = Vec::new();
        if dots >= dns.ndots {
            out.push(format!("{name}."));
        }
        for domain in &dns.search {
            out.push(format!("{name}.{}.", domain.trim_end_matches('.')));
        }
        let absolute = format!("{name}.");
        if !out.contains(&absolute) {
            out.push(absolute);
        }
        out
    }

    fn forward_dns(&self, dns: &DnsConfig, name: &str) -> Answer {
        let mut timed_out = false;
        for kind in [RecordType::A, RecordType::AAAA] {
            for candidate in Self::candidates(dns, name) {
                let Ok(n) = Name::from_ascii(&candidate) else {
                    continue;
                };
                match self.query(dns, &n, kind) {
                    Err(()) => {
                        timed_out = true;
                        break;
                    }
                    Ok(reply) if reply.metadata.response_code == ResponseCode::NXDomain => continue,
                    Ok(reply) => {
                        let found = reply.answers.iter().find_map(|r| match &r.data {
                            RData::A(a) => Some(a.0.to_string()),
                            RData::AAAA(a) => Some(a.0.to_string()),
                            _ => None,
                        });
                        if let Some(ip) = found {
                            return Answer::Found(ip);
                        }
                        break;
                    }
                }
            }
        }
        if timed_out {
            Answer::Timeout
        } else {
            Answer::NotFound
        }
    }

    fn forward(&self, name: &str) -> Answer {
        let ascii = idna::domain_to_ascii(name).unwrap_or_else(|_| name.to_owned());
        let found = self.hosts.iter().find_map(|(ip, names)| {
            names
                .iter()
                .any(|n| n.eq_ignore_ascii_case(&ascii))
                .then(|| ip.to_string())
        });
        if let Some(ip) = found {
            return Answer::Found(ip);
        }
        match &self.dns {
            Some(dns) => self.forward_dns(dns, &ascii),
            None => Answer::NotFound,
        }
    }

    fn reverse(&self, ip: IpAddr) -> Answer {
        if let Some((_, names)) = self.hosts.iter().find(|(a, _)| *a == ip) {
            return Answer::Found(names[0].clone());
        }
        let Some(dns) = &self.dns else {
            return Answer::NotFound;
        };
        match self.query(dns, &Name::from(ip), RecordType::PTR) {
            Err(()) => Answer::Timeout,
            Ok(reply) => reply
                .answers
                .iter()
                .find_map(|r| match &r.data {
                    RData::PTR(p) => {
                        let name = p.0.to_string();
                        let name = name.trim_end_matches('.');
                        Some(idna::domain_to_unicode(name).0)
                    }
                    _ => None,
                })
                .map_or(Answer::NotFound, Answer::Found),
        }
    }
}

type Cache = Arc<Mutex<LruCache<String, (String, Instant)>>>;

#[derive(Clone)]
pub struct Dns {
    resolve: Vec<FieldRef>,
    reverse: Vec<FieldRef>,
    replace: bool,
    max_retries: u32,
    resolver: Arc<Resolver>,
    hit_cache: Option<(Cache, Duration)>,
    failed_cache: Option<(Cache, Duration)>,
    tag_on_timeout: Vec<String>,
}

fn cache(
    opts: &mut Options,
    size: &str,
    ttl: &str,
    default_ttl: f64,
) -> Result<Option<(Cache, Duration)>, ConfigError> {
    let n = opts.int(size)?.unwrap_or(0);
    let ttl = opts.float(ttl)?.unwrap_or(default_ttl);
    if n < 0 || ttl < 0.0 {
        return Err(opts.error(size, "cache sizes and times must not be negative"));
    }
    Ok(std::num::NonZeroUsize::new(n as usize).map(|n| {
        (
            Arc::new(Mutex::new(LruCache::new(n))),
            Duration::from_secs_f64(ttl),
        )
    }))
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let resolve = crate::field::references(opts, "resolve")?.unwrap_or_default();
    let reverse = crate::field::references(opts, "reverse")?.unwrap_or_default();
    let replace = opts.choice("action", &["append", "replace"], "append")? == "replace";
    let timeout = opts.float("timeout")?.unwrap_or(0.5);
    if timeout <= 0.0 {
        return Err(opts.error("timeout", "must be positive"));
    }
    let max_retries = opts.int("max_retries")?.unwrap_or(2).max(0) as u32;
    let hostsfile = opts.string_list("hostsfile")?;
    let as_list = |v: &sluice_config::Value| match sluice_pipeline::options::ast_to_value(v) {
        Value::Array(items) => items.iter().map(Value::to_display_string).collect(),
        other => vec![other.to_display_string()],
    };
    let nameserver: Option<(Vec<String>, Vec<String>, usize)> = match opts.take("nameserver") {
        None => None,
        Some((_, sluice_config::Value::Hash(entries))) => {
            let (mut address, mut search, mut ndots) = (None, Vec::new(), 1usize);
            for e in &entries {
                let list: Vec<String> = as_list(&e.value);
                match e.key.as_str() {
                    "address" => address = Some(list),
                    "search" => search = list,
                    "ndots" => {
                        ndots = list
                            .first()
                            .and_then(|n| n.parse().ok())
                            .filter(|&n: &usize| n > 0)
                            .ok_or_else(|| {
                                opts.error("nameserver", "DNS Filter: `ndots` must be positive")
                            })?
                    }
                    other => {
                        return Err(opts.error(
                            "nameserver",
                            format!("Unknown `nameserver` argument(s): {other}"),
                        ))
                    }
                }
            }
            let address = address.ok_or_else(|| {
                opts.error(
                    "nameserver",
                    "DNS Filter: `nameserver` hash must include `address`",
                )
            })?;
            Some((address, search, ndots))
        }
        Some((_, v)) => Some((as_list(&v), Vec::new(), 1)),
    };
    let mut hosts = Vec::new();
    for f in hostsfile.iter().flatten() {
        if !Path::new(f).exists() {
            return Err(opts.error("hostsfile", format!("{f} does not exist")));
        }
        hosts.extend(read_hosts(Path::new(f)));
    }
    hosts.extend(read_hosts(Path::new("/etc/hosts")));
    let dns = match (&nameserver, &hostsfile) {
        (None, None) => Some(read_resolv_conf(&PathBuf::from("/etc/resolv.conf"))),
        (None, Some(_)) => None,
        (Some((address, search, ndots)), _) => {
            if address.is_empty() {
                return Err(opts.error(
                    "nameserver",
                    "DNS Filter: `nameserver` addresses, when specified, cannot be empty",
                ));
            }
            if search.len() > 6 {
                return Err(opts.error(
                    "nameserver",
                    "DNS Filter: A maximum of 6 `search` domains are accepted",
                ));
            }
            let servers = address
                .iter()
                .map(|a| {
                    a.parse::<SocketAddr>()
                        .or_else(|_| a.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 53)))
                        .map_err(|_| {
                            opts.error(
                                "nameserver",
                                format!("{a:?} is not an IP address (optionally with :port)"),
                            )
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Some(DnsConfig {
                servers,
                search: search.clone(),
                ndots: *ndots,
            })
        }
    };
    let hit_cache = cache(opts, "hit_cache_size", "hit_cache_ttl", 60.0)?;
    let failed_cache = cache(opts, "failed_cache_size", "failed_cache_ttl", 5.0)?;
    let tag_on_timeout = opts
        .string_list("tag_on_timeout")?
        .unwrap_or_else(|| vec!["_dnstimeout".to_owned()]);
    Ok(Box::new(Dns {
        resolve,
        reverse,
        replace,
        max_retries,
        resolver: Arc::new(Resolver {
            hosts,
            dns,
            timeout: Duration::from_secs_f64(timeout),
        }),
        hit_cache,
        failed_cache,
        tag_on_timeout,
    }))
}

fn cached(cache: &Option<(Cache, Duration)>, key: &str) -> Option<String> {
    let (c, ttl) = cache.as_ref()?;
    let mut c = c.lock().unwrap_or_else(|p| p.into_inner());
    match c.get(key) {
        Some((v, at)) if at.elapsed() < *ttl => Some(v.clone()),
        Some(_) => {
            c.pop(key);
            None
        }
        None => None,
    }
}

fn remember(cache: &Option<(Cache, Duration)>, key: &str, value: &str) {
    if let Some((c, _)) = cache {
        let mut c = c.lock().unwrap_or_else(|p| p.into_inner());
        c.put(key.to_owned(), (value.to_owned(), Instant::now()));
    }
}

impl Dns {
    /// One field: `None` stops the filter for this event.
    fn lookup_field(&self, event: &mut Event, field: &FieldRef, reverse: bool) -> Option<()> {
        let (raw, is_array) = match event.get(field) {
            None => return Some(()),
            Some(Value::Array(items)) if items.len() == 1 => (items[0].clone(), true),
            Some(Value::Array(items)) => {
                tracing::warn!(field = %field, values = items.len(), "dns: skipping, can't deal with multiple values");
                return None;
            }
            Some(v) => (v.clone(), false),
        };
        let Value::String(raw) = raw else {
            tracing::warn!(field = %field, "dns: skipping, can't deal with non-string values");
            return None;
        };
        let ip = if reverse {
            match raw.parse::<IpAddr>() {
                Ok(ip) => Some(ip),
                Err(_) => {
                    tracing::warn!(field = %field, value = %raw, "dns: not an IP address, skipping reverse lookup");
                    return None;
                }
            }
        } else {
            None
        };
        if cached(&self.failed_cache, &raw).is_some() {
            return None;
        }
        let result = match cached(&self.hit_cache, &raw) {
            Some(hit) => hit,
            None => {
                let mut answer = Answer::Timeout;
                for _ in 0..=self.max_retries {
                    answer = match ip {
                        Some(ip) => self.resolver.reverse(ip),
                        None => self.resolver.forward(&raw),
                    };
                    if answer != Answer::Timeout {
                        break;
                    }
                }
                match answer {
                    Answer::Found(v) => {
                        remember(&self.hit_cache, &raw, &v);
                        v
                    }
                    Answer::NotFound => {
                        remember(&self.failed_cache, &raw, "");
                        return None;
                    }
                    Answer::Timeout => {
                        remember(&self.failed_cache, &raw, "");
                        tracing::warn!(field = %field, value = %raw, "dns: timeout");
                        for t in &self.tag_on_timeout {
                            event.add_tag(t);
                        }
                        return None;
                    }
                }
            }
        };
        let result = Value::String(result.into());
        let new = match (self.replace, event.get(field)) {
            (true, _) if is_array => Value::Array(vec![result]),
            (true, _) => result,
            (false, Some(Value::Array(items))) => {
                let mut items = items.clone();
                items.push(result);
                Value::Array(items)
            }
            (false, Some(old)) => Value::Array(vec![old.clone(), result]),
            (false, None) => result,
        };
        event.set(field, new);
        Some(())
    }
}

impl Filter for Dns {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        for f in &self.resolve {
            if self.lookup_field(event, f, false).is_none() {
                return false;
            }
        }
        for f in &self.reverse {
            if self.lookup_field(event, f, true).is_none() {
                return false;
            }
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_as_ruby() {
        let dns = DnsConfig {
            servers: vec![],
            search: vec!["corp.test".into()],
            ndots: 1,
        };
        assert_eq!(
            Resolver::candidates(&dns, "host"),
            ["host.corp.test.", "host."]
        );
        assert_eq!(
            Resolver::candidates(&dns, "a.b"),
            ["a.b.", "a.b.corp.test."]
        );
        assert_eq!(Resolver::candidates(&dns, "abs."), ["abs."]);
    }
}
