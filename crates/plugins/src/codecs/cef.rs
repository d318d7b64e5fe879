//! `cef`: ArcSight's Common Event Format, as logstash-codec-cef reads and writes it.
//!
//! Decoding: `[syslog header ]CEF:Version|Vendor|Product|Version|Signature|Name|Severity|ext`
//! (optionally wrapped in double quotes). The seven header fields (with `\|` and `\\`
//! escapes) go to `cefVersion`, `deviceVendor`, … or, with ECS, `[cef][version]`,
//! `[observer][vendor]`, `[observer][product]`, `[observer][version]`, `[event][code]`,
//! `[cef][name]`, `[event][severity]`; a syslog header before `CEF:` to `syslog` /
//! `[log][syslog][header]`. Extension `key=value` pairs (values may hold spaces; `\=`, `\\`,
//! `\n`, `\r` escapes) are named by the CEF dictionary: short keys and full names alike become
//! the full name (`src` → `sourceAddress`) or, with ECS, the ECS field (`[source][ip]`); other
//! keys are kept (`foo[0]` as `[foo][0]`). With ECS the timestamp fields (`rt`, `start`,
//! `end`, …) become timestamps: epoch milliseconds, or `MMM dd [yyyy] HH:mm:ss[.fraction]
//! [zone]` in the device's time zone (`dtz`), else `default_timezone`, else the system's (a
//! missing year is the nearest that is not more than 2 days ahead). `delimiter` (`\n` or
//! `\r\n` written as escapes) splits a stream; without it each read is one event, which must
//! not hold an unescaped newline. A payload that is not CEF becomes `message` tagged
//! `_cefparsefailure`; `raw_data_field` keeps the payload as received.
//!
//! Encoding: `CEF:0|vendor|product|version|signature|name|severity|` (sprintf'd options,
//! escaped, a default for an empty one, severity an integer 0–10 or 6) then the `fields` as
//! `key=value` by their CEF names (short keys with `reverse_mapping`), then `delimiter`.
//! `device` (`observer`, the default, or `host`) picks where device fields map with ECS. Month
//! names are read in English whatever `locale` says.

use sluice_event::{Event, FieldRef, Template, Timestamp, Value};
use sluice_pipeline::{Codec, ConfigError, Options};

use super::charset::Charset;
use super::split_lines;
use crate::ecs::Ecs;

/// A CEF dictionary entry: full name, short key (if any), ECS field, legacy name, priority,
/// whether it is a timestamp.
struct Field {
    name: String,
    key: Option<String>,
    ecs: String,
    legacy: Option<&'static str>,
    priority: u8,
    timestamp: bool,
}

