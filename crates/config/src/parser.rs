//! The LSCL grammar: sections, plugins, attributes and values. Conditions are in
//! `condition.rs`. The rules follow Logstash's treetop grammar (`lscl_grammar.treetop`) so
//! that exactly the same texts are accepted, including its quirks:
//! - barewords are `[A-Za-z_][A-Za-z0-9_]+` (at least two characters, no `-` or `.`),
//! - attributes must be separated by whitespace, hash entries need not be,
//! - arrays allow no trailing comma,
//! - a quoted string ends at the first quote not preceded by a backslash.
//!
//! Limits (Logstash has none, and a deep enough config overflows its stack): blocks,
//! parentheses, arrays, hashes and plugin values nest at most [`MAX_NESTING`] levels, and one
//! condition holds at most [`MAX_CONDITION_SIZE`] boolean operators, parentheses and `!`s, so
//! that every recursive walk of the parsed config (compiling, evaluating, dropping) stays
//! shallow. Beyond them the parse stops with an error at the offending position.

use crate::ast::*;
use crate::cursor::{Cursor, Fail, PResult};
use crate::{ParseError, ParseOptions};

/// Levels of blocks, parentheses, arrays, hashes and plugin values.
pub const MAX_NESTING: usize = 100;
/// Boolean operators, parentheses and `!`s in one condition (real configs have up to ~100).
pub const MAX_CONDITION_SIZE: usize = 1000;

pub(crate) struct Parser<'a> {
    pub c: Cursor<'a>,
    pub opts: ParseOptions,
    pub source: &'a str,
    depth: usize,
    /// Size of the condition being parsed.
    pub condition_size: usize,
}

pub(crate) fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

impl<'a> Parser<'a> {
    pub fn new(source: &'a str, text: &'a str, opts: &ParseOptions) -> Self {
        Parser {
            c: Cursor::new(text),
            opts: opts.clone(),
            source,
            depth: 0,
            condition_size: 0,
        }
    }

    /// Runs `rule` one nesting level deeper (the level opened at `opened`); past
    /// [`MAX_NESTING`], fails the whole parse.
    pub fn nested<T>(
        &mut self,
        what: &str,
        opened: usize,
        rule: impl FnOnce(&mut Self) -> PResult<T>,
    ) -> PResult<T> {
        if self.c.is_fatal() {
            return Err(Fail);
        }
        if self.depth >= MAX_NESTING {
            return Err(self.c.fatal(opened, format!(
                "{what} nested more than {MAX_NESTING} levels deep (blocks, parentheses, arrays, hashes and plugin values count); sluice stops here"
            )));
        }
        self.depth += 1;
        let r = rule(self);
        self.depth -= 1;
        r
    }

    /// Counts one boolean operator, parenthesis or `!` of the current condition.
    pub fn grow_condition(&mut self) -> PResult<()> {
        self.condition_size += 1;
        if self.condition_size > MAX_CONDITION_SIZE {
            return Err(self.c.fatal(self.c.pos, format!(
                "this condition has more than {MAX_CONDITION_SIZE} boolean operators, parentheses and \"!\"s; split it"
            )));
        }
        Ok(())
    }

    /// `cs condition cs EOF`: a condition on its own, as written after `if` (`sluice tap
    /// --when`).
    pub fn lone_condition(&mut self) -> Result<Expr, ParseError> {
        self.c.cs();
        let Ok(e) = self.condition() else {
            return Err(self.c.error(self.source));
        };
        self.c.cs();
        if !self.c.eof() {
            self.c.expected_weak("end of input");
            return Err(self.c.error(self.source));
        }
        Ok(e)
    }

    /// `config := (cs plugin_section)* cs EOF`
    pub fn config(&mut self) -> Result<Vec<Section>, ParseError> {
        let mut sections = Vec::new();
        loop {
            let save = self.c.pos;
            self.c.cs();
            match self.plugin_section() {
                Ok(s) => sections.push(s),
                Err(Fail) => {
                    self.c.pos = save;
                    break;
                }
            }
        }
        self.c.cs();
        if !self.c.eof() {
            self.c.expected_weak("end of input");
            return Err(self.c.error(self.source));
        }
        Ok(sections)
    }

