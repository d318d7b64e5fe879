//! The health report (`GET /_health_report`) and the `status` every document carries, as
//! Logstash 8.16+ computes them (its `org.logstash.health` probes; the behaviour, not the code).
//!
//! One indicator per pipeline, each the worst of three probes:
//! - **status**: running is green; finished (its inputs ended) yellow; terminated (it stopped
//!   delivering: an output gone, a stop given up on) red; a pipeline a reload could not start
//!   again unknown.
//! - **worker utilization** (`flow:worker_utilization`), over the last 5 minutes and the last
//!   minute, each only once the pipeline has run that long: 5 minutes completely blocked
//!   (> 99.999 %) red, nearly blocked (≥ 95 %) yellow ("but they appear to be recovering" when
//!   the last minute is ≤ 80 %); else the last minute blocked or nearly blocked yellow.
//! - **recovery** (`pipeline.recoverable`): restarts after a crash in the last 5 minutes, one
//!   or more yellow, five or more red.
//!
//! Statuses order green < unknown < yellow < red; the pipelines' worst is the node's status.

use std::time::{Duration, SystemTime};

use serde_json::{json, Map, Value};

use crate::registry::{Ended, Sample, Tracked};
use crate::stats::Context;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Green,
    Unknown,
    Yellow,
    Red,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Green => "green",
            Status::Unknown => "unknown",
            Status::Yellow => "yellow",
            Status::Red => "red",
        }
    }

    fn descriptive(self) -> &'static str {
        match self {
            Status::Green => "healthy",
            Status::Unknown => "unknown",
            Status::Yellow => "concerning",
            Status::Red => "unhealthy",
        }
    }

    /// `green`, `yellow` or `red` (any case): the statuses a client may wait for.
    pub fn parse_target(s: &str) -> Option<Status> {
        match s.to_ascii_lowercase().as_str() {
            "green" => Some(Status::Green),
            "yellow" => Some(Status::Yellow),
            "red" => Some(Status::Red),
            _ => None,
        }
    }

    /// Whether this status is `target` or better (`unknown` never is).
    pub fn reaches(self, target: Status) -> bool {
        self != Status::Unknown && self <= target
    }
}

const HELP: &str = "https://www.elastic.co/guide/en/logstash/master/";

/// What one probe found that is not green.
struct Finding {
    status: Status,
    diagnosis: Value,
    impact: Value,
}

fn finding(
    status: Status,
    diagnosis_id: &str,
    cause: String,
    action: &str,
    help: (&str, &str),
    impact: (&str, u32, &str),
) -> Finding {
    Finding {
        status,
        diagnosis: json!({
            "id": diagnosis_id,
            "cause": cause,
            "action": action,
            "help_url": format!("{HELP}{}.html#{}", help.0, help.1),
        }),
        impact: json!({
            "id": impact.0,
            "severity": impact.1,
            "description": impact.2,
            "impact_areas": ["pipeline_execution"],
        }),
    }
}

/// The pipeline's state, as Logstash names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Running,
    Finished,
    Terminated,
    Unknown,
}

impl State {
    fn as_str(self) -> &'static str {
        match self {
            State::Running => "RUNNING",
            State::Finished => "FINISHED",
            State::Terminated => "TERMINATED",
            State::Unknown => "UNKNOWN",
        }
    }
}

fn status_probe(state: State) -> Option<Finding> {
    const PAGE: &str = "health-report-pipeline-status";
    let id = |s: &str| format!("logstash:health:pipeline:status:diagnosis:{s}");
    const IMPACT: &str = "logstash:health:pipeline:status:impact:not_processing";
    match state {
        State::Running => None,
        State::Finished => Some(finding(
            Status::Yellow,
            &id("finished"),
            "pipeline has finished running because its inputs have been closed and events have been processed".into(),
            "if you expect this pipeline to run indefinitely, you will need to configure its inputs to continue receiving or fetching events",
            (PAGE, "finished"),
            (IMPACT, 10, "pipeline has finished running"),
        )),
        State::Terminated => Some(finding(
            Status::Red,
            &id("terminated"),
            "pipeline is not running, likely because it has encountered an error".into(),
            "view logs to determine the cause of abnormal pipeline shutdown",
            (PAGE, "terminated"),
            (IMPACT, 1, "the pipeline is not currently processing"),
        )),
        State::Unknown => Some(finding(
            Status::Unknown,
            &id("unknown"),
            "pipeline is not known; it may have been recently deleted or failed to start".into(),
            "view logs to determine if the pipeline failed to start",
            (PAGE, "unknown"),
            (IMPACT, 2, "the pipeline is not currently processing"),
        )),
    }
}

