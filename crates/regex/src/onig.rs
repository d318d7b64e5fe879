//! Oniguruma (Ruby syntax, as Logstash compiles every regex with) to PCRE2.
//!
//! The two flavours agree on most syntax (atomic groups, lookbehind, possessive `*+ ++ ?+`,
//! `\A \z \Z \b`, POSIX brackets); what differs and is rewritten here:
//! - group names: Ruby takes any name (`NUMBER:[a][b]:int`), PCRE2 only words of at most 32
//!   bytes, so every named group becomes `g1`, `g2`, ... and the original names are returned in
//!   group order;
//! - with named groups present, Ruby's plain `(...)` does not capture: `(?n)` does the same;
//! - `\h`/`\H` are hex digits (PCRE2: horizontal space), `\uHHHH` and `\u{H}` are code points;
//! - nested classes (`[[[:alnum:]]_.-]` in UNIXPATH) are unions: flattened;
//! - POSIX brackets are Unicode-aware in Ruby (`[[:alnum:]]` matches `é`): alnum, alpha,
//!   digit, lower, upper and word become Unicode properties;
//! - inline `(?m)` is Ruby's dot-matches-newline, PCRE2's `(?s)`; Ruby's charset flags
//!   (`a`, `d`, `u`) are dropped;
//! - `{,n}` is `{0,n}`, and `X{n,m}+` is a repetition of `X{n,m}`, not possessive;
//! - a `{` that starts no valid interval is a literal.
//!
//! The whole pattern is compiled with PCRE2's DOTALL (Ruby's `Regexp::MULTILINE`, which
//! grok sets) and MULTILINE (Ruby's `^`/`$` always match at line boundaries).

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translated {
    pub pattern: String,
    /// The original name of group `i + 1`.
    pub names: Vec<String>,
}

struct State<'a> {
    src: &'a str,
    pos: usize,
    out: String,
    names: Vec<String>,
    /// Output offsets where the open groups start.
    groups: Vec<usize>,
    /// Output offset where the last complete atom starts (what a quantifier applies to).
    last_atom: Option<usize>,
    /// What follows that atom so far.
    quant: Quant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quant {
    /// Nothing yet.
    None,
    /// `*`, `+` or `?`.
    Simple,
    /// `{n,m}`, `{n,}`.
    Range,
    /// `{n}`.
    Exact,
    /// A quantifier with its lazy/possessive modifier.
    Modified,
}

fn posix_unicode(name: &str) -> Option<&'static str> {
    Some(match name {
        "alnum" => r"\p{L}\p{M}\p{Nd}",
        "alpha" => r"\p{L}\p{M}",
        "digit" => r"\p{Nd}",
        "lower" => r"\p{Ll}",
        "upper" => r"\p{Lu}",
        "word" => r"\p{L}\p{M}\p{Nd}\p{Pc}",
        _ => return None,
    })
}

impl<'a> State<'a> {
    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    /// An escape (the `\` already consumed), in or out of a class.
    fn escape(&mut self, in_class: bool) {
        let Some(c) = self.bump() else {
            self.out.push_str(r"\\");
            return;
        };
        match c {
            'h' => self.out.push_str(if in_class {
                "[:xdigit:]"
            } else {
                "[[:xdigit:]]"
            }),
            'H' => self.out.push_str(if in_class {
                "[:^xdigit:]"
            } else {
                "[^[:xdigit:]]"
            }),
            'u' => {
                let rest = self.rest();
                if let Some(inner) = rest.strip_prefix('{') {
                    if let Some(end) = inner.find('}') {
                        let hex = inner[..end].split_whitespace().next().unwrap_or("");
                        self.out.push_str(&format!(r"\x{{{hex}}}"));
                        self.pos += end + 2;
                        return;
                    }
                }
                let hex: String = rest.chars().take(4).collect();
                if hex.len() == 4 && hex.chars().all(|c| c.is_ascii_hexdigit()) {
                    self.out.push_str(&format!(r"\x{{{hex}}}"));
                    self.pos += 4;
                } else {
                    self.out.push_str(r"\u");
                }
            }
            'k' | 'g' if !in_class && matches!(self.peek(), Some('<') | Some('\'')) => {
                let close = if self.peek() == Some('<') { '>' } else { '\'' };
                let inner = &self.rest()[1..];
                match inner.find(close) {
                    Some(end) => {
                        let name = &inner[..end];
                        // The last group so named before this point.
                        let target = self.names.iter().rposition(|n| n == name);
                        self.out.push('\\');
                        self.out.push(c);
                        match target {
                            Some(i) => self.out.push_str(&format!("<g{}>", i + 1)),
                            None => {
                                self.out.push('<');
                                self.out.push_str(name);
                                self.out.push('>');
                            }
                        }
                        self.pos += end + 2;
                    }
                    None => {
                        self.out.push('\\');
                        self.out.push(c);
                    }
                }
            }
            c => {
                self.out.push('\\');
                self.out.push(c);
            }
        }
    }

