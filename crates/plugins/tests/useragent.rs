//! The useragent filter: Logstash's useragent_spec.rb samples (legacy and ECS layouts) and
//! common agents (Chrome, Firefox, Safari on iOS, curl, Googlebot), with the built-in
//! uap-core rules.

mod common;

use common::{get, one, v};
mod throughput;

use serde_json::json;
use sluice_event::{Event, Value};

fn run_all(config: &str, inputs: &[serde_json::Value]) -> Vec<Event> {
    common::run_filters(config, inputs).unwrap_or_else(|e| panic!("{e}"))
}

const LEGACY: &str =
    r#"filter { useragent { source => "message" target => "ua" ecs_compatibility => disabled } }"#;
const ECS: &str =
    r#"filter { useragent { source => "message" target => "ua" ecs_compatibility => v8 } }"#;

fn legacy(ua: &str) -> Option<Value> {
    get(&one(LEGACY, json!({ "message": ua })), "ua")
}

fn ecs(ua: &str) -> Event {
    one(ECS, json!({ "message": ua }))
}

#[test]
fn chrome_on_linux_legacy_and_ecs() {
    let ua = "Mozilla/5.0 (X11; Linux i686) AppleWebKit/537.31 (KHTML, like Gecko) Chrome/26.0.1410.63 Safari/537.31";
    assert_eq!(
        legacy(ua),
        v(json!({
            "name": "Chrome", "major": "26", "minor": "0", "patch": "1410", "version": "26.0.1410.63",
            "os": "Linux", "os_name": "Linux", "os_full": "Linux", "device": "Other"
        }))
    );
    let e = ecs(ua);
    assert_eq!(
        get(&e, "ua"),
        v(json!({
            "name": "Chrome", "version": "26.0.1410.63",
            "os": {"name": "Linux", "full": "Linux"}, "device": {"name": "Other"}
        }))
    );
    assert_eq!(
        get(&e, "[@metadata][filter][user_agent]"),
        v(json!({"version": {"major": "26", "minor": "0", "patch": "1410"}}))
    );
}

#[test]
fn logstash_spec_samples() {
    let e = ecs("MacOutlook/16.24.0.190414 (Intelx64 Mac OS X Version 10.14.4 (Build 18E226))");
    assert_eq!(get(&e, "[ua][name]"), v(json!("MacOutlook")));
    assert_eq!(get(&e, "[ua][version]"), v(json!("16.24.0.190414")));
    assert_eq!(get(&e, "[ua][os][full]"), v(json!("Mac OS X 10.14.4")));
    assert_eq!(get(&e, "[ua][os][version]"), v(json!("10.14.4")));
    assert_eq!(get(&e, "[ua][device][name]"), v(json!("Mac")));

    let l = legacy("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_14) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/12.0 Safari/605.1.15").unwrap();
    let l = l.as_object().unwrap();
    assert_eq!(l.get("name").and_then(|v| v.as_str()), Some("Safari"));
    assert_eq!(l.get("version").and_then(|v| v.as_str()), Some("12.0"));
    assert!(!l.contains_key("patch"));
    assert_eq!(
        l.get("os_full").and_then(|v| v.as_str()),
        Some("Mac OS X 10.14")
    );
    assert_eq!(l.get("os_major").and_then(|v| v.as_str()), Some("10"));
    assert_eq!(l.get("os_minor").and_then(|v| v.as_str()), Some("14"));

    let e = ecs("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_3) AppleWebKit/537.75.14 (KHTML, like Gecko) Version/7.0.3 Safari/7046A194A");
    assert_eq!(get(&e, "[ua][version]"), v(json!("7.0.3")));
    assert_eq!(get(&e, "[ua][os][full]"), v(json!("Mac OS X 10.9.3")));

    // Windows versions that are words join with a space, and have no minor.
    let e = ecs("Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 6.0)");
    assert_eq!(get(&e, "[ua][os][name]"), v(json!("Windows")));
    assert_eq!(get(&e, "[ua][os][version]"), v(json!("Vista")));
    assert_eq!(get(&e, "[ua][os][full]"), v(json!("Windows Vista")));
    let l = legacy("Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 5.1; Trident/4.0; .NET CLR 1.1.4322; .NET CLR 2.0.50727; .NET CLR 3.5.30729)").unwrap();
    let l = l.as_object().unwrap();
    assert_eq!(l.get("name").and_then(|v| v.as_str()), Some("IE"));
    assert_eq!(l.get("os_major").and_then(|v| v.as_str()), Some("XP"));
    assert!(!l.contains_key("os_minor"));

    let e = ecs("Mozilla/5.0 (Windows NT 6.3; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/42.0.2311.135 Safari/537.36 Edge/12.246");
    assert_eq!(get(&e, "[ua][name]"), v(json!("Edge")));
    assert_eq!(get(&e, "[ua][os][version]"), v(json!("8.1")));

    let e = ecs("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/89.0.4389.90 Safari/537.36 Edg/89.0.774.50");
    assert_eq!(get(&e, "[ua][name]"), v(json!("Edge")));
    assert_eq!(get(&e, "[ua][version]"), v(json!("89.0.774.50")));
    assert_eq!(get(&e, "[ua][os][full]"), v(json!("Windows 10")));
    assert_eq!(
        get(&e, "[@metadata][filter][user_agent][os]"),
        v(json!({"version": {"major": "10"}}))
    );

    // Text before the agent does not stop the rules.
    let l = one(
        r#"filter { useragent { source => "message" target => "user_agent" ecs_compatibility => "disabled" } }"#,
        json!({"message": "Prefix DATA! Mozilla/5.0 (Android 11; Mobile; rv:68.0) Gecko/68.0 Firefox/86.0"}),
    );
    assert_eq!(get(&l, "[user_agent][name]"), v(json!("Firefox Mobile")));
    assert_eq!(get(&l, "[user_agent][version]"), v(json!("86.0")));
    assert_eq!(get(&l, "[user_agent][os_name]"), v(json!("Android")));
}

