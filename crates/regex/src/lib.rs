//! Regular expressions as Logstash users write them: Ruby's (Oniguruma) syntax and meaning,
//! in conditions (`=~`, `!~`), mutate's `gsub` and grok alike.
//!
//! A pattern is rewritten for PCRE2 by [`onig::translate`] (what differs between the two
//! flavours is listed there) and compiled once into a [`Regex`]. When the rewritten pattern
//! uses only syntax that Rust's regex crate reads the same way (no `\d`/`\w`/`\s`/`\b`,
//! which are ASCII in Ruby and Unicode there; no back-references, look-around or named
//! groups), that crate runs it: its literal prefilters make common conditions (`=~ /ERROR/`)
//! several times faster (bench/regex.sh). Everything else runs on PCRE2 with JIT. Ruby's `^` and `$` always match at line breaks, so every pattern
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
    compiled: Engine,
    /// The original names of the translated pattern's groups `g1`, `g2`, ...
    names: Vec<String>,
}

impl fmt::Debug for Regex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/{}/", self.source)
    }
}

#[derive(Clone)]
enum Engine {
    Rust(regex::Regex),
    Pcre(pcre2::bytes::Regex),
}

/// `pattern` (already translated) as Rust's regex crate must read it to mean what Ruby does,
/// or `None` when it cannot: Ruby's `\d`, `\w`, `\s` and `\b` are ASCII (Rust's are
/// Unicode), so they are spelled out as ASCII classes; back-references, look-around and
/// the like do not parse there at all.
fn rust_pattern(pattern: &str) -> Option<String> {
    use regex_syntax::ast::{
        visit, AssertionKind, Ast, ClassPerl, ClassPerlKind, ClassSetItem, Span, Visitor,
    };
    /// Ruby's class, as the inside of a bracket class.
    fn ascii(c: &ClassPerl) -> &'static str {
        match c.kind {
            ClassPerlKind::Digit => "0-9",
            ClassPerlKind::Word => "0-9A-Za-z_",
            ClassPerlKind::Space => r"\t\n\x0B\x0C\r ",
        }
    }
    struct Check {
        /// (span, replacement text)
        edits: Vec<(Span, String)>,
        line_start_later: bool,
    }
    impl Visitor for Check {
        type Output = Check;
        type Err = ();
        fn finish(self) -> Result<Check, ()> {
            Ok(self)
        }
        fn visit_pre(&mut self, ast: &Ast) -> Result<(), ()> {
            match ast {
                Ast::ClassPerl(c) => {
                    let neg = if c.negated { "^" } else { "" };
                    self.edits.push((c.span, format!("[{neg}{}]", ascii(c))));
                    Ok(())
                }
                Ast::Assertion(a) => match a.kind {
                    // Rust's multi-line ^ also matches after a newline that ends the text;
                    // Ruby's (and PCRE2's) does not. Only a leading ^ of a pattern that
                    // needs a character is safe.
                    AssertionKind::StartLine => {
                        self.line_start_later |= a.span.start.offset > 0;
                        Ok(())
                    }
                    AssertionKind::EndLine | AssertionKind::StartText | AssertionKind::EndText => {
                        Ok(())
                    }
                    AssertionKind::WordBoundary => {
                        self.edits.push((a.span, r"(?-u:\b)".to_owned()));
                        Ok(())
                    }
                    AssertionKind::NotWordBoundary => {
                        self.edits.push((a.span, r"(?-u:\B)".to_owned()));
                        Ok(())
                    }
                    // Rust's \< \> and \b{...}: literals or errors in Ruby.
                    _ => Err(()),
                },
                _ => Ok(()),
            }
        }
        fn visit_class_set_item_pre(&mut self, item: &ClassSetItem) -> Result<(), ()> {
            match item {
                ClassSetItem::Perl(c) if c.negated => {
                    self.edits.push((c.span, format!("[^{}]", ascii(c))));
                    Ok(())
                }
                ClassSetItem::Perl(c) => {
                    self.edits.push((c.span, ascii(c).to_owned()));
                    Ok(())
                }
                ClassSetItem::Ascii(_) => Err(()),
                _ => Ok(()),
            }
        }
    }
    let ast = regex_syntax::ast::parse::Parser::new()
        .parse(pattern)
        .ok()?;
    let check = Check {
        edits: Vec::new(),
        line_start_later: false,
    };
    let check = visit(&ast, check).ok()?;
    if check.line_start_later {
        return None;
    }
    let mut out = String::with_capacity(pattern.len() + 16 * check.edits.len());
    let mut at = 0;
    let mut edits = check.edits;
    edits.sort_by_key(|(span, _)| span.start.offset);
    for (span, text) in edits {
        out.push_str(&pattern[at..span.start.offset]);
        out.push_str(&text);
        at = span.end.offset;
    }
    out.push_str(&pattern[at..]);
    if out.contains('^') {
        let hir = regex_syntax::ParserBuilder::new()
            .multi_line(true)
            .build()
            .parse(&out)
            .ok()?;
        if hir.properties().minimum_len().unwrap_or(0) == 0 {
            return None;
        }
    }
    Some(out)
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
        Self::build(source, false, true)
    }

    /// As [`Regex::new`], always on PCRE2 (for bench/regex.sh's comparison).
    #[doc(hidden)]
    pub fn new_on_pcre2(source: &str) -> Result<Regex, Error> {
        Self::build(source, false, false)
    }

    /// As [`Regex::new`], with `.` matching newlines too (Ruby's `Regexp::MULTILINE`).
    pub fn with_dotall(source: &str) -> Result<Regex, Error> {
        Self::build(source, true, true)
    }

    fn build(source: &str, dotall: bool, allow_rust: bool) -> Result<Regex, Error> {
        let translated = onig::translate(source);
        let rust = (allow_rust && translated.names.is_empty())
            .then(|| rust_pattern(&translated.pattern))
            .flatten()
            .and_then(|p| {
                regex::RegexBuilder::new(&p)
                    .multi_line(true)
                    .dot_matches_new_line(dotall)
                    .build()
                    .ok()
            });
        let compiled = match rust {
            Some(r) => Engine::Rust(r),
            None => Engine::Pcre(
                pcre2::bytes::RegexBuilder::new()
                    .utf(true)
                    .multi_line(true)
                    .dotall(dotall)
                    .jit_if_available(true)
                    .build(&translated.pattern)
                    .map_err(|e| Error(e.to_string()))?,
            ),
        };
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
        match &self.compiled {
            Engine::Rust(r) => r.is_match(text),
            Engine::Pcre(r) => r.is_match(text.as_bytes()).unwrap_or(false),
        }
    }

    /// Which engine runs it: `"regex"` (Rust's crate) or `"pcre2"`.
    pub fn engine(&self) -> &'static str {
        match &self.compiled {
            Engine::Rust(_) => "regex",
            Engine::Pcre(_) => "pcre2",
        }
    }

    /// Every match in `text` replaced by `with` (Ruby's `gsub`); `text` itself when nothing
    /// matches.
    pub fn replace_all<'t>(&self, text: &'t str, with: &Replacement) -> Cow<'t, str> {
        match &self.compiled {
            Engine::Rust(r) => {
                let mut out = String::new();
                let mut copied = 0;
                let mut matched = false;
                for caps in r.captures_iter(text) {
                    let m = caps.get(0).expect("group 0 is the match");
                    matched = true;
                    out.push_str(&text[copied..m.start()]);
                    with.expand(&mut out, |g| caps.get(g).map(|c| c.as_str()), |_| None);
                    copied = m.end();
                }
                if !matched {
                    return Cow::Borrowed(text);
                }
                out.push_str(&text[copied..]);
                Cow::Owned(out)
            }
            Engine::Pcre(r) => self.replace_all_pcre(r, text, with),
        }
    }

    /// The successive non-overlapping matches in `text`, with their groups (numbered as
    /// written). A match PCRE2 gives up on (its backtracking limits) ends the iteration with
    /// an `Err`.
    pub fn captures_iter<'r, 't>(
        &'r self,
        text: &'t str,
    ) -> impl Iterator<Item = Result<Captures<'t>, Error>> + use<'r, 't> {
        let mut rust = match &self.compiled {
            Engine::Rust(r) => Some(r.captures_iter(text)),
            Engine::Pcre(_) => None,
        };
        let mut pcre = match &self.compiled {
            Engine::Pcre(r) => Some((r, r.capture_locations())),
            Engine::Rust(_) => None,
        };
        let mut at = 0;
        let mut done = false;
        std::iter::from_fn(move || {
            if let Some(it) = rust.as_mut() {
                let caps = it.next()?;
                let groups = (0..caps.len())
                    .map(|g| caps.get(g).map(|m| (m.start(), m.end())))
                    .collect();
                return Some(Ok(Captures { text, groups }));
            }
            let (re, locs) = pcre.as_mut()?;
            if done || at > text.len() {
                return None;
            }
            match re.captures_read_at(locs, text.as_bytes(), at) {
                Ok(Some(m)) => {
                    let (start, end) = (m.start(), m.end());
                    at = if end > start {
                        end
                    } else {
                        // An empty match: step over one character, as Ruby does.
                        match text[end..].chars().next() {
                            Some(c) => end + c.len_utf8(),
                            None => {
                                done = true;
                                end
                            }
                        }
                    };
                    let groups = (0..locs.len()).map(|g| locs.get(g)).collect();
                    Some(Ok(Captures { text, groups }))
                }
                Ok(None) => None,
                Err(e) => {
                    done = true;
                    Some(Err(Error(e.to_string())))
                }
            }
        })
    }

    fn replace_all_pcre<'t>(
        &self,
        re: &pcre2::bytes::Regex,
        text: &'t str,
        with: &Replacement,
    ) -> Cow<'t, str> {
        let bytes = text.as_bytes();
        let mut locs = re.capture_locations();
        let mut out = String::new();
        let (mut at, mut copied, mut matched) = (0, 0, false);
        while at <= bytes.len() {
            let Ok(Some(m)) = re.captures_read_at(&mut locs, bytes, at) else {
                break;
            };
            let (start, end) = (m.start(), m.end());
            matched = true;
            out.push_str(&text[copied..start]);
            let group = |g: usize| locs.get(g).map(|(s, e)| &text[s..e]);
            let named = |name: &str| {
                let g = self.names.iter().position(|n| n == name)? + 1;
                locs.get(g).map(|(s, e)| &text[s..e])
            };
            with.expand(&mut out, group, named);
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

/// One match and its groups (group 0 is the whole match).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captures<'t> {
    text: &'t str,
    groups: Vec<Option<(usize, usize)>>,
}