    fn plugin_section(&mut self) -> PResult<Section> {
        let span = self.c.span();
        let kind = if self.c.eat("input") {
            SectionKind::Input
        } else if self.c.eat("filter") {
            SectionKind::Filter
        } else if self.c.eat("output") {
            SectionKind::Output
        } else {
            self.c.expected("\"input\"", None);
            self.c.expected("\"filter\"", None);
            return Err(self.c.expected("\"output\"", None));
        };
        self.c.cs();
        self.c
            .expect("{", Some(format!("after \"{}\"", kind.as_str())))?;
        self.c.cs();
        let body = self.statements()?;
        if !self.c.eat("}") {
            let label = format!(
                "\"}}\" (closing \"{}\" at {}:{})",
                kind.as_str(),
                span.line,
                span.column
            );
            return Err(self.c.expected(label, None));
        }
        Ok(Section {
            kind,
            span,
            body,
            source: self.source.to_string(),
        })
    }

    /// `(branch_or_plugin cs)*`, stopping before whatever does not start a statement.
    pub fn statements(&mut self) -> PResult<Vec<Statement>> {
        let mut body = Vec::new();
        loop {
            let save = self.c.pos;
            match self.branch_or_plugin() {
                Ok(s) => {
                    body.push(s);
                    self.c.cs();
                }
                Err(Fail) => {
                    self.c.pos = save;
                    return Ok(body);
                }
            }
        }
    }

    fn branch_or_plugin(&mut self) -> PResult<Statement> {
        let start = self.c.pos;
        let is_if = self.c.starts_with("if");
        if is_if {
            if let Ok(b) = self.branch() {
                return Ok(Statement::If(b));
            }
            self.c.pos = start;
        }
        let result = self.plugin("a plugin name").map(Statement::Plugin);
        if result.is_err() && !is_if {
            self.c.pos = start;
            self.c.expected("\"if\"", None);
        }
        result
    }

    /// `name cs "{" cs (attribute (whitespace cs attribute)*)? cs "}"`
    fn plugin(&mut self, label: &str) -> PResult<Plugin> {
        let span = self.c.span();
        let name = self.name(label)?;
        self.c.cs();
        self.c
            .expect("{", Some(format!("after plugin name {name:?}")))?;
        self.plugin_rest(name, span)
    }

    /// The plugin body after its `{`.
    fn plugin_rest(&mut self, name: String, span: Span) -> PResult<Plugin> {
        self.c.cs();
        let mut attributes = Vec::new();
        let save = self.c.pos;
        match self.attribute() {
            Ok(a) => {
                attributes.push(a);
                loop {
                    let s = self.c.pos;
                    if !self.c.ws1() {
                        break;
                    }
                    self.c.cs();
                    match self.attribute() {
                        Ok(a) => attributes.push(a),
                        Err(Fail) => {
                            self.c.pos = s;
                            break;
                        }
                    }
                }
            }
            Err(Fail) => self.c.pos = save,
        }
        self.c.cs();
        if !self.c.eat("}") {
            let label = format!("\"}}\" (closing {name:?} at {}:{})", span.line, span.column);
            return Err(self.c.expected(label, None));
        }
        Ok(Plugin {
            name,
            span,
            attributes,
            source: self.source.to_string(),
        })
    }

    /// `[A-Za-z0-9_-]+` or a quoted string (its raw content).
    fn name(&mut self, label: &str) -> PResult<String> {
        match self.c.peek() {
            Some(b) if is_name_byte(b) => {
                let start = self.c.pos;
                while self.c.peek().is_some_and(is_name_byte) {
                    self.c.pos += 1;
                }
                Ok(self.c.src[start..self.c.pos].to_string())
            }
            Some(b'"' | b'\'') => self.raw_string(),
            _ => Err(self.c.expected(label, None)),
        }
    }

    /// `name cs "=>" cs value`
    fn attribute(&mut self) -> PResult<Attribute> {
        let span = self.c.span();
        let name = self.name("an attribute name")?;
        self.c.cs();
        self.c
            .expect("=>", Some(format!("after attribute name {name:?}")))?;
        self.c.cs();
        let value = self.value()?;
        Ok(Attribute { name, span, value })
    }

