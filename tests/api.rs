//! The monitoring API through the real binary, on 127.0.0.1 only: Logstash's JSON shape (every
//! key path of `../shared/compat/node_stats_example.json`), exact counters after a known
//! number of events, persisted queue figures against `sluice queue inspect`, reload counters,
//! Prometheus text, basic auth, TLS, and the settings that turn it off or refuse to start.

mod api_support;

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

use api_support::{key_paths, shared_dir, temp_dir, write_keystore, Sluice};
use serde_json::Value;

/// Key paths of Logstash's documents that sluice leaves out, each with its reason. A path is
/// excluded with everything under it.
const EXCLUDED: &[(&str, &str)] = &[
    (
        "jvm",
        "there is no JVM; process figures are under `process`",
    ),
    (
        "plugins.codecs[].decode",
        "codecs are not timed: a clock read per decoded chunk would cost more than the decoding; their work counts in their input's figures",
    ),
    (
        "plugins.codecs[].encode",
        "codecs are not timed: their work counts in their output's duration",
    ),
    (
        "plugins.filters[].failures",
        "grok's own counters; the API knows no plugin's internals",
    ),
    (
        "plugins.filters[].matches",
        "grok's own counters; the API knows no plugin's internals",
    ),
    (
        "plugins.filters[].patterns_per_field",
        "grok's own counters; the API knows no plugin's internals",
    ),
];

fn excluded(path: &str) -> bool {
    EXCLUDED.iter().any(|(p, _)| {
        path == *p || path.starts_with(&format!("{p}.")) || path.starts_with(&format!("{p}["))
    })
}

/// Paths of `logstash` missing from `ours` (exclusions left out), and how many were checked.
fn missing(logstash: &Value, ours: &Value) -> (Vec<String>, usize) {
    let (mut want, mut have) = (BTreeSet::new(), BTreeSet::new());
    key_paths(logstash, "", &mut want);
    key_paths(ours, "", &mut have);
    want.retain(|p| !excluded(p));
    let checked = want.len();
    (
        want.into_iter().filter(|p| !have.contains(p)).collect(),
        checked,
    )
}

fn out_of(stats: &Value, id: &str) -> u64 {
    stats["pipelines"][id]["events"]["out"]
        .as_u64()
        .unwrap_or(0)
}

