//! Settings files: `sluice.yml` / `logstash.yml` and `pipelines.yml`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use sluice_config::{
    load_pipelines, load_settings, parse_pipelines, parse_pipelines_with, parse_port_range,
    parse_settings, parse_settings_with, parse_size, parse_time_value, DlqOverrides, DlqSettings,
    PipelineOverrides, PortRange, QueueOverrides, QueueSettings, QueueType, Settings,
    SettingsError,
};

const MB: u64 = 1 << 20;
const GB: u64 = 1 << 30;

fn no_env(_: &str) -> Option<String> {
    None
}

fn settings(text: &str) -> Settings {
    parse_settings_with("sluice.yml", text, &no_env)
        .unwrap_or_else(|e| panic!("{text:?} should parse: {e}"))
}

fn settings_err(text: &str) -> SettingsError {
    match parse_settings_with("sluice.yml", text, &no_env) {
        Ok(s) => panic!("{text:?} should fail, got {s:?}"),
        Err(e) => e,
    }
}

/// Asserts the error's position and that its message contains every one of `parts`.
fn assert_err(e: &SettingsError, line: u32, column: u32, parts: &[&str]) {
    assert_eq!((e.line, e.column), (line, column), "position of: {e}");
    for part in parts {
        assert!(e.message.contains(part), "{part:?} not in: {e}");
    }
}

// ---------------------------------------------------------------------------------------
// Keys: flat, nested, mixed.

#[test]
fn flat_and_nested_keys_mean_the_same() {
    let flat = settings(
        "queue.type: persisted\n\
         queue.max_bytes: 2gb\n\
         queue.checkpoint.writes: 1\n\
         pipeline.batch.size: 250\n\
         api.http.port: 9601\n",
    );
    let nested = settings(
        "queue:\n\
        \x20 type: persisted\n\
        \x20 max_bytes: 2gb\n\
        \x20 checkpoint:\n\
        \x20   writes: 1\n\
         pipeline:\n\
        \x20 batch:\n\
        \x20   size: 250\n\
         api:\n\
        \x20 http:\n\
        \x20   port: 9601\n",
    );
    let mixed = settings(
        "queue:\n\
        \x20 type: persisted\n\
        \x20 checkpoint.writes: 1\n\
         queue.max_bytes: 2gb\n\
         pipeline.batch:\n\
        \x20 size: 250\n\
         api.http: {port: 9601}\n",
    );
    assert_eq!(flat, nested);
    assert_eq!(flat, mixed);
    assert_eq!(flat.queue.queue_type, Some(QueueType::Persisted));
    assert_eq!(flat.queue.max_bytes, Some(2 * GB));
    assert_eq!(flat.queue.checkpoint_writes, Some(1));
    assert_eq!(flat.pipeline.batch_size, Some(250));
    assert_eq!(
        flat.api.port,
        Some(PortRange {
            first: 9601,
            last: 9601
        })
    );
}

#[test]
fn key_set_twice_flat_and_nested_is_an_error() {
    let e = settings_err("queue.type: memory\nqueue:\n  type: persisted\n");
    assert_err(&e, 3, 3, &["`queue.type` is set twice", "line 1"]);
    let e = settings_err("node.name: a\nnode.name: b\n");
    assert_err(&e, 2, 1, &["`node.name` is set twice"]);
}

#[test]
fn empty_files_and_comments_give_default_settings() {
    for text in [
        "",
        "\n\n",
        "# only a comment\n  # another\n",
        "---\n",
        "---\n...\n",
        "~\n",
    ] {
        assert_eq!(settings(text), Settings::default(), "{text:?}");
    }
}

#[test]
fn null_values_leave_settings_unset() {
    let s = settings(
        "node.name:\n\
         path.data: ~\n\
         queue:\n\
        \x20 # type: persisted\n\
         pipeline.workers: 2\n",
    );
    assert_eq!(s.node_name, None);
    assert_eq!(s.path_data, None);
    assert_eq!(s.queue, QueueOverrides::default());
    assert_eq!(s.pipeline.workers, Some(2));
}