/// Worker utilization (percent) over the last minute and the last 5 minutes, each only once the
/// pipeline has run that long.
pub(crate) fn utilization(t: &Tracked) -> (Option<f64>, Option<f64>) {
    let history = t.history();
    let now = t.sample();
    let workers = t.view.settings.workers.max(1) as f64;
    let over = |window: Duration| -> Option<f64> {
        // The oldest sample no younger than the window (within a second of it).
        let reach = window - Duration::from_millis(500);
        let from: &Sample = history
            .iter()
            .rev()
            .find(|s| now.at.saturating_duration_since(s.at) >= reach)?;
        let dt = now.at.duration_since(from.at).as_secs_f64();
        let busy = now
            .totals
            .worker_duration_nanos
            .saturating_sub(from.totals.worker_duration_nanos);
        (dt > 0.0).then(|| (busy as f64 / 1e9 / dt / workers * 100.0).min(100.0))
    };
    (
        over(Duration::from_secs(60)),
        over(Duration::from_secs(300)),
    )
}

fn utilization_probe(one: Option<f64>, five: Option<f64>) -> Option<Finding> {
    const PAGE: &str = "health-report-pipeline-flow-worker-utilization";
    const IMPACT: &str = "logstash:health:pipeline:flow:impact:blocked_processing";
    let id = |s: &str| format!("logstash:health:pipeline:flow:worker_utilization:diagnosis:{s}");
    let cause = |condition: &str, period: &str, recovering: bool| {
        let mut c = format!("pipeline workers have been {condition} for at least {period}");
        if recovering {
            c.push_str(", but they appear to be recovering");
        }
        c
    };
    const ADDRESS: &str = "address bottleneck or add resources";
    if let Some(five) = five {
        if five > 99.999 {
            return Some(finding(
                Status::Red,
                &id("5m-blocked"),
                cause("completely blocked", "five minutes", false),
                ADDRESS,
                (PAGE, "blocked-5m"),
                (IMPACT, 1, "the pipeline is blocked"),
            ));
        }
        if five >= 95.0 {
            let recovering = one.is_some_and(|o| o <= 80.0);
            return Some(finding(
                Status::Yellow,
                &id("5m-nearly-blocked"),
                cause("nearly blocked", "five minutes", recovering),
                if recovering {
                    "continue to monitor"
                } else {
                    ADDRESS
                },
                (PAGE, "nearly-blocked-5m"),
                (IMPACT, 1, "the pipeline is blocked"),
            ));
        }
    }
    let one = one?;
    if one > 99.999 {
        return Some(finding(
            Status::Yellow,
            &id("1m-blocked"),
            cause("completely blocked", "one minute", false),
            ADDRESS,
            (PAGE, "blocked-1m"),
            (IMPACT, 2, "the pipeline is blocked"),
        ));
    }
    (one >= 95.0).then(|| {
        finding(
            Status::Yellow,
            &id("1m-nearly-blocked"),
            cause("nearly blocked", "one minute", false),
            ADDRESS,
            (PAGE, "nearly-blocked-1m"),
            (IMPACT, 2, "the pipeline is blocked"),
        )
    })
}

fn recovery_probe(recoveries: usize) -> Option<Finding> {
    if recoveries == 0 {
        return None;
    }
    let (status, which, severity) = if recoveries >= 5 {
        (Status::Red, "5m-recovery-repeated", 1)
    } else {
        (Status::Yellow, "5m-recovery-recent", 2)
    };
    Some(finding(
        status,
        &format!("logstash:health:pipeline:recovery:diagnosis:{which}"),
        format!(
            "pipeline has recovered from crashes {recoveries} {} in the last 5 minutes",
            if recoveries == 1 { "time" } else { "times" }
        ),
        "inspect logs to determine source of crash",
        ("health-report-pipeline-recovery", "recovery-5m"),
        (
            "logstash:health:pipeline:recovery:impact:intermittent_processing",
            severity,
            "pipeline recently recovered from a crash",
        ),
    ))
}

/// How long an output's lane may hold events before the pipeline turns yellow.
const LANE_BACKLOG: Duration = Duration::from_secs(60);

/// Output lanes (sluice's own, `(output id, events held, seconds held)`): a lane that has held
/// events for [`LANE_BACKLOG`] or more means an output that is down or not keeping up.
fn lane_probe(lanes: &[(String, u64, u64)]) -> Option<Finding> {
    let behind: Vec<String> = lanes
        .iter()
        .filter(|(_, events, age)| *events > 0 && *age >= LANE_BACKLOG.as_secs())
        .map(|(id, events, age)| format!("{id} ({events} events, for {age} s)"))
        .collect();
    if behind.is_empty() {
        return None;
    }
    let mut f = finding(
        Status::Yellow,
        "sluice:health:pipeline:output_lane:diagnosis:backlog",
        format!(
            "output lanes have held events for a minute or more: {}",
            behind.join(", ")
        ),
        "check the output's destination; the lane delivers what it holds once the output keeps up again",
        ("health-report-pipeline-output-lanes", "backlog"),
        (
            "sluice:health:pipeline:output_lane:impact:delayed_delivery",
            2,
            "events reach an output late",
        ),
    );
    // Not one of Logstash's diagnoses: no page of its manual to point to (the README's
    // "Output lanes" section documents it).
    if let Some(d) = f.diagnosis.as_object_mut() {
        d.remove("help_url");
    }
    Some(f)
}