#[test]
fn stats_have_every_key_path_of_logstash() {
    let Some(shared) = shared_dir() else { return };
    let text = std::fs::read_to_string(shared.join("compat/node_stats_example.json")).unwrap();
    let example: Value = serde_json::from_str(&text).unwrap();

    let dir = temp_dir("shape");
    let config = |addr: &str| {
        format!(
            "input {{ generator {{ count => 20000 }} pipeline {{ address => \"{addr}\" }} }} filter {{ mutate {{ add_field => {{ \"a\" => \"b\" }} }} }} output {{ null {{}} }}"
        )
    };
    let pipelines = format!(
        "- pipeline.id: mem\n  pipeline.batch.metrics.sampling_mode: full\n  config.string: '{}'\n- pipeline.id: disk\n  queue.type: persisted\n  pipeline.batch.metrics.sampling_mode: full\n  config.string: '{}'\n",
        config("shape-mem"),
        config("shape-disk")
    );
    let sluice = Sluice::start(&dir, "", &pipelines, &[]);
    sluice.wait_for(60, "20000 events out of both pipelines", |s| {
        out_of(s, "mem") == 20000 && out_of(s, "disk") == 20000
    });
    let ours = sluice.json("/_node/stats");

    let documented = &example["documented_example_GET__node_stats_pipelines"]["pipelines"];
    let captured = &example["captured_GET__node_stats"];
    let mut problems = Vec::new();
    let mut compare = |what: &str, logstash: &Value, ours: &Value| {
        assert!(logstash.is_object(), "{what}: not in the example");
        let (missing, checked) = missing(logstash, ours);
        assert!(checked > 20, "{what}: only {checked} key paths");
        for p in missing {
            problems.push(format!("{what}: {p}"));
        }
    };
    // Memory-queue pipelines against ours on a memory queue, persisted against persisted.
    compare(
        "documented beats-es (memory queue)",
        &documented["beats-es"],
        &ours["pipelines"]["mem"],
    );
    compare(
        "documented heartbeat-ruby-stdout (persisted queue)",
        &documented["heartbeat-ruby-stdout"],
        &ours["pipelines"]["disk"],
    );
    compare(
        "captured main (memory queue)",
        &captured["pipelines"]["main"],
        &ours["pipelines"]["mem"],
    );
    // The node document itself, pipelines aside (compared above).
    let mut node = captured.clone();
    node.as_object_mut().unwrap().remove("pipelines");
    let mut our_node = ours.clone();
    our_node.as_object_mut().unwrap().remove("pipelines");
    compare("captured GET /_node/stats", &node, &our_node);
    assert!(
        problems.is_empty(),
        "key paths of Logstash's documents missing from ours:\n{}",
        problems.join("\n")
    );
    // Every exclusion is needed: each names a path the example has.
    let mut all = BTreeSet::new();
    key_paths(&example, "", &mut all);
    for (p, reason) in EXCLUDED {
        assert!(
            all.iter().any(|x| x == p || x.contains(&format!(".{p}"))),
            "exclusion {p} ({reason}) matches nothing in the example"
        );
    }

    // Types where they matter to clients: counters are integers, flows are numbers.
    let mem = &ours["pipelines"]["mem"];
    assert!(mem["events"]["in"].is_u64());
    assert!(mem["flow"]["input_throughput"]["lifetime"].is_number());
    assert_eq!(mem["queue"]["type"], "memory");
    assert_eq!(ours["pipelines"]["disk"]["queue"]["type"], "persisted");
    assert_eq!(ours["status"], "green");
    assert!(mem["batch"]["byte_size"]["max"]["lifetime"].is_u64());
    sluice.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn batch_metrics_measure_batches_as_logstash() {
    let dir = temp_dir("batch");
    // One event per batch, each of known size: `full` measures every batch, `minimal` (the
    // default) about 2 in 100, `disabled` none. The `pipeline` inputs (nobody sends to them)
    // keep the pipelines running after their generators are done.
    let config = |name: &str, count: u32| {
        format!(
            "input {{ generator {{ count => {count} message => \"hello\" ecs_compatibility => disabled }} pipeline {{ address => \"api-batch-{name}\" }} }} output {{ null {{}} }}"
        )
    };
    let pipelines = format!(
        "- pipeline.id: full\n  pipeline.batch.metrics.sampling_mode: full\n  config.string: '{}'\n\
         - pipeline.id: minimal\n  pipeline.batch.metrics.sampling_mode: minimal\n  config.string: '{}'\n\
         - pipeline.id: off\n  config.string: '{}'\n",
        config("full", 300),
        config("minimal", 3000),
        config("off", 300),
    );
    // Sluice-wide settings that pipelines.yml entries override.
    let sluice_yml = "pipeline.batch.size: 1\npipeline.workers: 1\npipeline.batch.metrics.sampling_mode: disabled\n";
    let sluice = Sluice::start(&dir, sluice_yml, &pipelines, &[]);
    let stats = sluice.wait_for(60, "every event out", |s| {
        out_of(s, "full") == 300 && out_of(s, "minimal") == 3000 && out_of(s, "off") == 300
    });
    // Each event: message "hello" 5, [event][original] (the plain codec's, ECS by the
    // pipeline's setting) 5, @timestamp 12, @version "1" 1, sequence 8, the host name.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let bytes = 5 + 5 + 12 + 1 + 8 + host.trim().len() as u64;
    assert!(bytes < 256, "sizes below 256 are exact in the histograms");

    let full = &stats["pipelines"]["full"]["batch"];
    assert_eq!(full["event_count"]["current"], 1, "{full:#}");
    assert_eq!(full["byte_size"]["current"], bytes, "{full:#}");
    for window in [
        "lifetime",
        "last_1_minute",
        "last_5_minutes",
        "last_15_minutes",
    ] {
        assert_eq!(
            full["event_count"]["average"][window], 1,
            "{window}: {full:#}"
        );
        assert_eq!(
            full["byte_size"]["average"][window], bytes,
            "{window}: {full:#}"
        );
        for p in ["p50", "p90", "max"] {
            assert_eq!(
                full["byte_size"][p][window], bytes,
                "{p} {window}: {full:#}"
            );
        }
        // Logstash gives event-count percentiles over the windows only.
        let lifetime = window == "lifetime";
        assert_eq!(full["event_count"]["p50"].get(window).is_none(), lifetime);
        if !lifetime {
            assert_eq!(full["event_count"]["p90"][window], 1, "{window}: {full:#}");
        }
    }
    assert!(full["event_count"].get("max").is_none());

    let minimal = &stats["pipelines"]["minimal"]["batch"];
    assert_eq!(
        minimal["byte_size"]["average"]["lifetime"], bytes,
        "{minimal:#}"
    );
    assert_eq!(minimal["byte_size"]["current"], bytes, "{minimal:#}");
    assert!(stats["pipelines"]["off"].get("batch").is_none());
    assert!(stats["pipelines"]["off"]["events"]["out"] == 300);
    sluice.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn counters_are_exact_after_a_known_number_of_events() {
    let dir = temp_dir("counters");
    // 10,000 events; the filters drop those with a sequence of 7,000 or more. The `pipeline`
    // input (nobody sends to it) keeps the pipeline running after the generator is done.
    let config = r#"input {
  generator { id => "gen" count => 10000 }
  pipeline { address => "api-counters-keepalive" }
}
filter {
  if [event][sequence] >= 7000 { drop { id => "dropper" } }
  mutate { id => "tagger" add_tag => ["seen"] }
  mutate { id => "quiet" enable_metric => false add_tag => ["quiet"] }
}
output { null { id => "sink" } }"#;
    let sluice = Sluice::start(&dir, "", "", &["-w", "2", "-e", config]);
    // The dropped events are still in flight when the 7,000th goes out: wait for all 10,000 in.
    let stats = sluice.wait_for(60, "10000 events in, 7000 out", |s| {
        out_of(s, "main") == 7000 && s["pipelines"]["main"]["events"]["in"] == 10000
    });
    // Nothing more arrives: read again after the workers' last batch is surely counted.
    std::thread::sleep(Duration::from_millis(300));
    let stats = {
        let again = sluice.json("/_node/stats/pipelines");
        for k in ["in", "filtered", "out"] {
            let (now, before) = (
                &again["pipelines"]["main"]["events"][k],
                &stats["pipelines"]["main"]["events"][k],
            );
            assert_eq!(now, before, "events.{k} moved after the last event");
        }
        again
    };
    let p = &stats["pipelines"]["main"];
    assert_eq!(p["events"]["in"], 10000);
    assert_eq!(p["events"]["filtered"], 7000);
    assert_eq!(p["events"]["out"], 7000);
    let plugin = |kind: &str, id: &str| -> Value {
        p["plugins"][kind]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == id)
            .unwrap_or_else(|| panic!("no {kind} {id}: {p:#}"))
            .clone()
    };
    let gen = plugin("inputs", "gen");
    assert_eq!(gen["name"], "generator");
    assert_eq!(gen["events"]["out"], 10000);
    let dropper = plugin("filters", "dropper");
    assert_eq!(
        (&dropper["events"]["in"], &dropper["events"]["out"]),
        (&3000.into(), &0.into())
    );
    let tagger = plugin("filters", "tagger");
    assert_eq!(tagger["name"], "mutate");
    assert_eq!(
        (&tagger["events"]["in"], &tagger["events"]["out"]),
        (&7000.into(), &7000.into())
    );
    // `enable_metric => false`: Logstash's null metric, no name and nothing counted.
    let quiet = plugin("filters", "quiet");
    assert_eq!(quiet.get("name"), None, "{quiet}");
    assert_eq!(quiet["events"]["in"], 0, "{quiet}");
    assert_eq!(quiet["events"].get("out"), None, "{quiet}");
    let sink = plugin("outputs", "sink");
    assert_eq!(
        (&sink["events"]["in"], &sink["events"]["out"]),
        (&7000.into(), &7000.into())
    );
    let passive = &p["plugins"]["inputs"][1];
    assert_eq!(passive["name"], "pipeline");
    assert_eq!(passive["events"]["out"], 0);
    let codecs = p["plugins"]["codecs"].as_array().unwrap();
    assert_eq!(codecs.len(), 1, "the generator's plain codec: {codecs:?}");
    assert_eq!(codecs[0]["name"], "plain");
    assert_eq!(p["pipeline"]["workers"], 2);
    assert_eq!(p["queue"]["type"], "memory");
    assert_eq!(p["queue"]["events_count"], 0);
    assert!(p["flow"]["output_throughput"]["lifetime"].as_f64().unwrap() > 0.0);

    // The node document sums the pipelines; one pipeline by id; unknown ones are 404.
    let node = sluice.json("/_node/stats");
    assert_eq!(node["events"]["in"], 10000);
    assert_eq!(node["events"]["out"], 7000);
    assert_eq!(node["queue"]["events_count"], 0);
    assert!(node["process"]["open_file_descriptors"].as_u64().unwrap() > 0);
    assert!(node["process"]["cpu"]["total_in_millis"].is_u64());
    let one = sluice.json("/_node/stats/pipelines/main");
    assert_eq!(one["pipelines"]["main"]["events"]["in"], 10000);
    assert_eq!(sluice.get("/_node/stats/pipelines/nope").status, 404);
    assert_eq!(sluice.get("/nothing/here").status, 404);
    let process = sluice.json("/_node/stats/process");
    assert!(process["process"]["max_file_descriptors"].as_u64().unwrap() > 0);
    assert!(process.get("pipelines").is_none());

    // Node info.
    let root = sluice.json("/");
    assert_eq!(root["http_address"], format!("127.0.0.1:{}", sluice.port));
    assert_eq!(root["pipeline"]["batch_size"], 125);
    assert!(root["id"].as_str().unwrap().len() == 36);
    let info = sluice.json("/_node");
    assert_eq!(info["pipelines"]["main"]["workers"], 2);
    assert!(info["os"]["available_processors"].as_u64().unwrap() >= 1);
    let info = sluice.json("/_node/pipelines/main");
    assert_eq!(info["pipelines"]["main"]["batch_size"], 125);
    assert_eq!(sluice.get("/_node/pipelines/nope").status, 404);

    // ?pretty indents; the default is compact.
    let pretty = sluice.get("/_node/stats/pipelines?pretty");
    assert!(
        pretty.body.contains("\n  \"pipelines\": {"),
        "{}",
        pretty.body
    );
    assert!(!sluice.get("/_node/stats/pipelines").body.contains('\n'));
    assert_eq!(
        pretty.header("content-type"),
        Some("application/json; charset=utf-8")
    );

    // Prometheus: the same figures.
    let metrics = sluice.get("/metrics");
    assert_eq!(metrics.status, 200);
    assert!(metrics
        .header("content-type")
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    for line in [
        "sluice_pipeline_events_in_total{pipeline=\"main\"} 10000",
        "sluice_pipeline_events_filtered_total{pipeline=\"main\"} 7000",
        "sluice_pipeline_events_out_total{pipeline=\"main\"} 7000",
        "sluice_plugin_events_in_total{pipeline=\"main\",plugin_type=\"filter\",plugin_id=\"dropper\",plugin=\"drop\"} 3000",
        "sluice_plugin_events_out_total{pipeline=\"main\",plugin_type=\"input\",plugin_id=\"gen\",plugin=\"generator\"} 10000",
        "sluice_pipeline_queue_events{pipeline=\"main\",type=\"memory\"} 0",
        "# TYPE sluice_pipeline_events_in_total counter",
    ] {
        assert!(
            metrics.body.lines().any(|l| l == line),
            "missing {line:?} in\n{}",
            metrics.body
        );
    }
    for line in metrics.body.lines().filter(|l| !l.starts_with('#')) {
        let value = line.rsplit(' ').next().unwrap();
        assert!(value.parse::<f64>().is_ok(), "bad sample line {line:?}");
    }

    // The dashboard and its assets are served from the binary.
    let page = sluice.get("/dashboard");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<canvas id=\"chart-rate\">"));
    assert!(!page.body.contains("http://") && !page.body.contains("https://"));
    assert_eq!(sluice.get("/dashboard/app.js").status, 200);
    // The sampler's history starts the dashboard's charts: the first sample is the start.
    let history = sluice.json("/dashboard/history");
    let samples = history["pipelines"]["main"]["samples"].as_array().unwrap();
    assert!(!samples.is_empty());
    assert_eq!(samples[0]["in"], 0);
    assert!(samples
        .windows(2)
        .all(|w| w[0]["ago_ms"].as_u64() >= w[1]["ago_ms"].as_u64()));
    assert_eq!(sluice.get("/dashboard/style.css").status, 200);
    sluice.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `unacked events: N` and `bytes on disk: B` from `sluice queue inspect`.