    /// A character class; the opening `[` is consumed. Nested plain classes are flattened
    /// into this one.
    fn class(&mut self) {
        self.out.push('[');
        if self.peek() == Some('^') {
            self.bump();
            self.out.push('^');
        }
        if self.peek() == Some(']') {
            self.bump();
            self.out.push_str(r"\]");
        }
        // Each nested level: whether its closing bracket is emitted.
        let mut levels: Vec<bool> = vec![true];
        while let Some(c) = self.bump() {
            match c {
                '\\' => self.escape(true),
                '[' if self.peek() == Some(':') => {
                    let rest = self.rest();
                    match rest[1..].find(":]").map(|e| e + 1) {
                        Some(end)
                            if end > 1
                                && rest[1..end]
                                    .chars()
                                    .all(|c| c.is_ascii_alphabetic() || c == '^') =>
                        {
                            let name = &rest[1..end];
                            match posix_unicode(name) {
                                Some(props) => self.out.push_str(props),
                                None => {
                                    self.out.push('[');
                                    self.out.push_str(&rest[..end + 2]);
                                }
                            }
                            self.pos += end + 2;
                        }
                        _ => self.out.push_str(r"\["),
                    }
                }
                '[' => {
                    if self.peek() == Some('^') {
                        // A negated class inside a class has no PCRE2 spelling; keep it and
                        // let PCRE2 read it as it will.
                        self.out.push('[');
                        levels.push(true);
                    } else {
                        levels.push(false);
                    }
                }
                ']' => {
                    let emit = levels.pop().unwrap_or(true);
                    if emit {
                        self.out.push(']');
                    }
                    if levels.is_empty() {
                        return;
                    }
                }
                c => self.out.push(c),
            }
        }
    }

    /// A `(` has been consumed.
    fn group(&mut self, start: usize) {
        self.groups.push(start);
        if self.peek() != Some('?') {
            self.out.push('(');
            return;
        }
        let rest = self.rest();
        // Named groups: (?<name>, (?'name', (?P<name>.
        let named = if let Some(r) = rest.strip_prefix("?<") {
            (!r.starts_with('=') && !r.starts_with('!')).then_some((2, '>'))
        } else if rest.starts_with("?'") {
            Some((2, '\''))
        } else if rest.starts_with("?P<") {
            Some((3, '>'))
        } else {
            None
        };
        if let Some((skip, close)) = named {
            if let Some(end) = rest[skip..].find(close) {
                let name = &rest[skip..skip + end];
                self.names.push(name.to_owned());
                self.out.push_str(&format!("(?<g{}>", self.names.len()));
                self.pos += skip + end + 1;
                return;
            }
        }
        if rest.starts_with("?#") {
            let end = rest.find(')').map_or(rest.len(), |e| e + 1);
            self.out.push_str(&rest[..end]);
            self.pos += end;
            self.groups.pop();
            return;
        }
        // Option groups: (?imx-imx) and (?imx-imx:...).
        let flags_len = rest[1..]
            .find(|c: char| !matches!(c, 'i' | 'm' | 'x' | 'a' | 'd' | 'u' | '-'))
            .unwrap_or(rest.len() - 1);
        let after = rest[1 + flags_len..].chars().next();
        if flags_len > 0 && matches!(after, Some(')') | Some(':')) {
            self.out.push_str("(?");
            for f in rest[1..1 + flags_len].chars() {
                match f {
                    'm' => self.out.push('s'),
                    'a' | 'd' | 'u' => {}
                    f => self.out.push(f),
                }
            }
            if self.out.ends_with('-') {
                self.out.pop();
            }
            self.pos += 1 + flags_len;
            if after == Some(')') {
                // A bare option setting is no group.
                self.bump();
                if self.out.ends_with("(?") {
                    self.out.truncate(self.out.len() - 2);
                } else {
                    self.out.push(')');
                }
                self.groups.pop();
            } else {
                self.bump();
                self.out.push(':');
            }
            return;
        }
        self.out.push('(');
    }

    /// Wraps the last atom and its quantifier in a group, so that another quantifier can
    /// apply to the whole (Ruby's nested repetition, `a?*` = `(?:a?)*`).
    fn wrap_quantified(&mut self) {
        if let Some(at) = self.last_atom {
            self.out.insert_str(at, "(?:");
            self.out.push(')');
        }
    }

    /// `*`, `+` or `?` after an atom or a quantifier.
    fn quantifier(&mut self, c: char) {
        if self.last_atom.is_none() {
            self.out.push(c);
            return;
        }
        match (self.quant, c) {
            (Quant::None, _) => self.quant = Quant::Simple,
            // Lazy and possessive modifiers.
            (Quant::Simple, '?' | '+') | (Quant::Range, '?') => self.quant = Quant::Modified,
            _ => {
                self.wrap_quantified();
                self.quant = Quant::Simple;
            }
        }
        self.out.push(c);
    }

