//! The `redis` input and output against a real Redis Cluster (3 masters, 3 replicas) and a
//! real Sentinel group (a master, a replica, 3 Sentinels), all `redis-server` processes of the
//! test's own on free 127.0.0.1 ports. A master is SIGKILLed while sluice reads from it with
//! `reliable => true`: once a replica has been promoted, every event arrives (duplicates from
//! the batches in flight are counted, none is lost).

mod net_support;
mod redis_support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use redis_support::*;

// ---------------------------------------------------------------- a cluster

/// Six cluster nodes; `redis-cli --cluster create` makes the first three masters.
struct Cluster {
    nodes: Vec<Redis>,
}

impl Cluster {
    fn start(dir: &Path) -> Cluster {
        let nodes: Vec<Redis> = (0..6)
            .map(|i| {
                let bus = net_support::free_port().to_string();
                Redis::start(
                    &dir.join(format!("node{i}")),
                    &[
                        "--cluster-enabled",
                        "yes",
                        "--cluster-port",
                        &bus,
                        "--cluster-node-timeout",
                        "1000",
                        // A replica whose master died a moment ago may take over at once.
                        "--cluster-replica-validity-factor",
                        "0",
                    ],
                )
            })
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("running redis-cli --cluster create");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let c = Cluster { nodes };
        wait_until(
            "the cluster to be ok on every node",
            Duration::from_secs(30),
            || {
                c.nodes.iter().all(|n| {
                    let info = cluster_info(&mut n.client());
                    info.contains("cluster_state:ok")
                })
            },
        );
        c
    }

    fn seeds(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("\"127.0.0.1:{}\"", n.port))
            .collect();
        format!("[{}]", hosts.join(", "))
    }

    /// The node serving `key` as master now.
    fn master_of(&self, key: &str) -> usize {
        let mut c = self.nodes.iter().find_map(|n| n.try_client().ok()).unwrap();
        let slot = c.cmd(&["CLUSTER", "KEYSLOT", key]).int();
        let Reply::Array(Some(ranges)) = c.cmd(&["CLUSTER", "SLOTS"]) else {
            panic!("CLUSTER SLOTS")
        };
        for r in ranges {
            let Reply::Array(Some(r)) = r else { continue };
            let (Reply::Int(lo), Reply::Int(hi)) = (&r[0], &r[1]) else {
                continue;
            };
            if (*lo..=*hi).contains(&slot) {
                let Reply::Array(Some(master)) = &r[2] else {
                    panic!("{r:?}")
                };
                let port = master[1].int() as u16;
                return self.nodes.iter().position(|n| n.port == port).unwrap();
            }
        }
        panic!("no node serves slot {slot}")
    }
}

