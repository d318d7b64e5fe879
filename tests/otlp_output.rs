//! The `opentelemetry` output through the real binary, against a real OpenTelemetry Collector
//! (tests/otelcol, built by `scripts/build-otelcol`) and against sluice's own input:
//! - sluice → collector: generated logs and spans arrive in the collector's file exporter,
//!   every record with its body, attributes and resource; over protobuf and JSON;
//! - collector → sluice: the Python SDK logs into the collector, whose OTLP/HTTP exporter
//!   sends to sluice's input, every record with its resource and attributes;
//! - sluice → sluice: what the output sends, the input reads back field for field;
//! - a collector that is down when sluice starts gets every record once it is up;
//! - a receiver that answers 429 with `Retry-After` gets every record in the end.

mod net_support;
mod run_support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use net_support::free_port;
use run_support::{temp_dir, Run};
use serde_json::Value as J;

/// The collector (`SLUICE_OTELCOL`); `None` when absent (a failure under CI=true).
fn otelcol() -> Option<PathBuf> {
    let p = std::env::var_os("SLUICE_OTELCOL")
        .map(PathBuf::from)
        .filter(|p| p.exists());
    if p.is_none() {
        net_support::missing("the OpenTelemetry Collector (scripts/build-otelcol)");
    }
    p
}

/// A running collector, killed when dropped.
struct Collector(Child);

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the collector with `pipelines` (YAML under `service.pipelines`) and the rest of
/// its config (`receivers`/`exporters` sections); its own telemetry is off.
fn collector(bin: &Path, dir: &Path, sections: &str, pipelines: &str) -> Collector {
    let config = dir.join("otelcol.yaml");
    std::fs::write(
        &config,
        format!(
            "{sections}\nservice:\n  telemetry:\n    metrics:\n      level: none\n    logs:\n      level: warn\n  pipelines:\n{pipelines}"
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("otelcol.log")).unwrap();
    let child = Command::new(bin)
        .arg("--config")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    Collector(child)
}

/// A collector receiving OTLP/HTTP on `port` and OTLP/gRPC on `grpc_port`, and writing what
/// it gets to `logs.json` and `traces.json` in `dir` (its file exporter: one export request
/// per line, OTLP/JSON).
fn collector_to_files(bin: &Path, dir: &Path, port: u16, grpc_port: u16) -> Collector {
    let d = dir.display();
    collector(
        bin,
        dir,
        &format!(
            "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:{port}\n      \
             grpc:\n        endpoint: 127.0.0.1:{grpc_port}\n\
             exporters:\n  file/logs:\n    path: {d}/logs.json\n    flush_interval: 100ms\n  \
             file/traces:\n    path: {d}/traces.json\n    flush_interval: 100ms\n"
        ),
        "    logs:\n      receivers: [otlp]\n      exporters: [file/logs]\n    \
         traces:\n      receivers: [otlp]\n      exporters: [file/traces]\n",
    )
}

/// The records (or spans) of a file exporter's output, each with its resource's
/// attributes: waits until there are `n`.
fn wait_items(path: &Path, kind: &str, n: usize, secs: u64, log: &dyn Fn() -> String) -> Vec<J> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let items = read_items(path, kind);
        if items.len() >= n {
            return items;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {n} {kind} in {secs} s\n{}",
            items.len(),
            log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every record (`kind` "logRecords") or span ("spans") in a file exporter's output, with
/// `"resource"` (its resource's attributes as an object) and `"scope"` (the scope's name)
/// added.
fn read_items(path: &Path, kind: &str) -> Vec<J> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let (top, scopes) = match kind {
        "logRecords" => ("resourceLogs", "scopeLogs"),
        _ => ("resourceSpans", "scopeSpans"),
    };
    let mut out = Vec::new();
    for line in text.lines().filter(|l| l.ends_with('}')) {
        let v: J = serde_json::from_str(line).unwrap();
        for r in v[top].as_array().unwrap() {
            let resource = attributes(&r["resource"]["attributes"]);
            for s in r[scopes].as_array().unwrap() {
                for item in s[kind].as_array().unwrap() {
                    let mut item = item.clone();
                    item["resource"] = resource.clone();
                    item["scope"] = s["scope"]["name"].clone();
                    item["attrs"] = attributes(&item["attributes"]);
                    out.push(item);
                }
            }
        }
    }
    out
}

/// OTLP/JSON attributes as an object of plain values.
fn attributes(list: &J) -> J {
    let mut m = serde_json::Map::new();
    for kv in list.as_array().into_iter().flatten() {
        m.insert(kv["key"].as_str().unwrap().into(), plain(&kv["value"]));
    }
    J::Object(m)
}

fn plain(v: &J) -> J {
    let Some((k, x)) = v.as_object().and_then(|m| m.iter().next()) else {
        return J::Null;
    };
    match k.as_str() {
        "intValue" => J::from(x.as_str().unwrap().parse::<i64>().unwrap()),
        "arrayValue" => x["values"].as_array().unwrap().iter().map(plain).collect(),
        "kvlistValue" => attributes(&x["values"]),
        _ => x.clone(),
    }
}

/// A generator of `n` logs and `spans` spans (a JSON line), each kind to the output for it.
fn generator_config(n: usize, spans: usize, output: &str) -> String {
    // A generator's count of 0 is "for ever": no span generator without spans.
    let spans = match spans {
        0 => String::new(),
        n => format!(
            r#"generator {{ count => {n} codec => json lines => ['{{"name":"GET /cart","kind":"Server","duration":1500000,"trace":{{"id":"0af7651916cd43dd8448eb211c80319c"}},"span":{{"id":"b7ad6b7169203331"}},"status":{{"code":"Error","message":"boom"}},"attributes":{{"http.route":"/cart"}},"resource":{{"attributes":{{"service.name":"cart"}}}},"scope":{{"name":"cart.http"}}}}'] }}"#
        ),
    };
    format!(
        r#"input {{
             generator {{ count => {n} message => "hello otlp" add_field => {{ "[resource][attributes][service.name]" => "gen" "[log][level]" => "INFO" "[http][response][status_code]" => 200 }} }}
             {spans}
           }}
           output {{
             if [kind] {{ opentelemetry {{ {output} signal => "traces" }} }}
             else {{ opentelemetry {{ {output} }} }}
           }}"#
    )
}

