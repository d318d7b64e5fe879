//! Conditions of `if` / `else if`: the grammar's `condition`, `expression` and `rvalue`
//! rules, and the grouping of boolean operators.
//!
//! Grouping follows Logstash's compiler (`lscl.rb`, `join_conditions`) exactly, including its
//! one-step shunting yard: `a and b or c` is `or(and(a,b),c)`, `a or b or c` is
//! `or(a,or(b,c))`. Logstash gives `xor`/`nand` no precedence at all (a condition mixing them
//! with any other operator fails to compile there); here `nand` binds like `and` and `xor`
//! like `or`.

use crate::ast::*;
use crate::cursor::{Fail, PResult};
use crate::parser::Parser;

/// What `expression` produced: a full expression or a lone operand (made `Truthy` later).
enum Parsed {
    Expr(Expr),
    Operand(Operand),
}

#[derive(Clone, Copy, PartialEq)]
enum BoolOp {
    And,
    Or,
    Xor,
    Nand,
}

impl BoolOp {
    fn precedence(self) -> u8 {
        match self {
            BoolOp::And | BoolOp::Nand => 2,
            BoolOp::Or | BoolOp::Xor => 1,
        }
    }

    fn apply(self, l: Expr, r: Expr) -> Expr {
        let (l, r) = (Box::new(l), Box::new(r));
        match self {
            BoolOp::And => Expr::And(l, r),
            BoolOp::Or => Expr::Or(l, r),
            BoolOp::Xor => Expr::Xor(l, r),
            BoolOp::Nand => Expr::Nand(l, r),
        }
    }
}

const OPERATOR_LABEL: &str = "a comparison operator (==, !=, <, >, <=, >=, =~, !~, in, not in)";
const BOOLEAN_LABEL: &str = "a boolean operator (and, or, xor, nand)";
const OPERAND_LABEL: &str = "a condition operand ([field], \"string\", number, [list], /regex/)";

