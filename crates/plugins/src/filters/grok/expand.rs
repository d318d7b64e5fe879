//! Grok expansion: `%{SYNTAX}`, `%{SYNTAX:semantic}`, `%{SYNTAX:semantic:int}` and
//! `%{NAME=regex}` become (Oniguruma-flavoured) regex text, as jls-grok does it:
//! `%{X:y}` turns into `(?<X:y>...)`, `%{X}` into `(?:...)` when only named captures are kept
//! (else `(?<X>...)`), and an inline definition is added to this pattern's table before use.
//! References are expanded depth first, which is the order jls-grok's leftmost-first rewriting
//! reaches them in; a pattern that reaches itself again is a cycle and an error.

use std::collections::HashMap;

/// Where pattern names are looked up: this compile's inline definitions, then the user's
/// (`patterns_dir` files, then `pattern_definitions`), then the built-in set.
pub struct Table<'a> {
    pub builtin: &'a HashMap<&'static str, &'static str>,
    pub user: &'a HashMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpandError {
    /// `%{NAME}` names no pattern; carries the reference as written.
    Unknown(String),
    /// A pattern reaches itself again; the chain of names.
    Cycle(Vec<String>),
    /// The expansion grew past [`MAX_EXPANDED`] bytes or [`MAX_REFERENCES`] references.
    TooLarge,
}

impl std::fmt::Display for ExpandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExpandError::Unknown(r) => write!(f, "pattern {r} not defined"),
            ExpandError::Cycle(chain) => write!(
                f,
                "pattern {} refers to itself: {}",
                chain.last().map(String::as_str).unwrap_or(""),
                chain
                    .iter()
                    .map(|n| format!("%{{{n}}}"))
                    .collect::<Vec<_>>()
                    .join(" -> ")
            ),
            ExpandError::TooLarge => write!(
                f,
                "pattern expands to more than {MAX_EXPANDED} bytes or {MAX_REFERENCES} references"
            ),
        }
    }
}

pub const MAX_EXPANDED: usize = 4 << 20;
pub const MAX_REFERENCES: usize = 100_000;

/// One `%{...}` reference found in pattern text.
#[derive(Debug, PartialEq, Eq)]
struct Reference<'t> {
    /// `SYNTAX` or `SYNTAX:semantic[:type]` (jls-grok's `name`).
    name: &'t str,
    /// `SYNTAX` alone.
    pattern: &'t str,
    definition: Option<&'t str>,
    /// Byte length of the whole reference, `%{` to `}`.
    len: usize,
}

/// jls-grok's pattern-name characters: Ruby's `[A-z0-9]` (which takes in `[\]^_` and the
/// backquote too).
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_digit() || (b'A'..=b'z').contains(&b)
}

fn is_subname_byte(b: u8) -> bool {
    is_name_byte(b) || matches!(b, b'@' | b'[' | b']' | b'_' | b':' | b'.' | b'-')
}

/// The length of an inline definition starting at `s` (after the `=`): text, `\`-escapes and
/// balanced `{...}` groups, up to the first unbalanced brace. `None` if it is empty.
fn definition_len(s: &[u8]) -> Option<usize> {
    let mut i = 0;
    let mut depth = 0usize;
    while i < s.len() {
        match s[i] {
            b'\\' if i + 1 < s.len() => i += 2,
            b'{' => {
                depth += 1;
                i += 1;
            }
            b'}' if depth > 0 => {
                depth -= 1;
                i += 1;
            }
            b'}' => break,
            _ => i += 1,
        }
    }
    if depth > 0 {
        // An unclosed '{': the definition stops before it.
        let mut j = 0;
        let mut d = 0usize;
        let mut last_balanced = 0;
        while j < i {
            match s[j] {
                b'\\' if j + 1 < s.len() => j += 2,
                b'{' => {
                    if d == 0 {
                        last_balanced = j;
                    }
                    d += 1;
                    j += 1;
                }
                b'}' => {
                    d -= 1;
                    j += 1;
                }
                _ => j += 1,
            }
        }
        i = last_balanced;
    }
    (i > 0).then_some(i)
}