#[test]
fn every_accepted_key_with_its_type() {
    let s = settings(
        r#"
node.name: "node-1"
path.data: /var/lib/sluice
path.logs: /var/log/sluice
path.config: "/etc/sluice/conf.d/*.conf"
config.support_escapes: true
config.reload.automatic: true
config.reload.interval: 5s
config.test_and_exit: false
log.level: debug
log.format: json
allow_superuser: true
pipeline.id: ingest
pipeline.workers: 4
pipeline.batch.size: 500
pipeline.batch.delay: 20
pipeline.ordered: auto
pipeline.ecs_compatibility: disabled
pipeline.unsafe_shutdown: true
pipeline.batch.metrics.sampling_mode: full
queue.type: persisted
path.queue: /var/lib/sluice/queue
queue.page_capacity: 16mb
queue.max_events: 1000
queue.max_bytes: 4gb
queue.checkpoint.acks: 512
queue.checkpoint.writes: 1
queue.checkpoint.retry: false
queue.drain: true
queue.compression: balanced
api.enabled: true
api.http.host: 0.0.0.0
api.http.port: 9600-9605
api.environment: staging
api.auth.type: basic
api.auth.basic.username: admin
api.auth.basic.password: "s3cr3t!Pass"
api.auth.basic.password_policy.mode: ERROR
api.auth.basic.password_policy.length.minimum: 10
api.auth.basic.password_policy.include.upper: REQUIRED
api.auth.basic.password_policy.include.lower: REQUIRED
api.auth.basic.password_policy.include.digit: OPTIONAL
api.auth.basic.password_policy.include.symbol: OPTIONAL
api.ssl.enabled: true
api.ssl.keystore.path: /etc/sluice/api.p12
api.ssl.keystore.password: changeit
api.ssl.supported_protocols: [TLSv1.2, TLSv1.3]
"#,
    );
    assert_eq!(s.node_name.as_deref(), Some("node-1"));
    assert_eq!(s.path_data, Some(PathBuf::from("/var/lib/sluice")));
    assert_eq!(s.path_logs, Some(PathBuf::from("/var/log/sluice")));
    assert_eq!(s.path_config.as_deref(), Some("/etc/sluice/conf.d/*.conf"));
    assert_eq!(s.config_string, None);
    let s2 = settings("config.string: \"input { stdin {} }\"\n");
    assert_eq!(s2.config_string.as_deref(), Some("input { stdin {} }"));
    assert_eq!(s.config_support_escapes, Some(true));
    assert_eq!(s.config_reload_automatic, Some(true));
    assert_eq!(s.config_reload_interval, Some(Duration::from_secs(5)));
    assert_eq!(s.config_test_and_exit, Some(false));
    assert_eq!(s.log_level.as_deref(), Some("debug"));
    assert_eq!(s.log_format.as_deref(), Some("json"));
    assert_eq!(s.allow_superuser, Some(true));
    assert_eq!(s.pipeline_id.as_deref(), Some("ingest"));
    assert_eq!(
        s.pipeline,
        PipelineOverrides {
            workers: Some(4),
            batch_size: Some(500),
            batch_delay: Some(Duration::from_millis(20)),
            ordered: Some("auto".into()),
            ecs_compatibility: Some("disabled".into()),
            unsafe_shutdown: Some(true),
            lineage: None,
            batch_metrics: Some("full".into()),
            recoverable: None,
            output_chunking_growth_threshold_factor: None,
            output_lanes: None,
        }
    );
    assert_eq!(
        s.queue,
        QueueOverrides {
            queue_type: Some(QueueType::Persisted),
            path: Some(PathBuf::from("/var/lib/sluice/queue")),
            page_capacity: Some(16 * MB),
            max_events: Some(1000),
            max_bytes: Some(4 * GB),
            checkpoint_acks: Some(512),
            checkpoint_writes: Some(1),
            checkpoint_retry: Some(false),
            drain: Some(true),
            compression: Some("balanced".into()),
        }
    );
    let api = &s.api;
    assert_eq!(api.enabled, Some(true));
    assert_eq!(api.host.as_deref(), Some("0.0.0.0"));
    assert_eq!(
        api.port,
        Some(PortRange {
            first: 9600,
            last: 9605
        })
    );
    assert_eq!(api.environment.as_deref(), Some("staging"));
    assert_eq!(api.auth_type.as_deref(), Some("basic"));
    assert_eq!(api.auth_basic_username.as_deref(), Some("admin"));
    assert_eq!(api.auth_basic_password.as_deref(), Some("s3cr3t!Pass"));
    assert_eq!(api.password_policy.mode.as_deref(), Some("ERROR"));
    assert_eq!(api.password_policy.length_minimum, Some(10));
    assert_eq!(
        api.password_policy.include_digit.as_deref(),
        Some("OPTIONAL")
    );
    assert_eq!(api.ssl_enabled, Some(true));
    assert_eq!(
        api.ssl_keystore_path,
        Some(PathBuf::from("/etc/sluice/api.p12"))
    );
    assert_eq!(api.ssl_keystore_password.as_deref(), Some("changeit"));
    assert_eq!(
        api.ssl_supported_protocols,
        Some(vec!["TLSv1.2".to_string(), "TLSv1.3".to_string()])
    );
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    // Debug does not show passwords.
    let debug = format!("{s:?}");
    assert!(!debug.contains("s3cr3t"), "{debug}");
    assert!(!debug.contains("changeit"), "{debug}");
}

#[test]
fn path_config_and_config_string_exclude_each_other() {
    let e = settings_err("config.string: \"input {}\"\nnode.name: n\npath.config: /etc/a.conf\n");
    assert_err(
        &e,
        3,
        1,
        &["`path.config` and `config.string` cannot both be set"],
    );
}

#[test]
fn commented_out_groups_are_fine() {
    let s = settings("xpack:\n  # monitoring.enabled: true\napi:\nnode.name: n\n");
    assert_eq!(s.node_name.as_deref(), Some("n"));
    let e = settings_err("nothing:\n");
    assert_err(&e, 1, 1, &["unknown setting `nothing`"]);
}

#[test]
fn booleans() {
    for (text, want) in [
        ("true", true),
        ("false", false),
        ("True", true),
        ("FALSE", false),
        ("yes", true),
        ("no", false),
        ("on", true),
        ("off", false),
        ("\"true\"", true),
        ("'false'", false),
    ] {
        let s = settings(&format!("queue.drain: {text}\n"));
        assert_eq!(s.queue.drain, Some(want), "{text}");
    }
    // Quoted, only the exact words (as Logstash's BooleanSetting).
    let e = settings_err("queue.drain: \"yes\"\n");
    assert_err(
        &e,
        1,
        14,
        &["`queue.drain`", "expected true or false", "\"yes\""],
    );
}

#[test]
fn numbers_may_be_quoted() {
    let s = settings("pipeline.workers: \"8\"\nqueue.max_events: '100'\n");
    assert_eq!(s.pipeline.workers, Some(8));
    assert_eq!(s.queue.max_events, Some(100));
}

#[test]
fn batch_delay_is_milliseconds() {
    assert_eq!(
        settings("pipeline.batch.delay: 50\n").pipeline.batch_delay,
        Some(Duration::from_millis(50))
    );
    assert_eq!(
        settings("pipeline.batch.delay: 0\n").pipeline.batch_delay,
        Some(Duration::ZERO)
    );
    assert_eq!(
        settings("pipeline.batch.delay: 2.5\n").pipeline.batch_delay,
        Some(Duration::from_micros(2500))
    );
}

