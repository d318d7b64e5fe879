//! The `snmptrap` input through the real binary with net-snmp's `snmptrap` and `snmpinform`
//! (Debian's snmp) as the senders: v1 and v2c traps as Logstash's input makes them (OIDs named,
//! values converted, the PDU in `message` and `[@metadata]`), an inform answered (snmpinform
//! succeeds only then), another community dropped and counted, and the mapping options; SNMPv3
//! traps and informs under each auth and privacy protocol net-snmp has (USM: the sender's keys
//! localized per engine, an inform's engine discovered), and the messages USM must refuse.

mod api_support;
mod net_support;
mod run_support;

use std::process::Command;

use serde_json::{json, Value};

fn net_snmp(tool: &str) -> Option<String> {
    let p = format!("/usr/bin/{tool}");
    if std::path::Path::new(&p).exists() {
        Some(p)
    } else {
        net_support::missing(&format!("net-snmp's {tool} (Debian's snmp)"));
        None
    }
}

fn send(tool: &str, args: &[&str]) {
    let out = Command::new(tool)
        // No MIBs: every OID here is numeric.
        .env("MIBS", "")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{tool} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn start(options: &str, out: &std::path::Path) -> (api_support::Sluice, u16) {
    let dir = api_support::temp_dir("snmptrap");
    let port = net_support::free_udp_port();
    let config = format!(
        r#"input {{ snmptrap {{ host => "127.0.0.1" port => {port} {options} }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let s = api_support::Sluice::start(&dir, "", "", &["-e", &config]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    (s, port)
}

fn lines(p: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn v1_v2c_and_informs_as_logstash_makes_them() {
    let (Some(trap), Some(inform)) = (net_snmp("snmptrap"), net_snmp("snmpinform")) else {
        return;
    };
    let out = api_support::temp_dir("snmptrap-out").join("out.json");
    let (s, port) = start("ecs_compatibility => disabled", &out);
    let to = format!("127.0.0.1:{port}");
    send(
        &trap,
        &[
            "-v",
            "1",
            "-c",
            "public",
            &to,
            "1.3.6.1.4.1.8072.3.2.10",
            "192.168.1.40",
            "6",
            "1",
            "1500",
            "1.3.6.1.2.1.1.5.0",
            "s",
            "router1",
            "1.3.6.1.2.1.2.2.1.1.2",
            "i",
            "2",
            "1.3.6.1.4.1.8072.9999.1.1",
            "x",
            "001a2bff",
            "1.3.6.1.4.1.8072.9999.1.2",
            "t",
            "1500",
        ],
    );
    send(
        &trap,
        &[
            "-v",
            "2c",
            "-c",
            "public",
            &to,
            "123456",
            "1.3.6.1.6.3.1.1.5.3",
            "1.3.6.1.2.1.2.2.1.1.2",
            "i",
            "2",
            "1.3.6.1.4.1.8072.9999.1.3",
            "a",
            "10.0.0.1",
            "1.3.6.1.4.1.8072.9999.1.4",
            "c",
            "4294967295",
        ],
    );
    // snmpinform waits for the answer: it fails unless sluice answered.
    send(
        &inform,
        &[
            "-v",
            "2c",
            "-c",
            "public",
            "-r",
            "0",
            "-t",
            "5",
            &to,
            "42",
            "1.3.6.1.6.3.1.1.5.1",
        ],
    );
    // Another community: dropped, counted.
    send(
        &trap,
        &["-v", "2c", "-c", "private", &to, "1", "1.3.6.1.6.3.1.1.5.1"],
    );
    s.wait_for(20, "three traps and one refused", |v| {
        let p = &v["pipelines"]["main"];
        p["events"]["out"] == 3 && p["plugins"]["inputs"][0]["rejected_community"] == 1
    });
    s.stop();
    let events = lines(&out);
    let v1 = &events[0];
    assert_eq!(v1["host"], "127.0.0.1");
    assert_eq!(
        v1["iso.org.dod.internet.mgmt.mib-2.system.sysName.0"], "router1",
        "{v1}"
    );
    assert_eq!(
        v1["iso.org.dod.internet.mgmt.mib-2.interfaces.ifTable.ifEntry.ifIndex.2"],
        2
    );
    assert_eq!(
        v1["iso.org.dod.internet.private.enterprises.8072.9999.1.1"],
        "00:1a:2b:ff"
    );
    assert_eq!(
        v1["iso.org.dod.internet.private.enterprises.8072.9999.1.2"],
        1500
    );
    assert_eq!(
        v1["message"],
        r#"{"agent_addr":"192.168.1.40","generic_trap":6,"specific_trap":1,"enterprise":"1.3.6.1.4.1.8072.3.2.10","variable_bindings":{"1.3.6.1.2.1.1.5.0":"router1","1.3.6.1.2.1.2.2.1.1.2":2,"1.3.6.1.4.1.8072.9999.1.1":"00:1a:2b:ff","1.3.6.1.4.1.8072.9999.1.2":1500},"type":"V1TRAP","community":"public","version":"1","timestamp":1500}"#
    );
    let v2 = &events[1];
    assert_eq!(
        v2["iso.org.dod.internet.mgmt.mib-2.system.sysUpTime.sysUpTimeInstance"], 123456,
        "{v2}"
    );
    assert_eq!(
        v2["iso.org.dod.internet.snmpV2.snmpModules.snmpMIB.snmpMIBObjects.snmpTrap.snmpTrapOID.0"],
        "1.3.6.1.6.3.1.1.5.3"
    );
    assert_eq!(
        v2["iso.org.dod.internet.private.enterprises.8072.9999.1.3"],
        "10.0.0.1"
    );
    assert_eq!(
        v2["iso.org.dod.internet.private.enterprises.8072.9999.1.4"],
        4294967295u64
    );
    let pdu: Value = serde_json::from_str(v2["message"].as_str().unwrap()).unwrap();
    assert_eq!(pdu["type"], "TRAP");
    assert_eq!(pdu["version"], "2c");
    assert_eq!(pdu["error_status_text"], "Success");
    assert_eq!(pdu["variable_bindings"]["1.3.6.1.2.1.1.3.0"], 123456);
    let informed: Value = serde_json::from_str(events[2]["message"].as_str().unwrap()).unwrap();
    assert_eq!(informed["type"], "INFORM");
}

#[test]
fn mapping_options_and_target() {
    let Some(trap) = net_snmp("snmptrap") else {
        return;
    };
    let out = api_support::temp_dir("snmptrap-map").join("out.json");
    let (s, port) = start(
        r#"use_provided_mibs => false oid_mapping_format => "ruby_snmp" oid_map_field_values => true target => "[snmp]""#,
        &out,
    );
    let to = format!("127.0.0.1:{port}");
    send(
        &trap,
        &[
            "-v",
            "2c",
            "-c",
            "public",
            &to,
            "123456",
            "1.3.6.1.6.3.1.1.5.3",
            "1.3.6.1.2.1.2.2.1.8.2",
            "i",
            "2",
        ],
    );
    s.wait_for(20, "one trap", |v| {
        v["pipelines"]["main"]["events"]["out"] == 1
    });
    s.stop();
    let e = &lines(&out)[0];
    assert_eq!(
        e["snmp"],
        json!({
            "SNMPv2-MIB::sysUpTime.0": 123456,
            "SNMPv2-MIB::snmpTrapOID.0": "IF-MIB::linkDown",
            "IF-MIB::ifOperStatus.2": 2
        }),
        "{e}"
    );
    // ECS (the default): the sender in [host][ip].
    assert_eq!(e["host"]["ip"], "127.0.0.1");
}

#[test]
fn options_not_supported_yet_are_refused() {
    for (option, says) in [
        (
            r#"supported_versions => ["3"]"#,
            "`security_name` is required when SNMP v3 is enabled",
        ),
        (
            r#"security_name => "a""#,
            "requires `supported_versions` to include version '3'",
        ),
        (
            r#"supported_versions => ["3"] security_name => "a" auth_protocol => "sha" auth_pass => "short""#,
            "`auth_pass` passphrase must be at least 8 bytes long",
        ),
        (
            r#"supported_versions => ["3"] security_name => "a" security_level => "authPriv""#,
            "requires the configuration of `auth_protocol`",
        ),
        (
            r#"supported_versions => ["3"] security_name => "a" auth_protocol => "sha" auth_pass => "12345678" priv_protocol => "3des" priv_pass => "12345678""#,
            "\"3des\" is not supported yet",
        ),
        (r#"supported_transports => ["tcp"]"#, "is not supported yet"),
        (r#"oid_root_skip => 2 oid_path_length => 2"#, "Use either"),
        (
            r#"oid_mapping_format => "dotted_string" oid_root_skip => 2"#,
            "requires setting",
        ),
    ] {
        let config = format!("input {{ snmptrap {{ {option} }} }} output {{ stdout {{ }} }}");
        let (ok, _, log) = run_support::pipe_through(&config, "");
        assert!(!ok, "{option}");
        assert!(log.contains(says), "{option}: {log}");
    }
}

/// The USM options of one snmptrap input, and net-snmp's words for the same user.
struct V3User {
    logstash: (&'static str, &'static str),
    net_snmp: (&'static str, &'static str),
}

const V3_USERS: [V3User; 7] = [
    V3User {
        logstash: ("md5", "des"),
        net_snmp: ("MD5", "DES"),
    },
    V3User {
        logstash: ("sha", "aes"),
        net_snmp: ("SHA", "AES"),
    },
    // SHA-1's 20 bytes extended to AES-256's 32 (Blumenthal, as net-snmp and SNMP4J do).
    V3User {
        logstash: ("sha", "aes256"),
        net_snmp: ("SHA", "AES-256"),
    },
    V3User {
        logstash: ("hmac128sha224", "aes192"),
        net_snmp: ("SHA-224", "AES-192"),
    },
    V3User {
        logstash: ("sha2", "aes256"),
        net_snmp: ("SHA-256", "AES-256"),
    },
    V3User {
        logstash: ("hmac256sha384", "aes128"),
        net_snmp: ("SHA-384", "AES"),
    },
    V3User {
        logstash: ("hmac384sha512", "aes256"),
        net_snmp: ("SHA-512", "AES-256"),
    },
];

#[test]
fn v3_traps_and_informs_under_every_protocol() {
    let (Some(trap), Some(inform)) = (net_snmp("snmptrap"), net_snmp("snmpinform")) else {
        return;
    };
    let dir = api_support::temp_dir("snmptrap-v3");
    let out = dir.join("out.json");
    // One input per user (Logstash takes one user per input), each on its own port.
    let ports: Vec<u16> = V3_USERS
        .iter()
        .map(|_| net_support::free_udp_port())
        .collect();
    let inputs: String = V3_USERS
        .iter()
        .zip(&ports)
        .map(|(u, port)| {
            format!(
                r#"snmptrap {{ host => "127.0.0.1" port => {port} supported_versions => ["2c", "3"]
                     security_name => "alice" auth_protocol => "{}" auth_pass => "authpass123"
                     priv_protocol => "{}" priv_pass => "privpass123" security_level => "authPriv"
                     ecs_compatibility => disabled }}
                "#,
                u.logstash.0, u.logstash.1
            )
        })
        .collect();
    let config = format!(
        r#"input {{ {inputs} }} output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let s = api_support::Sluice::start(&dir, "", "", &["-e", &config]);
    std::thread::sleep(std::time::Duration::from_millis(800));
    // One v3 trap or inform as user alice: authPriv with `privacy`, authNoPriv without.
    let v3 = |tool: &str,
              port: u16,
              auth: (&str, &str),
              privacy: Option<&str>,
              value: &str,
              extra: &[&str]| {
        let to = format!("127.0.0.1:{port}");
        let level = if privacy.is_some() {
            "authPriv"
        } else {
            "authNoPriv"
        };
        let mut args = vec![
            "-v", "3", "-u", "alice", "-l", level, "-a", auth.0, "-A", auth.1,
        ];
        if let Some(x) = privacy {
            args.extend(["-x", x, "-X", "privpass123"]);
        }
        args.extend(extra);
        args.extend([
            &to,
            "123456",
            "1.3.6.1.6.3.1.1.5.1",
            "1.3.6.1.2.1.1.5.0",
            "s",
            value,
        ]);
        send(tool, &args);
    };
    let engine = ["-e", "0x8000000001020304"];
    for (i, (u, port)) in V3_USERS.iter().zip(&ports).enumerate() {
        let auth = (u.net_snmp.0, "authpass123");
        let context = ["-e", "0x8000000001020304", "-E", "0x8000000001020304"];
        v3(
            &trap,
            *port,
            auth,
            Some(u.net_snmp.1),
            &format!("trap-{i}"),
            &context,
        );
        // snmpinform waits for the Response: it fails unless sluice, the authoritative engine
        // here, answered its discovery and then its inform.
        let once = ["-r", "0", "-t", "5"];
        v3(
            &inform,
            *port,
            auth,
            Some(u.net_snmp.1),
            &format!("inform-{i}"),
            &once,
        );
    }
    // Refused, each counted on the first input (MD5/DES): a wrong auth passphrase, a trap below
    // the input's security_level, another user; a v2c trap still comes in.
    let first = ports[0];
    v3(
        &trap,
        first,
        ("MD5", "wrongpass123"),
        Some("AES"),
        "wrong",
        &engine,
    );
    v3(
        &trap,
        first,
        ("MD5", "authpass123"),
        None,
        "too-low",
        &engine,
    );
    send(
        &trap,
        &[
            "-v",
            "3",
            "-e",
            "0x8000000001020304",
            "-u",
            "mallory",
            "-l",
            "noAuthNoPriv",
            &format!("127.0.0.1:{first}"),
            "1",
            "1.3.6.1.6.3.1.1.5.1",
        ],
    );
    send(
        &trap,
        &[
            "-v",
            "2c",
            "-c",
            "public",
            &format!("127.0.0.1:{first}"),
            "1",
            "1.3.6.1.6.3.1.1.5.1",
        ],
    );
    let want = 2 * V3_USERS.len() + 1;
    s.wait_for(30, "every trap and inform, three refused", |v| {
        let p = &v["pipelines"]["main"];
        p["events"]["out"] == want
            && p["plugins"]["inputs"]
                .as_array()
                .is_some_and(|a| a.iter().any(|i| i["rejected_security"] == 3))
    });
    s.stop();
    let events = lines(&out);
    assert_eq!(events.len(), want);
    let name = "iso.org.dod.internet.mgmt.mib-2.system.sysName.0";
    for i in 0..V3_USERS.len() {
        for kind in ["trap", "inform"] {
            let value = format!("{kind}-{i}");
            let e = events
                .iter()
                .find(|e| e[name] == value.as_str())
                .unwrap_or_else(|| panic!("{value} missing: {events:?}"));
            let message = e["message"].as_str().unwrap();
            let pdu: Value = serde_json::from_str(message).unwrap();
            assert_eq!(pdu["version"], "3", "{e}");
            assert_eq!(pdu["type"], if kind == "trap" { "TRAP" } else { "INFORM" });
            assert!(pdu.get("community").is_none(), "{e}");
            if kind == "trap" {
                // Logstash's key order (its HashMap's), the context as SNMP4J prints it.
                let rid = pdu["request_id"].as_i64().unwrap();
                assert_eq!(
                    message.replace(&format!(r#""request_id":{rid}"#), r#""request_id":RID"#),
                    format!(
                        r#"{{"error_index":0,"context_engine_id":"80:00:00:00:01:02:03:04","variable_bindings":{{"1.3.6.1.2.1.1.3.0":123456,"1.3.6.1.6.3.1.1.4.1.0":"1.3.6.1.6.3.1.1.5.1","1.3.6.1.2.1.1.5.0":"{value}"}},"error_status":0,"context_name":"","type":"TRAP","error_status_text":"Success","version":"3","request_id":RID}}"#
                    )
                );
            }
        }
    }
    assert!(!events
        .iter()
        .any(|e| e[name] == "wrong" || e[name] == "too-low"));
}
