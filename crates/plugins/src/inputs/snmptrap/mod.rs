//! `snmptrap`: SNMP traps as events, as Logstash's snmptrap input (the snmp integration, v4)
//! makes them. SNMPv1 traps and SNMPv2c/v3 traps and informs over UDP (`port` 1062); an inform
//! is answered with its Response once its event is queued. SNMPv3 ([`usm`]): one user; a trap
//! is opened with keys localized to its sender's engine (and checked against that engine's
//! clock); an inform is sent to this input's own engine, whose ID a Report gives to whoever
//! asks (discovery); refused messages are counted (`rejected_security`) and, when reportable,
//! answered with a Report.
//!
//! Each trap of an accepted `community` (`[]`: any) becomes one event: each variable binding a
//! field named by its OID ([`mib`]: `oid_mapping_format`, `oid_root_skip`, `oid_path_length`,
//! under `target` if set) with its value as Logstash converts it (numbers for the integer and
//! counter types, TimeTicks included; printable octet strings as text, others as `aa:bb` hex;
//! `"null"`; OIDs dotted, or named with `oid_map_field_values`); the sender's address in
//! `[host][ip]` (`host` without ECS); the PDU (version, type, community, v1's enterprise,
//! agent address, generic and specific trap and time stamp, v2's request id and error fields,
//! and the bindings by numeric OID) in `[@metadata][input][snmptrap][pdu]`, and as compact
//! JSON in `message`. A trap of another community is dropped (counted as
//! `rejected_community`); a datagram that is not a trap is counted as `invalid_messages`.
//! TCP, `3des` and libsmi `.dic` MIB files are not supported yet and are refused as options.

pub mod ber;
pub mod mib;
pub mod usm;

use std::net::SocketAddr;
use std::sync::Arc;

use sluice_event::{Event, FieldRef, Key, Map, Value};
use sluice_pipeline::metrics::NamedCounters;
use sluice_pipeline::{ConfigError, Input, InputContext, Options};

use ber::{Message, Pdu, SnmpValue};
use mib::{Format, Mib};

pub struct SnmptrapInput {
    host: String,
    port: u16,
    communities: Vec<Vec<u8>>,
    versions: Vec<i64>,
    mapping: Mapping,
    host_field: FieldRef,
    /// SNMPv3's user, when version 3 is supported.
    user: Option<usm::User>,
    /// This receiver's own SNMP engine: informs are sent to it.
    engine: Engine,
    /// The clocks of the engines whose traps came in.
    times: usm::TimeTable,
    /// usmStats counters, for the Reports that carry them.
    usm_stats: [u32; 6],
    counters: Arc<NamedCounters>,
}

/// The engine an SNMPv3 inform is sent to (RFC 3411): an ID made at start (as SNMP4J makes
/// one per start, so `boots` stays 1) and the seconds since.
struct Engine {
    id: Vec<u8>,
    boots: u32,
    started: std::time::Instant,
}

impl Engine {
    fn new() -> Engine {
        // An enterprise-format ID (RFC 3411): the top bit, enterprise 0, format 5
        // (octets), 8 random ones.
        let mut id = vec![0x80, 0, 0, 0, 5];
        id.extend_from_slice(&crate::retry::random_u64().to_be_bytes());
        Engine {
            id,
            boots: 1,
            started: std::time::Instant::now(),
        }
    }

    fn time(&self) -> u32 {
        self.started.elapsed().as_secs() as u32
    }
}

/// How bindings become fields, shared with the `snmp` input: the names (MIBs and the mapping
/// options), whether OID values are named too, and where the fields go.
#[derive(Clone)]
pub struct Mapping {
    pub mib: Mib,
    pub map_values: bool,
    pub target: Option<FieldRef>,
}

