//! The `rabbitmq` input and output through the real binary against a real RabbitMQ broker
//! (Debian's `rabbitmq-server`), which each test starts on free 127.0.0.1 ports, with a node
//! name, data, logs, config and Erlang cookie of its own under the test's temporary directory
//! and no plugins (so no management listener), and kills when done. Without `rabbitmq-server`
//! those tests are skipped with a message, except under `CI=true`, where its absence is a
//! failure (`scripts/test` installs it). The option checks need no broker.
//!
//! What the plugins guarantee, and what the tests hold them to: a clean run delivers every
//! event exactly once; with the broker killed (SIGKILL) mid-stream and started again, every
//! event still arrives (the output publishes again what the broker had not confirmed, the input
//! acknowledges only what is queued), at least once: duplicates are allowed and counted.

mod net_support;
mod run_support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use run_support::{complete_text, Run};

/// The broker's start script; run directly (not through `/usr/sbin/rabbitmq-server`, which
/// switches to the `rabbitmq` user), so that everything it writes is under our directory.
const SERVER: &str = "/usr/lib/rabbitmq/bin/rabbitmq-server";

fn rabbitmq_available() -> bool {
    if Path::new(SERVER).is_file() {
        return true;
    }
    net_support::missing(
        "rabbitmq-server is not installed (scripts/test installs it: apt-get install rabbitmq-server)",
    );
    false
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-rabbitmq-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A RabbitMQ node of our own, killed on drop.
struct Broker {
    child: Option<Child>,
    port: u16,
    /// A TLS listener that requires a client certificate from our authority, when asked for.
    tls_port: Option<u16>,
    dist_port: u16,
    node: String,
    dir: PathBuf,
}

impl Broker {
    fn start(dir: &Path, tls: Option<&net_support::Certs>) -> Broker {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = dir.join("broker");
        std::fs::create_dir_all(&dir).unwrap();
        let port = net_support::free_port();
        let mut conf = format!(
            "listeners.tcp.default = 127.0.0.1:{port}\n\
             disk_free_limit.absolute = 1MB\n\
             log.console = false\n"
        );
        let tls_port = tls.map(|c| {
            let tls_port = net_support::free_port();
            conf.push_str(&format!(
                "listeners.ssl.default = 127.0.0.1:{tls_port}\n\
                 ssl_options.cacertfile = {}\n\
                 ssl_options.certfile = {}\n\
                 ssl_options.keyfile = {}\n\
                 ssl_options.verify = verify_peer\n\
                 ssl_options.fail_if_no_peer_cert = true\n",
                c.ca.display(),
                c.server_cert.display(),
                c.server_key.display()
            ));
            tls_port
        });
        std::fs::write(dir.join("rabbitmq.conf"), conf).unwrap();
        std::fs::write(dir.join("enabled_plugins"), "[].\n").unwrap();
        let mut b = Broker {
            child: None,
            port,
            tls_port,
            dist_port: net_support::free_port(),
            node: format!(
                "sluice-{}-{}@localhost",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ),
            dir,
        };
        b.spawn();
        b
    }

    /// Starts the node (again, on the same ports and data) and waits until it speaks AMQP.
    fn spawn(&mut self) {
        let d = &self.dir;
        let child = Command::new(SERVER)
            .env("RABBITMQ_NODENAME", &self.node)
            .env("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
            .env("RABBITMQ_NODE_PORT", self.port.to_string())
            .env("RABBITMQ_DIST_PORT", self.dist_port.to_string())
            .env("RABBITMQ_MNESIA_BASE", d.join("mnesia"))
            .env("RABBITMQ_LOG_BASE", d.join("log"))
            .env("RABBITMQ_CONFIG_FILE", d.join("rabbitmq.conf"))
            .env("RABBITMQ_ADVANCED_CONFIG_FILE", d.join("advanced.config"))
            .env("RABBITMQ_CONF_ENV_FILE", d.join("rabbitmq-env.conf"))
            .env("RABBITMQ_ENABLED_PLUGINS_FILE", d.join("enabled_plugins"))
            .env("RABBITMQ_PID_FILE", d.join("pid"))
            // Run `erl` in the foreground (no wrapper shell between us and the VM) and
            // without a shell on standard input.
            .env("RABBITMQ_ALLOW_INPUT", "true")
            .env("RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS", "-noinput")
            .env("HOME", d)
            .current_dir(d)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(d.join("stdout.log")).unwrap())
            .stderr(std::fs::File::create(d.join("stderr.log")).unwrap())
            .spawn()
            .expect("starting rabbitmq-server");
        self.child = Some(child);
        let started = Instant::now();
        while !self.speaks_amqp() {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "rabbitmq-server exited with {status}:\n{}",
                    std::fs::read_to_string(d.join("stdout.log")).unwrap_or_default()
                );
            }
            assert!(
                started.elapsed() < Duration::from_secs(90),
                "rabbitmq-server did not accept AMQP within 90 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        if let Some(p) = self.tls_port {
            net_support::wait_listening(p, 30);
        }
        eprintln!(
            "rabbitmq-server {} up on {} after {:.1} s",
            self.node,
            self.port,
            started.elapsed().as_secs_f64()
        );
    }

    /// Whether the node answers an AMQP 0-9-1 protocol header with `connection.start`.
    fn speaks_amqp(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        if s.write_all(b"AMQP\x00\x00\x09\x01").is_err() {
            return false;
        }
        let mut frame = [0u8; 11];
        // A method frame (type 1) on channel 0 carrying class 10, method 10.
        s.read_exact(&mut frame).is_ok() && frame[0] == 1 && frame[7..11] == [0, 10, 0, 10]
    }

    /// SIGKILL: the broker dies with whatever it had not written.
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A sluice process running `config` in `dir/<name>` (its log kept, at info level).
fn sluice(dir: &Path, name: &str, config: &str) -> Run {
    let d = dir.join(name);
    std::fs::create_dir_all(d.join("settings")).unwrap();
    Run::start(
        &d,
        "pipeline.workers: 2\n",
        &[],
        config,
        Stdio::null(),
        Stdio::null(),
    )
}

fn events(out: &Path) -> Vec<serde_json::Value> {
    complete_text(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn seq(e: &serde_json::Value) -> i64 {
    e["event"]["sequence"]
        .as_i64()
        .unwrap_or_else(|| panic!("no sequence in {e}"))
}

fn tally(events: &[serde_json::Value]) -> BTreeMap<i64, usize> {
    let mut seen = BTreeMap::new();
    for e in events {
        *seen.entry(seq(e)).or_insert(0) += 1;
    }
    seen
}

fn wait_consuming(r: &Run, consumers: usize) {
    r.wait_until("rabbitmq inputs subscribed", 60, || {
        r.log().matches("rabbitmq input: consuming").count() >= consumers
    });
}

// ---------------------------------------------------------------- tests

/// Output → topic exchange → two queues bound by routing key → input: 2 × 10,000 events,
/// each key rendered from the event, each event exactly once on the queue its key names, with
/// the message properties and headers the output set read back through `@metadata`. The
/// consumer is stopped (SIGTERM) halfway and another takes over: a graceful stop acknowledges
/// what it queued and hands back the rest, so the two together still see each event once.
/// The output and one input connect over TLS (the broker checks their client certificate,
/// they check its certificate against our authority), the other input over plain TCP.
#[test]
fn round_trip_with_rendered_keys_and_metadata_is_exactly_once_across_a_consumer_restart() {
    if !rabbitmq_available() {
        return;
    }
    const N: i64 = 10_000;
    let dir = temp_dir("roundtrip");
    let Some(certs) = net_support::certs(&dir.join("certs")) else {
        return;
    };
    let broker = Broker::start(&dir, Some(&certs));
    let p = broker.port;
    let tls_port = broker.tls_port.unwrap();
    let tls = format!(
        r#"ssl => true ssl_certificate_authorities => "{}" ssl_certificate => "{}" ssl_key => "{}""#,
        certs.ca.display(),
        certs.client_cert.display(),
        certs.client_key.display()
    );
    let consumer_config = |out: &Path, slow: bool| {
        format!(
            r#"input {{
                 rabbitmq {{ host => "127.0.0.1" port => {p} queue => "even" durable => true
                             exchange => "logs" exchange_type => "topic" key => "ev.even"
                             metadata_enabled => "basic" heartbeat => 10
                             add_field => {{ "q" => "even" }} }}
                 rabbitmq {{ host => ["127.0.0.1:{tls_port}"] {tls} queue => "odd" durable => true
                             exchange => "logs" exchange_type => "topic" key => "ev.odd"
                             prefetch_count => 50 metadata_enabled => "extended"
                             add_field => {{ "q" => "odd" }} }}
               }}
               filter {{
                 {}
                 mutate {{ copy => {{ "[@metadata][rabbitmq_properties]" => "props"
                                      "[@metadata][rabbitmq_headers]" => "headers" }} }}
                 if [@metadata][rabbitmq_payload] {{
                   mutate {{ copy => {{ "[@metadata][rabbitmq_payload]" => "payload" }} }}
                 }}
               }}
               output {{ file {{ path => "{}" }} }}"#,
            if slow {
                r#"sleep { time => "0.01" every => 20 }"#
            } else {
                ""
            },
            out.display()
        )
    };
    let first_out = dir.join("first.json");
    let mut first = sluice(&dir, "first", &consumer_config(&first_out, true));
    // The queues must be bound before anything is published (unroutable messages are gone).
    wait_consuming(&first, 2);
    let mut producer = sluice(
        &dir,
        "producer",
        &format!(
            r#"input {{ generator {{ lines => ["even", "odd"] count => {N} }} }}
               output {{ rabbitmq {{ host => "127.0.0.1" port => {tls_port} {tls} exchange => "logs"
                 exchange_type => "topic" key => "ev.%{{message}}"
                 message_properties => {{ "content_type" => "application/json"
                   "app_id" => "sluice-test" "priority" => 3
                   "correlation_id" => "%{{[event][sequence]}}"
                   "headers" => {{ "origin" => "sluice" "n" => 7 }} }} }} }}"#
        ),
    );
    first.wait_lines(&first_out, 3_000, 60);
    first.signal("-TERM");
    let status = first.exit(30);
    assert!(
        status.success(),
        "first consumer: {status}\n{}",
        first.log()
    );
    let status = producer.exit(60);
    assert!(status.success(), "producer: {status}\n{}", producer.log());
    let taken = complete_text(&first_out).lines().count();
    assert!(
        taken < 2 * N as usize,
        "the first consumer took everything before SIGTERM; nothing was tested"
    );
    let second_out = dir.join("second.json");
    let mut second = sluice(&dir, "second", &consumer_config(&second_out, false));
    second.wait_lines(&second_out, 2 * N as usize - taken, 60);
    second.signal("-TERM");
    let status = second.exit(30);
    assert!(
        status.success(),
        "second consumer: {status}\n{}",
        second.log()
    );
    eprintln!("{taken} events through the first consumer, the rest through the second");

    let mut all = events(&first_out);
    all.extend(events(&second_out));
    assert_eq!(all.len(), 2 * N as usize, "events delivered");
    for q in ["even", "odd"] {
        let mine: Vec<serde_json::Value> = all.iter().filter(|e| e["q"] == q).cloned().collect();
        assert!(
            mine.iter().all(|e| e["message"] == q),
            "queue {q} got another key's events"
        );
        run_support::assert_exactly_once(&tally(&mine), N);
        let e = &mine[mine.len() / 2];
        let props = &e["props"];
        assert_eq!(props["routing-key"], format!("ev.{q}"), "{e}");
        assert_eq!(props["exchange"], "logs", "{e}");
        assert_eq!(props["content-type"], "application/json", "{e}");
        assert_eq!(props["app-id"], "sluice-test", "{e}");
        assert_eq!(props["priority"], 3, "{e}");
        assert_eq!(props["delivery-mode"], 2, "persistent by default: {e}");
        assert_eq!(props["correlation-id"], seq(e).to_string(), "{e}");
        assert!(props["consumer-tag"].is_string(), "{e}");
        // Only what the first consumer had prefetched and handed back comes again.
        assert!(
            props.get("redeliver").is_none() || props["redeliver"] == true,
            "{e}"
        );
        assert_eq!(
            e["headers"],
            serde_json::json!({ "origin": "sluice", "n": 7 }),
            "{e}"
        );
        if q == "odd" {
            let payload: serde_json::Value =
                serde_json::from_str(e["payload"].as_str().expect("extended: the raw payload"))
                    .unwrap();
            assert_eq!(payload["message"], "odd");
            assert_eq!(payload["event"]["sequence"], e["event"]["sequence"]);
        } else {
            assert!(e.get("payload").is_none(), "basic: no payload: {e}");
        }
    }
    drop(broker);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The broker is killed (SIGKILL) while events flow and started again: both processes say it
/// went away and came back, and every event the producer generated (it also writes each to a
/// file) reaches the consumer's file: at least once, duplicates counted, none lost.
#[test]
fn broker_killed_mid_stream_loses_nothing_and_both_sides_reconnect() {
    if !rabbitmq_available() {
        return;
    }
    let dir = temp_dir("restart");
    let mut broker = Broker::start(&dir, None);
    let p = broker.port;
    let out = dir.join("out.json");
    let sent = dir.join("sent.json");
    let consumer = sluice(
        &dir,
        "consumer",
        &format!(
            r#"input {{ rabbitmq {{ host => "127.0.0.1" port => {p} queue => "ha" durable => true
                          exchange => "ha" exchange_type => "direct" key => "k"
                          connect_retry_interval => 0.5 }} }}
               output {{ file {{ path => "{}" }} }}"#,
            out.display()
        ),
    );
    wait_consuming(&consumer, 1);
    // A wrong password: the input says which plugin cannot get in, and why to look at the
    // credentials, and keeps trying rather than exiting.
    let refused = sluice(
        &dir,
        "refused",
        &format!(
            r#"input {{ rabbitmq {{ host => "127.0.0.1" port => {p}
                          password => "not-the-password" queue => "ha" durable => true }} }}
               output {{ null {{}} }}"#
        ),
    );
    refused.wait_log("check user, password and vhost", 60);
    let log = refused.log();
    assert!(
        log.contains("rabbitmq input amqp://guest@127.0.0.1") && log.contains("is unavailable"),
        "the refusal should name the plugin:\n{log}"
    );
    drop(refused);
    // About 5,000 events a second, until SIGTERM.
    let mut producer = sluice(
        &dir,
        "producer",
        &format!(
            r#"input {{ generator {{ }} }}
               filter {{ sleep {{ time => "0.01" every => 25 }} }}
               output {{
                 rabbitmq {{ host => "127.0.0.1" port => {p} exchange => "ha"
                             exchange_type => "direct" key => "k" connect_retry_interval => 0.5 }}
                 file {{ path => "{}" }}
               }}"#,
            sent.display()
        ),
    );
    consumer.wait_until("3,000 events before the kill", 60, || {
        complete_text(&out).lines().count() >= 3_000
    });
    broker.kill();
    std::thread::sleep(Duration::from_millis(1500));
    broker.spawn();
    let after = complete_text(&out).lines().count();
    consumer.wait_until("3,000 more events after the restart", 60, || {
        complete_text(&out).lines().count() >= after + 3_000
    });
    producer.signal("-TERM");
    let status = producer.exit(30);
    assert!(status.success(), "producer: {status}\n{}", producer.log());
    let generated: BTreeSet<i64> = tally(&events(&sent)).into_keys().collect();
    let missing = || {
        let got = tally(&events(&out));
        generated.iter().filter(|s| !got.contains_key(s)).count()
    };
    consumer.wait_until("every generated event at the consumer", 60, || {
        missing() == 0
    });
    let mut consumer = consumer;
    consumer.signal("-TERM");
    let status = consumer.exit(30);
    assert!(status.success(), "consumer: {status}\n{}", consumer.log());

    let got = tally(&events(&out));
    let n = generated.len() as i64;
    assert_eq!(
        generated.iter().copied().collect::<Vec<_>>(),
        (0..n).collect::<Vec<_>>(),
        "the producer generated 0..{n}"
    );
    let unknown: Vec<_> = got.keys().filter(|s| !generated.contains(s)).collect();
    assert!(unknown.is_empty(), "never generated: {unknown:?}");
    let duplicates: usize = got.values().map(|c| c - 1).sum();
    eprintln!(
        "{n} events generated, all delivered; {duplicates} delivered twice or more (at-least-once across the kill)"
    );
    assert!(
        (duplicates as i64) < n / 2,
        "{duplicates} duplicates for {n} events"
    );
    for (who, log) in [("producer", producer.log()), ("consumer", consumer.log())] {
        let down = format!("RabbitMQ at 127.0.0.1:{p} is unavailable");
        let back = format!("RabbitMQ at 127.0.0.1:{p} is back");
        assert!(
            log.contains(&down) && log.contains(&back),
            "the {who} should log the outage and the recovery:\n{log}"
        );
    }
    drop(broker);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Options sluice cannot honour, or values the plugins refuse, are configuration errors that
