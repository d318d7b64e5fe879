//! `${VAR}` / `${VAR:default}` substitution, as Logstash's `SubstitutionVariables`:
//! placeholders match `\$\{([a-zA-Z_.][a-zA-Z0-9_.]*)(:([^}]*))?\}`; anything else (e.g.
//! `${1x}`) is left as written. Applied to string and bareword values (attribute values,
//! hash values, array elements, codec plugins) and to the string operands of conditions
//! (not to regexes, as Logstash's `ExpressionSubstitution`). Hash keys are left alone.

use crate::ast::*;
use crate::ParseError;

type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

impl Config {
    /// Replaces `${VAR}` and `${VAR:default}` using `lookup` (e.g. the environment). An
    /// undefined variable without a default is an error at the value's attribute (or
    /// condition).
    pub fn substitute_env(&mut self, lookup: Lookup<'_>) -> Result<(), ParseError> {
        for section in &mut self.sections {
            statements(&mut section.body, &section.source, lookup)?;
        }
        Ok(())
    }
}

/// Substitutes the placeholders in one string; `Err` carries the message.
pub fn substitute_vars(text: &str, lookup: Lookup<'_>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match placeholder(after) {
            Some((name, default, len)) => {
                let value = lookup(name).or_else(|| default.map(str::to_string));
                match value {
                    Some(v) => out.push_str(&v),
                    None => {
                        let written = &rest[i..i + 2 + len];
                        return Err(format!(
                            "Cannot evaluate \"{written}\": variable \"{name}\" is not defined \
                             and has no default value"
                        ));
                    }
                }
                rest = &after[len..];
            }
            None => {
                out.push('$');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Parses `NAME}` or `NAME:default}` after `${`: (name, default, length including `}`).
fn placeholder(s: &str) -> Option<(&str, Option<&str>, usize)> {
    let b = s.as_bytes();
    let first = *b.first()?;
    if !(first.is_ascii_alphabetic() || first == b'_' || first == b'.') {
        return None;
    }
    let mut n = 1;
    while b
        .get(n)
        .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
    {
        n += 1;
    }
    let name = &s[..n];
    match b.get(n)? {
        b'}' => Some((name, None, n + 1)),
        b':' => {
            let end = s[n + 1..].find('}')? + n + 1;
            Some((name, Some(&s[n + 1..end]), end + 1))
        }
        _ => None,
    }
}

fn statements(body: &mut [Statement], source: &str, lookup: Lookup<'_>) -> Result<(), ParseError> {
    for statement in body {
        match statement {
            Statement::Plugin(p) => plugin(p, lookup)?,
            Statement::If(i) => {
                for branch in &mut i.branches {
                    expr(&mut branch.condition, source, branch.span, lookup)?;
                    statements(&mut branch.body, source, lookup)?;
                }
                if let Some(body) = &mut i.else_body {
                    statements(body, source, lookup)?;
                }
            }
        }
    }
    Ok(())
}

fn plugin(p: &mut Plugin, lookup: Lookup<'_>) -> Result<(), ParseError> {
    for attr in &mut p.attributes {
        value(&mut attr.value, &p.source, attr.span, lookup)?;
    }
    Ok(())
}

fn value(v: &mut Value, source: &str, span: Span, lookup: Lookup<'_>) -> Result<(), ParseError> {
    match v {
        Value::String(s) | Value::Bareword(s) => text(s, source, span, lookup),
        Value::Number(_) => Ok(()),
        Value::Array(items) => items
            .iter_mut()
            .try_for_each(|item| value(item, source, span, lookup)),
        Value::Hash(entries) => entries
            .iter_mut()
            .try_for_each(|e| value(&mut e.value, source, e.span, lookup)),
        Value::Plugin(p) => plugin(p, lookup),
    }
}

fn expr(e: &mut Expr, source: &str, span: Span, lookup: Lookup<'_>) -> Result<(), ParseError> {
    match e {
        Expr::And(l, r) | Expr::Or(l, r) | Expr::Xor(l, r) | Expr::Nand(l, r) => {
            expr(l, source, span, lookup)?;
            expr(r, source, span, lookup)
        }
        Expr::Not(x) => expr(x, source, span, lookup),
        Expr::Compare(_, l, r) | Expr::In(l, r) | Expr::NotIn(l, r) => {
            operand(l, source, span, lookup)?;
            operand(r, source, span, lookup)
        }
        Expr::Match(o, _) | Expr::NotMatch(o, _) | Expr::Truthy(o) => {
            operand(o, source, span, lookup)
        }
    }
}

fn operand(
    o: &mut Operand,
    source: &str,
    span: Span,
    lookup: Lookup<'_>,
) -> Result<(), ParseError> {
    match o {
        Operand::String(s) => text(s, source, span, lookup),
        Operand::Array(items) => items
            .iter_mut()
            .try_for_each(|item| operand(item, source, span, lookup)),
        Operand::Field(_) | Operand::Number(_) | Operand::Regex(_) => Ok(()),
    }
}

fn text(s: &mut String, source: &str, span: Span, lookup: Lookup<'_>) -> Result<(), ParseError> {
    if s.contains("${") {
        *s = substitute_vars(s, lookup).map_err(|m| ParseError::at(source, span, m))?;
    }
    Ok(())
}