fn check_generated_logs(records: &[J], n: usize) {
    let mut seqs: Vec<i64> = Vec::new();
    for r in records {
        assert_eq!(r["body"]["stringValue"], "hello otlp", "{r}");
        assert_eq!(r["severityText"], "INFO", "{r}");
        assert_eq!(r["resource"]["service.name"], "gen", "{r}");
        assert_eq!(r["attrs"]["http.response.status_code"], "200", "{r}");
        assert!(r["attrs"]["host.name"].is_string(), "{r}");
        assert!(r["attrs"].get("@version").is_none(), "{r}");
        assert!(r["timeUnixNano"].as_str().unwrap().len() >= 19, "{r}");
        seqs.push(r["attrs"]["event.sequence"].as_i64().unwrap());
    }
    seqs.sort();
    assert_eq!(seqs, (0..n as i64).collect::<Vec<_>>(), "each record once");
}

fn check_generated_spans(spans: &[J]) {
    for s in spans {
        assert_eq!(s["name"], "GET /cart", "{s}");
        assert_eq!(s["kind"], 2, "{s}");
        assert_eq!(s["traceId"], "0af7651916cd43dd8448eb211c80319c", "{s}");
        assert_eq!(s["spanId"], "b7ad6b7169203331", "{s}");
        assert_eq!(s["status"]["code"], 2, "{s}");
        assert_eq!(s["status"]["message"], "boom", "{s}");
        assert_eq!(s["attrs"]["http.route"], "/cart", "{s}");
        assert_eq!(s["resource"]["service.name"], "cart", "{s}");
        assert_eq!(s["scope"], "cart.http", "{s}");
        let start: u64 = s["startTimeUnixNano"].as_str().unwrap().parse().unwrap();
        let end: u64 = s["endTimeUnixNano"].as_str().unwrap().parse().unwrap();
        assert_eq!(end - start, 1_500_000, "{s}");
    }
}