/// The plugin's table. `{d}` stands for the `device` option.
#[rustfmt::skip]
const TABLE: &[(&str, &str, &str, &str, u8, bool)] = &[
    ("agentAddress", "agt", "[agent][ip]", "", 0, false),
    ("agentDnsDomain", "", "[cef][agent][registered_domain]", "", 10, false),
    ("agentHostName", "ahost", "[agent][name]", "", 0, false),
    ("agentId", "aid", "[agent][id]", "", 0, false),
    ("agentMacAddress", "amac", "[agent][mac]", "", 0, false),
    ("agentNtDomain", "", "[cef][agent][registered_domain]", "", 0, false),
    ("agentReceiptTime", "art", "[event][created]", "", 0, true),
    ("agentTimeZone", "atz", "[cef][agent][timezone]", "", 0, false),
    ("agentTranslatedAddress", "", "[cef][agent][nat][ip]", "", 0, false),
    ("agentTranslatedZoneExternalID", "", "[cef][agent][translated_zone][external_id]", "", 0, false),
    ("agentTranslatedZoneURI", "", "[cef][agent][translated_zone][uri]", "", 0, false),
    ("agentType", "at", "[agent][type]", "", 0, false),
    ("agentVersion", "av", "[agent][version]", "", 0, false),
    ("agentZoneExternalID", "", "[cef][agent][zone][external_id]", "", 0, false),
    ("agentZoneURI", "", "[cef][agent][zone][uri]", "", 0, false),
    ("applicationProtocol", "app", "[network][protocol]", "", 0, false),
    ("baseEventCount", "cnt", "[cef][base_event_count]", "", 0, false),
    ("bytesIn", "in", "[source][bytes]", "", 0, false),
    ("bytesOut", "out", "[destination][bytes]", "", 0, false),
    ("categoryDeviceType", "catdt", "[cef][device_type]", "", 0, false),
    ("customerExternalID", "", "[organization][id]", "", 0, false),
    ("customerURI", "", "[organization][name]", "", 0, false),
    ("destinationAddress", "dst", "[destination][ip]", "", 0, false),
    ("destinationDnsDomain", "", "[destination][registered_domain]", "", 10, false),
    ("destinationGeoLatitude", "dlat", "[destination][geo][location][lat]", "destinationLatitude", 0, false),
    ("destinationGeoLongitude", "dlong", "[destination][geo][location][lon]", "destinationLongitude", 0, false),
    ("destinationHostName", "dhost", "[destination][domain]", "", 0, false),
    ("destinationMacAddress", "dmac", "[destination][mac]", "", 0, false),
    ("destinationNtDomain", "dntdom", "[destination][registered_domain]", "", 0, false),
    ("destinationPort", "dpt", "[destination][port]", "", 0, false),
    ("destinationProcessId", "dpid", "[destination][process][pid]", "", 0, false),
    ("destinationProcessName", "dproc", "[destination][process][name]", "", 0, false),
    ("destinationServiceName", "", "[destination][service][name]", "", 0, false),
    ("destinationTranslatedAddress", "", "[destination][nat][ip]", "", 0, false),
    ("destinationTranslatedPort", "", "[destination][nat][port]", "", 0, false),
    ("destinationTranslatedZoneExternalID", "", "[cef][destination][translated_zone][external_id]", "", 0, false),
    ("destinationTranslatedZoneURI", "", "[cef][destination][translated_zone][uri]", "", 0, false),
    ("destinationUserId", "duid", "[destination][user][id]", "", 0, false),
    ("destinationUserName", "duser", "[destination][user][name]", "", 0, false),
    ("destinationUserPrivileges", "dpriv", "[destination][user][group][name]", "", 0, false),
    ("destinationZoneExternalID", "", "[cef][destination][zone][external_id]", "", 0, false),
    ("destinationZoneURI", "", "[cef][destination][zone][uri]", "", 0, false),
    ("deviceAction", "act", "[event][action]", "", 0, false),
    ("deviceAddress", "dvc", "[{d}][ip]", "", 0, false),
    ("deviceDirection", "", "[network][direction]", "", 0, false),
    ("deviceDnsDomain", "", "[{d}][registered_domain]", "", 10, false),
    ("deviceEventCategory", "cat", "[cef][category]", "", 0, false),
    ("deviceExternalId", "", "{external_id}", "", 0, false),
    ("deviceFacility", "", "[log][syslog][facility][code]", "", 0, false),
    ("deviceHostName", "dvchost", "{host_name}", "", 0, false),
    ("deviceInboundInterface", "", "[observer][ingress][interface][name]", "", 0, false),
    ("deviceMacAddress", "dvcmac", "[{d}][mac]", "", 0, false),
    ("deviceNtDomain", "", "[cef][nt_domain]", "", 0, false),
    ("deviceOutboundInterface", "", "[observer][egress][interface][name]", "", 0, false),
    ("devicePayloadId", "", "[cef][payload_id]", "", 0, false),
    ("deviceProcessId", "dvcpid", "[process][pid]", "", 0, false),
    ("deviceProcessName", "", "[process][name]", "", 0, false),
    ("deviceReceiptTime", "rt", "@timestamp", "", 0, true),
    ("deviceTimeZone", "dtz", "[event][timezone]", "destinationTimeZone", 0, false),
    ("deviceTranslatedAddress", "", "[host][nat][ip]", "", 0, false),
    ("deviceTranslatedZoneExternalID", "", "[cef][translated_zone][external_id]", "", 0, false),
    ("deviceTranslatedZoneURI", "", "[cef][translated_zone][uri]", "", 0, false),
    ("deviceVersion", "", "[observer][version]", "", 0, false),
    ("deviceZoneExternalID", "", "[cef][zone][external_id]", "", 0, false),
    ("deviceZoneURI", "", "[cef][zone][uri]", "", 0, false),
    ("endTime", "end", "[event][end]", "", 0, true),
    ("eventId", "", "[event][id]", "", 0, false),
    ("eventOutcome", "outcome", "[event][outcome]", "", 0, false),
    ("externalId", "", "[cef][external_id]", "", 0, false),
    ("fileCreateTime", "", "[file][created]", "", 0, false),
    ("fileHash", "", "[file][hash]", "", 0, false),
    ("fileId", "", "[file][inode]", "", 0, false),
    ("fileModificationTime", "", "[file][mtime]", "", 0, true),
    ("fileName", "fname", "[file][name]", "", 0, false),
    ("filePath", "", "[file][path]", "", 0, false),
    ("filePermission", "", "[file][group]", "", 0, false),
    ("fileSize", "fsize", "[file][size]", "", 0, false),
    ("fileType", "", "[file][extension]", "", 0, false),
    ("managerReceiptTime", "mrt", "[event][ingested]", "", 0, true),
    ("message", "msg", "[message]", "", 0, false),
    ("oldFileCreateTime", "", "[cef][old_file][created]", "", 0, true),
    ("oldFileHash", "", "[cef][old_file][hash]", "", 0, false),
    ("oldFileId", "", "[cef][old_file][inode]", "", 0, false),
    ("oldFileModificationTime", "", "[cef][old_file][mtime]", "", 0, true),
    ("oldFileName", "", "[cef][old_file][name]", "", 0, false),
    ("oldFilePath", "", "[cef][old_file][path]", "", 0, false),
    ("oldFilePermission", "", "[cef][old_file][group]", "", 0, false),
    ("oldFileSize", "", "[cef][old_file][size]", "", 0, false),
    ("oldFileType", "", "[cef][old_file][extension]", "", 0, false),
    ("rawEvent", "", "[event][original]", "", 0, false),
    ("Reason", "reason", "[event][reason]", "", 0, false),
    ("requestClientApplication", "", "[user_agent][original]", "", 0, false),
    ("requestContext", "", "[http][request][referrer]", "", 0, false),
    ("requestCookies", "", "[cef][request][cookies]", "", 0, false),
    ("requestMethod", "", "[http][request][method]", "", 0, false),
    ("requestUrl", "request", "[url][original]", "", 0, false),
    ("sourceAddress", "src", "[source][ip]", "", 0, false),
    ("sourceDnsDomain", "", "[source][registered_domain]", "", 10, false),
    ("sourceGeoLatitude", "slat", "[source][geo][location][lat]", "sourceLatitude", 0, false),
    ("sourceGeoLongitude", "slong", "[source][geo][location][lon]", "sourceLongitude", 0, false),
    ("sourceHostName", "shost", "[source][domain]", "", 0, false),
    ("sourceMacAddress", "smac", "[source][mac]", "", 0, false),
    ("sourceNtDomain", "sntdom", "[source][registered_domain]", "", 0, false),
    ("sourcePort", "spt", "[source][port]", "", 0, false),
    ("sourceProcessId", "spid", "[source][process][pid]", "", 0, false),
    ("sourceProcessName", "sproc", "[source][process][name]", "", 0, false),
    ("sourceServiceName", "", "[source][service][name]", "", 0, false),
    ("sourceTranslatedAddress", "", "[source][nat][ip]", "", 0, false),
    ("sourceTranslatedPort", "", "[source][nat][port]", "", 0, false),
    ("sourceTranslatedZoneExternalID", "", "[cef][source][translated_zone][external_id]", "", 0, false),
    ("sourceTranslatedZoneURI", "", "[cef][source][translated_zone][uri]", "", 0, false),
    ("sourceUserId", "suid", "[source][user][id]", "", 0, false),
    ("sourceUserName", "suser", "[source][user][name]", "", 0, false),
    ("sourceUserPrivileges", "spriv", "[source][user][group][name]", "", 0, false),
    ("sourceZoneExternalID", "", "[cef][source][zone][external_id]", "", 0, false),
    ("sourceZoneURI", "", "[cef][source][zone][uri]", "", 0, false),
    ("startTime", "start", "[event][start]", "", 0, true),
    ("transportProtocol", "proto", "[network][transport]", "", 0, false),
    ("type", "", "[cef][type]", "", 0, false),
];