/// The mapping options both SNMP inputs take.
pub fn read_mapping(opts: &mut Options, input: &str) -> Result<Mapping, ConfigError> {
    let format = match opts
        .choice(
            "oid_mapping_format",
            &["default", "ruby_snmp", "dotted_string"],
            "default",
        )?
        .as_str()
    {
        "ruby_snmp" => Format::RubySnmp,
        "dotted_string" => Format::Dotted,
        _ => Format::Default,
    };
    let root_skip = opts.int("oid_root_skip")?.unwrap_or(0).max(0) as usize;
    let path_length = opts.int("oid_path_length")?.unwrap_or(0).max(0) as usize;
    if format == Format::Default && root_skip > 0 && path_length > 0 {
        return Err(opts.plugin_error("Use either `oid_root_skip` or `oid_path_length`"));
    }
    if format != Format::Default && (root_skip > 0 || path_length > 0) {
        return Err(opts.plugin_error(
            "The `oid_root_skip` and `oid_path_length` requires setting `oid_mapping_format` to `default`",
        ));
    }
    let provided = opts.boolean_or("use_provided_mibs", true)?;
    let mut mib = Mib::new(provided, format);
    mib.root_skip = root_skip;
    mib.path_length = path_length;
    let mut paths = opts.string_list("mib_paths")?.unwrap_or_default();
    if let Some(dir) = opts.string("yamlmibdir")? {
        tracing::warn!("{input} input: yamlmibdir is deprecated; use mib_paths");
        paths.push(dir);
    }
    for p in paths {
        load_mibs(opts, &mut mib, std::path::Path::new(&p))?;
    }
    let map_values = opts.boolean_or("oid_map_field_values", false)?;
    let target = match opts.string("target")? {
        Some(t) => Some(FieldRef::parse(&t).map_err(|e| opts.error("target", e.to_string()))?),
        None => None,
    };
    Ok(Mapping {
        mib,
        map_values,
        target,
    })
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let host = opts.string_or("host", "0.0.0.0")?;
    let port = crate::net::port(opts, "port", Some(1062))?;
    let communities = opts
        .string_list("community")?
        .unwrap_or_else(|| vec!["public".into()])
        .into_iter()
        .map(String::into_bytes)
        .collect();
    let mut versions = Vec::new();
    for v in opts
        .string_list("supported_versions")?
        .unwrap_or_else(|| vec!["1".into(), "2c".into()])
    {
        match v.as_str() {
            "1" => versions.push(0),
            "2c" => versions.push(1),
            "3" => versions.push(3),
            other => {
                return Err(opts.error(
                    "supported_versions",
                    format!("{other:?} is not an SNMP version (1, 2c, 3)"),
                ))
            }
        }
    }
    if versions.is_empty() {
        return Err(opts.error(
            "supported_versions",
            "at least one SNMP version must be supported",
        ));
    }
    for t in opts
        .string_list("supported_transports")?
        .unwrap_or_else(|| vec!["udp".into()])
    {
        if t != "udp" {
            return Err(opts.error(
                "supported_transports",
                format!("{t:?} is not supported yet (udp is)"),
            ));
        }
    }
    let _ = opts.int("threads")?;
    let mapping = read_mapping(opts, "snmptrap")?;
    if opts.has("security_name") && !versions.contains(&3) {
        return Err(opts.error(
            "security_name",
            "Using a `security_name` requires `supported_versions` to include version '3'",
        ));
    }
    let user = usm::read_user(opts, versions.contains(&3))?;
    let ecs = crate::ecs::Ecs::from_options(opts)?;
    let host_field = if ecs.enabled() {
        FieldRef::parse("[host][ip]").expect("a valid reference")
    } else {
        FieldRef::top_level("host")
    };
    opts.codec("plain")?;
    Ok(Box::new(SnmptrapInput {
        host,
        port,
        communities,
        versions,
        mapping,
        host_field,
        user,
        engine: Engine::new(),
        times: usm::TimeTable::default(),
        usm_stats: [0; 6],
        counters: Arc::new(NamedCounters::with_paths(&[
            "invalid_messages",
            "rejected_community",
            "rejected_security",
        ])),
    }))
}

/// A MIB file or a directory of them (walked): `.yaml` read, `.dic` refused, others ignored.
fn load_mibs(opts: &Options, mib: &mut Mib, path: &std::path::Path) -> Result<(), ConfigError> {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)
            .map_err(|e| opts.error("mib_paths", format!("{}: {e}", path.display())))?
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for e in entries {
            load_mibs(opts, mib, &e)?;
        }
        return Ok(());
    }
    match path.extension().and_then(|e| e.to_str()) {
        Some("yaml") | Some("yml") => mib
            .add_yaml(path)
            .map(|_| ())
            .map_err(|e| opts.error("mib_paths", e)),
        Some("dic") => Err(opts.error(
            "mib_paths",
            format!(
                "{}: libsmi .dic MIB files are not supported yet (ruby-snmp .yaml files are)",
                path.display()
            ),
        )),
        _ if !path.exists() => {
            Err(opts.error("mib_paths", format!("{} does not exist", path.display())))
        }
        _ => Ok(()),
    }
}

