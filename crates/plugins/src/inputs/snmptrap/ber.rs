//! SNMP's messages in ASN.1 BER, as far as traps need them: the message (version, community,
//! PDU), the v1 Trap-PDU and the v2c SNMPv2-Trap/InformRequest PDUs, their variable bindings
//! and the values SNMP defines (RFC 1157, RFC 3416, RFC 2578); and the Response an inform is
//! answered with.

/// A value in a variable binding.
#[derive(Debug, Clone, PartialEq)]
pub enum SnmpValue {
    Integer(i64),
    OctetString(Vec<u8>),
    Null,
    Oid(Vec<u32>),
    IpAddress([u8; 4]),
    Counter32(u32),
    Gauge32(u32),
    TimeTicks(u32),
    Opaque(Vec<u8>),
    Counter64(u64),
    NoSuchObject,
    NoSuchInstance,
    EndOfMibView,
}

/// A decoded message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// 0: v1, 1: v2c, 3: v3.
    pub version: i64,
    /// The community, or with v3 the user name.
    pub community: Vec<u8>,
    /// v3's contextEngineID and contextName.
    pub context: Option<(Vec<u8>, Vec<u8>)>,
    pub pdu: Pdu,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Pdu {
    /// v1's Trap-PDU.
    TrapV1 {
        enterprise: Vec<u32>,
        agent_addr: [u8; 4],
        generic_trap: i64,
        specific_trap: i64,
        timestamp: u32,
        bindings: Vec<(Vec<u32>, SnmpValue)>,
    },
    /// v2c's SNMPv2-Trap (`inform` false) or InformRequest (`inform` true).
    TrapV2 {
        inform: bool,
        request_id: i64,
        error_status: i64,
        error_index: i64,
        bindings: Vec<(Vec<u32>, SnmpValue)>,
    },
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    /// One TLV: (tag, contents); the reader moves past it.
    fn tlv(&mut self) -> Result<(u8, &'a [u8]), String> {
        let b = self.b;
        if b.len() < 2 {
            return Err("a BER value cut short".into());
        }
        let tag = b[0];
        if tag & 0x1f == 0x1f {
            return Err(format!("a multi-byte tag ({tag:#04x})"));
        }
        let (len, head) = match b[1] {
            l if l < 0x80 => (l as usize, 2),
            0x80 => return Err("an indefinite length".into()),
            l => {
                let n = (l & 0x7f) as usize;
                if n > 4 || b.len() < 2 + n {
                    return Err("a length of more than 4 bytes, or cut short".into());
                }
                (
                    b[2..2 + n]
                        .iter()
                        .fold(0usize, |a, x| (a << 8) | *x as usize),
                    2 + n,
                )
            }
        };
        let end = head
            .checked_add(len)
            .filter(|e| *e <= b.len())
            .ok_or("a BER value longer than its message")?;
        self.b = &b[end..];
        Ok((tag, &b[head..end]))
    }

    fn expect(&mut self, tag: u8, what: &str) -> Result<&'a [u8], String> {
        let (t, c) = self.tlv()?;
        if t != tag {
            return Err(format!(
                "{what}: tag {t:#04x} where {tag:#04x} was expected"
            ));
        }
        Ok(c)
    }

    fn int(&mut self, what: &str) -> Result<i64, String> {
        integer(self.expect(0x02, what)?)
    }
}

fn integer(c: &[u8]) -> Result<i64, String> {
    if c.is_empty() || c.len() > 8 {
        return Err(format!("an INTEGER of {} bytes", c.len()));
    }
    let mut v: i64 = if c[0] & 0x80 != 0 { -1 } else { 0 };
    for b in c {
        v = (v << 8) | *b as i64;
    }
    Ok(v)
}

fn unsigned(c: &[u8]) -> Result<u64, String> {
    // A leading zero byte keeps the top bit from reading as a sign.
    let c = if c.len() > 1 && c[0] == 0 { &c[1..] } else { c };
    if c.is_empty() || c.len() > 8 {
        return Err(format!("an unsigned value of {} bytes", c.len()));
    }
    Ok(c.iter().fold(0u64, |a, x| (a << 8) | *x as u64))
}