/// The custom fields, 1 to 15 of each kind: (name, key, ECS name).
const CUSTOM: &[(&str, &str, &str)] = &[
    (
        "deviceCustomFloatingPoint",
        "cfp",
        "device_custom_floating_point",
    ),
    (
        "deviceCustomIPv6Address",
        "c6a",
        "device_custom_ipv6_address",
    ),
    ("deviceCustomNumber", "cn", "device_custom_number"),
    ("deviceCustomString", "cs", "device_custom_string"),
];

fn dictionary(device_host: bool) -> Vec<Field> {
    let d = if device_host { "host" } else { "observer" };
    let mut out: Vec<Field> = TABLE
        .iter()
        .map(|&(name, key, ecs, legacy, priority, timestamp)| Field {
            name: name.to_owned(),
            key: (!key.is_empty()).then(|| key.to_owned()),
            ecs: ecs
                .replace("{d}", d)
                .replace(
                    "{external_id}",
                    if device_host {
                        "[host][id]"
                    } else {
                        "[observer][name]"
                    },
                )
                .replace(
                    "{host_name}",
                    if device_host {
                        "[host][name]"
                    } else {
                        "[observer][hostname]"
                    },
                ),
            legacy: (!legacy.is_empty()).then_some(legacy),
            priority,
            timestamp,
        })
        .collect();
    for i in 1..=15 {
        for &(name, key, ecs) in CUSTOM {
            for (suffix, part) in [("", "value"), ("Label", "label")] {
                out.push(Field {
                    name: format!("{name}{i}{suffix}"),
                    key: Some(format!("{key}{i}{suffix}")),
                    ecs: format!("[cef][{ecs}_{i}][{part}]"),
                    legacy: None,
                    priority: 0,
                    timestamp: false,
                });
            }
        }
    }
    // Higher priority last: their mappings win, as the plugin's sort_by(&:priority) makes them.
    out.sort_by_key(|f| f.priority);
    out
}

