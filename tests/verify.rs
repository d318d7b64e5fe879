//! `sluice test` through the real binary, on logstash-filter-verifier's own integration
//! fixtures (`../shared/compat/lfv_testdata`), run with the arguments LFV's integration test
//! gives each; and on fixtures changed to fail.

mod api_support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn sluice_test(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("test")
        .args(args)
        .output()
        .expect("sluice runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// How LFV's integration test runs a fixture: with its pipelines file, or with the config
/// alone (an implicit pipeline).
enum Setup {
    Pipelines,
    ConfigOnly,
}

struct Fixture {
    name: &'static str,
    setup: Setup,
    extra: &'static [&'static str],
}

const fn fixture(name: &'static str, extra: &'static [&'static str]) -> Fixture {
    Fixture {
        name,
        setup: Setup::Pipelines,
        extra,
    }
}

/// Every fixture LFV's integration test runs against Logstash 8 (codec_version_7_test, for
/// Logstash 7 only, has a test of its own below); the mock files are LFV's `--plugin-mock`
/// arguments.
const FIXTURES: &[Fixture] = &[
    fixture("basic_pipeline", &["--add-missing-id"]),
    Fixture {
        name: "basic_logstash_config_dir",
        setup: Setup::ConfigOnly,
        extra: &[],
    },
    Fixture {
        name: "basic_logstash_config_file.conf",
        setup: Setup::ConfigOnly,
        extra: &[],
    },
    fixture("drop_and_split", &[]),
    fixture("conditional_output", &[]),
    fixture("multiple_parallel_outputs", &[]),
    fixture("pipeline_to_pipeline", &[]),
    fixture("basic_pipeline_debug", &["--debug"]),
    fixture("codec_version_8_test", &[]),
    fixture("codec_optional_test", &[]),
    fixture("filtermock", &["--mock", "mocks/filtermock.yml"]),
    fixture("inputoutputmock", &["--mock", "mocks/inputoutputmock.yml"]),
    fixture("special_chars", &[]),
    fixture("testcases_event", &[]),
    fixture("issue_150", &[]),
    fixture("issue_150a", &[]),
    fixture("issue_153", &[]),
    fixture("issue_155", &[]),
    fixture("issue_166", &[]),
    fixture("issue_175", &["--add-missing-id"]),
];

fn args_for(data: &Path, f: &Fixture) -> Vec<String> {
    let p = |rel: &str| data.join(rel).to_string_lossy().into_owned();
    let mut args = match f.setup {
        Setup::Pipelines => vec![
            "--pipelines".to_owned(),
            p(&format!("{}.yml", f.name)),
            "--config".to_owned(),
            p(f.name),
        ],
        Setup::ConfigOnly => vec!["--config".to_owned(), p(f.name)],
    };
    for a in f.extra {
        args.push(if a.starts_with("mocks/") {
            p(a)
        } else {
            (*a).to_owned()
        });
    }
    args.push(p(&format!("testcases/{}", f.name)));
    args
}

fn lfv_data() -> Option<PathBuf> {
    api_support::shared_dir().map(|d| d.join("compat/lfv_testdata"))
}

#[test]
fn every_lfv_fixture_whose_plugins_sluice_has_passes() {
    let Some(data) = lfv_data() else { return };
    let mut failed = Vec::new();
    for f in FIXTURES {
        let args = args_for(&data, f);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, out) = sluice_test(&args);
        if !ok || !out.contains("Summary: ☑ All tests") || out.contains('☐') {
            failed.push(format!("== {} ({args:?})\n{out}", f.name));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// codec_version_7_test is LFV's fixture for Logstash 7, whose plugins default to
/// `ecs_compatibility => disabled`: with that default set in its pipelines file (what a
/// Logstash 7 user upgrading writes), the CEF codec's legacy field names pass; with
/// Logstash 8's default they do not.
#[test]
fn the_logstash_7_fixture_passes_with_ecs_compatibility_disabled_in_pipelines_yml() {
    let Some(data) = lfv_data() else { return };
    let dir = std::env::temp_dir().join(format!("sluice-verify-v7-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let pipelines = dir.join("pipelines.yml");
    let original = std::fs::read_to_string(data.join("codec_version_7_test.yml")).unwrap();
    std::fs::write(
        &pipelines,
        format!(
            "{}\n  pipeline.ecs_compatibility: disabled\n",
            original.trim_end()
        ),
    )
    .unwrap();
    let config = data.join("codec_version_7_test");
    let cases = data.join("testcases/codec_version_7_test");
    let run = |p: &Path| {
        sluice_test(&[
            "--pipelines",
            p.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
            cases.to_str().unwrap(),
        ])
    };
    let (ok, out) = run(&pipelines);
    assert!(ok, "{out}");
    assert!(out.contains("Summary: ☑ All tests: 1/1"), "{out}");
    let (ok, out) = run(&data.join("codec_version_7_test.yml"));
    assert!(!ok, "{out}");
    assert!(out.contains("[cefVersion]: missing"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// codec_test's config has inputs with codecs sluice does not have (edn, edn_lines,
/// graphite): their test files fail with the codec named, the others pass.
#[test]
fn lfv_fixtures_needing_a_missing_codec_fail_naming_it() {
    let Some(data) = lfv_data() else { return };
    let f = fixture("codec_test", &[]);
    let args = args_for(&data, &f);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, out) = sluice_test(&args);
    assert!(!ok, "{out}");
    for missing in ["edn", "edn_lines", "graphite"] {
        let file = format!("codec_test/{missing}.json");
        let line = out
            .lines()
            .find(|l| l.contains(&file) && l.contains("error"))
            .unwrap_or_else(|| panic!("no error for {file}:\n{out}"));
        assert!(
            line.contains(&format!("unknown codec plugin \"{missing}\"")),
            "{line}"
        );
    }
    for present in [
        "json.json",
        "json_lines.json",
        "line.json",
        "multiline.json",
        "plain.json",
    ] {
        assert!(
            out.contains(&format!("\t ☑ {present}:")),
            "{present} should pass:\n{out}"
        );
    }
}

/// A copy of a fixture whose expected event is wrong fails with a diff naming the path.
#[test]
fn a_broken_expectation_shows_the_diff_and_fails() {
    let Some(data) = lfv_data() else { return };
    let dir = std::env::temp_dir().join(format!("sluice-verify-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let original =
        std::fs::read_to_string(data.join("testcases/drop_and_split/split.json")).unwrap();
    let broken = original.replacen("\"into multiple events\"", "\"into many events\"", 1);
    assert_ne!(original, broken);
    std::fs::write(dir.join("split.json"), broken).unwrap();
    let junit = dir.join("junit.xml");
    let config = data.join("drop_and_split");
    let (ok, out) = sluice_test(&[
        "--config",
        config.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
        dir.join("split.json").to_str().unwrap(),
    ]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("☐ Comparing message 3 of 4 from split.json"),
        "{out}"
    );
    assert!(
        out.contains("[message]: expected \"into many events\", got \"into multiple events\""),
        "{out}"
    );
    assert!(
        out.contains("-  \"message\": \"into many events\""),
        "{out}"
    );
    assert!(
        out.contains("+  \"message\": \"into multiple events\""),
        "{out}"
    );
    assert!(out.contains("Summary: ☐ All tests: 3/4"), "{out}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("tests=\"4\" failures=\"1\""), "{xml}");
    assert!(xml.contains("<failure message="), "{xml}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The README's example (examples/test) passes; it needs no shared corpus.
#[test]
fn the_readme_example_passes() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/test");
    let config = dir.join("syslog.conf");
    let cases = dir.join("syslog_test.yml");
    let (ok, out) = sluice_test(&[
        "--config",
        config.to_str().unwrap(),
        cases.to_str().unwrap(),
    ]);
    assert!(ok, "{out}");
    assert!(
        out.contains("☑ Comparing message 1 of 1 (an sshd login is parsed)"),
        "{out}"
    );
    assert!(out.contains("Summary: ☑ All tests: 1/1"), "{out}");
    // The same config's tests in sluice's format, found beside it.
    let (ok, out) = sluice_test(&["--config", config.to_str().unwrap()]);
    assert!(ok, "{out}");
    assert!(
        out.contains("☑ Comparing message 1 of 1 (an sshd login is parsed"),
        "{out}"
    );
    assert!(out.contains("\t ☑ syslog.test.yml: 1/1"), "{out}");
}

/// sluice's own format: an expectation checks only the fields it lists, `absent` fields must
/// not be there, the only input needs no id; a wrong value or a present `absent` field fails
/// with the paths named and the command exits 1. Several inputs need `input:`.
#[test]
fn sluice_format_checks_listed_fields_and_absent_ones() {
    let dir = std::env::temp_dir().join(format!("sluice-verify-own-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("kv.conf");
    std::fs::write(
        &config,
        r#"input { stdin {} }
filter {
  kv {}
  mutate { add_field => { "[seen][by]" => "sluice" } }
  if [drop] { drop {} }
}
output { stdout {} }
"#,
    )
    .unwrap();
    let tests = dir.join("kv.test.yml");
    let write = |text: &str| std::fs::write(&tests, text).unwrap();
    write(
        r#"tests:
  - name: pairs become fields
    lines: ["a=1 b=2", "c=3"]
    expect:
      - { a: "1", "[seen][by]": sluice }
      - { c: "3" }
    absent: [tags, "[seen][who]"]
  - name: dropped
    line: "drop=yes"
    expect: []
"#,
    );
    let (ok, out) = sluice_test(&["--config", config.to_str().unwrap()]);
    assert!(ok, "{out}");
    assert!(out.contains("Summary: ☑ All tests: 2/2"), "{out}");

    write(
        r#"tests:
  - name: wrong
    line: "a=1 b=2"
    expect: { a: "2", "[seen][by]": sluice }
    absent: [b]
"#,
    );
    let (ok, out) = sluice_test(&["--config", config.to_str().unwrap()]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("☐ Comparing message 1 of 1 (wrong) from kv.test.yml"),
        "{out}"
    );
    assert!(out.contains("[a]: expected \"2\", got \"1\""), "{out}");
    assert!(out.contains("b: expected absent, got \"2\""), "{out}");
    assert!(out.contains("-  \"a\": \"2\","), "{out}");
    assert!(out.contains("+  \"a\": \"1\","), "{out}");
    assert!(out.contains("Summary: ☐ All tests: 0/1"), "{out}");

    std::fs::write(
        &config,
        r#"input { stdin { id => "a" } stdin { id => "b" } } output { stdout {} }"#,
    )
    .unwrap();
    write("tests:\n  - line: x\n    expect: { message: x }\n");
    let (ok, out) = sluice_test(&["--config", config.to_str().unwrap()]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("the config has several inputs (a, b): name one with `input:`"),
        "{out}"
    );
    write("input: b\ntests:\n  - line: x\n    expect: { message: x }\n");
    let (ok, out) = sluice_test(&["--config", config.to_str().unwrap()]);
    assert!(ok, "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each test-case file gets its own filters: an aggregate's map starts empty in both files
/// (the counts are 1, 2 twice, not 1, 2, 3, 4) and its final flush happens in both.
#[test]
fn each_file_starts_with_fresh_filters_and_ends_with_their_final_flush() {
    let dir = std::env::temp_dir().join(format!("sluice-verify-agg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("agg.conf");
    std::fs::write(
        &config,
        r#"input { stdin { id => "in" codec => json } }
filter {
  aggregate {
    id => "count"
    task_id => "%{task}"
    code => "map['n'] ||= 0; map['n'] += 1; event.set('n', map['n'])"
    push_previous_map_as_event => true
    timeout_task_id_field => "task"
  }
}
output { stdout { id => "out" } }
"#,
    )
    .unwrap();
    let case = r#"{"input_plugin": "in", "ignore": ["@timestamp", "event"],
 "testcases": [{"input": ["{\"task\": \"a\"}", "{\"task\": \"a\"}"],
   "expected": [{"task": "a", "n": 1},
                {"task": "a", "n": 2, "tags": ["_aggregatefinalflush"]},
                {"task": "a", "n": 2}]}]}"#;
    let files = [dir.join("a1.json"), dir.join("a2.json")];
    for f in &files {
        std::fs::write(f, case).unwrap();
    }
    let (ok, out) = sluice_test(&[
        "--config",
        config.to_str().unwrap(),
        files[0].to_str().unwrap(),
        files[1].to_str().unwrap(),
    ]);
    assert!(ok, "{out}");
    assert!(out.contains("Summary: ☑ All tests: 6/6"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The final flush goes senders first, as Logstash stops pipelines: what the sending
/// pipeline's aggregate releases reaches the receiving pipeline's aggregate before that one
/// flushes (its map then counts both), whatever order pipelines.yml lists them in.
#[test]
fn the_final_flush_runs_senders_before_receivers() {
    let dir = std::env::temp_dir().join(format!("sluice-verify-p2p-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let aggregate = |id: &str, code: &str| {
        format!(
            "aggregate {{ id => \"{id}\" task_id => \"%{{task}}\" code => \"{code}\" \
             push_previous_map_as_event => true timeout_task_id_field => \"task\" }}"
        )
    };
    std::fs::write(
        dir.join("pipelines.yml"),
        "- pipeline.id: down\n  path.config: \"down.conf\"\n- pipeline.id: up\n  path.config: \"up.conf\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("down.conf"),
        format!(
            "input {{ pipeline {{ id => \"from_up\" address => \"down\" }} }}\n\
             filter {{ {} }}\noutput {{ stdout {{ id => \"out\" }} }}\n",
            aggregate("hold_down", "map['n'] ||= 0; map['n'] += 1")
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("up.conf"),
        format!(
            "input {{ stdin {{ id => \"in\" codec => json }} }}\n\
             filter {{ {} }}\noutput {{ pipeline {{ id => \"to_down\" send_to => [\"down\"] }} }}\n",
            aggregate("hold_up", "map['up'] = true")
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("case.json"),
        r#"{"input_plugin": "in", "ignore": ["@timestamp", "event"],
 "testcases": [{"input": ["{\"task\": \"a\"}"],
   "expected": [{"task": "a"},
                {"task": "a", "up": true, "tags": ["_aggregatefinalflush"]},
                {"task": "a", "n": 2, "tags": ["_aggregatefinalflush"]}]}]}"#,
    )
    .unwrap();
    let (ok, out) = sluice_test(&[
        "--pipelines",
        dir.join("pipelines.yml").to_str().unwrap(),
        dir.join("case.json").to_str().unwrap(),
    ]);
    assert!(ok, "{out}");
    assert!(out.contains("Summary: ☑ All tests: 3/3"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// LFV 1.x files (no `input_plugin`): the config's inputs and outputs are dropped (plugins
/// sluice lacks there do not matter), the lines go through the file's codec (json_lines: as
/// Go rewrote them, `1.0` sent as `1`) with `fields` added as an input's `add_field` (values
/// appended to a field the line has, a one-element list a scalar, nested objects as field
/// references), inputs and expected events compared as two flat lists; `--sockets` gives the
/// events a unix input's `path`, removed again when a filter left it. Mixed with an LFV 2
/// file, the run is refused.
#[test]
fn lfv1_files_run_the_filters_alone_through_an_input_of_their_own() {
    let dir = std::env::temp_dir().join(format!("sluice-verify-v1-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("pipeline.conf");
    std::fs::write(
        &config,
        r#"input { no_such_input { port => 1 } }
filter {
  mutate { add_field => { "seen_path" => "%{[path]}" } }
  if [n] == 1 { clone { clones => ["copy"] } }
}
output { no_such_output { } }
"#,
    )
    .unwrap();
    let v1 = dir.join("v1.yaml");
    std::fs::write(
        &v1,
        r#"codec: json_lines
fields:
  host: h1
  tags: [only]
  labels: [a, b]
  nested: { k: v }
  "dotted.key": d
ignore: ["@timestamp", "seen_path"]
testcases:
  - input:
      - >
        {"n": 1.0, "labels": "first", "message": "m"}
  - expected:
      - { n: 1, host: h1, tags: only, labels: [first, a, b], nested: { k: v }, dotted.key: d, message: m }
  - expected:
      - { n: 1, host: h1, tags: [only, copy], labels: [first, a, b], nested: { k: v }, dotted.key: d, message: m }
"#,
    )
    .unwrap();
    let (ok, out) = sluice_test(&["--config", config.to_str().unwrap(), v1.to_str().unwrap()]);
    assert!(ok, "{out}");
    assert!(out.contains("Summary: ☑ All tests: 2/2"), "{out}");

    // With --sockets the filters see the socket's path; it is gone from what is compared.
    let paths = dir.join("paths.yaml");
    std::fs::write(
        &paths,
        "fields: { host: h1 }\ninput: [x]\nexpected:\n  - { message: x, host: h1, seen_path: /tmp/sluice-test/socket }\nignore: ['@timestamp']\n",
    )
    .unwrap();
    // (As Logstash 7 ran it: ECS disabled, so the path is `path`.)
    let pipelines = dir.join("pipelines.yml");
    std::fs::write(
        &pipelines,
        "- pipeline.id: main\n  path.config: pipeline.conf\n  pipeline.ecs_compatibility: disabled\n",
    )
    .unwrap();
    let (ok, out) = sluice_test(&[
        "--sockets",
        "--pipelines",
        pipelines.to_str().unwrap(),
        paths.to_str().unwrap(),
    ]);
    assert!(ok, "{out}");
    // Through stdin there is no path: the expectation fails, naming the field.
    let (ok, out) = sluice_test(&[
        "--pipelines",
        pipelines.to_str().unwrap(),
        paths.to_str().unwrap(),
    ]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("[seen_path]: expected \"/tmp/sluice-test/socket\""),
        "{out}"
    );

    // A file that does not load fails on its own; the LFV 1.x file still runs.
    let broken = dir.join("broken.yaml");
    std::fs::write(&broken, "fields: [unclosed\n").unwrap();
    let (ok, out) = sluice_test(&[
        "--config",
        config.to_str().unwrap(),
        v1.to_str().unwrap(),
        broken.to_str().unwrap(),
    ]);
    assert!(!ok, "{out}");
    assert!(out.contains("Summary: ☐ All tests: 2/3"), "{out}");
    assert!(out.contains("☐ Running broken.yaml"), "{out}");

    // An LFV 2 file beside them: refused, saying why.
    let v2 = dir.join("v2.json");
    std::fs::write(
        &v2,
        r#"{"input_plugin": "x", "testcases": [{"input": ["a"], "expected": [{"message": "a"}]}]}"#,
    )
    .unwrap();
    let (ok, out) = sluice_test(&[
        "--config",
        config.to_str().unwrap(),
        v1.to_str().unwrap(),
        v2.to_str().unwrap(),
    ]);
    assert!(!ok, "{out}");
    assert!(out.contains("is an LFV 1.x file"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// logstash-tester's rules on a suite of our own: a filter case's top-level keys (minus
/// `ignore`) must be exactly `out`'s and values read the same as Ruby text (`200` equals
/// `"200"`, `1` does not equal `1.0`); only the first event out counts; a pattern case is
/// grok `%{NAME}` with the suite's patterns, its captures (plus `tags`) exactly `out`'s and
/// type-strict. Each case passes or fails on its own, named `<file>#<i>`.
#[test]
fn logstash_tester_suites_follow_that_tools_rules() {
    let dir = std::env::temp_dir().join(format!("sluice-verify-lt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for d in [
        "config/filter",
        "config/pattern",
        "test/filters/a",
        "test/patterns/p",
    ] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::write(
        dir.join("config/filter/filter.conf"),
        r#"input { stdin {} }
filter {
  grok { patterns_dir => ["."] match => { "message" => "%{PAIR}" } }
  mutate { convert => { "n" => "integer" } }
  clone { clones => ["copy"] }
}
output { stdout {} }
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("config/pattern/pairs"),
        "PAIR %{WORD:k}=%{NUMBER:n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("test/filters/a/a.json"),
        r#"{"fields": {"type": "t"}, "ignore": ["@version", "@timestamp", "message"], "cases": [
  {"in": "x=200", "out": {"type": "t", "k": "x", "n": "200"}},
  {"in": "x=200", "out": {"type": "t", "k": "x", "n": 200.0}},
  {"in": "x=200", "out": {"type": "t", "k": "x"}},
  {"in": "x=200", "out": {"type": "t", "k": "x", "n": 200, "@version": "1"}}
]}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("test/patterns/p/p.json"),
        r#"{"pattern": "PAIR", "cases": [
  {"in": "a=1", "out": {"k": "a", "n": "1"}},
  {"in": "a=1", "out": {"k": "a", "n": 1}},
  {"in": "nothing", "out": {"tags": ["_grokparsefailure"]}}
]}"#,
    )
    .unwrap();
    let (ok, out) = sluice_test(&["--logstash-tester", dir.to_str().unwrap()]);
    assert!(!ok, "{out}");
    for pass in ["a/a.json#0", "p/p.json#0", "p/p.json#2"] {
        assert!(
            out.contains(&format!("☑ filters/{pass}\n"))
                || out.contains(&format!("☑ patterns/{pass}\n")),
            "{pass}: {out}"
        );
    }
    assert!(
        out.contains("☐ filters/a/a.json#1:\n  [n]: expected \"200.0\", got \"200\""),
        "{out}"
    );
    assert!(
        out.contains("☐ filters/a/a.json#2:\n  [n]: not expected"),
        "{out}"
    );
    assert!(
        out.contains("☐ filters/a/a.json#3:\n  [@version]: missing"),
        "{out}"
    );
    assert!(
        out.contains("☐ patterns/p/p.json#1:\n  [n]: expected 1, got \"1\""),
        "{out}"
    );
    assert!(out.contains("Summary: ☐ All tests: 3/7"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--input`/`--expected`: the input file through the config's own stdin (plain read as
/// lines, the unended last line not an event, as in Logstash), every event out once however
/// many outputs it reaches, in the order it came (conditionals and all), compared whole with
/// the expected JSON lines (other lines skipped), `--ignore` keys skipped at any depth.
#[test]
fn an_input_file_is_compared_with_the_expected_events() {
    let dir = std::env::temp_dir().join(format!("sluice-verify-io-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("pipeline.conf");
    std::fs::write(
        &config,
        r#"input { stdin { codec => plain { ecs_compatibility => disabled } ecs_compatibility => disabled } }
filter {
  if [message] =~ /^b/ { mutate { add_field => { "b" => "yes" } } }
  mutate { replace => { "host" => "h" } add_field => { "[n][timestamp]" => "x" } }
}
output { stdout { } file { path => "/nowhere" } }
"#,
    )
    .unwrap();
    let input = dir.join("input.log");
    std::fs::write(&input, "a1\nb2\na3\nnot ended").unwrap();
    let expected = dir.join("output.log");
    let line = |m: &str, b: bool| {
        let mut e = serde_json::json!({"message": m, "host": "h", "@version": "1",
                                       "@timestamp": "2017-01-01T00:00:00.000Z", "n": {}});
        if b {
            e["b"] = "yes".into();
        }
        e.to_string()
    };
    std::fs::write(
        &expected,
        format!(
            "\nsome noise\n{}\n{}\n{}\n",
            line("a1", false),
            line("b2", true),
            line("a3", false)
        ),
    )
    .unwrap();
    let args = |expected: &Path| {
        vec![
            "--config".to_owned(),
            config.display().to_string(),
            "--input".to_owned(),
            input.display().to_string(),
            "--expected".to_owned(),
            expected.display().to_string(),
            "--ignore".to_owned(),
            "@timestamp,timestamp".to_owned(),
        ]
    };
    let run = |a: Vec<String>| {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        sluice_test(&a)
    };
    let (ok, out) = run(args(&expected));
    assert!(ok, "{out}");
    assert!(out.contains("Summary: ☑ All tests: 3/3"), "{out}");
    // The events in another order: the second comparison fails, naming the field.
    let swapped = dir.join("swapped.log");
    std::fs::write(
        &swapped,
        format!(
            "{}\n{}\n{}\n",
            line("a1", false),
            line("a3", false),
            line("b2", true)
        ),
    )
    .unwrap();
    let (ok, out) = run(args(&swapped));
    assert!(!ok, "{out}");
    assert!(
        out.contains("[message]: expected \"a3\", got \"b2\""),
        "{out}"
    );
    assert!(out.contains("Summary: ☐ All tests: 1/3"), "{out}");
    // A file input reads line by line (its plain codec makes an event of each line).
    let file_config = dir.join("file.conf");
    std::fs::write(
        &file_config,
        "input { file { path => \"/nowhere\" ecs_compatibility => disabled codec => plain { ecs_compatibility => disabled } } }\n\
         filter { mutate { remove_field => [\"host\", \"path\", \"@version\"] } }\n\
         output { null {} }\n",
    )
    .unwrap();
    let lines = dir.join("lines.log");
    std::fs::write(&lines, "one\ntwo\n").unwrap();
    let want = dir.join("lines.json");
    std::fs::write(&want, "{\"message\":\"one\"}\n{\"message\":\"two\"}\n").unwrap();
    let (ok, out) = sluice_test(&[
        "--config",
        file_config.to_str().unwrap(),
        "--input",
        lines.to_str().unwrap(),
        "--expected",
        want.to_str().unwrap(),
        "--ignore",
        "@timestamp",
    ]);
    assert!(ok, "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Grok pattern cases (`{pattern, data, results}`, as pattern repositories test with
/// jls-grok): each file's pattern, with the `--patterns` files, must match its data and give
/// each listed result among a capture's values; a miss or a wrong value fails that file.
#[test]
fn grok_pattern_cases_run_with_the_patterns_under_test() {
    let dir = std::env::temp_dir().join(format!("sluice-verify-grok-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("test")).unwrap();
    let patterns = dir.join("mine.grok");
    std::fs::write(&patterns, "PAIR %{WORD:k}=%{INT:n}%{DATA:rest}\n").unwrap();
    let case = |name: &str, data: &str, results: &str| {
        std::fs::write(
            dir.join("test").join(name),
            format!("pattern: ^%{{PAIR}}$\ndata: \"{data}\"\nresults:\n{results}"),
        )
        .unwrap();
    };
    // (`rest` matched nothing: an empty capture, as jls-grok reports it.)
    case("a.yaml", "a=1", "  k: a\n  n: 1\n  rest: \"\"\n");
    case("b.yaml", "a=1", "  k: b\n");
    case("c.yaml", "nothing", "  k: a\n");
    let (ok, out) = sluice_test(&[
        "--patterns",
        patterns.to_str().unwrap(),
        dir.join("test").to_str().unwrap(),
    ]);
    assert!(!ok, "{out}");
    assert!(out.contains("☑ Matching a.yaml"), "{out}");
    assert!(
        out.contains("☐ Matching b.yaml:\n  [k]: expected \"b\" among \"a\""),
        "{out}"
    );
    assert!(
        out.contains("☐ Matching c.yaml:\n  \"^%{PAIR}$\" does not match \"nothing\""),
        "{out}"
    );
    assert!(out.contains("Summary: ☐ All tests: 1/3"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `pipeline.lineage` in the pipelines file (or `--lineage` for every pipeline): the events
/// carry `[@metadata][lineage]` through `sluice test` as a running pipeline gives it them,
/// across the pipeline link (an event the aggregate releases at the final flush starts at
/// the aggregate), and a test can expect it; without the setting the same test fails.
#[test]
fn tests_can_expect_the_lineage_pipelines_keep() {
    let dir = std::env::temp_dir().join(format!("sluice-verify-lineage-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("up.conf"),
        "input { stdin { id => \"in\" codec => json } }\n\
         filter { aggregate { id => \"agg\" task_id => \"%{task}\" code => \"map['up'] = true\" \
                   push_previous_map_as_event => true timeout_task_id_field => \"task\" }\n\
                  mutate { id => \"m1\" add_field => { \"a\" => \"1\" } } }\n\
         output { pipeline { id => \"to_down\" send_to => [\"down\"] } }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("down.conf"),
        "input { pipeline { id => \"from_up\" address => \"down\" } }\n\
         filter { mutate { id => \"m2\" add_field => { \"b\" => \"2\" } } }\n\
         output { stdout { id => \"out\" } }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("case.json"),
        r#"{"input_plugin": "in", "ignore": ["@timestamp", "event"], "export_metadata": true,
 "testcases": [{"input": ["{\"task\": \"a\"}"],
   "expected": [{"task": "a", "a": "1", "b": "2",
                 "@metadata": {"lineage": ["up/in", "up/agg", "up/m1", "up/to_down", "down/from_up", "down/m2"]}},
                {"task": "a", "up": true, "a": "1", "b": "2", "tags": ["_aggregatefinalflush"],
                 "@metadata": {"lineage": ["up/agg", "up/m1", "up/to_down", "down/from_up", "down/m2"]}}]}]}"#,
    )
    .unwrap();
    let run = |pipelines: &str, extra: &[&str]| {
        std::fs::write(dir.join("pipelines.yml"), pipelines).unwrap();
        let mut args = vec![
            "--pipelines".to_owned(),
            dir.join("pipelines.yml").display().to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        args.push(dir.join("case.json").display().to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        sluice_test(&args)
    };
    let both = "- pipeline.id: up\n  path.config: \"up.conf\"\n  pipeline.lineage: true\n\
                - pipeline.id: down\n  path.config: \"down.conf\"\n  pipeline.lineage: true\n";
    let neither = "- pipeline.id: up\n  path.config: \"up.conf\"\n\
                   - pipeline.id: down\n  path.config: \"down.conf\"\n";
    let (ok, out) = run(both, &[]);
    assert!(ok, "{out}");
    let (ok, out) = run(neither, &["--lineage"]);
    assert!(ok, "{out}");
    let (ok, out) = run(neither, &[]);
    assert!(!ok, "passed without lineage: {out}");
    let _ = std::fs::remove_dir_all(&dir);
}
