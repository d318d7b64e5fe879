//! Splitting Joda and java.time patterns into runs of one pattern letter and literal text.

use super::parse::PatternError;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Token {
    Letters(char, usize),
    Literal(String),
}

/// How many times `chars[i]` repeats from `i` on (a pattern letter's count).
fn run_length(chars: &[char], i: usize) -> usize {
    chars[i..].iter().take_while(|&&c| c == chars[i]).count()
}

/// Writes a formatter's `tokens`: literals as they are, each run of `n` letters `c` through
/// `field(c, n, out)`.
pub(super) fn render(tokens: &[Token], out: &mut String, field: impl Fn(char, usize, &mut String)) {
    for t in tokens {
        match t {
            Token::Literal(s) => out.push_str(s),
            Token::Letters(c, n) => field(*c, *n, out),
        }
    }
}

/// Splits a pattern as Joda's `DateTimeFormat.parseToken` does: runs of one letter, and runs
/// of other text (quoted parts included, `''` being a quote).
pub(super) fn tokenize(pattern: &str) -> Vec<Token> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() {
            let n = run_length(&chars, i);
            tokens.push(Token::Letters(c, n));
            i += n;
        } else {
            let mut lit = String::new();
            let mut quoted = false;
            while i < chars.len() {
                let c = chars[i];
                if c == '\'' {
                    if i + 1 < chars.len() && chars[i + 1] == '\'' {
                        lit.push('\'');
                        i += 2;
                        continue;
                    }
                    quoted = !quoted;
                } else if !quoted && c.is_ascii_alphabetic() {
                    break;
                } else {
                    lit.push(c);
                }
                i += 1;
            }
            tokens.push(Token::Literal(lit));
        }
    }
    tokens
}

/// Splits a `java.time.format.DateTimeFormatter` pattern as `DateTimeFormatterBuilder.appendPattern`
/// does. Unlike Joda, a quote must be closed, `{`, `}` and `#` are reserved, and `[`…`]` mark
/// optional sections; those are dropped here, since every field of an instant is there to print.
pub(super) fn tokenize_java(pattern: &str) -> Result<Vec<Token>, PatternError> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut tokens = Vec::new();
    let mut literal = String::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() {
            let n = run_length(&chars, i);
            if !literal.is_empty() {
                tokens.push(Token::Literal(std::mem::take(&mut literal)));
            }
            tokens.push(Token::Letters(c, n));
            i += n;
            continue;
        }
        match c {
            '\'' => {
                let start = i;
                i += 1;
                if chars.get(i) == Some(&'\'') {
                    literal.push('\'');
                } else {
                    loop {
                        match chars.get(i) {
                            None => {
                                return Err(PatternError(format!(
                                    "the date pattern {pattern:?} ends with an incomplete quoted \
                                     literal (from position {start})"
                                )))
                            }
                            Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                                literal.push('\'');
                                i += 1;
                            }
                            Some('\'') => break,
                            Some(&q) => literal.push(q),
                        }
                        i += 1;
                    }
                }
            }
            '[' => depth += 1,
            ']' if depth == 0 => {
                return Err(PatternError(format!(
                    "the date pattern {pattern:?} has a ']' without a '[' before it"
                )))
            }
            ']' => depth -= 1,
            '{' | '}' | '#' => {
                return Err(PatternError(format!(
                    "the date pattern {pattern:?} uses the reserved character {c:?}"
                )))
            }
            other => literal.push(other),
        }
        i += 1;
    }
    if !literal.is_empty() {
        tokens.push(Token::Literal(literal));
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_patterns_split_and_check_their_syntax() {
        assert_eq!(
            tokenize_java("YYYY-'W'ww[ 'x''s']").unwrap(),
            vec![
                Token::Letters('Y', 4),
                Token::Literal("-W".into()),
                Token::Letters('w', 2),
                Token::Literal(" x's".into()),
            ]
        );
        assert_eq!(
            tokenize_java("''HH").unwrap(),
            vec![Token::Literal("'".into()), Token::Letters('H', 2)]
        );
        assert!(tokenize_java("yyyy 'open").is_err());
        assert!(tokenize_java("yyyy]").is_err());
        assert!(tokenize_java("yyyy{").is_err());
        assert!(tokenize_java("#").is_err());
    }
}
