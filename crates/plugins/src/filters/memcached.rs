//! `memcached`: reads and writes event fields in memcached, as logstash-filter-memcached does
//! (with the Dalli client), for lookups and for state shared between pipelines and hosts.
//!
//! Per event, first `set` (each event field that has a value goes to its key, the keys
//! sprintf'd; `ttl` seconds to live, 0 for no expiry), then `get` (the keys sprintf'd and
//! asked for in one request; each hit sets its event field). A set that wrote something or a
//! get that found something counts as a match (the common options apply). `namespace` goes
//! before every key (`namespace:key`). With several `hosts` (`host[:port[:weight]]`, port 11211)
//! each key lives on the server Dalli's ring picks (160 points a server, weighted, SHA-1 of
//! `host:port:i`, CRC-32 of the key), so that sluice and Logstash agree on where a key is.
//!
//! Values are text: a string as it is, any other value as its JSON (Dalli marshals non-string
//! values in Ruby's format; such an entry, flagged serialized, is not read back and counts as a
//! miss, logged). A server that cannot be reached tags `tag_on_failure`; the connection is made
//! again at the next event. The memcached text protocol is spoken directly: `get` with several
//! keys and `set` are all the filter needs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use sluice_event::{Event, FieldRef, Template, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

/// Dalli's flag for a value it serialized (Ruby Marshal).
const FLAG_SERIALIZED: u32 = 0x1;
/// Dalli's ring: points per server.
const POINTS_PER_SERVER: u64 = 160;
/// The longest key memcached takes; Dalli shortens longer ones with an MD5 digest.
const MAX_KEY: usize = 250;

#[derive(Clone)]
struct Server {
    /// `host:port`, as Dalli names it (the ring hashes this name).
    name: String,
    weight: u64,
}

/// One server's connection (made when first needed, dropped on an error).
struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

pub struct Memcached {
    servers: Vec<Server>,
    /// (hash, server index), sorted by hash; empty with one server.
    continuum: Vec<(u32, usize)>,
    conns: Vec<Option<Conn>>,
    namespace: Option<String>,
    get: Vec<(Template, FieldRef)>,
    set: Vec<(FieldRef, Template)>,
    ttl: u64,
    tag_on_failure: String,
}

impl Clone for Memcached {
    fn clone(&self) -> Self {
        Memcached {
            servers: self.servers.clone(),
            continuum: self.continuum.clone(),
            conns: self.servers.iter().map(|_| None).collect(),
            namespace: self.namespace.clone(),
            get: self.get.clone(),
            set: self.set.clone(),
            ttl: self.ttl,
            tag_on_failure: self.tag_on_failure.clone(),
        }
    }
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let hosts = opts
        .string_list("hosts")?
        .unwrap_or_else(|| vec!["localhost".to_owned()]);
    if hosts.is_empty() {
        return Err(opts.error("hosts", "cannot be empty"));
    }
    let mut servers = Vec::new();
    for h in &hosts {
        servers.push(server(h).map_err(|e| opts.error("hosts", e))?);
    }
    let namespace = opts.string("namespace")?.filter(|n| !n.is_empty());
    let field = |opts: &Options, name: &str, f: &str| {
        FieldRef::parse(f).map_err(|e| opts.error(name, format!("{f:?}: {e}")))
    };
    let mut get = Vec::new();
    for (key, f) in opts.string_hash("get")?.unwrap_or_default() {
        get.push((Template::parse(&key), field(opts, "get", &f)?));
    }
    let mut set = Vec::new();
    for (f, key) in opts.string_hash("set")?.unwrap_or_default() {
        set.push((field(opts, "set", &f)?, Template::parse(&key)));
    }
    let ttl = match opts.int("ttl")?.unwrap_or(0) {
        t if t < 0 => return Err(opts.error("ttl", "cannot be negative")),
        t => t as u64,
    };
    let tag_on_failure = opts.string_or("tag_on_failure", "_memcached_failure")?;
    let continuum = if servers.len() > 1 {
        continuum(&servers)
    } else {
        Vec::new()
    };
    Ok(Box::new(Memcached {
        conns: servers.iter().map(|_| None).collect(),
        servers,
        continuum,
        namespace,
        get,
        set,
        ttl,
        tag_on_failure,
    }))
}

