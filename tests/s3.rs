//! The s3 output and the s3 and sqs inputs through the binary, against s3proxy (which checks
//! SigV4 signatures) and ElasticMQ started here from Maven Central's jars
//! (`scripts/fetch-aws-servers`).

mod aws_support;
mod net_support;
mod run_support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use aws_support::{make_bucket, s3proxy, KEY, SECRET};
use run_support::{temp_dir, Run};

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p));
        } else if !p.file_name().unwrap().to_string_lossy().starts_with('.') {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The lines of an object (gunzipped when it ends in .gz).
fn lines_of(path: &Path) -> Vec<String> {
    let data = std::fs::read(path).unwrap();
    let text = if path.extension().is_some_and(|x| x == "gz") {
        let mut out = String::new();
        flate2::read::MultiGzDecoder::new(&data[..])
            .read_to_string(&mut out)
            .unwrap();
        out
    } else {
        String::from_utf8(data).unwrap()
    };
    text.lines().map(str::to_owned).collect()
}

fn count(lines: &[String]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for l in lines {
        *m.entry(l.clone()).or_insert(0) += 1;
    }
    m
}

fn s3_options(url: &str) -> String {
    format!(
        r#"endpoint => "{url}" access_key_id => "{KEY}" secret_access_key => "{SECRET}"
           additional_settings => {{ "force_path_style" => "true" }} region => "us-east-1""#
    )
}

#[test]
fn output_rotates_uploads_and_encodes() {
    let dir = temp_dir("s3", "output");
    let Some(s3) = s3proxy(&dir.join("s3")) else {
        return;
    };
    let bucket = make_bucket(&s3, "logs");
    for (gzip, name) in [(false, "plain"), (true, "gz")] {
        let config = format!(
            r#"input {{ generator {{ count => 3000 lines => ["a", "b"] }} }}
               filter {{ mutate {{ copy => {{ "message" => "kind" }} }}
                         mutate {{ replace => {{ "message" => "%{{message}} %{{[event][sequence]}}" }} }} }}
               output {{ s3 {{ bucket => "logs" {opts} prefix => "{name}/%{{kind}}" size_file => 5000
                   encoding => "{enc}" temporary_directory => "{tmp}" codec => line {{ format => "%{{message}}" }} }} }}"#,
            opts = s3_options(&s3.url),
            enc = if gzip { "gzip" } else { "none" },
            tmp = dir.join(format!("tmp-{name}")).display()
        );
        let mut run = Run::start(
            &dir,
            "",
            &["-w", "2"],
            &config,
            Stdio::null(),
            Stdio::null(),
        );
        assert!(run.exit(120).success(), "{}\n{}", run.log(), s3.log());
        let objects = files(&bucket.join(name));
        assert!(objects.len() > 2, "{objects:?}\n{}", run.log());
        let mut all = Vec::new();
        for o in &objects {
            assert!(o.to_string_lossy().contains("/ls.s3."), "{o:?}");
            assert_eq!(o.extension().unwrap() == "gz", gzip, "{o:?}");
            all.extend(lines_of(o));
        }
        let seen = count(&all);
        assert_eq!(seen.len(), 6000, "{name}");
        assert!(seen.values().all(|n| *n == 1));
        // prefixes by kind
        assert!(files(&bucket.join(name).join("a"))
            .iter()
            .all(|f| lines_of(f).iter().all(|l| l.starts_with("a "))));
        // nothing left behind
        assert!(files(&dir.join(format!("tmp-{name}"))).is_empty());
    }
}

#[test]
fn output_multipart_and_a_store_that_comes_back_later() {
    let dir = temp_dir("s3", "later");
    let port = net_support::free_port();
    let url = format!("http://127.0.0.1:{port}");
    // 6 MB of events (past the 5 MiB multipart threshold) make one file that rotates.
    let config = format!(
        r#"input {{ stdin {{ }} }}
           output {{ s3 {{ bucket => "big" {opts} upload_multipart_threshold => 5242880 retry_delay => 0.2
               temporary_directory => "{tmp}" size_file => 6000000 codec => line {{ format => "%{{message}}" }} }} }}"#,
        opts = s3_options(&url),
        tmp = dir.join("tmp").display()
    );
    let mut run = Run::start(
        &dir,
        "",
        &["-w", "1"],
        &config,
        Stdio::piped(),
        Stdio::null(),
    );
    let mut stdin = run.child.stdin.take().unwrap();
    let pad = "x".repeat(1000);
    for i in 0..6000 {
        writeln!(stdin, "{i:05} {pad}").unwrap();
    }
    stdin.flush().unwrap();
    // The store is not there yet: the upload is tried again...
    run.wait_log("uploading failed, retrying", 60);
    // ... and goes through once it is.
    let s3_dir = dir.join("s3");
    std::fs::create_dir_all(s3_dir.join("data/big")).unwrap();
    let Some(_s3) = aws_support::s3proxy_on(&s3_dir, port) else {
        return;
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while files(&s3_dir.join("data/big")).is_empty() {
        assert!(Instant::now() < deadline, "{}", run.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(stdin);
    assert!(run.exit(120).success(), "{}", run.log());
    let objects = files(&s3_dir.join("data/big"));
    assert_eq!(objects.len(), 1, "{objects:?}");
    let lines = lines_of(&objects[0]);
    assert_eq!(lines.len(), 6000);
    assert_eq!(count(&lines).len(), 6000);
}

#[test]
fn output_restores_what_a_killed_run_left() {
    let dir = temp_dir("s3", "restore");
    let Some(s3) = s3proxy(&dir.join("s3")) else {
        return;
    };
    let bucket = make_bucket(&s3, "kept");
    let tmp = dir.join("tmp");
    for gzip in [false, true] {
        let config = format!(
            r#"input {{ stdin {{ }} }}
               output {{ s3 {{ bucket => "kept" {opts} temporary_directory => "{tmp}" size_file => 100000000
                   time_file => 60 encoding => "{enc}" codec => line {{ format => "%{{message}}" }} }} }}"#,
            opts = s3_options(&s3.url),
            tmp = tmp.display(),
            enc = if gzip { "gzip" } else { "none" },
        );
        let mut run = Run::start(
            &dir,
            "",
            &["-w", "1"],
            &config,
            Stdio::piped(),
            Stdio::null(),
        );
        let mut stdin = run.child.stdin.take().unwrap();
        for i in 0..500 {
            writeln!(stdin, "line {gzip} {i}").unwrap();
        }
        stdin.flush().unwrap();
        // Wait until the 500 lines are in the temporary files, then kill.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let n: usize = files(&tmp).iter().map(|f| lines_of(f).len()).sum();
            if n == 500 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{n} lines in {tmp:?}\n{}",
                run.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        run.signal("-KILL");
        let _ = run.exit(30);
        if gzip {
            // A crash in the middle of a write leaves a torn member: half of one more.
            let f = &files(&tmp)[0];
            let mut member = Vec::new();
            let mut enc =
                flate2::write::GzEncoder::new(&mut member, flate2::Compression::default());
            enc.write_all(b"torn line\n").unwrap();
            enc.finish().unwrap();
            let mut file = std::fs::OpenOptions::new().append(true).open(f).unwrap();
            file.write_all(&member[..member.len() / 2]).unwrap();
        }
        // The next start uploads them.
        let mut again = Run::start(
            &dir,
            "",
            &["-w", "1"],
            &config,
            Stdio::null(),
            Stdio::null(),
        );
        assert!(again.exit(60).success(), "{}", again.log());
        let objects = files(&bucket);
        let lines: Vec<String> = objects
            .iter()
            .filter(|o| (o.extension().unwrap() == "gz") == gzip)
            .flat_map(|o| lines_of(o))
            .collect();
        let seen = count(&lines);
        assert_eq!(seen.len(), 500, "gzip {gzip}: {}", again.log());
        assert!(seen.values().all(|n| *n == 1));
        assert!(!seen.contains_key("torn line"));
        assert!(files(&tmp).is_empty());
    }
}

#[test]
fn output_option_errors_are_named() {
    for (config, want) in [
        ("s3 { }", "bucket"),
        ("s3 { bucket => \"b\" prefix => \"a^b\" }", "prefix"),
        (
            "s3 { bucket => \"b\" size_file => 0 time_file => 0 }",
            "size_file",
        ),
        (
            "s3 { bucket => \"b\" role_arn => \"arn:aws:iam::1:role/x\" }",
            "role_arn",
        ),
        (
            "s3 { bucket => \"b\" additional_settings => { \"foo\" => \"1\" } }",
            "additional_settings",
        ),
        (
            "s3 { bucket => \"b\" access_key_id => \"k\" }",
            "secret_access_key",
        ),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args([
                "-t",
                "-e",
                &format!("input {{ stdin {{}} }} output {{ {config} }}"),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{config}: {err}");
        assert!(err.contains(want), "{config}: {err}");
    }
}

/// An object in s3proxy's filesystem store, last modified `age` seconds ago.
fn put_object(bucket: &Path, key: &str, data: &[u8], age: u64) {
    let path = bucket.join(key);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, data).unwrap();
    let when = std::time::SystemTime::now() - Duration::from_secs(age);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

fn gz(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut enc = flate2::write::GzEncoder::new(&mut out, flate2::Compression::default());
    enc.write_all(text.as_bytes()).unwrap();
    enc.finish().unwrap();
    out
}

fn run_input(dir: &Path, config: &str) -> (Vec<serde_json::Value>, String) {
    let mut run = Run::start(dir, "", &["-w", "1"], config, Stdio::null(), Stdio::piped());
    let out = run.read_stdout();
    assert!(run.exit(60).success(), "{}", run.log());
    let events = out
        .join()
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (events, run.log())
}

#[test]
fn input_reads_each_object_once_then_backs_up_and_deletes() {
    let dir = temp_dir("s3", "input");
    let Some(s3) = s3proxy(&dir.join("s3")) else {
        return;
    };
    let inb = make_bucket(&s3, "inbox");
    make_bucket(&s3, "backup");
    put_object(&inb, "logs/a.log", b"a1\na2\na3\n", 100);
    put_object(&inb, "logs/b.log.gz", &gz("b1\nb2\n"), 50);
    put_object(&inb, "logs/c.tmp", b"skipped\n", 45);
    put_object(
        &inb,
        "logs/cf.log",
        b"#Version: 1.0\n#Fields: date time\ncf1\n",
        40,
    );
    let sincedb = dir.join("sincedb");
    let config = |delete: bool| {
        format!(
            r#"input {{ s3 {{ bucket => "inbox" {opts} prefix => "logs/" exclude_pattern => "\.tmp$"
                watch_for_new_files => false sincedb_path => "{since}" ecs_compatibility => disabled
                {extra} }} }}
               filter {{ mutate {{ copy => {{ "[@metadata][s3][key]" => "key" }} }} }}
               output {{ stdout {{ codec => json_lines }} }}"#,
            opts = s3_options(&s3.url),
            since = sincedb.display(),
            extra = if delete {
                r#"delete => true backup_to_bucket => "backup" backup_add_prefix => "done/""#
            } else {
                ""
            }
        )
    };
    let (events, log) = run_input(&dir, &config(false));
    let messages: Vec<&str> = events
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages, ["a1", "a2", "a3", "b1", "b2", "cf1"], "{log}");
    assert_eq!(events[0]["key"], "logs/a.log");
    assert_eq!(events[5]["cloudfront_version"], "1.0");
    assert_eq!(events[5]["cloudfront_fields"], "date time");
    // Again: nothing new.
    let (events, log) = run_input(&dir, &config(false));
    assert!(events.is_empty(), "{events:?}\n{log}");
    // A new object: only it, then backed up and deleted.
    put_object(&inb, "logs/d.log", b"d1\n", 20);
    let (events, log) = run_input(&dir, &config(true));
    assert_eq!(events.len(), 1, "{log}");
    assert_eq!(events[0]["message"], "d1");
    assert!(!inb.join("logs/d.log").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("s3/data/backup/done/logs/d.log")).unwrap(),
        "d1\n"
    );
}

