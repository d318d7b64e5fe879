//! The `opentelemetry` input through the real binary: the OpenTelemetry Python SDK (PyPI,
//! from `scripts/otel-python`) logs through its OTLP/HTTP protobuf exporter and every record
//! arrives with its message, severity, attributes, resource and scope; its spans arrive one
//! event each, children pointing at their parents; a JSON body is taken
//! too; and what is no OTLP request gets the answer the protocol asks for (400 with a
//! `google.rpc.Status` saying where, 405, 415, 404), the input serving on; a blocked pipeline
//! answers 429 with `Retry-After` past the pending limit and loses nothing it accepted.

mod net_support;
mod run_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use net_support::free_port;
use run_support::{temp_dir, Run};

fn post(port: u16, path: &str, method: &str, content_type: &str, body: &[u8]) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into();
    let req = ureq::http::Request::builder()
        .method(method)
        .uri(format!("http://127.0.0.1:{port}{path}"))
        .header("Content-Type", content_type)
        .body(body.to_vec())
        .unwrap();
    let mut r = agent.run(req).unwrap();
    let status = r.status().as_u16();
    (status, r.body_mut().read_to_string().unwrap_or_default())
}

/// An input on free ports (OTLP/HTTP, OTLP/gRPC) with `options`, writing to a file.
fn start_with(name: &str, options: &str) -> (Run, PathBuf, u16, u16) {
    let dir = temp_dir("otlp", name);
    let out = dir.join("out.json");
    let (port, grpc_port) = (free_port(), free_port());
    let config = format!(
        r#"input {{ opentelemetry {{ port => {port} grpc_port => {grpc_port} host => "127.0.0.1" {options} }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    net_support::wait_listening(port, 30);
    if !options.contains("grpc => false") {
        net_support::wait_listening(grpc_port, 30);
    }
    (r, out, port, grpc_port)
}

fn start(name: &str) -> (Run, PathBuf, u16) {
    let (r, out, port, _) = start_with(name, "grpc => false");
    (r, out, port)
}

/// Runs `tests/otlp/<script>` to send `n` of its records to the input: to `/v1/<signal>`
/// with the SDK's OTLP/HTTP exporter, or with `grpc` its OTLP/gRPC one.
fn sdk_sends(python: &Path, script: &str, port: u16, signal: &str, n: usize, grpc: bool) {
    let mut cmd = Command::new(python);
    cmd.arg(format!(
        "{}/tests/otlp/{script}",
        env!("CARGO_MANIFEST_DIR")
    ));
    if grpc {
        cmd.arg(format!("http://127.0.0.1:{port}"))
            .arg(n.to_string())
            .arg("grpc");
    } else {
        cmd.arg(format!("http://127.0.0.1:{port}/v1/{signal}"))
            .arg(n.to_string());
    }
    let sent = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&sent.stderr);
    assert!(sent.status.success(), "{script}: {err}");
}

fn lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The SDK logs 50 records over OTLP/HTTP, then 50 over OTLP/gRPC, into one input.
#[test]
fn the_python_sdk_logs_into_the_input() {
    let Some(python) = net_support::otel_python() else {
        return;
    };
    let (mut r, out, port, grpc_port) = start_with("sdk", "");
    let n = 50;
    for (round, grpc) in [false, true].into_iter().enumerate() {
        let p = if grpc { grpc_port } else { port };
        sdk_sends(&python, "send_logs.py", p, "logs", n, grpc);
        let all = lines(&r.wait_lines(&out, n * (round + 1), 60));
        let events = &all[n * round..];
        assert_eq!(events.len(), n, "grpc: {grpc}");
        let mut ids: Vec<i64> = Vec::new();
        for e in events {
            let id = e["attributes"]["order.id"].as_i64().unwrap();
            ids.push(id);
            assert_eq!(e["message"], format!("order {id} shipped"), "{e}");
            assert_eq!(e["attributes"]["order.total"], id as f64 * 1.5, "{e}");
            assert_eq!(e["log"]["level"], "WARN", "{e}");
            assert_eq!(e["severity_number"], 13, "{e}");
            assert_eq!(e["resource"]["attributes"]["service.name"], "shop", "{e}");
            assert_eq!(
                e["resource"]["attributes"]["telemetry.sdk.language"],
                "python"
            );
            assert_eq!(e["scope"]["name"], "shop.orders", "{e}");
            assert!(e["@timestamp"].as_str().unwrap().starts_with("20"), "{e}");
        }
        ids.sort();
        assert_eq!(ids, (0..n as i64).collect::<Vec<_>>(), "grpc: {grpc}");
    }
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
}

