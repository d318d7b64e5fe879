//! `snmp`: polls SNMP agents every `interval` seconds, as Logstash's snmp input (the snmp
//! integration, v4) does: for each of `hosts` (`udp:address/port`, `community`, `version`
//! 1, 2c or 3, `retries`, `timeout` in ms) one GET of every `get` OID, a walk of each `walk`
//! subtree (GETNEXT with v1, GETBULK of 10 with v2c and v3) and each of `tables` (`name`, `columns`:
//! rows by index). Everything one host answered becomes one event: each value a field named by
//! its OID (the snmptrap input's mapping options), each table an array of rows (`index` and a
//! field per column), the host in `[@metadata][input][snmp][host]` (`[@metadata][host_*]`
//! without ECS) and `[host][ip]` (`host`). An operation that fails (no answer after the
//! retries, an error status) is logged and tags the event `tag_on_failure` (`_snmpfailure`);
//! what a failed walk or table gathered is kept only with `allow_partial_response`. A host that
//! answers nothing still gives a tagged event with its host fields. Version 3 hosts are asked as
//! the one USM user (`security_name`…, at `security_level`): each agent's engine is discovered
//! on first use (an empty request its unknownEngineIDs Report answers) and its clock followed
//! (a notInTimeWindow Report corrects it, and the request is sent again). TCP is refused: not
//! supported yet.

use std::net::UdpSocket;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_event::{Event, FieldRef, Key, Map, Value};
use sluice_pipeline::metrics::NamedCounters;
use sluice_pipeline::options::ast_to_value;
use sluice_pipeline::{ConfigError, Input, InputContext, Options};

use super::snmptrap::ber::{self, SnmpValue};
use super::snmptrap::mib::parse;
use super::snmptrap::usm::{self, Level, Refused, User};
use super::snmptrap::{dotted, read_mapping, Mapping};

pub struct SnmpInput {
    hosts: Vec<Host>,
    get: Vec<Vec<u32>>,
    walk: Vec<Vec<u32>>,
    tables: Vec<(String, Vec<Vec<u32>>)>,
    interval: Duration,
    mapping: Mapping,
    tags: Vec<String>,
    partial: bool,
    fields: HostFields,
    /// SNMPv3's user, when a host is polled with version 3.
    user: Option<User>,
    counters: Arc<NamedCounters>,
}

struct Host {
    /// As written (`udp:127.0.0.1/161`), for the log.
    spec: String,
    address: String,
    port: u16,
    community: String,
    version: i64,
    retries: u32,
    timeout: Duration,
}