#[derive(Clone)]
pub struct Cef {
    ecs: bool,
    decode: std::sync::Arc<std::collections::HashMap<String, String>>,
    encode: std::sync::Arc<std::collections::HashMap<String, String>>,
    timestamp_fields: std::sync::Arc<std::collections::HashSet<String>>,
    header_fields: [FieldRef; 7],
    syslog_header: FieldRef,
    vendor: Template,
    product: Template,
    version: Template,
    signature: Template,
    name: Template,
    severity: Template,
    fields: Vec<(String, FieldRef)>,
    delimiter: Option<String>,
    pending: Vec<u8>,
    zone: jiff::tz::TimeZone,
    raw_data_field: Option<FieldRef>,
    charset: Charset,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Codec>, ConfigError> {
    let template =
        |opts: &mut Options, name: &str, default: &str| -> Result<Template, ConfigError> {
            Ok(Template::parse(&opts.string_or(name, default)?))
        };
    let vendor = template(opts, "vendor", "Elasticsearch")?;
    let product = template(opts, "product", "Logstash")?;
    let version = template(opts, "version", "1.0")?;
    let signature = template(opts, "signature", "Logstash")?;
    let name = template(opts, "name", "Logstash")?;
    let severity = template(opts, "severity", "6")?;
    let fields = opts
        .string_list("fields")?
        .unwrap_or_default()
        .into_iter()
        .map(|f| {
            let r = FieldRef::parse(&f).map_err(|e| opts.error("fields", e.to_string()))?;
            Ok((f, r))
        })
        .collect::<Result<Vec<_>, ConfigError>>()?;
    let reverse = opts.boolean_or("reverse_mapping", false)?;
    let delimiter = opts
        .string("delimiter")?
        .map(|d| d.replace("\\r", "\r").replace("\\n", "\n"));
    if delimiter.as_deref() == Some("") {
        return Err(opts.error("delimiter", "must not be empty"));
    }
    let zone = match opts.string("default_timezone")? {
        Some(z) => jiff::tz::TimeZone::get(&z)
            .map_err(|e| opts.error("default_timezone", format!("unknown time zone {z:?}: {e}")))?,
        None => jiff::tz::TimeZone::system(),
    };
    opts.string("locale")?;
    let raw_data_field = match opts.string("raw_data_field")? {
        Some(f) => {
            Some(FieldRef::parse(&f).map_err(|e| opts.error("raw_data_field", e.to_string()))?)
        }
        None => None,
    };
    let device_host = opts.choice("device", &["observer", "host"], "observer")? == "host";
    let ecs = Ecs::from_options(opts)?.enabled();
    let charset = Charset::Utf8;
    let mut decode = std::collections::HashMap::new();
    let mut encode = std::collections::HashMap::new();
    let mut timestamp_fields = std::collections::HashSet::new();
    for f in dictionary(device_host) {
        let field_name = if ecs { f.ecs.clone() } else { f.name.clone() };
        if let Some(k) = &f.key {
            decode.insert(k.clone(), field_name.clone());
        }
        decode.insert(f.name.clone(), field_name.clone());
        let target = match (reverse, &f.key) {
            (true, Some(k)) => k.clone(),
            _ => f.name.clone(),
        };
        encode.insert(field_name.clone(), target.clone());
        if f.name != field_name {
            encode.insert(f.name.clone(), target.clone());
        }
        if let Some(legacy) = f.legacy {
            decode.insert(
                legacy.to_owned(),
                if ecs {
                    f.ecs.clone()
                } else {
                    legacy.to_owned()
                },
            );
            encode.insert(
                legacy.to_owned(),
                match (reverse, &f.key) {
                    (true, Some(k)) => k.clone(),
                    _ => legacy.to_owned(),
                },
            );
        }
        if ecs && f.timestamp {
            timestamp_fields.insert(field_name);
        }
    }
    let header = |disabled: &str, v1: &str| {
        FieldRef::parse(if ecs { v1 } else { disabled }).expect("valid reference")
    };
    Ok(Box::new(Cef {
        ecs,
        decode: std::sync::Arc::new(decode),
        encode: std::sync::Arc::new(encode),
        timestamp_fields: std::sync::Arc::new(timestamp_fields),
        header_fields: [
            header("cefVersion", "[cef][version]"),
            header("deviceVendor", "[observer][vendor]"),
            header("deviceProduct", "[observer][product]"),
            header("deviceVersion", "[observer][version]"),
            header("deviceEventClassId", "[event][code]"),
            header("name", "[cef][name]"),
            header("severity", "[event][severity]"),
        ],
        syslog_header: header("syslog", "[log][syslog][header]"),
        vendor,
        product,
        version,
        signature,
        name,
        severity,
        fields,
        delimiter,
        pending: Vec::new(),
        zone,
        raw_data_field,
        charset,
    }))
}

/// An extension key at the start of `s` (followed by `=`): its length.
fn key_at(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() && word(b[i]) {
        i += 1;
    }
    if i == 0 {
        return None;
    }
    while i < b.len() && b[i] == b'.' {
        let start = i + 1;
        let mut j = start;
        while j < b.len()
            && !matches!(b[j], b'.' | b'=' | b'|' | b'\\' | b'[' | b']')
            && !b[j].is_ascii_whitespace()
        {
            j += 1;
        }
        if j == start {
            break;
        }
        i = j;
    }
    if i < b.len() && b[i] == b'[' {
        let mut j = i + 1;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > i + 1 && j < b.len() && b[j] == b']' {
            i = j + 1;
        }
    }
    (i < b.len() && b[i] == b'=').then_some(i)
}

/// The value at the start of `s`: up to whitespace followed by another `key=`.
fn value_len(s: &str) -> usize {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            let mut j = i;
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            if key_at(&s[j..]).is_some() {
                return i;
            }
            i = j;
        } else {
            i += 1;
        }
    }
    i
}