/// One SQS query-protocol call (ElasticMQ takes them unsigned); the answer's body.
fn sqs_call(url: &str, body: &str) -> String {
    let req = ureq::http::Request::builder()
        .method("POST")
        .uri(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body.to_owned())
        .unwrap();
    let agent = ureq::Agent::new_with_defaults();
    agent.run(req).unwrap().body_mut().read_to_string().unwrap()
}

/// The events of `out` (JSON lines), whole lines only.
fn json_lines(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The store stops between two rounds of a watching s3 input, an object arrives while it is
/// away, and the store comes back on the same port: the input logs the failures, keeps its
/// place, and reads each object exactly once.
#[test]
fn input_keeps_its_place_while_the_store_is_away() {
    let dir = temp_dir("s3", "input-away");
    let port = net_support::free_port();
    let Some(s3) = aws_support::s3proxy_on(&dir.join("s3"), port) else {
        return;
    };
    let inb = make_bucket(&s3, "inbox");
    put_object(&inb, "logs/a.log", b"a1\na2\na3\n", 100);
    let config = format!(
        r#"input {{ s3 {{ bucket => "inbox" {opts} prefix => "logs/" interval => 1
              sincedb_path => "{since}" ecs_compatibility => disabled }} }}
           output {{ stdout {{ codec => json_lines }} }}"#,
        opts = s3_options(&s3.url),
        since = dir.join("sincedb").display(),
    );
    let mut run = Run::start(
        &dir,
        "",
        &["-w", "1"],
        &config,
        Stdio::null(),
        Stdio::piped(),
    );
    let (out, lines) = run.read_stdout_counting();
    let count = || lines.load(std::sync::atomic::Ordering::Relaxed);
    run.wait_until("the first object's 3 lines", 60, || count() >= 3);
    drop(s3);
    put_object(&inb, "logs/b.log", b"b1\nb2\n", 50);
    run.wait_log("unable to list objects", 30);
    assert_eq!(count(), 3, "read while the store was away:\n{}", run.log());
    let s3 = aws_support::s3proxy_on(&dir.join("s3"), port).unwrap();
    run.wait_until("the second object's 2 lines", 60, || count() >= 5);
    // A few more rounds: nothing is read twice.
    std::thread::sleep(Duration::from_secs(3));
    run.signal("-TERM");
    assert!(run.exit(60).success(), "{}", run.log());
    let events = json_lines(&out.join().unwrap());
    let messages: Vec<&str> = events
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages, ["a1", "a2", "a3", "b1", "b2"], "{}", run.log());
    drop(s3);
}