impl<'t> Captures<'t> {
    /// The text group `g` matched, if it took part.
    pub fn get(&self, g: usize) -> Option<&'t str> {
        let (start, end) = (*self.groups.get(g)?)?;
        Some(&self.text[start..end])
    }

    /// How many groups, group 0 included.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
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
    /// Appends the replacement for one match: `group(n)` and `named(name)` give the groups'
    /// texts (none when a group did not take part).
    fn expand<'a>(
        &self,
        out: &mut String,
        group: impl Fn(usize) -> Option<&'a str>,
        named: impl Fn(&str) -> Option<&'a str>,
    ) {
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Group(g) => out.push_str(group(*g).unwrap_or_default()),
                Piece::Named(name) => out.push_str(named(name).unwrap_or_default()),
            }
        }
    }

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
    fn captures_iter_on_both_engines() {
        for (pattern, engine) in [
            (r"(\w+)=(?!x)(\d+)?", "pcre2"),
            ("([a-z]+)=([0-9]+)?", "regex"),
        ] {
            let re = Regex::new(pattern).unwrap();
            assert_eq!(re.engine(), engine, "{pattern}");
            let found: Vec<(Option<&str>, Option<&str>)> = re
                .captures_iter("a=1 bb= c=33")
                .map(|c| {
                    let c = c.unwrap();
                    assert_eq!(c.len(), 3);
                    (c.get(1), c.get(2))
                })
                .collect();
            assert_eq!(
                found,
                vec![
                    (Some("a"), Some("1")),
                    (Some("bb"), None),
                    (Some("c"), Some("33"))
                ],
                "{pattern}"
            );
        }
        let empty = Regex::new(r"(?=b)|x\h").unwrap();
        assert_eq!(empty.captures_iter("abab").count(), 2);
    }

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
        // No line starts after a newline that ends the text.
        assert!(!m("^$", "abc\n"));
        assert!(m("^$", "abc\n\nx"));
        assert!(!m("a.b", "a\nb"));
        assert!(m("(?m)a.b", "a\nb"));
        assert!(Regex::new("(").is_err());
    }

    /// Where Rust's regex crate runs a pattern, it agrees with PCRE2 on it: matches and
    /// replacements over random texts.
    #[test]
    fn both_engines_agree_where_the_fast_one_runs() {
        let patterns = [
            "ERROR",
            "^a.c$",
            "(?i)ab|cd",
            "a[b-d]+e?",
            r"\.\*",
            "x{2,3}",
            "^$",
            "(a)(b)?",
            r"[^ab]",
            "(?m)a.b",
            r"\Aab\z",
            "é+",
            "[[:alpha:]]",
            r"\d+",
            r"\w+",
            r"\s",
            r"\bx",
            r"\Bx",
            r"\D\W\S",
            r"[\d\s]",
            r"[^\w.]",
            r"[\D]",
            r"\w+é",
        ];
        let with = Replacement::parse(r"<\0|\1>");
        for p in patterns {
            let fast = Regex::new(p).unwrap();
            if p != "^$" {
                assert_eq!(fast.engine(), "regex", "{p}");
            }
            let slow = Regex::build(p, false, false).unwrap();
            assert_eq!(slow.engine(), "pcre2");
            for (text, _) in random_texts("abcdeéxX.*\n 7_\t٣\u{a0}", 0x51ed_2701_a3b4_c5d6, 3_000)
            {
                assert_eq!(
                    fast.is_match(&text),
                    slow.is_match(&text),
                    "{p:?} on {text:?}"
                );
                assert_eq!(
                    fast.replace_all(&text, &with),
                    slow.replace_all(&text, &with),
                    "{p:?} on {text:?}"
                );
            }
        }
        assert_eq!(Regex::new("ERROR").unwrap().engine(), "regex");
        for ruby_only in [r"(?<n>a)", r"(?<=a)b", r"\<a", "^$", "a|^b"] {
            assert_eq!(
                Regex::new(ruby_only).unwrap().engine(),
                "pcre2",
                "{ruby_only}"
            );
        }
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
