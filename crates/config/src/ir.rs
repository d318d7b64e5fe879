//! A neutral JSON rendering of what Logstash's compiler (`lscl.rb` + `org.logstash.config.ir.DSL`)
//! builds from a config, to compare our reading of a config with Logstash's:
//! `{"plugin","type","args"}`, `{"sequence":[..]}` (filter), `{"parallel":[..]}`
//! (input/output), `{"if","then","else"}`, `{"noop":true}`, `{"and"|"or"|"xor"|"nand"|"=="|
//! "!="|"<"|">"|"<="|">="|"in"|"=~"|"!~":[l,r]}`, `{"not":x}`, `{"truthy":x}`, `{"value":v}`,
//! `{"field":"[ref]"}`, `{"regex":"src"}`.

use crate::ast::*;
use crate::ParseError;
use serde_json::{json, Map, Value as Json};

/// All sections of `kind`, concatenated and composed as Logstash composes them.
pub fn section_ir(config: &Config, kind: SectionKind) -> Result<Json, ParseError> {
    let body: Vec<&Statement> = config
        .sections
        .iter()
        .filter(|s| s.kind == kind)
        .flat_map(|s| &s.body)
        .collect();
    compose(&body, kind)
}

fn compose(body: &[&Statement], kind: SectionKind) -> Result<Json, ParseError> {
    let mut items = body
        .iter()
        .map(|s| statement_ir(s, kind))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(match items.len() {
        0 => json!({"noop": true}),
        1 => items.remove(0),
        _ if kind == SectionKind::Filter => json!({ "sequence": items }),
        _ => json!({ "parallel": items }),
    })
}

/// One statement: a plugin (with merged options) or a nested if/else tree.
pub fn statement_ir(statement: &Statement, kind: SectionKind) -> Result<Json, ParseError> {
    match statement {
        Statement::Plugin(p) => plugin_ir(p, kind.as_str()),
        Statement::If(i) => {
            let mut acc = match &i.else_body {
                Some(body) => Some(compose(&body.iter().collect::<Vec<_>>(), kind)?),
                None => None,
            };
            for branch in i.branches.iter().rev() {
                let then = compose(&branch.body.iter().collect::<Vec<_>>(), kind)?;
                acc = Some(json!({
                    "if": condition_ir(&branch.condition),
                    "then": then,
                    "else": acc.unwrap_or_else(|| json!({"noop": true})),
                }));
            }
            Ok(acc.unwrap_or_else(|| json!({"noop": true})))
        }
    }
}

/// `{"plugin", "type", "args"}`; `plugin_type` is the section kind, or `"codec"`.
pub fn plugin_ir(plugin: &Plugin, plugin_type: &str) -> Result<Json, ParseError> {
    let mut args = Map::new();
    for attr in plugin.merged_attributes()? {
        args.insert(attr.name, value_ir(&attr.value)?);
    }
    Ok(json!({"plugin": plugin.name, "type": plugin_type, "args": args}))
}

/// An option's value as plain JSON (codec plugins as `{"plugin", "type": "codec", ...}`).
pub fn value_ir(value: &Value) -> Result<Json, ParseError> {
    Ok(match value {
        Value::String(s) | Value::Bareword(s) => Json::String(s.clone()),
        Value::Number(n) => number_ir(*n),
        Value::Array(items) => Json::Array(items.iter().map(value_ir).collect::<Result<_, _>>()?),
        Value::Hash(entries) => {
            let mut map = Map::new();
            for e in entries {
                map.insert(e.key.clone(), value_ir(&e.value)?);
            }
            Json::Object(map)
        }
        Value::Plugin(p) => plugin_ir(p, "codec")?,
    })
}

fn number_ir(n: Number) -> Json {
    match n {
        Number::Int(i) => json!(i),
        Number::Float(f) => json!(f),
    }
}

/// A condition as `{"and": [l, r]}`, `{"==": [l, r]}`, `{"truthy": x}`, ...
pub fn condition_ir(expr: &Expr) -> Json {
    let pair = |op: &str, l: Json, r: Json| json!({ op: [l, r] });
    match expr {
        Expr::And(l, r) => pair("and", condition_ir(l), condition_ir(r)),
        Expr::Or(l, r) => pair("or", condition_ir(l), condition_ir(r)),
        Expr::Xor(l, r) => pair("xor", condition_ir(l), condition_ir(r)),
        Expr::Nand(l, r) => pair("nand", condition_ir(l), condition_ir(r)),
        Expr::Not(x) => json!({"not": condition_ir(x)}),
        Expr::Compare(op, l, r) => pair(op.as_str(), operand_ir(l), operand_ir(r)),
        Expr::Match(o, re) => pair("=~", operand_ir(o), json!({"regex": re.source})),
        Expr::NotMatch(o, re) => pair("!~", operand_ir(o), json!({"regex": re.source})),
        Expr::In(l, r) => pair("in", operand_ir(l), operand_ir(r)),
        Expr::NotIn(l, r) => json!({"not": pair("in", operand_ir(l), operand_ir(r))}),
        Expr::Truthy(o) => json!({"truthy": operand_ir(o)}),
    }
}

fn operand_ir(o: &Operand) -> Json {
    match o {
        Operand::Field(f) => json!({"field": f}),
        Operand::Regex(re) => json!({"regex": re.source}),
        other => json!({"value": operand_value(other)}),
    }
}

fn operand_value(o: &Operand) -> Json {
    match o {
        Operand::String(s) | Operand::Field(s) => Json::String(s.clone()),
        Operand::Number(n) => number_ir(*n),
        Operand::Regex(re) => Json::String(re.source.clone()),
        Operand::Array(items) => Json::Array(items.iter().map(operand_value).collect()),
    }
}