    /// `plugin / bareword / string / number / array / hash`
    pub fn value(&mut self) -> PResult<Value> {
        let start = self.c.pos;
        if let Some(p) = self.try_plugin_value()? {
            return Ok(Value::Plugin(p));
        }
        self.c.pos = start;
        match self.c.peek() {
            Some(b) if b.is_ascii_alphabetic() || b == b'_' => {
                if self
                    .c
                    .peek_at(1)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
                {
                    let start = self.c.pos;
                    self.c.pos += 1;
                    while self
                        .c
                        .peek()
                        .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
                    {
                        self.c.pos += 1;
                    }
                    return Ok(Value::Bareword(self.c.src[start..self.c.pos].to_string()));
                }
                Err(self.c.expected(
                    "a value (a bareword needs at least two characters; quote it)",
                    None,
                ))
            }
            Some(b'"' | b'\'') => Ok(Value::String(self.string()?)),
            Some(b'-' | b'0'..=b'9') => Ok(Value::Number(self.number()?)),
            Some(b'[') => Ok(Value::Array(self.nested("arrays", start, Self::array)?)),
            Some(b'{') => Ok(Value::Hash(self.nested("hashes", start, Self::hash)?)),
            _ => Err(self.c.expected("a value", None)),
        }
    }

    /// A plugin in value position (`codec => json { ... }`), if a name is followed by `{`.
    fn try_plugin_value(&mut self) -> PResult<Option<Plugin>> {
        let span = self.c.span();
        let name = match self.c.peek() {
            Some(b) if is_name_byte(b) => self.name("")?,
            Some(b'"' | b'\'') => match self.raw_string() {
                Ok(n) => n,
                Err(Fail) => return Ok(None),
            },
            _ => return Ok(None),
        };
        self.c.cs();
        if !self.c.eat("{") {
            return Ok(None);
        }
        let opened = self.c.pos - 1;
        self.nested("plugin values", opened, |p| p.plugin_rest(name, span))
            .map(Some)
    }

    /// A quoted string's raw content (no escape processing), cursor after the closing quote.
    pub fn raw_string(&mut self) -> PResult<String> {
        let start = self.c.pos;
        let q = self.c.b[start];
        let mut p = start + 1;
        loop {
            match self.c.b.get(p) {
                None => {
                    let at = self.c.span_at(start);
                    let msg = format!("unterminated string starting at {}:{}", at.line, at.column);
                    return Err(self.c.special(self.c.b.len(), start, msg));
                }
                Some(b'\\') if self.c.b.get(p + 1) == Some(&q) => p += 2,
                Some(&b) if b == q => break,
                Some(_) => p += 1,
            }
        }
        let raw = self.c.src[start + 1..p].to_string();
        self.c.pos = p + 1;
        Ok(raw)
    }

    /// A quoted string's value: raw, or with escapes processed if `support_escapes` is on.
    pub fn string(&mut self) -> PResult<String> {
        let raw = self.raw_string()?;
        Ok(if self.opts.support_escapes {
            process_escapes(&raw)
        } else {
            raw
        })
    }

    /// `-?[0-9]+(\.[0-9]*)?`, converted like Ruby's `Integer()` / `Float()`.
    pub fn number(&mut self) -> PResult<Number> {
        let start = self.c.pos;
        let mut p = start;
        if self.c.b.get(p) == Some(&b'-') {
            p += 1;
        }
        let digits = p;
        while self.c.b.get(p).is_some_and(u8::is_ascii_digit) {
            p += 1;
        }
        if p == digits {
            return Err(self.c.expected("a value", None));
        }
        let mut is_float = false;
        if self.c.b.get(p) == Some(&b'.') {
            is_float = true;
            p += 1;
            while self.c.b.get(p).is_some_and(u8::is_ascii_digit) {
                p += 1;
            }
        }
        let text = &self.c.src[start..p];
        let number = if is_float {
            let t = text.strip_suffix('.').unwrap_or(text);
            Number::Float(t.parse().unwrap_or(f64::NAN))
        } else {
            let neg = text.starts_with('-');
            let body = &text[digits - start..];
            // Ruby's Integer("010") is octal, like Logstash's config compiler.
            let (radix, body) = if body.len() > 1 && body.starts_with('0') {
                (8, &body[1..])
            } else {
                (10, body)
            };
            match i64::from_str_radix(body, radix) {
                Ok(v) => Number::Int(if neg { -v } else { v }),
                Err(_) if radix == 8 && body.bytes().any(|b| b == b'8' || b == b'9') => {
                    let msg = format!(
                        "invalid number {text:?}: a leading 0 makes it octal (as in Logstash), \
                         and octal digits are 0-7"
                    );
                    return Err(self.c.special(start, start, msg));
                }
                Err(_) => Number::Float(text.parse().unwrap_or(f64::NAN)),
            }
        };
        self.c.pos = p;
        Ok(number)
    }