    /// `{` at the current position (consumed): an interval if it reads as one.
    fn interval(&mut self) {
        let rest = self.rest();
        let Some(end) = rest.find('}') else {
            self.out.push_str(r"\{");
            return;
        };
        let body = &rest[..end];
        let (lo, hi) = match body.split_once(',') {
            Some((lo, hi)) => (lo, Some(hi)),
            None => (body, None),
        };
        let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
        let valid =
            digits(lo) && hi.is_none_or(digits) && !(lo.is_empty() && hi.is_none_or(str::is_empty));
        if !valid || self.last_atom.is_none() {
            self.out.push_str(r"\{");
            return;
        }
        self.pos += end + 1;
        let lo = if lo.is_empty() { "0" } else { lo };
        if self.quant != Quant::None {
            self.wrap_quantified();
        }
        match hi {
            Some(hi) => {
                self.out.push_str(&format!("{{{lo},{hi}}}"));
                self.quant = Quant::Range;
            }
            None => {
                // Ruby: `a{n}?` is `(?:a{n})?`, not a lazy `{n}`.
                self.out.push_str(&format!("{{{lo}}}"));
                self.quant = Quant::Exact;
            }
        }
    }

    fn run(&mut self) {
        while let Some(c) = self.bump() {
            let start = self.out.len();
            match c {
                '*' | '+' | '?' => {
                    self.quantifier(c);
                    continue;
                }
                '{' => {
                    self.interval();
                    continue;
                }
                '\\' => {
                    self.escape(false);
                    self.last_atom = Some(start);
                }
                '[' => {
                    self.class();
                    self.last_atom = Some(start);
                }
                '(' => {
                    self.group(start);
                    self.last_atom = None;
                }
                ')' => {
                    self.out.push(')');
                    self.last_atom = self.groups.pop();
                }
                '|' => {
                    self.out.push('|');
                    self.last_atom = None;
                }
                c => {
                    self.out.push(c);
                    self.last_atom = Some(start);
                }
            }
            self.quant = Quant::None;
        }
    }
}

/// Rewrites an Oniguruma (Ruby) regex for PCRE2.
pub fn translate(src: &str) -> Translated {
    let mut st = State {
        src,
        pos: 0,
        out: String::with_capacity(src.len() + 16),
        names: Vec::new(),
        groups: Vec::new(),
        last_atom: None,
        quant: Quant::None,
    };
    st.run();
    let pattern = if st.names.is_empty() {
        st.out
    } else {
        format!("(?n){}", st.out)
    };
    Translated {
        pattern,
        names: st.names,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> String {
        translate(s).pattern
    }

    #[test]
    fn named_groups_are_renamed_and_plain_groups_stop_capturing() {
        let r = translate(r"(?<NUMBER:[a][b]:int>\d+)(x)(?<y>z)(?<=q)(?<!r)");
        assert_eq!(r.pattern, r"(?n)(?<g1>\d+)(x)(?<g2>z)(?<=q)(?<!r)");
        assert_eq!(r.names, vec!["NUMBER:[a][b]:int", "y"]);
        assert_eq!(t("(a)"), "(a)");
        assert_eq!(t(r"(?<a>x)\k<a>"), r"(?n)(?<g1>x)\k<g1>");
    }

    #[test]
    fn flavour_differences() {
        assert_eq!(t(r"\h{32}"), "[[:xdigit:]]{32}");
        assert_eq!(t(r"[\h:]"), "[[:xdigit:]:]");
        assert_eq!(t(r"\u00e9"), r"\x{00e9}");
        assert_eq!(
            t(r"(/[[[:alnum:]]_%!$@:.,+~-]*)+"),
            r"(/[\p{L}\p{M}\p{Nd}_%!$@:.,+~-]*)+"
        );
        assert_eq!(t("[[:punct:]]"), "[[:punct:]]");
        assert_eq!(t("(?m)a.b"), "(?s)a.b");
        assert_eq!(t("(?mi:a)"), "(?si:a)");
        assert_eq!(t("(?u)a"), "a");
        assert_eq!(t("a{,3}"), "a{0,3}");
        assert_eq!(t("a{2,3}+"), "(?:a{2,3})+");
        assert_eq!(t("(ab){2}+"), "(?:(ab){2})+");
        assert_eq!(t("a++b*+c*?d+?e??"), "a++b*+c*?d+?e??");
        assert_eq!(t(".?*x"), "(?:.?)*x");
        assert_eq!(t("a{2}?b{1,2}?"), "(?:a{2})?b{1,2}?");
        assert_eq!(t("a*{2}"), "(?:a*){2}");
        assert_eq!(t("{%{x}}"), r"\{%\{x}}");
        assert_eq!(t("a{x}"), r"a\{x}");
        assert_eq!(t("[]a]"), r"[\]a]");
    }

    /// Arbitrary pattern text never panics the translator (PCRE2 may still reject it).
    #[test]
    fn arbitrary_text_does_not_panic() {
        let alphabet = r"()[]{}<>?*+\|^$.:=!'#,-amhuHkgPx0123é ";
        for (text, _) in crate::random_texts(alphabet, 0x9e37_79b9_7f4a_7c15, 20_000) {
            let out = translate(&text);
            let _ = pcre2::bytes::RegexBuilder::new()
                .utf(true)
                .build(&out.pattern);
        }
    }
}
