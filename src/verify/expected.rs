//! The input-file → expected-output-file form (`--input`/`--expected`), as agolo's
//! logstash-test-runner checks a pipeline: the input file goes through the config's own input
//! (its codec; at the end of `stdin` its codec is not flushed, as in Logstash), the events
//! that come out are compared, in order, with the expected file's JSON lines.
//!
//! The expected file is read as that runner reads it: each line trimmed, only lines that look
//! like a JSON object (`{...}`) kept. Events match by position and compare whole: keys in any
//! order, a key on one side only is a difference (`null` is not a missing key), lists in
//! order, numbers by value (`1` equals `1.0`), strings exactly (`"1"` is not `1`). `--ignore`
//! names keys skipped at any depth (the runner's `-i '@timestamp,timestamp'`).

use std::path::Path;
use std::time::Instant;

use serde_json::Value as Json;

use super::setup::Harness;
use super::{compare, run, FileResult, Outcome};

pub fn run(
    harness: &Harness,
    input: &Path,
    expected: &Path,
    ignore: &[String],
) -> Result<Vec<FileResult>, String> {
    let t = Instant::now();
    let bytes = std::fs::read(input).map_err(|e| format!("reading {}: {e}", input.display()))?;
    let text = std::fs::read_to_string(expected)
        .map_err(|e| format!("reading {}: {e}", expected.display()))?;
    let mut want = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if !(line.starts_with('{') && line.ends_with('}')) {
            continue;
        }
        let v: Json = serde_json::from_str(line)
            .map_err(|e| format!("{}:{}: {e}", expected.display(), i + 1))?;
        want.push(strip(v, ignore));
    }
    let tap = harness.only_tap()?;
    let got: Vec<Json> = run::Run::new(harness)?
        .feed_input(tap, &bytes)?
        .into_iter()
        .map(|c| serde_json::to_value(&c.event).map(|v| strip(v, ignore)))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("an event cannot be shown as JSON: {e}"))?;
    let name = expected.display().to_string();
    let outcomes = if want.len() != got.len() {
        vec![Outcome {
            name: format!("Comparing events of {name}"),
            failure: Some(format!(
                "Expected {} event(s), got {} instead.\nReceived events: {}",
                want.len(),
                got.len(),
                serde_json::to_string_pretty(&got).unwrap_or_default()
            )),
        }]
    } else {
        let n = want.len();
        want.iter()
            .zip(&got)
            .enumerate()
            .map(|(i, (w, g))| Outcome {
                name: format!("Comparing event {} of {n} of {name}", i + 1),
                failure: (!compare::same(w, g)).then(|| {
                    let mut why = String::new();
                    for p in compare::changed_paths(w, g) {
                        why.push_str(&format!("  {p}\n"));
                    }
                    why + &compare::line_diff(&compare::pretty(w), &compare::pretty(g))
                }),
            })
            .collect()
    };
    Ok(vec![FileResult {
        name,
        outcomes,
        seconds: t.elapsed().as_secs_f64(),
    }])
}

/// `v` without the ignored keys, at any depth.
fn strip(v: Json, ignore: &[String]) -> Json {
    match v {
        Json::Object(m) => Json::Object(
            m.into_iter()
                .filter(|(k, _)| !ignore.contains(k))
                .map(|(k, v)| (k, strip(v, ignore)))
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.into_iter().map(|v| strip(v, ignore)).collect()),
        other => other,
    }
}