impl Parser<'_> {
    /// `if (cs else_if)* (cs else)?`
    pub fn branch(&mut self) -> PResult<IfStatement> {
        let span = self.c.span();
        self.c.expect("if", None)?;
        let first = self.branch_rest(span)?;
        let mut branches = vec![first];
        loop {
            let s = self.c.pos;
            self.c.cs();
            let span = self.c.span();
            if self.c.eat("else") {
                self.c.cs();
                if self.c.eat("if") {
                    if let Ok(b) = self.branch_rest(span) {
                        branches.push(b);
                        continue;
                    }
                }
            } else {
                self.c.expected_weak("\"else\"");
            }
            self.c.pos = s;
            break;
        }
        let s = self.c.pos;
        self.c.cs();
        let mut else_body = None;
        if self.c.eat("else") {
            self.c.cs();
            match self.block() {
                Ok(body) => else_body = Some(body),
                Err(Fail) => self.c.pos = s,
            }
        } else {
            self.c.pos = s;
        }
        Ok(IfStatement {
            branches,
            else_body,
        })
    }

    /// `cs condition cs "{" cs (branch_or_plugin cs)* "}"`, after `if` / `else if`.
    fn branch_rest(&mut self, span: Span) -> PResult<Branch> {
        self.c.cs();
        self.condition_size = 0;
        let condition = self.condition()?;
        self.c.cs();
        let body = self.block()?;
        Ok(Branch {
            span,
            condition,
            body,
        })
    }

    /// `"{" cs (branch_or_plugin cs)* "}"`
    fn block(&mut self) -> PResult<Vec<Statement>> {
        let opened = self.c.pos;
        self.c.expect("{", None)?;
        self.c.cs();
        let body = self.nested("if/else blocks", opened, Self::statements)?;
        self.c.expect("}", None)?;
        Ok(body)
    }

    /// `expression (cs boolean_operator cs expression)*`
    pub fn condition(&mut self) -> PResult<Expr> {
        let first = self.expression()?;
        let mut exprs = vec![into_expr(first)];
        let mut ops = Vec::new();
        loop {
            let s = self.c.pos;
            self.c.cs();
            let op = if self.c.eat("and") {
                BoolOp::And
            } else if self.c.eat("or") {
                BoolOp::Or
            } else if self.c.eat("xor") {
                BoolOp::Xor
            } else if self.c.eat("nand") {
                BoolOp::Nand
            } else {
                self.c.expected(BOOLEAN_LABEL, None);
                self.c.pos = s;
                break;
            };
            self.c.cs();
            self.grow_condition()?;
            match self.expression() {
                Ok(e) => {
                    ops.push(op);
                    exprs.push(into_expr(e));
                }
                Err(Fail) => {
                    self.c.pos = s;
                    break;
                }
            }
        }
        Ok(join(exprs, ops))
    }

    fn expression(&mut self) -> PResult<Parsed> {
        let start = self.c.pos;
        // "(" cs condition cs ")"
        if self.c.eat("(") {
            self.c.cs();
            self.grow_condition()?;
            if let Ok(e) = self.nested("parentheses", start, Self::condition) {
                self.c.cs();
                if self.c.expect(")", None).is_ok() {
                    return Ok(Parsed::Expr(e));
                }
            }
            self.c.pos = start;
        }
        // "!" cs "(" cs condition cs ")"  /  "!" cs selector
        if self.c.eat("!") {
            self.c.cs();
            let after_bang = self.c.pos;
            if self.c.eat("(") {
                self.c.cs();
                self.grow_condition()?;
                if let Ok(e) = self.nested("parentheses", after_bang, Self::condition) {
                    self.c.cs();
                    if self.c.expect(")", None).is_ok() {
                        return Ok(Parsed::Expr(Expr::Not(Box::new(e))));
                    }
                }
                self.c.pos = after_bang;
            }
            if let Ok(field) = self.selector() {
                let truthy = Expr::Truthy(Operand::Field(field));
                return Ok(Parsed::Expr(Expr::Not(Box::new(truthy))));
            }
            self.c.pos = start;
            return Err(self.c.expected(OPERAND_LABEL, None));
        }
        let lhs = self.rvalue()?;
        let after = self.c.pos;
        // rvalue cs "in" cs rvalue
        self.c.cs();
        if self.c.eat("in") {
            self.c.cs();
            if let Ok(rhs) = self.rvalue() {
                return Ok(Parsed::Expr(Expr::In(lhs, rhs)));
            }
        }
        // rvalue cs "not " cs "in" cs rvalue
        self.c.pos = after;
        self.c.cs();
        if self.c.eat("not ") {
            self.c.cs();
            if self.c.expect("in", None).is_ok() {
                self.c.cs();
                if let Ok(rhs) = self.rvalue() {
                    return Ok(Parsed::Expr(Expr::NotIn(lhs, rhs)));
                }
            }
        }
        // rvalue cs compare_operator cs rvalue
        self.c.pos = after;
        self.c.cs();
        if let Some(op) = self.compare_operator() {
            self.c.cs();
            if let Ok(rhs) = self.rvalue() {
                return Ok(Parsed::Expr(Expr::Compare(op, lhs, rhs)));
            }
        }
        // rvalue cs ("=~" / "!~") cs (string / regexp)
        self.c.pos = after;
        self.c.cs();
        let negated = if self.c.eat("=~") {
            Some(false)
        } else if self.c.eat("!~") {
            Some(true)
        } else {
            self.c.expected(OPERATOR_LABEL, None);
            None
        };
        if let Some(negated) = negated {
            self.c.cs();
            let regex = match self.c.peek() {
                Some(b'"' | b'\'') => self.string().ok().map(|source| Regex { source }),
                Some(b'/') => self.regexp().ok(),
                _ => {
                    self.c.expected("a /regex/ or a string", None);
                    None
                }
            };
            if let Some(re) = regex {
                return Ok(Parsed::Expr(if negated {
                    Expr::NotMatch(lhs, re)
                } else {
                    Expr::Match(lhs, re)
                }));
            }
        }
        self.c.pos = after;
        Ok(Parsed::Operand(lhs))
    }

    fn compare_operator(&mut self) -> Option<CompareOp> {
        const OPS: [(&str, CompareOp); 6] = [
            ("==", CompareOp::Eq),
            ("!=", CompareOp::Ne),
            ("<=", CompareOp::Le),
            (">=", CompareOp::Ge),
            ("<", CompareOp::Lt),
            (">", CompareOp::Gt),
        ];
        OPS.iter()
            .find(|(text, _)| self.c.eat(text))
            .map(|&(_, op)| op)
    }

    /// `string / number / selector / array / method_call / regexp`
    fn rvalue(&mut self) -> PResult<Operand> {
        let start = self.c.pos;
        match self.c.peek() {
            Some(b'"' | b'\'') => Ok(Operand::String(self.string()?)),
            Some(b'-' | b'0'..=b'9') => Ok(Operand::Number(self.number()?)),
            Some(b'[') => {
                if let Ok(field) = self.selector() {
                    return Ok(Operand::Field(field));
                }
                self.c.pos = start;
                let items = self.array()?;
                items
                    .into_iter()
                    .map(value_to_operand)
                    .collect::<Option<Vec<_>>>()
                    .map(Operand::Array)
                    .ok_or_else(|| {
                        let msg = "only strings, numbers and arrays may appear in a list in a \
                                   condition"
                            .to_string();
                        self.c.special(start, start, msg)
                    })
            }
            Some(b'/') => Ok(Operand::Regex(self.regexp()?)),
            Some(b) if b.is_ascii_alphabetic() || b == b'_' => {
                // The grammar's method_call: `name(args)`. Logstash parses but cannot compile
                // it; anything else starting with a letter is not an operand at all.
                let mut p = start;
                while self
                    .c
                    .b
                    .get(p)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
                {
                    p += 1;
                }
                let name = &self.c.src[start..p];
                self.c.pos = p;
                self.c.cs();
                if p - start >= 2 && self.c.peek() == Some(b'(') {
                    let msg =
                        format!("method calls such as {name}(...) are not supported in conditions");
                    return Err(self.c.special(start, start, msg));
                }
                self.c.pos = start;
                Err(self.c.expected(OPERAND_LABEL, None))
            }
            _ => Err(self.c.expected(OPERAND_LABEL, None)),
        }
    }

    /// `("[" [^\]\[,]+ "]")+`, returned as written.
    fn selector(&mut self) -> PResult<String> {
        let start = self.c.pos;
        loop {
            let s = self.c.pos;
            if !self.c.eat("[") {
                break;
            }
            let content = self.c.pos;
            while self
                .c
                .peek()
                .is_some_and(|b| !matches!(b, b'[' | b']' | b','))
            {
                self.c.pos += 1;
            }
            if self.c.pos == content || self.c.peek() != Some(b']') {
                let at = self.c.span_at(s);
                let ctx = format!("to close the field reference at {}:{}", at.line, at.column);
                if self.c.pos == content {
                    self.c.expected("a field name", None);
                } else {
                    self.c.expected("\"]\"", Some(ctx));
                }
                self.c.pos = s;
                break;
            }
            self.c.pos += 1;
        }
        if self.c.pos == start {
            return Err(Fail);
        }
        Ok(self.c.src[start..self.c.pos].to_string())
    }

    /// `'/' ('\/' / !'/' .)* '/'`; the pattern has `\/` unescaped to `/`.
    fn regexp(&mut self) -> PResult<Regex> {
        let start = self.c.pos;
        self.c.expect("/", None)?;
        let mut source = String::new();
        let mut p = self.c.pos;
        let mut chunk = p;
        loop {
            match self.c.b.get(p) {
                None => {
                    let at = self.c.span_at(start);
                    let msg = format!("unterminated regex starting at {}:{}", at.line, at.column);
                    return Err(self.c.special(self.c.b.len(), start, msg));
                }
                Some(b'\\') if self.c.b.get(p + 1) == Some(&b'/') => {
                    source.push_str(&self.c.src[chunk..p]);
                    source.push('/');
                    p += 2;
                    chunk = p;
                }
                Some(b'/') => break,
                Some(_) => p += 1,
            }
        }
        source.push_str(&self.c.src[chunk..p]);
        self.c.pos = p + 1;
        Ok(Regex { source })
    }
}

