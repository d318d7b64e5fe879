//! The elasticsearch input through the real binary against Elasticsearch 7.10.2 and
//! OpenSearch 3: every document of an index read once (scroll, search_after with a point in
//! time, parallel slices), docinfo and target, aggregations, a schedule with a tracking field
//! that reads only what is new (and keeps its place in a file), and a node that is down at the
//! first run: the next run after it is back reads everything.

mod net_support;
mod run_support;
mod search_support;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use run_support::{temp_dir, Run};
use search_support::{delete_index, send, shared, Kind, PrivateNode};

/// An index of `n` documents `{"n": i, "tag": "t<i%3>"}` with ids `d<i>`.
fn fill(url: &str, index: &str, from: usize, n: usize) {
    let mut bulk = String::new();
    for i in from..from + n {
        bulk.push_str(&format!(
            "{{\"index\":{{\"_index\":\"{index}\",\"_id\":\"d{i}\"}}}}\n"
        ));
        bulk.push_str(&format!("{{\"n\":{i},\"tag\":\"t{}\"}}\n", i % 3));
    }
    let (status, body) = send("POST", &format!("{url}/_bulk?refresh=true"), &bulk);
    assert!(status < 300 && body["errors"] == false, "{body}");
}

/// Runs sluice to its end (the input finishes by itself): the events.
fn run_to_end(name: &str, config: &str) -> (Vec<serde_json::Value>, String) {
    let dir = temp_dir("es-input", name);
    let mut run = Run::start(
        &dir,
        "",
        &["-w", "1"],
        config,
        Stdio::null(),
        Stdio::piped(),
    );
    let out = run.read_stdout();
    assert!(run.exit(240).success(), "{}", run.log());
    let events = out
        .join()
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (events, run.log())
}

fn ns(events: &[serde_json::Value]) -> BTreeMap<i64, usize> {
    let mut seen = BTreeMap::new();
    for e in events {
        *seen.entry(e["n"].as_i64().unwrap()).or_insert(0) += 1;
    }
    seen
}

fn exactly_once(events: &[serde_json::Value], n: usize, log: &str) {
    let seen = ns(events);
    assert_eq!(seen.len(), n, "{log}");
    assert!(seen.values().all(|c| *c == 1), "duplicates: {seen:?}");
}

#[test]
fn reads_every_document_once() {
    for (kind, url) in shared("elasticsearch input: read all") {
        let index = format!("sluice-esin-all-{}-{}", kind.plugin(), std::process::id());
        delete_index(&url, &index);
        fill(&url, &index, 0, 2500);
        let out = |extra: &str| {
            format!(
                r#"input {{ elasticsearch {{ hosts => ["{url}"] index => "{index}" size => 700 docinfo => true
                    ecs_compatibility => disabled {extra} }} }}
                   filter {{ mutate {{ copy => {{ "[@metadata][_id]" => "id" "[@metadata][_index]" => "ix" }} }} }}
                   output {{ stdout {{ codec => json_lines }} }}"#
            )
        };
        // scroll (what auto resolves to on both), in one slice and in three
        for (name, extra) in [
            ("scroll", ""),
            ("sliced", "slices => 3 search_api => scroll"),
        ] {
            let (events, log) = run_to_end(&format!("{index}-{name}"), &out(extra));
            exactly_once(&events, 2500, &log);
            assert_eq!(events[0]["ix"], index.as_str());
            assert!(events[0]["id"].as_str().unwrap().starts_with('d'));
        }
        if kind == Kind::OpenSearch {
            // search_after over a point in time (the OSS build of Elasticsearch 7.10 has none;
            // OpenSearch has its own endpoint), whole and in slices
            for (name, extra) in [
                ("pit", "search_api => search_after"),
                ("pit-sliced", "search_api => search_after slices => 2"),
            ] {
                let (events, log) = run_to_end(&format!("{index}-{name}"), &out(extra));
                exactly_once(&events, 2500, &log);
            }
        }
        // target and a query
        let (events, log) = run_to_end(
            &format!("{index}-target"),
            &format!(
                r#"input {{ elasticsearch {{ hosts => ["{url}"] index => "{index}" target => "doc"
                    query => '{{"query": {{"term": {{"tag.keyword": "t1"}}}}, "sort": ["_doc"]}}' }} }}
                   output {{ stdout {{ codec => json_lines }} }}"#
            ),
        );
        assert_eq!(events.len(), 833, "{log}");
        assert!(events.iter().all(|e| e["doc"]["tag"] == "t1"));
        // aggregations: one event
        let (events, log) = run_to_end(
            &format!("{index}-aggs"),
            &format!(
                r#"input {{ elasticsearch {{ hosts => ["{url}"] index => "{index}" response_type => "aggregations"
                    query => '{{"aggs": {{"total": {{"sum": {{"field": "n"}}}}}}}}' }} }}
                   output {{ stdout {{ codec => json_lines }} }}"#
            ),
        );
        assert_eq!(events.len(), 1, "{log}");
        assert_eq!(
            events[0]["total"]["value"],
            2500.0 * 2499.0 / 2.0,
            "{kind:?}"
        );
        delete_index(&url, &index);
    }
}