fn oid(c: &[u8]) -> Result<Vec<u32>, String> {
    if c.is_empty() {
        return Err("an empty OBJECT IDENTIFIER".into());
    }
    let mut out = Vec::with_capacity(c.len() + 1);
    let mut v: u64 = 0;
    let mut first = true;
    for (i, b) in c.iter().enumerate() {
        v = (v << 7) | (b & 0x7f) as u64;
        if v > u32::MAX as u64 {
            return Err("an OBJECT IDENTIFIER arc past 32 bits".into());
        }
        if b & 0x80 == 0 {
            if first {
                let (a, rest) = match v {
                    0..=39 => (0, v),
                    40..=79 => (1, v - 40),
                    _ => (2, v - 80),
                };
                out.push(a);
                out.push(rest as u32);
                first = false;
            } else {
                out.push(v as u32);
            }
            v = 0;
        } else if i == c.len() - 1 {
            return Err("an OBJECT IDENTIFIER cut inside an arc".into());
        }
    }
    Ok(out)
}

fn value(tag: u8, c: &[u8]) -> Result<SnmpValue, String> {
    let u32_of = |c: &[u8]| -> Result<u32, String> {
        let v = unsigned(c)?;
        u32::try_from(v).map_err(|_| "a 32-bit value past 32 bits".to_owned())
    };
    Ok(match tag {
        0x02 => SnmpValue::Integer(integer(c)?),
        0x04 => SnmpValue::OctetString(c.to_vec()),
        0x05 => SnmpValue::Null,
        0x06 => SnmpValue::Oid(oid(c)?),
        0x40 => SnmpValue::IpAddress(
            c.try_into()
                .map_err(|_| "an IpAddress that is not 4 bytes")?,
        ),
        0x41 => SnmpValue::Counter32(u32_of(c)?),
        0x42 => SnmpValue::Gauge32(u32_of(c)?),
        0x43 => SnmpValue::TimeTicks(u32_of(c)?),
        0x44 => SnmpValue::Opaque(c.to_vec()),
        0x46 => SnmpValue::Counter64(unsigned(c)?),
        0x80 => SnmpValue::NoSuchObject,
        0x81 => SnmpValue::NoSuchInstance,
        0x82 => SnmpValue::EndOfMibView,
        t => return Err(format!("a value of unknown type {t:#04x}")),
    })
}

fn bindings(c: &[u8]) -> Result<Vec<(Vec<u32>, SnmpValue)>, String> {
    let mut r = Reader { b: c };
    let mut out = Vec::new();
    while !r.b.is_empty() {
        let mut vb = Reader {
            b: r.expect(0x30, "a variable binding")?,
        };
        let name = oid(vb.expect(0x06, "a variable binding's name")?)?;
        let (t, v) = vb.tlv()?;
        out.push((name, value(t, v)?));
    }
    Ok(out)
}

/// The version of a message (0: v1, 1: v2c, 3: v3), read without decoding the rest.
pub fn version(data: &[u8]) -> Result<i64, String> {
    let mut top = Reader { b: data };
    let mut m = Reader {
        b: top.expect(0x30, "the message")?,
    };
    m.int("the version")
}

/// Decodes one v1/v2c datagram.
pub fn decode(data: &[u8]) -> Result<Message, String> {
    let mut top = Reader { b: data };
    let mut m = Reader {
        b: top.expect(0x30, "the message")?,
    };
    let version = m.int("the version")?;
    if version != 0 && version != 1 {
        return Err(format!("SNMP version number {version}"));
    }
    let community = m.expect(0x04, "the community")?.to_vec();
    let (tag, body) = m.tlv()?;
    Ok(Message {
        version,
        community,
        context: None,
        pdu: trap_pdu(tag, body)?,
    })
}

/// A trap PDU: v1's Trap-PDU (`0xa4`), SNMPv2-Trap (`0xa7`) or InformRequest (`0xa6`).
pub fn trap_pdu(tag: u8, body: &[u8]) -> Result<Pdu, String> {
    let mut p = Reader { b: body };
    Ok(match tag {
        0xa4 => {
            let enterprise = oid(p.expect(0x06, "the enterprise")?)?;
            let agent_addr = p
                .expect(0x40, "the agent address")?
                .try_into()
                .map_err(|_| "an agent address that is not 4 bytes")?;
            let generic_trap = p.int("the generic trap")?;
            let specific_trap = p.int("the specific trap")?;
            let timestamp = unsigned(p.expect(0x43, "the time stamp")?)? as u32;
            let bindings = bindings(p.expect(0x30, "the variable bindings")?)?;
            Pdu::TrapV1 {
                enterprise,
                agent_addr,
                generic_trap,
                specific_trap,
                timestamp,
                bindings,
            }
        }
        0xa7 | 0xa6 => Pdu::TrapV2 {
            inform: tag == 0xa6,
            request_id: p.int("the request id")?,
            error_status: p.int("the error status")?,
            error_index: p.int("the error index")?,
            bindings: bindings(p.expect(0x30, "the variable bindings")?)?,
        },
        t => return Err(format!("a PDU of type {t:#04x}, not a trap")),
    })
}