fn unescape_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('\\') => out.push('\\'),
                Some('=') => out.push('='),
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                _ => {
                    out.push('\\');
                    continue;
                }
            }
            chars.next();
        } else {
            out.push(c);
        }
    }
    out
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

impl Cef {
    /// A CEF timestamp: epoch milliseconds, or `MMM dd [yyyy] HH:mm:ss[.fff][ zone]`.
    fn timestamp(&self, text: &str, device_zone: Option<&str>) -> Result<Timestamp, String> {
        let t = text.trim();
        let numeric = t.split_once('.').map_or(t, |(i, _)| i);
        if !numeric.is_empty()
            && !numeric.starts_with('0')
            && numeric.bytes().all(|c| c.is_ascii_digit())
            && t.split_once('.')
                .is_none_or(|(_, f)| !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit()))
        {
            let ms: f64 = t
                .parse()
                .map_err(|_| format!("Not a valid CEF timestamp: `{t}`"))?;
            return Ok(Timestamp::from_millis(ms as i64));
        }
        let bad = || format!("Not a valid CEF timestamp: `{t}`");
        let words: Vec<&str> = t.split(' ').filter(|w| !w.is_empty()).collect();
        if words.len() < 3 {
            return Err(bad());
        }
        let month = MONTHS
            .iter()
            .position(|m| words[0].len() == 3 && words[0].eq_ignore_ascii_case(m))
            .ok_or_else(bad)? as i8
            + 1;
        let day: i8 = words[1].parse().map_err(|_| bad())?;
        let (year, rest) = match words[2].len() == 4 && words[2].bytes().all(|c| c.is_ascii_digit())
        {
            true => (
                Some(words[2].parse::<i16>().map_err(|_| bad())?),
                &words[3..],
            ),
            false => (None, &words[2..]),
        };
        let (clock, zone_name) = match rest {
            [clock] => (*clock, None),
            [clock, zone] => (*clock, Some(*zone)),
            _ => return Err(bad()),
        };
        let (hms, frac) = clock.split_once('.').unwrap_or((clock, ""));
        let parts: Vec<&str> = hms.split(':').collect();
        if parts.len() != 3
            || parts.iter().any(|p| p.len() != 2)
            || !frac.bytes().all(|c| c.is_ascii_digit())
            || ![0, 3, 6, 9].contains(&frac.len())
        {
            return Err(bad());
        }
        let nanos: i32 = format!("{frac:0<9}").parse().map_err(|_| bad())?;
        let time = jiff::civil::Time::new(
            parts[0].parse().map_err(|_| bad())?,
            parts[1].parse().map_err(|_| bad())?,
            parts[2].parse().map_err(|_| bad())?,
            nanos,
        )
        .map_err(|_| bad())?;
        let zone = match zone_name.or(device_zone) {
            Some("UTC") | Some("GMT") | Some("Z") => jiff::tz::TimeZone::UTC,
            Some(z) => jiff::tz::TimeZone::get(z).map_err(|_| bad())?,
            None => self.zone.clone(),
        };
        let at = |y: i16| -> Result<jiff::Zoned, String> {
            jiff::civil::Date::new(y, month, day)
                .map_err(|_| bad())?
                .to_datetime(time)
                .to_zoned(zone.clone())
                .map_err(|_| bad())
        };
        let zoned = match year {
            Some(y) => at(y)?,
            None => {
                let now = jiff::Zoned::now().with_time_zone(zone.clone());
                let this = at(now.year())?;
                let soon = now
                    .checked_add(jiff::Span::new().days(2))
                    .map_err(|_| bad())?;
                if this > soon {
                    at(now.year() - 1)?
                } else if now.month() == 12 && at(now.year() + 1).is_ok_and(|next| next <= soon) {
                    at(now.year() + 1)?
                } else {
                    this
                }
            }
        };
        Ok(Timestamp::from_millis(zoned.timestamp().as_millisecond()))
    }

    fn handle(&self, data: &[u8]) -> Event {
        let text = self.charset.decode(data).into_owned();
        match self.parse(&text, data) {
            Ok(e) => e,
            Err(why) => {
                tracing::error!(error = %why, data = %text, "cef codec: failed to decode CEF payload; the payload goes to message");
                let mut e = Event::with_message(text.as_str());
                e.add_tag("_cefparsefailure");
                e
            }
        }
    }

    fn parse(&self, text: &str, raw: &[u8]) -> Result<Event, String> {
        let mut event = Event::new();
        if let Some(f) = &self.raw_data_field {
            event.set(
                f,
                Value::String(String::from_utf8_lossy(raw).as_ref().into()),
            );
        }
        let mut data = text;
        if data.starts_with('"') && data.len() >= 2 {
            data = &data[1..data.len() - 1];
        }
        let data = data
            .strip_suffix("\r\n")
            .or_else(|| data.strip_suffix('\n'))
            .unwrap_or(data);
        if data.contains('\n') {
            return Err("message is not valid CEF because it contains unescaped newline characters; use the `delimiter` setting to enable in-codec buffering and delimiter-splitting".to_owned());
        }
        let mut rest = data;
        let mut header: Vec<String> = Vec::with_capacity(7);
        for idx in 0..7 {
            let mut value = String::new();
            let mut chars = rest.char_indices().peekable();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' if matches!(chars.peek(), Some((_, '|')) | Some((_, '\\'))) => {
                        value.push(chars.next().expect("peeked").1);
                    }
                    '|' => {
                        end = Some(i);
                        break;
                    }
                    c => value.push(c),
                }
            }
            let Some(end) = end else {
                return Err(format!("message is not valid CEF; found {idx} of 7 required pipe-terminated header fields"));
            };
            header.push(value);
            rest = &rest[end + 1..];
        }
        let mut version = header[0].clone();
        if let Some((syslog, v)) = version.rsplit_once(' ') {
            event.set(&self.syslog_header, Value::String(syslog.into()));
            version = v.to_owned();
        }
        header[0] = version
            .strip_prefix("CEF:")
            .map(str::to_owned)
            .unwrap_or(version);
        for (f, v) in self.header_fields.iter().zip(header) {
            event.set(f, Value::String(v.into()));
        }
        let mut message = rest.trim();
        let mut ext: Vec<(String, String)> = Vec::new();
        while let Some(k) = key_at(message) {
            let key = &message[..k];
            let after = &message[k + 1..];
            let n = value_len(after);
            let value = unescape_value(&after[..n]);
            let mut name = self
                .decode
                .get(key)
                .cloned()
                .unwrap_or_else(|| key.to_owned());
            if name.ends_with(']') && !name.starts_with('[') {
                if let Some(open) = name.find('[') {
                    name = format!("[{}]{}", &name[..open], &name[open..]);
                }
            }
            match ext.iter_mut().find(|(k, _)| *k == name) {
                Some(slot) => slot.1 = value,
                None => ext.push((name, value)),
            }
            message = after[n..].trim_start();
        }
        if !message.is_empty() {
            return Err(format!(
                "invalid extensions; keyless value present `{message}`"
            ));
        }
        let device_zone = ext
            .iter()
            .find(|(k, _)| k == "[event][timezone]")
            .map(|(_, v)| v.clone());
        for (key, value) in ext {
            let r = FieldRef::parse(&key).unwrap_or_else(|_| FieldRef::top_level(&key));
            if self.ecs && self.timestamp_fields.contains(&key) {
                if value.trim().is_empty() {
                    continue;
                }
                let t = self.timestamp(&value, device_zone.as_deref())?;
                event.set(&r, Value::Timestamp(t));
            } else {
                event.set(&r, Value::String(value.into()));
            }
        }
        Ok(event)
    }
}

