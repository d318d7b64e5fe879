//! Splitting Joda and java.time patterns into runs of one pattern letter and literal text.

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Token {
    Letters(char, usize),
    Literal(String),
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
            let mut n = 1;
            while i + n < chars.len() && chars[i + n] == c {
                n += 1;
            }
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
