//! What a template's fields are: the NetFlow v9 and IPFIX tables (`v9.tsv`, `ipfix.tsv`: id,
//! type, name, as Logstash's codec names them), each field's wire form ([`Kind`]), how it is
//! read into a value, and how a template is written to and read from the template cache file.

use std::collections::HashMap;
use std::sync::OnceLock;

use sluice_event::{Key, Map, Value};

use super::Cursor;

/// A field's wire form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Big-endian unsigned of this many bytes.
    Uint(usize),
    /// Big-endian signed of this many bytes.
    Int(usize),
    Float,
    Double,
    Ip4,
    Ip6,
    Mac,
    /// Fixed length, trailing NULs cut.
    Str(usize),
    /// Length-prefixed (1 byte, or 255 then 2 bytes).
    VarStr,
    VarSkip,
    Skip(usize),
    /// Lower-case hex.
    OctetArray(usize),
    /// Cisco ASA's 12-byte ACL id.
    AclIdAsa,
    ForwardingStatus,
    MplsLabelStack,
    /// RFC 6759's application id, of this many bytes.
    ApplicationId(usize),
}

/// A template field: its name (none for skipped bytes) and wire form.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub name: Option<Key>,
    pub kind: Kind,
}

/// (type, name) by id.
type Table = HashMap<u16, (&'static str, &'static str)>;

/// (type, name) by enterprise and id.
type VendorTable = HashMap<(u32, u16), (&'static str, &'static str)>;

fn parse_table(text: &'static str) -> Table {
    text.lines()
        .filter_map(|l| {
            let mut p = l.split('\t');
            let id = p.next()?.parse().ok()?;
            Some((id, (p.next()?, p.next()?)))
        })
        .collect()
}

fn v9_table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| parse_table(include_str!("v9.tsv")))
}

fn ipfix_table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| parse_table(include_str!("ipfix.tsv")))
}

/// Vendors' elements (`ipfix_vendors.tsv`: enterprise, id, type, name): Cisco, Nokia,
/// Netscaler, YAF/CERT, VMware, Procera, Barracuda, IXIA, Gigamon and others, as Logstash's
/// codec names them.
fn vendor_table() -> &'static VendorTable {
    static T: OnceLock<VendorTable> = OnceLock::new();
    T.get_or_init(|| {
        include_str!("ipfix_vendors.tsv")
            .lines()
            .filter_map(|l| {
                let mut p = l.split('\t');
                let pen = p.next()?.parse().ok()?;
                let id = p.next()?.parse().ok()?;
                Some(((pen, id), (p.next()?, p.next()?)))
            })
            .collect()
    })
}

/// RFC 5103's reverse elements (PEN 29305): `reverse` and the element's name capitalised.
fn reverse_names() -> &'static HashMap<u16, String> {
    static T: OnceLock<HashMap<u16, String>> = OnceLock::new();
    T.get_or_init(|| {
        ipfix_table()
            .iter()
            .filter(|(_, (t, _))| *t != "skip")
            .map(|(id, (_, name))| {
                let mut c = name.chars();
                let first = c.next().map(|f| f.to_ascii_uppercase()).unwrap_or_default();
                (*id, format!("reverse{first}{}", c.as_str()))
            })
            .collect()
    })
}

/// A v9 field, by type and template length; `None` when the table does not know it.
pub fn v9(id: u16, len: u16) -> Option<Spec> {
    let (ty, name) = *v9_table().get(&id)?;
    let l = len as usize;
    let kind = match ty {
        "skip" => Kind::Skip(l),
        "uint" | "uint8" | "uint16" | "uint24" | "uint32" | "uint64" => Kind::Uint(l),
        "string" if len == 65535 => Kind::VarStr,
        "string" => Kind::Str(l),
        "application_id" => Kind::ApplicationId(l),
        other => fixed(other)?,
    };
    Some(spec(name, kind))
}