#[test]
fn firefox_safari_ios_curl_and_googlebot() {
    assert_eq!(
        legacy(
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.11; rv:45.0) Gecko/20100101 Firefox/45.0"
        ),
        v(json!({
            "name": "Firefox", "major": "45", "minor": "0", "version": "45.0",
            "os": "Mac OS X", "os_name": "Mac OS X", "os_major": "10", "os_minor": "11",
            "os_version": "10.11", "os_full": "Mac OS X 10.11", "device": "Mac"
        }))
    );
    let e = ecs("Mozilla/5.0 (iPhone; CPU iPhone OS 16_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.5 Mobile/15E148 Safari/604.1");
    assert_eq!(
        get(&e, "ua"),
        v(json!({
            "name": "Mobile Safari", "version": "16.5",
            "os": {"name": "iOS", "version": "16.5", "full": "iOS 16.5"},
            "device": {"name": "iPhone"}
        }))
    );
    assert_eq!(
        legacy("curl/7.68.0"),
        v(json!({
            "name": "curl", "major": "7", "minor": "68", "patch": "0", "version": "7.68.0",
            "os": "Other", "os_name": "Other", "os_full": "Other", "device": "Other"
        }))
    );
    let e = ecs("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)");
    assert_eq!(get(&e, "[ua][name]"), v(json!("Googlebot")));
    assert_eq!(get(&e, "[ua][version]"), v(json!("2.1")));
    assert_eq!(get(&e, "[ua][device][name]"), v(json!("Spider")));
    assert_eq!(get(&e, "[ua][os][name]"), v(json!("Other")));
    // An agent no rule knows.
    assert_eq!(
        legacy("something else entirely"),
        v(
            json!({"name": "Other", "os": "Other", "os_name": "Other", "os_full": "Other", "device": "Other"})
        )
    );
}