fn into_expr(p: Parsed) -> Expr {
    match p {
        Parsed::Expr(e) => e,
        Parsed::Operand(o) => Expr::Truthy(o),
    }
}

/// Logstash's `join_conditions`: a shunting yard that pops at most one operator per step.
fn join(exprs: Vec<Expr>, ops: Vec<BoolOp>) -> Expr {
    enum Item {
        E(Expr),
        Op(BoolOp),
    }
    let mut out = Vec::new();
    let mut stack: Vec<BoolOp> = Vec::new();
    let mut exprs = exprs.into_iter();
    out.push(Item::E(
        exprs.next().expect("a condition has an expression"),
    ));
    for (op, e) in ops.into_iter().zip(exprs) {
        if let Some(&last) = stack.last() {
            if last.precedence() > op.precedence() {
                stack.pop();
                out.push(Item::Op(last));
            }
        }
        stack.push(op);
        out.push(Item::E(e));
    }
    out.extend(stack.into_iter().rev().map(Item::Op));
    let mut work: Vec<Expr> = Vec::new();
    for item in out {
        match item {
            Item::E(e) => work.push(e),
            Item::Op(op) => {
                let r = work.pop().expect("operand");
                let l = work.pop().expect("operand");
                work.push(op.apply(l, r));
            }
        }
    }
    work.pop().expect("one expression")
}

fn value_to_operand(v: Value) -> Option<Operand> {
    Some(match v {
        Value::String(s) | Value::Bareword(s) => Operand::String(s),
        Value::Number(n) => Operand::Number(n),
        Value::Array(items) => Operand::Array(
            items
                .into_iter()
                .map(value_to_operand)
                .collect::<Option<Vec<_>>>()?,
        ),
        Value::Hash(_) | Value::Plugin(_) => return None,
    })
}
