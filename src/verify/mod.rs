//! `sluice test`: unit tests for pipelines, in logstash-filter-verifier's (LFV) test-case
//! format, run in-process in milliseconds.
//!
//! Data flow: [`setup`] reads the pipelines (one config, or a `pipelines.yml`), applies LFV's
//! plugin mocks and rewrites inputs into taps and outputs into collectors (LFV 1.x files:
//! the configs' inputs and outputs give way to one tap and one collector); for each test-case
//! file ([`cases`]) [`run`] feeds its lines through the tapped input's codec and the
//! pipelines' filters, following `pipeline` outputs to the pipelines listening on them; and
//! [`compare`] orders and cleans what the collectors got as LFV does and compares it, event by
//! event, with the expected events. The report names each comparison (a diff for each
//! failure: the changed paths, then the two events as JSON); `--junit` writes the same as
//! JUnit XML. Any failure makes the command fail (exit 1). Test files in sluice's own format
//! (see [`cases`]) check only the fields they list and are found beside the config when no
//! test file is named. logstash-tester suites run through [`tester`], with that tool's rules;
//! an input file and the events expected from it through [`expected`]; grok pattern cases
//! (`{pattern, data, results}`) through [`grokcases`].

pub mod cases;
pub mod compare;
pub mod expected;
pub mod grokcases;
pub mod run;
pub mod setup;
pub mod tester;

use std::fmt::Write as _;
use std::time::Instant;

use crate::cli::TestArgs;

/// One comparison: the i-th event of a file.
pub(crate) struct Outcome {
    pub name: String,
    /// Why it failed, if it did.
    pub failure: Option<String>,
}

pub(crate) struct FileResult {
    pub name: String,
    pub outcomes: Vec<Outcome>,
    pub seconds: f64,
}

pub fn test_command(args: &TestArgs) -> Result<(), String> {
    let started = Instant::now();
    // Absolute now: the logstash-tester mode changes the working directory.
    let junit = match &args.junit {
        Some(p) => {
            Some(std::path::absolute(p).map_err(|e| format!("--junit {}: {e}", p.display()))?)
        }
        None => None,
    };
    let junit = junit.as_deref();
    if let Some(dir) = &args.logstash_tester {
        // The runner's container ran in UTC: a date filter without a zone reads UTC. (Set
        // before any thread starts: the filters are built after.)
        std::env::set_var("TZ", "UTC");
        let results = tester::run(dir)?;
        return finish(&results, started, junit);
    }
    if let (Some(input), Some(expected)) = (&args.input, &args.expected) {
        let harness = setup::Harness::build(&setup::Source {
            config: args.config.as_deref(),
            pipelines: args.pipelines.as_deref(),
            mock: args.mock.as_deref(),
            add_missing_id: true,
            standalone: false,
            sockets: false,
            lineage: args.lineage,
        })?;
        let results = expected::run(&harness, input, expected, &args.ignore)?;
        return finish(&results, started, junit);
    }
    let paths =
        match (args.testcases.is_empty(), args.config.as_deref()) {
            (false, _) => cases::find(&args.testcases)?,
            (true, Some(config)) if args.pipelines.is_none() => cases::beside(config)?,
            (true, _) => return Err(
                "sluice test: name the test-case files (tests are looked for beside a --config \
                 only when there is no --pipelines)"
                    .to_owned(),
            ),
        };
    if grokcases::all_cases(&paths) {
        let results = grokcases::run(&paths, &args.patterns)?;
        return finish(&results, started, junit);
    }
    // Every file is read first: a bad one fails on its own, and files all in sluice's format
    // need no plugin ids.
    let files: Vec<(&std::path::PathBuf, Result<cases::TestFile, String>)> =
        paths.iter().map(|p| (p, cases::load(p))).collect();
    let all = |format: cases::Format| {
        files
            .iter()
            .all(|(_, f)| f.as_ref().is_ok_and(|f| f.format == format))
    };
    // The mode follows the files that load (a bad one fails on its own).
    let loaded: Vec<cases::Format> = files
        .iter()
        .filter_map(|(_, f)| f.as_ref().ok().map(|f| f.format))
        .collect();
    let standalone = !loaded.is_empty() && loaded.iter().all(|f| *f == cases::Format::Lfv1);
    let all_sluice = all(cases::Format::Sluice);
    // LFV 1.x's files run the configs' filters alone, through an input of their own: they
    // cannot run with files that name one of the configs' inputs.
    if !standalone {
        if let Some((path, _)) = files
            .iter()
            .find(|(_, f)| f.as_ref().is_ok_and(|f| f.format == cases::Format::Lfv1))
        {
            return Err(format!(
                "sluice test: {} is an LFV 1.x file (no \"input_plugin\": the filters run \
                 alone), the others name the config's inputs (LFV 2): run them separately",
                path.display()
            ));
        }
    }
    if standalone {
        // LFV 1.x runs Logstash with TZ=UTC: a date filter without a zone reads UTC.
        std::env::set_var("TZ", "UTC");
    }
    let harness = setup::Harness::build(&setup::Source {
        config: args.config.as_deref(),
        pipelines: args.pipelines.as_deref(),
        mock: args.mock.as_deref(),
        add_missing_id: args.add_missing_id || all_sluice || standalone,
        standalone,
        sockets: args.sockets,
        lineage: args.lineage,
    })?;
    let mut results = Vec::new();
    for (path, file) in files {
        let t = Instant::now();
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into(),
        );
        // A file that cannot run (a bad file, an input the config lacks, a codec sluice does
        // not have) fails on its own; the other files still run.
        let outcomes = (|| -> Result<Vec<Outcome>, String> {
            let file = file?;
            let at = |e: String| format!("{}: {e}", path.display());
            let tap = match file.input_plugin.is_empty() {
                true => harness.only_tap(),
                false => harness.tap(&file.input_plugin),
            }
            .map_err(at)?;
            let collected = run::Run::new(&harness)
                .and_then(|r| r.feed(tap, &file))
                .map_err(at)?;
            let actual = compare::actual(&file, collected, args.debug, args.sockets).map_err(at)?;
            Ok(judge(&file, &actual))
        })()
        .unwrap_or_else(|e| {
            vec![Outcome {
                name: format!("Running {name}"),
                failure: Some(format!("  error: {e}")),
            }]
        });
        results.push(FileResult {
            name,
            outcomes,
            seconds: t.elapsed().as_secs_f64(),
        });
    }
    finish(&results, started, junit)
}