/// ElasticMQ is killed while the sqs input polls and started again (empty: it keeps queues in
/// memory) on the same port; the input logs the failures, backs off, and receives what is sent
/// to the new queue: every message once.
#[test]
fn sqs_input_rides_out_a_server_that_goes_away() {
    let dir = temp_dir("s3", "sqs-away");
    let port = net_support::free_port();
    let Some(mq) = aws_support::elasticmq_on(&dir.join("mq"), port) else {
        return;
    };
    let url = mq.url.clone();
    let q = format!("{url}/000000000000/events");
    let fill = |from: usize, to: usize| {
        let created = sqs_call(&format!("{url}/"), "Action=CreateQueue&QueueName=events");
        assert!(created.contains("QueueUrl"), "{created}");
        for i in from..to {
            sqs_call(
                &q,
                &format!("Action=SendMessage&MessageBody=%7B%22n%22%3A{i}%7D"),
            );
        }
    };
    fill(0, 20);
    let config = format!(
        r#"input {{ sqs {{ queue => "events" endpoint => "{url}" access_key_id => "{KEY}"
              secret_access_key => "{SECRET}" polling_frequency => 1 }} }}
           output {{ stdout {{ codec => json_lines }} }}"#
    );
    let mut run = Run::start(
        &dir,
        "",
        &["-w", "1"],
        &config,
        Stdio::null(),
        Stdio::piped(),
    );
    let (out, lines) = run.read_stdout_counting();
    let count = || lines.load(std::sync::atomic::Ordering::Relaxed);
    run.wait_until("the first 20 messages", 60, || count() >= 20);
    drop(mq);
    run.wait_log("retrying with exponential backoff", 30);
    let mq = aws_support::elasticmq_on(&dir.join("mq"), port).unwrap();
    fill(20, 40);
    run.wait_until("the 20 messages sent after the restart", 90, || {
        count() >= 40
    });
    std::thread::sleep(Duration::from_secs(2));
    run.signal("-TERM");
    assert!(run.exit(60).success(), "{}", run.log());
    let mut ns: Vec<i64> = json_lines(&out.join().unwrap())
        .iter()
        .map(|e| e["n"].as_i64().unwrap())
        .collect();
    ns.sort();
    assert_eq!(ns, (0..40).collect::<Vec<_>>(), "{}", run.log());
    drop(mq);
}