impl Input for SnmptrapInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let addr = crate::net::address(&self.host, self.port);
        let socket = super::udp::listen("snmptrap", &addr)?;
        let mut buf = vec![0u8; 65536];
        let mut events = Vec::new();
        // Reports (SNMPv3 discovery and refusals) are sent at once, informs' Responses once
        // their events are queued.
        let mut reports: Vec<(Vec<u8>, SocketAddr)> = Vec::new();
        let mut acks: Vec<(Vec<u8>, SocketAddr)> = Vec::new();
        while !ctx.is_stopping() {
            if !super::udp::wait_readable(&socket, 200) {
                continue;
            }
            super::udp::drain(&socket, &mut buf, 1000, "snmptrap", |data, from| {
                let (m, ack) = match self.receive(data, from, &mut reports) {
                    Ok(Some(r)) => r,
                    Ok(None) => return,
                    Err(why) => {
                        self.counters.add("invalid_messages", 1);
                        tracing::warn!(sender = %from, "snmptrap input: a datagram skipped: {why}");
                        return;
                    }
                };
                if let Some(ack) = ack {
                    acks.push((ack, from));
                }
                events.push(self.event(&m, from));
            });
            for (r, to) in reports.drain(..) {
                if let Err(e) = socket.send_to(&r, to) {
                    tracing::warn!("snmptrap input: sending a report to {to}: {e}");
                }
            }
            if !events.is_empty() && ctx.push(std::mem::take(&mut events)).is_err() {
                return Ok(());
            }
            // Informs are answered once their events are queued.
            for (r, to) in acks.drain(..) {
                if let Err(e) = socket.send_to(&r, to) {
                    tracing::warn!("snmptrap input: answering an inform from {to}: {e}");
                }
            }
        }
        Ok(())
    }

    fn counters(&self) -> Option<Arc<NamedCounters>> {
        Some(Arc::clone(&self.counters))
    }
}

/// A variable binding: its OID and value.
type Binding = (Vec<u32>, SnmpValue);

pub fn dotted(oid: &[u32]) -> String {
    oid.iter().map(u32::to_string).collect::<Vec<_>>().join(".")
}

impl Mapping {
    /// A value as Logstash's SNMP inputs convert it.
    pub fn value(&self, v: &SnmpValue) -> Value {
        let hex = |b: &[u8]| {
            b.iter()
                .map(|x| format!("{x:02x}"))
                .collect::<Vec<_>>()
                .join(":")
        };
        match v {
            SnmpValue::Integer(i) => Value::Int(*i),
            SnmpValue::Counter32(n) | SnmpValue::Gauge32(n) | SnmpValue::TimeTicks(n) => {
                Value::Int(*n as i64)
            }
            // As SNMP4J's toLong: the raw bits, so 2^63 and above come out negative.
            SnmpValue::Counter64(n) => Value::Int(*n as i64),
            SnmpValue::OctetString(b) => {
                let printable = b
                    .iter()
                    .all(|x| (0x20..=0x7e).contains(x) || (0x09..=0x0d).contains(x));
                if printable {
                    Value::String(String::from_utf8_lossy(b).as_ref().into())
                } else {
                    Value::String(hex(b).into())
                }
            }
            SnmpValue::Opaque(b) => Value::String(hex(b).into()),
            SnmpValue::Null => Value::String("null".into()),
            SnmpValue::Oid(o) if self.map_values => Value::String(self.mib.name(o).into()),
            SnmpValue::Oid(o) => Value::String(dotted(o).into()),
            SnmpValue::IpAddress(a) => {
                Value::String(format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]).into())
            }
            SnmpValue::NoSuchObject => {
                Value::String("error: no such object currently exists at this OID".into())
            }
            SnmpValue::NoSuchInstance => {
                Value::String("error: no such instance currently exists at this OID".into())
            }
            SnmpValue::EndOfMibView => Value::String("error: end of MIB view".into()),
        }
    }

    /// Sets `fields` on `e`, at the root or under `target`.
    pub fn put(&self, e: &mut Event, fields: Map) {
        match &self.target {
            Some(t) => e.set(t, Value::Object(fields)),
            None => {
                for (k, v) in fields {
                    e.fields_mut().insert(k, v);
                }
            }
        }
    }
}

/// A received trap and, for an inform, the message that answers it.
type Received = (Message, Option<Vec<u8>>);