/// Prints each comparison and the summary (and writes `--junit`); fails if any failed.
fn finish(
    results: &[FileResult],
    started: Instant,
    junit: Option<&std::path::Path>,
) -> Result<(), String> {
    let mut report = String::new();
    for o in results.iter().flat_map(|r| &r.outcomes) {
        match &o.failure {
            None => writeln!(report, "☑ {}", o.name),
            Some(why) => writeln!(report, "☐ {}:\n{why}", o.name),
        }
        .expect("writing to a String");
    }
    let ok = |r: &FileResult| r.outcomes.iter().filter(|o| o.failure.is_none()).count();
    let total: usize = results.iter().map(|r| r.outcomes.len()).sum();
    let passed: usize = results.iter().map(ok).sum();
    let mark = |good: bool| if good { "☑" } else { "☐" };
    let _ = writeln!(
        report,
        "\nSummary: {} All tests: {passed}/{total} ({:.3} s)",
        mark(passed == total),
        started.elapsed().as_secs_f64()
    );
    let mut sorted: Vec<&FileResult> = results.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    for r in sorted {
        let n = ok(r);
        let _ = writeln!(
            report,
            "\t {} {}: {n}/{}",
            mark(n == r.outcomes.len()),
            r.name,
            r.outcomes.len()
        );
    }
    print!("{report}");
    if let Some(path) = junit {
        std::fs::write(path, junit_xml(results))
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    if passed == total {
        Ok(())
    } else {
        Err("sluice test: failed test cases".to_owned())
    }
}

/// Compares a file's actual events with its expected ones, as LFV does: one failure if the
/// counts differ, else one comparison per event (in sluice's format, of the fields the
/// expected event lists, and of the case's `absent` fields).
fn judge(file: &cases::TestFile, actual: &[serde_json::Value]) -> Vec<Outcome> {
    let expected: Vec<(&serde_json::Value, &cases::Case)> = file
        .cases
        .iter()
        .flat_map(|c| c.expected.iter().map(move |e| (e, c)))
        .collect();
    if expected.len() != actual.len() {
        let got = serde_json::to_string_pretty(actual).unwrap_or_default();
        return vec![Outcome {
            name: format!("Comparing events from {}", file.name),
            failure: Some(format!(
                "Expected {} event(s), got {} instead.\nReceived events: {got}",
                expected.len(),
                actual.len()
            )),
        }];
    }
    if expected.is_empty() {
        return vec![Outcome {
            name: format!("Drop all events from {}", file.name),
            failure: None,
        }];
    }
    let n = expected.len();
    expected
        .iter()
        .zip(actual)
        .enumerate()
        .map(|(i, ((e, case), a))| {
            let name = match &case.description {
                Some(d) => format!(
                    "Comparing message {} of {n} ({d}) from {}",
                    i + 1,
                    file.name
                ),
                None => format!("Comparing message {} of {n} from {}", i + 1, file.name),
            };
            let failure = match file.format {
                cases::Format::Lfv | cases::Format::Lfv1 => (!compare::same(e, a))
                    .then(|| paths_and_diff(compare::changed_paths(e, a), e, a)),
                cases::Format::Sluice => partial_failure(e, &case.absent, a),
            };
            Outcome { name, failure }
        })
        .collect()
}

/// Why an event fails a partial expectation, if it does: the listed fields that differ, the
/// `absent` fields it has, then a diff of the listed fields and, whole, the event.
fn partial_failure(
    expected: &serde_json::Value,
    absent: &[String],
    actual: &serde_json::Value,
) -> Option<String> {
    let present: Vec<(&String, &serde_json::Value)> = absent
        .iter()
        .filter_map(|f| compare::lookup(actual, f).map(|v| (f, v)))
        .collect();
    if compare::contains(expected, actual) && present.is_empty() {
        return None;
    }
    let paths = compare::changed_listed_paths(expected, actual)
        .into_iter()
        .chain(
            present
                .iter()
                .map(|(f, v)| format!("{f}: expected absent, got {v}")),
        );
    let listed = compare::project(expected, actual);
    let mut why = paths_and_diff(paths, expected, &listed);
    let _ = write!(why, "The whole event: {}", compare::pretty(actual));
    Some(why)
}

/// A failure's report: the paths that differ, one a line, then a line diff of the two events
/// as JSON.
fn paths_and_diff(
    paths: impl IntoIterator<Item = String>,
    expected: &serde_json::Value,
    actual: &serde_json::Value,
) -> String {
    let mut why = String::new();
    for p in paths {
        let _ = writeln!(why, "  {p}");
    }
    why.push_str(&compare::line_diff(
        &compare::pretty(expected),
        &compare::pretty(actual),
    ));
    why
}

/// `s` for the inside of a double-quoted config string (`\` and `"` escaped).
fn quoted(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 has no way to write these, not even as references.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// JUnit XML: a test suite per file, a test case per comparison.
fn junit_xml(results: &[FileResult]) -> String {
    let total: usize = results.iter().map(|r| r.outcomes.len()).sum();
    let failures = |r: &FileResult| r.outcomes.iter().filter(|o| o.failure.is_some()).count();
    let failed: usize = results.iter().map(failures).sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"sluice test\" tests=\"{total}\" failures=\"{failed}\">"
    );
    for r in results {
        let _ = writeln!(
            x,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" time=\"{:.6}\">",
            xml_escape(&r.name),
            r.outcomes.len(),
            failures(r),
            r.seconds
        );
        for o in &r.outcomes {
            let name = xml_escape(&o.name);
            let class = xml_escape(&r.name);
            match &o.failure {
                None => {
                    let _ = writeln!(x, "    <testcase classname=\"{class}\" name=\"{name}\"/>");
                }
                Some(why) => {
                    let first = why.lines().next().unwrap_or("failed").trim();
                    let _ = writeln!(
                        x,
                        "    <testcase classname=\"{class}\" name=\"{name}\">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                        xml_escape(first),
                        xml_escape(why)
                    );
                }
            }
        }
        x.push_str("  </testsuite>\n");
    }
    x.push_str("</testsuites>\n");
    x
}