fn inspect(dir: &std::path::Path) -> (u64, u64) {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["queue", "inspect"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let field = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name:?} in\n{text}"))
    };
    (field("unacked events:"), field("bytes on disk:"))
}

#[test]
fn persisted_queue_figures_match_queue_inspect() {
    let dir = temp_dir("persisted");
    // The output waits forever for a pipeline that never comes: events stay in the queue, one
    // batch of them in flight (read, not acked).
    let config = r#"input { generator { count => 3000 } }
output { pipeline { send_to => ["api-nobody-listens"] } }"#;
    let sluice = Sluice::start(
        &dir,
        "queue.type: persisted\nqueue.max_bytes: 64mb\nqueue.page_capacity: 1mb\n",
        "",
        &["-w", "1", "-e", config],
    );
    // `events.in` counts a batch as the input hands it over, a moment before the queue has
    // written it: wait for the queue's own figure too.
    let stats = sluice.wait_for(60, "3000 events in the queue", |s| {
        let q = &s["pipelines"]["main"]["queue"];
        s["pipelines"]["main"]["events"]["in"] == 3000
            && q["unacked_events"] == 3000
            && q["events_count"].as_u64() < Some(3000)
    });
    let q = &stats["pipelines"]["main"]["queue"];
    let queue_dir = dir.join("data/queue/main");
    let (unacked, bytes) = inspect(&queue_dir);
    assert_eq!(unacked, 3000);
    assert_eq!(q["unacked_events"], unacked);
    assert_eq!(q["queue_size_in_bytes"], bytes);
    assert_eq!(q["capacity"]["queue_size_in_bytes"], bytes);
    assert!(bytes > 3000 * 50, "{bytes} bytes for 3000 events");
    // One batch (at most pipeline.batch.size) is in the worker; the rest is unread.
    let unread = q["events_count"].as_u64().unwrap();
    assert!((3000 - 125..3000).contains(&unread), "unread {unread}");
    assert_eq!(q["events"], unread);
    assert_eq!(q["type"], "persisted");
    assert_eq!(q["max_queue_size_in_bytes"], 64 << 20);
    assert_eq!(q["capacity"]["max_queue_size_in_bytes"], 64 << 20);
    assert_eq!(q["capacity"]["page_capacity_in_bytes"], 1 << 20);
    assert_eq!(q["capacity"]["max_unread_events"], 0);
    assert_eq!(q["data"]["path"], queue_dir.display().to_string().as_str());
    assert!(q["data"]["free_space_in_bytes"].as_u64().unwrap() > 0);
    assert!(!q["data"]["storage_type"].as_str().unwrap().is_empty());
    let metrics = sluice.get("/metrics").body;
    assert!(
        metrics.lines().any(|l| l
            == "sluice_pipeline_queue_unacked_events{pipeline=\"main\",type=\"persisted\"} 3000"),
        "{metrics}"
    );
    // The worker is stuck in its output by design: no graceful stop (drop kills it).
    drop(sluice);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reloads_are_counted_per_pipeline() {
    let dir = temp_dir("reloads");
    let entry = |tag: &str| {
        format!(
            "- pipeline.id: main\n  config.string: 'input {{ pipeline {{ address => \"api-reload\" }} }} filter {{ mutate {{ add_tag => [\"{tag}\"] }} }} output {{ null {{}} }}'\n"
        )
    };
    let sluice = Sluice::start(&dir, "", &entry("one"), &[]);
    let pipelines = dir.join("settings/pipelines.yml");
    let hup = |s: &Sluice| {
        assert!(Command::new("kill")
            .args(["-HUP", &s.child.id().to_string()])
            .status()
            .unwrap()
            .success());
    };
    let first = sluice.json("/_node/stats/pipelines")["pipelines"]["main"]["ephemeral_id"].clone();
    std::fs::write(&pipelines, entry("two")).unwrap();
    hup(&sluice);
    let stats = sluice.wait_for(30, "a successful reload", |s| {
        s["pipelines"]["main"]["reloads"]["successes"] == 1
    });
    let p = &stats["pipelines"]["main"];
    assert_ne!(
        p["ephemeral_id"], first,
        "a restarted pipeline is a new instance"
    );
    assert!(p["reloads"]["last_success_timestamp"].is_string());
    assert!(p["reloads"]["last_error"].is_null());

    std::fs::write(
        &pipelines,
        "- pipeline.id: main\n  config.string: 'input { pipeline { address => \"api-reload\" } } output { nosuchoutput {} }'\n",
    )
    .unwrap();
    hup(&sluice);
    let stats = sluice.wait_for(30, "a failed reload", |s| {
        s["pipelines"]["main"]["reloads"]["failures"] == 1
    });
    let r = &stats["pipelines"]["main"]["reloads"];
    assert_eq!(r["successes"], 1);
    assert!(r["last_failure_timestamp"].is_string());
    let message = r["last_error"]["message"].as_str().unwrap();
    assert!(message.contains("nosuchoutput"), "{message}");
    let node = sluice.json("/_node/stats/reloads");
    assert_eq!(node["reloads"]["successes"], 1);
    assert_eq!(node["reloads"]["failures"], 1);
    sluice.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn basic_auth_rejects_wrong_credentials() {
    let dir = temp_dir("auth");
    let sluice = Sluice::start(
        &dir,
        "api.auth.type: basic\napi.auth.basic.username: watcher\napi.auth.basic.password: \"S3cret-pass\"\n",
        "",
        &["-e", "input { pipeline { address => \"api-auth\" } } output { null {} }"],
    );
    for path in ["/", "/_node/stats", "/metrics", "/dashboard"] {
        let none = sluice.get(path);
        assert_eq!(none.status, 401, "{path} without credentials");
        let challenge = none.header("www-authenticate").unwrap_or_default();
        assert!(challenge.starts_with("Basic realm="), "{challenge}");
        assert_eq!(sluice.get_auth(path, "watcher:wrong").status, 401);
        assert_eq!(sluice.get_auth(path, "someone:S3cret-pass").status, 401);
        assert_eq!(
            sluice.get_auth(path, "watcher:S3cret-pass").status,
            200,
            "{path}"
        );
    }
    sluice.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn api_settings_turn_it_off_or_refuse_to_start() {
    let dir = temp_dir("settings");
    let config = "input { generator { count => 1 } } output { null {} }";
    let run = |sluice_yml: &str| {
        std::fs::write(
            dir.join("settings/sluice.yml"),
            format!("path.data: {}\n{sluice_yml}", dir.join("data").display()),
        )
        .unwrap();
        Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["--log.level", "info", "--path.settings"])
            .arg(dir.join("settings"))
            .args(["-e", config])
            .output()
            .unwrap()
    };
    let out = run("api.enabled: false\n");
    assert!(out.status.success());
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("monitoring API disabled"), "{log}");
    assert!(!log.contains("listening on"), "{log}");

    let out = run("api.auth.type: basic\n");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("api.auth.basic.username"));

    std::fs::write(dir.join("keystore.p12"), [0x30u8, 0x82, 0x01, 0x02]).unwrap();
    let out = run(&format!(
        "api.ssl.enabled: true\napi.ssl.keystore.path: {}\n",
        dir.join("keystore.p12").display()
    ));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not a PEM file") && err.contains("openssl pkcs12"),
        "{err}"
    );

    // A port range with every port taken is a startup error.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = run(&format!("api.http.port: {port}\n"));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no free port"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether `tool` is on the PATH (`openssl` has no `--version` flag, so ask the shell).
fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn tls_from_a_pem_keystore() {
    if !have("openssl") || !have("curl") {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "openssl and curl are needed under CI=true"
        );
        eprintln!("SKIP: openssl or curl missing");
        return;
    }
    let dir = temp_dir("tls");
    let (key, cert) = (dir.join("key.pem"), dir.join("cert.pem"));
    let gen = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let bundle = dir.join("keystore.pem");
    write_keystore(&bundle, &cert, &key);
    let sluice = Sluice::start(
        &dir,
        &format!(
            "api.ssl.enabled: true\napi.ssl.keystore.path: {}\n",
            bundle.display()
        ),
        "",
        &[
            "-e",
            "input { pipeline { address => \"api-tls\" } } output { null {} }",
        ],
    );
    assert!(sluice.tls);
    let curl = |extra: &[&str]| {
        Command::new("curl")
            .args(["-s", "--max-time", "10", "--cacert"])
            .arg(&cert)
            .args(extra)
            .arg(format!(
                "https://127.0.0.1:{}/_node/stats/pipelines",
                sluice.port
            ))
            .output()
            .unwrap()
    };
    let out = curl(&[]);
    assert!(
        out.status.success(),
        "curl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["pipelines"]["main"].is_object());
    let out = curl(&["--tlsv1.3"]);
    assert!(out.status.success());
    // Plain HTTP on the TLS port gets no answer.
    let started = Instant::now();
    let plain = Command::new("curl")
        .args(["-s", "--max-time", "5"])
        .arg(format!("http://127.0.0.1:{}/", sluice.port))
        .output()
        .unwrap();
    assert!(!plain.status.success() || plain.stdout.is_empty());
    assert!(started.elapsed() < Duration::from_secs(10));
    sluice.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Slow and idle clients cannot hold the API's sockets: a connection that sends no request,
/// half a header, or goes quiet after a response is closed by the server after its header
/// timeout (5 s), and the API keeps answering others.
#[test]
fn slow_and_idle_connections_are_closed() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    let dir = temp_dir("slow");
    let sluice = Sluice::start(
        &dir,
        "",
        "",
        &[
            "-e",
            "input { pipeline { address => \"api-slow\" } } output { null {} }",
        ],
    );
    let connect = || {
        let s = TcpStream::connect(("127.0.0.1", sluice.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s
    };
    let mut silent: Vec<TcpStream> = (0..8).map(|_| connect()).collect();
    let mut partial = connect();
    partial.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap();
    let mut idle = connect();
    idle.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    // The response, whole (its length from Content-Length).
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = idle.read(&mut buf).unwrap();
        assert!(n > 0, "closed before responding");
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got);
        if let Some(end) = text.find("\r\n\r\n") {
            let len: usize = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(|v| v.trim().parse().unwrap())
                })
                .unwrap();
            if got.len() >= end + 4 + len {
                break;
            }
        }
    }
    // Every one of them is closed by the server (EOF), not left open until our 20 s timeout.
    let started = Instant::now();
    for (i, s) in silent
        .iter_mut()
        .chain([&mut partial, &mut idle])
        .enumerate()
    {
        match s.read(&mut buf) {
            Ok(0) => {}
            Ok(n) => panic!("connection {i}: {n} unexpected bytes"),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!(
                "connection {i} still open after {:?}: {e}",
                started.elapsed()
            ),
        }
    }
    assert_eq!(sluice.get("/").status, 200);
    sluice.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Logstash's documents for the endpoints Elastic's monitoring reads (recorded from its docs
/// and specs in `tests/api_support/logstash_shapes.json`).
fn logstash_shape(name: &str) -> Value {
    let text = include_str!("api_support/logstash_shapes.json");
    let all: Value = serde_json::from_str(text).unwrap();
    all[name].clone()
}

/// Key paths of Logstash's document `name` that `ours` lacks.
fn shape_gaps(name: &str, ours: &Value) -> Vec<String> {
    let (mut want, mut have) = (BTreeSet::new(), BTreeSet::new());
    key_paths(&logstash_shape(name), "", &mut want);
    key_paths(ours, "", &mut have);
    want.into_iter().filter(|p| !have.contains(p)).collect()
}

/// Issue 38: what Kibana Stack Monitoring, the Elastic Agent integration and Kubernetes
/// probes read. `/` reports the Logstash API version sluice implements (Metricbeat refused
/// "Logstash 0.1.0") and sluice's own beside it; `/_health_report` says green for a running
/// pipeline and red for one that stopped delivering, in Logstash's shape; `wait_for_status`
/// waits, times out with 408 and refuses bad parameters as Logstash 9.3 does; `/_node/plugins`
/// lists every plugin; `/_node/hot_threads` names the workers and the plugin they are in;
/// `?graph=true` and `?vertices=true` give Kibana's pipeline viewer its graph and counts.
#[test]
fn elastic_monitoring_endpoints_answer_in_logstashs_shape() {
    let dir = temp_dir("elastic-monitoring");
    let pipelines = "\
- pipeline.id: main
  config.string: 'input { generator { id => \"gen\" } } filter { if [message] == \"x\" { drop { } } else { mutate { id => \"tag\" add_tag => [\"t\"] } } } output { null { id => \"sink\" } }'
";
    let sluice = Sluice::start(&dir, "", pipelines, &[]);
    sluice.wait_for(30, "events", |s| out_of(s, "main") > 1000);

    let root = sluice.json("/");
    assert_eq!(root["version"], "9.5.0", "{root:#}");
    assert_eq!(root["sluice_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(root["status"], "green");
    assert_eq!(shape_gaps("root", &root), Vec::<String>::new());

    let health = sluice.json("/_health_report");
    assert_eq!(health["status"], "green", "{health:#}");
    assert_eq!(
        health["indicators"]["pipelines"]["indicators"]["main"]["details"]["status"]["state"],
        "RUNNING"
    );
    assert_eq!(
        shape_gaps("health_report_running", &health),
        Vec::<String>::new()
    );

    // Waiting for what holds answers at once; for what does not, 408 after the timeout.
    let r = sluice.get("/?wait_for_status=yellow&timeout=5s");
    assert_eq!(r.status, 200, "{}", r.body);
    let r = sluice.get("/_health_report?wait_for_status=GREEN&timeout=5s");
    assert_eq!(r.status, 200, "{}", r.body);
    for (query, status, message) in [
        (
            "wait_for_status=blue&timeout=1s",
            400,
            "Invalid status 'blue' provided. The valid statuses are: green, yellow, red.",
        ),
        (
            "wait_for_status=green&timeout=1",
            400,
            "Invalid timeout '1' provided.",
        ),
        (
            "wait_for_status=green",
            400,
            "A timeout must be provided along with a status.",
        ),
    ] {
        let r = sluice.get(&format!("/?{query}"));
        assert_eq!(r.status, status, "{query}: {}", r.body);
        let v: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(v["error"]["message"], message, "{query}");
    }

    let plugins = sluice.json("/_node/plugins");
    assert_eq!(shape_gaps("plugins", &plugins), Vec::<String>::new());
    let names: Vec<&str> = plugins["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for n in [
        "logstash-input-beats",
        "logstash-filter-grok",
        "logstash-output-elasticsearch",
        "logstash-codec-json",
    ] {
        assert!(names.contains(&n), "{n} missing: {names:?}");
    }
    assert_eq!(plugins["total"].as_u64(), Some(names.len() as u64));

    let hot = sluice.json("/_node/hot_threads?threads=50&interval=300ms&ignore_idle_threads=false");
    assert_eq!(
        shape_gaps("hot_threads", &hot),
        Vec::<String>::new(),
        "{hot:#}"
    );
    let threads = hot["hot_threads"]["threads"].as_array().unwrap();
    let worker = threads
        .iter()
        .find(|t| t["name"] == "[main]>worker0")
        .unwrap_or_else(|| panic!("no worker thread: {hot:#}"));
    assert!(worker["plugin"].is_string(), "{worker:#}");
    // The generator keeps a worker busy: the busiest thread used CPU in the interval.
    assert!(
        threads[0]["percent_of_cpu_time"].as_f64().unwrap() > 0.0,
        "{hot:#}"
    );
    let text = sluice.get("/_node/hot_threads?human=true&interval=100ms");
    assert_eq!(text.status, 200);
    assert!(
        text.body.starts_with(":::") && text.body.contains("Hot threads at"),
        "{}",
        text.body
    );
    assert!(
        text.body.contains("% of cpu usage, state: "),
        "{}",
        text.body
    );

    let info = sluice.json("/_node/pipelines/main?graph=true");
    assert_eq!(shape_gaps("pipelines_graph", &info), Vec::<String>::new());
    let graph = &info["pipelines"]["main"]["graph"]["graph"];
    let vertices = graph["vertices"].as_array().unwrap();
    let ids: BTreeSet<&str> = vertices.iter().map(|v| v["id"].as_str().unwrap()).collect();
    for id in ["gen", "tag", "sink", "__QUEUE__"] {
        assert!(ids.contains(id), "{id}: {vertices:#?}");
    }
    assert_eq!(vertices.iter().filter(|v| v["type"] == "if").count(), 1);
    let edges = graph["edges"].as_array().unwrap();
    for e in edges {
        assert!(
            ids.contains(e["from"].as_str().unwrap()) && ids.contains(e["to"].as_str().unwrap()),
            "{e}"
        );
    }
    assert!(edges
        .iter()
        .any(|e| e["from"] == "gen" && e["to"] == "__QUEUE__"));
    assert!(
        edges.iter().any(|e| e["to"] == "tag" && e["when"] == false),
        "{edges:#?}"
    );
    assert!(edges
        .iter()
        .any(|e| e["from"] == "tag" && e["to"] == "sink"));
    // Without ?graph there is no graph, as in Logstash.
    assert!(sluice.json("/_node/pipelines/main")["pipelines"]["main"]
        .get("graph")
        .is_none());

    let stats = sluice.json("/_node/stats/pipelines/main?vertices=true");
    assert_eq!(shape_gaps("stats_vertices", &stats), Vec::<String>::new());
    let vertices = stats["pipelines"]["main"]["vertices"].as_array().unwrap();
    let sink = vertices.iter().find(|v| v["id"] == "sink").unwrap();
    assert!(sink["events_in"].as_u64().unwrap() > 0, "{sink}");
    let gen = vertices.iter().find(|v| v["id"] == "gen").unwrap();
    assert!(gen["events_out"].as_u64().unwrap() > 0, "{gen}");
    // Every vertex of the stats is a vertex of the graph (Kibana joins them by id).
    assert!(vertices
        .iter()
        .all(|v| ids.contains(v["id"].as_str().unwrap())));
    sluice.stop();
}

/// A pipeline that stopped delivering (its standard output closed) is red, in Logstash's
/// shape for a terminated pipeline, while another keeps running; `wait_for_status=green` then
/// times out with 408.
#[test]
fn a_terminated_pipeline_makes_the_health_report_red() {
    let dir = temp_dir("health-red");
    let pipelines = "\
- pipeline.id: p
  config.string: 'input { generator { } } output { stdout { } }'
- pipeline.id: ok
  config.string: 'input { generator { } } output { null { } }'
";
    let mut sluice = Sluice::start_with(&dir, "", pipelines, &[], std::process::Stdio::piped());
    // Standard output closed: the stdout output ends its pipeline.
    drop(sluice.child.stdout.take());
    let deadline = Instant::now() + Duration::from_secs(30);
    let health = loop {
        let h = sluice.json("/_health_report");
        if h["status"] == "red" || Instant::now() > deadline {
            break h;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let gaps = shape_gaps("health_report_terminated", &health);
    assert!(
        gaps.iter()
            .all(|g| g.contains("indicators.pipelines.indicators.")),
        "{gaps:?}"
    );
    let p = &health["indicators"]["pipelines"]["indicators"]["p"];
    assert_eq!(p["status"], "red", "{health:#}\n{}", sluice.log());
    assert_eq!(p["details"]["status"]["state"], "TERMINATED");
    assert_eq!(
        p["diagnosis"][0]["id"],
        "logstash:health:pipeline:status:diagnosis:terminated"
    );
    let ours = &health["indicators"]["pipelines"]["indicators"];
    let theirs =
        &logstash_shape("health_report_terminated")["indicators"]["pipelines"]["indicators"]["p"];
    let (mut want, mut have) = (BTreeSet::new(), BTreeSet::new());
    key_paths(theirs, "", &mut want);
    key_paths(&ours["p"], "", &mut have);
    assert!(
        want.is_subset(&have),
        "{:?}",
        want.difference(&have).collect::<Vec<_>>()
    );
    assert_eq!(ours["ok"]["status"], "green");
    assert_eq!(
        health["indicators"]["pipelines"]["symptom"],
        "1 indicator is unhealthy (`p`) and 1 indicator is healthy (`ok`)"
    );
    assert_eq!(sluice.json("/")["status"], "red");
    let started = Instant::now();
    let r = sluice.get("/?wait_for_status=green&timeout=1s");
    assert_eq!(r.status, 408, "{}", r.body);
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert!(
        r.body.contains("Timed out waiting for status 'green'."),
        "{}",
        r.body
    );
    assert_eq!(sluice.get("/?wait_for_status=red&timeout=1s").status, 200);
    // The memory queue lost what p held when its output closed: the stop says so (status 1).
    let _ = Command::new("kill")
        .args(["-TERM", &sluice.child.id().to_string()])
        .status();
    let status = sluice.child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{}", sluice.log());
}
