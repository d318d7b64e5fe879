//! The elasticsearch filter through the real binary against the shared Elasticsearch 7.10.2 and
//! OpenSearch 3 nodes: lookups by query string (fields, docinfo, several hits, sort, target) and
//! by query template (aggregations), misses, and failures (an unreachable host, a bad query, a
//! template that is not JSON once filled in).

mod net_support;
mod run_support;
mod search_support;

use std::process::Command;

use search_support::{delete_index, send, shared};

fn sluice(config: &str, input: &str) -> (Vec<serde_json::Value>, String) {
    let (ok, events, log) = run_support::pipe_through(config, input);
    assert!(ok, "{log}");
    (events, log)
}

/// An index of three users, two in "ops".
fn users(url: &str, index: &str) {
    delete_index(url, index);
    for (id, name, team, n) in [
        ("1", "ada", "ops", 3),
        ("2", "bob", "dev", 5),
        ("3", "cy", "ops", 7),
    ] {
        let (status, body) = send(
            "PUT",
            &format!("{url}/{index}/_doc/{id}"),
            &format!(r#"{{"name":"{name}","team":"{team}","n":{n},"info":{{"desk":"d{id}"}}}}"#),
        );
        assert!(status < 300, "{body}");
    }
    send("POST", &format!("{url}/{index}/_refresh"), "");
}

#[test]
fn lookups_by_query_and_template() {
    for (kind, url) in shared("elasticsearch filter lookups") {
        let index = format!("sluice-esfilter-{}-{}", kind.plugin(), std::process::id());
        users(&url, &index);
        let dir = run_support::temp_dir("esfilter", &index);
        let template = dir.join("by_team.json");
        std::fs::write(
            &template,
            r#"{ "size": 0, "query": { "term": { "team.keyword": "%{team}" } },
                 "aggs": { "total": { "sum": { "field": "n" } } } }"#,
        )
        .unwrap();
        let config = format!(
            r#"input {{ stdin {{ codec => json_lines }} }}
            filter {{
              if [case] == "one" {{
                elasticsearch {{
                  hosts => ["{url}"] index => "{index}" query => "name:%{{who}}"
                  fields => {{ "team" => "team" "[info][desk]" => "desk" }}
                  docinfo_fields => {{ "_id" => "doc_id" }}
                  enable_sort => false add_tag => ["found"]
                }}
              }}
              if [case] == "many" {{
                elasticsearch {{
                  hosts => ["{url}"] index => "{index}" query => "team:ops" result_size => 10
                  sort => "n:desc" fields => {{ "name" => "names" }} target => "lookup"
                }}
              }}
              if [case] == "miss" {{
                elasticsearch {{
                  hosts => ["{url}"] index => "{index}" query => "name:nobody" enable_sort => false
                  fields => {{ "team" => "team" }} add_tag => ["found"]
                }}
              }}
              if [case] == "aggs" {{
                elasticsearch {{
                  hosts => ["{url}"] index => "{index}" query_template => "{template}"
                  aggregation_fields => {{ "total" => "team_total" }} add_tag => ["summed"]
                }}
              }}
            }}
            output {{ stdout {{ codec => json_lines }} }}"#,
            template = template.display()
        );
        let input = r#"{"case":"one","who":"ada"}
{"case":"many"}
{"case":"miss"}
{"case":"aggs","team":"ops"}
"#;
        let (events, log) = sluice(&config, input);
        let by = |c: &str| events.iter().find(|e| e["case"] == c).unwrap().clone();
        let one = by("one");
        assert_eq!(one["team"], "ops", "{kind:?} {one}\n{log}");
        assert_eq!(one["desk"], "d1");
        assert_eq!(one["doc_id"], "1");
        assert_eq!(one["tags"], serde_json::json!(["found"]));
        let many = by("many");
        assert_eq!(
            many["lookup"]["names"],
            serde_json::json!(["cy", "ada"]),
            "{kind:?} {many}"
        );
        let miss = by("miss");
        assert!(
            miss.get("team").is_none() && miss.get("tags").is_none(),
            "{miss}"
        );
        let aggs = by("aggs");
        assert_eq!(aggs["team_total"]["value"], 10.0, "{kind:?} {aggs}");
        assert_eq!(aggs["tags"], serde_json::json!(["summed"]));
        delete_index(&url, &index);
    }
}

#[test]
fn failures_are_tagged_and_logged() {
    let dead = format!("http://127.0.0.1:{}", net_support::free_port());
    let dir = run_support::temp_dir("esfilter", "failures");
    let template = dir.join("t.json");
    std::fs::write(&template, r#"{ "query": { "term": { "x": %{value} } } }"#).unwrap();
    let mut cases = vec![format!(
        r#"if [case] == "dead" {{ elasticsearch {{ hosts => ["{dead}"] query => "x:1" retry_on_failure => 1 }} }}"#
    )];
    let nodes = shared("elasticsearch filter failures");
    if let Some((_, url)) = nodes.first() {
        cases.push(format!(
            r#"if [case] == "bad" {{ elasticsearch {{ hosts => ["{url}"] index => "sluice-no-such-index-{pid}" query => "x:1" tag_on_failure => ["bad_lookup"] }} }}"#,
            pid = std::process::id()
        ));
        cases.push(format!(
            r#"if [case] == "template" {{ elasticsearch {{ hosts => ["{url}"] query_template => "{t}" }} }}"#,
            t = template.display()
        ));
    }
    let config = format!(
        "input {{ stdin {{ codec => json_lines }} }} filter {{ {} }} output {{ stdout {{ codec => json_lines }} }}",
        cases.join("\n")
    );
    let (events, log) = sluice(
        &config,
        "{\"case\":\"dead\"}\n{\"case\":\"bad\"}\n{\"case\":\"template\",\"value\":\"not json\"}\n",
    );
    let by = |c: &str| events.iter().find(|e| e["case"] == c).unwrap().clone();
    assert_eq!(
        by("dead")["tags"],
        serde_json::json!(["_elasticsearch_lookup_failure"]),
        "{log}"
    );
    if !nodes.is_empty() {
        assert_eq!(
            by("bad")["tags"],
            serde_json::json!(["bad_lookup"]),
            "{log}"
        );
        assert_eq!(
            by("template")["tags"],
            serde_json::json!(["_elasticsearch_lookup_failure"])
        );
        assert!(log.contains("not JSON once filled in"), "{log}");
    }
    assert!(log.contains("failed to query elasticsearch"), "{log}");
}

#[test]
fn option_errors_are_named() {
    for (config, want) in [
        ("elasticsearch { }", "query_template"),
        (
            "elasticsearch { query => \"a\" query_template => \"/x\" }",
            "query_template",
        ),
        (
            "elasticsearch { query_template => \"/nonexistent/t.json\" }",
            "cannot read",
        ),
        (
            "elasticsearch { query => \"a\" query_type => \"esql\" }",
            "esql",
        ),
        (
            "elasticsearch { query => \"a\" api_key => \"id:key\" }",
            "api_key",
        ),
        ("elasticsearch { query => \"a\" user => \"u\" }", "password"),
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
