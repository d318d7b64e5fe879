//! The http_poller input through the binary, against an HTTP server of the test's own: a run
//! at once then every second, each answer through the codec (a JSON array makes several
//! events, an empty body one), the request and response details in the metadata target (ECS
//! off and on), a spec hash (method, headers, params, body, basic auth), target, and a
//! request that gets no answer (a failure event).

mod http_server;
mod run_support;

use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use http_server::{Reply, Server};
use run_support::{temp_dir, Run};

fn server() -> Server {
    Server::start(|r| match r.target.split('?').next().unwrap() {
        "/items" => Reply::new(200, "application/json", r#"[{"a":1},{"a":2}]"#),
        "/oops" => Reply::new(503, "application/json", r#"{"error":"busy"}"#),
        "/empty" => Reply::new(200, "application/json", ""),
        "/echo" => Reply::new(
            200,
            "application/json",
            serde_json::json!({"method": r.method, "target": r.target, "body": r.body_text(),
                               "auth": r.header("authorization"), "x": r.header("x-test")})
            .to_string(),
        ),
        _ => Reply::new(404, "text/plain", ""),
    })
}

/// Runs `config` until `n` events are out (or 20 s), then stops sluice: the events.
fn collect(name: &str, config: &str, n: usize) -> (Vec<serde_json::Value>, String) {
    let dir = temp_dir("http-poller", name);
    let mut run = Run::start(
        &dir,
        "",
        &["-w", "1"],
        config,
        Stdio::null(),
        Stdio::piped(),
    );
    let (out, lines) = run.read_stdout_counting();
    let deadline = Instant::now() + Duration::from_secs(20);
    while lines.load(Ordering::Relaxed) < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    run.signal("-TERM");
    assert!(run.exit(30).success(), "{}", run.log());
    let text = out.join().unwrap();
    let events = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (events, run.log())
}

#[test]
fn polls_on_a_schedule_with_metadata() {
    let s = server();
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let config = format!(
        r#"input {{
          http_poller {{
            urls => {{
              items => "{url}/items"
              oops => "{url}/oops"
              empty => "{url}/empty"
              echo => {{ method => post url => "{url}/echo" headers => {{ "X-Test" => "yes" }}
                         params => {{ "q" => "a b" }} body => "hello" user => "u" password => "p" }}
              down => "{dead}/x"
            }}
            schedule => {{ every => "1s" }}
            metadata_target => "meta"
            ecs_compatibility => disabled
            automatic_retries => 0
          }}
        }}
        filter {{ mutate {{ copy => {{ "meta" => "m" }} }} }}
        output {{ stdout {{ codec => json_lines }} }}"#,
        url = s.url
    );
    // Two runs of 6 events (items makes 2).
    let (events, log) = collect("schedule", &config, 12);
    assert!(events.len() >= 12, "{events:?}\n{log}");
    let named = |n: &str| {
        events
            .iter()
            .filter(|e| e["m"]["name"] == n)
            .cloned()
            .collect::<Vec<_>>()
    };
    let items = named("items");
    assert!(items.len() >= 4, "{items:?}");
    assert_eq!(items[0]["a"], 1);
    assert_eq!(items[1]["a"], 2);
    assert_eq!(items[0]["m"]["code"], 200);
    assert_eq!(items[0]["m"]["response_message"], "OK");
    assert_eq!(items[0]["m"]["request"]["url"], format!("{}/items", s.url));
    assert_eq!(items[0]["m"]["request"]["method"], "get");
    assert!(items[0]["m"]["runtime_seconds"].as_f64().unwrap() >= 0.0);
    assert_eq!(items[0]["m"]["times_retried"], 0);
    assert_eq!(
        items[0]["m"]["response_headers"]["content-type"],
        "application/json"
    );
    let oops = &named("oops")[0];
    assert_eq!(oops["m"]["code"], 503);
    assert_eq!(oops["error"], "busy");
    assert!(oops.get("tags").is_none(), "{oops}");
    let empty = &named("empty")[0];
    assert_eq!(empty["m"]["code"], 200);
    assert!(empty.get("message").is_none());
    let echo = &named("echo")[0];
    assert_eq!(echo["method"], "POST");
    assert_eq!(echo["target"], "/echo?q=a%20b");
    assert_eq!(echo["body"], "hello");
    assert_eq!(echo["auth"], "Basic dTpw");
    assert_eq!(echo["x"], "yes");
    assert!(echo["m"]["request"].get("password").is_none());
    let down: Vec<_> = events
        .iter()
        .filter(|e| e["http_request_failure"]["name"] == "down")
        .collect();
    assert!(!down.is_empty(), "{events:?}");
    assert_eq!(
        down[0]["tags"],
        serde_json::json!(["_http_request_failure"])
    );
    assert!(down[0]["http_request_failure"]["error"]
        .as_str()
        .is_some_and(|e| !e.is_empty()));
    // At once, then a second later: the server saw each URL at least twice.
    let seen = s.requests().iter().filter(|r| r.target == "/items").count();
    assert!(seen >= 2, "{seen}");
}

#[test]
fn ecs_fields_and_target() {
    let s = server();
    let config = format!(
        r#"input {{ http_poller {{ urls => {{ items => "{url}/items" }} schedule => {{ in => "0s" }}
                    target => "[doc]" metadata_target => "meta" }} }}
        filter {{ mutate {{ copy => {{ "meta" => "m" }} }} }}
        output {{ stdout {{ codec => json_lines }} }}"#,
        url = s.url
    );
    let (events, log) = collect("ecs", &config, 2);
    assert_eq!(events.len(), 2, "{log}");
    let e = &events[0];
    assert_eq!(e["doc"]["a"], 1, "{e}");
    let p = &e["m"]["input"]["http_poller"];
    assert_eq!(p["request"]["name"], "items");
    assert_eq!(p["response"]["status_code"], 200);
    assert!(p["response"]["elapsed_time_ns"].as_i64().unwrap() > 0);
    assert_eq!(p["request"]["original"]["url"], format!("{}/items", s.url));
    assert!(p["request"]["host"]["hostname"].is_string());
}

#[test]
fn option_errors_are_named() {
    for (config, want) in [
        ("http_poller { schedule => { every => \"1m\" } }", "urls"),
        ("http_poller { urls => { \"a\" => \"http://x\" } }", "schedule"),
        ("http_poller { urls => { \"a\" => \"http://x\" } schedule => { every => \"1m\" cron => \"* * * * *\" } }", "exactly one"),
        ("http_poller { urls => { \"a\" => \"http://x\" } schedule => { cron => \"61 * * * *\" } }", "minute"),
        ("http_poller { urls => { \"a\" => \"ftp://x\" } schedule => { every => \"1m\" } }", "invalid URL"),
        ("http_poller { urls => { \"a\" => { url => \"http://x\" user => \"u\" } } schedule => { every => \"1m\" } }", "password"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["-t", "-e", &format!("input {{ {config} }} output {{ null {{}} }}")])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{config}: {err}");
        assert!(err.contains(want), "{config}: {err}");
    }
}
