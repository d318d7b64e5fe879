//! Running sluice where Logstash ran (issue 38), through the real binary: an unchanged
//! Logstash settings directory (`--path.settings /etc/logstash`: logstash.yml, pipelines.yml,
//! conf.d, jvm.options and log4j2.properties), config files with a byte order mark, the
//! settings of a Logstash 9.5 `logstash.yml`, Fleet's `elastic_agent` input, output chunking
//! of batches the filters grew, `pipeline.recoverable`, and certificates rotated under a
//! running pipeline (`ssl.reload.automatic`).

mod api_support;
mod net_support;
mod run_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use run_support::{temp_dir, Run};

/// A Logstash package's /etc/logstash, unchanged but for paths: logstash.yml (path.data,
/// path.logs), pipelines.yml (conf.d/*.conf), a config with a BOM, jvm.options and
/// log4j2.properties. Sluice runs it, says once that the JVM and log4j2 files are ignored, and
/// Fleet's `elastic_agent` input listens as the beats input does.
#[test]
fn an_unchanged_logstash_settings_directory_runs() {
    let dir = temp_dir("production", "etc-logstash");
    let etc = dir.join("etc-logstash");
    std::fs::create_dir_all(etc.join("conf.d")).unwrap();
    let out = dir.join("out.log");
    let port = net_support::free_port();
    std::fs::write(
        etc.join("logstash.yml"),
        format!(
            "# Settings file in YAML\npath.data: {}\npath.logs: {}\n",
            dir.join("data").display(),
            dir.join("logs").display()
        ),
    )
    .unwrap();
    std::fs::write(
        etc.join("pipelines.yml"),
        format!(
            "# This file is where you define your pipelines.\n- pipeline.id: main\n  path.config: \"{}/conf.d/*.conf\"\n",
            etc.display()
        ),
    )
    .unwrap();
    // Windows editors start files with a byte order mark.
    std::fs::write(
        etc.join("conf.d/10-input.conf"),
        format!("\u{feff}input {{ generator {{ count => 100 }} elastic_agent {{ host => \"127.0.0.1\" port => {port} }} }}\n"),
    )
    .unwrap();
    std::fs::write(
        etc.join("conf.d/90-output.conf"),
        format!(
            "\u{feff}output {{ file {{ path => \"{}\" codec => line {{ format => \"%{{message}}\" }} }} }}\n",
            out.display()
        ),
    )
    .unwrap();
    std::fs::write(etc.join("jvm.options"), "-Xms1g\n-Xmx1g\n").unwrap();
    std::fs::write(etc.join("log4j2.properties"), "status = error\n").unwrap();
    let mut run = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--log.level", "info", "--path.settings"])
        .arg(&etc)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = run.stderr.take().unwrap();
    let log = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    net_support::wait_listening(port, 30);
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(&out)
        .unwrap_or_default()
        .lines()
        .count()
        < 100
    {
        assert!(Instant::now() < deadline, "events missing");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &run.id().to_string()])
        .status();
    let status = run.wait().unwrap();
    let log = log.join().unwrap();
    assert!(status.success(), "{status}\n{log}");
    assert!(
        log.contains("jvm.options: ignored (there is no JVM)"),
        "{log}"
    );
    assert!(log.contains("log4j2.properties: ignored"), "{log}");
    assert!(
        std::fs::read_dir(dir.join("logs")).unwrap().count() > 0,
        "nothing in path.logs"
    );
}

/// The settings a Logstash 9.4/9.5 `logstash.yml` sets start sluice (they stopped it with
/// "a Logstash setting that sluice does not support"); what sluice does not have (the OTLP
/// export of metrics) is refused with a message naming the setting.
#[test]
fn the_settings_of_logstash_9_5_start_sluice() {
    let dir = temp_dir("production", "settings-9-5");
    let yml = "\
pipeline.batch.output_chunking.growth_threshold_factor: 1000
pipeline.recoverable: auto
config.reload.automatic: true
ssl.reload.automatic: true
ssl.reload.interval: 2s
dead_letter_queue.enable: true
dead_letter_queue.flush_interval: 5000
dead_letter_queue.flush_check_interval: 1000
otel.metrics.enabled: false
";
    let out = dir.join("out.log");
    let config = format!(
        "input {{ generator {{ count => 10 }} }} output {{ file {{ path => \"{}\" }} }}",
        out.display()
    );
    let settings = format!("path.data: {}\n{yml}", dir.join("data").display());
    let mut run = Run::start(&dir, &settings, &[], &config, Stdio::null(), Stdio::null());
    let status = run.exit(60);
    assert!(status.success(), "{status}\n{}", run.log());
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 10);

    for (bad, says) in [
        (
            "otel.metrics.enabled: true\n",
            "exporting sluice's metrics over OTLP is not implemented yet",
        ),
        (
            "otel.exporter.otlp.endpoint: \"http://localhost:4317\"\n",
            "`otel.exporter.otlp.endpoint` is a Logstash setting that sluice does not support (exporting sluice's metrics over OTLP",
        ),
        ("pipeline.recoverable: maybe\n", "pipeline.recoverable"),
        (
            "ssl.reload.automatic: true\n",
            "ssl.reload.automatic: true needs config.reload.automatic: true",
        ),
        (
            "dead_letter_queue.flush_check_interval: 10\n",
            "the minimum is 1000",
        ),
    ] {
        let mut run = Run::start(&dir, bad, &[], &config, Stdio::null(), Stdio::null());
        let status = run.exit(30);
        assert!(!status.success(), "{bad}: started");
        assert!(run.log().contains(says), "{bad}:\n{}", run.log());
    }
}