/// Spans from the SDK, over OTLP/HTTP and over OTLP/gRPC: one event per span, the child
/// pointing at its parent, its event and its failed status with it.
#[test]
fn the_python_sdk_sends_traces_into_the_input() {
    let Some(python) = net_support::otel_python() else {
        return;
    };
    let (mut r, out, port, grpc_port) = start_with("traces", "");
    let n = 20;
    sdk_sends(&python, "send_traces.py", port, "traces", n, false);
    sdk_sends(&python, "send_traces.py", grpc_port, "traces", n, true);
    let events = lines(&r.wait_lines(&out, 4 * n, 60));
    let by_name = |name: &str| -> Vec<&serde_json::Value> {
        events.iter().filter(|e| e["name"] == name).collect()
    };
    let (parents, children) = (by_name("checkout"), by_name("charge"));
    assert_eq!((parents.len(), children.len()), (2 * n, 2 * n));
    let mut orders: Vec<i64> = Vec::new();
    for p in &parents {
        orders.push(p["attributes"]["order.id"].as_i64().unwrap());
        assert_eq!(p["kind"], "Server", "{p}");
        assert_eq!(p["scope"]["name"], "shop.checkout", "{p}");
        assert_eq!(p["scope"]["version"], "3.1", "{p}");
        assert_eq!(p["resource"]["attributes"]["service.name"], "shop", "{p}");
        assert!(p.get("parent_span_id").is_none(), "{p}");
        assert!(p["duration"].as_i64().unwrap() > 0, "{p}");
        let id = p["span"]["id"].as_str().unwrap();
        assert_eq!(id.len(), 16);
        let child = children
            .iter()
            .find(|c| c["parent_span_id"] == id)
            .unwrap_or_else(|| panic!("no child of {p}"));
        assert_eq!(child["trace"]["id"], p["trace"]["id"]);
        assert_eq!(child["trace"]["id"].as_str().unwrap().len(), 32);
        assert_eq!(child["kind"], "Internal", "{child}");
        assert_eq!(child["status"]["code"], "Error", "{child}");
        assert_eq!(child["status"]["message"], "declined", "{child}");
        assert_eq!(child["events"][0]["name"], "card declined", "{child}");
        assert_eq!(child["events"][0]["attributes"]["attempt"], 1, "{child}");
    }
    orders.sort();
    let twice: Vec<i64> = (0..n as i64).flat_map(|i| [i, i]).collect();
    assert_eq!(orders, twice, "each order once over each protocol");
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
}

/// The pipeline is blocked (its stdout not read): the first requests wait for room, the ones
/// past threads + max_pending_requests get 429 with `Retry-After` (which OTLP senders retry)
/// at once; once the output drains, every accepted record is there.
#[test]
fn a_blocked_pipeline_answers_429_with_retry_after() {
    let dir = temp_dir("otlp", "busy");
    let port = free_port();
    let config = format!(
        r#"input {{ opentelemetry {{ port => {port} host => "127.0.0.1" grpc => false threads => 1 max_pending_requests => 2 }} }}
           output {{ stdout {{ codec => line {{ format => "%{{message}}" }} }} }}"#
    );
    let mut r = Run::start(
        &dir,
        net_support::BLOCKING_SETTINGS,
        &[],
        &config,
        Stdio::null(),
        Stdio::piped(),
    );
    net_support::wait_listening(port, 30);
    let record = |text: &str| {
        format!(
            r#"{{"resourceLogs":[{{"scopeLogs":[{{"logRecords":[{{"body":{{"stringValue":"{text}"}}}}]}}]}}]}}"#
        )
    };
    let big = "x".repeat(60_000);
    let fill = net_support::fill_slowly(move |i| {
        let body = record(&format!("{i} {big}"));
        post(
            port,
            "/v1/logs",
            "POST",
            "application/json",
            body.as_bytes(),
        )
        .0
    });
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut busy = agent
        .post(format!("http://127.0.0.1:{port}/v1/logs"))
        .header("Content-Type", "application/json")
        .send(record("one too many"))
        .unwrap();
    assert_eq!(busy.status().as_u16(), 429, "{}", r.log());
    assert_eq!(busy.headers().get("retry-after").unwrap(), "1");
    let status: serde_json::Value =
        serde_json::from_str(&busy.body_mut().read_to_string().unwrap()).unwrap();
    assert_eq!(status["code"], 8, "{status}");
    let reader = r.read_stdout();
    let accepted = net_support::accepted(fill);
    std::thread::sleep(Duration::from_millis(500));
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let out = reader.join().unwrap();
    assert_eq!(out.lines().count(), accepted, "accepted records lost");
}