#[test]
fn sqs_input_receives_queues_then_deletes() {
    let dir = temp_dir("s3", "sqs");
    let Some(mq) = aws_support::elasticmq(&dir.join("mq")) else {
        return;
    };
    let call = sqs_call;
    let created = call(
        &format!("{}/", mq.url),
        "Action=CreateQueue&QueueName=events",
    );
    assert!(created.contains("QueueUrl"), "{created}");
    let q = format!("{}/000000000000/events", mq.url);
    for i in 0..25 {
        call(
            &q,
            &format!("Action=SendMessage&MessageBody=%7B%22n%22%3A{i}%7D"),
        );
    }
    let opts = format!(
        r#"endpoint => "{}" access_key_id => "{KEY}" secret_access_key => "{SECRET}""#,
        mq.url
    );
    let config = format!(
        r#"input {{ sqs {{ queue => "events" {opts} threads => 2 polling_frequency => 1
              id_field => "sqs_id" md5_field => "sqs_md5" sent_timestamp_field => "sent" }} }}
           output {{ stdout {{ codec => json_lines }} }}"#
    );
    let mut run = Run::start(
        &dir,
        "",
        &["-w", "1"],
        &config,
        Stdio::null(),
        Stdio::piped(),
    );
    let (out, lines) = run.read_stdout_counting();
    let deadline = Instant::now() + Duration::from_secs(60);
    while lines.load(std::sync::atomic::Ordering::Relaxed) < 25 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    run.signal("-TERM");
    assert!(run.exit(60).success(), "{}", run.log());
    let events: Vec<serde_json::Value> = out
        .join()
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut ns: Vec<i64> = events.iter().map(|e| e["n"].as_i64().unwrap()).collect();
    ns.sort();
    assert_eq!(ns, (0..25).collect::<Vec<_>>(), "{}", run.log());
    assert!(events[0]["sqs_id"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(events[0]["sqs_md5"].as_str().unwrap().len(), 32);
    assert!(events[0]["sent"].as_str().unwrap().starts_with("20"));
    // Deleted once queued: nothing is left.
    let attrs = call(
        &q,
        "Action=GetQueueAttributes&AttributeName.1=ApproximateNumberOfMessages&AttributeName.2=ApproximateNumberOfMessagesNotVisible",
    );
    assert!(attrs.matches("<Value>0</Value>").count() == 2, "{attrs}");
}
