//! Regular expressions as Logstash users write them: Ruby's (Oniguruma) syntax and meaning,
//! in conditions (`=~`, `!~`), mutate's `gsub` and grok alike.
//!
//! A pattern is rewritten for PCRE2 by [`onig::translate`] (what differs between the two
//! flavours is listed there) and compiled once, with JIT, into a [`Regex`]. Matching then runs
//! PCRE2 on the event's text. Ruby's `^` and `$` always match at line breaks, so every pattern
//! is compiled multi-line; `.` stops at a newline unless the pattern says `(?m)` (Ruby's
//! dot-all, rewritten to PCRE2's `(?s)`). Grok, which Logstash compiles with
//! `Regexp::MULTILINE`, asks for dot-all with [`Regex::with_dotall`].

pub mod onig;

use std::borrow::Cow;
use std::fmt;

/// A compiled Ruby regex.
#[derive(Clone)]
pub struct Regex {
    source: String,
    compiled: pcre2::bytes::Regex,
    /// The original names of the translated pattern's groups `g1`, `g2`, ...
    names: Vec<String>,
}

impl fmt::Debug for Regex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/{}/", self.source)
    }
}

/// A pattern PCRE2 refuses, with its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl Regex {
    /// Compiles `source`, written in Ruby's syntax.
    pub fn new(source: &str) -> Result<Regex, Error> {
        Self::build(source, false)
    }

    /// As [`Regex::new`], with `.` matching newlines too (Ruby's `Regexp::MULTILINE`).
    pub fn with_dotall(source: &str) -> Result<Regex, Error> {
        Self::build(source, true)
    }

    fn build(source: &str, dotall: bool) -> Result<Regex, Error> {
        let translated = onig::translate(source);
        let compiled = pcre2::bytes::RegexBuilder::new()
            .utf(true)
            .multi_line(true)
            .dotall(dotall)
            .jit_if_available(true)
            .build(&translated.pattern)
            .map_err(|e| Error(e.to_string()))?;
        Ok(Regex {
            source: source.to_owned(),
            compiled,
            names: translated.names,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the pattern matches somewhere in `text`. A match PCRE2 gives up on (its
    /// backtracking limits) counts as none.
    pub fn is_match(&self, text: &str) -> bool {
        self.compiled.is_match(text.as_bytes()).unwrap_or(false)
    }

    /// Every match in `text` replaced by `with` (Ruby's `gsub`); `text` itself when nothing
    /// matches.
    pub fn replace_all<'t>(&self, text: &'t str, with: &Replacement) -> Cow<'t, str> {
        let bytes = text.as_bytes();
        let mut locs = self.compiled.capture_locations();
        let mut out = String::new();
        let (mut at, mut copied, mut matched) = (0, 0, false);
        while at <= bytes.len() {
            let Ok(Some(m)) = self.compiled.captures_read_at(&mut locs, bytes, at) else {
                break;
            };
            let (start, end) = (m.start(), m.end());
            matched = true;
            out.push_str(&text[copied..start]);
            for piece in &with.pieces {
                match piece {
                    Piece::Text(t) => out.push_str(t),
                    Piece::Group(g) => {
                        if let Some((s, e)) = locs.get(*g) {
                            out.push_str(&text[s..e]);
                        }
                    }
                    Piece::Named(name) => {
                        let group = self.names.iter().position(|n| n == name).map(|i| i + 1);
                        if let Some((s, e)) = group.and_then(|g| locs.get(g)) {
                            out.push_str(&text[s..e]);
                        }
                    }
                }
            }
            copied = end;
            at = if end > start {
                end
            } else {
                // An empty match: step over one character, as Ruby does.
                match text[end..].chars().next() {
                    Some(c) => end + c.len_utf8(),
                    None => break,
                }
            };
        }
        if !matched {
            return Cow::Borrowed(text);
        }
        out.push_str(&text[copied..]);
        Cow::Owned(out)
    }
}

/// A replacement in Ruby's syntax: `\0` or `\&` (the match), `\1`..`\9` (groups), `\k<name>`,
/// `\\` (a backslash); anything else as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Group(usize),
    Named(String),
}

