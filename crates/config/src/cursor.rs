//! Low-level scanning for the parser: position, whitespace/comments, literals, and the
//! "furthest failure" bookkeeping that turns a failed parse into one precise message.
//!
//! The grammar is a PEG (like Logstash's treetop grammar): alternatives are tried in order
//! and a failed alternative rewinds. A rule that fails calls [`Cursor::expected`], which
//! remembers what was expected at the furthest position reached. If the whole parse fails,
//! that furthest position is what the user did wrong.

use crate::{ParseError, Span};

/// Marker for a failed rule; the details live in the cursor's furthest-failure record.
#[derive(Debug)]
pub(crate) struct Fail;

pub(crate) type PResult<T> = Result<T, Fail>;

struct Expectation {
    label: String,
    context: Option<String>,
    /// Dropped from the message when anything else was expected at the same place.
    weak: bool,
}

pub(crate) struct Cursor<'a> {
    pub src: &'a str,
    pub b: &'a [u8],
    pub pos: usize,
    line_starts: Vec<usize>,
    furthest: usize,
    expected: Vec<Expectation>,
    /// A specific message for the furthest failure (e.g. an unterminated string), and the
    /// position to report it at.
    special: Option<(usize, String)>,
    /// A failure that ends the parse wherever it happened (a nesting limit), with the
    /// position to report it at: no alternative is tried after it.
    fatal: Option<(usize, String)>,
}

impl<'a> Cursor<'a> {
    pub fn new(src: &'a str) -> Self {
        let mut line_starts = vec![0];
        for (i, c) in src.bytes().enumerate() {
            if c == b'\n' {
                line_starts.push(i + 1);
            }
        }
        Cursor {
            src,
            b: src.as_bytes(),
            pos: 0,
            line_starts,
            furthest: 0,
            expected: Vec::new(),
            special: None,
            fatal: None,
        }
    }

    pub fn span_at(&self, pos: usize) -> Span {
        let line = match self.line_starts.binary_search(&pos) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line];
        let column = self.src[start..pos].chars().count() + 1;
        Span {
            line: line as u32 + 1,
            column: column as u32,
        }
    }

    pub fn span(&self) -> Span {
        self.span_at(self.pos)
    }

    pub fn eof(&self) -> bool {
        self.pos >= self.b.len()
    }

    pub fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    pub fn peek_at(&self, offset: usize) -> Option<u8> {
        self.b.get(self.pos + offset).copied()
    }

    pub fn starts_with(&self, lit: &str) -> bool {
        self.b[self.pos..].starts_with(lit.as_bytes())
    }

    /// Consumes `lit` if it comes next (a prefix match, as in the PEG grammar).
    pub fn eat(&mut self, lit: &str) -> bool {
        if self.starts_with(lit) {
            self.pos += lit.len();
            true
        } else {
            false
        }
    }

    /// Consumes `lit` or records it as expected here.
    pub fn expect(&mut self, lit: &str, context: Option<String>) -> PResult<()> {
        if self.eat(lit) {
            Ok(())
        } else {
            Err(self.expected(format!("\"{lit}\""), context))
        }
    }

    /// Records that `label` was expected at the current position.
    pub fn expected(&mut self, label: impl Into<String>, context: Option<String>) -> Fail {
        self.record(self.pos, label.into(), context, false)
    }

    /// Like [`expected`](Self::expected), but only shown if nothing else was expected here.
    pub fn expected_weak(&mut self, label: &str) -> Fail {
        self.record(self.pos, label.to_string(), None, true)
    }

    fn record(&mut self, pos: usize, label: String, context: Option<String>, weak: bool) -> Fail {
        if pos > self.furthest {
            self.furthest = pos;
            self.expected.clear();
            self.special = None;
        }
        if pos == self.furthest
            && !self
                .expected
                .iter()
                .any(|e| e.label == label && e.context == context)
        {
            self.expected.push(Expectation {
                label,
                context,
                weak,
            });
        }
        Fail
    }

    /// A failure with its own message, found at `at` and reported at `report`.
    pub fn special(&mut self, at: usize, report: usize, message: String) -> Fail {
        if at > self.furthest {
            self.furthest = at;
            self.expected.clear();
            self.special = None;
        }
        if at == self.furthest && self.special.is_none() {
            self.special = Some((report, message));
        }
        Fail
    }

    /// A failure that ends the whole parse (see `fatal`), reported at `at`; the first one is
    /// reported.
    pub fn fatal(&mut self, at: usize, message: String) -> Fail {
        if self.fatal.is_none() {
            self.fatal = Some((at, message));
        }
        Fail
    }

    pub fn is_fatal(&self) -> bool {
        self.fatal.is_some()
    }

    /// Skips whitespace and `#` comments (the grammar's `cs`).
    pub fn cs(&mut self) {
        loop {
            while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.peek() {
                self.pos += 1;
            }
            if self.peek() != Some(b'#') {
                return;
            }
            // A comment runs to the end of the line, which must be "\n", "\r\n" or the end.
            let mut p = self.pos + 1;
            while p < self.b.len() && self.b[p] != b'\n' && self.b[p] != b'\r' {
                p += 1;
            }
            if p == self.b.len() || self.b[p] == b'\n' {
                self.pos = (p + 1).min(self.b.len());
            } else if self.b.get(p + 1) == Some(&b'\n') {
                self.pos = p + 2;
            } else {
                return; // a lone "\r" ends neither a comment nor the grammar's line
            }
        }
    }

    /// Consumes at least one whitespace character, or returns false.
    pub fn ws1(&mut self) -> bool {
        let start = self.pos;
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.peek() {
            self.pos += 1;
        }
        self.pos > start
    }

    /// Describes what is at `pos` for "found ..." in messages.
    fn found_at(&self, pos: usize) -> String {
        let rest = &self.src[pos..];
        let Some(first) = rest.chars().next() else {
            return "end of input".to_string();
        };
        let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        let is_op = |c: char| "=!<>~".contains(c);
        let text: String = if is_word(first) {
            rest.chars().take_while(|&c| is_word(c)).take(40).collect()
        } else if is_op(first) {
            rest.chars().take_while(|&c| is_op(c)).take(3).collect()
        } else {
            first.to_string()
        };
        match first {
            '\n' | '\r' => "end of line".to_string(),
            _ => format!("{text:?}"),
        }
    }

    /// The error for a failed parse, from the furthest failure recorded.
    pub fn error(&self, source_name: &str) -> ParseError {
        if let Some((at, message)) = &self.fatal {
            return ParseError::at(source_name, self.span_at(*at), message.clone());
        }
        if let Some((report, message)) = &self.special {
            return ParseError::at(source_name, self.span_at(*report), message.clone());
        }
        let strong: Vec<&Expectation> = self.expected.iter().filter(|e| !e.weak).collect();
        let shown: Vec<&Expectation> = if strong.is_empty() {
            self.expected.iter().collect()
        } else {
            strong
        };
        let mut message = String::from("expected ");
        match shown.len() {
            0 => message.push_str("something else"),
            1 => message.push_str(&shown[0].label),
            _ => {
                message.push_str("one of ");
                let labels: Vec<&str> = shown.iter().map(|e| e.label.as_str()).collect();
                message.push_str(&labels.join(", "));
            }
        }
        if let Some(ctx) = &shown.first().and_then(|e| e.context.clone()) {
            if shown.iter().all(|e| e.context.as_ref() == Some(ctx)) {
                message.push(' ');
                message.push_str(ctx);
            }
        }
        message.push_str(", found ");
        message.push_str(&self.found_at(self.furthest));
        ParseError::at(source_name, self.span_at(self.furthest), message)
    }
}