struct HostFields {
    protocol: FieldRef,
    address: FieldRef,
    port: FieldRef,
    community: FieldRef,
    /// None when `add_field` is set (as Logstash: its default `add_field` is what sets it).
    host: Option<FieldRef>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let oids = |opts: &mut Options, name: &str| -> Result<Vec<Vec<u32>>, ConfigError> {
        opts.string_list(name)?
            .unwrap_or_default()
            .into_iter()
            .map(|o| {
                parse(&o).ok_or_else(|| {
                    opts.error(
                        name,
                        format!("The {name} option oid '{o}' has an invalid format"),
                    )
                })
            })
            .collect()
    };
    let get = oids(opts, "get")?;
    let walk = oids(opts, "walk")?;
    let mut tables = Vec::new();
    if let Some((_, v)) = opts.take("tables") {
        let items = match ast_to_value(&v) {
            Value::Array(a) => a,
            one => vec![one],
        };
        for t in items {
            let name = t
                .as_object()
                .and_then(|m| m.get(&Key::from("name")))
                .map(Value::to_display_string)
                .ok_or_else(|| {
                    opts.error(
                        "tables",
                        "each table definition must have a \"name\" option",
                    )
                })?;
            let columns = match t.as_object().and_then(|m| m.get(&Key::from("columns"))) {
                Some(Value::Array(c)) => c.iter().map(Value::to_display_string).collect(),
                Some(one) => vec![one.to_display_string()],
                None => Vec::new(),
            };
            let mut cols = Vec::new();
            for c in columns {
                cols.push(parse(&c).ok_or_else(|| {
                    opts.error(
                        "tables",
                        format!("The table column oid '{c}' is an invalid format"),
                    )
                })?);
            }
            tables.push((name, cols));
        }
    }
    if get.is_empty() && walk.is_empty() && tables.is_empty() {
        return Err(
            opts.plugin_error("at least one get OID, one walk OID, or one table OID is required")
        );
    }
    let hosts = read_hosts(opts)?;
    let interval = opts.float("interval")?.unwrap_or(30.0);
    if !(interval > 0.0 && interval.is_finite()) {
        return Err(opts.error("interval", "must be a positive number of seconds"));
    }
    let _ = opts.int("threads")?;
    let _ = opts.int("poll_hosts_timeout")?;
    let tags = opts
        .string_list("tag_on_failure")?
        .unwrap_or_else(|| vec!["_snmpfailure".to_owned()]);
    let partial = opts.boolean_or("allow_partial_response", false)?;
    let mapping = read_mapping(opts, "snmp")?;
    if let Some(id) = opts.string("local_engine_id")? {
        // Only an agent's (authoritative) engine ID goes into a poller's messages: this one is
        // checked as Logstash checks it, and has nothing to say on the wire.
        if !(5..=32).contains(&id.len()) {
            return Err(opts.error(
                "local_engine_id",
                "its length must be greater or equal than 5 and less or equal than 32",
            ));
        }
    }
    let v3 = hosts.iter().any(|h| h.version == 3);
    let user = usm::read_user(opts, v3)?;
    if v3 && !opts.has("security_level") {
        return Err(opts.error(
            "security_level",
            "security_level is required for SNMPv3 hosts",
        ));
    }
    let ecs = crate::ecs::Ecs::from_options(opts)?;
    let f = |s: &str| FieldRef::parse(s).expect("a valid reference");
    let add_field = opts.has("add_field");
    let fields = if ecs.enabled() {
        HostFields {
            protocol: f("[@metadata][input][snmp][host][protocol]"),
            address: f("[@metadata][input][snmp][host][address]"),
            port: f("[@metadata][input][snmp][host][port]"),
            community: f("[@metadata][input][snmp][host][community]"),
            host: (!add_field).then(|| f("[host][ip]")),
        }
    } else {
        HostFields {
            protocol: f("[@metadata][host_protocol]"),
            address: f("[@metadata][host_address]"),
            port: f("[@metadata][host_port]"),
            community: f("[@metadata][host_community]"),
            host: (!add_field).then(|| f("host")),
        }
    };
    Ok(Box::new(SnmpInput {
        hosts,
        get,
        walk,
        tables,
        interval: Duration::from_secs_f64(interval),
        mapping,
        tags,
        partial,
        fields,
        user,
        counters: Arc::new(NamedCounters::with_paths(&["polls", "failed_operations"])),
    }))
}

fn read_hosts(opts: &mut Options) -> Result<Vec<Host>, ConfigError> {
    let Some((_, v)) = opts.take("hosts") else {
        return Err(opts.plugin_error("at least one host definition is required"));
    };
    let items = match ast_to_value(&v) {
        Value::Array(a) => a,
        one => vec![one],
    };
    if items.is_empty() {
        return Err(opts.error("hosts", "at least one host definition is required"));
    }
    let mut hosts = Vec::new();
    for h in items {
        let Some(m) = h.as_object() else {
            return Err(opts.error("hosts", "each host definition must have a \"host\" option"));
        };
        let get = |k: &str| m.get(&Key::from(k)).map(Value::to_display_string);
        let spec = get("host").ok_or_else(|| {
            opts.error("hosts", "each host definition must have a \"host\" option")
        })?;
        let invalid = || opts.error("hosts", format!("invalid format for host option '{spec}'"));
        let (protocol, rest) = spec.split_once(':').ok_or_else(invalid)?;
        let (address, port) = rest.rsplit_once('/').ok_or_else(invalid)?;
        let port: u16 = port.parse().map_err(|_| invalid())?;
        match protocol.to_ascii_lowercase().as_str() {
            "udp" => {}
            "tcp" => {
                return Err(opts.error(
                    "hosts",
                    format!("tcp is not supported yet for host option '{spec}' (udp is)"),
                ))
            }
            _ => {
                return Err(opts.error(
                    "hosts",
                    format!("only udp & tcp protocols are supported for host option '{spec}'"),
                ))
            }
        }
        let version = match get("version").as_deref().unwrap_or("2c") {
            "1" => 0,
            "2c" => 1,
            "3" => 3,
            _ => return Err(opts.error("hosts", format!("only protocol version '1', '2c' and '3' are supported for host option '{spec}'"))),
        };
        let number = |k: &str, default: u64| -> Result<u64, ConfigError> {
            match get(k) {
                None => Ok(default),
                Some(t) => t.parse().map_err(|_| {
                    opts.error("hosts", format!("{k} of host '{spec}' is not a number"))
                }),
            }
        };
        hosts.push(Host {
            address: address
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port,
            community: get("community").unwrap_or_else(|| "public".into()),
            version,
            retries: number("retries", 2)? as u32,
            timeout: Duration::from_millis(number("timeout", 1000)?),
            spec,
        });
    }
    Ok(hosts)
}