#[test]
fn type_errors_name_the_key_the_type_and_the_value_position() {
    let cases: &[(&str, u32, u32, &[&str])] = &[
        (
            "pipeline.workers: abc",
            1,
            19,
            &["`pipeline.workers`", "positive integer", "\"abc\""],
        ),
        (
            "pipeline.workers: 0",
            1,
            19,
            &["`pipeline.workers`", "greater than 0"],
        ),
        ("pipeline.workers: -2", 1, 19, &["positive integer"]),
        (
            "pipeline.batch.size: 1.5",
            1,
            22,
            &["`pipeline.batch.size`", "positive integer"],
        ),
        (
            "pipeline.batch.delay: soon",
            1,
            23,
            &["`pipeline.batch.delay`", "milliseconds"],
        ),
        ("pipeline.batch.delay: -5", 1, 23, &["milliseconds"]),
        (
            "pipeline.batch.metrics.sampling_mode: sometimes",
            1,
            39,
            &[
                "`pipeline.batch.metrics.sampling_mode`",
                "`disabled`, `minimal` or `full`",
            ],
        ),
        (
            "pipeline.ordered: maybe",
            1,
            19,
            &["`pipeline.ordered`", "`auto`, `true` or `false`"],
        ),
        (
            "pipeline.ecs_compatibility: v2",
            1,
            29,
            &["`disabled`, `v1` or `v8`"],
        ),
        (
            "queue.type: disk",
            1,
            13,
            &["`queue.type`", "`memory` or `persisted`", "\"disk\""],
        ),
        (
            "queue.max_events: lots",
            1,
            19,
            &["`queue.max_events`", "non-negative integer"],
        ),
        (
            "queue.checkpoint.acks: -1",
            1,
            24,
            &["`queue.checkpoint.acks`", "non-negative integer"],
        ),
        (
            "queue.checkpoint.writes: 1.5",
            1,
            26,
            &["non-negative integer"],
        ),
        (
            "queue.checkpoint.retry: sometimes",
            1,
            25,
            &["`queue.checkpoint.retry`", "true or false"],
        ),
        (
            "queue.max_bytes: 12xb",
            1,
            18,
            &["`queue.max_bytes`", "unknown size unit `xb`"],
        ),
        (
            "queue.page_capacity: big",
            1,
            22,
            &["`queue.page_capacity`", "not a size"],
        ),
        ("queue.page_capacity: -64mb", 1, 22, &["not a size"]),
        (
            "queue.compression: fast",
            1,
            20,
            &["`queue.compression`", "balanced"],
        ),
        (
            "config.reload.interval: 3",
            1,
            25,
            &["`config.reload.interval`", "a unit is required"],
        ),
        (
            "config.reload.interval: 3 weeks",
            1,
            25,
            &["not a time value"],
        ),
        ("config.support_escapes: 1", 1, 25, &["true or false"]),
        (
            "log.level: verbose",
            1,
            12,
            &[
                "`log.level`",
                "`fatal`, `error`, `warn`, `info`, `debug` or `trace`",
            ],
        ),
        ("log.level: INFO", 1, 12, &["`log.level`"]),
        ("log.format: xml", 1, 13, &["`plain` or `json`"]),
        ("api.http.port: 0", 1, 16, &["`api.http.port`", "1-65535"]),
        ("api.http.port: 70000", 1, 16, &["`api.http.port`"]),
        ("api.http.port: 9700-9600", 1, 16, &["`api.http.port`"]),
        ("api.http.port: http", 1, 16, &["`api.http.port`"]),
        ("api.auth.type: digest", 1, 16, &["`none` or `basic`"]),
        (
            "api.ssl.supported_protocols: [TLSv1.2, SSLv3]",
            1,
            40,
            &[
                "\"SSLv3\"",
                "a list of `TLSv1`, `TLSv1.1`, `TLSv1.2` or `TLSv1.3`",
            ],
        ),
        ("path.data: ''", 1, 12, &["`path.data`", "empty"]),
        (
            "pipeline.id: ''",
            1,
            14,
            &["`pipeline.id`", "non-empty string"],
        ),
        (
            "node.name: [a, b]",
            1,
            12,
            &["`node.name`", "expected a string, got a list"],
        ),
        (
            "pipeline.workers: {a: 1}",
            1,
            20,
            &["unknown setting `pipeline.workers.a`"],
        ),
        (
            "queue:\n  max_bytes: 1zb",
            2,
            14,
            &["`queue.max_bytes`", "unknown size unit"],
        ),
    ];
    for (text, line, column, parts) in cases {
        let e = settings_err(&format!("{text}\n"));
        assert_err(&e, *line, *column, parts);
    }
}

#[test]
fn unknown_keys_are_errors_with_a_suggestion() {
    let e = settings_err("pipeline.worker: 2\n");
    assert_err(
        &e,
        1,
        1,
        &[
            "unknown setting `pipeline.worker`",
            "did you mean `pipeline.workers`?",
        ],
    );
    let e = settings_err("queue:\n  typ: persisted\n");
    assert_err(&e, 2, 3, &["`queue.typ`", "did you mean `queue.type`?"]);
    let e = settings_err("# comment\nfrobnicate: yes\n");
    assert_err(&e, 2, 1, &["unknown setting `frobnicate`"]);
    assert!(!e.message.contains("did you mean"), "{e}");
}