impl SnmptrapInput {
    /// A datagram as a trap: v1/v2c decoded and their community checked; v3 opened by the
    /// user's USM (discovery and refusals of reportable messages answered with a Report in
    /// `reports`). None: dropped, and counted.
    fn receive(
        &mut self,
        data: &[u8],
        from: SocketAddr,
        reports: &mut Vec<(Vec<u8>, SocketAddr)>,
    ) -> Result<Option<Received>, String> {
        if ber::version(data)? != 3 {
            let m = ber::decode(data)?;
            if !self.versions.contains(&m.version) {
                tracing::debug!(sender = %from, "snmptrap input: a trap of a version not in supported_versions dropped");
                return Ok(None);
            }
            if !self.communities.is_empty() && !self.communities.contains(&m.community) {
                self.counters.add("rejected_community", 1);
                tracing::debug!(sender = %from, "snmptrap input: a trap of a community not configured dropped");
                return Ok(None);
            }
            let ack = ber::inform_response(&m);
            return Ok(Some((m, ack)));
        }
        let v = ber::decode_v3(data)?;
        let Some(user) = self.user.as_mut().filter(|_| self.versions.contains(&3)) else {
            tracing::debug!(sender = %from, "snmptrap input: an SNMPv3 message dropped: version 3 is not in supported_versions");
            return Ok(None);
        };
        let reportable = v.flags & 4 != 0;
        let level = usm::Level::of_flags(v.flags);
        let ours = v.engine_id == self.engine.id.as_slice();
        // An informer learning this engine's ID (RFC 3414 4): a Report that carries it.
        if reportable && !ours && level == usm::Level::NoAuthNoPriv {
            let r = self.report(&v, usm::Refused::UnknownEngine, None);
            reports.push((r, from));
            return Ok(None);
        }
        let plain = match user.open(&v, data) {
            Ok(p) => p,
            Err(why) => return Ok(self.refuse(&v, why, None, from, reports)),
        };
        if level > usm::Level::NoAuthNoPriv {
            let in_window = if ours {
                v.boots == self.engine.boots as i64
                    && (v.time - self.engine.time() as i64).abs() <= 150
            } else {
                self.times.check(v.engine_id, v.boots, v.time)
            };
            if !in_window {
                let why = usm::Refused::NotInTimeWindow;
                return Ok(self.refuse(&v, why, Some(&plain), from, reports));
            }
        }
        let s = ber::scoped(&plain)?;
        if s.tag == 0xa4 {
            return Err("a v1 Trap-PDU in an SNMPv3 message".into());
        }
        let m = Message {
            version: 3,
            community: v.user.to_vec(),
            context: Some((s.context_engine_id.to_vec(), s.context_name.to_vec())),
            pdu: ber::trap_pdu(s.tag, s.body)?,
        };
        let Some(ack) = ber::inform_ack(&m) else {
            return Ok(Some((m, None)));
        };
        // An inform is sent to this engine, the authoritative one.
        if !ours {
            let why = usm::Refused::UnknownEngine;
            return Ok(self.refuse(&v, why, Some(&plain), from, reports));
        }
        let scoped = ber::scoped_pdu(s.context_engine_id, s.context_name, ack);
        let ack = self.answer(&v, level, scoped);
        Ok(Some((m, Some(ack))))
    }

    /// A message of this engine that answers `v` (its msgID, its user), sealed at `level`.
    fn answer(&mut self, v: &ber::V3, level: usm::Level, scoped: Vec<u8>) -> Vec<u8> {
        let out = usm::Outgoing {
            msg_id: v.msg_id,
            reportable: false,
            level,
            engine_id: &self.engine.id,
            boots: self.engine.boots,
            time: self.engine.time(),
            user: v.user,
        };
        let user = self
            .user
            .as_mut()
            .expect("v3 messages are read only with a user");
        user.seal(&out, scoped)
    }

    /// Counts and logs a refused SNMPv3 message, and answers it with a Report if it asked for
    /// one.
    fn refuse(
        &mut self,
        v: &ber::V3,
        why: usm::Refused,
        plain: Option<&[u8]>,
        from: SocketAddr,
        reports: &mut Vec<(Vec<u8>, SocketAddr)>,
    ) -> Option<Received> {
        self.counters.add("rejected_security", 1);
        tracing::debug!(sender = %from, "snmptrap input: an SNMPv3 message refused: {}", why.text());
        if v.flags & 4 != 0 {
            let r = self.report(v, why, plain);
            reports.push((r, from));
        }
        None
    }