/// Parses a reference at the start of `s` (which begins with `%{`), as jls-grok's
/// `PATTERN_RE` would match it there.
fn reference(s: &str) -> Option<Reference<'_>> {
    let b = s.as_bytes();
    let mut i = 2;
    let name_start = i;
    while i < b.len() && is_name_byte(b[i]) {
        i += 1;
    }
    if i == name_start {
        return None;
    }
    let pattern_end = i;
    if i + 1 < b.len() && b[i] == b':' && is_subname_byte(b[i + 1]) {
        i += 1;
        while i < b.len() && is_subname_byte(b[i]) {
            i += 1;
        }
    }
    let name_end = i;
    let mut definition = None;
    if i < b.len() && b[i] == b'=' {
        if let Some(len) = definition_len(&b[i + 1..]) {
            let (ds, de) = (i + 1, i + 1 + len);
            // The text after a definition must reach a closing brace.
            if b[de..].contains(&b'}') {
                definition = Some(&s[ds..de]);
                i = de;
            }
        }
    }
    // Anything else up to the closing brace is ignored (`%{NAME:field?}` and the like).
    let close = i + b[i..].iter().position(|&c| c == b'}')?;
    Some(Reference {
        name: &s[name_start..name_end],
        pattern: &s[name_start..pattern_end],
        definition,
        len: close + 1,
    })
}

struct Expander<'a> {
    table: Table<'a>,
    inline: HashMap<String, String>,
    named_captures_only: bool,
    stack: Vec<(String, String)>,
    references: usize,
}

impl Expander<'_> {
    fn lookup(&self, name: &str) -> Option<String> {
        self.inline
            .get(name)
            .or_else(|| self.table.user.get(name))
            .cloned()
            .or_else(|| self.table.builtin.get(name).map(|s| (*s).to_owned()))
    }

    fn expand(&mut self, text: &str, out: &mut String) -> Result<(), ExpandError> {
        let mut rest = text;
        while let Some(at) = rest.find("%{") {
            let Some(r) = reference(&rest[at..]) else {
                out.push_str(&rest[..at + 2]);
                rest = &rest[at + 2..];
                continue;
            };
            out.push_str(&rest[..at]);
            self.references += 1;
            if self.references > MAX_REFERENCES || out.len() > MAX_EXPANDED {
                return Err(ExpandError::TooLarge);
            }
            if let Some(def) = r.definition {
                self.inline.insert(r.pattern.to_owned(), def.to_owned());
            }
            let Some(body) = self.lookup(r.pattern) else {
                return Err(ExpandError::Unknown(rest[at..at + r.len].to_owned()));
            };
            if self.stack.iter().any(|(n, b)| n == r.pattern && *b == body) {
                let mut chain: Vec<String> = self.stack.iter().map(|(n, _)| n.clone()).collect();
                chain.push(r.pattern.to_owned());
                let first = chain.iter().position(|n| n == r.pattern).unwrap_or(0);
                return Err(ExpandError::Cycle(chain.split_off(first)));
            }
            if self.named_captures_only && !r.name.contains(':') {
                out.push_str("(?:");
            } else {
                out.push_str("(?<");
                out.push_str(r.name);
                out.push('>');
            }
            self.stack.push((r.pattern.to_owned(), body.clone()));
            self.expand(&body, out)?;
            self.stack.pop();
            out.push(')');
            rest = &rest[at + r.len..];
        }
        out.push_str(rest);
        Ok(())
    }
}