fn escape_header(v: &str) -> String {
    v.replace("\r\n", "\n")
        .replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}

fn escape_value(v: &str) -> String {
    v.replace("\r\n", "\n")
        .replace('\\', "\\\\")
        .replace('=', "\\=")
        .replace(['\n', '\r'], "\\n")
}

impl Codec for Cef {
    fn decode(&mut self, data: &[u8], out: &mut Vec<Event>) {
        let Some(delimiter) = self.delimiter.clone() else {
            if !data.is_empty() {
                out.push(self.handle(data));
            }
            return;
        };
        let mut pending = std::mem::take(&mut self.pending);
        split_lines(&mut pending, data, delimiter.as_bytes(), |l| {
            out.push(self.handle(l))
        });
        self.pending = pending;
    }

    fn decode_line(&mut self, line: &[u8], out: &mut Vec<Event>) {
        if !line.is_empty() {
            out.push(self.handle(line));
        }
    }

    fn flush(&mut self, out: &mut Vec<Event>) {
        let rest = std::mem::take(&mut self.pending);
        if !rest.is_empty() {
            out.push(self.handle(&rest));
        }
    }

    fn pending_bytes(&self) -> usize {
        self.pending.len()
    }

    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        let header = |t: &Template, default: &str| {
            let v = escape_header(&t.render(event));
            if v.is_empty() {
                default.to_owned()
            } else {
                v
            }
        };
        let severity = escape_header(&self.severity.render(event));
        let severity = match severity.trim().parse::<f64>() {
            Ok(f) if f.fract() == 0.0 && (0.0..=10.0).contains(&f) => (f as i64).to_string(),
            _ => "6".to_owned(),
        };
        let mut line = [
            "CEF:0".to_owned(),
            header(&self.vendor, "Elasticsearch"),
            header(&self.product, "Logstash"),
            header(&self.version, "1.0"),
            header(&self.signature, "Logstash"),
            header(&self.name, "Logstash"),
            severity,
        ]
        .join("|");
        line.push('|');
        let values: Vec<String> = self
            .fields
            .iter()
            .filter_map(|(name, r)| {
                let v = event.get(r)?;
                if matches!(v, Value::Null) {
                    return None;
                }
                let key: String = self
                    .encode
                    .get(name)
                    .map_or(name.as_str(), String::as_str)
                    .chars()
                    .filter(char::is_ascii_alphanumeric)
                    .collect();
                let text = match v {
                    Value::Array(_) | Value::Object(_) => {
                        escape_value(&sluice_event::json::to_string(v))
                    }
                    Value::Timestamp(t) => t.to_iso8601(),
                    other => escape_value(&other.to_display_string()),
                };
                Some(format!("{key}={text}"))
            })
            .collect();
        line.push_str(&values.join(" "));
        if let Some(d) = &self.delimiter {
            line.push_str(d);
        }
        out.extend_from_slice(line.as_bytes());
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        let mut c = self.clone();
        c.pending = Vec::new();
        Box::new(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_as_the_plugin_splits_them() {
        assert_eq!(key_at("src=1"), Some(3));
        assert_eq!(key_at("ad.Error_,Code=3"), Some(14));
        assert_eq!(key_at("ad.name[1]=x"), Some(10));
        assert_eq!(key_at("no key here"), None);
        assert_eq!(key_at("=x"), None);
        let s = "Internet Explorer x.x dst=1";
        assert_eq!(&s[..value_len(s)], "Internet Explorer x.x");
        let s = "a =b = c\\= next=1";
        assert_eq!(&s[..value_len(s)], "a =b = c\\=");
        assert_eq!(unescape_value("a\\=b\\\\c\\nd\\|e"), "a=b\\c\nd\\|e");
    }

    #[test]
    fn timestamps() {
        let cef = *build_for_test();
        let ms = |t: &str, z: Option<&str>| cef.timestamp(t, z).map(|t| t.millis());
        assert_eq!(ms("1500464384997", None), Ok(1_500_464_384_997));
        assert_eq!(ms("Jul 19 2017 10:50:21.127", None), Ok(1_500_461_421_127));
        assert_eq!(
            ms("Jul 19 2017 10:50:21.127 UTC", Some("Europe/Moscow")),
            Ok(1_500_461_421_127)
        );
        assert_eq!(
            ms("Jul 19 2017 10:50:21", Some("Europe/Moscow")),
            Ok(1_500_450_621_000)
        );
        assert!(ms("Jul 19 10:50:21", None).is_ok(), "the year is guessed");
        assert!(ms("yesterday", None).is_err());
        assert!(ms("0123", None).is_err());
    }

    fn build_for_test() -> Box<Cef> {
        let dictionary = dictionary(false);
        let header = |s: &str| FieldRef::parse(s).unwrap();
        Box::new(Cef {
            ecs: true,
            decode: Default::default(),
            encode: Default::default(),
            timestamp_fields: std::sync::Arc::new(
                dictionary
                    .iter()
                    .filter(|f| f.timestamp)
                    .map(|f| f.ecs.clone())
                    .collect(),
            ),
            header_fields: std::array::from_fn(|_| header("x")),
            syslog_header: header("y"),
            vendor: Template::parse(""),
            product: Template::parse(""),
            version: Template::parse(""),
            signature: Template::parse(""),
            name: Template::parse(""),
            severity: Template::parse(""),
            fields: Vec::new(),
            delimiter: None,
            pending: Vec::new(),
            zone: jiff::tz::TimeZone::UTC,
            raw_data_field: None,
            charset: Charset::Utf8,
        })
    }
}