#[test]
fn logstash_settings_sluice_does_not_support_are_errors() {
    for (text, line, column, key) in [
        (
            "xpack.monitoring.enabled: true",
            1,
            1,
            "xpack.monitoring.enabled",
        ),
        (
            "xpack:\n  management:\n    enabled: true",
            3,
            5,
            "xpack.management.enabled",
        ),
        ("modules:\n  - name: netflow", 1, 1, "modules"),
        ("cloud.id: abc", 1, 1, "cloud.id"),
        (
            "pipeline.plugin_classloaders: true",
            1,
            1,
            "pipeline.plugin_classloaders",
        ),
        (
            "pipeline.separate_logs: true",
            1,
            1,
            "pipeline.separate_logs",
        ),
        ("path.plugins: [/opt/plugins]", 1, 1, "path.plugins"),
        ("path.settings: /etc/logstash", 1, 1, "path.settings"),
        ("metric.collect: false", 1, 1, "metric.collect"),
        ("slowlog.threshold.warn: 2s", 1, 1, "slowlog.threshold.warn"),
    ] {
        let e = settings_err(&format!("{text}\n"));
        assert_err(
            &e,
            line,
            column,
            &[&format!(
                "`{key}` is a Logstash setting that sluice does not support"
            )],
        );
    }
}

#[test]
fn http_aliases_are_deprecated_but_accepted() {
    let s = settings("http.host: 0.0.0.0\nhttp.port: 9601\n");
    assert_eq!(s.api.host.as_deref(), Some("0.0.0.0"));
    assert_eq!(
        s.api.port,
        Some(PortRange {
            first: 9601,
            last: 9601
        })
    );
    assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
    assert!(s.warnings[0].contains("`http.host` is deprecated: use `api.http.host`"));
    assert!(
        s.warnings[0].starts_with("sluice.yml:1:1: "),
        "{}",
        s.warnings[0]
    );
    // An alias and its key together: which one would win?
    let e = settings_err("api.http.host: a\nhttp.host: b\n");
    assert_err(&e, 2, 1, &["`http.host` and `api.http.host` (line 1)"]);
}

#[test]
fn checkpoint_interval_is_accepted_with_a_warning() {
    let s = settings("queue.checkpoint.interval: 1000\n");
    assert_eq!(s.queue, QueueOverrides::default());
    assert_eq!(s.warnings.len(), 1);
    assert!(s.warnings[0].contains("no effect"), "{:?}", s.warnings);
}

#[test]
fn yaml_problems() {
    let e = settings_err("queue.type: [persisted\n");
    assert_eq!(e.line, 2, "{e}");
    assert!(e.message.starts_with("invalid YAML: "), "{e}");
    let e = settings_err("- a\n- b\n");
    assert_err(&e, 1, 1, &["must be a mapping", "not a list"]);
    let e = settings_err("node.name: a\n---\nnode.name: b\n");
    assert_err(&e, 3, 1, &["only one YAML document"]);
    let e = settings_err("? [a, b]\n: c\n");
    assert!(e.message.contains("plain string"), "{e}");
}

#[test]
fn merge_keys_and_anchors() {
    // A mapping used only as an anchor is still settings (`defaults` is not one)...
    let e = parse_settings_with("s", "defaults: &d\n  x: 1\n", &no_env).unwrap_err();
    assert!(e.message.contains("`defaults.x`"), "{e}");
    // ...but a merge key pulls a mapping in, explicit keys winning.
    let pipelines = parse_pipelines_with(
        "pipelines.yml",
        "- &base\n  pipeline.id: a\n  config.string: x\n  queue.type: persisted\n  pipeline.workers: 2\n\
         - <<: *base\n  pipeline.id: b\n  pipeline.workers: 3\n",
        &no_env,
    )
    .unwrap();
    assert_eq!(pipelines[1].id, "b");
    assert_eq!(pipelines[1].config_string.as_deref(), Some("x"));
    assert_eq!(pipelines[1].queue.queue_type, Some(QueueType::Persisted));
    assert_eq!(pipelines[1].pipeline.workers, Some(3));
}

#[test]
fn error_display() {
    let e = settings_err("pipeline.workers: abc\n");
    assert_eq!(
        e.to_string(),
        "sluice.yml:1:19: invalid value for `pipeline.workers`: expected a positive integer, \
         got \"abc\""
    );
    let whole_file = SettingsError {
        source_name: "x.yml".into(),
        line: 0,
        column: 0,
        message: "cannot read".into(),
    };
    assert_eq!(whole_file.to_string(), "x.yml: cannot read");
}

// ---------------------------------------------------------------------------------------
// Sizes, time values, ports.

#[test]
fn sizes() {
    for (text, want) in [
        ("64mb", 64 * MB),
        ("1gb", GB),
        ("1GB", GB),
        ("1024kb", MB),
        ("1024KB", MB),
        ("100b", 100),
        ("10240", 10240),
        ("0", 0),
        ("1k", 1024),
        ("2m", 2 * MB),
        ("1g", GB),
        ("1tb", 1 << 40),
        ("1pb", 1 << 50),
        ("1.5gb", GB + GB / 2),
        ("0.5kb", 512),
        (".5kb", 512),
        ("1.5b", 1),
        (" 64 mb ", 64 * MB),
        ("16383pb", 16383 << 50),
    ] {
        assert_eq!(parse_size(text), Ok(want), "{text:?}");
    }
    for bad in [
        "",
        "mb",
        "abc",
        "-1mb",
        "12xb",
        "1kib",
        "1.2.3mb",
        "64 m b",
        "16384pb",
        "1e3",
        "99999999999999999999999999999999999999999gb",
    ] {
        assert!(parse_size(bad).is_err(), "{bad:?} should be rejected");
    }
    assert!(parse_size("12xb")
        .unwrap_err()
        .contains("unknown size unit `xb`"));
    assert!(parse_size("16384pb").unwrap_err().contains("too large"));
}

