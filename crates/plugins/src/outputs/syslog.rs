//! `syslog`: each event as one syslog line to a syslog server, as Logstash's syslog output
//! writes it.
//!
//! RFC 3164 (the default): `<PRI>MMM dd HH:mm:ss host app[procid]: message`; RFC 5424:
//! `<PRI>1 timestamp host app procid msgid structured-data message`. PRI is `facility * 8 +
//! severity` from their labels (`use_labels`, the default; an unknown label falls back to
//! user-level and notice), else the number `priority` renders to (13 when it is not one).
//! `sourcehost`, `appname`, `procid`, `msgid`, `structured_data`, `facility` and `severity` may
//! hold references. The message is `message` rendered (or the codec's encoding when a codec
//! is given), its trailing space cut and its line breaks written as `\n`. Each line ends with a
//! newline.
//!
//! `protocol`: `udp` (the default; one datagram per line, a failed send dropped as UDP does),
//! `tcp` or `ssl-tcp` (one connection, connecting again `reconnect_interval` seconds after a
//! failure and sending the batch again). `ssl-tcp` takes `ssl_cert`/`ssl_key` and, with
//! `ssl_verify`, checks the server against `ssl_cacert` (else the system's authorities); as in
//! Logstash, the server is not checked without `ssl_verify`.

use std::time::Duration;

use sluice_event::{Event, Template};
use sluice_pipeline::{Codec, ConfigError, Options, Output};

// The facility and severity labels, by number: the syslog_pri filter's (RFC 5424's
// numbering). Logstash's syslog output has its own facility list, which leaves out the second
// "security/authorization" (10) and "clock" (15), so that from "ftp" on its numbers are one
// or two short (its "local0" is sent as 14, which receivers read as "log alert"); here each
// label is sent as its RFC number.
use crate::filters::syslog_pri::{FACILITY_LABELS as FACILITIES, SEVERITY_LABELS as SEVERITIES};

#[derive(Clone)]
struct Lines {
    rfc3164: bool,
    use_labels: bool,
    priority: Template,
    facility: Template,
    severity: Template,
    sourcehost: Template,
    appname: Template,
    procid: Template,
    msgid: Template,
    structured_data: Option<Template>,
    message: Message,
    time3164: Template,
    time5424: Template,
}

#[derive(Clone)]
enum Message {
    Template(Template),
    Codec(std::sync::Arc<std::sync::Mutex<Box<dyn Codec>>>),
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let host = opts.required_string("host")?;
    let port = crate::net::port(opts, "port", None)?;
    let protocol = opts.choice("protocol", &["udp", "tcp", "ssl-tcp"], "udp")?;
    let reconnect = opts.int("reconnect_interval")?.unwrap_or(1);
    if reconnect < 0 {
        return Err(opts.error("reconnect_interval", "must be 0 or more seconds"));
    }
    let rfc3164 = opts.choice("rfc", &["rfc3164", "rfc5424"], "rfc3164")? == "rfc3164";
    let template = |opts: &mut Options, name: &str, default: &str| {
        opts.string_or(name, default).map(|t| Template::parse(&t))
    };
    let structured_data = opts.string_or("structured_data", "")?;
    if rfc3164 && !structured_data.is_empty() {
        return Err(opts.error(
            "structured_data",
            "Structured data is not supported for RFC3164",
        ));
    }
    let message = if opts.has("codec") {
        Message::Codec(std::sync::Arc::new(std::sync::Mutex::new(
            opts.codec("plain")?,
        )))
    } else {
        Message::Template(template(opts, "message", "%{message}")?)
    };
    let lines = Lines {
        rfc3164,
        use_labels: opts.boolean_or("use_labels", true)?,
        priority: template(opts, "priority", "%{syslog_pri}")?,
        facility: template(opts, "facility", "user-level")?,
        severity: template(opts, "severity", "notice")?,
        sourcehost: template(opts, "sourcehost", "%{host}")?,
        appname: template(opts, "appname", "LOGSTASH")?,
        procid: template(opts, "procid", "-")?,
        msgid: template(opts, "msgid", "-")?,
        structured_data: (!structured_data.is_empty()).then(|| Template::parse(&structured_data)),
        message,
        time3164: Template::parse("%{+MMM dd HH:mm:ss}"),
        time5424: Template::parse("%{+YYYY-MM-dd'T'HH:mm:ss.SSSZZ}"),
    };
    let tls = read_tls(opts, protocol == "ssl-tcp")?;
    if protocol == "udp" {
        return Ok(Box::new(super::udp::with_codec(
            opts,
            &host,
            port,
            Box::new(lines),
        )?));
    }
    let tls = super::tcp::client_tls(opts, tls, &host)?;
    Ok(Box::new(super::tcp::client(
        "syslog output",
        crate::net::address(&host, port),
        Box::new(lines),
        Duration::from_secs(reconnect as u64),
        tls,
    )))
}

