//! Conditionals compiled once from the config's expressions: field references parsed,
//! regexes built, literals turned into values. Evaluation per event walks this small tree.
//!
//! Semantics follow Logstash: a missing field is falsy and compares unequal to everything but
//! another missing field; numbers compare by value whatever their kind; `<`-style comparisons
//! between different types are false; `in` looks into arrays (element equality), strings
//! (substring) and hashes (keys); `=~` only matches strings.

use std::borrow::Cow;
use std::cmp::Ordering;

use sluice_config::{CompareOp, Expr, Number, Operand as AstOperand, Span};
use sluice_event::{Event, FieldRef, Value};

use crate::options::{error_at, ConfigError};

#[derive(Debug)]
enum Operand {
    Field(FieldRef),
    Literal(Value),
    Regex(sluice_regex::Regex),
}

#[derive(Debug)]
pub struct Condition {
    root: Node,
}

#[derive(Debug)]
enum Node {
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Xor(Box<Node>, Box<Node>),
    Nand(Box<Node>, Box<Node>),
    Not(Box<Node>),
    Compare(CompareOp, Operand, Operand),
    Match(Operand, sluice_regex::Regex, bool),
    In(Operand, Operand, bool),
    Truthy(Operand),
}

struct Compiler<'a> {
    source: &'a str,
    span: Span,
}

fn number(n: &Number) -> Value {
    match n {
        Number::Int(i) => Value::Int(*i),
        Number::Float(f) => Value::Float(*f),
    }
}

impl Compiler<'_> {
    fn err(&self, msg: String) -> ConfigError {
        error_at(self.source, self.span, msg)
    }

    fn regex(&self, src: &str) -> Result<sluice_regex::Regex, ConfigError> {
        sluice_regex::Regex::new(src)
            .map_err(|e| self.err(format!("invalid regular expression /{src}/: {e}")))
    }

    fn literal(&self, o: &AstOperand) -> Result<Value, ConfigError> {
        Ok(match o {
            AstOperand::String(s) => Value::String(s.as_str().into()),
            AstOperand::Number(n) => number(n),
            AstOperand::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|i| self.literal(i))
                    .collect::<Result<_, _>>()?,
            ),
            AstOperand::Regex(r) => Value::String(r.source.as_str().into()),
            AstOperand::Field(f) => {
                return Err(self.err(format!(
                    "field reference {f} is not allowed inside a list literal"
                )))
            }
        })
    }

    fn operand(&self, o: &AstOperand) -> Result<Operand, ConfigError> {
        Ok(match o {
            AstOperand::Field(f) => {
                Operand::Field(FieldRef::parse(f).map_err(|e| self.err(e.to_string()))?)
            }
            AstOperand::Regex(r) => Operand::Regex(self.regex(&r.source)?),
            other => Operand::Literal(self.literal(other)?),
        })
    }

    fn node(&self, e: &Expr) -> Result<Node, ConfigError> {
        let pair = |a: &Expr, b: &Expr| -> Result<(Box<Node>, Box<Node>), ConfigError> {
            Ok((Box::new(self.node(a)?), Box::new(self.node(b)?)))
        };
        Ok(match e {
            Expr::And(a, b) => {
                let (a, b) = pair(a, b)?;
                Node::And(a, b)
            }
            Expr::Or(a, b) => {
                let (a, b) = pair(a, b)?;
                Node::Or(a, b)
            }
            Expr::Xor(a, b) => {
                let (a, b) = pair(a, b)?;
                Node::Xor(a, b)
            }
            Expr::Nand(a, b) => {
                let (a, b) = pair(a, b)?;
                Node::Nand(a, b)
            }
            Expr::Not(a) => Node::Not(Box::new(self.node(a)?)),
            Expr::Compare(op, l, r) => Node::Compare(*op, self.operand(l)?, self.operand(r)?),
            Expr::Match(l, r) => Node::Match(self.operand(l)?, self.regex(&r.source)?, false),
            Expr::NotMatch(l, r) => Node::Match(self.operand(l)?, self.regex(&r.source)?, true),
            Expr::In(l, r) => Node::In(self.operand(l)?, self.operand(r)?, false),
            Expr::NotIn(l, r) => Node::In(self.operand(l)?, self.operand(r)?, true),
            Expr::Truthy(o) => Node::Truthy(self.operand(o)?),
        })
    }
}