/// A tiny HTTP server: answers 200 to every request and records each body.
fn http_sink() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&bodies);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let sink = std::sync::Arc::clone(&sink);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut conn = conn;
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let l = line.trim_end();
                        if l.is_empty() {
                            break;
                        }
                        if let Some(v) = l.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0u8; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    sink.lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&body).into_owned());
                    let _ = conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
                }
            });
        }
    });
    (port, bodies)
}

/// `pipeline.batch.output_chunking.growth_threshold_factor`: a batch that a split grew past
/// the factor times the batch size reaches the outputs in chunks of the batch size (the http
/// output's json_batch sends one request per chunk); below the factor, in one piece.
#[test]
fn batches_the_filters_grew_reach_outputs_in_chunks() {
    for (factor, requests) in [(2, 10), (1000, 1)] {
        let dir = temp_dir("production", &format!("chunking-{factor}"));
        let (port, bodies) = http_sink();
        let config = format!(
            r#"input {{ generator {{ count => 1 message => "{}" }} }}
               filter {{ split {{ terminator => "," }} }}
               output {{ http {{ url => "http://127.0.0.1:{port}/" http_method => "post" format => "json_batch" }} }}"#,
            (0..100)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        let settings = format!(
            "path.data: {}\npipeline.workers: 1\npipeline.batch.size: 10\npipeline.batch.output_chunking.growth_threshold_factor: {factor}\n",
            dir.join("data").display()
        );
        let mut run = Run::start(&dir, &settings, &[], &config, Stdio::null(), Stdio::null());
        assert!(run.exit(60).success(), "{}", run.log());
        let bodies = bodies.lock().unwrap();
        assert_eq!(bodies.len(), requests, "factor {factor}: {bodies:?}");
        let events: usize = bodies
            .iter()
            .map(|b| {
                serde_json::from_str::<Vec<serde_json::Value>>(b)
                    .unwrap()
                    .len()
            })
            .sum();
        assert_eq!(events, 100, "factor {factor}");
    }
}

/// `pipeline.recoverable: true`: a pipeline whose input crashed (its port was taken) is
/// started again, with a log line, backing off, and the health report shows the recovery
/// (yellow, `5m-recovery-recent`, `recovery_log`); once the port is free it runs.
#[test]
fn a_recoverable_pipeline_is_started_again_after_its_input_crashed() {
    let dir = api_support::temp_dir("recoverable");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = dir.join("out.log");
    let pipelines = format!(
        "- pipeline.id: main\n  pipeline.recoverable: true\n  config.string: 'input {{ tcp {{ host => \"127.0.0.1\" port => {port} }} }} output {{ file {{ path => \"{}\" codec => line {{ format => \"%{{message}}\" }} }} }}'\n",
        out.display()
    );
    let sluice = api_support::Sluice::start(&dir, "", &pipelines, &[]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sluice
        .log()
        .contains("starting it again (pipeline.recoverable)")
    {
        assert!(Instant::now() < deadline, "no recovery:\n{}", sluice.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(taken);
    let mut conn = net_support::connect(port, 60);
    conn.write_all(b"after the crash\n").unwrap();
    drop(conn);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&out)
        .unwrap_or_default()
        .contains("after the crash")
    {
        assert!(Instant::now() < deadline, "no event:\n{}", sluice.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    let health = sluice.json("/_health_report");
    let main = &health["indicators"]["pipelines"]["indicators"]["main"];
    assert_eq!(main["status"], "yellow", "{health:#}");
    assert_eq!(
        main["diagnosis"][0]["id"],
        "logstash:health:pipeline:recovery:diagnosis:5m-recovery-recent",
        "{main:#}"
    );
    assert!(!main["details"]["recovery_log"]
        .as_array()
        .unwrap()
        .is_empty());
    sluice.stop();
}

/// The subject of the certificate a TLS server on `port` presents (openssl's s_client).
fn served_subject(port: u16) -> String {
    let client = std::process::Command::new("openssl")
        .args(["s_client", "-connect", &format!("127.0.0.1:{port}")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    let mut x509 = std::process::Command::new("openssl")
        .args(["x509", "-noout", "-subject"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    x509.stdin
        .take()
        .unwrap()
        .write_all(&client.stdout)
        .unwrap();
    let out = x509.wait_with_output().unwrap();
    // "subject=CN = server" (OpenSSL 3) or "subject= /CN=server": without spaces.
    String::from_utf8_lossy(&out.stdout)
        .replace(' ', "")
        .trim()
        .to_owned()
}

/// Sends `lines` over TLS to `port` (openssl's s_client), trusting `ca`.
fn send_tls(port: u16, lines: &str) {
    let mut c = std::process::Command::new("openssl")
        .args([
            "s_client",
            "-quiet",
            "-no_ign_eof",
            "-connect",
            &format!("127.0.0.1:{port}"),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = c.stdin.take().unwrap();
    stdin.write_all(lines.as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    drop(stdin);
    let _ = c.wait();
}

/// `ssl.reload.automatic` (issue 38): the certificate and key files of a TLS input are
/// replaced while sluice runs (as cert-manager rotates them): the pipeline picks them up
/// without a restart of the process (new connections get the new certificate), and no
/// event sent before or after is lost.
#[test]
fn rotated_certificates_are_picked_up_and_nothing_is_lost() {
    let dir = temp_dir("production", "ssl-reload");
    let Some(certs) = net_support::certs(&dir.join("certs")) else {
        return;
    };
    // The files the config names; rotated below by replacing their content.
    let (cert, key) = (dir.join("tls.crt"), dir.join("tls.key"));
    std::fs::copy(&certs.server_cert, &cert).unwrap();
    std::fs::copy(&certs.server_key, &key).unwrap();
    let port = net_support::free_port();
    let out = dir.join("out.log");
    let config = format!(
        r#"input {{ tcp {{ host => "127.0.0.1" port => {port} ssl_enabled => true ssl_certificate => "{}" ssl_key => "{}" }} }}
           output {{ file {{ path => "{}" codec => line {{ format => "%{{message}}" }} }} }}"#,
        cert.display(),
        key.display(),
        out.display()
    );
    let settings = format!(
        "path.data: {}\nconfig.reload.automatic: true\nconfig.reload.interval: 1s\nssl.reload.automatic: true\n",
        dir.join("data").display()
    );
    let mut run = Run::start(&dir, &settings, &[], &config, Stdio::null(), Stdio::null());
    net_support::wait_listening(port, 30);
    assert!(
        served_subject(port).ends_with("CN=server"),
        "{}",
        served_subject(port)
    );
    send_tls(port, "before-1\nbefore-2\n");
    run.wait_lines(&out, 2, 30);

    // Rotation: the key first, then the certificate (a reader may see the pair half done).
    std::fs::copy(&certs.client_key, &key).unwrap();
    std::fs::copy(&certs.client_cert, &cert).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if served_subject(port).ends_with("CN=client") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the new certificate is not served:\n{}",
            run.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    send_tls(port, "after-1\nafter-2\n");
    let text = run.wait_lines(&out, 4, 30);
    run.signal("-TERM");
    assert!(run.exit(30).success(), "{}", run.log());
    let mut got: Vec<&str> = text.lines().collect();
    got.sort();
    assert_eq!(
        got,
        ["after-1", "after-2", "before-1", "before-2"],
        "{}",
        run.log()
    );
    assert!(
        run.log()
            .contains("configuration changed; restarting the pipeline"),
        "{}",
        run.log()
    );
}

/// The monitoring API's certificate follows its keystore file too (`ssl.reload.automatic`):
/// after the file is replaced, new connections get the new certificate, without a restart.
#[test]
fn the_apis_certificate_follows_its_keystore_file() {
    let dir = api_support::temp_dir("api-ssl-reload");
    let Some(certs) = net_support::certs(&dir.join("certs")) else {
        return;
    };
    let keystore = dir.join("keystore.pem");
    api_support::write_keystore(&keystore, &certs.server_cert, &certs.server_key);
    let sluice = api_support::Sluice::start(
        &dir,
        &format!(
            "api.ssl.enabled: true\napi.ssl.keystore.path: {}\nconfig.reload.automatic: true\nssl.reload.automatic: true\nssl.reload.interval: 1s\n",
            keystore.display()
        ),
        "",
        &["-e", "input { pipeline { address => \"api-rotation\" } } output { null {} }"],
    );
    assert!(served_subject(sluice.port).ends_with("CN=server"));
    // Written whole elsewhere and renamed over, as a rotation tool does.
    let next = dir.join("keystore.pem.new");
    api_support::write_keystore(&next, &certs.client_cert, &certs.client_key);
    std::fs::rename(&next, &keystore).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !served_subject(sluice.port).ends_with("CN=client") {
        assert!(Instant::now() < deadline, "not reloaded:\n{}", sluice.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        sluice.log().contains("certificate reloaded"),
        "{}",
        sluice.log()
    );
    sluice.stop();
}