/// The syslog output's own TLS options (`ssl_cacert`, `ssl_cert`, `ssl_key`, `ssl_verify`),
/// for `ssl-tcp`.
fn read_tls(opts: &mut Options, on: bool) -> Result<Option<crate::tls::Tls>, ConfigError> {
    for unsupported in ["ssl_key_passphrase", "ssl_crl", "ssl_crl_check_all"] {
        if opts.has(unsupported) {
            opts.take(unsupported);
            return Err(opts.error(
                unsupported,
                "is not supported (use an unencrypted PEM key; CRLs are not checked)",
            ));
        }
    }
    let ca = opts.string("ssl_cacert")?;
    let cert = opts.string("ssl_cert")?;
    let key = opts.string("ssl_key")?;
    let verify = opts.boolean_or("ssl_verify", false)?;
    if !on {
        return Ok(None);
    }
    let read = |name: &str, path: &str| crate::tls::read_pem(opts, name, path);
    let ca = match ca {
        Some(p) if std::path::Path::new(&p).is_dir() => {
            let mut pem = Vec::new();
            let dir = std::fs::read_dir(&p)
                .map_err(|e| opts.error("ssl_cacert", format!("cannot read {p:?}: {e}")))?;
            for f in dir.flatten() {
                if f.path().is_file() {
                    pem.extend(read("ssl_cacert", &f.path().to_string_lossy())?);
                    pem.push(b'\n');
                }
            }
            Some(pem)
        }
        Some(p) => Some(read("ssl_cacert", &p)?),
        None => None,
    };
    let client = crate::tls::client_pair(opts, ("ssl_cert", cert), ("ssl_key", key))?;
    Ok(Some(crate::tls::Tls { ca, client, verify }))
}

impl Lines {
    fn priority(&self, e: &Event) -> u32 {
        if self.use_labels {
            let label = |t: &Template, table: &[&str]| {
                let v = t.render(e);
                table.iter().position(|l| *l == v)
            };
            let facility = label(&self.facility, &FACILITIES).unwrap_or(1);
            let severity = label(&self.severity, &SEVERITIES).unwrap_or(5);
            (facility * 8 + severity) as u32
        } else {
            // Ruby's Integer(): an integer's text, else 13.
            match self.priority.render(e).trim().parse::<i64>() {
                Ok(p) if (0..=191).contains(&p) => p as u32,
                _ => 13,
            }
        }
    }
}

impl Codec for Lines {
    fn decode(&mut self, _data: &[u8], _out: &mut Vec<Event>) {}

    fn encode(&mut self, e: &Event, out: &mut Vec<u8>) {
        use std::io::Write;
        let payload = match &self.message {
            Message::Template(t) => t.render(e),
            Message::Codec(c) => {
                let mut buf = Vec::new();
                c.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .encode(e, &mut buf);
                String::from_utf8_lossy(&buf).into_owned()
            }
        };
        let message = payload
            .trim_end()
            .replace("\r\n", "\n")
            .replace('\n', "\\n");
        let pri = self.priority(e);
        let host = self.sourcehost.render(e);
        let app = self.appname.render(e);
        let procid = self.procid.render(e);
        let _ = if self.rfc3164 {
            let time = self.time3164.render(e);
            writeln!(out, "<{pri}>{time} {host} {app}[{procid}]: {message}")
        } else {
            let time = self.time5424.render(e);
            let msgid = self.msgid.render(e);
            let sd = match &self.structured_data {
                Some(t) => t.render(e),
                None => "-".to_owned(),
            };
            writeln!(
                out,
                "<{pri}>1 {time} {host} {app} {procid} {msgid} {sd} {message}"
            )
        };
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        Box::new(self.clone())
    }
}
