//! `netflow`: NetFlow v5, v9 and IPFIX (v10) datagrams as events, as Logstash's netflow codec
//! decodes them (usually on the `udp` input: one datagram per decode).
//!
//! Every flow record becomes an event with its fields under `target` (`netflow`), named as
//! Logstash names them: v5's fixed record (`ipv4_src_addr`, `in_bytes`, `first_switched`...),
//! v9's fields by Cisco's names (`in_bytes`, `l4_src_port`...), IPFIX's by IANA's
//! (`octetDeltaCount`, `sourceTransportPort`...); the tables are in `v9.tsv`, `ipfix.tsv`
//! (enterprise 0, and RFC 5103's reverse elements, PEN 29305) and `ipfix_vendors.tsv` (the
//! vendors Logstash's codec knows: Cisco, Netscaler, YAF, VMware, Procera, IXIA...).
//!
//! v9 and IPFIX send templates first and data records that refer to them. Templates are kept
//! by `source_id|template_id` (v9) or `observation_domain_id|template_id` (IPFIX) for
//! `cache_ttl` seconds, shared by every copy of the codec (the udp input's workers), and with
//! `cache_save_path` written to `netflow_templates.cache` / `ipfix_templates.cache` there
//! after each new template and read back at start, so that a restart decodes data before the
//! exporter sends its templates again. Data for a template not (yet) known is dropped,
//! counted (`netflow_unknown_template_flowsets`) and logged; a template with a field the
//! tables do not know is not kept (`netflow_unsupported_templates`), as in Logstash. A
//! datagram that is not one is counted (`netflow_invalid_packets`).
//!
//! Times: v5 and v9 `*_switched` from the header's uptime and clock, with the second Logstash
//! adds (its arithmetic is kept so that events match); IPFIX `flowStart/End` seconds,
//! milliseconds (as times) and micro/nanoseconds (NTP). `@timestamp` is the export time.

mod fields;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use sluice_event::{Event, Key, Map, Timestamp, Value};
use sluice_pipeline::metrics::NamedCounters;
use sluice_pipeline::{Codec, ConfigError, Options};

use fields::{Kind, Spec};

#[derive(Clone)]
pub struct Netflow {
    versions: Vec<u16>,
    target: Key,
    include_flowset_id: bool,
    shared: Arc<Shared>,
}

struct Shared {
    v9: Mutex<Registry>,
    ipfix: Mutex<Registry>,
    ttl: u64,
    save: Option<PathBuf>,
    counters: Arc<NamedCounters>,
}

/// Templates by key, each with when it expires (Unix seconds).
#[derive(Default)]
struct Registry {
    /// By (source id or observation domain, template id); written `a|b` in the cache files.
    map: HashMap<(u32, u16), (Arc<Template>, u64)>,
}

/// A template: its fields in wire order.
#[derive(Debug, PartialEq)]
struct Template {
    fields: Vec<Spec>,
}

const UNKNOWN: &str = "netflow_unknown_template_flowsets";
const UNSUPPORTED: &str = "netflow_unsupported_templates";
const INVALID: &str = "netflow_invalid_packets";

pub fn build(opts: &mut Options) -> Result<Box<dyn Codec>, ConfigError> {
    let versions = match opts.take("versions") {
        None => vec![5, 9, 10],
        Some((_, v)) => {
            let items = match sluice_pipeline::options::ast_to_value(&v) {
                Value::Array(a) => a,
                one => vec![one],
            };
            let mut out = Vec::new();
            for i in items {
                match i
                    .as_i128()
                    .or_else(|| i.as_str().and_then(|s| s.parse().ok()))
                {
                    Some(n @ (5 | 9 | 10)) => out.push(n as u16),
                    _ => {
                        return Err(opts.error(
                            "versions",
                            format!(
                                "{} is not a NetFlow version this codec decodes (5, 9, 10)",
                                i.to_display_string()
                            ),
                        ))
                    }
                }
            }
            out
        }
    };
    let target = opts.string_or("target", "netflow")?;
    let ttl = opts.int("cache_ttl")?.unwrap_or(4000);
    if ttl < 0 {
        return Err(opts.error("cache_ttl", "must be 0 or more seconds"));
    }
    let save = opts.string("cache_save_path")?.map(PathBuf::from);
    if let Some(dir) = &save {
        if !dir.is_dir() {
            return Err(opts.error(
                "cache_save_path",
                format!("{} is not a directory", dir.display()),
            ));
        }
    }
    let include_flowset_id = opts.boolean_or("include_flowset_id", false)?;
    for unsupported in ["netflow_definitions", "ipfix_definitions"] {
        if opts.has(unsupported) {
            opts.take(unsupported);
            return Err(opts.error(
                unsupported,
                "extra field definitions are not supported yet (the built-in tables cover NetFlow v9, IANA's IPFIX elements with RFC 5103's reverse ones, and the vendors Logstash's codec knows)",
            ));
        }
    }
    let shared = Arc::new(Shared {
        v9: Mutex::default(),
        ipfix: Mutex::default(),
        ttl: ttl as u64,
        save,
        counters: Arc::new(NamedCounters::with_paths(&[UNKNOWN, UNSUPPORTED, INVALID])),
    });
    shared.load();
    Ok(Box::new(Netflow {
        versions,
        target: Key::from(target.as_str()),
        include_flowset_id,
        shared,
    }))
}