    /// A Report (RFC 3412 7.1.3) of a usmStats counter, from this engine: unauthenticated,
    /// but for a message out of the time window, which gets one authenticated so that its
    /// sender can trust the clock it carries.
    fn report(&mut self, v: &ber::V3, why: usm::Refused, plain: Option<&[u8]>) -> Vec<u8> {
        let n = why.oid()[9] as usize - 1;
        self.usm_stats[n] = self.usm_stats[n].wrapping_add(1);
        // The request's id, where the PDU can be read; else 0.
        let readable = plain.or((v.flags & 2 == 0).then_some(v.data));
        let request_id = readable
            .and_then(|p| ber::scoped(p).ok())
            .and_then(|s| ber::response_pdu(s.body).ok())
            .map_or(0, |r| r.0);
        let pdu = ber::pdu(
            0xa8,
            request_id,
            (0, 0),
            &[(why.oid(), SnmpValue::Counter32(self.usm_stats[n]))],
        );
        let scoped = ber::scoped_pdu(&self.engine.id, b"", pdu);
        let level = if why == usm::Refused::NotInTimeWindow {
            usm::Level::AuthNoPriv
        } else {
            usm::Level::NoAuthNoPriv
        };
        self.answer(v, level, scoped)
    }

    fn event(&self, m: &Message, from: SocketAddr) -> Event {
        let community = Value::String(String::from_utf8_lossy(&m.community).as_ref().into());
        let (bindings, pdu): (&[Binding], Vec<(&str, Value)>) = match &m.pdu {
            Pdu::TrapV1 {
                enterprise,
                agent_addr,
                generic_trap,
                specific_trap,
                timestamp,
                bindings,
            } => (
                bindings,
                // Logstash's `message` order (its HashMap's).
                vec![
                    (
                        "agent_addr",
                        self.mapping.value(&SnmpValue::IpAddress(*agent_addr)),
                    ),
                    ("generic_trap", Value::Int(*generic_trap)),
                    ("specific_trap", Value::Int(*specific_trap)),
                    ("enterprise", Value::String(dotted(enterprise).into())),
                    ("variable_bindings", Value::Null),
                    ("type", Value::String("V1TRAP".into())),
                    ("community", community),
                    ("version", Value::String("1".into())),
                    ("timestamp", Value::Int(*timestamp as i64)),
                ],
            ),
            Pdu::TrapV2 {
                inform,
                request_id,
                error_status,
                error_index,
                bindings,
            } => {
                // v3 has a context and no community; the order is Logstash's for each.
                let v3 = m.context.as_ref().filter(|_| m.version == 3);
                let text = |b: &[u8]| self.mapping.value(&SnmpValue::OctetString(b.to_vec()));
                let mut f = vec![("error_index", Value::Int(*error_index))];
                if let Some((engine, _)) = v3 {
                    f.push(("context_engine_id", text(engine)));
                }
                f.push(("variable_bindings", Value::Null));
                f.push(("error_status", Value::Int(*error_status)));
                if let Some((_, name)) = v3 {
                    f.push(("context_name", text(name)));
                }
                f.push((
                    "type",
                    Value::String(if *inform { "INFORM" } else { "TRAP" }.into()),
                ));
                f.push((
                    "error_status_text",
                    Value::String(error_text(*error_status).into()),
                ));
                if v3.is_none() {
                    f.push(("community", community));
                }
                let version = if v3.is_some() { "3" } else { "2c" };
                f.push(("version", Value::String(version.into())));
                f.push(("request_id", Value::Int(*request_id)));
                (bindings, f)
            }
        };
        let mut e = Event::new();
        // Each binding's numeric OID and value, converted once: for the fields, the metadata
        // and `message`.
        let converted: Vec<(String, Value)> = bindings
            .iter()
            .map(|(oid, v)| (dotted(oid), self.mapping.value(v)))
            .collect();
        let mut by_oid = Map::new();
        let mut fields = Map::new();
        for ((oid, _), (numeric, value)) in bindings.iter().zip(&converted) {
            by_oid.insert(Key::from(numeric.as_str()), value.clone());
            fields.insert(
                Key::from(self.mapping.mib.name(oid).as_str()),
                value.clone(),
            );
        }
        self.mapping.put(&mut e, fields);
        e.set(
            &self.host_field,
            Value::String(from.ip().to_string().into()),
        );
        // `message`: the PDU as compact JSON, in Logstash's key order.
        let mut message = String::from("{");
        let mut meta = Map::new();
        for (i, (k, v)) in pdu.into_iter().enumerate() {
            if i > 0 {
                message.push(',');
            }
            message.push_str(&sluice_event::json::to_string(&Value::String(k.into())));
            message.push(':');
            let v = if k == "variable_bindings" {
                let mut s = String::from("{");
                for (j, (numeric, val)) in converted.iter().enumerate() {
                    if j > 0 {
                        s.push(',');
                    }
                    s.push_str(&sluice_event::json::to_string(&Value::String(
                        numeric.as_str().into(),
                    )));
                    s.push(':');
                    s.push_str(&sluice_event::json::to_string(val));
                }
                s.push('}');
                message.push_str(&s);
                Value::Object(by_oid.clone())
            } else {
                message.push_str(&sluice_event::json::to_string(&v));
                v
            };
            meta.insert(Key::from(k), v);
        }
        message.push('}');
        e.set(
            &FieldRef::top_level("message"),
            Value::String(message.into()),
        );
        e.set(
            &FieldRef::parse("[@metadata][input][snmptrap][pdu]").expect("a valid reference"),
            Value::Object(meta),
        );
        e
    }
}

