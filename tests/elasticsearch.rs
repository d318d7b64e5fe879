//! The `elasticsearch` and `opensearch` outputs through the real binary against real nodes:
//! Elasticsearch 7.10.2 and OpenSearch 3 from Maven Central (`scripts/search-nodes/run`).
//! Tests that stop a node mid-stream or shrink its write queue start a node of their own.

mod net_support;
mod run_support;
mod search_support;

use std::process::Stdio;
use std::time::Duration;

use run_support::{temp_dir, Run};
use search_support::{count, delete_index, get, send, shared, Kind, PrivateNode};

fn run_to_end(dir: &std::path::Path, yml: &str, config: &str, secs: u64) -> String {
    let mut r = Run::start(dir, yml, &[], config, Stdio::null(), Stdio::null());
    let status = r.exit(secs);
    let log = r.log();
    assert!(status.success(), "sluice failed ({status}):\n{log}");
    log
}

fn index_name(test: &str, kind: Kind) -> String {
    format!("sluice-{test}-{}-{}", kind.plugin(), std::process::id())
}

#[test]
fn indexes_100k_events_and_the_count_matches() {
    for (kind, url) in shared("count") {
        let index = index_name("count", kind);
        let dir = temp_dir("es", &index);
        let config = format!(
            r#"input {{ generator {{ count => 100000 message => "GET /index.html 200 {kind:?} event with some padding to make it a realistic log line" }} }}
               output {{ {plugin} {{ hosts => ["{url}"] index => "{index}" }} }}"#,
            plugin = kind.plugin()
        );
        let log = run_to_end(&dir, "pipeline.batch.size: 500\n", &config, 600);
        assert_eq!(count(&url, &index), 100_000, "{kind:?}:\n{log}");
        delete_index(&url, &index);
    }
}