#[test]
fn a_schedule_with_a_tracking_field_reads_only_what_is_new() {
    let Some((_, url)) = shared("elasticsearch input: tracking")
        .into_iter()
        .find(|(k, _)| *k == Kind::OpenSearch)
    else {
        return;
    };
    let index = format!("sluice-esin-track-{}", std::process::id());
    delete_index(&url, &index);
    fill(&url, &index, 0, 300);
    let dir = temp_dir("es-input", &index);
    let last_run = dir.join("last_run");
    let config = format!(
        r#"input {{ elasticsearch {{ hosts => ["{url}"] index => "{index}" schedule => "* * * * * *"
            search_api => search_after tracking_field => "n" tracking_field_seed => "-1"
            last_run_metadata_path => "{last}" size => 100
            query => '{{"query": {{"range": {{"n": {{"gt": ":last_value"}}}}}}, "sort": [{{"n": "asc"}}]}}' }} }}
           output {{ stdout {{ codec => json_lines }} }}"#,
        last = last_run.display()
    );
    let mut run = Run::start(
        &dir,
        "",
        &["-w", "1"],
        &config,
        Stdio::null(),
        Stdio::piped(),
    );
    let (out, lines) = run.read_stdout_counting();
    let wait_for = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while lines.load(Ordering::Relaxed) < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_for(300);
    // Two runs later the place is kept.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(std::fs::read_to_string(&last_run).unwrap(), "299");
    fill(&url, &index, 300, 50);
    wait_for(350);
    std::thread::sleep(Duration::from_millis(2500));
    run.signal("-TERM");
    assert!(run.exit(60).success(), "{}", run.log());
    let events: Vec<serde_json::Value> = out
        .join()
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    exactly_once(&events, 350, &run.log());
    assert_eq!(std::fs::read_to_string(&last_run).unwrap(), "349");
    delete_index(&url, &index);
}

#[test]
fn a_node_down_at_first_is_read_in_full_once_it_is_back() {
    let Some(mut node) = PrivateNode::start(Kind::Elasticsearch, "esin-down", &[]) else {
        return;
    };
    let index = "sluice-esin-down";
    fill(&node.url, index, 0, 500);
    node.kill();
    let dir = temp_dir("es-input", "down");
    let config = format!(
        r#"input {{ elasticsearch {{ hosts => ["{url}"] index => "{index}" schedule => "*/2 * * * * *"
            query => '{{"sort": ["_doc"]}}' size => 200 }} }}
           output {{ stdout {{ codec => json_lines }} }}"#,
        url = node.url
    );
    let mut run = Run::start(
        &dir,
        "",
        &["-w", "1"],
        &config,
        Stdio::null(),
        Stdio::piped(),
    );
    let (out, lines) = run.read_stdout_counting();
    run.wait_log("tried the query unsuccessfully", 60);
    node.restart();
    let deadline = Instant::now() + Duration::from_secs(120);
    while lines.load(Ordering::Relaxed) < 500 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    run.signal("-TERM");
    assert!(run.exit(60).success(), "{}", run.log());
    let events: Vec<serde_json::Value> = out
        .join()
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Every document at least once (a run may have begun again before the stop).
    let seen = ns(&events);
    assert_eq!(seen.len(), 500, "{}", run.log());
}

#[test]
fn option_errors_are_named() {
    for (config, want) in [
        ("elasticsearch { query => \"{not json\" }", "query"),
        ("elasticsearch { slices => 0 }", "slices"),
        ("elasticsearch { query_type => \"esql\" }", "esql"),
        ("elasticsearch { schedule => \"every day\" }", "schedule"),
        (
            "elasticsearch { search_api => \"scroll\" tracking_field => \"n\" }",
            "tracking_field",
        ),
        (
            "elasticsearch { query => '{\"slice\": {\"id\": 0, \"max\": 2}}' slices => 2 }",
            "slice",
        ),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args([
                "-t",
                "-e",
                &format!("input {{ {config} }} output {{ null {{}} }}"),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{config}: {err}");
        assert!(err.contains(want), "{config}: {err}");
    }
}