fn iso(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t)
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// One pipeline's indicator and its status.
fn pipeline_indicator(
    state: State,
    flow: (Option<f64>, Option<f64>),
    recoveries: &[SystemTime],
    lanes: &[(String, u64, u64)],
) -> (Status, Value) {
    let findings: Vec<Finding> = [
        status_probe(state),
        utilization_probe(flow.0, flow.1),
        recovery_probe(recoveries.len()),
        lane_probe(lanes),
    ]
    .into_iter()
    .flatten()
    .collect();
    let status = findings
        .iter()
        .map(|f| f.status)
        .max()
        .unwrap_or(Status::Green);
    let mut symptom = format!("The pipeline is {}", status.descriptive());
    if !findings.is_empty() {
        let n = findings.len();
        symptom.push_str(&format!(
            "; 1 area is impacted and {n} {} available",
            if n == 1 {
                "diagnosis is"
            } else {
                "diagnoses are"
            }
        ));
    }
    let mut details = Map::new();
    details.insert("status".into(), json!({ "state": state.as_str() }));
    let mut wu = Map::new();
    if let Some(v) = flow.0 {
        wu.insert("last_1_minute".into(), crate::flow::round(v).into());
    }
    if let Some(v) = flow.1 {
        wu.insert("last_5_minutes".into(), crate::flow::round(v).into());
    }
    if !wu.is_empty() {
        details.insert("flow".into(), json!({ "worker_utilization": wu }));
    }
    if !recoveries.is_empty() {
        details.insert(
            "recovery_log".into(),
            recoveries.iter().map(|t| Value::String(iso(*t))).collect(),
        );
    }
    let mut m = Map::new();
    m.insert("status".into(), status.as_str().into());
    m.insert("symptom".into(), symptom.into());
    if !findings.is_empty() {
        m.insert(
            "diagnosis".into(),
            findings.iter().map(|f| f.diagnosis.clone()).collect(),
        );
        m.insert(
            "impacts".into(),
            findings.iter().map(|f| f.impact.clone()).collect(),
        );
    }
    m.insert("details".into(), Value::Object(details));
    (status, Value::Object(m))
}

/// "1 indicator is unhealthy (`a`) and 2 indicators are concerning (`b`, `c`)".
fn multi_symptom(items: &[(String, Status)]) -> String {
    if items.is_empty() {
        return "no indicators".into();
    }
    let mut groups = Vec::new();
    for status in [Status::Red, Status::Yellow, Status::Unknown, Status::Green] {
        let names: Vec<&str> = items
            .iter()
            .filter(|(_, s)| *s == status)
            .map(|(n, _)| n.as_str())
            .collect();
        if names.is_empty() {
            continue;
        }
        groups.push(format!(
            "{} {} {} (`{}`)",
            names.len(),
            if names.len() == 1 {
                "indicator is"
            } else {
                "indicators are"
            },
            status.descriptive(),
            names.join("`, `")
        ));
    }
    match groups.len() {
        1 => groups.remove(0),
        2 => groups.join(" and "),
        n => format!("{}, and {}", groups[..n - 1].join(", "), groups[n - 1]),
    }
}

impl Context {
    /// Every pipeline's indicator, by id, with its status.
    fn pipeline_indicators(&self) -> Vec<(String, Status, Value)> {
        let mut out = Vec::new();
        let (running, ended) = self.registry.running_and_ended();
        for t in running {
            let id = t.view.id.clone();
            let lanes: Vec<(String, u64, u64)> = (t.view.metrics.lanes.iter().flatten())
                .map(|l| {
                    let f = l.figures();
                    (f.output_id, f.queued_events, f.oldest_age_seconds)
                })
                .collect();
            let (status, v) = pipeline_indicator(
                State::Running,
                utilization(&t),
                &self.registry.recoveries(&id),
                &lanes,
            );
            out.push((id, status, v));
        }
        for (id, how) in ended {
            let state = match how {
                Ended::Finished => State::Finished,
                Ended::Terminated => State::Terminated,
                Ended::FailedToStart | Ended::Removed => State::Unknown,
            };
            let (status, v) =
                pipeline_indicator(state, (None, None), &self.registry.recoveries(&id), &[]);
            out.push((id, status, v));
        }
        out
    }

    /// The node's status: the worst of its pipelines' (green without any).
    pub fn health_status(&self) -> Status {
        self.pipeline_indicators()
            .iter()
            .map(|(_, s, _)| *s)
            .max()
            .unwrap_or(Status::Green)
    }

