//! Ruby's `String#to_i` and `String#to_f`, which jls-grok applies for `:int` and `:float`.

use sluice_event::Value;

use crate::numbers::split_sign;

/// Ruby's `String#to_i`: leading blanks, a sign, digits (single `_` between digits allowed);
/// 0 when there are none. Past `i64`, a float.
pub fn ruby_to_i(s: &str) -> Value {
    let (negative, digits) =
        split_sign(s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']));
    let b = digits.as_bytes();
    let mut i = 0;
    let mut n: i64 = 0;
    let mut big: Option<f64> = None;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() {
            let d = (c - b'0') as i64;
            match &mut big {
                Some(f) => *f = *f * 10.0 + d as f64,
                None => match n.checked_mul(10).and_then(|x| x.checked_add(d)) {
                    Some(x) => n = x,
                    None => big = Some(n as f64 * 10.0 + d as f64),
                },
            }
        } else if !(c == b'_'
            && i > 0
            && b[i - 1].is_ascii_digit()
            && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            break;
        }
        i += 1;
    }
    match big {
        Some(f) => Value::Float(if negative { -f } else { f }),
        None => Value::Int(if negative { -n } else { n }),
    }
}

/// Ruby's `String#to_f`: the longest leading decimal number (`1_000.5e3`), 0.0 if none.
pub fn ruby_to_f(s: &str) -> Value {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let b = t.as_bytes();
    let mut text = String::with_capacity(b.len().min(32));
    let mut i = 0;
    if let Some(&c @ (b'-' | b'+')) = b.first() {
        text.push(c as char);
        i += 1;
    }
    let digits = |i: &mut usize, text: &mut String| -> bool {
        let start = *i;
        while *i < b.len() {
            let c = b[*i];
            if c.is_ascii_digit() {
                text.push(c as char);
            } else if !(c == b'_'
                && *i > start
                && b[*i - 1].is_ascii_digit()
                && b.get(*i + 1).is_some_and(u8::is_ascii_digit))
            {
                break;
            }
            *i += 1;
        }
        *i > start
    };
    let int_part = digits(&mut i, &mut text);
    if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
        text.push('.');
        i += 1;
        digits(&mut i, &mut text);
    } else if !int_part {
        return Value::Float(0.0);
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        let mut exp = String::from("e");
        if let Some(&c @ (b'-' | b'+')) = b.get(j) {
            exp.push(c as char);
            j += 1;
        }
        if b.get(j).is_some_and(u8::is_ascii_digit) {
            text.push_str(&exp);
            digits(&mut j, &mut text);
        }
    }
    Value::Float(text.parse().unwrap_or(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ruby_number_conversions() {
        assert_eq!(ruby_to_i("42"), Value::Int(42));
        assert_eq!(ruby_to_i(" -7abc"), Value::Int(-7));
        assert_eq!(ruby_to_i("1_000"), Value::Int(1000));
        assert_eq!(ruby_to_i("1__0"), Value::Int(1));
        assert_eq!(ruby_to_i("3.9"), Value::Int(3));
        assert_eq!(ruby_to_i(""), Value::Int(0));
        assert_eq!(ruby_to_i("x1"), Value::Int(0));
        assert_eq!(ruby_to_i("0x1A"), Value::Int(0));
        assert_eq!(ruby_to_i("99999999999999999999"), Value::Float(1e20));
        assert_eq!(ruby_to_f("0.000073"), Value::Float(0.000073));
        assert_eq!(ruby_to_f("-1"), Value::Float(-1.0));
        assert_eq!(ruby_to_f(".5"), Value::Float(0.5));
        assert_eq!(ruby_to_f("5."), Value::Float(5.0));
        assert_eq!(ruby_to_f("1e3x"), Value::Float(1000.0));
        assert_eq!(ruby_to_f("1e"), Value::Float(1.0));
        assert_eq!(ruby_to_f("1_000.5"), Value::Float(1000.5));
        assert_eq!(ruby_to_f("abc"), Value::Float(0.0));
        assert_eq!(ruby_to_f(""), Value::Float(0.0));
    }
}