impl Input for SnmpInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let socket = UdpSocket::bind("0.0.0.0:0").map_err(|e| format!("snmp input: {e}"))?;
        let mut request_id = (crate::retry::random_u64() & 0x3fff_ffff) as i64;
        let mut user = self.user.take();
        // What each host's SNMPv3 engine was found to be, kept across polls.
        let mut engines: Vec<Option<AgentEngine>> = self.hosts.iter().map(|_| None).collect();
        loop {
            let started = Instant::now();
            self.counters.add("polls", 1);
            let mut events = Vec::new();
            for (h, engine) in self.hosts.iter().zip(&mut engines) {
                if ctx.is_stopping() {
                    return Ok(());
                }
                let mut poll = Poll {
                    socket: &socket,
                    host: h,
                    request_id: &mut request_id,
                    ctx,
                    user: user.as_mut(),
                    engine,
                };
                if let Some(e) = self.poll(&mut poll) {
                    events.push(e);
                }
            }
            if !events.is_empty() && ctx.push(events).is_err() {
                return Ok(());
            }
            let next = self.interval.saturating_sub(started.elapsed());
            if next.is_zero() {
                tracing::warn!(
                    "snmp input: a poll took longer than interval ({:?}); polling again at once",
                    self.interval
                );
            }
            if !crate::retry::sleep_unless(next, || ctx.is_stopping()) {
                return Ok(());
            }
        }
    }

    fn counters(&self) -> Option<Arc<NamedCounters>> {
        Some(Arc::clone(&self.counters))
    }
}

/// One host's requests in one poll.
struct Poll<'a> {
    socket: &'a UdpSocket,
    host: &'a Host,
    request_id: &'a mut i64,
    ctx: &'a InputContext,
    user: Option<&'a mut User>,
    engine: &'a mut Option<AgentEngine>,
}

type Bindings = Vec<(Vec<u32>, SnmpValue)>;

/// An agent's SNMPv3 engine as discovered (RFC 3414 4): its ID, and its clock as last heard.
struct AgentEngine {
    id: Vec<u8>,
    boots: u32,
    time: u32,
    heard: Instant,
}

impl AgentEngine {
    fn heard(v: &ber::V3) -> AgentEngine {
        AgentEngine {
            id: v.engine_id.to_vec(),
            boots: v.boots.clamp(0, u32::MAX as i64) as u32,
            time: v.time.clamp(0, u32::MAX as i64) as u32,
            heard: Instant::now(),
        }
    }

    fn time(&self) -> u32 {
        self.time
            .saturating_add(self.heard.elapsed().as_secs() as u32)
    }
}

/// What came back to a v3 request.
enum Answer {
    Response(i64, Bindings),
    Report(Option<Refused>, AgentEngine),
}

/// Sends `msg` and waits for an answer `accept` takes, `retries` more times after a timeout.
fn exchange<T>(
    socket: &UdpSocket,
    host: &Host,
    ctx: &InputContext,
    msg: &[u8],
    mut accept: impl FnMut(&[u8]) -> Option<T>,
) -> Result<T, String> {
    let to = crate::net::address(&host.address, host.port);
    let mut buf = vec![0u8; 65536];
    for _ in 0..=host.retries {
        if ctx.is_stopping() {
            return Err("the pipeline is stopping".into());
        }
        socket
            .send_to(msg, &to)
            .map_err(|e| format!("error sending snmp request to target {to}: {e}"))?;
        let deadline = Instant::now() + host.timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            socket
                .set_read_timeout(Some(left))
                .map_err(|e| e.to_string())?;
            let n = match socket.recv_from(&mut buf) {
                Ok((n, _)) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    break
                }
                Err(e) => return Err(format!("error receiving from {to}: {e}")),
            };
            // An answer to an earlier, abandoned request is skipped.
            if let Some(t) = accept(&buf[..n]) {
                return Ok(t);
            }
        }
    }
    Err(format!("timeout sending snmp request to target {to}"))
}