impl Codec for Netflow {
    fn decode(&mut self, data: &[u8], out: &mut Vec<Event>) {
        if data.len() < 2 {
            self.invalid("shorter than a version number");
            return;
        }
        let version = u16::from_be_bytes([data[0], data[1]]);
        if !self.versions.contains(&version) {
            tracing::warn!("netflow codec: Ignoring Netflow version v{version}");
            return;
        }
        let r = match version {
            5 => self.v5(data, out),
            9 => self.v9(data, out),
            10 => self.ipfix(data, out),
            _ => unreachable!("versions are 5, 9 or 10"),
        };
        if let Err(why) = r {
            self.invalid(&why);
        }
    }

    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        // Logstash's netflow codec does not encode either: the event's JSON, so that a
        // misconfigured output still says what it has.
        sluice_event::json::write_event(event, out);
    }

    fn counters(&self) -> Option<Arc<NamedCounters>> {
        Some(Arc::clone(&self.shared.counters))
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        Box::new(self.clone())
    }
}

/// Big-endian reads over a datagram, each failing cleanly past its end.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(b: &'a [u8]) -> Self {
        Cursor { b, at: 0 }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.b.len())
            .ok_or_else(|| {
                format!(
                    "{} bytes wanted at offset {} of {}",
                    n,
                    self.at,
                    self.b.len()
                )
            })?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        let s = self.take(2)?;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }
    fn u32(&mut self) -> Result<u32, String> {
        let s = self.take(4)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn left(&self) -> usize {
        self.b.len() - self.at
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Netflow {
    fn invalid(&self, why: &str) {
        self.shared.counters.add(INVALID, 1);
        tracing::warn!("netflow codec: Invalid netflow packet received ({why})");
    }

    fn event(&self, stamp: Timestamp, fields: Map) -> Event {
        let mut e = Event::new();
        e.set_timestamp(stamp);
        e.fields_mut()
            .insert(self.target.clone(), Value::Object(fields));
        e
    }

    fn v5(&self, data: &[u8], out: &mut Vec<Event>) -> Result<(), String> {
        let mut c = Cursor::new(data);
        c.u16()?;
        let count = c.u16()?;
        if !(1..=30).contains(&count) {
            return Err(format!("a v5 header with {count} records (1 to 30)"));
        }
        let uptime = c.u32()? as i64;
        let unix_sec = c.u32()? as i64;
        let unix_nsec = c.u32()? as i64;
        let seq = c.u32()?;
        let engine_type = c.u8()?;
        let engine_id = c.u8()?;
        let sampling = c.u16()?;
        if c.left() < count as usize * 48 {
            return Err(format!(
                "{count} v5 records announced, {} bytes for them",
                c.left()
            ));
        }
        let stamp = Timestamp::from_millis(unix_sec * 1000 + unix_nsec / 1_000_000);
        let micros = unix_nsec / 1000;
        let switched = |value: u32| -> Value {
            // Logstash's arithmetic, its missing borrow included (see the module docs).
            let millis = uptime - value as i64;
            let seconds = unix_sec - millis.div_euclid(1000);
            let mut us = micros - millis.rem_euclid(1000) * 1000;
            if us < 0 {
                us += 1_000_000;
            }
            Value::String(iso(seconds + us / 1_000_000, (us % 1_000_000) as u32 * 1000).into())
        };
        for _ in 0..count {
            let r = c.take(48)?;
            let u16_at = |o: usize| Value::Int(u16::from_be_bytes([r[o], r[o + 1]]) as i64);
            let u32_at = |o: usize| u32::from_be_bytes([r[o], r[o + 1], r[o + 2], r[o + 3]]);
            let ip = |o: usize| {
                Value::String(format!("{}.{}.{}.{}", r[o], r[o + 1], r[o + 2], r[o + 3]).into())
            };
            let mut m = Map::new();
            let mut put = |k: &str, v: Value| {
                m.insert(Key::from(k), v);
            };
            put("version", Value::Int(5));
            put("flow_seq_num", Value::Int(seq as i64));
            put("engine_type", Value::Int(engine_type as i64));
            put("engine_id", Value::Int(engine_id as i64));
            put("sampling_algorithm", Value::Int((sampling >> 14) as i64));
            put("sampling_interval", Value::Int((sampling & 0x3fff) as i64));
            put("flow_records", Value::Int(count as i64));
            put("ipv4_src_addr", ip(0));
            put("ipv4_dst_addr", ip(4));
            put("ipv4_next_hop", ip(8));
            put("input_snmp", u16_at(12));
            put("output_snmp", u16_at(14));
            put("in_pkts", Value::Int(u32_at(16) as i64));
            put("in_bytes", Value::Int(u32_at(20) as i64));
            put("first_switched", switched(u32_at(24)));
            put("last_switched", switched(u32_at(28)));
            put("l4_src_port", u16_at(32));
            put("l4_dst_port", u16_at(34));
            put("tcp_flags", Value::Int(r[37] as i64));
            put("protocol", Value::Int(r[38] as i64));
            put("src_tos", Value::Int(r[39] as i64));
            put("src_as", u16_at(40));
            put("dst_as", u16_at(42));
            put("src_mask", Value::Int(r[44] as i64));
            put("dst_mask", Value::Int(r[45] as i64));
            out.push(self.event(stamp, m));
        }
        Ok(())
    }

    fn v9(&self, data: &[u8], out: &mut Vec<Event>) -> Result<(), String> {
        let mut c = Cursor::new(data);
        c.u16()?;
        c.u16()?; // the record count: not to be trusted, as Logstash does not
        let uptime = c.u32()? as i64;
        let unix_sec = c.u32()? as i64;
        let seq = c.u32()?;
        let source_id = c.u32()?;
        let stamp = Timestamp::from_millis(unix_sec * 1000);
        // Flowsets until the end; a truncated last one is dropped (as Logstash's reader).
        while c.left() >= 4 {
            let id = c.u16()?;
            let len = c.u16()? as usize;
            if len == 0 {
                // Zero padding to the end of the datagram.
                break;
            }
            if len <= 4 || (2..256).contains(&id) {
                return Err(format!("a v9 flowset with id {id} and length {len}"));
            }
            let Ok(body) = c.take(len - 4) else { break };
            match id {
                0 => self.v9_templates(body, source_id),
                1 => self.v9_options_template(body, source_id),
                _ => {
                    let Some(t) = self.shared.lookup(&self.shared.v9, (source_id, id)) else {
                        self.shared.counters.add(UNKNOWN, 1);
                        tracing::warn!("netflow codec: Can't (yet) decode flowset id {id} from source id {source_id}, because no template to decode it with has been received. This message will usually go away after 1 minute.");
                        continue;
                    };
                    let size = t.size();
                    if size == 0 || size > body.len() {
                        tracing::warn!(
                            template_id = id,
                            template_length = size,
                            record_length = body.len(),
                            "netflow codec: Template length exceeds flowset length, skipping"
                        );
                        continue;
                    }
                    let mut records = Vec::new();
                    let mut r = Cursor::new(body);
                    let mut failed = None;
                    for _ in 0..body.len() / size {
                        match t.record(&mut r) {
                            Ok(m) => records.push(m),
                            Err(e) => {
                                failed = Some(e);
                                break;
                            }
                        }
                    }
                    if let Some(e) = failed {
                        tracing::warn!("netflow codec: Invalid Netflow v9 record ({e})");
                        continue;
                    }
                    for fields in records {
                        let mut m = Map::new();
                        m.insert(Key::from("version"), Value::Int(9));
                        m.insert(Key::from("flow_seq_num"), Value::Int(seq as i64));
                        m.insert(Key::from("flowset_id"), Value::Int(id as i64));
                        for (k, v) in fields {
                            let v = match v {
                                Value::Int(value) if k.ends_with("_switched") => {
                                    let ms = unix_sec * 1000 - (uptime - value) + 1000;
                                    Value::String(
                                        iso(
                                            ms.div_euclid(1000),
                                            (ms.rem_euclid(1000) * 1_000_000) as u32,
                                        )
                                        .into(),
                                    )
                                }
                                v => v,
                            };
                            m.insert(k, v);
                        }
                        out.push(self.event(stamp, m));
                    }
                }
            }
        }
        Ok(())
    }

    fn v9_templates(&self, body: &[u8], source_id: u32) {
        let mut c = Cursor::new(body);
        while c.left() >= 4 {
            let (Ok(id), Ok(count)) = (c.u16(), c.u16()) else {
                return;
            };
            if id < 256 {
                // Padding at the end of the flowset.
                return;
            }
            let mut specs = Vec::with_capacity(count as usize);
            for _ in 0..count {
                let (Ok(t), Ok(l)) = (c.u16(), c.u16()) else {
                    return;
                };
                specs.push((t, l));
            }
            let mut fields = Vec::new();
            let mut ok = true;
            for (t, l) in specs {
                if l == 0 {
                    continue;
                }
                match fields::v9(t, l) {
                    Some(f) => fields.push(f),
                    None => {
                        tracing::warn!(
                            field_type = t,
                            length = l,
                            "netflow codec: Unsupported field in template {id}"
                        );
                        ok = false;
                        break;
                    }
                }
            }
            if ok {
                self.shared.register(
                    &self.shared.v9,
                    (source_id, id),
                    fields,
                    "netflow_templates.cache",
                );
            } else {
                self.shared.counters.add(UNSUPPORTED, 1);
            }
        }
    }

    fn v9_options_template(&self, body: &[u8], source_id: u32) {
        let mut c = Cursor::new(body);
        let parsed = (|| -> Result<Option<(u16, Vec<Spec>)>, String> {
            let id = c.u16()?;
            let scope_len = c.u16()? as usize;
            let option_len = c.u16()? as usize;
            if scope_len == 0 || option_len == 0 {
                return Err("an options template without scope or options".into());
            }
            let mut fields = Vec::new();
            for _ in 0..scope_len / 4 {
                let (t, l) = (c.u16()?, c.u16()?);
                if l == 0 {
                    continue;
                }
                let name = match t {
                    1 => Some("scope_system"),
                    2 => Some("scope_interface"),
                    3 => Some("scope_line_card"),
                    4 => Some("scope_netflow_cache"),
                    5 => Some("scope_template"),
                    _ => None,
                };
                fields.push(Spec {
                    name: name.map(Key::from),
                    kind: Kind::Uint(l as usize),
                });
            }
            for _ in 0..option_len / 4 {
                let (t, l) = (c.u16()?, c.u16()?);
                match fields::v9(t, l) {
                    Some(f) => fields.push(f),
                    None => {
                        tracing::warn!(
                            field_type = t,
                            length = l,
                            "netflow codec: Unsupported field in template {id}"
                        );
                        return Ok(None);
                    }
                }
            }
            Ok(Some((id, fields)))
        })();
        match parsed {
            Ok(Some((id, fields))) => self.shared.register(
                &self.shared.v9,
                (source_id, id),
                fields,
                "netflow_templates.cache",
            ),
            Ok(None) => self.shared.counters.add(UNSUPPORTED, 1),
            Err(e) => self.invalid(&e),
        }
    }

    fn ipfix(&self, data: &[u8], out: &mut Vec<Event>) -> Result<(), String> {
        let mut c = Cursor::new(data);
        c.u16()?;
        let length = c.u16()? as usize;
        if length < 16 || length > data.len() {
            return Err(format!(
                "an IPFIX message of {length} bytes in a datagram of {}",
                data.len()
            ));
        }
        let unix_sec = c.u32()? as i64;
        c.u32()?; // sequence number: not in events, as in Logstash
        let domain = c.u32()?;
        let stamp = Timestamp::from_millis(unix_sec * 1000);
        let mut sets = Cursor::new(&data[16..length]);
        let mut bodies = Vec::new();
        while sets.left() > 0 {
            let id = sets.u16()?;
            let len = sets.u16()? as usize;
            if len <= 4 || !(id == 2 || id == 3 || id >= 256) {
                return Err(format!("an IPFIX set with id {id} and length {len}"));
            }
            bodies.push((id, sets.take(len - 4)?));
        }
        for (id, body) in bodies {
            match id {
                2 => self.ipfix_templates(body, domain),
                3 => self.ipfix_options_template(body, domain),
                _ => {
                    let Some(t) = self.shared.lookup(&self.shared.ipfix, (domain, id)) else {
                        self.shared.counters.add(UNKNOWN, 1);
                        tracing::warn!("netflow codec: Can't (yet) decode flowset id {id} from observation domain id {domain}, because no template to decode it with has been received. This message will usually go away after 1 minute.");
                        continue;
                    };
                    let mut r = Cursor::new(body);
                    let mut records = Vec::new();
                    let min = t.size().max(1);
                    // Records back to back; a short tail is padding.
                    while r.left() >= min {
                        let at = r.at;
                        match t.record(&mut r) {
                            Ok(m) => records.push(m),
                            Err(_) if records.is_empty() && at == 0 => {
                                tracing::warn!("netflow codec: Invalid IPFIX record (a record longer than its set)");
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    for fields in records {
                        let mut m = Map::new();
                        m.insert(Key::from("version"), Value::Int(10));
                        if self.include_flowset_id {
                            m.insert(Key::from("flowset_id"), Value::Int(id as i64));
                        }
                        for (k, v) in fields {
                            let v = ipfix_time(&k, v);
                            m.insert(k, v);
                        }
                        out.push(self.event(stamp, m));
                    }
                }
            }
        }
        Ok(())
    }

    fn ipfix_specs(&self, c: &mut Cursor, count: usize) -> Result<Option<Vec<Spec>>, String> {
        let mut fields = Vec::with_capacity(count);
        let mut ok = true;
        for _ in 0..count {
            let raw = c.u16()?;
            let len = c.u16()?;
            let pen = if raw & 0x8000 != 0 { c.u32()? } else { 0 };
            let id = raw & 0x7fff;
            match fields::ipfix(pen, id, len) {
                Some(f) => fields.push(f),
                None => {
                    if ok {
                        tracing::warn!(
                            field_type = id,
                            enterprise = pen,
                            length = len,
                            "netflow codec: Unsupported enterprise field"
                        );
                    }
                    ok = false;
                }
            }
        }
        Ok(ok.then_some(fields))
    }

    fn ipfix_templates(&self, body: &[u8], domain: u32) {
        let mut c = Cursor::new(body);
        while c.left() > 2 {
            let r = (|| -> Result<(u16, Option<Vec<Spec>>), String> {
                let id = c.u16()?;
                let count = c.u16()? as usize;
                Ok((id, self.ipfix_specs(&mut c, count)?))
            })();
            match r {
                Ok((id, Some(fields))) => self.shared.register(
                    &self.shared.ipfix,
                    (domain, id),
                    fields,
                    "ipfix_templates.cache",
                ),
                Ok((_, None)) => self.shared.counters.add(UNSUPPORTED, 1),
                Err(e) => {
                    self.invalid(&e);
                    return;
                }
            }
        }
    }

    fn ipfix_options_template(&self, body: &[u8], domain: u32) {
        let mut c = Cursor::new(body);
        let r = (|| -> Result<(u16, Option<Vec<Spec>>), String> {
            let id = c.u16()?;
            let count = c.u16()? as usize;
            let scope = c.u16()?;
            if scope == 0 {
                return Err("an options template without scope".into());
            }
            Ok((id, self.ipfix_specs(&mut c, count)?))
        })();
        match r {
            Ok((id, Some(fields))) => self.shared.register(
                &self.shared.ipfix,
                (domain, id),
                fields,
                "ipfix_templates.cache",
            ),
            Ok((_, None)) => self.shared.counters.add(UNSUPPORTED, 1),
            Err(e) => self.invalid(&e),
        }
    }
}

/// IPFIX's time elements, by name, as Logstash converts them.
fn ipfix_time(name: &str, v: Value) -> Value {
    let Value::Int(n) = v else {
        return match (name, &v) {
            (n, Value::BigInt(b)) if n.ends_with("croseconds") || n.ends_with("noseconds") => {
                ntp(b.get() as u64)
            }
            _ => v,
        };
    };
    match name {
        "flowStartSeconds" | "flowEndSeconds" => Value::String(iso(n, 0).into()),
        "flowStartMilliseconds" | "flowEndMilliseconds" => {
            Value::String(iso(n.div_euclid(1000), (n.rem_euclid(1000) * 1_000_000) as u32).into())
        }
        "flowStartMicroseconds"
        | "flowEndMicroseconds"
        | "flowStartNanoseconds"
        | "flowEndNanoseconds" => ntp(n as u64),
        _ => Value::Int(n),
    }
}

/// An NTP timestamp (seconds since 1900 in the high word, the fraction in the low one).
fn ntp(v: u64) -> Value {
    let secs = (v >> 32) as i64 - 2_208_988_800;
    let nanos = ((v & 0xffff_ffff) * 1_000_000_000) >> 32;
    Value::String(iso(secs, nanos as u32).into())
}

/// ISO 8601 in UTC as Logstash 8 prints a timestamp: `.000` for a whole second, else 3, 6 or
/// 9 digits, the fewest that are exact.
fn iso(secs: i64, nanos: u32) -> String {
    let Some(t) = chrono::DateTime::from_timestamp(secs, nanos) else {
        return format!("{secs}");
    };
    let frac = if nanos.is_multiple_of(1_000_000) {
        format!("{:03}", nanos / 1_000_000)
    } else if nanos.is_multiple_of(1000) {
        format!("{:06}", nanos / 1000)
    } else {
        format!("{nanos:09}")
    };
    format!("{}.{frac}Z", t.format("%Y-%m-%dT%H:%M:%S"))
}

impl Template {
    /// The bytes of one record, counting a variable-length field as 1.
    fn size(&self) -> usize {
        self.fields.iter().map(|f| f.kind.size()).sum()
    }

    fn record(&self, c: &mut Cursor) -> Result<Vec<(Key, Value)>, String> {
        let mut out = Vec::with_capacity(self.fields.len());
        for f in &self.fields {
            let v = f.kind.read(c)?;
            if let (Some(name), Some(v)) = (&f.name, v) {
                out.push((name.clone(), v));
            }
        }
        Ok(out)
    }
}

impl Shared {
    fn lookup(&self, registry: &Mutex<Registry>, key: (u32, u16)) -> Option<Arc<Template>> {
        let mut r = registry.lock().unwrap_or_else(|e| e.into_inner());
        match r.map.get(&key) {
            Some((t, expires)) if *expires >= now_secs() => Some(Arc::clone(t)),
            Some(_) => {
                r.map.remove(&key);
                None
            }
            None => None,
        }
    }

    fn register(&self, registry: &Mutex<Registry>, key: (u32, u16), fields: Vec<Spec>, file: &str) {
        let t = Arc::new(Template { fields });
        let mut r = registry.lock().unwrap_or_else(|e| e.into_inner());
        let now = now_secs();
        let unchanged = r.map.get(&key).is_some_and(|(old, _)| **old == *t);
        r.map.insert(key, (t, now + self.ttl));
        if unchanged {
            // Exporters resend their templates every few seconds: the file changes only when
            // a template does.
            return;
        }
        if let Some(dir) = &self.save {
            r.map.retain(|_, (_, expires)| *expires >= now);
            let saved: serde_json::Map<String, serde_json::Value> = r
                .map
                .iter()
                .map(|((a, b), (t, _))| (format!("{a}|{b}"), fields::save(&t.fields)))
                .collect();
            let path = dir.join(file);
            let tmp = dir.join(format!(".{file}.tmp"));
            let write = std::fs::write(&tmp, serde_json::Value::Object(saved).to_string())
                .and_then(|()| std::fs::rename(&tmp, &path));
            if let Err(e) = write {
                tracing::error!(path = %path.display(), "netflow codec: Template Cache could not be saved: {e}");
            }
        }
    }

    /// Reads the saved templates back, with a fresh TTL.
    fn load(&self) {
        let Some(dir) = &self.save else { return };
        for (registry, file) in [
            (&self.v9, "netflow_templates.cache"),
            (&self.ipfix, "ipfix_templates.cache"),
        ] {
            let path = dir.join(file);
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(_) => {
                    tracing::warn!(path = %path.display(), "netflow codec: Template Cache does not exist");
                    continue;
                }
            };
            let parsed: serde_json::Map<String, serde_json::Value> = match serde_json::from_str(
                &text,
            ) {
                Ok(m) => m,
                Err(e) => {
                    tracing::error!(path = %path.display(), "netflow codec: Template Cache could not be loaded: {e}");
                    continue;
                }
            };
            let mut r = registry.lock().unwrap_or_else(|e| e.into_inner());
            let expires = now_secs() + self.ttl;
            for (key, fields) in parsed {
                // `source|template` (Logstash adds `|host|port` only when its input passes
                // them, which ours does not: such keys would never be looked up).
                let parsed_key = key
                    .split_once('|')
                    .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
                match (parsed_key, fields::load(&fields)) {
                    (Some(k), Some(fields)) => {
                        r.map.insert(k, (Arc::new(Template { fields }), expires));
                    }
                    _ => {
                        tracing::warn!(path = %path.display(), key, "netflow codec: a cached template it cannot read; skipped")
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codec() -> Netflow {
        Netflow {
            versions: vec![5, 9, 10],
            target: Key::from("netflow"),
            include_flowset_id: false,
            shared: Arc::new(Shared {
                v9: Mutex::default(),
                ipfix: Mutex::default(),
                ttl: 4000,
                save: None,
                counters: Arc::new(NamedCounters::with_paths(&[UNKNOWN, UNSUPPORTED, INVALID])),
            }),
        }
    }

    fn unhex(h: &str) -> Vec<u8> {
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
            .collect()
    }

    fn decode(hex: &str) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        codec().decode(&unhex(hex), &mut out);
        out.iter()
            .map(|e| serde_json::from_str(&sluice_event::json::event_to_string(e)).unwrap())
            .collect()
    }
    const NETFLOW5_DAT: &str = "0005000200000d355545199010b5774000000000000000000a0002020a00020f000000000000000000000005000000e6ffffffff00000a11d4a300160010060000000000000000000a00020f0a00020200000000000000000000000400000130ffffffff00000a110016d4a3001806000000000000000000";
    const NETFLOW9_TEST_VALID01_DAT: &str = "000900090000b0145616be3e0000000100000000000000400400000e00080004000c000400150004001600040001000400020004000a0004000e000400070002000b00020004000100060001003c000100050001000000400800000e001b0010001c001000150004001600040001000400020004000a0004000e000400070002000b00020004000100060001003c000100050001040000f4ac102064ac1020f8000004c1000004c00000004c000000010000000000000000007b007b11000400ac1020f8ac102064000004c1000004c00000004c000000010000000000000000007b007b11000400ac102064ac1020c900001aea00001ae90000004c000000010000000000000000007b007b11000400ac1020c9ac10206400001aea00001ae90000004c000000010000000000000000007b007b11000400ac102064ac1020ca00002b1a00002b1a0000004c000000010000000000000000007b007b11000400ac1020caac10206400002b1a00002b1a0000004c000000010000000000000000007b007b1100040008000044fe80000000000000020c29fffe833b6eff0200000000000000000000000000010000a01000000b4f000002a0000000070000000000000000000086003a000600";
    const NETFLOW9_TEST_NPROBE_TPL_DAT: &str = "00090003000084c65616beb500000000000000930000009c010100120001000400020004000400010005000100060001000700020008000400090001000a0002000b0002000c0004000d0001000e0002000f00040010000400110004001500040016000401020012000100040002000400040001000500010006000100070002000a0002000b0002000e000200100004001100040015000400160004001b0010001c0010001d0001001e0001003e00100001001801030004000800010004002a000400290004000001030010000000000000000100000000";
    const IPFIX_DAT: &str = "000a01e45553337a0000000600000000000200480400001000080004000c00040001000400020004000a0004000e000400070002000b00020004000100060001003c00010005000100200002003a000200160004001500040002004808000010001b0010001c00100001000400020004000a0004000e000400070002000b00020004000100060001003c000100050001008b0002003a000200160004001500040003001e010000050001008f000400a000080130000201310002013200040100001800000a770000014d4d00e3c200010001000000000400010ec0a8fd01c0a8fd8000000104000000050000000000000000ec900016061004000000000000000000000031b6c0a8fd80c0a8fd01000003e80000000600000000000000000016ec90061804000000000000000000000031b6c0a8fd02c0a8fd8400000259000000020000000000000000003589be11000400000000000000045000000476c0a8fd84c0a8fd020000009400000002000000000000000089be00351100040000000000000004500000047636d609a1c0a8fd840000173a0000000e000000000000000001bbc30f061a0400000000000000047600000958c0a8fd8436d609a100000a300000000d0000000000000000c30f01bb061a04000000000000000476000009580000000a00405553337a000000070000000004000030c0a8fd820a0424400000003c000000010000000000000000956e23f006020400000000000000054c0000054c000a00f05553337c0000000c00000000040000e0c0a8fd01c0a8fd8000000100000000040000000000000000ec9000160618040000000000000031b700003913c0a8fd80c0a8fd010000077c0000000300000000000000000016ec900618040000000000000031b700003913c0a8fd01c0a8fd80000000a8000000020000000000000000ff1c00160618040000000000000031b5000031b6c0a8fd80c0a8fd01000000540000000100000000000000000016ff1c0618040000000000000031b5000031b6c0a8fd01e00000fb000000e800000001000000000000000014e914e91100040000000000000031c5000031c5";

    /// Logstash's spec "Netflow 5 valid 01", event 0 (`@timestamp` at millisecond precision
    /// here: `.280328` in Logstash 8).
    #[test]
    fn netflow5_as_logstash() {
        let events = decode(NETFLOW5_DAT);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0]["@timestamp"], "2015-05-02T18:38:08.280Z");
        assert_eq!(
            events[0]["netflow"],
            serde_json::json!({
                "version": 5, "flow_seq_num": 0, "engine_type": 0, "engine_id": 0,
                "sampling_algorithm": 0, "sampling_interval": 0, "flow_records": 2,
                "ipv4_src_addr": "10.0.2.2", "ipv4_dst_addr": "10.0.2.15", "ipv4_next_hop": "0.0.0.0",
                "input_snmp": 0, "output_snmp": 0, "in_pkts": 5, "in_bytes": 230,
                "first_switched": "2015-06-21T11:40:52.194328Z",
                "last_switched": "2015-05-02T18:38:08.476328Z",
                "l4_src_port": 54435, "l4_dst_port": 22, "tcp_flags": 16, "protocol": 6,
                "src_tos": 0, "src_as": 0, "dst_as": 0, "src_mask": 0, "dst_mask": 0
            })
        );
        assert_eq!(events[1]["netflow"]["in_bytes"], 304);
        assert_eq!(events[1]["netflow"]["tcp_flags"], 24);
    }

    /// "Netflow 9 valid 01": two templates and their data in one datagram, 7 events.
    #[test]
    fn netflow9_as_logstash() {
        let events = decode(NETFLOW9_TEST_VALID01_DAT);
        assert_eq!(events.len(), 7);
        assert_eq!(events[0]["@timestamp"], "2015-10-08T19:04:30.000Z");
        assert_eq!(
            events[0]["netflow"],
            serde_json::json!({
                "version": 9, "flow_seq_num": 1, "flowset_id": 1024,
                "ipv4_src_addr": "172.16.32.100", "ipv4_dst_addr": "172.16.32.248",
                "last_switched": "2015-10-08T19:03:47.141Z", "first_switched": "2015-10-08T19:03:47.140Z",
                "in_bytes": 76, "in_pkts": 1, "input_snmp": 0, "output_snmp": 0,
                "l4_src_port": 123, "l4_dst_port": 123, "protocol": 17, "tcp_flags": 0,
                "ip_protocol_version": 4, "src_tos": 0
            })
        );
        assert_eq!(events[6]["netflow"]["flowset_id"], 2048);
    }

    /// An options template with a scope ("netflow9_test_nprobe_tpl").
    #[test]
    fn netflow9_options_as_logstash() {
        let events = decode(NETFLOW9_TEST_NPROBE_TPL_DAT);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0]["@timestamp"], "2015-10-08T19:06:29.000Z");
        assert_eq!(
            events[0]["netflow"],
            serde_json::json!({
                "version": 9, "flow_seq_num": 0, "flowset_id": 259,
                "scope_system": 0, "total_flows_exp": 1, "total_pkts_exp": 0
            })
        );
    }

    /// "IPFIX": 7 events, the first from an options template; bytes past the message length
    /// ignored.
    #[test]
    fn ipfix_as_logstash() {
        let events = decode(IPFIX_DAT);
        assert_eq!(events.len(), 7);
        assert_eq!(events[0]["@timestamp"], "2015-05-13T11:20:26.000Z");
        assert_eq!(
            events[0]["netflow"],
            serde_json::json!({
                "version": 10, "meteringProcessId": 2679, "systemInitTimeMilliseconds": 1431516013506u64,
                "selectorAlgorithm": 1, "samplingPacketInterval": 1, "samplingPacketSpace": 0
            })
        );
    }

    /// Truncated or flipped datagrams never panic; each is decoded or counted.
    #[test]
    fn damaged_datagrams_are_survived() {
        let c = codec();
        for hex in [
            NETFLOW5_DAT,
            NETFLOW9_TEST_VALID01_DAT,
            IPFIX_DAT,
            NETFLOW9_TEST_NPROBE_TPL_DAT,
        ] {
            let d = unhex(hex);
            for cut in 0..d.len() {
                let mut out = Vec::new();
                c.clone().decode(&d[..cut], &mut out);
            }
            for i in 0..d.len().min(200) {
                let mut f = d.clone();
                f[i] ^= 0xff;
                let mut out = Vec::new();
                c.clone().decode(&f, &mut out);
            }
        }
        assert!(c.shared.counters.get(INVALID) > 0);
    }

    #[test]
    fn timestamps_as_logstash_8_prints_them() {
        assert_eq!(iso(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(1, 5_000_000), "1970-01-01T00:00:01.005Z");
        assert_eq!(iso(1, 280_328_000), "1970-01-01T00:00:01.280328Z");
        assert_eq!(iso(1, 127_768), "1970-01-01T00:00:01.000127768Z");
        assert_eq!(ntp(0), Value::String("1900-01-01T00:00:00.000Z".into()));
    }
}