/// `host`, `host:port` or `host:port:weight`.
fn server(text: &str) -> Result<Server, String> {
    let parts: Vec<&str> = text.trim().split(':').collect();
    let (host, port, weight) = match parts[..] {
        [h] => (h, "11211", "1"),
        [h, p] => (h, p, "1"),
        [h, p, w] => (h, p, w),
        _ => return Err(format!("{text:?}: expected host[:port[:weight]]")),
    };
    if host.is_empty() {
        return Err(format!("{text:?}: no host"));
    }
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{text:?}: {port:?} is not a port"))?;
    let weight: u64 = weight
        .parse()
        .ok()
        .filter(|w| *w > 0)
        .ok_or_else(|| format!("{text:?}: {weight:?} is not a weight"))?;
    Ok(Server {
        name: format!("{host}:{port}"),
        weight,
    })
}

/// Dalli's continuum: each server's points, by the first 8 hex digits of SHA-1 of `name:i`.
fn continuum(servers: &[Server]) -> Vec<(u32, usize)> {
    use sha1::Digest;
    let total_weight: u64 = servers.iter().map(|s| s.weight).sum();
    let mut out = Vec::new();
    for (i, s) in servers.iter().enumerate() {
        let count =
            (servers.len() as u64 * POINTS_PER_SERVER * s.weight) as f64 / total_weight as f64;
        for idx in 0..count.floor() as u64 {
            let digest = sha1::Sha1::digest(format!("{}:{idx}", s.name).as_bytes());
            let value = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]);
            out.push((value, i));
        }
    }
    out.sort_by_key(|(v, _)| *v);
    out
}

impl Memcached {
    /// The key as memcached gets it: namespaced, and shortened as Dalli does past 250 bytes.
    fn key(&self, raw: &str) -> String {
        let key = match &self.namespace {
            Some(ns) => format!("{ns}:{raw}"),
            None => raw.to_owned(),
        };
        if key.len() <= MAX_KEY {
            return key;
        }
        use md5::Digest;
        let hex: String = md5::Md5::digest(key.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let keep = MAX_KEY - 40;
        let mut cut = keep.min(key.len());
        while !key.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}:md5:{hex}", &key[..cut])
    }

    /// The server a key lives on (Dalli's ring).
    fn server_for(&self, key: &str) -> usize {
        if self.continuum.is_empty() {
            return 0;
        }
        let mut crc = flate2::Crc::new();
        crc.update(key.as_bytes());
        let h = crc.sum();
        // The last point at or before the hash; before the first, the last one (a ring).
        let idx = self.continuum.partition_point(|(v, _)| *v <= h);
        let at = if idx == 0 {
            self.continuum.len() - 1
        } else {
            idx - 1
        };
        self.continuum[at].1
    }

    fn conn(&mut self, server: usize) -> Result<&mut Conn, String> {
        if self.conns[server].is_none() {
            let name = &self.servers[server].name;
            let addr = name
                .to_socket_addrs()
                .map_err(|e| format!("{name}: {e}"))?
                .next()
                .ok_or_else(|| format!("{name}: no address"))?;
            let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
                .map_err(|e| format!("{name}: {e}"))?;
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
            let _ = stream.set_nodelay(true);
            let writer = stream.try_clone().map_err(|e| format!("{name}: {e}"))?;
            self.conns[server] = Some(Conn {
                reader: BufReader::new(stream),
                writer,
            });
        }
        Ok(self.conns[server].as_mut().expect("just made"))
    }

    /// `get k1 k2 ...` on one server: the values found.
    fn get_multi(
        &mut self,
        server: usize,
        keys: &[&str],
    ) -> Result<Vec<(String, u32, Vec<u8>)>, String> {
        let conn = self.conn(server)?;
        let mut line = String::from("get");
        for k in keys {
            line.push(' ');
            line.push_str(k);
        }
        line.push_str("\r\n");
        conn.writer
            .write_all(line.as_bytes())
            .map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        loop {
            let mut header = String::new();
            if conn
                .reader
                .read_line(&mut header)
                .map_err(|e| e.to_string())?
                == 0
            {
                return Err("the server closed the connection".to_owned());
            }
            let header = header.trim_end();
            if header == "END" {
                return Ok(out);
            }
            let parts: Vec<&str> = header.split(' ').collect();
            match parts[..] {
                ["VALUE", key, flags, bytes, ..] => {
                    let flags: u32 = flags.parse().map_err(|_| format!("bad reply {header:?}"))?;
                    let n: usize = bytes.parse().map_err(|_| format!("bad reply {header:?}"))?;
                    let mut data = vec![0; n + 2];
                    conn.reader
                        .read_exact(&mut data)
                        .map_err(|e| e.to_string())?;
                    data.truncate(n);
                    out.push((key.to_owned(), flags, data));
                }
                _ => return Err(format!("unexpected reply {header:?}")),
            }
        }
    }