/// An IPFIX field, by enterprise, element id and template length.
pub fn ipfix(pen: u32, id: u16, len: u16) -> Option<Spec> {
    let l = len as usize;
    let (ty, name): (&str, String) = match pen {
        0 => {
            let (t, n) = *ipfix_table().get(&id)?;
            (t, n.to_owned())
        }
        29305 => {
            let (t, _) = *ipfix_table().get(&id)?;
            (t, reverse_names().get(&id)?.clone())
        }
        pen => {
            let (t, n) = *vendor_table().get(&(pen, id))?;
            (t, n.to_owned())
        }
    };
    let kind = match ty {
        "skip" if len == 65535 => Kind::VarSkip,
        "skip" => Kind::Skip(l),
        "string" if len == 65535 => Kind::VarStr,
        "string" => Kind::Str(l),
        "octetarray" if len == 65535 => return None,
        "octetarray" => Kind::OctetArray(l),
        // (Netscaler's element 538 says `uint15`: an unsigned of the template's length.)
        "uint15" | "uint16" | "uint32" | "uint64" => Kind::Uint(l),
        other => fixed(other)?,
    };
    Some(Spec {
        name: (ty != "skip").then(|| Key::from(name.as_str())),
        kind,
    })
}

fn spec(name: &str, kind: Kind) -> Spec {
    Spec {
        name: (!matches!(kind, Kind::Skip(_) | Kind::VarSkip) && name != "-")
            .then(|| Key::from(name)),
        kind,
    }
}

/// The types whose size the template does not choose.
fn fixed(ty: &str) -> Option<Kind> {
    Some(match ty {
        "uint8" => Kind::Uint(1),
        "int8" => Kind::Int(1),
        "int32" => Kind::Int(4),
        "float" => Kind::Float,
        "double" => Kind::Double,
        "ip4_addr" => Kind::Ip4,
        "ip6_addr" => Kind::Ip6,
        "mac_addr" => Kind::Mac,
        "acl_id_asa" => Kind::AclIdAsa,
        "forwarding_status" => Kind::ForwardingStatus,
        "mpls_label_stack_octets" => Kind::MplsLabelStack,
        _ => return None,
    })
}

impl Kind {
    /// Bytes on the wire (a variable-length field counts 1: its shortest).
    pub fn size(&self) -> usize {
        match self {
            Kind::Uint(n) | Kind::Int(n) | Kind::Str(n) | Kind::Skip(n) | Kind::OctetArray(n) => *n,
            Kind::ApplicationId(n) => *n,
            Kind::Float => 4,
            Kind::Double => 8,
            Kind::Ip4 | Kind::MplsLabelStack => 4,
            Kind::Ip6 => 16,
            Kind::Mac => 6,
            Kind::AclIdAsa => 12,
            Kind::ForwardingStatus | Kind::VarStr | Kind::VarSkip => 1,
        }
    }