/// Expands every reference in `pattern`.
pub fn expand(
    pattern: &str,
    table: Table<'_>,
    named_captures_only: bool,
) -> Result<String, ExpandError> {
    let mut e = Expander {
        table,
        inline: HashMap::new(),
        named_captures_only,
        stack: Vec::new(),
        references: 0,
    };
    let mut out = String::with_capacity(pattern.len() * 4);
    e.expand(pattern, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pattern: &str, defs: &[(&str, &str)], named_only: bool) -> Result<String, ExpandError> {
        let builtin: HashMap<&'static str, &'static str> = [
            ("WORD", r"\b\w+\b"),
            ("INT", "[0-9]+"),
            ("PAIR", "%{WORD:k}=%{INT:v:int}"),
        ]
        .into_iter()
        .collect();
        let user: HashMap<String, String> = defs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        expand(
            pattern,
            Table {
                builtin: &builtin,
                user: &user,
            },
            named_only,
        )
    }

    #[test]
    fn references() {
        let r = reference("%{NUMBER:[a][b]:int} rest").unwrap();
        assert_eq!(
            (r.name, r.pattern, r.definition),
            ("NUMBER:[a][b]:int", "NUMBER", None)
        );
        assert_eq!(r.len, "%{NUMBER:[a][b]:int}".len());
        let r = reference(r"%{FOO=\d{3}(?:x|y)}z").unwrap();
        assert_eq!((r.pattern, r.definition), ("FOO", Some(r"\d{3}(?:x|y)")));
        let r = reference("%{POSINT:[a][code]?}").unwrap();
        assert_eq!(r.name, "POSINT:[a][code]");
        assert_eq!(reference("%{ no}"), None);
        assert_eq!(reference("%{WORD"), None);
    }

    #[test]
    fn expansion_like_jls_grok() {
        assert_eq!(
            run("%{WORD:w} %{INT}", &[], true).unwrap(),
            r"(?<WORD:w>\b\w+\b) (?:[0-9]+)"
        );
        assert_eq!(run("%{INT}", &[], false).unwrap(), "(?<INT>[0-9]+)");
        assert_eq!(
            run("%{PAIR}", &[], true).unwrap(),
            r"(?:(?<WORD:k>\b\w+\b)=(?<INT:v:int>[0-9]+))"
        );
        assert_eq!(
            run("%{X=a+} %{X:y}", &[], true).unwrap(),
            "(?:a+) (?<X:y>a+)"
        );
        // User definitions override built-ins.
        assert_eq!(run("%{INT}", &[("INT", "1")], true).unwrap(), "(?:1)");
        // A '%' that starts no reference stays.
        assert_eq!(run("100%{ x", &[], true).unwrap(), "100%{ x");
    }

    #[test]
    fn errors() {
        assert_eq!(
            run("%{NOPE:x}", &[], true),
            Err(ExpandError::Unknown("%{NOPE:x}".into()))
        );
        let e = run("%{A}", &[("A", "x%{B}"), ("B", "%{A}")], true).unwrap_err();
        assert_eq!(
            e,
            ExpandError::Cycle(vec!["A".into(), "B".into(), "A".into()])
        );
        assert_eq!(
            e.to_string(),
            "pattern A refers to itself: %{A} -> %{B} -> %{A}"
        );
        let mut defs = vec![("P0".to_owned(), "x".to_owned())];
        for i in 1..40 {
            defs.push((format!("P{i}"), format!("%{{P{}}}%{{P{}}}", i - 1, i - 1)));
        }
        let defs: Vec<(&str, &str)> = defs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert_eq!(run("%{P39}", &defs, true), Err(ExpandError::TooLarge));
    }

    /// Arbitrary pattern text never panics the expander.
    #[test]
    fn arbitrary_text_does_not_panic() {
        let texts =
            sluice_regex::random_texts(r"%{}:=\[]WORDINTPAx@.-é ", 0x2545_f491_4f6c_dd1d, 20_000);
        for (text, seed) in texts {
            let _ = run(&text, &[("A", "%{A}x")], seed.is_multiple_of(2));
        }
    }
}
