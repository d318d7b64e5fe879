//! `sluice tap` through the real binary against a running sluice and its monitoring API: a tap
//! on a filter gets the filter's changes and only events matching `--when`; inputs and outputs
//! tapped; two taps at once; rubydebug; unknown ids, pipelines and conditions are clear
//! errors; the API's basic auth and TLS apply; a client that stops reading is dropped for (said in
//! its stream) while the pipeline goes on; a quiet tap sends heartbeats and a silent server is
//! given up on; a reload ends a tap on it; and `pipeline.lineage`
//! across a pipeline-to-pipeline link, seen by an output.

mod api_support;
mod net_support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use api_support::{temp_dir, write_keystore, Sluice};
use serde_json::Value;

const PIPELINE: &str = r#"
input { generator { id => "gen" lines => ["alpha", "beta"] count => 0 } }
filter {
  mutate { id => "tagger" add_field => { "seen" => "%{message}-tagged" } }
  if [message] == "beta" { mutate { id => "beta_only" add_tag => ["b"] } }
}
output { null { id => "sink" } }"#;

/// Runs `sluice tap` against the API on `port` until it exits (bounded; its output is read as
/// it comes, so that a full pipe never holds it).
fn tap(port: u16, args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("tap")
        .arg("--api")
        .arg(format!("http://127.0.0.1:{port}"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(o) => o.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("sluice tap {args:?} did not end within 60 s");
        }
    }
}