#[test]
fn json_bodies_and_bad_requests() {
    let (mut r, out, port) = start("json");
    let json = br#"{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"api"}}]},
        "scopeLogs":[{"scope":{"name":"s"},"logRecords":[{"timeUnixNano":"1764300000123000000","severityText":"ERROR",
        "body":{"kvlistValue":{"values":[{"key":"k","value":{"intValue":"7"}}]}},
        "traceId":"5B8EFFF798038103D269B633813FC60C","spanId":"EEE19B7EC3C1B174"}]}]}]}"#;
    assert_eq!(
        post(port, "/v1/logs", "POST", "application/json", json),
        (200, "{}".into())
    );
    let (code, body) = post(
        port,
        "/v1/logs",
        "POST",
        "application/json",
        br#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":true}]}]}]}"#,
    );
    assert_eq!(code, 400);
    let status: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status["code"], 3);
    let message = status["message"].as_str().unwrap();
    assert!(
        message.contains("resourceLogs[0].scopeLogs[0].logRecords[0].timeUnixNano"),
        "{message}"
    );
    // Not protobuf: 400 too, in protobuf (a google.rpc.Status: code 3 is its first field).
    let (code, body) = post(
        port,
        "/v1/logs",
        "POST",
        "application/x-protobuf",
        b"\xff\xff\xff",
    );
    assert_eq!(code, 400);
    assert!(body.as_bytes().starts_with(b"\x08\x03"), "{body:?}");
    assert_eq!(post(port, "/v1/logs", "POST", "text/plain", b"x").0, 415);
    assert_eq!(
        post(port, "/v1/logs", "PUT", "application/json", b"{}").0,
        405
    );
    // An empty metrics request: nothing to queue, taken.
    assert_eq!(
        post(port, "/v1/metrics", "POST", "application/json", b"{}").0,
        200
    );
    assert_eq!(
        post(port, "/v1/other", "POST", "application/json", b"{}").0,
        404
    );
    // An empty traces request in JSON: answered in JSON.
    assert_eq!(
        post(port, "/v1/traces", "POST", "application/json", b"{}"),
        (200, "{}".into())
    );
    // An empty request is a success with nothing in it.
    assert_eq!(
        post(port, "/v1/logs", "POST", "application/x-protobuf", b""),
        (200, String::new())
    );
    let events = lines(&r.wait_lines(&out, 1, 30));
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(e["@timestamp"], "2025-11-28T03:20:00.123Z");
    assert_eq!(e["log"]["level"], "ERROR");
    assert_eq!(e["body"]["structured"]["k"], 7);
    assert_eq!(e["trace"]["id"], "5b8efff798038103d269b633813fc60c");
    assert_eq!(e["span"]["id"], "eee19b7ec3c1b174");
    assert_eq!(e["resource"]["attributes"]["service.name"], "api");
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
}

/// Runs one gRPC call with grpcio (`tests/otlp/grpc_call.py`): the status's name and details.
fn grpc_call(python: &Path, port: u16, method: &str, body_hex: &str, auth: Option<&str>) -> String {
    grpc_call_with(python, port, method, body_hex, auth, None)
}

