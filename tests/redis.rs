//! The `redis` input and output through the real binary against a real `redis-server`, which
//! each test starts on a free 127.0.0.1 port (no persistence unless the test needs it) and
//! kills when done. Without `redis-server` the tests are skipped with a message, except under
//! `CI=true`, where its absence is a failure (`scripts/test` installs it).

mod net_support;
mod redis_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use redis_support::*;

// ---------------------------------------------------------------- tests

#[test]
fn list_round_trip_delivers_100k_events_exactly_once() {
    if !redis_available() {
        return;
    }
    let dir = temp_dir("roundtrip");
    let redis = Redis::start(&dir, &[]);
    let out = dir.join("out.log");
    let p = redis.port;
    let mut consumer = Sluice::start(
        &dir,
        "consumer",
        &format!(
            "input {{ redis {{ port => {p} key => \"rt\" data_type => \"list\" threads => 2 }} }}
             output {{ {} }}",
            output_file(&out)
        ),
        &[],
    );
    let mut producer = Sluice::start(
        &dir,
        "producer",
        &format!(
            "input {{ generator {{ count => 100000 }} }}
             output {{ redis {{ host => [\"127.0.0.1:{p}\"] key => \"rt\" data_type => \"list\" batch => true batch_events => 100 }} }}"
        ),
        &[],
    );
    producer.wait_success(Duration::from_secs(60));
    wait_until("100,000 events consumed", Duration::from_secs(60), || {
        line_count(&out) >= 100_000
    });
    assert_eq!(redis.client().llen("rt"), 0);
    consumer.term();
    let all = events(&out);
    assert_eq!(all.len(), 100_000);
    assert_eq!(all[0]["message"], "Hello world!");
    assert!(all[0]["@timestamp"].is_string());
    let seen = tally(&[&out], seq);
    assert_exactly_once(&seen, 100_000);
}

#[test]
fn three_processes_with_four_threads_share_a_list_without_duplicates() {
    if !redis_available() {
        return;
    }
    let dir = temp_dir("share");
    let redis = Redis::start(&dir, &[]);
    const N: usize = 300_000;
    redis.client().seed("shared", 0..N);
    let outs: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("out{i}.log"))).collect();
    let mut consumers: Vec<Sluice> = outs
        .iter()
        .enumerate()
        .map(|(i, out)| {
            // The third takes its batches with the Lua script older servers need.
            let method = if i == 2 { "script" } else { "auto" };
            Sluice::start(
                &dir,
                &format!("consumer{i}"),
                &format!(
                    "input {{ redis {{ port => {} key => \"shared\" data_type => \"list\" threads => 4 batch_count => 125 batch_method => \"{method}\" }} }}
                     output {{ {} }}",
                    redis.port,
                    output_file(out)
                ),
                &[],
            )
        })
        .collect();
    let total = || outs.iter().map(|o| line_count(o)).sum::<usize>();
    wait_until("300,000 events consumed", Duration::from_secs(90), || {
        total() >= N
    });
    assert_eq!(redis.client().llen("shared"), 0);
    for c in &mut consumers {
        c.term();
    }
    let per: Vec<usize> = outs.iter().map(|o| line_count(o)).collect();
    eprintln!("events per process: {per:?}");
    assert!(
        per.iter().all(|&c| c > 0),
        "every process took part: {per:?}"
    );
    let paths: Vec<&Path> = outs.iter().map(PathBuf::as_path).collect();
    assert_exactly_once(&tally(&paths, n), N as i64);
}

#[test]
fn sigterm_mid_stream_puts_unqueued_batches_back_in_order() {
    if !redis_available() {
        return;
    }
    let dir = temp_dir("stop");
    let redis = Redis::start(&dir, &[]);
    const N: usize = 400_000;
    redis.client().seed("stop", 0..N);
    let out = dir.join("out.log");
    // One thread, so what it took is a prefix of the list; full batches, so it always has an
    // LPOP in flight while it queues the batch before.
    let mut consumer = Sluice::start(
        &dir,
        "consumer",
        &format!(
            "input {{ redis {{ port => {} key => \"stop\" data_type => \"list\" threads => 1 batch_count => 250 }} }}
             output {{ {} }}",
            redis.port,
            output_file(&out)
        ),
        &[],
    );
    wait_until("20,000 events consumed", Duration::from_secs(60), || {
        line_count(&out) >= 20_000
    });
    consumer.term();
    let delivered = tally(&[&out], n);
    let k = delivered.len();
    assert!(
        k < N,
        "the consumer took the whole list before SIGTERM; nothing was tested"
    );
    assert_exactly_once(&delivered, k as i64);
    let mut c = redis.client();
    let left: Vec<i64> = c
        .cmd(&["LRANGE", "stop", "0", "-1"])
        .strings()
        .iter()
        .map(|v| n(&serde_json::from_str(v).unwrap()))
        .collect();
    let expected: Vec<i64> = (k as i64..N as i64).collect();
    assert!(
        left == expected,
        "the list should hold exactly events {k}..{N} in order; it holds {} values starting {:?}",
        left.len(),
        &left[..left.len().min(5)]
    );
}

#[test]
fn input_and_output_recover_when_redis_restarts() {
    if !redis_available() {
        return;
    }
    let dir = temp_dir("restart");
    // An append-only file synced on every write, so the restart itself loses nothing.
    let mut redis = Redis::start(&dir, &["--appendonly", "yes", "--appendfsync", "always"]);
    let p = redis.port;
    let out = dir.join("out.log");
    let mut consumer = Sluice::start(
        &dir,
        "consumer",
        &format!(
            "input {{ redis {{ port => {p} key => \"rs\" data_type => \"list\" threads => 2 reliable => true }} }}
             output {{ {} }}",
            output_file(&out)
        ),
        &[],
    );
    // Unbounded, held back by congestion control.
    let mut producer = Sluice::start(
        &dir,
        "producer",
        &format!(
            "input {{ generator {{ }} }}
             output {{ redis {{ port => {p} key => \"rs\" data_type => \"list\" batch => true congestion_threshold => 20000 congestion_interval => 0.05 reconnect_interval => 0.2 }} }}"
        ),
        &[],
    );
    wait_until(
        "20,000 events before the restart",
        Duration::from_secs(60),
        || line_count(&out) >= 20_000,
    );
    redis.stop();
    std::thread::sleep(Duration::from_millis(700));
    let before = line_count(&out);
    redis.spawn();
    wait_until(
        "20,000 more events after the restart",
        Duration::from_secs(60),
        || line_count(&out) >= before + 20_000,
    );
    assert!(consumer.is_running() && producer.is_running());
    producer.term();
    let mut c = redis.client();
    wait_until("the list drained", Duration::from_secs(60), || {
        c.llen("rs") == 0
    });
    std::thread::sleep(Duration::from_millis(500));
    consumer.term();

    let seen = tally(&[&out], seq);
    let max = *seen.keys().last().unwrap();
    let missing: Vec<_> = (0..=max)
        .filter(|i| !seen.contains_key(i))
        .take(5)
        .collect();
    assert!(missing.is_empty(), "lost across the restart: {missing:?}");
    let dups = seen.values().filter(|&&c| c > 1).count();
    eprintln!("restart: sequences 0..={max}, {dups} delivered twice");
    assert!(dups < 5_000, "{dups} duplicates");
    for (who, log) in [("consumer", consumer.log()), ("producer", producer.log())] {
        let down = log.matches("is unavailable").count();
        let back = log.matches("is back after").count();
        assert!(
            (1..=2).contains(&down) && back >= 1,
            "{who}: one warning per outage and one when back, got {down} and {back}:\n{log}"
        );
    }
}

#[test]
fn reliable_input_loses_nothing_when_the_consumer_is_killed() {
    if !redis_available() {
        return;
    }
    let dir = temp_dir("reliable");
    let redis = Redis::start(&dir, &[]);
    let mut c = redis.client();
    const N: usize = 60_000;
    c.seed("rel", 0..N);
    // A consumer that died with a batch in flight: its processing list, no lease.
    let dead = "{rel}:sluice:processing:otherhost:4242:deadbeef:0";
    c.seed(dead, N..N + 500);
    assert_eq!(c.cmd(&["SADD", "{rel}:sluice:consumers", dead]).int(), 1);

    let settings = dir.join("settings");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(
        settings.join("sluice.yml"),
        format!(
            "queue.type: persisted\npath.data: {}\nqueue.page_capacity: 4mb\n",
            dir.join("data").display()
        ),
    )
    .unwrap();
    // Each run writes its own file: the SIGKILL can tear the first run's last write (the
    // kernel stops copying between pages), and `events` reads complete lines only.
    let out = dir.join("out.log");
    let out2 = dir.join("out2.log");
    // Four input threads push into the persisted queue at once (concurrent writers).
    let config = |out: &Path| {
        format!(
            "input {{ redis {{ port => {} key => \"rel\" data_type => \"list\" threads => 4 batch_count => 100 reliable => true reliable_lease => 2 }} }}
             output {{ {} }}",
            redis.port,
            output_file(out)
        )
    };
    let path_settings = settings.to_str().unwrap();
    let mut first = Sluice::start(
        &dir,
        "first",
        &config(&out),
        &["--path.settings", path_settings],
    );
    wait_until(
        "10,000 events before the kill",
        Duration::from_secs(60),
        || line_count(&out) >= 10_000,
    );
    let first_pid = first.child.id();
    signal(first_pid, "-KILL");
    wait_exit(&mut first.child, Duration::from_secs(10));
    let in_flight: i64 = c
        .cmd(&["KEYS", "{rel}:sluice:processing:*"])
        .strings()
        .iter()
        .map(|k| c.llen(k))
        .sum();
    eprintln!(
        "killed after {} events; {in_flight} in processing lists",
        line_count(&out)
    );

    let mut second = Sluice::start(
        &dir,
        "second",
        &config(&out2),
        &["--path.settings", path_settings],
    );
    let all = (N + 500) as i64;
    wait_until("every event delivered", Duration::from_secs(90), || {
        tally(&[&out, &out2], n).len() as i64 >= all
    });
    // The dead consumer's lease runs out and its entry is cleared even if its batch was empty.
    wait_until(
        "the killed consumer forgotten",
        Duration::from_secs(30),
        || {
            let mut keys = c.cmd(&["KEYS", "{rel}:sluice:*"]).strings();
            keys.extend(c.cmd(&["SMEMBERS", "{rel}:sluice:consumers"]).strings());
            !keys.iter().any(|k| k.contains(&format!(":{first_pid}:")))
        },
    );
    second.term();
    let seen = tally(&[&out, &out2], n);
    let missing: Vec<_> = (0..all).filter(|i| !seen.contains_key(i)).take(5).collect();
    assert!(missing.is_empty(), "lost: {missing:?}");
    assert_eq!(c.llen("rel"), 0);
    let left = c.cmd(&["KEYS", "{rel}:sluice:*"]).strings();
    assert!(left.is_empty(), "bookkeeping left behind: {left:?}");
}

#[test]
fn channel_and_pattern_channel_deliver_with_the_channel_name() {
    if !redis_available() {
        return;
    }
    let dir = temp_dir("channels");
    let redis = Redis::start(&dir, &[]);
    let p = redis.port;
    let out = dir.join("out.log");
    let mut consumer = Sluice::start(
        &dir,
        "consumer",
        &format!(
            "input {{
               redis {{ port => {p} key => \"news\" data_type => \"channel\" }}
               redis {{ port => {p} key => \"logs.*\" data_type => \"pattern_channel\" }}
             }}
             filter {{ mutate {{ add_field => {{ \"chan\" => \"%{{[@metadata][redis_channel]}}\" }} }} }}
             output {{ {} }}",
            output_file(&out)
        ),
        &[],
    );
    let mut c = redis.client();
    wait_until("both subscriptions", Duration::from_secs(30), || {
        let subs = match c.cmd(&["PUBSUB", "NUMSUB", "news"]) {
            Reply::Array(Some(v)) => v[1].int(),
            _ => 0,
        };
        subs == 1 && c.cmd(&["PUBSUB", "NUMPAT"]).int() == 1
    });
    let mut producer = Sluice::start(
        &dir,
        "producer",
        &format!(
            "input {{ generator {{ count => 50 }} }}
             output {{ redis {{ port => {p} key => \"news\" data_type => \"channel\" }} }}"
        ),
        &[],
    );
    producer.wait_success(Duration::from_secs(30));
    for i in 0..30 {
        c.cmd(&["PUBLISH", "logs.a", &format!("{{\"n\":{i}}}")]);
    }
    for i in 30..50 {
        c.cmd(&["PUBLISH", "logs.b", &format!("{{\"n\":{i}}}")]);
    }
    assert_eq!(c.cmd(&["PUBLISH", "logs.a", "not json"]).int(), 1);
    assert_eq!(c.cmd(&["PUBLISH", "other", "{\"n\":-1}"]).int(), 0);
    wait_until("101 events", Duration::from_secs(30), || {
        line_count(&out) >= 101
    });
    consumer.term();
    let all = events(&out);
    assert_eq!(all.len(), 101);
    let by_chan = |ch: &str| all.iter().filter(|e| e["chan"] == ch).count();
    assert_eq!(by_chan("news"), 50);
    assert_eq!(by_chan("logs.a"), 31);
    assert_eq!(by_chan("logs.b"), 20);
    assert!(all
        .iter()
        .filter(|e| e["chan"] == "news")
        .all(|e| e["message"] == "Hello world!"));
    let bad: Vec<_> = all
        .iter()
        .filter(|e| e["n"].is_null() && e["chan"] != "news")
        .collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0]["message"], "not json");
    assert_eq!(bad[0]["tags"], serde_json::json!(["_jsonparsefailure"]));
}

#[test]
fn password_and_db_selection() {
    if !redis_available() {
        return;
    }
    let dir = temp_dir("auth");
    let redis = Redis::start(&dir, &["--requirepass", "s3cret"]);
    let p = redis.port;
    let mut producer = Sluice::start(
        &dir,
        "producer",
        &format!(
            "input {{ generator {{ count => 1000 }} }}
             output {{ redis {{ port => {p} password => \"s3cret\" db => 3 key => \"k\" data_type => \"list\" batch => true }} }}"
        ),
        &[],
    );
    producer.wait_success(Duration::from_secs(30));
    let mut c = redis.client();
    assert_eq!(c.llen("k"), 0, "db 0 untouched");
    c.cmd(&["SELECT", "3"]);
    assert_eq!(c.llen("k"), 1000);
    c.cmd(&["RPUSH", "k", "this is not json"]);

    // A wrong password: one warning, no busy loop, no crash.
    let mut wrong = Sluice::start(
        &dir,
        "wrong",
        &format!(
            "input {{ redis {{ port => {p} password => \"nope\" db => 3 key => \"k\" data_type => \"list\" }} }}
             output {{ null {{ }} }}"
        ),
        &[],
    );
    let out = dir.join("out.log");
    let mut consumer = Sluice::start(
        &dir,
        "consumer",
        &format!(
            "input {{ redis {{ port => {p} password => \"s3cret\" db => 3 key => \"k\" data_type => \"list\" }} }}
             output {{ {} }}",
            output_file(&out)
        ),
        &[],
    );
    wait_until("1001 events", Duration::from_secs(30), || {
        line_count(&out) >= 1001
    });
    consumer.term();
    let all = events(&out);
    assert_eq!(all.len(), 1001);
    let bad: Vec<_> = all
        .iter()
        .filter(|e| e["tags"] == serde_json::json!(["_jsonparsefailure"]))
        .collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0]["message"], "this is not json");
    assert_eq!(c.llen("k"), 0);

    std::thread::sleep(Duration::from_millis(1500));
    assert!(wrong.is_running(), "a wrong password must not stop sluice");
    wrong.term();
    let log = wrong.log();
    assert_eq!(log.matches("is unavailable").count(), 1, "{log}");
    assert!(
        log.contains("WRONGPASS") || log.contains("invalid") || log.contains("uthentication"),
        "{log}"
    );
}

#[test]
fn tls_with_our_own_authority() {
    if !redis_available() {
        return;
    }
    let dir = temp_dir("tls");
    let Some(certs) = net_support::certs(&dir) else {
        return;
    };
    let tls_port = net_support::free_port().to_string();
    let redis = Redis::start(
        &dir,
        &[
            "--tls-port",
            &tls_port,
            "--tls-cert-file",
            certs.server_cert.to_str().unwrap(),
            "--tls-key-file",
            certs.server_key.to_str().unwrap(),
            "--tls-ca-cert-file",
            certs.ca.to_str().unwrap(),
            "--tls-auth-clients",
            "no",
        ],
    );
    let ca = &certs.ca;
    let out = dir.join("out.log");
    let mut consumer = Sluice::start(
        &dir,
        "consumer",
        &format!(
            "input {{ redis {{ port => {tls_port} ssl => true ssl_certificate_authorities => \"{}\" key => \"t\" data_type => \"list\" }} }}
             output {{ {} }}",
            ca.display(),
            output_file(&out)
        ),
        &[],
    );
    let mut producer = Sluice::start(
        &dir,
        "producer",
        &format!(
            "input {{ generator {{ count => 500 }} }}
             output {{ redis {{ port => {tls_port} ssl_enabled => true ssl_certificate_authorities => [\"{}\"] key => \"t\" data_type => \"list\" batch => true }} }}",
            ca.display()
        ),
        &[],
    );
    producer.wait_success(Duration::from_secs(30));
    wait_until("500 events over TLS", Duration::from_secs(30), || {
        line_count(&out) >= 500
    });
    consumer.term();
    assert_exactly_once(&tally(&[&out], seq), 500);
    assert_eq!(
        redis.client().llen("t"),
        0,
        "the plain port saw the same data"
    );

    // Without our authority the server's certificate is refused: no event goes through.
    let mut untrusting = Sluice::start(
        &dir,
        "untrusting",
        &format!(
            "input {{ generator {{ count => 1 }} }}
             output {{ redis {{ port => {tls_port} ssl_enabled => true key => \"t2\" data_type => \"list\" }} }}"
        ),
        &[],
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert!(untrusting.is_running());
    assert_eq!(redis.client().llen("t2"), 0);
    let log = untrusting.log();
    assert!(log.contains("is unavailable"), "{log}");
}

#[test]
fn config_errors_point_at_the_option() {
    let check = |config: &str, want: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["-t", "-e", config])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{config}: {err}");
        assert!(err.contains(want), "{config}: expected {want:?} in {err}");
    };
    check(
        "input { redis { data_type => list } } output { null {} }",
        "missing required setting \"key\"",
    );
    check(
        "input { redis { key => \"kx\" } } output { null {} }",
        "missing required setting \"data_type\"",
    );
    check(
        "input { redis { key => \"kx\" data_type => queue } } output { null {} }",
        "expected one of",
    );
    check(
        "input { redis { key => \"kx\" data_type => channel reliable => true } } output { null {} }",
        "\"reliable\"",
    );
    check(
        "input { redis { key => \"kx\" data_type => list batch_count => 0 } } output { null {} }",
        "\"batch_count\"",
    );
    check(
        "input { stdin {} } output { redis { key => \"kx\" data_type => channel batch => true } }",
        "\"batch\"",
    );
    check(
        "input { stdin {} } output { redis { host => [\"a:notaport\"] key => \"kx\" data_type => list } }",
        "invalid port",
    );
    check(
        "input { stdin {} } output { redis { key => \"kx\" data_type => list ssl_enabled => true ssl_key_passphrase => \"pp\" } }",
        "\"ssl_key_passphrase\"",
    );
    check(
        "input { stdin {} } output { redis { key => \"kx\" data_type => list command_map => { \"flushall\" => \"xx\" } } }",
        "cannot rename",
    );
    let ok = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "-t",
            "-e",
            "input { redis { host => \"localhost:6380\" key => \"kx\" data_type => pattern_channel threads => 2 command_map => { \"lpop\" => \"xlpop\" } } }
             output { redis { host => [\"a\", \"b:7000\"] shuffle_hosts => false key => \"logs-%{type}\" data_type => list batch => true batch_events => 200 batch_timeout => 1 congestion_threshold => 5 reconnect_interval => 2 } }",
        ])
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}