#[test]
fn targets_prefix_and_source_replacement() {
    let ua = "Mozilla/5.0 (X11; Linux i686) AppleWebKit/537.31 (KHTML, like Gecko) Chrome/26.0.1410.63 Safari/537.31";
    // Legacy without target: the event root.
    let e = one(
        r#"filter { useragent { source => "message" ecs_compatibility => disabled } }"#,
        json!({ "message": ua }),
    );
    assert_eq!(get(&e, "name"), v(json!("Chrome")));
    assert_eq!(get(&e, "os"), v(json!("Linux")));
    assert_eq!(get(&e, "patch"), v(json!("1410")));
    // ECS without target: [user_agent].
    let e = one(
        r#"filter { useragent { source => "message" } }"#,
        json!({ "message": ua }),
    );
    assert_eq!(get(&e, "[user_agent][version]"), v(json!("26.0.1410.63")));
    assert_eq!(get(&e, "[user_agent][os][name]"), v(json!("Linux")));
    // A nested target.
    let e = one(
        r#"filter { useragent { source => "message" target => "[foo][bar]" } }"#,
        json!({"message": "Mozilla/5.0 (iPhone; CPU iPhone OS 13_3_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBDV/iPhone11,8;FBMD/iPhone;FBSN/iOS;FBSV/13.3.1;FBSS/2;FBID/phone;FBLC/en_US;FBOP/5;FBCR/]"}),
    );
    assert_eq!(get(&e, "[foo][bar][name]"), v(json!("Facebook")));
    // A prefix in legacy mode; ignored under ECS.
    let firefox = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:78.0) Gecko/20100101 Firefox/78.0";
    let e = one(
        r#"filter { useragent { source => "message" prefix => "pre_" ecs_compatibility => disabled } }"#,
        json!({ "message": firefox }),
    );
    assert_eq!(get(&e, "pre_name"), v(json!("Firefox")));
    assert_eq!(get(&e, "pre_version"), v(json!("78.0")));
    let e = one(
        r#"filter { useragent { source => "message" prefix => "pre_" } }"#,
        json!({ "message": firefox }),
    );
    assert_eq!(get(&e, "[user_agent][name]"), v(json!("Firefox")));
    // target == source: the string becomes the hash.
    let e = one(
        r#"filter { useragent { source => "message" target => "message" ecs_compatibility => disabled } }"#,
        json!({ "message": ua }),
    );
    assert_eq!(get(&e, "[message][name]"), v(json!("Chrome")));
    assert_eq!(get(&e, "[message][os]"), v(json!("Linux")));
}

#[test]
fn nothing_to_parse_changes_nothing() {
    let cfg =
        r#"filter { useragent { source => "message" target => "ua" add_tag => ["parsed"] } }"#;
    for input in [
        json!({"foo": "bar"}),
        json!({"message": ""}),
        json!({"message": 42}),
    ] {
        let e = one(cfg, input.clone());
        assert_eq!(get(&e, "ua"), None, "{input}");
        assert!(!e.has_tag("parsed"), "{input}");
    }
    // An array: its first element.
    let e = one(cfg, json!({"message": ["curl/8.1.2", "Wget/1.21"]}));
    assert_eq!(get(&e, "[ua][name]"), v(json!("curl")));
    assert!(e.has_tag("parsed"));
}

#[test]
fn cached_results_are_the_same_and_are_not_shared_with_events() {
    // A one-entry cache: alternating agents miss, repeats hit. A later filter changing the
    // parsed name must not change what the cache gives the next event.
    let cfg = r#"filter {
        useragent { source => "message" target => "ua" lru_cache_size => 1 }
        mutate { uppercase => ["[ua][name]"] }
    }"#;
    let chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/89.0.4389.90 Safari/537.36";
    let curl = "curl/7.68.0";
    let inputs: Vec<_> = [chrome, chrome, curl, chrome, curl, curl]
        .iter()
        .map(|ua| json!({ "message": ua }))
        .collect();
    let out = run_all(cfg, &inputs);
    let names: Vec<_> = out.iter().map(|e| get(e, "[ua][name]")).collect();
    assert_eq!(
        names,
        [
            v(json!("CHROME")),
            v(json!("CHROME")),
            v(json!("CURL")),
            v(json!("CHROME")),
            v(json!("CURL")),
            v(json!("CURL"))
        ]
    );
    assert!(out
        .iter()
        .all(|e| get(e, "[ua][device][name]") == v(json!("Other"))));
    assert_eq!(get(&out[1], "[ua][version]"), v(json!("89.0.4389.90")));
}

