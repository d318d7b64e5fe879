//! End-to-end tests of the `sluice` binary: each spawns the real process.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod run_support;

fn sluice() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.arg("--log.level").arg("warn");
    c
}

/// sluice with `args`, standard input and output piped, to be talked to while it runs;
/// killed after `secs` should a test wait for output that never comes (the read then fails).
fn spawn_talking(args: &[&str], secs: u64) -> std::process::Child {
    let child = sluice()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(secs));
        let _ = Command::new("kill").args(["-KILL", &pid]).status();
    });
    child
}

fn run_with_stdin(args: &[&str], stdin: impl AsRef<[u8]>) -> Output {
    run_support::output_with_stdin(sluice().args(args), stdin.as_ref())
}

/// A fresh empty directory under the system temp dir.
fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn stdin_to_json_lines_prints_one_event() {
    let out = run_with_stdin(
        &[
            "-e",
            "input { stdin {} } output { stdout { codec => json_lines } }",
        ],
        "hello\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = json_lines(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!(e["message"], "hello");
    assert_eq!(e["@version"], "1");
    assert!(
        e["host"].is_object() && e["host"]["hostname"].is_string(),
        "{e}"
    );
    let ts = e["@timestamp"].as_str().unwrap();
    assert!(ts.len() == 24 && ts.ends_with('Z'), "{ts}");
}

#[test]
fn e_without_sections_defaults_to_stdin_and_rubydebug() {
    let out = run_with_stdin(
        &["-e", "filter { mutate { add_tag => [\"seen\"] } }"],
        "a\nb\n",
    );
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.matches("\"message\" => ").count(), 2, "{text}");
    assert!(text.contains("\"type\" => \"stdin\""), "{text}");
    assert!(text.contains("[0] \"seen\""), "{text}");
}