    /// Reads one value; `None` for skipped bytes.
    pub fn read(&self, c: &mut Cursor) -> Result<Option<Value>, String> {
        let v = match self {
            Kind::Uint(n) => uint(c.take(*n)?),
            Kind::Int(n) => {
                let b = c.take(*n)?;
                let mut v: i64 = if b.first().is_some_and(|f| f & 0x80 != 0) {
                    -1
                } else {
                    0
                };
                for byte in b {
                    v = (v << 8) | *byte as i64;
                }
                Value::Int(v)
            }
            Kind::Float => {
                let b = c.take(4)?;
                Value::Float(f32::from_be_bytes([b[0], b[1], b[2], b[3]]) as f64)
            }
            Kind::Double => {
                let b = c.take(8)?;
                Value::Float(f64::from_be_bytes(b.try_into().expect("8 bytes")))
            }
            Kind::Ip4 => {
                let b = c.take(4)?;
                Value::String(format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3]).into())
            }
            Kind::Ip6 => Value::String(ip6(c.take(16)?.try_into().expect("16 bytes")).into()),
            Kind::Mac => {
                let b = c.take(6)?;
                Value::String(
                    b.iter()
                        .map(|x| format!("{x:02x}"))
                        .collect::<Vec<_>>()
                        .join(":")
                        .into(),
                )
            }
            Kind::Str(n) => text(c.take(*n)?, false),
            Kind::VarStr => {
                let n = var_len(c)?;
                text(c.take(n)?, true)
            }
            Kind::VarSkip => {
                let n = var_len(c)?;
                c.take(n)?;
                return Ok(None);
            }
            Kind::Skip(n) => {
                c.take(*n)?;
                return Ok(None);
            }
            Kind::OctetArray(n) => Value::String(hex(c.take(*n)?).into()),
            Kind::AclIdAsa => {
                let h = hex(c.take(12)?);
                Value::String(format!("{}-{}-{}", &h[0..8], &h[8..16], &h[16..24]).into())
            }
            Kind::ForwardingStatus => {
                let b = c.u8()?;
                let mut m = Map::new();
                m.insert(Key::from("status"), Value::Int((b >> 6) as i64));
                m.insert(Key::from("reason"), Value::Int((b & 0x3f) as i64));
                Value::Object(m)
            }
            Kind::MplsLabelStack => {
                let v = c.u32()?;
                let mut m = Map::new();
                m.insert(Key::from("label"), Value::Int((v >> 12) as i64));
                m.insert(Key::from("experimental"), Value::Int(((v >> 9) & 7) as i64));
                m.insert(
                    Key::from("bottom_of_stack"),
                    Value::Int(((v >> 8) & 1) as i64),
                );
                m.insert(Key::from("ttl"), Value::Int((v & 0xff) as i64));
                Value::Object(m)
            }
            Kind::ApplicationId(n) => {
                let b = c.take(*n)?;
                let class = b[0];
                let rest = &b[1..];
                let int = |s: &[u8]| s.iter().fold(0u64, |a, x| (a << 8) | *x as u64);
                let text = if class == 20 && (7..=9).contains(n) {
                    format!("20..{}..{}", int(&rest[..4]), int(&rest[4..]))
                } else {
                    format!("{class}..{}", int(rest))
                };
                Value::String(text.into())
            }
        };
        Ok(Some(v))
    }

    fn type_name(&self) -> (String, Option<serde_json::Value>) {
        use serde_json::json;
        match self {
            Kind::Uint(n) => (format!("uint{}", n * 8), None),
            Kind::Int(n) => (format!("int{}", n * 8), None),
            Kind::Float => ("float".into(), None),
            Kind::Double => ("double".into(), None),
            Kind::Ip4 => ("ip4_addr".into(), None),
            Kind::Ip6 => ("ip6_addr".into(), None),
            Kind::Mac => ("mac_addr".into(), None),
            Kind::Str(n) => (
                "string".into(),
                Some(json!({"length": n, "trim_padding": true})),
            ),
            Kind::VarStr => ("VarString".into(), None),
            Kind::VarSkip => ("VarSkip".into(), None),
            Kind::Skip(n) => ("skip".into(), Some(json!({"length": n}))),
            Kind::OctetArray(n) => ("OctetArray".into(), Some(json!({"initial_length": n}))),
            Kind::AclIdAsa => ("acl_id_asa".into(), None),
            Kind::ForwardingStatus => ("forwarding_status".into(), None),
            Kind::MplsLabelStack => ("mpls_label_stack_octets".into(), None),
            Kind::ApplicationId(n) => (format!("Application_Id{}", n * 8), None),
        }
    }
}

/// A template as the cache file keeps it (Logstash's shape): `[[type, name, options?]...]`.
pub fn save(fields: &[Spec]) -> serde_json::Value {
    serde_json::Value::Array(
        fields
            .iter()
            .map(|Spec { name, kind }| {
                let (ty, opts) = kind.type_name();
                let mut a = vec![
                    serde_json::Value::String(ty),
                    name.as_ref().map_or(serde_json::Value::Null, |n| {
                        serde_json::Value::String(n.to_string())
                    }),
                ];
                a.extend(opts);
                serde_json::Value::Array(a)
            })
            .collect(),
    )
}