/// SNMP's error status names (RFC 3416), as SNMP4J words them.
fn error_text(status: i64) -> String {
    const TEXT: [&str; 19] = [
        "Success",
        "Too big",
        "No such name",
        "Bad value",
        "Read only",
        "General error",
        "No access",
        "Wrong type",
        "Wrong length",
        "Wrong encoding",
        "Wrong value",
        "No creation",
        "Inconsistent value",
        "Resource unavailable",
        "Commit failed",
        "Undo failed",
        "Authorization error",
        "Not writable",
        "Inconsistent name",
    ];
    usize::try_from(status)
        .ok()
        .and_then(|i| TEXT.get(i))
        .map_or_else(|| format!("Unknown error: {status}"), |t| (*t).to_owned())
}

#[cfg(test)]
mod tests {
    use super::ber::*;

    /// What the encoder writes the decoder reads back, and damaged datagrams are errors, not
    /// panics.
    #[test]
    fn traps_round_trip() {
        let traps = [
            Message {
                version: 0,
                community: b"public".to_vec(),
                context: None,
                pdu: Pdu::TrapV1 {
                    enterprise: vec![1, 3, 6, 1, 4, 1, 8072, 3, 2, 10],
                    agent_addr: [192, 168, 1, 40],
                    generic_trap: 6,
                    specific_trap: 1,
                    timestamp: 1500,
                    bindings: vec![
                        (
                            vec![1, 3, 6, 1, 2, 1, 1, 5, 0],
                            SnmpValue::OctetString(b"router1".to_vec()),
                        ),
                        (
                            vec![1, 3, 6, 1, 4, 1, 8072, 9999, 1, 2],
                            SnmpValue::TimeTicks(u32::MAX),
                        ),
                    ],
                },
            },
            Message {
                version: 1,
                community: b"c".to_vec(),
                context: None,
                pdu: Pdu::TrapV2 {
                    inform: true,
                    request_id: -5,
                    error_status: 0,
                    error_index: 0,
                    bindings: vec![
                        (
                            vec![1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0],
                            SnmpValue::Oid(vec![1, 3, 6, 1, 6, 3, 1, 1, 5, 3]),
                        ),
                        (vec![1, 3, 6, 1, 9], SnmpValue::Counter64(u64::MAX)),
                        (
                            vec![1, 3, 6, 1, 9, 1],
                            SnmpValue::Integer(i64::from(i32::MIN)),
                        ),
                        (vec![1, 3, 6, 1, 9, 2], SnmpValue::Null),
                        (vec![2, 999, 3], SnmpValue::IpAddress([10, 0, 0, 1])),
                    ],
                },
            },
        ];
        for t in &traps {
            let bytes = encode(t);
            assert_eq!(&decode(&bytes).unwrap(), t);
            for cut in 0..bytes.len() {
                assert!(decode(&bytes[..cut]).is_err());
            }
            for i in 0..bytes.len() {
                let mut b = bytes.clone();
                b[i] ^= 0x5a;
                let _ = decode(&b);
            }
        }
        assert!(inform_response(&traps[1]).is_some_and(|r| r.len() > 20));
        assert!(inform_response(&traps[0]).is_none());
    }
}