impl Condition {
    /// Compiles an expression; errors (bad regex, bad field reference) point at `span`.
    pub fn compile(source: &str, span: Span, expr: &Expr) -> Result<Condition, ConfigError> {
        Ok(Condition {
            root: Compiler { source, span }.node(expr)?,
        })
    }

    pub fn eval(&self, event: &Event) -> bool {
        eval(&self.root, event)
    }
}

fn resolve<'a>(o: &'a Operand, e: &'a Event) -> Option<Cow<'a, Value>> {
    match o {
        Operand::Field(f) => match e.get(f) {
            Some(v) => Some(Cow::Borrowed(v)),
            None if f.is_metadata() && f.segments().len() == 1 => {
                Some(Cow::Owned(e.metadata_value()))
            }
            None => None,
        },
        Operand::Literal(v) => Some(Cow::Borrowed(v)),
        Operand::Regex(r) => Some(Cow::Owned(Value::String(r.as_str().into()))),
    }
}

fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        (x, y) if x.as_i128().is_some() && y.as_i128().is_some() => x.as_i128() == y.as_i128(),
        // A Bignum or a BigDecimal against an integer or another: exactly.
        (x, y) if x.exact_order(y).is_some() => x.exact_order(y) == Some(Ordering::Equal),
        (x, y) if x.as_f64().is_some() && y.as_f64().is_some() => x.as_f64() == y.as_f64(),
        (Value::Timestamp(t), Value::String(s)) | (Value::String(s), Value::Timestamp(t)) => {
            t.to_iso8601() == *s
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equal(a, b))
        }
        _ => a == b,
    }
}

fn order(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (x, y) if x.as_i128().is_some() && y.as_i128().is_some() => {
            Some(x.as_i128().cmp(&y.as_i128()))
        }
        (x, y) if x.exact_order(y).is_some() => x.exact_order(y),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (Value::Timestamp(x), Value::Timestamp(y)) => Some(x.cmp(y)),
        (x, y) => x.as_f64()?.partial_cmp(&y.as_f64()?),
    }
}

fn contains(needle: &Value, haystack: &Value) -> bool {
    match haystack {
        Value::Array(items) => items.iter().any(|i| equal(needle, i)),
        Value::String(s) => match needle {
            Value::String(n) => s.contains(n.as_str()),
            other => s.contains(&other.to_display_string()),
        },
        Value::Object(m) => needle.as_str().is_some_and(|k| m.contains_key(k)),
        _ => false,
    }
}

fn eval(n: &Node, e: &Event) -> bool {
    match n {
        Node::And(a, b) => eval(a, e) && eval(b, e),
        Node::Or(a, b) => eval(a, e) || eval(b, e),
        Node::Xor(a, b) => eval(a, e) ^ eval(b, e),
        Node::Nand(a, b) => !(eval(a, e) && eval(b, e)),
        Node::Not(a) => !eval(a, e),
        Node::Truthy(o) => resolve(o, e).is_some_and(|v| v.is_truthy()),
        Node::Compare(op, l, r) => {
            let (l, r) = (resolve(l, e), resolve(r, e));
            match op {
                CompareOp::Eq => match (&l, &r) {
                    (Some(a), Some(b)) => equal(a, b),
                    (None, None) => true,
                    _ => false,
                },
                CompareOp::Ne => !match (&l, &r) {
                    (Some(a), Some(b)) => equal(a, b),
                    (None, None) => true,
                    _ => false,
                },
                _ => {
                    let (Some(a), Some(b)) = (l, r) else {
                        return false;
                    };
                    let Some(ord) = order(&a, &b) else {
                        return false;
                    };
                    match op {
                        CompareOp::Lt => ord == Ordering::Less,
                        CompareOp::Gt => ord == Ordering::Greater,
                        CompareOp::Le => ord != Ordering::Greater,
                        CompareOp::Ge => ord != Ordering::Less,
                        CompareOp::Eq | CompareOp::Ne => unreachable!("handled above"),
                    }
                }
            }
        }
        Node::Match(l, re, negate) => {
            let matched = match resolve(l, e).as_deref() {
                Some(Value::String(s)) => re.is_match(s),
                _ => false,
            };
            matched != *negate
        }
        Node::In(l, r, negate) => {
            let found = match (resolve(l, e), resolve(r, e)) {
                (Some(a), Some(b)) => contains(&a, &b),
                _ => false,
            };
            found != *negate
        }
    }
}