    /// `"[" cs (value (cs "," cs value)*)? cs "]"`
    pub fn array(&mut self) -> PResult<Vec<Value>> {
        self.c.expect("[", None)?;
        self.c.cs();
        let mut items = Vec::new();
        let save = self.c.pos;
        match self.value() {
            Ok(v) => {
                items.push(v);
                loop {
                    let s = self.c.pos;
                    self.c.cs();
                    if !self.c.eat(",") {
                        self.c.expected("\",\"", None);
                        self.c.pos = s;
                        break;
                    }
                    self.c.cs();
                    match self.value() {
                        Ok(v) => items.push(v),
                        Err(Fail) => {
                            self.c.pos = s;
                            break;
                        }
                    }
                }
            }
            Err(Fail) => self.c.pos = save,
        }
        self.c.cs();
        self.c.expect("]", None)?;
        Ok(items)
    }

    /// `"{" cs (hashentry (cs hashentry)*)? cs "}"`
    fn hash(&mut self) -> PResult<Vec<HashEntry>> {
        self.c.expect("{", None)?;
        self.c.cs();
        let mut entries = Vec::new();
        let save = self.c.pos;
        match self.hash_entry() {
            Ok(e) => {
                entries.push(e);
                loop {
                    let s = self.c.pos;
                    self.c.cs();
                    match self.hash_entry() {
                        Ok(e) => entries.push(e),
                        Err(Fail) => {
                            self.c.pos = s;
                            break;
                        }
                    }
                }
            }
            Err(Fail) => self.c.pos = save,
        }
        self.c.cs();
        self.c.expect("}", None)?;
        Ok(entries)
    }

    /// `(number / bareword / string) cs "=>" cs value`
    fn hash_entry(&mut self) -> PResult<HashEntry> {
        let span = self.c.span();
        let start = self.c.pos;
        let key = match self.c.peek() {
            Some(b'-' | b'0'..=b'9') => match self.number()? {
                Number::Int(i) => i.to_string(),
                Number::Float(f) => f.to_string(),
            },
            Some(b)
                if (b.is_ascii_alphabetic() || b == b'_')
                    && self
                        .c
                        .peek_at(1)
                        .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') =>
            {
                while self
                    .c
                    .peek()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
                {
                    self.c.pos += 1;
                }
                self.c.src[start..self.c.pos].to_string()
            }
            Some(b'"' | b'\'') => self.string()?,
            Some(b) if b.is_ascii_alphabetic() || b == b'_' => {
                let label = "a hash key (a bareword key needs at least two characters; quote it)";
                return Err(self.c.expected(label, None));
            }
            _ => return Err(self.c.expected("a hash key", None)),
        };
        let raw_key = self.c.src[start..self.c.pos].to_string();
        self.c.cs();
        let shown = if raw_key.starts_with(['"', '\'']) {
            raw_key.clone()
        } else {
            format!("{raw_key:?}")
        };
        self.c
            .expect("=>", Some(format!("after hash key {shown}")))?;
        self.c.cs();
        let value = self.value()?;
        Ok(HashEntry {
            key,
            span,
            value,
            raw_key,
        })
    }
}

/// Logstash's `config.support_escapes` processing: `\\ \" \' \n \r \t \0`; any other
/// backslash sequence is kept as written.
pub(crate) fn process_escapes(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek().copied() {
            Some(n @ ('"' | '\'' | '\\')) => {
                out.push(n);
                chars.next();
            }
            Some('n') => {
                out.push('\n');
                chars.next();
            }
            Some('r') => {
                out.push('\r');
                chars.next();
            }
            Some('t') => {
                out.push('\t');
                chars.next();
            }
            Some('0') => {
                out.push('\0');
                chars.next();
            }
            Some(n) if n != '\n' => {
                out.push('\\');
                out.push(n);
                chars.next();
            }
            _ => out.push('\\'),
        }
    }
    out
}
