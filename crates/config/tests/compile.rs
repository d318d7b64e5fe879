//! Our AST + merged options rendered as Logstash's compiled IR (`sluice_config::ir`) and
//! compared with what Logstash's compiler produced (`config_compile_cases.json`).

mod common;

use serde_json::Value as Json;
use sluice_config::{ir, parse_with, ParseOptions, SectionKind, Statement};

fn kind(name: &str) -> SectionKind {
    match name {
        "input" => SectionKind::Input,
        "filter" => SectionKind::Filter,
        "output" => SectionKind::Output,
        other => panic!("unknown section {other}"),
    }
}

fn run_case(case: &Json) -> Result<(), String> {
    let text = case["config"].as_str().unwrap();
    let escapes = case["settings"]["config.support_escapes"]
        .as_bool()
        .unwrap_or(false);
    let opts = ParseOptions {
        support_escapes: escapes,
    };
    let config = parse_with("config string", text, &opts).map_err(|e| e.to_string())?;
    match case["what"].as_str().unwrap() {
        "section_ir" => {
            let got = ir::section_ir(&config, kind(case["section"].as_str().unwrap()))
                .map_err(|e| e.to_string())?;
            if got != case["expected_ir"] {
                return Err(format!("got {got}\nwant {}", case["expected_ir"]));
            }
        }
        "first_if_condition_ir" => {
            let k = kind(case["section"].as_str().unwrap());
            let section = config.sections.iter().find(|s| s.kind == k).unwrap();
            let Some(Statement::If(i)) = section.body.first() else {
                return Err("no if statement".into());
            };
            let got = ir::condition_ir(&i.branches[0].condition);
            if got != case["expected_ir"] {
                return Err(format!("got {got}\nwant {}", case["expected_ir"]));
            }
        }
        "compile_error" => {
            for kind in [SectionKind::Input, SectionKind::Filter, SectionKind::Output] {
                if let Err(e) = ir::section_ir(&config, kind) {
                    println!("{}: {e}", case["id"]);
                    return Ok(());
                }
            }
            return Err("expected a compile error".into());
        }
        "plugin_arg_value" => {
            let want = &case["expected_value"];
            let plugin = config
                .sections
                .iter()
                .flat_map(|s| &s.body)
                .find_map(|s| match s {
                    Statement::Plugin(p) if p.name == case["plugin"] => Some(p),
                    _ => None,
                })
                .ok_or("plugin not found")?;
            let attrs = plugin.merged_attributes().map_err(|e| e.to_string())?;
            let attr = attrs
                .iter()
                .find(|a| a.name == case["arg"].as_str().unwrap())
                .ok_or("arg not found")?;
            let got = ir::value_ir(&attr.value).map_err(|e| e.to_string())?;
            if &got != want {
                return Err(format!("got {got}\nwant {want}"));
            }
        }
        other => return Err(format!("unknown case kind {other}")),
    }
    Ok(())
}

#[test]
fn config_compile_cases_match_logstash_ir() {
    let Some(data) = common::read_json("config_compile_cases.json") else {
        return;
    };
    let cases = data["cases"].as_array().unwrap();
    let mut failures = Vec::new();
    for case in cases {
        if let Err(e) = run_case(case) {
            failures.push(format!("{}: {e}", case["id"].as_str().unwrap()));
        }
    }
    assert_eq!(cases.len(), 75);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