#[test]
fn settings_are_checked() {
    let err = common::run_filters(
        r#"filter { useragent { source => "m" lru_cache_size => 0 } }"#,
        &[],
    )
    .err()
    .unwrap();
    assert!(err.contains("lru_cache_size"), "{err}");
    let err = common::run_filters(r#"filter { useragent { target => "ua" } }"#, &[])
        .err()
        .unwrap();
    assert!(
        err.contains("missing required setting \"source\" for filter plugin \"useragent\""),
        "{err}"
    );
    let err = common::run_filters(
        r#"filter { useragent { source => "m" regexes => "/nonexistent/regexes.yaml" } }"#,
        &[],
    )
    .err()
    .unwrap();
    assert!(
        err.contains("cannot read /nonexistent/regexes.yaml"),
        "{err}"
    );
}

#[test]
fn a_regexes_file_replaces_the_builtin_rules() {
    let dir = std::env::temp_dir().join(format!("sluice-ua-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("regexes.yaml");
    std::fs::write(
        &file,
        r#"
user_agent_parsers:
  - regex: '(MyBot)/(\d+)\.(\d+)'
os_parsers:
  - regex: '(PlanNine) (\d+)'
    os_replacement: 'Plan 9'
device_parsers:
  - regex: 'mybot'
    regex_flag: 'i'
    device_replacement: 'Robot'
"#,
    )
    .unwrap();
    let cfg = format!(
        r#"filter {{ useragent {{ source => "message" target => "ua" regexes => {:?} }} }}"#,
        file.display().to_string()
    );
    let e = one(&cfg, json!({"message": "MyBot/3.1 (PlanNine 4)"}));
    assert_eq!(
        get(&e, "ua"),
        v(
            json!({"name": "MyBot", "version": "3.1", "os": {"name": "Plan 9", "version": "4", "full": "Plan 9 4"}, "device": {"name": "Robot"}})
        )
    );
    let e = one(&cfg, json!({"message": "Mozilla/5.0 Firefox/45.0"}));
    assert_eq!(get(&e, "[ua][name]"), v(json!("Other")));
    std::fs::write(
        &file,
        "user_agent_parsers:\n  - regex: '(unclosed'\nos_parsers: []\ndevice_parsers: []\n",
    )
    .unwrap();
    let err = common::run_filters(&cfg, &[]).err().unwrap();
    assert!(err.contains("do not compile"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The agents of ../shared/data/apache_logs (the last quoted field of each line).
fn apache_agents() -> Option<Vec<String>> {
    let dir = common::shared_dir()?;
    let text = std::fs::read_to_string(dir.join("data/apache_logs")).ok()?;
    Some(
        text.lines()
            .filter_map(|l| {
                let l = l.strip_suffix('"')?;
                Some(l[l.rfind('"')? + 1..].to_owned())
            })
            .collect(),
    )
}

/// `cargo test --release -p sluice-plugins --test useragent -- --ignored --nocapture`
#[test]
#[ignore = "throughput figures; run in release"]
fn throughput_on_apache_logs() {
    let Some(agents) = apache_agents() else {
        return;
    };
    let distinct: std::collections::HashSet<&String> = agents.iter().collect();
    let compiling = throughput::cpu_time();
    let rules = sluice_plugins::filters::useragent::builtin_rules();
    let compile_ms = (throughput::cpu_time() - compiling).as_millis();
    let started = throughput::cpu_time();
    let mut names = 0usize;
    for a in &agents {
        let (ua, os, dev) = rules.extract(a);
        names += ua.is_some() as usize + os.is_some() as usize + dev.is_some() as usize;
    }
    let raw = agents.len() as f64 / (throughput::cpu_time() - started).as_secs_f64();
    assert!(names > 0);
    let changes = agents.windows(2).filter(|w| w[0] != w[1]).count() + 1;
    let one = throughput::events_per_second(
        r#"filter { useragent { source => "agent" lru_cache_size => 1 } }"#,
        "agent",
        &agents,
        1,
    );
    let cached = throughput::events_per_second(
        r#"filter { useragent { source => "agent" } }"#,
        "agent",
        &agents,
        30,
    );
    eprintln!(
        "useragent rules compiled in {compile_ms} ms of CPU; on {} agents ({} distinct): uncached parse {raw:.0} UAs per CPU-s; \
         filter with lru_cache_size 1 ({changes} misses) {one:.0} events per CPU-s; \
         filter with the default cache (all hits) {cached:.0} events per CPU-s",
        agents.len(),
        distinct.len()
    );
}