    /// `GET /_health_report`.
    pub fn health_report(&self) -> Value {
        let indicators = self.pipeline_indicators();
        let status = indicators
            .iter()
            .map(|(_, s, _)| *s)
            .max()
            .unwrap_or(Status::Green);
        let names: Vec<(String, Status)> = indicators
            .iter()
            .map(|(id, s, _)| (id.clone(), *s))
            .collect();
        let pipelines: Map<String, Value> =
            indicators.into_iter().map(|(id, _, v)| (id, v)).collect();
        let mut m = self.identity();
        m.insert("status".into(), status.as_str().into());
        m.insert(
            "symptom".into(),
            multi_symptom(&[("pipelines".to_owned(), status)]).into(),
        );
        m.insert(
            "indicators".into(),
            json!({
                "pipelines": {
                    "status": status.as_str(),
                    "symptom": multi_symptom(&names),
                    "indicators": pipelines,
                }
            }),
        );
        m.insert("timestamp".into(), iso(SystemTime::now()).into());
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utilization_rules_are_logstashs() {
        let status = |one, five| {
            utilization_probe(one, five).map(|f| {
                (
                    f.status,
                    f.diagnosis["id"]
                        .as_str()
                        .unwrap()
                        .rsplit(':')
                        .next()
                        .unwrap()
                        .to_owned(),
                )
            })
        };
        assert_eq!(
            status(Some(97.1), None),
            Some((Status::Yellow, "1m-nearly-blocked".into()))
        );
        assert_eq!(
            status(Some(100.0), None),
            Some((Status::Yellow, "1m-blocked".into()))
        );
        assert_eq!(
            status(Some(97.1), Some(96.1)),
            Some((Status::Yellow, "5m-nearly-blocked".into()))
        );
        assert_eq!(
            status(Some(100.0), Some(100.0)),
            Some((Status::Red, "5m-blocked".into()))
        );
        assert_eq!(status(Some(50.0), Some(50.0)), None);
        assert_eq!(status(None, None), None);
        let recovering = utilization_probe(Some(79.0), Some(97.0)).unwrap();
        assert!(recovering.diagnosis["cause"]
            .as_str()
            .unwrap()
            .ends_with("but they appear to be recovering"));
        assert_eq!(recovering.diagnosis["action"], "continue to monitor");
    }

    #[test]
    fn a_lane_holding_events_for_a_minute_turns_the_pipeline_yellow() {
        let lanes = |age| [("es".to_owned(), 1_000u64, age), ("idle".to_owned(), 0, 0)];
        let (s, _) = pipeline_indicator(State::Running, (Some(10.0), None), &[], &lanes(59));
        assert_eq!(s, Status::Green);
        let (s, v) = pipeline_indicator(State::Running, (Some(10.0), None), &[], &lanes(60));
        assert_eq!(s, Status::Yellow);
        let cause = v["diagnosis"][0]["cause"].as_str().unwrap();
        assert!(cause.contains("es (1000 events, for 60 s)"), "{cause}");
        assert!(!cause.contains("idle"), "{cause}");
    }

    #[test]
    fn statuses_combine_and_read_as_logstash_writes_them() {
        let (s, v) = pipeline_indicator(State::Running, (Some(10.0), None), &[], &[]);
        assert_eq!(s, Status::Green);
        assert_eq!(v["symptom"], "The pipeline is healthy");
        assert!(v.get("diagnosis").is_none());
        assert_eq!(
            v["details"]["flow"]["worker_utilization"]["last_1_minute"],
            10.0
        );
        let (s, v) = pipeline_indicator(State::Terminated, (None, None), &[], &[]);
        assert_eq!(s, Status::Red);
        assert_eq!(
            v["symptom"],
            "The pipeline is unhealthy; 1 area is impacted and 1 diagnosis is available"
        );
        assert_eq!(v["details"]["status"]["state"], "TERMINATED");
        assert_eq!(v["impacts"][0]["impact_areas"][0], "pipeline_execution");
        let (s, v) = pipeline_indicator(State::Finished, (None, None), &[SystemTime::now()], &[]);
        assert_eq!(s, Status::Yellow);
        assert_eq!(v["diagnosis"].as_array().unwrap().len(), 2);
        assert_eq!(
            multi_symptom(&[
                ("a".into(), Status::Red),
                ("b".into(), Status::Yellow),
                ("c".into(), Status::Yellow)
            ]),
            "1 indicator is unhealthy (`a`) and 2 indicators are concerning (`b`, `c`)"
        );
        assert!(Status::Green.reaches(Status::Yellow));
        assert!(!Status::Unknown.reaches(Status::Red));
        assert!(!Status::Red.reaches(Status::Yellow));
    }
}