#[test]
fn time_values() {
    for (text, want) in [
        ("3s", Duration::from_secs(3)),
        ("500ms", Duration::from_millis(500)),
        ("2m", Duration::from_secs(120)),
        ("1h", Duration::from_secs(3600)),
        ("1d", Duration::from_secs(86_400)),
        ("10micros", Duration::from_micros(10)),
        ("7nanos", Duration::from_nanos(7)),
        ("5 S", Duration::from_secs(5)),
    ] {
        assert_eq!(parse_time_value(text), Ok(want), "{text:?}");
    }
    for bad in ["", "3", "s", "-1s", "1.5s", "3x", "three seconds"] {
        assert!(parse_time_value(bad).is_err(), "{bad:?} should be rejected");
    }
}

#[test]
fn port_ranges() {
    assert_eq!(
        parse_port_range("9600"),
        Ok(PortRange {
            first: 9600,
            last: 9600
        })
    );
    assert_eq!(parse_port_range("9600-9700"), Ok(PortRange::DEFAULT));
    assert_eq!(
        parse_port_range(" 1 - 65535 "),
        Ok(PortRange {
            first: 1,
            last: 65535
        })
    );
    for bad in [
        "",
        "0",
        "65536",
        "9700-9600",
        "a-b",
        "9600-",
        "-9600",
        "1-2-3",
    ] {
        assert!(parse_port_range(bad).is_err(), "{bad:?} should be rejected");
    }
    assert_eq!(PortRange::DEFAULT.to_string(), "9600-9700");
    assert_eq!(
        PortRange {
            first: 80,
            last: 80
        }
        .ports()
        .count(),
        1
    );
}

// ---------------------------------------------------------------------------------------
// ${VAR} substitution.

#[test]
fn env_substitution_in_values() {
    let lookup = |name: &str| match name {
        "WORKERS" => Some("6".to_string()),
        "QUEUE_KIND" => Some("persisted".to_string()),
        "DATA" => Some("/srv/data".to_string()),
        "YES" => Some("true".to_string()),
        _ => None,
    };
    let s = parse_settings_with(
        "sluice.yml",
        "pipeline.workers: ${WORKERS}\n\
         queue.type: \"${QUEUE_KIND}\"\n\
         path.data: ${DATA}/sluice\n\
         queue.drain: ${YES}\n\
         queue.max_bytes: ${MAX_BYTES:2gb}\n\
         node.name: ${NODE:node-${WORKERS}}\n",
        &lookup,
    )
    .unwrap();
    assert_eq!(s.pipeline.workers, Some(6));
    assert_eq!(s.queue.queue_type, Some(QueueType::Persisted));
    assert_eq!(s.path_data, Some(PathBuf::from("/srv/data/sluice")));
    assert_eq!(s.queue.drain, Some(true));
    assert_eq!(s.queue.max_bytes, Some(2 * GB));
    // Logstash's placeholder syntax ends the default at the first `}`.
    assert_eq!(s.node_name.as_deref(), Some("node-${WORKERS}"));

    // An undefined variable without a default is an error at the value.
    let e = parse_settings_with("sluice.yml", "node.name: x\npath.data: ${NOPE}\n", &lookup)
        .unwrap_err();
    assert_err(&e, 2, 12, &["`path.data`", "NOPE", "not defined"]);
    // The substituted value is checked like any other.
    let e = parse_settings_with("sluice.yml", "pipeline.workers: ${QUEUE_KIND}\n", &lookup)
        .unwrap_err();
    assert_err(&e, 1, 19, &["positive integer", "\"persisted\""]);
}

#[test]
fn env_substitution_from_the_process_environment() {
    let var = format!("SLUICE_SETTINGS_TEST_{}", std::process::id());
    std::env::set_var(&var, "12");
    let s = parse_settings("sluice.yml", &format!("pipeline.batch.size: ${{{var}}}\n")).unwrap();
    assert_eq!(s.pipeline.batch_size, Some(12));
    let p = parse_pipelines(
        "pipelines.yml",
        &format!("- pipeline.id: p${{{var}}}\n  config.string: x\n"),
    )
    .unwrap();
    assert_eq!(p[0].id, "p12");
    std::env::remove_var(&var);
}

// ---------------------------------------------------------------------------------------
// Queue settings.

#[test]
fn queue_defaults_and_resolution() {
    let d = QueueSettings::default();
    assert_eq!(d.queue_type, QueueType::Memory);
    assert_eq!(d.page_capacity, 64 * MB);
    assert_eq!(d.max_events, 0);
    assert_eq!(d.max_bytes, 1024 * MB);
    assert_eq!((d.checkpoint_acks, d.checkpoint_writes), (1024, 1024));
    assert!(d.checkpoint_retry);
    assert!(!d.drain);
    assert_eq!(d.path, None);

    let o = QueueOverrides {
        queue_type: Some(QueueType::Persisted),
        checkpoint_writes: Some(1),
        ..QueueOverrides::default()
    };
    let r = o.resolve(&d);
    assert_eq!(r.queue_type, QueueType::Persisted);
    assert_eq!(r.checkpoint_writes, 1);
    assert_eq!(r.max_bytes, d.max_bytes);
    assert_eq!(QueueOverrides::default().resolve(&d), d);

    // path.queue defaults to <path.data>/queue.
    let s = settings("path.data: /srv/sluice\nqueue.type: persisted\n");
    let q = s.queue_settings();
    assert_eq!(q.path, Some(PathBuf::from("/srv/sluice/queue")));
    assert_eq!(q.queue_type, QueueType::Persisted);
    let s = settings("path.data: /srv/sluice\npath.queue: /fast/q\n");
    assert_eq!(s.queue_settings().path, Some(PathBuf::from("/fast/q")));
}

// ---------------------------------------------------------------------------------------
// pipelines.yml.

