//! `syslog_pri`: decodes a syslog priority (`<PRI>`, `facility × 8 + severity`) into facility
//! and severity codes and labels, as Logstash's filter: the priority comes from
//! `syslog_pri_field_name` (`syslog_pri`, or `[log][syslog][priority]` with ECS), read as Ruby's
//! `to_i` reads it (the first element of an array; 13 when the field is missing); the codes go
//! to `syslog_facility_code` / `syslog_severity_code` (ECS: `[log][syslog][facility][code]`,
//! `[log][syslog][severity][code]`) and, with `use_labels` (the default), the labels to
//! `syslog_facility` / `syslog_severity` (ECS: `[log][syslog][facility][name]`,
//! `[log][syslog][severity][name]`). A facility past the end of `facility_labels` gets no label
//! and the tag `_syslogpriparsefailure`.

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

use crate::ecs::Ecs;
use crate::filters::grok::convert::ruby_to_i;

/// Logstash's default facility labels for this filter (lower case; `daemon` for 3).
pub const FACILITY_LABELS: [&str; 24] = [
    "kernel",
    "user-level",
    "mail",
    "daemon",
    "security/authorization",
    "syslogd",
    "line printer",
    "network news",
    "uucp",
    "clock",
    "security/authorization",
    "ftp",
    "ntp",
    "log audit",
    "log alert",
    "clock",
    "local0",
    "local1",
    "local2",
    "local3",
    "local4",
    "local5",
    "local6",
    "local7",
];

pub const SEVERITY_LABELS: [&str; 8] = [
    "emergency",
    "alert",
    "critical",
    "error",
    "warning",
    "notice",
    "informational",
    "debug",
];

#[derive(Clone)]
pub struct SyslogPri {
    source: FieldRef,
    use_labels: bool,
    facility_labels: Vec<String>,
    severity_labels: Vec<String>,
    facility_code: FieldRef,
    severity_code: FieldRef,
    facility_name: FieldRef,
    severity_name: FieldRef,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let ecs = Ecs::from_options(opts)?;
    let default = if ecs.enabled() {
        "[log][syslog][priority]"
    } else {
        "syslog_pri"
    };
    let name = opts.string_or("syslog_pri_field_name", default)?;
    let source =
        FieldRef::parse(&name).map_err(|e| opts.error("syslog_pri_field_name", e.to_string()))?;
    let labels = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let facility_labels = opts
        .string_list("facility_labels")?
        .unwrap_or_else(|| labels(&FACILITY_LABELS));
    let severity_labels = opts
        .string_list("severity_labels")?
        .unwrap_or_else(|| labels(&SEVERITY_LABELS));
    let f = |s: &str| FieldRef::parse(s).expect("a valid field reference");
    let (fc, sc, fname, sname) = if ecs.enabled() {
        (
            "[log][syslog][facility][code]",
            "[log][syslog][severity][code]",
            "[log][syslog][facility][name]",
            "[log][syslog][severity][name]",
        )
    } else {
        (
            "syslog_facility_code",
            "syslog_severity_code",
            "syslog_facility",
            "syslog_severity",
        )
    };
    Ok(Box::new(SyslogPri {
        source,
        use_labels: opts.boolean_or("use_labels", true)?,
        facility_labels,
        severity_labels,
        facility_code: f(fc),
        severity_code: f(sc),
        facility_name: f(fname),
        severity_name: f(sname),
    }))
}

/// A priority as Ruby's `to_i` reads the field's value.
pub fn priority_of(v: Option<&Value>) -> i64 {
    let v = match v {
        None | Some(Value::Null) => return 13,
        Some(Value::Array(a)) => match a.first() {
            None => return 0,
            Some(first) => first,
        },
        Some(v) => v,
    };
    match v {
        Value::Int(i) => *i,
        Value::Float(f) => *f as i64,
        Value::String(s) => match ruby_to_i(s) {
            Value::Int(i) => i,
            _ => 0,
        },
        _ => 0,
    }
}

/// Ruby's `array[i]`: a negative index counts from the end.
pub fn label(labels: &[String], i: i64) -> Option<&str> {
    let n = labels.len() as i64;
    let at = if i < 0 { n + i } else { i };
    (0..n).contains(&at).then(|| labels[at as usize].as_str())
}

impl Filter for SyslogPri {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let pri = priority_of(event.get(&self.source));
        let (severity, facility) = (pri & 7, pri >> 3);
        event.set(&self.severity_code, Value::Int(severity));
        event.set(&self.facility_code, Value::Int(facility));
        if self.use_labels {
            if facility > self.facility_labels.len() as i64 - 1 {
                event.add_tag("_syslogpriparsefailure");
                return true;
            }
            if let Some(l) = label(&self.facility_labels, facility) {
                event.set(&self.facility_name, Value::String(l.into()));
            }
            if let Some(l) = label(&self.severity_labels, severity) {
                event.set(&self.severity_name, Value::String(l.into()));
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
    fn priorities_read_as_ruby_reads_them() {
        assert_eq!(priority_of(None), 13);
        assert_eq!(priority_of(Some(&Value::String("164".into()))), 164);
        assert_eq!(priority_of(Some(&Value::String("12abc".into()))), 12);
        assert_eq!(priority_of(Some(&Value::String("abc".into()))), 0);
        assert_eq!(
            priority_of(Some(&Value::Array(vec![Value::String("34".into())]))),
            34
        );
        assert_eq!(priority_of(Some(&Value::Float(9.9))), 9);
        let labels: Vec<String> = FACILITY_LABELS.iter().map(|s| s.to_string()).collect();
        assert_eq!(label(&labels, 20), Some("local4"));
        assert_eq!(label(&labels, -1), Some("local7"));
        assert_eq!(label(&labels, 24), None);
    }
}