fn cluster_info(c: &mut Resp) -> String {
    match c.cmd(&["CLUSTER", "INFO"]) {
        Reply::Bulk(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("CLUSTER INFO: {other:?}"),
    }
}

/// RPUSHes `{"n":i,...}` for i in `range` on `key`'s master, waiting after each 1,000 until a
/// replica has them too (so that a failover cannot take seeded events with it).
fn seed_replicated(c: &mut Resp, key: &str, range: std::ops::Range<usize>) {
    let values: Vec<String> = range
        .map(|i| format!("{{\"n\":{i},\"message\":\"event {i} of a failover test\"}}"))
        .collect();
    for chunk in values.chunks(1000) {
        let mut push: Vec<&[u8]> = vec![b"RPUSH", key.as_bytes()];
        push.extend(chunk.iter().map(|v| v.as_bytes()));
        let wait: Vec<&[u8]> = vec![b"WAIT", b"1", b"5000"];
        let replies = c.pipeline(&[push, wait]);
        assert!(matches!(replies[0], Reply::Int(_)), "{replies:?}");
        assert_eq!(
            replies[1],
            Reply::Int(1),
            "a replica acknowledged the values"
        );
    }
}

fn kill(r: &mut Redis) {
    if let Some(mut c) = r.child.take() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// Distinct values of `n` delivered, and how many were delivered more than once.
fn count(path: &Path) -> (usize, usize) {
    let seen = tally(&[path], n);
    let dups = seen.values().filter(|&&c| c > 1).count();
    (seen.len(), dups)
}

fn assert_all_delivered(path: &Path, total: usize) -> usize {
    let seen = tally(&[path], n);
    let missing: Vec<usize> = (0..total)
        .filter(|i| !seen.contains_key(&(*i as i64)))
        .take(5)
        .collect();
    assert!(missing.is_empty(), "never delivered: {missing:?}...");
    assert_eq!(seen.len(), total, "unexpected values delivered");
    seen.values().map(|c| c - 1).sum()
}

// ---------------------------------------------------------------- tests

#[test]
fn cluster_output_spreads_keys_over_masters_and_reliable_input_reads_them_back() {
    if !redis_available() {
        return;
    }
    let dir = temp_dir("cluster-round-trip");
    let cluster = Cluster::start(&dir);
    let seeds = cluster.seeds();
    let keys = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"];
    let names: Vec<String> = keys.iter().map(|k| format!("'{k}'")).collect();
    let total = 30_000;
    let mut producer = Sluice::start(
        &dir,
        "producer",
        &format!(
            "input {{ generator {{ count => {total} }} }}
             filter {{ ruby {{ code => \"n = event.get('[event][sequence]'); event.set('n', n); event.set('k', [{}][n % {}])\" }} }}
             output {{ redis {{ cluster => true host => {seeds} key => \"list-%{{k}}\" data_type => \"list\" batch => true }} }}",
            names.join(", "),
            keys.len()
        ),
        &[],
    );
    producer.wait_success(Duration::from_secs(60));
    // The lists landed on their slots' masters, more than one of them.
    let mut masters_used = std::collections::BTreeSet::new();
    let mut queued = 0;
    for k in keys {
        let key = format!("list-{k}");
        let m = cluster.master_of(&key);
        queued += cluster.nodes[m].client().llen(&key);
        masters_used.insert(m);
    }
    assert_eq!(queued, total as i64);
    assert!(
        masters_used.len() >= 2,
        "all keys on one master: {masters_used:?}"
    );

    let out = dir.join("out.log");
    let inputs: Vec<String> = keys
        .iter()
        .map(|k| {
            format!("redis {{ cluster => true host => {seeds} key => \"list-{k}\" data_type => \"list\" reliable => true threads => 2 batch_count => 200 }}")
        })
        .collect();
    let mut consumer = Sluice::start(
        &dir,
        "consumer",
        &format!(
            "input {{ {} }} output {{ {} }}",
            inputs.join("\n"),
            output_file(&out)
        ),
        &[],
    );
    wait_until("every event read back", Duration::from_secs(60), || {
        line_count(&out) >= total
    });
    consumer.term();
    let dups = assert_all_delivered(&out, total);
    assert_eq!(dups, 0, "delivered twice without any fault");
    for k in keys {
        let key = format!("list-{k}");
        let mut c = cluster.nodes[cluster.master_of(&key)].client();
        assert_eq!(c.llen(&key), 0);
        // The helper keys were in the list's slot (else the scripts would have failed) and
        // nothing is left in them after a clean stop.
        let left = c
            .cmd(&["KEYS", &format!("{{{key}}}:sluice:processing:*")])
            .strings();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}

#[test]
fn cluster_master_killed_mid_stream_loses_nothing_with_reliable() {
    if !redis_available() {
        return;
    }
    let dir = temp_dir("cluster-failover");
    let mut cluster = Cluster::start(&dir);
    let key = "failover";
    let total = 40_000;
    let m = cluster.master_of(key);
    seed_replicated(&mut cluster.nodes[m].client(), key, 0..total);
    let out = dir.join("out.log");
    let mut consumer = Sluice::start(
        &dir,
        "consumer",
        &format!(
            "input {{ redis {{ cluster => true host => {} key => \"{key}\" data_type => \"list\" reliable => true threads => 2 batch_count => 100 }} }}
             filter {{ sleep {{ time => \"0.001\" every => 20 }} }}
             output {{ {} }}",
            cluster.seeds(),
            output_file(&out)
        ),
        &[],
    );
    wait_until("a fifth of the events", Duration::from_secs(60), || {
        line_count(&out) >= total / 5
    });
    kill(&mut cluster.nodes[m]);
    let at_kill = line_count(&out);
    assert!(at_kill < total, "the stream was over before the kill");
    wait_until("a replica to take over", Duration::from_secs(30), || {
        cluster.master_of(key) != m
    });
    wait_until(
        "every event after the failover",
        Duration::from_secs(90),
        || count(&out).0 >= total,
    );
    consumer.term();
    let dups = assert_all_delivered(&out, total);
    eprintln!("{at_kill} events out at the kill; {dups} delivered twice");
    let log = consumer.log();
    assert!(
        log.contains("is unavailable") && log.contains("is back after"),
        "no outage logged:\n{log}"
    );
}

// ---------------------------------------------------------------- Sentinel

/// A Sentinel process watching `master`'s port under the name `mymaster`.
struct Sentinel {
    child: Child,
    port: u16,
}

impl Sentinel {
    fn start(dir: &Path, i: usize, master_port: u16) -> Sentinel {
        let port = net_support::free_port();
        let d = dir.join(format!("sentinel{i}"));
        std::fs::create_dir_all(&d).unwrap();
        let conf = d.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {}\nlogfile \"\"\n\
                 sentinel monitor mymaster 127.0.0.1 {master_port} 2\n\
                 sentinel down-after-milliseconds mymaster 1000\n\
                 sentinel failover-timeout mymaster 5000\n",
                d.display()
            ),
        )
        .unwrap();
        let child = Command::new("redis-server")
            .arg(&conf)
            .arg("--sentinel")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting redis-server --sentinel");
        net_support::wait_listening(port, 10);
        Sentinel { child, port }
    }

    fn master_port(&self) -> Option<u16> {
        let mut c = Resp::connect(self.port).ok()?;
        let addr = c
            .cmd(&["SENTINEL", "get-master-addr-by-name", "mymaster"])
            .strings();
        addr.get(1)?.parse().ok()
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sentinel_group(dir: &Path) -> (Redis, Redis, Vec<Sentinel>) {
    let master = Redis::start(&dir.join("master"), &[]);
    let mp = master.port.to_string();
    let replica = Redis::start(&dir.join("replica"), &["--replicaof", "127.0.0.1", &mp]);
    wait_until("the replica to sync", Duration::from_secs(30), || {
        let info = match replica.client().cmd(&["INFO", "replication"]) {
            Reply::Bulk(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
            _ => String::new(),
        };
        info.contains("master_link_status:up")
    });
    let sentinels: Vec<Sentinel> = (0..3)
        .map(|i| Sentinel::start(dir, i, master.port))
        .collect();
    // Each Sentinel must have found the replica and the others before a failover can happen.
    wait_until(
        "the Sentinels to know the replica and each other",
        Duration::from_secs(30),
        || {
            sentinels.iter().all(|s| {
                let Ok(mut c) = Resp::connect(s.port) else {
                    return false;
                };
                let replicas = c.cmd(&["SENTINEL", "replicas", "mymaster"]);
                let others = c.cmd(&["SENTINEL", "sentinels", "mymaster"]);
                let (Reply::Array(Some(r)), Reply::Array(Some(o))) = (replicas, others) else {
                    return false;
                };
                r.len() == 1 && o.len() == 2
            })
        },
    );
    (master, replica, sentinels)
}

fn sentinel_hosts(sentinels: &[Sentinel]) -> String {
    let hosts: Vec<String> = sentinels
        .iter()
        .map(|s| format!("\"127.0.0.1:{}\"", s.port))
        .collect();
    format!("[{}]", hosts.join(", "))
}

#[test]
fn sentinel_master_killed_mid_stream_loses_nothing_with_reliable() {
    if !redis_available() {
        return;
    }
    let dir = temp_dir("sentinel");
    let (mut master, replica, sentinels) = sentinel_group(&dir);
    let hosts = sentinel_hosts(&sentinels);
    let total = 40_000;

    // The output finds the master through the Sentinels.
    let mut producer = Sluice::start(
        &dir,
        "producer",
        &format!(
            "input {{ generator {{ count => {total} }} }}
             filter {{ mutate {{ add_field => {{ \"n\" => \"%{{[event][sequence]}}\" }} }} mutate {{ convert => {{ \"n\" => \"integer\" }} }} }}
             output {{ redis {{ sentinel_hosts => {hosts} master_name => \"mymaster\" key => \"st\" data_type => \"list\" batch => true }} }}"
        ),
        &[],
    );
    producer.wait_success(Duration::from_secs(60));
    let mut c = master.client();
    assert_eq!(c.llen("st"), total as i64);
    assert_eq!(c.cmd(&["WAIT", "1", "5000"]), Reply::Int(1));

    let out = dir.join("out.log");
    let mut consumer = Sluice::start(
        &dir,
        "consumer",
        &format!(
            "input {{ redis {{ sentinel_hosts => {hosts} master_name => \"mymaster\" key => \"st\" data_type => \"list\" reliable => true threads => 2 batch_count => 100 }} }}
             filter {{ sleep {{ time => \"0.001\" every => 20 }} }}
             output {{ {} }}",
            output_file(&out)
        ),
        &[],
    );
    wait_until("a fifth of the events", Duration::from_secs(60), || {
        line_count(&out) >= total / 5
    });
    let old = master.port;
    kill(&mut master);
    let at_kill = line_count(&out);
    assert!(at_kill < total, "the stream was over before the kill");
    wait_until(
        "Sentinel to promote the replica",
        Duration::from_secs(30),
        || sentinels[0].master_port() == Some(replica.port),
    );
    wait_until(
        "every event after the failover",
        Duration::from_secs(90),
        || count(&out).0 >= total,
    );
    let dups = assert_all_delivered(&out, total);
    eprintln!("{at_kill} events out at the kill; {dups} delivered twice");

    // New events written through the Sentinels now go to the promoted replica, and the
    // running input reads them from there.
    let mut producer = Sluice::start(
        &dir,
        "producer2",
        &format!(
            "input {{ generator {{ count => 100 }} }}
             filter {{ mutate {{ add_field => {{ \"n\" => \"%{{[event][sequence]}}\" }} }} mutate {{ convert => {{ \"n\" => \"integer\" }} }} ruby {{ code => \"event.set('n', event.get('n') + {total})\" }} }}
             output {{ redis {{ sentinel_hosts => {hosts} master_name => \"mymaster\" key => \"st\" data_type => \"list\" }} }}"
        ),
        &[],
    );
    producer.wait_success(Duration::from_secs(60));
    wait_until(
        "the events written after the failover",
        Duration::from_secs(30),
        || count(&out).0 >= total + 100,
    );
    consumer.term();
    assert_all_delivered(&out, total + 100);
    assert_ne!(old, replica.port);
}

#[test]
fn cluster_and_sentinel_option_errors() {
    let cases: &[(&str, &str)] = &[
        (
            "input { redis { cluster => true sentinel_hosts => [\"a\"] master_name => \"m\" key => \"k\" data_type => \"list\" } }",
            "sentinel_hosts",
        ),
        (
            "input { redis { sentinel_hosts => [\"a\"] key => \"k\" data_type => \"list\" } }",
            "master_name",
        ),
        (
            "input { redis { master_name => \"m\" key => \"k\" data_type => \"list\" } }",
            "sentinel_hosts",
        ),
        (
            "input { redis { cluster => true db => 2 key => \"k\" data_type => \"list\" } }",
            "database 0",
        ),
        (
            "input { redis { host => [\"a\", \"b\"] key => \"k\" data_type => \"list\" } }",
            "cluster => true",
        ),
        (
            "input { redis { cluster => true path => \"/tmp/r.sock\" key => \"k\" data_type => \"list\" } }",
            "path",
        ),
        (
            "input { redis { cluster => true reliable => true key => \"a}b\" data_type => \"list\" } }",
            "hash tag",
        ),
        (
            "output { redis { sentinel_hosts => [\"a:notaport\"] master_name => \"m\" key => \"k\" data_type => \"list\" } }",
            "notaport",
        ),
    ];
    for (config, expected) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["-t", "-e", config])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{config} was accepted");
        assert!(
            err.contains(expected),
            "{config}: {err:?} does not mention {expected:?}"
        );
    }
}