/// `GET /_node/tap?query` sent by hand, the connection left to the test to read (or not).
fn raw_tap(port: u16, query: &str) -> std::net::TcpStream {
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(conn, "GET /_node/tap?{query} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    conn
}

fn lines(o: &Output) -> Vec<Value> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn start(name: &str, sluice_yml: &str) -> Sluice {
    let dir = temp_dir(name);
    Sluice::start(&dir, sluice_yml, "", &["-e", PIPELINE])
}

#[test]
fn a_tap_sees_each_plugins_events_as_they_leave_it() {
    let s = start("tap-plugins", "");
    // The filter: its change made, only what matches --when.
    let got = lines(&tap(
        s.port,
        &[
            "main/tagger",
            "--when",
            r#"[message] == "beta""#,
            "--limit",
            "10",
            "--format",
            "json",
        ],
    ));
    assert_eq!(got.len(), 10);
    for l in &got {
        assert_eq!(l["pipeline"], "main", "{l}");
        assert_eq!(l["plugin"], "tagger");
        assert_eq!(l["kind"], "filter");
        assert!(l["time"].as_str().is_some_and(|t| t.ends_with('Z')), "{l}");
        assert_eq!(l["event"]["message"], "beta");
        assert_eq!(l["event"]["seen"], "beta-tagged");
        assert!(l["event"].get("tags").is_none(), "before beta_only: {l}");
    }
    // The input: before any filter; the output: after all of them (an id alone finds it).
    let input = lines(&tap(s.port, &["gen", "--limit", "5"]));
    assert_eq!(input.len(), 5);
    assert!(input
        .iter()
        .all(|l| l["kind"] == "input" && l["event"].get("seen").is_none()));
    let output = lines(&tap(
        s.port,
        &["main/sink", "--when", "\"b\" in [tags]", "--limit", "5"],
    ));
    assert_eq!(output.len(), 5);
    assert!(output
        .iter()
        .all(|l| l["event"]["seen"] == "beta-tagged" && l["event"]["tags"][0] == "b"));
    // All of a pipeline's plugins.
    let all = lines(&tap(s.port, &["main/*", "--limit", "5000"]));
    let mut plugins: Vec<&str> = all.iter().map(|l| l["plugin"].as_str().unwrap()).collect();
    plugins.sort();
    plugins.dedup();
    assert_eq!(plugins, ["beta_only", "gen", "sink", "tagger"]);
    // rubydebug: a header per event, then the event as the rubydebug codec prints it.
    let o = tap(
        s.port,
        &["main/tagger", "--limit", "2", "--format", "rubydebug"],
    );
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        text.matches("--- main/tagger (filter) ").count(),
        2,
        "{text}"
    );
    assert!(text.contains(r#""seen" => ""#), "{text}");
    s.stop();
}

#[test]
fn two_taps_at_once_and_clear_errors() {
    let s = start("tap-two", "");
    let port = s.port;
    let a = std::thread::spawn(move || tap(port, &["main/tagger", "--limit", "300"]));
    let b = std::thread::spawn(move || tap(port, &["main/sink", "--limit", "300"]));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    assert_eq!(lines(&a).len(), 300);
    assert_eq!(lines(&b).len(), 300);
    for (args, says) in [
        (vec!["main/nope"], "no plugin with id \"nope\""),
        (vec!["other/tagger"], "no running pipeline \"other\""),
        (vec!["main/tagger", "--when", "[a] =="], "when"),
        (
            vec!["main/tagger", "--limit", "0"],
            "limit must be a positive number",
        ),
    ] {
        let o = tap(port, &args);
        assert!(!o.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    s.stop();
}

#[test]
fn the_apis_basic_auth_applies() {
    let s = start(
        "tap-auth",
        "api.auth.type: basic\napi.auth.basic.username: watcher\napi.auth.basic.password: \"S3cret-pass\"\n",
    );
    let o = tap(s.port, &["main/tagger", "--limit", "1"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("401"), "{o:?}");
    let got = lines(&tap(
        s.port,
        &[
            "main/tagger",
            "--limit",
            "3",
            "--user",
            "watcher:S3cret-pass",
        ],
    ));
    assert_eq!(got.len(), 3);
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "tap",
            "--api",
            &format!("http://watcher:S3cret-pass@127.0.0.1:{}", s.port),
        ])
        .args(["main/tagger", "--limit", "2"])
        .output()
        .unwrap();
    assert_eq!(lines(&o).len(), 2);
    s.stop();
}

#[test]
fn over_the_apis_tls() {
    let dir = temp_dir("tap-tls");
    let Some(certs) = net_support::certs(&dir.join("certs")) else {
        return;
    };
    let bundle = dir.join("keystore.pem");
    write_keystore(&bundle, &certs.server_cert, &certs.server_key);
    let s = Sluice::start(
        &dir,
        &format!(
            "api.ssl.enabled: true\napi.ssl.keystore.path: {}\n",
            bundle.display()
        ),
        "",
        &["-e", PIPELINE],
    );
    assert!(s.tls);
    let https = |extra: &[&str]| {
        let mut args = vec!["tap", "--limit", "2"];
        args.extend(extra);
        let api = format!("https://127.0.0.1:{}", s.port);
        Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(&args)
            .args(["--api", &api, "main/tagger"])
            .output()
            .unwrap()
    };
    let ca = certs.ca.display().to_string();
    assert_eq!(lines(&https(&["--cacert", &ca])).len(), 2);
    assert_eq!(lines(&https(&["--insecure"])).len(), 2);
    // The API's certificate is not from an authority the system trusts.
    let o = https(&[]);
    assert!(!o.status.success(), "{o:?}");
    s.stop();
}

#[test]
fn a_reload_ends_the_tap() {
    let dir = temp_dir("tap-reload");
    let conf = dir.join("p.conf");
    std::fs::write(&conf, PIPELINE).unwrap();
    let s = Sluice::start(
        &dir,
        "config.reload.automatic: true\nconfig.reload.interval: 1s\n",
        "",
        &["-f", conf.to_str().unwrap()],
    );
    let port = s.port;
    let watching = std::thread::spawn(move || tap(port, &["main/tagger", "--rate", "5"]));
    std::thread::sleep(Duration::from_secs(2));
    std::fs::write(&conf, PIPELINE.replace("-tagged", "-retagged")).unwrap();
    let o = watching.join().unwrap();
    assert!(!o.status.success(), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("stopped or was reloaded"), "{err}");
    // Tapped again, the new pipeline's filter shows its new change.
    let got = lines(&tap(port, &["main/tagger", "--limit", "2"]));
    assert!(got.iter().all(|l| l["event"]["seen"]
        .as_str()
        .is_some_and(|v| v.ends_with("-retagged"))));
    s.stop();
}

#[test]
fn a_quiet_tap_sends_heartbeats_and_a_silent_server_is_given_up_on() {
    let s = start("tap-heartbeat", "");
    // No event matches: after 15 s the stream still says it is alive.
    let conn = raw_tap(s.port, "plugin=main/tagger&when=%5Bnowhere%5D");
    conn.set_read_timeout(Some(Duration::from_secs(25)))
        .unwrap();
    let mut reader = BufReader::new(conn);
    let started = Instant::now();
    let mut line = String::new();
    loop {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream ended");
        assert!(
            !line.starts_with("{\"pipeline\""),
            "an event matched: {line}"
        );
        if line.starts_with("{\"heartbeat\"") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(25), "no heartbeat");
    }
    assert!(started.elapsed() >= Duration::from_secs(14));
    s.stop();
    // A server that answers and then says nothing: the tap gives up after --timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (mut c, _) = silent.accept().unwrap();
        let mut buf = [0u8; 4096];
        let _ = std::io::Read::read(&mut c, &mut buf);
        write!(c, "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
        std::thread::sleep(Duration::from_secs(30));
    });
    let started = Instant::now();
    let o = tap(port, &["main/tagger", "--timeout", "2"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("nothing from the API for 2 s"),
        "{o:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_client_that_stops_reading_is_dropped_for_while_the_pipeline_goes_on() {
    let s = start("tap-stalled", "");
    let conn = raw_tap(s.port, "plugin=main/*&rate=1000000");
    // Not reading: the pipeline keeps its pace.
    let out = |s: &Sluice| {
        s.json("/_node/stats/events")["events"]["out"]
            .as_u64()
            .unwrap()
    };
    std::thread::sleep(Duration::from_secs(1));
    let before = out(&s);
    std::thread::sleep(Duration::from_secs(2));
    let during = out(&s) - before;
    assert!(
        during > 10_000,
        "the pipeline stalled with the tap: {during} events in 2 s"
    );
    // Far more lines than the sockets' buffers hold went by unread (each event is three
    // lines here, ~100 bytes each): some were dropped, whatever this machine's pace.
    let deadline = Instant::now() + Duration::from_secs(60);
    while out(&s) - before < 300_000 {
        assert!(Instant::now() < deadline, "the pipeline is too slow here");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Reading again: the stream says how many were dropped for this client.
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut reader = BufReader::new(conn);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut line = String::new();
    let mut read = 0;
    loop {
        assert!(
            Instant::now() < deadline,
            "no notice of the stall's drops in 30 s ({read} lines read)"
        );
        line.clear();
        let n = reader.read_line(&mut line).unwrap();
        assert!(n > 0, "the stream ended after {read} lines");
        read += 1;
        // The notices keep count; the stall's drops are said once the stream moves on (an
        // early notice may have gone out before the sockets filled).
        if line.starts_with("{\"dropped\"") {
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["dropped_total"].as_u64().unwrap() > 100_000 {
                break;
            }
        }
    }
    drop(reader);
    s.stop();
}

#[test]
fn lineage_across_a_pipeline_link() {
    let dir = temp_dir("tap-lineage");
    let out = dir.join("out.json");
    std::fs::write(
        dir.join("up.conf"),
        r#"input { generator { id => "gen" lines => ["x"] count => 3 } }
           filter { mutate { id => "m1" add_field => { "a" => "1" } } }
           output { pipeline { id => "to_down" send_to => ["down"] } }"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("down.conf"),
        format!(
            r#"input {{ pipeline {{ id => "from_up" address => "down" }} }}
               filter {{ mutate {{ id => "m2" add_field => {{ "b" => "2" }} }}
                        mutate {{ id => "copy" copy => {{ "[@metadata][lineage]" => "lineage" }} }} }}
               output {{ file {{ id => "file" path => "{}" }} }}"#,
            out.display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("plain.conf"),
        format!(
            r#"input {{ generator {{ id => "g2" lines => ["y"] count => 1 }} }}
               filter {{ mutate {{ id => "copy2" copy => {{ "[@metadata][lineage]" => "lineage" }} }} }}
               output {{ file {{ path => "{}" }} }}"#,
            dir.join("plain.json").display()
        ),
    )
    .unwrap();
    let pipelines = format!(
        "- pipeline.id: up\n  path.config: {}\n  pipeline.lineage: true\n- pipeline.id: down\n  path.config: {}\n  pipeline.lineage: true\n- pipeline.id: plain\n  path.config: {}\n",
        dir.join("up.conf").display(),
        dir.join("down.conf").display(),
        dir.join("plain.conf").display()
    );
    // Every pipeline's generator ends, and so does the process.
    let mut s = Sluice::start(&dir, "", &pipelines, &[]);
    assert!(s.exit(60).success(), "{}", s.log());
    let text = std::fs::read_to_string(&out).unwrap();
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 3);
    for e in &events {
        assert_eq!(
            e["lineage"],
            serde_json::json!(["up/gen", "up/m1", "up/to_down", "down/from_up", "down/m2"]),
            "{e}"
        );
    }
    // A pipeline without lineage adds none.
    let plain: Value = serde_json::from_str(
        std::fs::read_to_string(dir.join("plain.json"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    assert!(plain.get("lineage").is_none(), "{plain}");
}
