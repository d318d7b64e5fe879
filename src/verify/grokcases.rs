//! Grok pattern cases (`{pattern, data, results}` files, as pattern repositories such as
//! postfix-grok-patterns test their patterns with jls-grok), run by `sluice test` when every
//! named file is one, with `--patterns` naming the pattern files or directories under test.
//!
//! Each case: grok `pattern` (unanchored unless it says otherwise, ECS-v1 core patterns plus
//! the `--patterns` files, as grok's `patterns_dir`) on a `message` of `data`; it must match,
//! and each of `results` must be among the values its capture got (compared as text, since
//! captures are text unless the pattern converts them). A group that matched nothing counts as
//! an empty capture, as jls-grok reports it (Logstash's grok drops it unless asked).

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Map, Value as Json};
use sluice_event::Event;
use sluice_pipeline::graph;

use super::{cases, FileResult, Outcome};

/// Whether a test-case document is a grok pattern case.
pub fn is_case(doc: &Map<String, Json>) -> bool {
    doc.contains_key("pattern") && doc.contains_key("data") && !doc.contains_key("cases")
}

pub fn run(paths: &[PathBuf], patterns: &[PathBuf]) -> Result<Vec<FileResult>, String> {
    for p in patterns {
        if !p.exists() {
            return Err(format!(
                "--patterns {}: no such file or directory",
                p.display()
            ));
        }
    }
    let registry = sluice_plugins::registry();
    let dirs: Vec<String> = patterns
        .iter()
        .map(|p| format!("\"{}\"", super::quoted(&p.display().to_string())))
        .collect();
    let mut results = Vec::new();
    for path in paths {
        let t = Instant::now();
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into(),
        );
        let failure = (|| -> Result<Option<String>, String> {
            let doc = cases::read_doc(path)?;
            let text = |k: &str| match doc.get(k) {
                Some(Json::String(s)) => Ok(s.clone()),
                Some(other) => Ok(other.to_string()),
                None => Err(format!("{}: needs {k:?}", path.display())),
            };
            let (pattern, data) = (text("pattern")?, text("data")?);
            let config = format!(
                "filter {{ grok {{ match => {{ \"message\" => \"{}\" }} patterns_dir => [{}] keep_empty_captures => true }} }}",
                super::quoted(&pattern),
                dirs.join(", ")
            );
            let config = sluice_config::parse(&path.display().to_string(), &config)
                .map_err(|e| e.to_string())?;
            let compiled = graph::compile(&config, &registry).map_err(|e| e.to_string())?;
            let mut events = vec![Event::with_message(data.as_str())];
            compiled.filter_chain().run(&mut events);
            let e = serde_json::to_value(&events[0]).map_err(|e| e.to_string())?;
            if e["tags"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t == "_grokparsefailure"))
            {
                return Ok(Some(format!("  {pattern:?} does not match {data:?}\n")));
            }
            let mut why = String::new();
            let empty = Map::new();
            let expected = doc.get("results").and_then(Json::as_object).unwrap_or(&empty);
            for (k, want) in expected {
                let want = match want {
                    Json::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let text = |v: &Json| match v {
                    Json::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let got = &e[k];
                let among = match got {
                    Json::Array(items) => items.iter().any(|v| text(v) == want),
                    Json::Null => false,
                    v => text(v) == want,
                };
                if !among {
                    why.push_str(&format!("  [{k}]: expected {want:?} among {got}\n"));
                }
            }
            Ok((!why.is_empty()).then_some(why))
        })()
        .unwrap_or_else(|e| Some(format!("  error: {e}")));
        results.push(FileResult {
            outcomes: vec![Outcome {
                name: format!("Matching {name}"),
                failure,
            }],
            name,
            seconds: t.elapsed().as_secs_f64(),
        });
    }
    Ok(results)
}

/// Whether every file of `paths` (at least one) is a grok case.
pub fn all_cases(paths: &[PathBuf]) -> bool {
    !paths.is_empty()
        && paths
            .iter()
            .all(|p| cases::read_doc(Path::new(p)).is_ok_and(|d| is_case(&d)))
}