impl Poll<'_> {
    /// Sends a request and waits for its Response, `retries` more times after a timeout.
    fn ask(
        &mut self,
        tag: u8,
        params: (i64, i64),
        oids: &[Vec<u32>],
    ) -> Result<(i64, Bindings), String> {
        if self.host.version == 3 {
            return self.ask_v3(tag, params, oids);
        }
        let id = self.next_id();
        let msg = ber::request(
            self.host.version,
            self.host.community.as_bytes(),
            tag,
            id,
            params,
            oids,
        );
        exchange(
            self.socket,
            self.host,
            self.ctx,
            &msg,
            |data| match ber::decode_response(data) {
                Ok((rid, status, _, bindings)) if rid == id => Some((status, bindings)),
                _ => None,
            },
        )
    }

    fn next_id(&mut self) -> i64 {
        *self.request_id = (*self.request_id + 1) & 0x7fff_ffff;
        *self.request_id
    }

    /// An SNMPv3 request: the agent's engine discovered first (and again when it says it is
    /// unknown), its clock followed when it reports the request out of its time window.
    fn ask_v3(
        &mut self,
        tag: u8,
        params: (i64, i64),
        oids: &[Vec<u32>],
    ) -> Result<(i64, Bindings), String> {
        for _ in 0..4 {
            if self.engine.is_none() {
                *self.engine = Some(self.discover()?);
            }
            let id = self.next_id();
            let user = self.user.as_deref_mut().expect("v3 hosts have a user");
            let e = self.engine.as_ref().expect("just discovered");
            let name = user.name.clone();
            let out = usm::Outgoing {
                msg_id: id,
                reportable: true,
                level: user.level,
                engine_id: &e.id,
                boots: e.boots,
                time: e.time(),
                user: &name,
            };
            let pdu = ber::request_pdu(tag, id, params, oids);
            let msg = user.seal(&out, ber::scoped_pdu(&e.id, b"", pdu));
            let agent = e.id.clone();
            let answer = exchange(self.socket, self.host, self.ctx, &msg, |data| {
                let v = ber::decode_v3(data).ok()?;
                if v.msg_id != id {
                    return None;
                }
                let plain = if Level::of_flags(v.flags) == Level::NoAuthNoPriv {
                    v.data.to_vec()
                } else {
                    user.verify(&v, data).ok()?
                };
                let s = ber::scoped(&plain).ok()?;
                match s.tag {
                    // A Response only as secure as asked, from the agent's engine.
                    0xa2 if Level::of_flags(v.flags) >= user.level && v.engine_id == agent => {
                        let (rid, status, _, bindings) = ber::response_pdu(s.body).ok()?;
                        (rid == id).then_some(Answer::Response(status, bindings))
                    }
                    0xa8 => {
                        let (_, _, _, bindings) = ber::response_pdu(s.body).ok()?;
                        let why = bindings.first().and_then(|(o, _)| Refused::from_oid(o));
                        Some(Answer::Report(why, AgentEngine::heard(&v)))
                    }
                    _ => None,
                }
            })?;
            match answer {
                Answer::Response(status, bindings) => return Ok((status, bindings)),
                Answer::Report(Some(Refused::NotInTimeWindow), heard) => {
                    *self.engine = Some(heard);
                }
                Answer::Report(Some(Refused::UnknownEngine), _) => *self.engine = None,
                Answer::Report(why, _) => {
                    return Err(format!(
                        "the agent at {} refused the request: {}",
                        self.host.spec,
                        why.map_or("an unknown report", Refused::text)
                    ))
                }
            }
        }
        Err(format!(
            "the agent at {} kept refusing the request (its engine ID or clock)",
            self.host.spec
        ))
    }

    /// Learns the agent's engine ID (and clock): an empty, unauthenticated request that it
    /// answers with an unknownEngineIDs Report.
    fn discover(&mut self) -> Result<AgentEngine, String> {
        let id = self.next_id();
        let user = self.user.as_deref_mut().expect("v3 hosts have a user");
        let out = usm::Outgoing {
            msg_id: id,
            reportable: true,
            level: Level::NoAuthNoPriv,
            engine_id: b"",
            boots: 0,
            time: 0,
            user: b"",
        };
        let msg = user.seal(
            &out,
            ber::scoped_pdu(b"", b"", ber::request_pdu(0xa0, id, (0, 0), &[])),
        );
        exchange(self.socket, self.host, self.ctx, &msg, |data| {
            let v = ber::decode_v3(data).ok()?;
            (v.msg_id == id && !v.engine_id.is_empty()).then(|| AgentEngine::heard(&v))
        })
    }

    /// The subtree under `root`, in order: GETNEXT (v1) or GETBULK of 10 (v2c) until an OID
    /// leaves it or the agent says the view ended.
    fn walk(&mut self, root: &[u32]) -> Result<Bindings, (String, Bindings)> {
        let mut out: Bindings = Vec::new();
        let mut last = root.to_vec();
        loop {
            let (tag, params) = if self.host.version == 0 {
                (0xa1, (0, 0))
            } else {
                (0xa5, (0, 10))
            };
            let (status, bindings) = match self.ask(tag, params, std::slice::from_ref(&last)) {
                Ok(r) => r,
                Err(e) => return Err((e, out)),
            };
            if status == 2 && self.host.version == 0 {
                // v1's noSuchName: the end of the MIB.
                return Ok(out);
            }
            if status != 0 {
                return Err((
                    format!("error status {status} from {}", self.host.spec),
                    out,
                ));
            }
            if bindings.is_empty() {
                return Ok(out);
            }
            for (oid, v) in bindings {
                let ended = matches!(
                    v,
                    SnmpValue::EndOfMibView | SnmpValue::NoSuchObject | SnmpValue::NoSuchInstance
                );
                if ended || !oid.starts_with(root) {
                    return Ok(out);
                }
                if oid <= last {
                    return Err((
                        "Agent did not return variable bindings in lexicographic order.".into(),
                        out,
                    ));
                }
                last = oid.clone();
                out.push((oid, v));
            }
        }
    }
}