/// An SNMPv3 message as read (RFC 3412, RFC 3414): its header, its USM security parameters,
/// and where its parts lie.
#[derive(Debug)]
pub struct V3<'a> {
    pub msg_id: i64,
    pub flags: u8,
    pub engine_id: &'a [u8],
    pub boots: i64,
    pub time: i64,
    pub user: &'a [u8],
    /// Where msgAuthenticationParameters' contents lie in the datagram.
    pub auth_params: std::ops::Range<usize>,
    pub priv_params: &'a [u8],
    /// The ScopedPDU (its whole SEQUENCE) or, with privacy, its ciphertext.
    pub data: &'a [u8],
}

/// Decodes an SNMPv3 message's framing (the USM security model only).
pub fn decode_v3(data: &[u8]) -> Result<V3<'_>, String> {
    let mut top = Reader { b: data };
    let mut m = Reader {
        b: top.expect(0x30, "the message")?,
    };
    if m.int("the version")? != 3 {
        return Err("not an SNMPv3 message".into());
    }
    let mut h = Reader {
        b: m.expect(0x30, "the header")?,
    };
    let msg_id = h.int("msgID")?;
    h.int("msgMaxSize")?;
    let flags = match h.expect(0x04, "msgFlags")? {
        [f] => *f,
        _ => return Err("msgFlags that is not one byte".into()),
    };
    if flags & 3 == 2 {
        return Err("msgFlags asking for privacy without authentication".into());
    }
    let model = h.int("msgSecurityModel")?;
    if model != 3 {
        return Err(format!("security model {model}, not USM (3)"));
    }
    let mut outer = Reader {
        b: m.expect(0x04, "msgSecurityParameters")?,
    };
    let mut u = Reader {
        b: outer.expect(0x30, "the USM security parameters")?,
    };
    let engine_id = u.expect(0x04, "msgAuthoritativeEngineID")?;
    let boots = u.int("msgAuthoritativeEngineBoots")?;
    let time = u.int("msgAuthoritativeEngineTime")?;
    let user = u.expect(0x04, "msgUserName")?;
    let auth = u.expect(0x04, "msgAuthenticationParameters")?;
    let start = auth.as_ptr() as usize - data.as_ptr() as usize;
    let priv_params = u.expect(0x04, "msgPrivacyParameters")?;
    let rest = m.b;
    let (tag, contents) = m.tlv()?;
    let data_part = match tag {
        0x30 if flags & 2 == 0 => &rest[..rest.len() - m.b.len()],
        0x04 if flags & 2 != 0 => contents,
        t => return Err(format!("msgData of tag {t:#04x} for msgFlags {flags:#04x}")),
    };
    Ok(V3 {
        msg_id,
        flags,
        engine_id,
        boots,
        time,
        user,
        auth_params: start..start + auth.len(),
        priv_params,
        data: data_part,
    })
}

/// A ScopedPDU as read.
#[derive(Debug)]
pub struct Scoped<'a> {
    pub context_engine_id: &'a [u8],
    pub context_name: &'a [u8],
    pub tag: u8,
    pub body: &'a [u8],
}

/// Reads a ScopedPDU: a SEQUENCE (what follows it, a cipher's padding, is ignored).
pub fn scoped(data: &[u8]) -> Result<Scoped<'_>, String> {
    let mut top = Reader { b: data };
    let mut s = Reader {
        b: top.expect(0x30, "the ScopedPDU")?,
    };
    let context_engine_id = s.expect(0x04, "the contextEngineID")?;
    let context_name = s.expect(0x04, "the contextName")?;
    let (tag, body) = s.tlv()?;
    Ok(Scoped {
        context_engine_id,
        context_name,
        tag,
        body,
    })
}