fn pipelines_err(text: &str) -> SettingsError {
    match parse_pipelines_with("pipelines.yml", text, &no_env) {
        Ok(p) => panic!("{text:?} should fail, got {p:?}"),
        Err(e) => e,
    }
}

#[test]
fn two_pipelines() {
    let text = r#"
# Two pipelines.
- pipeline.id: apache
  path.config: "/etc/sluice/apache.conf"
  queue.type: persisted
  queue.max_bytes: 512mb
  pipeline.workers: 2
- pipeline.id: test
  config.string: "input { generator { count => 3 } } output { null {} }"
  pipeline:
    batch:
      size: 10
      delay: 5
    ordered: true
  config.support_escapes: true
  path.queue: /tmp/q
"#;
    let p = parse_pipelines_with("pipelines.yml", text, &no_env).unwrap();
    assert_eq!(p.len(), 2);
    assert_eq!(p[0].id, "apache");
    assert_eq!(p[0].path_config.as_deref(), Some("/etc/sluice/apache.conf"));
    assert_eq!(p[0].config_string, None);
    assert_eq!(p[0].queue.queue_type, Some(QueueType::Persisted));
    assert_eq!(p[0].queue.max_bytes, Some(512 * MB));
    assert_eq!(p[0].pipeline.workers, Some(2));
    assert_eq!(p[0].line, 3);
    assert_eq!(p[1].id, "test");
    assert_eq!(p[1].path_config, None);
    assert!(p[1].config_string.as_deref().unwrap().contains("generator"));
    assert_eq!(p[1].pipeline.batch_size, Some(10));
    assert_eq!(p[1].pipeline.batch_delay, Some(Duration::from_millis(5)));
    assert_eq!(p[1].pipeline.ordered.as_deref(), Some("true"));
    assert_eq!(p[1].config_support_escapes, Some(true));
    assert_eq!(p[1].queue.path, Some(PathBuf::from("/tmp/q")));
    assert_eq!(p[1].line, 8);

    // Resolution over sluice.yml.
    let s = settings(
        "pipeline.workers: 8\npipeline.batch.size: 250\nqueue.max_events: 99\nconfig.support_escapes: false\n",
    );
    let eff = p[0].pipeline_settings(&s);
    assert_eq!(eff.workers, Some(2));
    assert_eq!(eff.batch_size, Some(250));
    let q = p[0].queue_settings(&s);
    assert_eq!(q.queue_type, QueueType::Persisted);
    assert_eq!(q.max_bytes, 512 * MB);
    assert_eq!(q.max_events, 99);
    assert_eq!(q.page_capacity, 64 * MB);
    assert!(!p[0].support_escapes(&s));
    assert!(p[1].support_escapes(&s));
}

#[test]
fn pipeline_without_id() {
    let e = pipelines_err(
        "- pipeline.id: a\n  config.string: x\n- config.string: y\n  pipeline.workers: 1\n",
    );
    assert_err(&e, 3, 3, &["no `pipeline.id`"]);
    let e = pipelines_err("- pipeline.id: ''\n  config.string: x\n");
    assert_err(&e, 1, 16, &["`pipeline.id`", "non-empty"]);
}

#[test]
fn pipeline_with_both_or_neither_config() {
    let e = pipelines_err(
        "- pipeline.id: a\n  path.config: /etc/a.conf\n  config.string: \"input {}\"\n",
    );
    assert_err(
        &e,
        3,
        3,
        &[
            "one of `path.config` and `config.string`, not both",
            "line 2",
        ],
    );
    let e = pipelines_err("- pipeline.id: a\n  pipeline.workers: 1\n");
    assert_err(
        &e,
        1,
        3,
        &["pipeline `a` needs `path.config` or `config.string`"],
    );
}

#[test]
fn duplicate_pipeline_ids() {
    let e = pipelines_err(
        "- pipeline.id: main\n  config.string: a\n- pipeline.id: other\n  config.string: b\n\
         - pipeline.id: main\n  config.string: c\n",
    );
    assert_err(&e, 5, 16, &["duplicate pipeline id `main`", "line 1"]);
}

#[test]
fn pipeline_keys_are_checked() {
    let e = pipelines_err("- pipeline.id: a\n  config.string: x\n  pipeline.wokers: 2\n");
    assert_err(
        &e,
        3,
        3,
        &[
            "unknown setting `pipeline.wokers`",
            "did you mean `pipeline.workers`?",
        ],
    );
    let e = pipelines_err("- pipeline.id: a\n  config.string: x\n  node.name: n\n");
    assert_err(&e, 3, 3, &["`node.name` cannot be set per pipeline"]);
    let e = pipelines_err("- pipeline.id: a\n  config.string: x\n  pipeline.reloadable: true\n");
    assert_err(&e, 3, 3, &["Logstash setting that sluice does not support"]);
    let e = pipelines_err("- pipeline.id: a\n  config.string: x\n  queue.type: ram\n");
    assert_err(&e, 3, 15, &["`queue.type`", "`memory` or `persisted`"]);
    let e = pipelines_err("- pipeline.id: a\n  config.string: x\n  pipeline.batch.size: many\n");
    assert_err(&e, 3, 24, &["`pipeline.batch.size`", "positive integer"]);
}

#[test]
fn pipelines_file_shape() {
    let e = pipelines_err("pipeline.id: main\nconfig.string: x\n");
    assert_err(&e, 1, 1, &["expected a list of pipelines", "not a mapping"]);
    let e = pipelines_err("# nothing yet\n");
    assert_eq!(e.line, 0);
    assert!(e.message.contains("defines no pipeline"), "{e}");
    assert!(pipelines_err("[]\n")
        .message
        .contains("defines no pipeline"));
    let e = pipelines_err("- pipeline.id: a\n  config.string: x\n- just a string\n");
    assert_err(
        &e,
        3,
        3,
        &["each pipeline must be a mapping", "\"just a string\""],
    );
}

