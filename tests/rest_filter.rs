//! The community `rest` filter through the binary, against the HTTP server of the http
//! filter's tests: GET with params and auth, POST with a JSON body from `params`, the answer
//! parsed into `target` or kept as text, and the failures (tags, or `fallback`).

mod http_server;
mod run_support;

use http_server::{Reply, Server};
use serde_json::json;

fn server() -> Server {
    Server::start(|r| match r.target.split('?').next().unwrap() {
        "/user/42" => Reply::new(
            200,
            "application/json",
            r#"{"name":"ada","roles":["admin"]}"#,
        ),
        "/echo" => Reply::new(200, "application/json", r.body.clone()),
        "/text" => Reply::new(200, "text/plain", "  hello \n"),
        "/empty" => Reply::new(200, "application/json", "{}"),
        "/broken" => Reply::new(200, "application/json", "{not json"),
        _ => Reply::new(500, "text/plain", "no such thing"),
    })
}

#[test]
fn requests_and_answers() {
    let s = server();
    let config = format!(
        r#"input {{ stdin {{ codec => json_lines }} }}
        filter {{
          rest {{
            request => {{
              url => "{url}/user/%{{id}}"
              headers => {{ "X-Who" => "%{{who}}" }}
              auth => {{ user => "u" password => "p" }}
              params => {{ "q" => "%{{id}}" "space" => "a b" }}
            }}
            target => "user"
            add_tag => ["looked_up"]
          }}
          rest {{
            request => {{ url => "{url}/echo" method => "post" params => {{ "id" => "%{{id}}" "n" => 1 }} }}
            target => "[echo][back]"
          }}
          rest {{ request => "{url}/text" json => false target => "greeting" }}
        }}
        output {{ stdout {{ codec => json_lines }} }}"#,
        url = s.url
    );
    let (ok, events, log) = run_support::pipe_through(&config, "{\"id\":42,\"who\":\"me\"}\n");
    assert!(ok, "{log}");
    let e = &events[0];
    assert_eq!(e["user"], json!({"name": "ada", "roles": ["admin"]}), "{e}");
    assert_eq!(e["echo"]["back"], json!({"id": "42", "n": 1}), "{e}");
    assert_eq!(e["greeting"], "hello");
    assert_eq!(e["tags"], json!(["looked_up"]));
    let reqs = s.requests();
    assert_eq!(reqs[0].method, "GET");
    assert_eq!(reqs[0].target, "/user/42?q=42&space=a%20b");
    assert_eq!(reqs[0].header("x-who"), Some("me"));
    assert_eq!(reqs[0].header("authorization"), Some("Basic dTpw"));
    assert_eq!(reqs[1].method, "POST");
    assert_eq!(reqs[1].target, "/echo");
}

#[test]
fn failures_tag_or_fall_back() {
    let s = server();
    let config = format!(
        r#"input {{ stdin {{ codec => json_lines }} }}
        filter {{
          if [case] == "500" {{ rest {{ request => {{ url => "{url}/nothing" }} target => "t" }} }}
          if [case] == "broken" {{ rest {{ request => {{ url => "{url}/broken" }} target => "t" }} }}
          if [case] == "empty" {{ rest {{ request => {{ url => "{url}/empty" }} target => "t" }} }}
          if [case] == "fallback" {{
            rest {{ request => {{ url => "http://127.0.0.1:1/x" }} target => "t" fallback => {{ "ok" => "no" }} }}
          }}
        }}
        output {{ stdout {{ codec => json_lines }} }}"#,
        url = s.url
    );
    let input = ["500", "broken", "empty", "fallback"]
        .map(|c| format!("{{\"case\":\"{c}\"}}\n"))
        .concat();
    let (ok, events, log) = run_support::pipe_through(&config, &input);
    assert!(ok, "{log}");
    let by = |c: &str| events.iter().find(|e| e["case"] == c).unwrap();
    assert_eq!(by("500")["tags"], json!(["_restfailure"]));
    assert_eq!(by("broken")["tags"], json!(["_jsonparsefailure"]));
    assert_eq!(by("empty")["tags"], json!(["_restfailure"]));
    let f = by("fallback");
    assert_eq!(f["t"], json!({"ok": "no"}));
    assert!(f.get("tags").is_none(), "{f}");
    for c in ["500", "broken", "empty"] {
        assert!(by(c).get("t").is_none());
    }
}

#[test]
fn bad_requests_are_configuration_errors() {
    for (request, says) in [
        (
            r#"{ method => "put" url => "http://x" }"#,
            "Not supported request method put",
        ),
        (r#"{ method => "get" }"#, "No URL provided"),
        (
            r#"{ url => "http://x" auth => { user => "u" } }"#,
            "'password' was not",
        ),
        (
            r#"{ url => "http://x" timeout => 3 }"#,
            "is not a request setting",
        ),
    ] {
        let config = format!(
            "input {{ stdin {{ }} }} filter {{ rest {{ request => {request} target => \"t\" }} }} output {{ stdout {{ }} }}"
        );
        let (ok, _, log) = run_support::pipe_through(&config, "");
        assert!(!ok, "{request}");
        assert!(log.contains(says), "{request}: {log}");
    }
}