/// name the option (`sluice -t`); a config with every option the plugins take passes.
#[test]
fn options_sluice_cannot_honour_are_errors_naming_the_option() {
    let check = |config: &str| {
        Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["-t", "-e", config])
            .output()
            .unwrap()
    };
    let input = |opts: &str| {
        format!(r#"input {{ rabbitmq {{ host => "localhost" {opts} }} }} output {{ null {{}} }}"#)
    };
    let output = |opts: &str| {
        format!(
            r#"input {{ generator {{ count => 1 }} }} output {{ rabbitmq {{ host => "localhost" {opts} }} }}"#
        )
    };
    let cases = [
        (
            input("automatic_recovery => false"),
            "\"automatic_recovery\"",
        ),
        (
            input(
                r#"ssl => true ssl_certificate_path => "/c.p12" ssl_certificate_password => "x""#,
            ),
            "\"ssl_certificate_path\"",
        ),
        (
            input(r#"ssl => true ssl_version => "TLSv1.1""#),
            "\"ssl_version\"",
        ),
        (input("heartbeat => 1"), "\"heartbeat\""),
        (
            input(r#"metadata_enabled => "all""#),
            "\"metadata_enabled\"",
        ),
        (input("prefetch_count => 70000"), "\"prefetch_count\""),
        (input(r#"exchange_type => "topic""#), "\"exchange_type\""),
        (
            input(r#"queue => "q" arguments => { "x-queue-mode" => default }"#),
            "",
        ),
        (
            input("no_such_option => 1"),
            "unknown setting \"no_such_option\"",
        ),
        (
            output(r#"exchange => "x" exchange_type => "headers""#),
            "\"exchange_type\"",
        ),
        (
            output(r#"exchange_type => "topic""#),
            "missing required setting \"exchange\"",
        ),
        (
            output(r#"exchange => "x""#),
            "missing required setting \"exchange_type\"",
        ),
        (
            output(
                r#"exchange => "x" exchange_type => "topic" message_properties => { "delivery_mode" => 2 }"#,
            ),
            "\"message_properties\"",
        ),
        (
            output(
                r#"exchange => "x" exchange_type => "topic" message_properties => { "priority" => 300 }"#,
            ),
            "\"message_properties\"",
        ),
        (
            output(r#"exchange => "x" exchange_type => "topic" connection_timeout => -1"#),
            "\"connection_timeout\"",
        ),
    ];
    for (config, expected) in &cases {
        let o = check(config);
        let err = String::from_utf8_lossy(&o.stderr);
        if expected.is_empty() {
            assert!(o.status.success(), "{config}\n{err}");
            continue;
        }
        assert_eq!(o.status.code(), Some(1), "accepted: {config}\n{err}");
        assert!(err.contains(expected), "{config}: {err}");
    }
    // Every option, as a Logstash config would give them.
    let all_input = input(
        r#"port => 5673 vhost => "/" user => "u" password => "p" ssl => false
           ssl_version => "TLSv1.2" heartbeat => 30 connect_retry_interval => 2
           connection_timeout => 5000 automatic_recovery => true passive => false
           arguments => { "x-max-length" => 1000 } queue => "q" durable => true
           exclusive => false auto_delete => false exchange => "x" exchange_type => "fanout"
           key => "k" prefetch_count => 10 ack => true threads => 2
           subscription_retry_interval_seconds => 1 metadata_enabled => "true"
           ecs_compatibility => "v8" codec => "plain""#,
    );
    let all_output = output(
        r#"exchange => "x" exchange_type => "x-consistent-hash" key => "%{type}" durable => false
           persistent => false passive => true arguments => {}
           message_properties => { "content_type" => "text/plain" "content_encoding" => "gzip"
             "priority" => "%{p}" "correlation_id" => "c" "reply_to" => "r" "expiration" => 60000
             "message_id" => "%{id}" "timestamp" => 1700000000 "type" => "t" "user_id" => "u"
             "app_id" => "a" "cluster_id" => "c" "headers" => { "h" => [1, "two", true] } }
           codec => json_lines"#,
    );
    for config in [all_input, all_output] {
        let o = check(&config);
        assert!(
            o.status.success(),
            "{config}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