#[test]
fn reload_settings_per_pipeline_are_ignored_with_a_warning() {
    let p = parse_pipelines_with(
        "pipelines.yml",
        "- pipeline.id: a\n  config.string: x\n  config.reload.automatic: true\n",
        &no_env,
    )
    .unwrap();
    assert_eq!(p[0].warnings.len(), 1);
    assert!(
        p[0].warnings[0].starts_with("pipelines.yml:3:28: "),
        "{:?}",
        p[0].warnings
    );
    assert!(p[0].warnings[0].contains("cannot be set per pipeline"));
}

// ---------------------------------------------------------------------------------------
// Files.

static DIRS: AtomicUsize = AtomicUsize::new(0);

/// A fresh, empty directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let n = DIRS.fetch_add(1, Ordering::SeqCst);
        let dir =
            std::env::temp_dir().join(format!("sluice-settings-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.0.join(name), text).unwrap();
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn load_settings_prefers_sluice_yml_over_logstash_yml() {
    let dir = TempDir::new();
    assert_eq!(load_settings(dir.path()).unwrap(), Settings::default());

    dir.write("logstash.yml", "node.name: from-logstash\n");
    let s = load_settings(dir.path()).unwrap();
    assert_eq!(s.node_name.as_deref(), Some("from-logstash"));
    assert!(s.warnings.is_empty());

    dir.write("sluice.yml", "node.name: from-sluice\n");
    let s = load_settings(dir.path()).unwrap();
    assert_eq!(s.node_name.as_deref(), Some("from-sluice"));
    assert_eq!(s.warnings.len(), 1);
    assert!(
        s.warnings[0].contains("logstash.yml: ignored"),
        "{:?}",
        s.warnings
    );

    // Errors name the file that was read.
    dir.write("sluice.yml", "node.name: x\npipeline.workers: none\n");
    let e = load_settings(dir.path()).unwrap_err();
    assert_eq!(
        e.source_name,
        dir.path().join("sluice.yml").display().to_string()
    );
    assert_eq!((e.line, e.column), (2, 19));
}

#[test]
fn load_pipelines_reads_pipelines_yml() {
    let dir = TempDir::new();
    assert_eq!(load_pipelines(dir.path()).unwrap(), None);
    dir.write(
        "pipelines.yml",
        "- pipeline.id: one\n  path.config: one.conf\n- pipeline.id: two\n  path.config: two.conf\n",
    );
    let p = load_pipelines(dir.path()).unwrap().unwrap();
    let ids: Vec<&str> = p.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["one", "two"]);
    dir.write("pipelines.yml", "- pipeline.id: one\n");
    let e = load_pipelines(dir.path()).unwrap_err();
    assert!(e.source_name.ends_with("pipelines.yml"), "{e}");
    assert!(e.to_string().contains(":1:3: pipeline `one` needs"), "{e}");
}

/// A logstash.yml as found in the wild: the package's commented template with a few settings
/// turned on, nested and flat.
#[test]
fn realistic_logstash_yml() {
    let text = r#"# Settings file in YAML
#
# Settings can be specified either in hierarchical form, e.g.:
#
#   pipeline:
#     batch:
#       size: 125
#       delay: 5
#
# Or as flat keys:
#
#   pipeline.batch.size: 125
#   pipeline.batch.delay: 5
#
# ------------  Node identity ------------
#
# Use a descriptive name for the node:
#
node.name: "ingest-01"
#
# If omitted the node name will default to the machine's host name
#
# ------------ Data path ------------------
#
# Which directory should be used by logstash and its plugins
# for any persistent needs. Defaults to LOGSTASH_HOME/data
#
path.data: /var/lib/logstash
#
# ------------ Pipeline Settings --------------
#
# The ID of the pipeline.
#
# pipeline.id: main
#
# Set the number of workers that will, in parallel, execute the filters+outputs
# stage of the pipeline.
#
# This defaults to the number of the host's CPU cores.
#
pipeline.workers: 4
#
# How many events to retrieve from inputs before sending to filters+workers
#
pipeline:
  batch:
    size: 1000
    delay: 50
  ordered: auto
#
# ------------ Pipeline Configuration Settings --------------
#
# Where to fetch the pipeline configuration for the main pipeline
#
# path.config:
#
# Pipeline configuration string for the main pipeline
#
# config.string:
#
# At startup, test if the configuration is valid and exit (dry run)
#
# config.test_and_exit: false
#
# Periodically check if the configuration has changed and reload the pipeline
# This can also be triggered manually through the SIGHUP signal
#
config.reload.automatic: true
#
# How often to check if the pipeline configuration has changed (in seconds)
# Note that the unit value (s) is required. Values without a qualifier (e.g. 60)
# are treated as nanoseconds.
# Setting the interval this way is not recommended and might change in later versions.
#
config.reload.interval: 30s
#
# ------------ API Settings -------------
# Define settings related to the HTTP API here.
#
# The HTTP API is enabled by default. It can be disabled, but features that rely
# on it will not work as intended.
#
api.enabled: true
#
# By default, the HTTP API is not secured and is therefore bound to only the
# host's loopback interface, ensuring that it is not accessible to the rest of
# the network.
#
api.http.host: 127.0.0.1
#
# The HTTP API web server will listen on an available port from the given range.
# Values can be specified as a single port (e.g., `9600`), or an inclusive range
# of ports (e.g., `9600-9700`).
#
api.http.port: 9600-9700
#
# ------------ Queuing Settings --------------
#
# Internal queuing model, "memory" for legacy in-memory based queuing and
# "persisted" for disk-based acked queueing. Defaults is memory
#
queue:
  type: persisted
  # If using queue.type: persisted, the page data files size. The queue data consists of
  # append-only data files separated into pages. Default is 64mb
  page_capacity: 64mb
  # If using queue.type: persisted, the maximum number of unread events in the queue.
  # Default is 0 (unlimited)
  max_events: 0
  # If using queue.type: persisted, the total capacity of the queue in number of bytes.
  # If you would like more unacked events to be buffered in Logstash, you can increase the
  # capacity using this setting. Please make sure your disk drive has capacity greater than
  # the size specified here. If both max_bytes and max_events are specified, Logstash will pick
  # whichever criteria is reached first
  # Default is 1024mb or 1gb
  max_bytes: 8gb
  checkpoint:
    acks: 1024
    writes: 1024
#
# ------------ Debugging Settings --------------
#
# Options for log.level:
#   * fatal
#   * error
#   * warn
#   * info (default)
#   * debug
#   * trace
log.level: info
path.logs: /var/log/logstash
"#;
    let s = parse_settings("logstash.yml", text).unwrap();
    assert_eq!(s.node_name.as_deref(), Some("ingest-01"));
    assert_eq!(s.path_data, Some(PathBuf::from("/var/lib/logstash")));
    assert_eq!(s.path_logs, Some(PathBuf::from("/var/log/logstash")));
    assert_eq!(s.pipeline.workers, Some(4));
    assert_eq!(s.pipeline.batch_size, Some(1000));
    assert_eq!(s.pipeline.batch_delay, Some(Duration::from_millis(50)));
    assert_eq!(s.pipeline.ordered.as_deref(), Some("auto"));
    assert_eq!(s.config_reload_automatic, Some(true));
    assert_eq!(s.config_reload_interval, Some(Duration::from_secs(30)));
    assert_eq!(s.api.enabled, Some(true));
    assert_eq!(s.api.host.as_deref(), Some("127.0.0.1"));
    assert_eq!(s.api.port, Some(PortRange::DEFAULT));
    assert_eq!(s.log_level.as_deref(), Some("info"));
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let q = s.queue_settings();
    assert_eq!(
        q,
        QueueSettings {
            queue_type: QueueType::Persisted,
            path: Some(PathBuf::from("/var/lib/logstash/queue")),
            page_capacity: 64 * MB,
            max_events: 0,
            max_bytes: 8 * GB,
            checkpoint_acks: 1024,
            checkpoint_writes: 1024,
            checkpoint_retry: true,
            drain: false,
            compression: "none".into(),
        }
    );
}

// ---------------------------------------------------------------------------------------
// Dead letter queue.

#[test]
fn dead_letter_queue_settings() {
    // Logstash's defaults; the path under path.data.
    let d = settings("path.data: /srv/sluice\n").dlq_settings();
    assert_eq!(
        d,
        DlqSettings {
            path: Some(PathBuf::from("/srv/sluice/dead_letter_queue")),
            ..DlqSettings::default()
        }
    );
    assert!(!d.enable);
    assert_eq!(d.max_bytes, 1024 * MB);
    assert_eq!(d.storage_policy, "drop_newer");
    assert_eq!(d.flush_interval, Duration::from_millis(5000));
    assert_eq!(d.retain_age, None);

    let s = settings(
        "dead_letter_queue:\n\
        \x20 enable: true\n\
        \x20 max_bytes: 2gb\n\
        \x20 storage_policy: drop_older\n\
        \x20 flush_interval: 250\n\
        \x20 retain.age: 2d\n\
         path.dead_letter_queue: /fast/dlq\n",
    );
    let d = s.dlq_settings();
    assert!(d.enable);
    assert_eq!(d.max_bytes, 2 * GB);
    assert_eq!(d.storage_policy, "drop_older");
    assert_eq!(d.flush_interval, Duration::from_millis(250));
    assert_eq!(d.retain_age, Some(Duration::from_secs(2 * 86_400)));
    assert_eq!(d.path, Some(PathBuf::from("/fast/dlq")));

    // Per pipeline, over sluice.yml.
    let p = parse_pipelines_with(
        "pipelines.yml",
        "- pipeline.id: a\n  config.string: x\n  dead_letter_queue.enable: false\n  \
         dead_letter_queue.max_bytes: 10mb\n- pipeline.id: b\n  config.string: y\n",
        &no_env,
    )
    .unwrap();
    assert_eq!(p[0].dlq.enable, Some(false));
    let a = p[0].dlq_settings(&s);
    assert!(!a.enable);
    assert_eq!(a.max_bytes, 10 * MB);
    assert_eq!(a.storage_policy, "drop_older");
    assert_eq!(p[1].dlq_settings(&s), d);
    assert_eq!(DlqOverrides::default().resolve(&d), d);

    let e = settings_err("dead_letter_queue.storage_policy: drop_oldest\n");
    assert_err(
        &e,
        1,
        35,
        &[
            "dead_letter_queue.storage_policy",
            "`drop_newer` or `drop_older`",
        ],
    );
    let e = settings_err("dead_letter_queue.flush_interval: 0\n");
    assert_err(&e, 1, 35, &["flush_interval", "greater than 0"]);
    let e = settings_err("dead_letter_queue.retain.age: 5\n");
    assert_err(&e, 1, 31, &["retain.age", "a unit is required"]);
    let e = settings_err("dead_letter_queue.max_bytes: lots\n");
    assert_err(&e, 1, 30, &["dead_letter_queue.max_bytes", "size"]);
    let e =
        pipelines_err("- pipeline.id: a\n  config.string: x\n  dead_letter_queue.enable: maybe\n");
    assert_err(&e, 3, 29, &["dead_letter_queue.enable", "true or false"]);
}
