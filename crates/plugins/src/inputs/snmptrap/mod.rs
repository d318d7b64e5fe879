//! `snmptrap`: SNMP traps as events, as Logstash's snmptrap input (the snmp integration, v4)
//! makes them. SNMPv1 traps and SNMPv2c traps and informs over UDP (`port` 1062); an inform
//! is answered with its Response once its event is queued.
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
//! SNMPv3, TCP and libsmi `.dic` MIB files are not supported yet and are refused as options.

pub mod ber;
pub mod mib;

use std::net::{SocketAddr, UdpSocket};
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
    counters: Arc<NamedCounters>,
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
    for v3 in [
        "security_name",
        "auth_protocol",
        "auth_pass",
        "priv_protocol",
        "priv_pass",
        "security_level",
    ] {
        if opts.has(v3) {
            opts.take(v3);
            return Err(opts.error(v3, "is for SNMPv3, which is not supported yet"));
        }
    }
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
            "3" => {
                return Err(opts.error(
                    "supported_versions",
                    "SNMPv3 is not supported yet (1 and 2c are)",
                ))
            }
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
        counters: Arc::new(NamedCounters::with_paths(&[
            "invalid_messages",
            "rejected_community",
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
        let socket = UdpSocket::bind(&addr)
            .map_err(|e| format!("snmptrap input: cannot listen on {addr}: {e}"))?;
        socket
            .set_nonblocking(true)
            .map_err(|e| format!("snmptrap input: {e}"))?;
        tracing::info!(address = %addr, "snmptrap input listening");
        let mut buf = vec![0u8; 65536];
        let mut events = Vec::new();
        let mut informs: Vec<(Vec<u8>, SocketAddr)> = Vec::new();
        while !ctx.is_stopping() {
            if !super::udp::wait_readable(&socket, 200) {
                continue;
            }
            for _ in 0..1000 {
                let (n, from) = match socket.recv_from(&mut buf) {
                    Ok(r) => r,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        tracing::warn!("snmptrap input: reading failed: {e}");
                        break;
                    }
                };
                let m = match ber::decode(&buf[..n]) {
                    Ok(m) => m,
                    Err(why) => {
                        self.counters.add("invalid_messages", 1);
                        tracing::warn!(sender = %from, "snmptrap input: a datagram skipped: {why}");
                        continue;
                    }
                };
                if !self.versions.contains(&m.version) {
                    tracing::debug!(sender = %from, "snmptrap input: a trap of a version not in supported_versions dropped");
                    continue;
                }
                if !self.communities.is_empty() && !self.communities.contains(&m.community) {
                    self.counters.add("rejected_community", 1);
                    tracing::debug!(sender = %from, "snmptrap input: a trap of a community not configured dropped");
                    continue;
                }
                if let Some(r) = ber::inform_response(&m) {
                    informs.push((r, from));
                }
                events.push(self.event(&m, from));
            }
            if !events.is_empty() && ctx.push(std::mem::take(&mut events)).is_err() {
                return Ok(());
            }
            // Informs are answered once their events are queued.
            for (r, to) in informs.drain(..) {
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

impl SnmptrapInput {
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
            } => (
                bindings,
                vec![
                    ("error_index", Value::Int(*error_index)),
                    ("variable_bindings", Value::Null),
                    ("error_status", Value::Int(*error_status)),
                    (
                        "type",
                        Value::String(if *inform { "INFORM" } else { "TRAP" }.into()),
                    ),
                    (
                        "error_status_text",
                        Value::String(error_text(*error_status).into()),
                    ),
                    ("community", community),
                    ("version", Value::String("2c".into())),
                    ("request_id", Value::Int(*request_id)),
                ],
            ),
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