impl SnmpInput {
    fn poll(&self, p: &mut Poll) -> Option<Event> {
        let mut fields = Map::new();
        let mut failed = false;
        let mut fail = |what: &str, e: &str| {
            self.counters.add("failed_operations", 1);
            tracing::error!(host = %p.host.spec, "snmp input: error invoking `{what}` operation: {e}, ignoring");
            failed = true;
        };
        if !self.get.is_empty() {
            match p.ask(0xa0, (0, 0), &self.get) {
                Ok((_, bindings)) => {
                    for (oid, v) in bindings {
                        fields.insert(
                            Key::from(self.mapping.mib.name(&oid).as_str()),
                            self.mapping.value(&v),
                        );
                    }
                }
                Err(e) => fail("get", &e),
            }
        }
        for root in &self.walk {
            let got = match p.walk(root) {
                Ok(b) => b,
                Err((e, partial)) => {
                    fail("walk", &e);
                    if self.partial {
                        partial
                    } else {
                        Vec::new()
                    }
                }
            };
            for (oid, v) in got {
                fields.insert(
                    Key::from(self.mapping.mib.name(&oid).as_str()),
                    self.mapping.value(&v),
                );
            }
        }
        for (name, columns) in &self.tables {
            // Rows by index (its arcs, in order), each with its columns' values.
            let mut rows: std::collections::BTreeMap<Vec<u32>, Map> = Default::default();
            let mut ok = true;
            for col in columns {
                let got = match p.walk(col) {
                    Ok(b) => b,
                    Err((e, partial)) => {
                        fail("table", &e);
                        ok = false;
                        partial
                    }
                };
                let key = Key::from(self.mapping.mib.name(col).as_str());
                for (oid, v) in got {
                    let index = oid[col.len()..].to_vec();
                    rows.entry(index)
                        .or_default()
                        .insert(key.clone(), self.mapping.value(&v));
                }
            }
            if ok || self.partial {
                let rows: Vec<Value> = rows
                    .into_iter()
                    .map(|(index, mut row)| {
                        row.insert(Key::from("index"), Value::String(dotted(&index).into()));
                        Value::Object(row)
                    })
                    .collect();
                fields.insert(Key::from(name.as_str()), Value::Array(rows));
            }
        }
        if fields.is_empty() && !failed {
            tracing::debug!(host = %p.host.spec, "snmp input: No SNMP data retrieved");
            return None;
        }
        let mut e = Event::new();
        self.mapping.put(&mut e, fields);
        let h = p.host;
        let f = &self.fields;
        e.set(&f.protocol, Value::String("udp".into()));
        e.set(&f.address, Value::String(h.address.as_str().into()));
        e.set(&f.port, Value::String(h.port.to_string().into()));
        e.set(&f.community, Value::String(h.community.as_str().into()));
        if let Some(host) = &f.host {
            e.set(host, Value::String(h.address.as_str().into()));
        }
        if failed {
            for t in &self.tags {
                e.add_tag(t);
            }
        }
        Some(e)
    }
}