/// A template from the cache file; `None` when a field is not one of ours.
pub fn load(v: &serde_json::Value) -> Option<Vec<Spec>> {
    v.as_array()?
        .iter()
        .map(|f| {
            let a = f.as_array()?;
            let ty = a.first()?.as_str()?;
            let name = a.get(1).and_then(|n| n.as_str()).map(Key::from);
            let opt = |k: &str| {
                a.get(2)
                    .and_then(|o| o.get(k))
                    .and_then(|n| n.as_u64())
                    .map(|n| n as usize)
            };
            let bits = |prefix: &str| {
                ty.strip_prefix(prefix)
                    .and_then(|b| b.parse::<usize>().ok())
                    .filter(|b| b % 8 == 0)
                    .map(|b| b / 8)
            };
            let kind = match ty {
                "string" => Kind::Str(opt("length")?),
                "VarString" => Kind::VarStr,
                "VarSkip" => Kind::VarSkip,
                "skip" => Kind::Skip(opt("length")?),
                "OctetArray" => Kind::OctetArray(opt("initial_length")?),
                _ => {
                    if let Some(n) = bits("uint") {
                        Kind::Uint(n)
                    } else if let Some(n) = bits("int") {
                        Kind::Int(n)
                    } else if let Some(n) = bits("Application_Id") {
                        Kind::ApplicationId(n)
                    } else {
                        fixed(ty)?
                    }
                }
            };
            Some(Spec { name, kind })
        })
        .collect()
}

fn uint(b: &[u8]) -> Value {
    if b.len() <= 8 {
        let v = b.iter().fold(0u64, |a, x| (a << 8) | *x as u64);
        match i64::try_from(v) {
            Ok(i) => Value::Int(i),
            Err(_) => Value::integer(v as i128),
        }
    } else if b.len() <= 16 {
        Value::integer(b.iter().fold(0i128, |a, x| (a << 8) | *x as i128))
    } else {
        Value::String(hex(b).into())
    }
}

fn var_len(c: &mut Cursor) -> Result<usize, String> {
    let n = c.u8()?;
    if n < 255 {
        Ok(n as usize)
    } else {
        Ok(c.u16()? as usize)
    }
}