    fn set_one(&mut self, server: usize, key: &str, data: &[u8]) -> Result<(), String> {
        let ttl = self.ttl;
        let conn = self.conn(server)?;
        let mut req = format!("set {key} 0 {ttl} {}\r\n", data.len()).into_bytes();
        req.extend_from_slice(data);
        req.extend_from_slice(b"\r\n");
        conn.writer.write_all(&req).map_err(|e| e.to_string())?;
        let mut reply = String::new();
        conn.reader
            .read_line(&mut reply)
            .map_err(|e| e.to_string())?;
        match reply.trim_end() {
            "STORED" => Ok(()),
            other => Err(format!("set {key}: {other:?}")),
        }
    }

    fn do_set(&mut self, event: &Event) -> Result<bool, String> {
        let mut wrote = false;
        for i in 0..self.set.len() {
            let Some(value) = event
                .get(&self.set[i].0)
                .filter(|v| !matches!(v, Value::Null))
            else {
                continue;
            };
            let data = match value {
                Value::String(s) => s.as_bytes().to_vec(),
                other => sluice_event::json::to_string(other).into_bytes(),
            };
            let key = self.key(&self.set[i].1.render(event));
            let server = self.server_for(&key);
            self.set_one(server, &key, &data)?;
            wrote = true;
        }
        Ok(wrote)
    }

    fn do_get(&mut self, event: &mut Event) -> Result<bool, String> {
        if self.get.is_empty() {
            return Ok(false);
        }
        let wanted: Vec<(String, FieldRef)> = self
            .get
            .iter()
            .map(|(k, f)| (self.key(&k.render(event)), f.clone()))
            .collect();
        let mut by_server: Vec<Vec<&str>> = vec![Vec::new(); self.servers.len()];
        for (k, _) in &wanted {
            by_server[self.server_for(k)].push(k);
        }
        let mut found = Vec::new();
        for (server, keys) in by_server.iter().enumerate() {
            if !keys.is_empty() {
                found.extend(self.get_multi(server, keys)?);
            }
        }
        let mut hits = 0;
        for (key, field) in &wanted {
            let Some((_, flags, data)) = found.iter().find(|(k, _, _)| k == key) else {
                continue;
            };
            if flags & FLAG_SERIALIZED != 0 {
                tracing::warn!(key = %key, "memcached: the value is Ruby-marshaled (written by Dalli); sluice reads text values only");
                continue;
            }
            event.set(
                field,
                Value::from(String::from_utf8_lossy(data).into_owned()),
            );
            hits += 1;
        }
        Ok(hits > 0)
    }
}

impl Filter for Memcached {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let outcome = self
            .do_set(event)
            .and_then(|set| Ok(self.do_get(event)? || set));
        match outcome {
            Ok(matched) => matched,
            Err(e) => {
                tracing::error!(hosts = ?self.servers.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), message = %e, "memcached communication error");
                event.add_tag(&self.tag_on_failure);
                // A connection in an unknown state is not used again.
                self.conns.iter_mut().for_each(|c| *c = None);
                false
            }
        }
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_and_keys() {
        assert_eq!(server("cache").unwrap().name, "cache:11211");
        assert_eq!(server("cache:1234:3").unwrap().weight, 3);
        assert!(server("cache:x").is_err());
        assert!(server("a:1:0").is_err());
        let servers = vec![server("a:11211").unwrap(), server("b:11211:2").unwrap()];
        let ring = continuum(&servers);
        assert_eq!(ring.len(), 160 * 2 / 3 + 160 * 2 * 2 / 3);
        assert!(ring.windows(2).all(|w| w[0].0 <= w[1].0));
        let m = Memcached {
            conns: vec![None, None],
            continuum: ring,
            servers,
            namespace: Some("ns".into()),
            get: Vec::new(),
            set: Vec::new(),
            ttl: 0,
            tag_on_failure: String::new(),
        };
        assert_eq!(m.key("k"), "ns:k");
        let long = "x".repeat(300);
        let k = m.key(&long);
        assert!(k.len() <= MAX_KEY && k.contains(":md5:"), "{k}");
        // Both servers get keys.
        let mut seen = [0; 2];
        for i in 0..200 {
            seen[m.server_for(&format!("key{i}"))] += 1;
        }
        assert!(seen[0] > 20 && seen[1] > 60, "{seen:?}");
    }
}