#[test]
fn sluice_sends_logs_and_spans_to_the_collector() {
    let Some(bin) = otelcol() else { return };
    for protocol in ["http/protobuf", "http/json", "grpc"] {
        let dir = temp_dir("otlp-out", &protocol.replace('/', "-"));
        let (port, grpc_port) = (free_port(), free_port());
        let _c = collector_to_files(&bin, &dir, port, grpc_port);
        net_support::wait_listening(port, 30);
        net_support::wait_listening(grpc_port, 30);
        let (n, spans) = (300, 5);
        let to = if protocol == "grpc" { grpc_port } else { port };
        let output = format!(r#"url => "http://127.0.0.1:{to}" protocol => "{protocol}""#);
        let mut r = Run::start(
            &dir,
            "",
            &[],
            &generator_config(n, spans, &output),
            Stdio::null(),
            Stdio::null(),
        );
        let log = || {
            format!(
                "{}\n{}",
                r.log(),
                std::fs::read_to_string(dir.join("otelcol.log")).unwrap_or_default()
            )
        };
        let records = wait_items(&dir.join("logs.json"), "logRecords", n, 60, &log);
        check_generated_logs(&records, n);
        let got = wait_items(&dir.join("traces.json"), "spans", spans, 60, &log);
        assert_eq!(got.len(), spans);
        check_generated_spans(&got);
        assert!(r.exit(60).success(), "{}", r.log());
    }
}

/// The collector is not there when sluice starts sending; once it is, every record arrives,
/// once.
#[test]
fn a_collector_that_comes_up_late_gets_every_record() {
    let Some(bin) = otelcol() else { return };
    let dir = temp_dir("otlp-out", "late");
    let port = free_port();
    let n = 200;
    let output = format!(r#"url => "http://127.0.0.1:{port}""#);
    let mut r = Run::start(
        &dir,
        "",
        &[],
        &generator_config(n, 0, &output),
        Stdio::null(),
        Stdio::null(),
    );
    r.wait_log("retrying", 30);
    let _c = collector_to_files(&bin, &dir, port, free_port());
    let log = || r.log();
    let records = wait_items(&dir.join("logs.json"), "logRecords", n, 90, &log);
    check_generated_logs(&records, n);
    assert!(r.exit(60).success(), "{}", r.log());
}

/// The Python SDK logs `n` records (tests/otlp/send_logs.py) to `endpoint` over OTLP/HTTP.
fn sdk_logs(python: &Path, endpoint: &str, n: usize) {
    let sent = Command::new(python)
        .arg(format!(
            "{}/tests/otlp/send_logs.py",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg(endpoint)
        .arg(n.to_string())
        .output()
        .unwrap();
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
}

/// The SDK logs into the collector; the collector's own OTLP/HTTP and OTLP/gRPC exporters
/// each send every record to sluice's input.
#[test]
fn the_collector_sends_to_sluice() {
    let Some(bin) = otelcol() else { return };
    let Some(python) = net_support::otel_python() else {
        return;
    };
    let dir = temp_dir("otlp-out", "collector-in");
    let (cport, sport, gport) = (free_port(), free_port(), free_port());
    let out = dir.join("out.json");
    let config = format!(
        r#"input {{ opentelemetry {{ port => {sport} grpc_port => {gport} host => "127.0.0.1" }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    net_support::wait_listening(sport, 30);
    net_support::wait_listening(gport, 30);
    let _c = collector(
        &bin,
        &dir,
        &format!(
            "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:{cport}\n\
             exporters:\n  otlp_http:\n    endpoint: http://127.0.0.1:{sport}\n  \
             otlp_grpc:\n    endpoint: 127.0.0.1:{gport}\n    tls:\n      insecure: true\n"
        ),
        "    logs:\n      receivers: [otlp]\n      exporters: [otlp_http, otlp_grpc]\n",
    );
    net_support::wait_listening(cport, 30);
    let n = 40;
    sdk_logs(&python, &format!("http://127.0.0.1:{cport}/v1/logs"), n);
    let text = r.wait_lines(&out, 2 * n, 60);
    let mut ids: Vec<i64> = Vec::new();
    for line in text.lines() {
        let e: J = serde_json::from_str(line).unwrap();
        let id = e["attributes"]["order.id"].as_i64().unwrap();
        ids.push(id);
        assert_eq!(e["message"], format!("order {id} shipped"), "{e}");
        assert_eq!(e["log"]["level"], "WARN", "{e}");
        assert_eq!(e["resource"]["attributes"]["service.name"], "shop", "{e}");
        assert_eq!(
            e["resource"]["attributes"]["deployment.environment"],
            "test"
        );
        assert_eq!(e["scope"]["name"], "shop.orders", "{e}");
    }
    ids.sort();
    let twice: Vec<i64> = (0..n as i64).flat_map(|i| [i, i]).collect();
    assert_eq!(ids, twice, "each record once through each exporter");
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
}

/// Events in the input's shape go out through the output and come back in through another
/// sluice's input with every field the mapping defines; JSON and protobuf alike.
#[test]
fn sluice_to_sluice_keeps_every_mapped_field() {
    let log_line = r#"{"@timestamp":"2026-11-28T10:00:00.123Z","message":"disk almost full","log":{"level":"WARN"},"severity_number":13,"event_name":"disk.pressure","observed_timestamp":"2026-11-28T10:00:01.000Z","trace":{"id":"0102030405060708090a0b0c0d0e0f10"},"span":{"id":"abababababababab"},"attributes":{"http.method":"GET","retries":3,"ratio":0.5,"ok":true,"list":["a",1],"nested":{"a":"b"}},"dropped_attributes_count":2,"resource":{"attributes":{"service.name":"checkout"},"schema_url":"https://opentelemetry.io/schemas/1.26.0"},"scope":{"name":"app.logger","version":"1.2","attributes":{"sa":true}}}"#;
    let span_line = r#"{"@timestamp":"2026-11-28T10:00:00.500Z","name":"charge","kind":"Client","duration":2500000,"trace":{"id":"0102030405060708090a0b0c0d0e0f10"},"span":{"id":"0000000000000002"},"parent_span_id":"0000000000000001","trace_state":"k=v","status":{"code":"Ok"},"attributes":{"peer.service":"bank"},"events":[{"time":"2026-11-28T10:00:00.501Z","name":"retry","attributes":{"n":1}}],"links":[{"trace_id":"ffffffffffffffffffffffffffffffff","span_id":"0000000000000009"}],"resource":{"attributes":{"service.name":"checkout"}},"scope":{"name":"app.http"}}"#;
    for protocol in ["http/protobuf", "http/json"] {
        let dir = temp_dir(
            "otlp-out",
            &format!("roundtrip-{}", protocol.replace('/', "-")),
        );
        let port = free_port();
        let out = dir.join("out.json");
        let receiver = format!(
            r#"input {{ opentelemetry {{ port => {port} host => "127.0.0.1" grpc => false }} }}
               output {{ file {{ path => "{}" }} }}"#,
            out.display()
        );
        let rdir = dir.join("receiver");
        std::fs::create_dir_all(rdir.join("settings")).unwrap();
        let mut receiver = Run::start(&rdir, "", &[], &receiver, Stdio::null(), Stdio::null());
        net_support::wait_listening(port, 30);
        let sender = format!(
            r#"input {{ generator {{ count => 1 codec => json lines => ['{log_line}', '{span_line}'] }} }}
               filter {{ mutate {{ remove_field => ["host", "event", "@version"] }} }}
               output {{
                 if [kind] {{ opentelemetry {{ url => "http://127.0.0.1:{port}" protocol => "{protocol}" signal => "traces" }} }}
                 else {{ opentelemetry {{ url => "http://127.0.0.1:{port}" protocol => "{protocol}" compression => "none" }} }}
               }}"#
        );
        let mut sender = Run::start(&dir, "", &[], &sender, Stdio::null(), Stdio::null());
        assert!(sender.exit(60).success(), "{}", sender.log());
        let text = receiver.wait_lines(&out, 2, 60);
        let mut got: Vec<J> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        got.sort_by_key(|e| e["name"].is_string());
        for (want, got) in [log_line, span_line].iter().zip(&got) {
            let want: J = serde_json::from_str(want).unwrap();
            let mut got = got.clone();
            got.as_object_mut().unwrap().remove("@version");
            assert_eq!(got, want, "{protocol}");
        }
        receiver.signal("-TERM");
        assert!(receiver.exit(30).success(), "{}", receiver.log());
    }
}

/// The receiving sluice is blocked and answers 429 with `Retry-After`; the output waits
/// and sends again, and once the receiver drains every record is there, once.
#[test]
fn a_busy_receiver_gets_every_record_in_the_end() {
    for protocol in ["http/protobuf", "grpc"] {
        busy_receiver(protocol);
    }
}

/// Over `protocol`: HTTP's 429 with `Retry-After`, or gRPC's RESOURCE_EXHAUSTED with a
/// `RetryInfo`.
fn busy_receiver(protocol: &str) {
    let dir = temp_dir("otlp-out", &format!("busy-{}", protocol.replace('/', "-")));
    let (http_port, grpc_port) = (free_port(), free_port());
    let port = if protocol == "grpc" {
        grpc_port
    } else {
        http_port
    };
    let receiver = format!(
        r#"input {{ opentelemetry {{ port => {http_port} grpc_port => {grpc_port} host => "127.0.0.1" threads => 1 max_pending_requests => 1 }} }}
           output {{ stdout {{ codec => line {{ format => "%{{[attributes][event.sequence]}} %{{message}}" }} }} }}"#
    );
    let rdir = dir.join("receiver");
    std::fs::create_dir_all(rdir.join("settings")).unwrap();
    let mut receiver = Run::start(
        &rdir,
        net_support::BLOCKING_SETTINGS,
        &[],
        &receiver,
        Stdio::null(),
        Stdio::piped(),
    );
    net_support::wait_listening(port, 30);
    let n = 400;
    let sender = format!(
        r#"input {{ generator {{ count => {n} message => "{}" }} }}
           output {{ opentelemetry {{ url => "http://127.0.0.1:{port}" protocol => "{protocol}" }} }}"#,
        "x".repeat(2000)
    );
    let sender_settings = "pipeline.workers: 4\npipeline.batch.size: 20\n";
    let mut sender = Run::start(
        &dir,
        sender_settings,
        &[],
        &sender,
        Stdio::null(),
        Stdio::null(),
    );
    let busy = if protocol == "grpc" {
        "gRPC status 8"
    } else {
        "429"
    };
    sender.wait_log(busy, 60);
    let reader = receiver.read_stdout();
    assert!(sender.exit(120).success(), "{}", sender.log());
    std::thread::sleep(Duration::from_millis(500));
    receiver.signal("-TERM");
    assert!(receiver.exit(30).success(), "{}", receiver.log());
    let mut seqs: Vec<i64> = reader
        .join()
        .unwrap()
        .lines()
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect();
    seqs.sort();
    assert_eq!(seqs, (0..n as i64).collect::<Vec<_>>(), "each record once");
}

/// The input's `mapping => raw` keeps OTLP's JSON under `[otel]`, and the output sends it on
/// as it came: the SDK's records reach the collector with their nanosecond times, observed
/// times and flags, which the default mapping does not keep.
#[test]
fn raw_mapping_forwards_records_unchanged() {
    let Some(bin) = otelcol() else { return };
    let Some(python) = net_support::otel_python() else {
        return;
    };
    let dir = temp_dir("otlp-out", "raw");
    let (cport, sport) = (free_port(), free_port());
    let _c = collector_to_files(&bin, &dir, cport, free_port());
    net_support::wait_listening(cport, 30);
    let config = format!(
        r#"input {{ opentelemetry {{ port => {sport} host => "127.0.0.1" grpc => false mapping => "raw" }} }}
           filter {{ if ![otel][logRecord] {{ drop {{}} }} }}
           output {{ opentelemetry {{ url => "http://127.0.0.1:{cport}" }} }}"#
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    net_support::wait_listening(sport, 30);
    let n = 20;
    sdk_logs(&python, &format!("http://127.0.0.1:{sport}/v1/logs"), n);
    let log = || r.log();
    let records = wait_items(&dir.join("logs.json"), "logRecords", n, 60, &log);
    let mut ids: Vec<i64> = Vec::new();
    let mut sub_millisecond = 0;
    for rec in &records {
        let id = rec["attrs"]["order.id"].as_i64().unwrap();
        ids.push(id);
        assert_eq!(rec["body"]["stringValue"], format!("order {id} shipped"));
        assert_eq!(rec["severityNumber"], 13, "{rec}");
        assert_eq!(rec["severityText"], "WARN", "{rec}");
        assert!(rec["observedTimeUnixNano"].is_string(), "{rec}");
        assert_eq!(rec["resource"]["service.name"], "shop", "{rec}");
        assert_eq!(rec["scope"], "shop.orders", "{rec}");
        let t: u64 = rec["timeUnixNano"].as_str().unwrap().parse().unwrap();
        sub_millisecond += usize::from(!t.is_multiple_of(1_000_000));
    }
    assert!(sub_millisecond > 0, "no record kept its nanoseconds");
    ids.sort();
    assert_eq!(ids, (0..n as i64).collect::<Vec<_>>());
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
}