impl Replacement {
    pub fn parse(text: &str) -> Replacement {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        let flush = |literal: &mut String, pieces: &mut Vec<Piece>| {
            if !literal.is_empty() {
                pieces.push(Piece::Text(std::mem::take(literal)));
            }
        };
        while let Some(c) = chars.next() {
            if c != '\\' {
                literal.push(c);
                continue;
            }
            match chars.peek().copied() {
                Some(d) if d.is_ascii_digit() => {
                    chars.next();
                    flush(&mut literal, &mut pieces);
                    pieces.push(Piece::Group(d as usize - '0' as usize));
                }
                Some('&') => {
                    chars.next();
                    flush(&mut literal, &mut pieces);
                    pieces.push(Piece::Group(0));
                }
                Some('k') => {
                    chars.next();
                    if chars.peek() == Some(&'<') {
                        chars.next();
                        let name: String = chars.by_ref().take_while(|&c| c != '>').collect();
                        flush(&mut literal, &mut pieces);
                        pieces.push(Piece::Named(name));
                    } else {
                        literal.push_str("\\k");
                    }
                }
                Some('\\') => {
                    chars.next();
                    literal.push('\\');
                }
                _ => literal.push('\\'),
            }
        }
        flush(&mut literal, &mut pieces);
        Replacement { pieces }
    }
}

/// Test input: `count` pseudo-random texts of up to 23 characters from `alphabet` (xorshift
/// from `seed`), each with the generator's state after it, for tests that want one more bit.
#[doc(hidden)]
pub fn random_texts(
    alphabet: &str,
    mut seed: u64,
    count: usize,
) -> impl Iterator<Item = (String, u64)> {
    let alphabet: Vec<char> = alphabet.chars().collect();
    (0..count).map(move |_| {
        let len = (seed % 24) as usize;
        let text = (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                alphabet[(seed % alphabet.len() as u64) as usize]
            })
            .collect();
        (text, seed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gsub(pattern: &str, text: &str, with: &str) -> String {
        Regex::new(pattern)
            .unwrap()
            .replace_all(text, &Replacement::parse(with))
            .into_owned()
    }

    /// Syntax Oniguruma takes and Rust's regex crate refused (the public configs' cases).
    #[test]
    fn ruby_syntax_compiles_with_its_meaning() {
        let m = |p: &str, t: &str| Regex::new(p).unwrap().is_match(t);
        assert!(m("^{.*}$", "{\"a\": 1}"));
        assert!(!m("^{.*}$", "[1]"));
        assert!(m(r#"^{"name": \["#, r#"{"name": ["x"]}"#));
        assert!(m("{name=", "x {name=y}"));
        assert!(m(r"\h+", "beef"));
        assert!(!m(r"^\h+$", "xyz"));
        assert!(m(r"\Afoo\z", "foo"));
        assert!(m(r"foo\Z", "foo\n"));
        assert!(m(r"(?<year>\d{4})-\k<year>", "2024-2024"));
        assert!(m(r"a++b", "aab"));
        assert!(m(r"[[:alpha:]]+", "é"));
        assert!(m(r"(?i)ERROR", "an error"));
        assert!(m(r"(?<=x)y", "xy"));
        // Ruby's ^ and $ match at every line; . stops at a newline unless (?m).
        assert!(m("^b$", "a\nb\nc"));
        assert!(!m("a.b", "a\nb"));
        assert!(m("(?m)a.b", "a\nb"));
        assert!(Regex::new("(").is_err());
    }

    #[test]
    fn gsub_replaces_with_ruby_references() {
        assert_eq!(gsub("/", "/a/b", "_"), "_a_b");
        assert_eq!(gsub(r"(\d+)-(\d+)", "11-22", r"\2/\1"), "22/11");
        assert_eq!(gsub(r"(?<k>\w+)=", "a=1 b=2", r"\k<k>:"), "a:1 b:2");
        assert_eq!(gsub("o", "foo", r"[\0\&]"), "f[oo][oo]");
        assert_eq!(gsub("x", "axb", r"\\"), r"a\b");
        assert_eq!(gsub("x", "abc", "y"), "abc");
        assert_eq!(gsub("x", "axb", "cost $5"), "acost $5b");
        assert_eq!(gsub("", "ab", "-"), "-a-b-");
        assert_eq!(gsub("é", "café é", "e"), "cafe e");
        assert_eq!(gsub("$", "a\nb", "!"), "a!\nb!");
    }
}