/// As [`grpc_call`], over TLS trusting `ca` when given.
fn grpc_call_with(
    python: &Path,
    port: u16,
    method: &str,
    body_hex: &str,
    auth: Option<&str>,
    ca: Option<&Path>,
) -> String {
    let mut cmd = Command::new(python);
    if let Some(ca) = ca {
        cmd.env("SLUICE_GRPC_CA", ca);
    }
    cmd.arg(format!(
        "{}/tests/otlp/grpc_call.py",
        env!("CARGO_MANIFEST_DIR")
    ))
    .arg(format!("127.0.0.1:{port}"))
    .arg(method)
    .arg(body_hex);
    if let Some(a) = auth {
        cmd.arg(a);
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "grpc_call.py: {err}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

const LOGS: &str = "/opentelemetry.proto.collector.logs.v1.LogsService/Export";

/// One record whose body is "hi", as an `ExportLogsServiceRequest`.
const ONE_RECORD: &str = "0a0a120812062a040a026869";

/// What is no OTLP/gRPC call gets gRPC's status for it (INVALID_ARGUMENT for bytes that
/// are no request, UNIMPLEMENTED for unknown methods, UNAUTHENTICATED without
/// the credentials), counted, and the input serves on.
#[test]
fn grpc_calls_and_refusals() {
    let Some(python) = net_support::otel_python() else {
        return;
    };
    let (mut r, out, _, grpc_port) = start_with("grpc", "");
    let call = |method: &str, body: &str| grpc_call(&python, grpc_port, method, body, None);
    let garbage = call(LOGS, "0a0512");
    assert!(
        garbage.starts_with("INVALID_ARGUMENT not an OTLP logs request"),
        "{garbage}"
    );
    let metrics = call(
        "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
        "0a0512",
    );
    assert!(
        metrics.starts_with("INVALID_ARGUMENT not an OTLP metrics request"),
        "{metrics}"
    );
    let unknown = call("/some.Service/Call", "");
    assert!(
        unknown.starts_with("UNIMPLEMENTED no such OTLP method"),
        "{unknown}"
    );
    assert_eq!(call(LOGS, ONE_RECORD), "OK");
    let e = &lines(&r.wait_lines(&out, 1, 30))[0];
    assert_eq!(e["message"], "hi", "{e}");
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());

    let (mut r, out, _, grpc_port) = start_with("grpc-auth", r#"user => "u" password => "p""#);
    let call = |auth| grpc_call(&python, grpc_port, LOGS, ONE_RECORD, auth);
    assert!(call(None).starts_with("UNAUTHENTICATED"));
    assert!(call(Some("Basic dTp4")).starts_with("UNAUTHENTICATED"));
    assert_eq!(call(Some("Basic dTpw")), "OK");
    assert_eq!(lines(&r.wait_lines(&out, 1, 30)).len(), 1);
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
}

/// The SDK's metrics (a counter, a histogram, an up-down counter and an observable gauge),
/// over OTLP/HTTP and over OTLP/gRPC: one event per data point, each with its metric, value,
/// attributes and resource.
#[test]
fn the_python_sdk_sends_metrics_into_the_input() {
    let Some(python) = net_support::otel_python() else {
        return;
    };
    let (mut r, out, port, grpc_port) = start_with("metrics", "");
    for (round, grpc) in [false, true].into_iter().enumerate() {
        let p = if grpc { grpc_port } else { port };
        sdk_sends(&python, "send_metrics.py", p, "metrics", 3, grpc);
        // Per route (3): a counter point, a histogram point, an up-down counter point; and
        // one gauge point.
        let all = lines(&r.wait_lines(&out, 10 * (round + 1), 60));
        let events = &all[10 * round..];
        let of = |name: &str| -> Vec<&serde_json::Value> {
            events
                .iter()
                .filter(|e| e["metric"]["name"] == name)
                .collect()
        };
        let orders = of("shop.orders");
        assert_eq!(orders.len(), 3, "grpc: {grpc}: {events:?}");
        for e in &orders {
            let route = e["attributes"]["http.route"].as_str().unwrap();
            let i: i64 = route.trim_start_matches("/r").parse().unwrap();
            assert_eq!(e["metrics"]["shop.orders"], i + 1, "{e}");
            assert_eq!(e["metric"]["type"], "sum", "{e}");
            assert_eq!(e["metric"]["monotonic"], true, "{e}");
            assert_eq!(e["metric"]["temporality"], "cumulative", "{e}");
            assert_eq!(e["metric"]["unit"], "{order}", "{e}");
            assert_eq!(e["resource"]["attributes"]["service.name"], "shop", "{e}");
            assert_eq!(e["scope"]["name"], "shop.meter", "{e}");
            assert!(e["start_timestamp"].is_string(), "{e}");
        }
        let latency = of("shop.latency");
        assert_eq!(latency.len(), 3);
        for e in &latency {
            let h = &e["metrics"]["shop.latency"];
            assert_eq!(h["count"], 2, "{e}");
            assert_eq!(h["sum"], 30.0, "{e}");
            assert_eq!(h["min"], 10.0, "{e}");
            assert_eq!(h["max"], 20.0, "{e}");
            let buckets: i64 = h["bucket_counts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_i64().unwrap())
                .sum();
            assert_eq!(buckets, 2, "{e}");
            assert_eq!(
                h["bucket_counts"].as_array().unwrap().len(),
                h["explicit_bounds"].as_array().unwrap().len() + 1
            );
            assert_eq!(e["metric"]["type"], "histogram", "{e}");
        }
        let inflight = of("shop.inflight");
        assert_eq!(inflight.len(), 3);
        assert!(inflight.iter().all(|e| e["metric"]["monotonic"] == false));
        let gauge = of("shop.temperature");
        assert_eq!(gauge.len(), 1);
        assert_eq!(gauge[0]["metrics"]["shop.temperature"], 21.5);
        assert_eq!(gauge[0]["metric"]["type"], "gauge");
    }
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
}

/// `bearer_token`: HTTP and gRPC requests need `Authorization: Bearer <token>`. With the
/// `ssl_*` options, gRPC goes over TLS (HTTP/2 by ALPN): grpcio trusting the CA gets in,
/// and so does sluice's own output over gRPC with TLS.
#[test]
fn grpc_over_tls_and_bearer_tokens() {
    let Some(python) = net_support::otel_python() else {
        return;
    };
    let dir = temp_dir("otlp", "grpc-tls");
    let Some(certs) = net_support::certs(&dir.join("certs")) else {
        return;
    };
    let tls = format!(
        r#"bearer_token => "s3cret" ssl_enabled => true ssl_certificate => "{}" ssl_key => "{}""#,
        certs.server_cert.display(),
        certs.server_key.display()
    );
    let (mut r, out, port, grpc_port) = start_with("grpc-tls-in", &tls);
    let ca = Some(certs.ca.as_path());
    let call = |auth| grpc_call_with(&python, grpc_port, LOGS, ONE_RECORD, auth, ca);
    assert!(call(None).starts_with("UNAUTHENTICATED"));
    assert!(call(Some("Bearer wrong")).starts_with("UNAUTHENTICATED"));
    assert_eq!(call(Some("Bearer s3cret")), "OK");
    // OTLP/HTTP over TLS with the same token.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .tls_config(
            ureq::tls::TlsConfig::builder()
                .root_certs(ureq::tls::RootCerts::new_with_certs(&[
                    ureq::tls::Certificate::from_pem(&std::fs::read(&certs.ca).unwrap())
                        .unwrap()
                        .to_owned(),
                ]))
                .build(),
        )
        .build()
        .into();
    let url = format!("https://127.0.0.1:{port}/v1/logs");
    let send = |auth: &str| {
        agent
            .post(&url)
            .header("Content-Type", "application/json")
            .header("Authorization", auth)
            .send(r#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"over https"}}]}]}]}"#)
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(send("Bearer nope"), 401);
    assert_eq!(send("Bearer s3cret"), 200);
    // sluice's output, over gRPC with TLS.
    let sender = format!(
        r#"input {{ generator {{ count => 3 message => "from sluice" }} }}
           output {{ opentelemetry {{ url => "https://127.0.0.1:{grpc_port}" protocol => "grpc"
             headers => {{ "Authorization" => "Bearer s3cret" }}
             ssl_certificate_authorities => ["{}"] }} }}"#,
        certs.ca.display()
    );
    let sdir = dir.join("sender");
    std::fs::create_dir_all(sdir.join("settings")).unwrap();
    let mut sender = Run::start(&sdir, "", &[], &sender, Stdio::null(), Stdio::null());
    assert!(sender.exit(60).success(), "{}", sender.log());
    let events = lines(&r.wait_lines(&out, 5, 30));
    let messages: Vec<&str> = events
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages.iter().filter(|m| **m == "from sluice").count(),
        3,
        "{messages:?}"
    );
    assert!(messages.contains(&"hi") && messages.contains(&"over https"));
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
}