/// Trailing NULs cut; a length-prefixed string's bytes beyond ASCII become `?`, as Logstash's.
fn text(b: &[u8], ascii: bool) -> Value {
    let end = b.iter().rposition(|x| *x != 0).map_or(0, |p| p + 1);
    let b = &b[..end];
    let s: String = if ascii {
        String::from_utf8_lossy(b)
            .chars()
            .map(|c| if c.is_ascii() { c } else { '?' })
            .collect()
    } else {
        // Each byte as the character of that number, as Ruby's binary strings print.
        match std::str::from_utf8(b) {
            Ok(s) => s.to_owned(),
            Err(_) => b.iter().map(|x| *x as char).collect(),
        }
    };
    Value::String(s.into())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// IPv6 as Ruby's `IPAddr#to_s` writes it (the leftmost longest run of 2+ zero groups as `::`,
/// and `::a.b.c.d` / `::ffff:a.b.c.d` for addresses that end in IPv4).
pub fn ip6(b: [u8; 16]) -> String {
    let g: Vec<u16> = b
        .chunks(2)
        .map(|p| u16::from_be_bytes([p[0], p[1]]))
        .collect();
    let (mut best, mut best_len) = (None, 0);
    let mut i = 0;
    while i < 8 {
        if g[i] == 0 {
            let start = i;
            while i < 8 && g[i] == 0 {
                i += 1;
            }
            if i - start > best_len && i - start >= 2 {
                best = Some(start);
                best_len = i - start;
            }
        } else {
            i += 1;
        }
    }
    let part = |r: &[u16]| {
        r.iter()
            .map(|x| format!("{x:x}"))
            .collect::<Vec<_>>()
            .join(":")
    };
    let s = match best {
        Some(s) => format!("{}::{}", part(&g[..s]), part(&g[s + best_len..])),
        None => part(&g),
    };
    // `::X:Y` and `::ffff:X:Y` end in dotted IPv4.
    let dotted = format!("{}.{}.{}.{}", b[12], b[13], b[14], b[15]);
    let tail: Vec<&str> = s.trim_start_matches("::").split(':').collect();
    if s.starts_with("::") && tail.len() == 2 && s != "::1" && !tail.iter().any(|t| t.is_empty()) {
        return format!("::{dotted}");
    }
    if s.starts_with("::ffff:") && tail.len() == 3 {
        return format!("::ffff:{dotted}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_as_ruby_writes_it() {
        let a = |s: &str| ip6(s.parse::<std::net::Ipv6Addr>().unwrap().octets());
        assert_eq!(a("fe80::ff:fe00:1201"), "fe80::ff:fe00:1201");
        assert_eq!(a("ff02::1:3"), "ff02::1:3");
        assert_eq!(a("2001:0:0:1::1"), "2001:0:0:1::1");
        assert_eq!(a("fe80::ff:fe00:1201:0"), "fe80::ff:fe00:1201:0");
        assert_eq!(a("1::"), "1::");
        assert_eq!(a("::1"), "::1");
        assert_eq!(a("::"), "::");
        assert_eq!(a("::c0a8:1"), "::192.168.0.1");
        assert_eq!(a("::ffff:c0a8:1"), "::ffff:192.168.0.1");
        assert_eq!(a("::1:0"), "::0.1.0.0");
        assert_eq!(a("2001:db8:0:1:0:0:0:1"), "2001:db8:0:1::1");
    }

    /// Every row of the tables is a field this codec can read.
    #[test]
    fn every_table_row_maps() {
        for (id, (t, _)) in v9_table() {
            let len = if *t == "string" { 65535 } else { 4 };
            assert!(v9(*id, len).is_some(), "v9 {id} {t}");
        }
        for (id, (t, _)) in ipfix_table() {
            assert!(ipfix(0, *id, 4).is_some(), "ipfix {id} {t}");
        }
        for ((pen, id), (t, _)) in vendor_table() {
            assert!(ipfix(*pen, *id, 4).is_some(), "ipfix {pen}/{id} {t}");
        }
    }

    #[test]
    fn tables_know_the_common_fields() {
        assert_eq!(v9(8, 4).unwrap().name.unwrap().as_str(), "ipv4_src_addr");
        assert_eq!(v9(10, 4).unwrap().kind, Kind::Uint(4));
        assert_eq!(v9(21, 4).unwrap().name.unwrap().as_str(), "last_switched");
        assert!(v9(0, 2).unwrap().name.is_none());
        assert!(v9(70, 3).is_none());
        assert_eq!(
            ipfix(0, 152, 8).unwrap().name.unwrap().as_str(),
            "flowStartMilliseconds"
        );
        assert_eq!(ipfix(0, 1, 4).unwrap().kind, Kind::Uint(4));
        assert_eq!(
            ipfix(29305, 1, 8).unwrap().name.unwrap().as_str(),
            "reverseOctetDeltaCount"
        );
        assert_eq!(
            ipfix(5951, 128, 4).unwrap().name.unwrap().as_str(),
            "netscalerRoundTripTime"
        );
        assert_eq!(ipfix(5951, 130, 65535).unwrap().kind, Kind::VarStr);
        assert_eq!(
            ipfix(6871, 179, 65535).unwrap().name.unwrap().as_str(),
            "dnsQName"
        );
        assert_eq!(ipfix(15397, 38, 4).unwrap().kind, Kind::Float);
        assert!(ipfix(5951, 1, 4).is_none());
        assert!(ipfix(12345, 1, 4).is_none());
        let fields: Vec<Spec> = [v9(8, 4), v9(0, 3), v9(82, 65535)]
            .into_iter()
            .map(Option::unwrap)
            .collect();
        assert_eq!(load(&save(&fields)).unwrap(), fields);
    }
}