#[test]
fn document_id_routing_update_and_delete() {
    for (kind, url) in shared("actions") {
        let index = index_name("actions", kind);
        let dir = temp_dir("es", &index);
        let plugin = kind.plugin();
        let lines = |extra: &str| {
            (0..10)
                .map(|i| {
                    format!(
                        r#"'{{"id": "doc{i}", "shard": "r{}", "n": {i}{extra}}}'"#,
                        i % 3
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        // index with ids and routing
        let config = format!(
            r#"input {{ generator {{ lines => [{}] count => 1 codec => json }} }}
               output {{ {plugin} {{ hosts => ["{url}"] index => "{index}" document_id => "%{{id}}" routing => "%{{shard}}" }} }}"#,
            lines("")
        );
        run_to_end(&dir, "", &config, 120);
        assert_eq!(count(&url, &index), 10, "{kind:?}");
        let (status, doc) = get(&format!("{url}/{index}/_doc/doc4?routing=r1")).unwrap();
        assert_eq!(status, 200, "{kind:?}: {doc}");
        assert_eq!(doc["_routing"], "r1", "{kind:?}: {doc}");
        assert_eq!(doc["_source"]["n"], 4, "{kind:?}: {doc}");

        // update: a field added to every document, nothing duplicated
        let config = format!(
            r#"input {{ generator {{ lines => [{}] count => 1 codec => json }} }}
               output {{ {plugin} {{ hosts => ["{url}"] index => "{index}" document_id => "%{{id}}" routing => "%{{shard}}" action => "update" }} }}"#,
            lines(r#", "updated": true"#)
        );
        run_to_end(&dir, "", &config, 120);
        assert_eq!(count(&url, &index), 10, "{kind:?}");
        let (_, doc) = get(&format!("{url}/{index}/_doc/doc7?routing=r1")).unwrap();
        assert_eq!(doc["_source"]["updated"], true, "{kind:?}: {doc}");
        assert_eq!(doc["_source"]["n"], 7, "{kind:?}: {doc}");

        // update with doc_as_upsert creates what is missing
        let config = format!(
            r#"input {{ generator {{ lines => ['{{"id": "new1", "shard": "r0", "n": 100}}'] count => 1 codec => json }} }}
               output {{ {plugin} {{ hosts => ["{url}"] index => "{index}" document_id => "%{{id}}" routing => "%{{shard}}" action => "update" doc_as_upsert => true }} }}"#
        );
        run_to_end(&dir, "", &config, 120);
        assert_eq!(count(&url, &index), 11, "{kind:?}");

        // delete, the action taken from the event
        let config = format!(
            r#"input {{ generator {{ lines => [{}] count => 1 codec => json }} }}
               filter {{ mutate {{ add_field => {{ "[@metadata][op]" => "delete" }} }} }}
               output {{ {plugin} {{ hosts => ["{url}"] index => "{index}" document_id => "%{{id}}" routing => "%{{shard}}" action => "%{{[@metadata][op]}}" }} }}"#,
            lines("")
        );
        run_to_end(&dir, "", &config, 120);
        assert_eq!(count(&url, &index), 1, "{kind:?}");
        delete_index(&url, &index);
    }
}

#[test]
fn a_mapping_conflict_is_an_event_error_not_retried() {
    for (kind, url) in shared("conflict") {
        let index = index_name("conflict", kind);
        let dir = temp_dir("es", &index);
        let plugin = kind.plugin();
        let config = format!(
            r#"input {{ generator {{ lines => ['{{"n": 1}}', '{{"n": "not a number"}}', '{{"n": 3}}'] count => 1 codec => json }} }}
               output {{ {plugin} {{ hosts => ["{url}"] index => "{index}" id => "es_out" }} }}"#
        );
        // One batch in order, one worker: the first document maps n as a number.
        let log = run_to_end(&dir, "pipeline.workers: 1\n", &config, 120);
        assert_eq!(count(&url, &index), 2, "{kind:?}:\n{log}");
        assert!(
            log.contains("could not index event") && log.contains("not a number"),
            "{kind:?}:\n{log}"
        );
        assert!(log.contains("mapper_parsing_exception"), "{kind:?}:\n{log}");

        // With the dead letter queue: the event goes there with the reason, and the
        // dead_letter_queue input reads it back.
        delete_index(&url, &index);
        let dlq = dir.join("dlq");
        let yml = format!(
            "pipeline.workers: 1\npath.data: {}\ndead_letter_queue.enable: true\npath.dead_letter_queue: {}\n",
            dir.join("data").display(),
            dlq.display()
        );
        let log = run_to_end(&dir, &yml, &config, 120);
        assert_eq!(count(&url, &index), 2, "{kind:?}:\n{log}");
        assert!(!log.contains("could not index event"), "{kind:?}:\n{log}");
        let entries = run_support::read_dead_letters(&dlq, "main", 1, 60);
        assert_eq!(entries.len(), 1, "{kind:?}: {entries:?}");
        let e = &entries[0];
        assert_eq!(e["n"], "not a number", "{kind:?}: {e}");
        assert_eq!(e["dlq"]["plugin_type"], plugin, "{kind:?}: {e}");
        assert_eq!(e["dlq"]["plugin_id"], "es_out", "{kind:?}: {e}");
        let reason = e["dlq"]["reason"].as_str().unwrap_or_default();
        for part in [
            "Could not index event to Elasticsearch. status: 400",
            "mapper_parsing_exception",
            &index,
        ] {
            assert!(
                reason.contains(part),
                "{kind:?}: {part:?} not in {reason:?}"
            );
        }
        assert!(e["dlq"]["entry_time"].is_string(), "{kind:?}: {e}");
        delete_index(&url, &index);
    }
}

/// Write thread pool of one thread and a queue of one: concurrent bulk requests get 429s,
/// which are retried until every event is in.
#[test]
fn too_many_requests_are_retried_not_dropped() {
    for kind in [Kind::Elasticsearch, Kind::OpenSearch] {
        let Some(node) = PrivateNode::start(
            kind,
            &format!("429-{}", kind.plugin()),
            &["thread_pool.write.size=1", "thread_pool.write.queue_size=1"],
        ) else {
            continue;
        };
        let index = "sluice-429";
        let dir = temp_dir("es", &format!("429-{}", kind.plugin()));
        let config = format!(
            r#"input {{ generator {{ count => 20000 message => "x" }} }}
               output {{ {} {{ hosts => ["{}"] index => "{index}" retry_initial_interval => 0.05 retry_max_interval => 0.2 }} }}"#,
            kind.plugin(),
            node.url
        );
        run_to_end(
            &dir,
            "pipeline.workers: 4\npipeline.batch.size: 50\n",
            &config,
            600,
        );
        assert_eq!(count(&node.url, index), 20_000, "{kind:?}");
        let (_, stats) = get(&format!("{}/_nodes/stats/thread_pool", node.url)).unwrap();
        let rejected: u64 = stats["nodes"]
            .as_object()
            .unwrap()
            .values()
            .map(|n| n["thread_pool"]["write"]["rejected"].as_u64().unwrap_or(0))
            .sum();
        assert!(
            rejected > 0,
            "{kind:?}: the node rejected nothing, so nothing was retried: {stats}"
        );
    }
}

/// The node is killed while events flow and comes back on the same port: every event is
/// indexed once (the document id is the generator's sequence, so a retried request
/// overwrites instead of duplicating).
#[test]
fn a_node_stopped_mid_stream_and_restarted_loses_nothing() {
    for kind in [Kind::Elasticsearch, Kind::OpenSearch] {
        let Some(mut node) = PrivateNode::start(kind, "restart", &[]) else {
            continue;
        };
        let index = "sluice-restart";
        let dir = temp_dir("es", &format!("restart-{}", kind.plugin()));
        let total = 30_000;
        let config = format!(
            r#"input {{ generator {{ count => {total} message => "m" }} }}
               output {{ {} {{ hosts => ["{}"] index => "{index}" document_id => "%{{[event][sequence]}}" retry_initial_interval => 0.2 retry_max_interval => 1 }} }}"#,
            kind.plugin(),
            node.url
        );
        let mut run = Run::start(
            &dir,
            "pipeline.batch.size: 100\n",
            &[],
            &config,
            Stdio::null(),
            Stdio::null(),
        );
        // Wait until some, not all, are in.
        run.wait_until("indexed event", 120, || {
            get(&format!("{}/{index}/_count", node.url))
                .ok()
                .and_then(|(_, b)| b["count"].as_u64())
                .is_some_and(|n| n > 0)
        });
        node.kill();
        std::thread::sleep(Duration::from_secs(3));
        assert!(
            run.child.try_wait().unwrap().is_none(),
            "sluice ended while the node was down:\n{}",
            run.log()
        );
        node.restart();
        let status = run.exit(600);
        assert!(status.success(), "{kind:?}:\n{}", run.log());
        assert_eq!(count(&node.url, index), total, "{kind:?}:\n{}", run.log());
        assert!(
            run.log().contains("unavailable"),
            "{kind:?}: no outage logged:\n{}",
            run.log()
        );
    }
}

/// With the persisted queue, events queued while the node is down survive a SIGKILL of
/// sluice and reach the node after the restart, once each (replay-safe ids).
#[test]
fn queued_events_survive_a_sigkill_while_the_node_is_down() {
    for kind in [Kind::Elasticsearch, Kind::OpenSearch] {
        let plugin = kind.plugin();
        let Some(mut node) = PrivateNode::start(kind, &format!("pq-{plugin}"), &[]) else {
            continue;
        };
        let index = "sluice-pq";
        let dir = temp_dir("es", &format!("pq-kill-{plugin}"));
        let yml = format!(
            "queue.type: persisted\npath.data: {}\nqueue.drain: true\n",
            dir.join("data").display()
        );
        node.kill();
        let total = 5_000;
        let output = format!(
            r#"output {{ {plugin} {{ hosts => ["{}"] index => "{index}" document_id => "%{{[@metadata][replay_safe_id]}}" retry_initial_interval => 0.2 retry_max_interval => 1 }} }}"#,
            node.url
        );
        let config =
            format!(r#"input {{ generator {{ count => {total} message => "m" }} }} {output}"#);
        let mut run = Run::start(&dir, &yml, &[], &config, Stdio::null(), Stdio::null());
        run.wait_log("unavailable", 60);
        // Let the generator finish queueing.
        std::thread::sleep(Duration::from_secs(2));
        run.signal("-KILL");
        run.exit(30);
        node.restart();
        // Nothing new comes in: what reaches the node is what the queue replays.
        let config = format!(r#"input {{ stdin {{ }} }} {output}"#);
        let log = run_to_end(&dir, &yml, &config, 300);
        assert_eq!(count(&node.url, index), total, "{kind:?}: {log}");
    }
}

/// Exactly once through a crash: every batch is indexed and then held unacknowledged by a
/// second output blocked on a pipe nobody reads, sluice is SIGKILLed, and the restart replays
/// those batches. With `document_id => "%{[@metadata][replay_safe_id]}"` the replay
/// overwrites what was indexed before the kill: the count is exact.
#[test]
fn replay_safe_ids_make_a_replay_after_sigkill_overwrite() {
    for (kind, url) in shared("replay-ids") {
        let index = index_name("replay-ids", kind);
        let dir = temp_dir("es", &index);
        let plugin = kind.plugin();
        let yml = format!(
            "queue.type: persisted\npath.data: {}\nqueue.drain: true\npipeline.batch.size: 100\n",
            dir.join("data").display()
        );
        let total = 3_000;
        let es = format!(
            r#"{plugin} {{ hosts => ["{url}"] index => "{index}" document_id => "%{{[@metadata][replay_safe_id]}}" }}"#
        );
        let config = format!(
            r#"input {{ generator {{ count => {total} message => "m" }} }}
               filter {{ clone {{ clones => ["copy"] }} }}
               output {{ {es} stdout {{ codec => json_lines }} }}"#
        );
        let mut run = Run::start(&dir, &yml, &[], &config, Stdio::null(), Stdio::piped());
        let indexed = || {
            send("POST", &format!("{url}/{index}/_refresh"), "");
            get(&format!("{url}/{index}/_count"))
                .ok()
                .and_then(|(_, b)| b["count"].as_u64())
                .unwrap_or(0)
        };
        // The workers index a batch or two, then block on the pipe.
        run.wait_until(&format!("200 indexed documents ({kind:?})"), 120, || {
            indexed() >= 200
        });
        std::thread::sleep(Duration::from_secs(1));
        run.signal("-KILL");
        run.exit(30);
        let before = count(&url, &index);

        // The same filters (the clones' ids come from their filter's place), no new events.
        let config = format!(
            r#"input {{ stdin {{ }} }}
               filter {{ clone {{ clones => ["copy"] }} }}
               output {{ {es} }}"#
        );
        let log = run_to_end(&dir, &yml, &config, 300);
        let replayed: u64 = log
            .lines()
            .find_map(|l| l.split("unacked_events=").nth(1))
            .and_then(|t| t.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{kind:?}: no replay in the log:\n{log}"));
        // Each queued event is indexed twice (itself and its clone).
        assert!(
            before + 2 * replayed > 2 * total,
            "{kind:?}: the replay overlaps nothing indexed before the kill ({before} indexed, {replayed} replayed)"
        );
        assert_eq!(count(&url, &index), 2 * total, "{kind:?}:\n{log}");
        delete_index(&url, &index);
    }
}