#[test]
fn config_parse_prints_ast_or_located_error() {
    let ok = sluice()
        .args(["config", "parse", "-e", "input { stdin { } }"])
        .output()
        .unwrap();
    assert!(ok.status.success());
    let ast: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert!(ast.to_string().contains("stdin"), "{ast}");
    // Syntax only: unknown plugins are fine.
    let ok = sluice()
        .args(["config", "parse", "-e", "filter { nosuch { a => 1 } }"])
        .output()
        .unwrap();
    assert!(ok.status.success());

    let bad = sluice()
        .args([
            "config",
            "parse",
            "-e",
            "filter {\n  mutate {\n    x => \n  }\n}",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8(bad.stderr).unwrap();
    assert!(err.starts_with("config string:4:3: "), "{err}");
    assert!(bad.stdout.is_empty());
}

#[test]
fn test_and_exit_checks_plugins_and_options() {
    let ok = sluice()
        .args([
            "-t",
            "-e",
            "input { generator { count => 1 } } output { null {} }",
        ])
        .output()
        .unwrap();
    assert!(ok.status.success());
    assert!(String::from_utf8_lossy(&ok.stdout).contains("Configuration OK"));
    let bad = sluice()
        .args([
            "-t",
            "-e",
            "input { generator { count => \"many\" } } output { null {} }",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8(bad.stderr).unwrap();
    assert!(
        err.starts_with("config string:1:21: invalid setting \"count\""),
        "{err}"
    );
}

/// The generator flushes its codec at the end, as Logstash's: a last line without its
/// delimiter is an event too (with the host, without a sequence number).
#[test]
fn generator_flushes_its_codec_at_the_end() {
    let out = sluice()
        .args([
            "-e",
            // A real newline inside the quoted line.
            "input { generator { count => 2 lines => [\"a\nb\"] codec => line } }
             output { stdout { codec => json_lines } }",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = json_lines(&String::from_utf8_lossy(&out.stdout));
    let messages: Vec<&str> = events
        .iter()
        .filter_map(|e| e["message"].as_str())
        .collect();
    // "a<newline>b" twice is "a", "ba" (the second joins the first's tail), then "b" at the end.
    assert_eq!(messages, ["a", "ba", "b"], "{events:?}");
    let last = &events[2];
    assert!(last["host"]["name"].is_string(), "{last}");
    assert!(last["event"]["sequence"].is_null(), "{last}");
}

/// stdin with the multiline codec: a Java stack trace is one event, and with
/// `auto_flush_interval` the last record comes out while standard input is still open.
#[test]
fn stdin_multiline_joins_stack_traces_and_auto_flushes() {
    use std::io::{BufRead, BufReader};
    let mut child = spawn_talking(
        &[
            "-e",
            r#"input { stdin { codec => multiline { pattern => "^\s" what => previous auto_flush_interval => 0.5 } } }
               output { stdout { codec => json_lines } }"#,
        ],
        30,
    );
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"Exception in thread main\n\tat a.B.c(B.java:1)\n\tat a.B.main(B.java:2)\nnext record\n")
        .unwrap();
    stdin.flush().unwrap();
    // Both records arrive with standard input still open: the second only by auto-flush.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut events = Vec::new();
    for _ in 0..2 {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        events.push(serde_json::from_str::<serde_json::Value>(&line).unwrap());
    }
    assert_eq!(
        events[0]["message"],
        "Exception in thread main\n\tat a.B.c(B.java:1)\n\tat a.B.main(B.java:2)"
    );
    assert_eq!(events[0]["tags"], serde_json::json!(["multiline"]));
    assert_eq!(events[1]["message"], "next record");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// `charset` on the text codecs: other charsets are converted to UTF-8; bytes that are not
/// UTF-8 under the default are escaped as Logstash escapes them, with its warning.
#[test]
fn codecs_convert_charsets_and_escape_invalid_utf8() {
    let run = |codec: &str, input: &[u8]| {
        let config = format!(
            "input {{ stdin {{ codec => {codec} }} }} output {{ stdout {{ codec => json_lines }} }}"
        );
        let out = run_with_stdin(&["-e", &config], input);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            json_lines(&String::from_utf8_lossy(&out.stdout)),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (events, _) = run(r#"line { charset => "ISO-8859-1" }"#, b"\xE0 Montr\xE9al\n");
    assert_eq!(events[0]["message"], "à Montréal");
    let (events, _) = run(
        r#"json_lines { charset => "CP1252" }"#,
        b"{\"p\": \"\x80 5\"}\n",
    );
    assert_eq!(events[0]["p"], "€ 5");
    let (events, log) = run("line", b"bad \xff\"q\"\n");
    assert_eq!(events[0]["message"], r#"bad \xFF\"q\""#);
    assert!(log.contains("different character encoding"), "{log}");
    let out = sluice()
        .args([
            "-t",
            "-e",
            r#"input { stdin { codec => plain { charset => "KLINGON" } } }"#,
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("charset"));
}

/// `log.format: json` logs Logstash's JSON lines; `path.logs` writes them to
/// logstash-json.log as well; `config.test_and_exit` and `allow_superuser` in the settings
/// file act as Logstash's do.
#[test]
fn logging_and_startup_settings_from_the_settings_file() {
    let dir = temp_dir("log-settings");
    let logs = dir.join("logs");
    std::fs::write(
        dir.join("logstash.yml"),
        format!("log.format: json\npath.logs: {}\n", logs.display()),
    )
    .unwrap();
    let config = "input { generator { count => 1 } } filter { json { source => message } } output { null {} }";
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--path.settings", dir.to_str().unwrap(), "-e", config])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    // The json filter warns about "Hello world!": one record at least, in Logstash's shape.
    assert!(!lines.is_empty(), "{stderr}");
    for l in &lines {
        assert!(l["level"].is_string() && l["loggerName"].is_string(), "{l}");
        assert!(l["timeMillis"].is_i64() && l["thread"].is_string(), "{l}");
        assert!(l["logEvent"]["message"].is_string(), "{l}");
    }
    let file = std::fs::read_to_string(logs.join("logstash-json.log")).unwrap();
    assert_eq!(file.lines().count(), lines.len(), "{file}");

    std::fs::write(dir.join("logstash.yml"), "config.test_and_exit: true\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "--path.settings",
            dir.to_str().unwrap(),
            "-e",
            "input { stdin {} }",
        ])
        .stdin(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Configuration OK\n");

    std::fs::write(dir.join("logstash.yml"), "allow_superuser: false\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--path.settings", dir.to_str().unwrap(), "-e", config])
        .output()
        .unwrap();
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    assert_eq!(
        out.status.success(),
        !root,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if root {
        assert!(String::from_utf8_lossy(&out.stderr).contains("superuser"));
    }
}

#[test]
fn generator_to_file_delivers_every_event_once() {
    let dir = temp_dir("gen");
    let out_path = dir.join("out-%{[@metadata][n]}.log");
    let config = format!(
        "input {{ generator {{ count => 5000 threads => 2 add_field => {{ \"[@metadata][n]\" => \"x\" }} }} }}
         output {{ file {{ path => \"{}\" }} }}",
        out_path.display()
    );
    let out = sluice()
        .args(["-w", "2", "-b", "64", "-e", &config])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(dir.join("out-x.log")).unwrap();
    let events = json_lines(&text);
    assert_eq!(events.len(), 10_000);
    let mut seqs: Vec<i64> = events
        .iter()
        .map(|e| e["event"]["sequence"].as_i64().unwrap())
        .collect();
    seqs.sort_unstable();
    // Two threads each generate sequences 0..5000.
    let expected: Vec<i64> = (0..5000).flat_map(|s| [s, s]).collect();
    assert_eq!(seqs, expected);
    assert!(events.iter().all(|e| e.get("@metadata").is_none()));
}

#[test]
fn directory_config_is_read_in_lexical_order_and_env_is_substituted() {
    let dir = temp_dir("dir");
    std::fs::write(
        dir.join("20-filter.conf"),
        "filter { mutate { add_field => { \"who\" => \"${WHO}\" \"d\" => \"${NOPE:dflt}\" } } }",
    )
    .unwrap();
    std::fs::write(dir.join("10-input.conf"), "input { stdin { } }").unwrap();
    std::fs::write(
        dir.join("30-output.conf"),
        "output { stdout { codec => json_lines } }",
    )
    .unwrap();
    let mut child = sluice()
        .args(["-f", dir.to_str().unwrap()])
        .env("WHO", "me")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"x\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let events = json_lines(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(events[0]["who"], "me");
    assert_eq!(events[0]["d"], "dflt");

    let missing = sluice()
        .args([
            "-t",
            "-e",
            "input { generator { message => \"${SLUICE_UNSET_VAR}\" } }",
        ])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("SLUICE_UNSET_VAR"));
}

#[test]
fn sigterm_stops_an_endless_pipeline_without_duplicates() {
    let dir = temp_dir("term");
    let path = dir.join("out.log");
    let config = format!(
        "input {{ generator {{ }} }} output {{ file {{ path => \"{}\" }} }}",
        path.display()
    );
    let mut child = sluice().args(["-w", "2", "-e", &config]).spawn().unwrap();
    // Wait until events are flowing.
    let started = Instant::now();
    while std::fs::metadata(&path).map_or(0, |m| m.len()) < 100_000 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no output after 30 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = child.wait().unwrap();
    assert!(status.success(), "exit status {status}");
    let events = json_lines(&std::fs::read_to_string(&path).unwrap());
    let mut seqs: Vec<i64> = events
        .iter()
        .map(|e| e["event"]["sequence"].as_i64().unwrap())
        .collect();
    seqs.sort_unstable();
    let n = seqs.len() as i64;
    assert!(n > 0);
    // One generator thread: the delivered events are exactly sequences 0..n.
    assert_eq!(seqs, (0..n).collect::<Vec<_>>());
}

#[test]
fn pipeline_settings_ecs_default_and_ordered() {
    let dir = temp_dir("ecs");
    std::fs::write(
        dir.join("sluice.yml"),
        "pipeline.ecs_compatibility: disabled\n",
    )
    .unwrap();
    let settings = dir.to_str().unwrap();
    let out = run_with_stdin(
        &[
            "--path.settings",
            settings,
            "-e",
            "input { stdin {} } output { stdout { codec => json_lines } }",
        ],
        "hi\n",
    );
    assert!(out.status.success());
    let e = &json_lines(&String::from_utf8(out.stdout).unwrap())[0];
    assert!(e["host"].is_string(), "legacy host field expected: {e}");
    assert!(e.get("event").is_none(), "{e}");

    std::fs::write(dir.join("sluice.yml"), "pipeline.ordered: true\n").unwrap();
    let bad = sluice()
        .args([
            "--path.settings",
            settings,
            "-w",
            "2",
            "-e",
            "input { generator { count => 1 } }",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr)
        .contains("pipeline.ordered: true needs pipeline.workers: 1"));
}

/// 10,000 nested `if`s, parentheses or arrays used to overflow the stack (exit 134); now the
/// config is refused with the position of the first level too deep.
#[test]
fn deeply_nested_configs_are_refused_with_a_location() {
    let dir = temp_dir("deep");
    let n = 10_000;
    for (name, text) in [
        (
            "if",
            format!(
                "input {{ stdin {{}} }}\nfilter {{\n{}drop {{}}\n{}}}\n",
                "if [a] {\n".repeat(n),
                "}\n".repeat(n)
            ),
        ),
        (
            "parens",
            format!(
                "filter {{ if {}[a]{} {{ drop {{}} }} }}",
                "(".repeat(n),
                ")".repeat(n)
            ),
        ),
        (
            "arrays",
            format!(
                "filter {{ mutate {{ add_tag => {}1{} }} }}",
                "[".repeat(n),
                "]".repeat(n)
            ),
        ),
    ] {
        let path = dir.join(format!("{name}.conf"));
        std::fs::write(&path, text).unwrap();
        let out = sluice()
            .args(["-t", "-f", path.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(
            err.contains(&format!("{name}.conf:"))
                && err.contains("nested more than 100 levels deep"),
            "{name}: {err}"
        );
    }
}

/// Text from events that goes into the log (here: input that is not JSON) cannot start a log
/// line of its own: the record stays one line, its newlines escaped.
#[test]
fn event_text_cannot_forge_a_log_line() {
    // (A generator: its message is one document, newline and all; stdin reads by lines.)
    let out = run_with_stdin(
        &[
            "-e",
            "input { generator { count => 1 codec => json message => \"not json\n2026-01-01T00:00:00Z ERROR forged by an event\" } } output { null {} }",
        ],
        "",
    );
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("JSON parse failure"), "{err}");
    assert!(
        !err.lines()
            .any(|l| l.starts_with("2026-01-01T00:00:00Z ERROR forged")),
        "a log line was forged:\n{err}"
    );
    assert!(
        err.contains("\\n2026-01-01T00:00:00Z ERROR forged"),
        "{err}"
    );
}

/// `sluice config parse ... | head -1`: a reader that goes away ends the output quietly
/// (it used to panic on the broken pipe).
#[test]
fn printing_commands_end_quietly_on_a_closed_pipe() {
    use std::io::Read;
    let config = format!(
        "filter {{ {} }}",
        "mutate { add_tag => [\"a\", \"b\", \"c\"] } ".repeat(3000)
    );
    let mut child = sluice()
        .args(["config", "parse", "-e", &config])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {err}", out.status);
    assert!(!err.contains("panicked"), "{err}");
}

/// The csv codec: lines of a file decoded into columns (a bad line falls back to `message`),
/// and events encoded as CSV lines with a header, quoted as Ruby's CSV writes them.
#[test]
fn csv_codec_decodes_and_encodes() {
    let dir = temp_dir("csv-codec");
    let input = dir.join("in.csv");
    std::fs::write(&input, "name,count\nbob,3\n\"x,y\",\"4\"\nbad\"quote,1\n").unwrap();
    let config = format!(
        r#"input {{ file {{ path => "{}" mode => read exit_after_read => true sincedb_path => "/dev/null"
             file_completed_action => log file_completed_log_path => "{}"
             codec => csv {{ autodetect_column_names => true convert => {{ "count" => "integer" }} }} }} }}
           output {{ stdout {{ codec => json_lines }} }}"#,
        input.display(),
        dir.join("done.log").display()
    );
    let out = run_with_stdin(&["-w", "1", "-e", &config], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = json_lines(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(
        (&events[0]["name"], &events[0]["count"]),
        (&serde_json::json!("bob"), &serde_json::json!(3))
    );
    assert_eq!(events[1]["name"], "x,y");
    assert_eq!(events[1]["event"]["original"], "\"x,y\",\"4\"");
    assert_eq!(events[2]["message"], "bad\"quote,1");
    assert_eq!(events[2]["tags"], serde_json::json!(["_csvparsefailure"]));

    let out = run_with_stdin(
        &[
            "-w",
            "1",
            "-e",
            r#"input { generator { count => 2 message => 'a "quoted", text' } }
               output { stdout { codec => csv { columns => ["message", "[event][sequence]", "missing"] include_headers => true } } }"#,
        ],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "message,[event][sequence],missing\n\"a \"\"quoted\"\", text\",0,\n\"a \"\"quoted\"\", text\",1,\n"
    );
}

/// The es_bulk codec: action and document lines become events with the action's metadata;
/// a delete has no document; a line that is not JSON is skipped.
#[test]
fn es_bulk_codec_reads_bulk_requests() {
    let bulk = concat!(
        "{\"index\":{\"_index\":\"logs\",\"_id\":\"1\"}}\n",
        "{\"message\":\"first\",\"n\":1}\n",
        "not json\n",
        "{\"delete\":{\"_index\":\"logs\",\"_id\":\"2\"}}\n",
        "{\"create\":{\"_index\":\"other\"}}\n",
        "{\"message\":\"second\"}\n"
    );
    let out = run_with_stdin(
        &[
            "-w",
            "1",
            "-e",
            r#"input { stdin { codec => es_bulk { } } }
               filter { mutate { copy => { "[@metadata][codec][es_bulk]" => "bulk" } } }
               output { stdout { codec => json_lines } }"#,
        ],
        bulk,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = json_lines(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0]["message"], "first");
    assert_eq!(
        events[0]["bulk"],
        serde_json::json!({"_index": "logs", "_id": "1", "action": "index"})
    );
    assert_eq!(events[1]["bulk"]["action"], "delete");
    assert!(events[1].get("message").is_none());
    assert_eq!(events[2]["message"], "second");
    assert_eq!(events[2]["bulk"]["_index"], "other");
    assert!(String::from_utf8_lossy(&out.stderr).contains("JSON parse failure"));
}

/// The periodic flush: the metrics filter's event comes out every 5 s while the pipeline is
/// idle (standard input open, nothing read), goes through the filters after it (the mutate)
/// and not the conditional branch it does not match, with the filter's own `add_tag`.
#[test]
fn metrics_are_flushed_periodically_by_idle_workers() {
    use std::io::{BufRead, BufReader};
    let mut child = spawn_talking(
        &[
            "-w",
            "2",
            "-e",
            r#"input { stdin { } }
               filter {
                 if [message] =~ /^x/ { metrics { meter => ["events", "by_%{message}"] add_tag => ["metric"] } }
                 mutate { add_field => { "after" => "yes" } }
               }
               output { stdout { codec => json_lines } }"#,
        ],
        40,
    );
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"x1\nx1\nx2\nother\n").unwrap();
    stdin.flush().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut metric = None;
    for _ in 0..6 {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let e: serde_json::Value = serde_json::from_str(&line).unwrap();
        if e["tags"] == serde_json::json!(["metric"]) {
            metric = Some(e);
            break;
        }
        assert_eq!(e["after"], "yes", "{e}");
    }
    // It came with standard input still open: only the periodic flush can have made it.
    let metric = metric.expect("a metric event");
    assert_eq!(metric["events"]["count"], 3, "{metric}");
    assert_eq!(metric["by_x1"]["count"], 2);
    assert_eq!(metric["by_x2"]["count"], 1);
    assert!(metric["events"]["rate_1m"].is_f64());
    assert_eq!(
        metric["after"], "yes",
        "the filters after metrics ran on it"
    );
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// The cef codec: headers, extensions by the CEF dictionary (ECS or legacy names), escapes,
/// values with spaces and unescaped `=`, dotted and indexed keys, timestamps in the device's
/// zone, a failure event, and encoding back.
#[test]
fn cef_codec_decodes_and_encodes() {
    let lines = concat!(
        "CEF:0|security|threatmanager|1.0|100|trojan successfully stopped|10|src=10.0.0.192 dst=12.121.122.82 spt=1232\n",
        "Sep 19 08:26:10 host CEF:0|sec\\|urity|tm\\\\x|1.0|100|name|2| src=10.0.0.1  moo=this =has = equals\\= msg=line\\nbreak ad.field[0]=f0 ad.Error_,Code=32 dproc=Internet Explorer x\n",
        "CEF:0|FooBar|Web Gateway|1.2|200|Success|2|rt=Sep 07 2018 14:50:39 dtz=Europe/Moscow cat=Access Log request='https://x/?a=b' cs1= cs1Label=Foo Bar\n",
        "this is not cef\n",
    );
    let run = |codec: &str| {
        let out = run_with_stdin(
            &[
                "-w",
                "1",
                "-e",
                &format!(
                    r#"input {{ stdin {{ codec => cef {{ delimiter => "\n" {codec} }} }} }} output {{ stdout {{ codec => json_lines }} }}"#
                ),
            ],
            lines,
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        json_lines(&String::from_utf8_lossy(&out.stdout))
    };
    let e = run("");
    assert_eq!(e.len(), 4, "{e:?}");
    assert_eq!(e[0]["cef"]["version"], "0");
    assert_eq!(e[0]["observer"]["vendor"], "security");
    assert_eq!(e[0]["event"]["severity"], "10");
    assert_eq!(e[0]["source"]["ip"], "10.0.0.192");
    assert_eq!(e[0]["source"]["port"], "1232");
    assert_eq!(e[1]["log"]["syslog"]["header"], "Sep 19 08:26:10 host");
    assert_eq!(e[1]["observer"]["vendor"], "sec|urity");
    assert_eq!(e[1]["observer"]["product"], "tm\\x");
    assert_eq!(e[1]["moo"], "this =has = equals=");
    assert_eq!(e[1]["message"], "line\nbreak");
    assert_eq!(e[1]["ad.field"]["0"], "f0");
    assert_eq!(e[1]["ad.Error_,Code"], "32");
    assert_eq!(
        e[1]["destination"]["process"]["name"],
        "Internet Explorer x"
    );
    // rt in the device's zone (Moscow, UTC+3 since 2014): the event's @timestamp.
    assert_eq!(e[2]["@timestamp"], "2018-09-07T11:50:39.000Z");
    assert_eq!(e[2]["event"]["timezone"], "Europe/Moscow");
    assert_eq!(e[2]["url"]["original"], "'https://x/?a=b'");
    assert_eq!(e[2]["cef"]["device_custom_string_1"]["label"], "Foo Bar");
    assert_eq!(e[3]["message"], "this is not cef");
    assert_eq!(e[3]["tags"], serde_json::json!(["_cefparsefailure"]));

    let legacy = run("ecs_compatibility => disabled");
    assert_eq!(legacy[0]["sourceAddress"], "10.0.0.192");
    assert_eq!(legacy[0]["deviceVendor"], "security");
    assert_eq!(legacy[2]["deviceReceiptTime"], "Sep 07 2018 14:50:39");

    let out = run_with_stdin(
        &[
            "-w",
            "1",
            "-e",
            r#"input { generator { count => 1 message => "a=b|c" } }
               filter { mutate { add_field => { "[source][ip]" => "10.1.1.1" "n" => "line1
line2" } } }
               output { stdout { codec => cef { vendor => "V|x" severity => "%{[nothing]}" fields => ["[source][ip]", "message", "n", "missing"] delimiter => "\n" } } }"#,
        ],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "CEF:0|V\\|x|Logstash|1.0|Logstash|Logstash|6|sourceAddress=10.1.1.1 message=a\\=b|c n=line1\\nline2\n"
    );
}

/// Issue 45: an input's `add_field` as Logstash's decorators apply it: every element of an
/// array value, appended to a field that is there, and before the input sets its own host
/// (stdin and generator set it only when the event has none), so that `add_field` may set it.
#[test]
fn input_add_field_appends_and_may_set_the_host() {
    for input in [
        r#"stdin { ecs_compatibility => disabled add_field => { "host" => "h1" "tags" => ["a", "b"] "[x]" => "1" } add_field => { "x" => "2" } }"#,
        r#"generator { count => 1 ecs_compatibility => disabled add_field => { "host" => "h1" "tags" => ["a", "b"] "[x]" => "1" } add_field => { "x" => "2" } }"#,
    ] {
        let out = run_with_stdin(
            &[
                "-e",
                &format!("input {{ {input} }} output {{ stdout {{ codec => json_lines }} }}"),
            ],
            "line\n",
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let e: serde_json::Value =
            serde_json::from_str(text.lines().next().unwrap_or("{}")).unwrap();
        assert_eq!(e["host"], "h1", "{input}: {e}");
        assert_eq!(e["tags"], serde_json::json!(["a", "b"]), "{input}: {e}");
        assert_eq!(e["x"], serde_json::json!(["1", "2"]), "{input}: {e}");
    }
}

/// Issue 45: Logstash's json codec keeps a document's text in `[event][original]` in ECS mode
/// when it makes one event (with `target` too), and not with ECS disabled nor for an array
/// of several.
#[test]
fn json_codec_keeps_the_original_text_in_ecs_mode() {
    let decode = |codec: &str, input: &str| -> Vec<serde_json::Value> {
        // (A generator: its message is one document; stdin would read `json` as json_lines.)
        let out = run_with_stdin(
            &["-e", &format!("input {{ generator {{ count => 1 codec => {codec} message => '{input}' }} }} output {{ stdout {{ codec => json_lines }} }}")],
            "",
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let e = &decode(r#"json { target => "doc" }"#, r#"{"a":1}"#)[0];
    assert_eq!(e["event"]["original"], r#"{"a":1}"#, "{e}");
    assert_eq!(e["doc"]["a"], 1);
    let e = &decode("json", r#"{"a":1}"#)[0];
    assert_eq!(e["event"]["original"], r#"{"a":1}"#, "{e}");
    // (The generator gives `[event][sequence]`; the codec adds no `original` here.)
    let e = &decode("json { ecs_compatibility => disabled }", r#"{"a":1}"#)[0];
    assert!(e["event"].get("original").is_none(), "{e}");
    let two = decode("json", r#"[{"a":1},{"a":2}]"#);
    assert_eq!(two.len(), 2);
    assert!(
        two.iter().all(|e| e["event"].get("original").is_none()),
        "{two:?}"
    );
}

/// Issue 45: stdin ends as Logstash's does: its codec is not flushed, so a last line without
/// its newline and a multiline event still open are not events (with a warning saying how
/// many bytes); `json` and `plain` read the stream by lines (Logstash's
/// `fix_streaming_codecs`).
#[test]
fn stdin_ends_without_flushing_its_codec() {
    let out = run_with_stdin(
        &[
            "-e",
            "input { stdin { } } output { stdout { codec => line { format => \"%{message}\" } } }",
        ],
        "a\nb\nunended",
    );
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a\nb\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the input ended inside an event"), "{err}");
    assert!(err.contains("bytes=7"), "{err}");
    let out = run_with_stdin(
        &[
            "-e",
            r#"input { stdin { codec => multiline { pattern => "^\s" what => "previous" } } }
               output { stdout { codec => line { format => "%{message}|" } } }"#,
        ],
        "one\n  more\ntwo\nlast, still open\n",
    );
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "one\n  more|\ntwo|\n");
    let out = run_with_stdin(
        &["-e", "input { stdin { codec => json } } output { stdout { codec => line { format => \"%{a}\" } } }"],
        "{\"a\":1}\n{\"a\":2}\n",
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1\n2\n");
}

/// Issue 45 (agolo's suite found it): with `pipeline.workers: 1` set, `pipeline.ordered: auto`
/// (the default) keeps the events' order as Logstash's ordered execution does: each event
/// through the filters alone, a conditional's branches rejoined in input order, a clone right
/// after its original. `pipeline.ordered: false` (or several workers) lets a batch through
/// whole: at each conditional, the branch's events before the others.
#[test]
fn one_worker_keeps_the_events_order_through_conditionals() {
    let config = r#"input { stdin { } }
        filter {
          if [message] =~ /^b/ { mutate { add_tag => ["b"] } }
          if [message] == "a3" { clone { clones => ["copy"] } }
        }
        output { stdout { codec => line { format => "%{message}" } } }"#;
    let run = |extra: &[&str]| {
        let mut args = vec!["-e", config];
        args.extend_from_slice(extra);
        let out = run_with_stdin(&args, "a1\nb2\na3\nb4\n");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(run(&["-w", "1"]), "a1\nb2\na3\na3\nb4\n");
    let dir = temp_dir("unordered");
    std::fs::write(dir.join("sluice.yml"), "pipeline.ordered: false\n").unwrap();
    assert_eq!(
        run(&["-w", "1", "--path.settings", dir.to_str().unwrap()]),
        "a3\na3\nb2\nb4\na1\n"
    );
}
