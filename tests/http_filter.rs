//! The http filter through the binary, against an HTTP server of the test's own on 127.0.0.1:
//! what it sends (verb, sprintf'd URL, query, headers, JSON or text body, basic auth), where
//! the answer goes (parsed JSON, trimmed text, headers), and the failures (a non-2xx status,
//! an unreachable host, a JSON body that does not parse, a missing target in ECS mode).

mod http_server;
mod run_support;

use std::process::Command;

use http_server::{Reply, Server};

fn sluice(config: &str, input: &str) -> (bool, Vec<serde_json::Value>, String) {
    run_support::pipe_through(config, input)
}

fn server() -> Server {
    Server::start(|r| match r.target.split('?').next().unwrap() {
        "/user/42" => Reply::new(
            200,
            "application/json; charset=utf-8",
            r#"{"name":"ada","roles":["admin"]}"#,
        ),
        "/text" => Reply::new(200, "text/plain", "  hello there \n"),
        "/echo" => Reply::new(200, "text/plain", r.body.clone()),
        "/broken" => Reply::new(200, "application/json", "{not json"),
        "/empty" => Reply::new(204, "text/plain", ""),
        _ => Reply::new(500, "text/plain", "no such thing"),
    })
}

#[test]
fn lookups_fill_the_event() {
    let s = server();
    let config = format!(
        r#"input {{ stdin {{ codec => json_lines }} }}
        filter {{
          http {{
            url => "{url}/user/%{{id}}"
            query => {{ "q" => "%{{id}}" "tag" => ["a b", "c"] }}
            headers => {{ "X-Who" => "%{{who}}" }}
            user => "u" password => "p"
            target_body => "[user]" target_headers => "[h]"
            add_tag => ["looked_up"]
          }}
          http {{ url => "{url}/text" target_body => "[greeting]" }}
          http {{
            url => "{url}/echo" verb => "POST" body_format => "json"
            body => {{ "id" => "%{{id}}" "fixed" => 1 }} target_body => "[echo]"
          }}
          http {{ url => "{url}/echo" verb => "PUT" body => "plain %{{id}}" target_body => "[echo2]" }}
          http {{ url => "{url}/user/42" verb => "HEAD" target_body => "[never]" target_headers => "[hh]" }}
        }}
        output {{ stdout {{ codec => json_lines }} }}"#,
        url = s.url
    );
    let (ok, events, log) = sluice(&config, "{\"id\":42,\"who\":\"me\"}\n");
    assert!(ok, "{log}");
    let e = &events[0];
    assert_eq!(
        e["user"],
        serde_json::json!({"name": "ada", "roles": ["admin"]}),
        "{e}"
    );
    assert_eq!(e["h"]["content-type"], "application/json; charset=utf-8");
    assert_eq!(e["greeting"], "hello there");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(e["echo"].as_str().unwrap()).unwrap(),
        serde_json::json!({"id": "42", "fixed": 1})
    );
    assert_eq!(e["echo2"], "plain 42");
    assert!(e.get("never").is_none(), "{e}");
    assert_eq!(e["hh"]["content-length"], "32");
    assert_eq!(e["tags"], serde_json::json!(["looked_up"]));
    let reqs = s.requests();
    let get = &reqs[0];
    assert_eq!(get.method, "GET");
    assert_eq!(get.target, "/user/42?q=42&tag=a%20b&tag=c");
    assert_eq!(get.header("x-who"), Some("me"));
    assert_eq!(get.header("authorization"), Some("Basic dTpw"));
    assert_eq!(get.header("content-type"), Some("text/plain"));
    let post = reqs.iter().find(|r| r.method == "POST").unwrap();
    assert_eq!(post.header("content-type"), Some("application/json"));
    assert!(reqs.iter().any(|r| r.method == "HEAD"));
}

#[test]
fn failures_are_tagged() {
    let s = server();
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let config = format!(
        r#"input {{ stdin {{ codec => json_lines }} }}
        filter {{
          if [case] == "500" {{ http {{ url => "{url}/nothing" target_body => "[b]" add_tag => ["never"] }} }}
          if [case] == "dead" {{ http {{ url => "{dead}/x" target_body => "[b]" tag_on_request_failure => ["down"] automatic_retries => 0 }} }}
          if [case] == "json" {{ http {{ url => "{url}/broken" target_body => "[b]" add_tag => ["answered"] }} }}
          if [case] == "empty" {{ http {{ url => "{url}/empty" target_body => "[b]" add_tag => ["answered"] }} }}
        }}
        output {{ stdout {{ codec => json_lines }} }}"#,
        url = s.url
    );
    let input = ["500", "dead", "json", "empty"]
        .iter()
        .map(|c| format!("{{\"case\":\"{c}\"}}\n"))
        .collect::<String>();
    let (ok, events, log) = sluice(&config, &input);
    assert!(ok, "{log}");
    let by = |c: &str| events.iter().find(|e| e["case"] == c).unwrap().clone();
    assert_eq!(
        by("500")["tags"],
        serde_json::json!(["_httprequestfailure"])
    );
    assert!(by("500").get("b").is_none());
    assert_eq!(by("dead")["tags"], serde_json::json!(["down"]));
    assert_eq!(
        by("json")["tags"],
        serde_json::json!(["_jsonparsefailure", "answered"])
    );
    assert!(by("empty").get("b").is_none());
    assert_eq!(by("empty")["tags"], serde_json::json!(["answered"]));
    assert!(log.contains("error during HTTP request"), "{log}");
}

#[test]
fn option_errors_are_named() {
    for (config, want) in [
        ("http { url => \"http://x\" }", "target_body"),
        ("http { target_body => \"b\" }", "url"),
        (
            "http { url => \"http://x\" target_body => \"b\" verb => \"FETCH\" }",
            "verb",
        ),
        (
            "http { url => \"http://x\" target_body => \"b\" user => \"u\" }",
            "password",
        ),
        (
            "http { url => \"http://x\" target_body => \"b\" ssl_keystore_path => \"/k\" }",
            "ssl_keystore_path",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args([
                "-t",
                "-e",
                &format!("input {{ stdin {{}} }} filter {{ {config} }} output {{ null {{}} }}"),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{config}: {err}");
        assert!(err.contains(want), "{config}: {err}");
    }
}
