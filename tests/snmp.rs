//! The `snmp` input through the real binary against net-snmp's `snmpd` (Debian) on a port of
//! the test's own: get, walk and a table in one event per host as Logstash's input makes it,
//! v1, v2c and v3 (USM users of each auth and privacy protocol, the agent's engine discovered),
//! a host that does not answer (a tagged event), and refused options.

mod net_support;
mod run_support;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use run_support::{temp_dir, Run};
use serde_json::Value;

struct Snmpd(Child);

impl Drop for Snmpd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn snmpd(dir: &Path) -> Option<(Snmpd, u16)> {
    snmpd_with(dir, "")
}

/// snmpd with more configuration lines (its persistent state in `dir`).
fn snmpd_with(dir: &Path, more: &str) -> Option<(Snmpd, u16)> {
    let bin = ["/usr/sbin/snmpd", "/usr/bin/snmpd"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    let Some(bin) = bin else {
        net_support::missing("snmpd (Debian's snmpd)");
        return None;
    };
    let port = net_support::free_udp_port();
    let conf = dir.join("snmpd.conf");
    std::fs::write(
        &conf,
        format!(
            "agentAddress udp:127.0.0.1:{port}\nrocommunity public 127.0.0.1\nsysName testhost\nsysLocation lab\nsysDescr sluice test agent\n{more}"
        ),
    )
    .unwrap();
    let agent = Snmpd(
        Command::new(bin)
            // createUser's users are written here, not in /var/lib/snmp.
            .env("SNMP_PERSISTENT_DIR", dir)
            .args(["-f", "-Lo", "-C", "-c"])
            .arg(&conf)
            .arg("-p")
            .arg(dir.join("snmpd.pid"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Ready once it answers (net-snmp's snmpget, MIB-less).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let ok = Command::new("snmpget")
            .env("MIBS", "")
            .args([
                "-v2c",
                "-c",
                "public",
                "-t",
                "1",
                "-r",
                "0",
                &format!("127.0.0.1:{port}"),
                "1.3.6.1.2.1.1.5.0",
            ])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some((agent, port));
        }
        assert!(std::time::Instant::now() < deadline, "snmpd did not answer");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

fn poll(dir: &Path, input: &str, n: usize) -> (Vec<Value>, String) {
    let out = dir.join("out.json");
    let config = format!(
        r#"input {{ snmp {{ {input} interval => 30 }} }} output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(dir, "", &[], &config, Stdio::null(), Stdio::null());
    let text = r.wait_lines(&out, n, 30);
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let events = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (events, r.log())
}

#[test]
fn get_walk_and_table_from_snmpd() {
    let dir = temp_dir("snmp", "poll");
    let Some((_agent, port)) = snmpd(&dir) else {
        return;
    };
    let (events, log) = poll(
        &dir,
        &format!(
            r#"get => ["1.3.6.1.2.1.1.1.0", "1.3.6.1.2.1.1.5.0", "1.3.6.1.2.1.1.99.0"]
               walk => ["1.3.6.1.2.1.1.9.1.4"]
               tables => [{{ "name" => "interfaces" "columns" => ["1.3.6.1.2.1.2.2.1.1", "1.3.6.1.2.1.2.2.1.2"] }}]
               hosts => [{{ host => "udp:127.0.0.1/{port}" }}, {{ host => "udp:127.0.0.1/{port}" version => "1" }}]"#
        ),
        2,
    );
    assert!(!log.contains("ERROR"), "{log}");
    let name = |s: &str| format!("iso.org.dod.internet.mgmt.mib-2.system.{s}");
    for e in &events {
        assert!(e["host"]["ip"] == "127.0.0.1", "{e}");
        assert!(e.get("tags").is_none(), "{e}");
        // The walk: sysORUpTime.1.., TimeTicks as numbers.
        let uptimes = e
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| k.starts_with(&name("sysORTable.sysOREntry.sysORUpTime.")))
            .count();
        assert!(uptimes >= 5, "{e}");
        assert!(
            e[name("sysORTable.sysOREntry.sysORUpTime.1")].is_i64(),
            "{e}"
        );
        // The table: rows by index, the loopback first.
        let rows = e["interfaces"].as_array().unwrap();
        assert!(!rows.is_empty(), "{e}");
        assert_eq!(rows[0]["index"], "1");
        assert_eq!(
            rows[0]["iso.org.dod.internet.mgmt.mib-2.interfaces.ifTable.ifEntry.ifIndex"],
            1
        );
        assert_eq!(
            rows[0]["iso.org.dod.internet.mgmt.mib-2.interfaces.ifTable.ifEntry.ifDescr"],
            "lo"
        );
    }
    // v2c tells a missing object apart; v1's agent answers the whole GET with noSuchName and
    // its bindings as sent, which come out "null" (as in Logstash, which ignores the status).
    let (v2, v1): (Vec<&Value>, Vec<&Value>) = events
        .iter()
        .partition(|e| e[name("sysName.0")] == "testhost");
    assert_eq!((v2.len(), v1.len()), (1, 1), "{events:?}");
    assert_eq!(v2[0][name("sysDescr.0")], "sluice test agent");
    assert_eq!(
        v2[0][name("99.0")],
        "error: no such object currently exists at this OID"
    );
    assert_eq!(v1[0][name("sysName.0")], "null");
}

#[test]
fn a_silent_host_gives_a_tagged_event_and_options_are_checked() {
    let dir = temp_dir("snmp", "silent");
    let port = net_support::free_udp_port();
    let (events, log) = poll(
        &dir,
        &format!(
            r#"get => ["1.3.6.1.2.1.1.5.0"] ecs_compatibility => disabled
               hosts => [{{ host => "udp:127.0.0.1/{port}" timeout => 200 retries => 1 }}]"#
        ),
        1,
    );
    assert!(log.contains("timeout sending snmp request"), "{log}");
    let e = &events[0];
    assert_eq!(e["tags"], serde_json::json!(["_snmpfailure"]));
    assert_eq!(e["host"], "127.0.0.1");
    for (option, says) in [
        (
            r#"get => ["1.3.6.1.2.1.1.5.0"] hosts => [{ host => "udp:127.0.0.1/161" version => "3" }]"#,
            "`security_name` is required when SNMP v3 is enabled",
        ),
        (
            r#"get => ["1.3.6.1.2.1.1.5.0"] hosts => [{ host => "udp:127.0.0.1/161" version => "3" }] security_name => "a""#,
            "security_level is required",
        ),
        (
            r#"get => ["1.3.6.1.2.1.1.5.0"] hosts => [{ host => "udp:127.0.0.1/161" }] local_engine_id => "abc""#,
            "greater or equal than 5",
        ),
        (
            r#"get => ["1.3.6.1.2.1.1.5.0"] hosts => [{ host => "tcp:127.0.0.1/161" }]"#,
            "tcp is not supported yet",
        ),
        (
            r#"get => ["x.y"] hosts => [{ host => "udp:127.0.0.1/161" }]"#,
            "has an invalid format",
        ),
        (
            r#"hosts => [{ host => "udp:127.0.0.1/161" }]"#,
            "at least one get OID",
        ),
        (
            r#"get => ["1.3.6.1.2.1.1.5.0"] hosts => [{ host => "127.0.0.1" }]"#,
            "invalid format for host option",
        ),
    ] {
        let config = format!("input {{ snmp {{ {option} }} }} output {{ stdout {{ }} }}");
        let (ok, _, log) = run_support::pipe_through(&config, "");
        assert!(!ok, "{option}");
        assert!(log.contains(says), "{option}: {log}");
    }
}

#[test]
fn v3_users_of_every_protocol() {
    let dir = temp_dir("snmp", "v3");
    // (user, Logstash's auth and privacy protocols, net-snmp's, security_level)
    let users = [
        ("alice", "sha2", "aes256", "SHA-256", "AES-256", "authPriv"),
        ("bob", "md5", "des", "MD5", "DES", "authPriv"),
        // SHA-1's key extended to AES-192's (Blumenthal).
        ("carol", "sha", "aes192", "SHA", "AES-192", "authPriv"),
        ("dave", "hmac384sha512", "", "SHA-512", "", "authNoPriv"),
        ("erin", "hmac128sha224", "aes", "SHA-224", "AES", "authPriv"),
    ];
    let mut conf = String::from("exactEngineID 0x80001f8804736c756963652d74657374\n");
    for (name, _, _, auth, privacy, level) in users {
        let privacy = if privacy.is_empty() {
            String::new()
        } else {
            format!(r#"{privacy} "privpass123""#)
        };
        conf.push_str(&format!(
            "createUser {name} {auth} \"authpass123\" {privacy}\nrouser {name} {level}\n"
        ));
    }
    let Some((_agent, port)) = snmpd_with(&dir, &conf) else {
        return;
    };
    // One input per user, as Logstash takes one user per input; and one whose passphrase is
    // wrong.
    let mut inputs = String::new();
    for (name, auth, privacy, _, _, level) in users
        .iter()
        .copied()
        .chain([("alice", "sha2", "aes256", "", "", "authPriv")])
    {
        let wrong = inputs.matches("snmp {").count() == users.len();
        let privacy = if privacy.is_empty() {
            String::new()
        } else {
            format!(r#"priv_protocol => "{privacy}" priv_pass => "privpass123""#)
        };
        inputs.push_str(&format!(
            r#"snmp {{ get => ["1.3.6.1.2.1.1.5.0"] walk => ["1.3.6.1.2.1.1.9.1.4"]
                 hosts => [{{ host => "udp:127.0.0.1/{port}" version => "3" timeout => 500 retries => 1 }}]
                 security_name => "{name}" auth_protocol => "{auth}" auth_pass => "{}" {privacy}
                 security_level => "{level}" add_field => {{ "user" => "{name}" }} interval => 30 }}
            "#,
            if wrong { "wrongpass123" } else { "authpass123" }
        ));
    }
    let out = dir.join("out.json");
    let config = format!(
        r#"input {{ {inputs} }} output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    let text = r.wait_lines(&out, users.len() + 1, 60);
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sys = |s: &str| format!("iso.org.dod.internet.mgmt.mib-2.system.{s}");
    let (good, bad): (Vec<&Value>, Vec<&Value>) =
        events.iter().partition(|e| e.get("tags").is_none());
    assert_eq!(good.len(), users.len(), "{events:?}");
    for (name, ..) in users {
        let e = good
            .iter()
            .find(|e| e["user"] == name)
            .unwrap_or_else(|| panic!("{name}: {events:?}"));
        assert_eq!(e[sys("sysName.0")], "testhost", "{e}");
        assert!(
            e[sys("sysORTable.sysOREntry.sysORUpTime.1")].is_i64(),
            "{e}"
        );
    }
    // The wrong passphrase: the agent's wrongDigests Report, a tagged event.
    assert_eq!(bad.len(), 1, "{events:?}");
    assert_eq!(bad[0]["tags"], serde_json::json!(["_snmpfailure"]));
    assert!(bad[0].get(sys("sysName.0")).is_none());
    assert!(r.log().contains("wrong digest"), "{}", r.log());
}