fn put_len(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = (len as u32).to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (4 - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
}

fn tlv(tag: u8, contents: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    put_len(&mut out, contents.len());
    out.extend_from_slice(contents);
    out
}

fn int_bytes(v: i64) -> Vec<u8> {
    let b = v.to_be_bytes();
    let mut start = 0;
    while start < 7
        && ((b[start] == 0 && b[start + 1] & 0x80 == 0)
            || (b[start] == 0xff && b[start + 1] & 0x80 != 0))
    {
        start += 1;
    }
    b[start..].to_vec()
}

fn oid_bytes(o: &[u32]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut arcs = vec![o.first().copied().unwrap_or(0) * 40 + o.get(1).copied().unwrap_or(0)];
    arcs.extend_from_slice(o.get(2..).unwrap_or(&[]));
    for a in arcs {
        let mut groups = vec![(a & 0x7f) as u8];
        let mut v = a >> 7;
        while v > 0 {
            groups.push(0x80 | (v & 0x7f) as u8);
            v >>= 7;
        }
        groups.reverse();
        out.extend(groups);
    }
    out
}

fn value_bytes(v: &SnmpValue) -> Vec<u8> {
    match v {
        SnmpValue::Integer(i) => tlv(0x02, &int_bytes(*i)),
        SnmpValue::OctetString(s) => tlv(0x04, s),
        SnmpValue::Null => tlv(0x05, &[]),
        SnmpValue::Oid(o) => tlv(0x06, &oid_bytes(o)),
        SnmpValue::IpAddress(a) => tlv(0x40, a),
        SnmpValue::Counter32(n) => tlv(0x41, &int_bytes(*n as i64)),
        SnmpValue::Gauge32(n) => tlv(0x42, &int_bytes(*n as i64)),
        SnmpValue::TimeTicks(n) => tlv(0x43, &int_bytes(*n as i64)),
        SnmpValue::Opaque(s) => tlv(0x44, s),
        SnmpValue::Counter64(n) => {
            let mut b = vec![0];
            b.extend_from_slice(&n.to_be_bytes());
            let skip = b.iter().take_while(|x| **x == 0).count().min(8);
            let skip = if b[skip] & 0x80 != 0 { skip - 1 } else { skip };
            tlv(0x46, &b[skip..])
        }
        SnmpValue::NoSuchObject => tlv(0x80, &[]),
        SnmpValue::NoSuchInstance => tlv(0x81, &[]),
        SnmpValue::EndOfMibView => tlv(0x82, &[]),
    }
}

/// A variable-bindings list.
fn binding_list(bindings: &[(Vec<u32>, SnmpValue)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, v) in bindings {
        let mut b = tlv(0x06, &oid_bytes(name));
        b.extend(value_bytes(v));
        out.extend(tlv(0x30, &b));
    }
    tlv(0x30, &out)
}

/// A PDU of the v2 shape (request id, two integers, bindings) with this tag.
pub fn pdu(
    tag: u8,
    request_id: i64,
    (a, b): (i64, i64),
    bindings: &[(Vec<u32>, SnmpValue)],
) -> Vec<u8> {
    let mut p = tlv(0x02, &int_bytes(request_id));
    p.extend(tlv(0x02, &int_bytes(a)));
    p.extend(tlv(0x02, &int_bytes(b)));
    p.extend(binding_list(bindings));
    tlv(tag, &p)
}

/// A v1/v2c message around a PDU.
fn message(version: i64, community: &[u8], pdu: Vec<u8>) -> Vec<u8> {
    let mut msg = tlv(0x02, &int_bytes(version));
    msg.extend(tlv(0x04, community));
    msg.extend(pdu);
    tlv(0x30, &msg)
}

/// A ScopedPDU around a PDU.
pub fn scoped_pdu(context_engine_id: &[u8], context_name: &[u8], pdu: Vec<u8>) -> Vec<u8> {
    let mut s = tlv(0x04, context_engine_id);
    s.extend(tlv(0x04, context_name));
    s.extend(pdu);
    tlv(0x30, &s)
}

pub fn octet_string(b: &[u8]) -> Vec<u8> {
    tlv(0x04, b)
}

/// UsmSecurityParameters with `auth_len` zero bytes where the MAC goes.
pub fn usm_params(
    engine_id: &[u8],
    boots: u32,
    time: u32,
    user: &[u8],
    auth_len: usize,
    priv_params: &[u8],
) -> Vec<u8> {
    let mut p = tlv(0x04, engine_id);
    p.extend(tlv(0x02, &int_bytes(boots as i64)));
    p.extend(tlv(0x02, &int_bytes(time as i64)));
    p.extend(tlv(0x04, user));
    p.extend(tlv(0x04, &vec![0; auth_len]));
    p.extend(tlv(0x04, priv_params));
    tlv(0x30, &p)
}

/// An SNMPv3 message: header, security parameters (`usm_params`), and msgData (a ScopedPDU or
/// the OCTET STRING of its ciphertext).
pub fn message_v3(msg_id: i64, max_size: i64, flags: u8, params: &[u8], data: Vec<u8>) -> Vec<u8> {
    let mut h = tlv(0x02, &int_bytes(msg_id));
    h.extend(tlv(0x02, &int_bytes(max_size)));
    h.extend(tlv(0x04, &[flags]));
    h.extend(tlv(0x02, &int_bytes(3)));
    let mut m = tlv(0x02, &int_bytes(3));
    m.extend(tlv(0x30, &h));
    m.extend(tlv(0x04, params));
    m.extend(data);
    tlv(0x30, &m)
}

/// The Response (RFC 3416) that acknowledges an InformRequest: the same request id and
/// bindings, no error.
pub fn inform_response(m: &Message) -> Option<Vec<u8>> {
    inform_ack(m).map(|p| message(m.version, &m.community, p))
}

/// The Response PDU of [`inform_response`], for a v3 message to carry.
pub fn inform_ack(m: &Message) -> Option<Vec<u8>> {
    let Pdu::TrapV2 {
        inform: true,
        request_id,
        bindings,
        ..
    } = &m.pdu
    else {
        return None;
    };
    Some(pdu(0xa2, *request_id, (0, 0), bindings))
}

/// A request of the `snmp` input: GetRequest (`0xa0`), GetNextRequest (`0xa1`) or
/// GetBulkRequest (`0xa5`, with its non-repeaters and max-repetitions in the error fields), each
/// OID with a NULL value.
pub fn request(
    version: i64,
    community: &[u8],
    tag: u8,
    request_id: i64,
    params: (i64, i64),
    oids: &[Vec<u32>],
) -> Vec<u8> {
    message(
        version,
        community,
        request_pdu(tag, request_id, params, oids),
    )
}

/// The PDU of [`request`], for a v3 message to carry.
pub fn request_pdu(tag: u8, request_id: i64, params: (i64, i64), oids: &[Vec<u32>]) -> Vec<u8> {
    let bindings: Vec<(Vec<u32>, SnmpValue)> =
        oids.iter().map(|o| (o.clone(), SnmpValue::Null)).collect();
    pdu(tag, request_id, params, &bindings)
}

/// A Response: (request id, error status, error index, bindings).
pub type Response = (i64, i64, i64, Vec<(Vec<u32>, SnmpValue)>);

/// Decodes a v1/v2c Response PDU.
pub fn decode_response(data: &[u8]) -> Result<Response, String> {
    let mut top = Reader { b: data };
    let mut m = Reader {
        b: top.expect(0x30, "the message")?,
    };
    m.int("the version")?;
    m.expect(0x04, "the community")?;
    response_pdu(m.expect(0xa2, "a Response")?)
}

/// A Response's (or a Report's) contents.
pub fn response_pdu(body: &[u8]) -> Result<Response, String> {
    let mut p = Reader { b: body };
    let id = p.int("the request id")?;
    let status = p.int("the error status")?;
    let index = p.int("the error index")?;
    let b = bindings(p.expect(0x30, "the variable bindings")?)?;
    Ok((id, status, index, b))
}

/// Encodes a trap (a round trip of the decoder, in the tests).
#[cfg(test)]
pub fn encode(m: &Message) -> Vec<u8> {
    let p = match &m.pdu {
        Pdu::TrapV1 {
            enterprise,
            agent_addr,
            generic_trap,
            specific_trap,
            timestamp,
            bindings,
        } => {
            let mut p = tlv(0x06, &oid_bytes(enterprise));
            p.extend(tlv(0x40, agent_addr));
            p.extend(tlv(0x02, &int_bytes(*generic_trap)));
            p.extend(tlv(0x02, &int_bytes(*specific_trap)));
            p.extend(tlv(0x43, &int_bytes(*timestamp as i64)));
            p.extend(binding_list(bindings));
            tlv(0xa4, &p)
        }
        Pdu::TrapV2 {
            inform,
            request_id,
            error_status,
            error_index,
            bindings,
        } => pdu(
            if *inform { 0xa6 } else { 0xa7 },
            *request_id,
            (*error_status, *error_index),
            bindings,
        ),
    };
    message(m.version, &m.community, p)
}
