//! Numbers read from text the way Logstash's plugins read them, exactly: Java's and Ruby's
//! `BigDecimal` (dissect's `->int`/`->float`, mutate's `convert`), Ruby's strict `Float()` and
//! `Integer()` for hexadecimal (`0x7b`, `-0x1.8p1`). Integers come out as
//! [`Value::integer`], so values past 64 bits stay exact, and past 128 bits as a
//! [`Value::Decimal`] of their digits (Ruby's Bignum); dissect's BigDecimal floats keep their
//! digits the same way when a double cannot. And [`hex`], bytes written as lower-case
//! hexadecimal (digests, signatures, trace ids).

use sluice_event::Value;

/// `bytes` as lower-case hexadecimal, two digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.extend_from_slice(&[DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 15)]]);
    }
    String::from_utf8(out).expect("hexadecimal digits are ASCII")
}

/// `text` without its leading `+` or `-`, and whether that was a `-`.
pub fn split_sign(text: &str) -> (bool, &str) {
    match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    }
}

/// `text` after its `0x` / `0X`.
fn strip_hex_prefix(text: &str) -> Option<&str> {
    text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"))
}

/// Ruby's rule for `_` in a run of digits: each one stands alone between two digits.
fn underscores_between(s: &str) -> bool {
    !s.starts_with('_') && !s.ends_with('_') && !s.contains("__")
}

/// An exponent's text: an optional sign, then decimal digits only.
fn is_exponent(text: &str) -> bool {
    let digits = split_sign(text).1;
    !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit())
}

/// A decimal number as written: `digits × 10^exp`, sign apart.
#[derive(Debug, Clone, PartialEq)]
pub struct Decimal {
    negative: bool,
    /// ASCII digits without leading zeros (empty for zero).
    digits: String,
    exp: i64,
}

/// The most digits an integer conversion writes out (Ruby would go on; a text such as
/// `1e999999` would make a megabyte of zeros).
pub const MAX_DIGITS: i64 = 4096;

/// Which language's `BigDecimal` syntax to accept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Syntax {
    /// `java.math.BigDecimal(String)`: sign, digits, point, digits, `e`/`E` exponent.
    Java,
    /// Ruby's `BigDecimal()`: the same, plus `_` between digits and a `d`/`D` exponent.
    Ruby,
}

impl Decimal {
    pub fn parse(text: &str, syntax: Syntax) -> Option<Decimal> {
        let (negative, text) = split_sign(text);
        let b = text.as_bytes();
        let mut i = 0;
        let mut digits = String::new();
        let mut exp: i64 = 0;
        let mut seen_digit = false;
        let mut seen_point = false;
        while i < b.len() {
            let c = b[i];
            if c.is_ascii_digit() {
                seen_digit = true;
                if !(digits.is_empty() && c == b'0') {
                    digits.push(c as char);
                }
                if seen_point {
                    exp -= 1;
                }
            } else if c == b'_' && syntax == Syntax::Ruby {
                let between = i > 0
                    && b[i - 1].is_ascii_digit()
                    && b.get(i + 1).is_some_and(u8::is_ascii_digit);
                if !between {
                    return None;
                }
            } else if c == b'.' && !seen_point {
                seen_point = true;
            } else {
                break;
            }
            i += 1;
        }
        if !seen_digit {
            return None;
        }
        if i < b.len() {
            let marker = b[i];
            let is_exp = matches!(marker, b'e' | b'E')
                || (syntax == Syntax::Ruby && matches!(marker, b'd' | b'D'));
            if !is_exp {
                return None;
            }
            let rest = &text[i + 1..];
            if !is_exponent(rest) {
                return None;
            }
            exp = exp.checked_add(rest.parse::<i64>().ok()?)?;
        }
        if digits.is_empty() {
            exp = 0;
        }
        Some(Decimal {
            negative,
            digits,
            exp,
        })
    }

    /// The integer part (truncated toward zero): exact at any size (past 128 bits a
    /// [`Value::Decimal`] of its digits, as Ruby's Bignum or Java's BigInteger), `None` only
    /// past [`MAX_DIGITS`] digits.
    pub fn to_integer(&self) -> Option<Value> {
        let keep = self.digits.len() as i64 + self.exp.min(0);
        if keep <= 0 {
            return Some(Value::Int(0));
        }
        let zeros = self.exp.max(0);
        if keep + zeros > MAX_DIGITS {
            return None;
        }
        let small = (|| {
            let mut n: i128 = 0;
            for c in self.digits[..keep as usize].bytes() {
                n = n.checked_mul(10)?.checked_add((c - b'0') as i128)?;
            }
            for _ in 0..zeros {
                n = n.checked_mul(10)?;
            }
            Some(Value::integer(if self.negative { -n } else { n }))
        })();
        small.or_else(|| {
            let mut text = String::with_capacity((keep + zeros) as usize + 1);
            if self.negative {
                text.push('-');
            }
            text.push_str(&self.digits[..keep as usize]);
            text.extend(std::iter::repeat_n('0', zeros as usize));
            Value::decimal(&text)
        })
    }

    /// The number as Logstash keeps a BigDecimal: the nearest `f64` when that holds its 15
    /// significant digits or fewer (and neither overflows nor underflows to zero), else
    /// exactly, as Java's `BigDecimal.toString` writes it (`43947404257507186289.345324`,
    /// `1.23E+40`): a [`Value::Decimal`], or an integer for digits alone that fit in 128 bits
    /// (written the same as the BigDecimal).
    pub fn to_exact(&self) -> Value {
        let f = self.to_f64();
        if self.digits.len() <= 15 && f.is_finite() && (f != 0.0 || self.digits.is_empty()) {
            return Value::Float(f);
        }
        let sign = if self.negative { "-" } else { "" };
        let n = self.digits.len() as i64;
        let adjusted = n - 1 + self.exp;
        let text = if self.exp <= 0 && adjusted >= -6 {
            let point = n + self.exp;
            if point > 0 {
                let (int, frac) = self.digits.split_at(point as usize);
                if frac.is_empty() {
                    format!("{sign}{int}")
                } else {
                    format!("{sign}{int}.{frac}")
                }
            } else {
                format!("{sign}0.{}{}", "0".repeat((-point) as usize), self.digits)
            }
        } else {
            let (first, rest) = self.digits.split_at(1);
            let point = if rest.is_empty() { "" } else { "." };
            format!("{sign}{first}{point}{rest}E{adjusted:+}")
        };
        Value::decimal(&text).unwrap_or(Value::Float(f))
    }

    /// The nearest `f64`.
    pub fn to_f64(&self) -> f64 {
        let digits = if self.digits.is_empty() {
            "0"
        } else {
            &self.digits
        };
        let sign = if self.negative { "-" } else { "" };
        format!("{sign}{digits}e{}", self.exp)
            .parse()
            .unwrap_or(f64::NAN)
    }
}

/// Ruby's `Float(text)` for decimal text: sign, digits (`_` between two), an optional point
/// followed by at least one digit, an optional exponent. Nothing else, not even a point
/// without digits after it.
pub fn ruby_float(text: &str) -> Option<f64> {
    let (_, body) = split_sign(text);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(at) => (&body[..at], Some(&body[at + 1..])),
        None => (body, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    let digits_ok = |s: &str| {
        !s.is_empty()
            && underscores_between(s)
            && s.bytes().all(|c| c.is_ascii_digit() || c == b'_')
    };
    let int_ok = digits_ok(int) || (int.is_empty() && frac.is_some());
    if !int_ok || frac.is_some_and(|f| !digits_ok(f)) {
        return None;
    }
    if let Some(e) = exponent {
        if !digits_ok(split_sign(e).1) {
            return None;
        }
    }
    text.replace('_', "").parse().ok()
}

/// Ruby's `Integer(text)` for `[+-]0x…` text: hexadecimal digits (`_` between two).
pub fn ruby_hex_integer(text: &str) -> Option<Value> {
    let (negative, body) = split_sign(text);
    let hex = strip_hex_prefix(body)?;
    if hex.is_empty() || !underscores_between(hex) {
        return None;
    }
    let mut n: i128 = 0;
    for c in hex.chars().filter(|&c| c != '_') {
        n = n.checked_mul(16)?.checked_add(c.to_digit(16)? as i128)?;
    }
    Some(Value::integer(if negative { -n } else { n }))
}

/// Ruby's `Float(text)` for `[+-]0x…` text: C's hexadecimal floating point (`0x1.8p1` = 3.0,
/// `0x7b` = 123.0), the binary exponent optional.
pub fn ruby_hex_float(text: &str) -> Option<f64> {
    let (negative, body) = split_sign(text);
    let hex = strip_hex_prefix(body)?;
    let (mantissa, exponent) = match hex.find(['p', 'P']) {
        Some(at) => (&hex[..at], Some(&hex[at + 1..])),
        None => (hex, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut value = 0f64;
    for c in int.chars() {
        value = value * 16.0 + c.to_digit(16)? as f64;
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        value += c.to_digit(16)? as f64 * scale;
        scale /= 16.0;
    }
    if let Some(e) = exponent {
        if !is_exponent(e) {
            return None;
        }
        value *= 2f64.powi(e.parse::<i32>().ok()?);
    }
    Some(if negative { -value } else { value })
}

/// A plugin option of Logstash's `bytes` type: Ruby's `Integer()` of the text (decimal,
/// `0x`/`0b`/`0o`/leading-`0` octal, `_` between digits), else the Filesize gem's reading:
/// a number then an optional space and a unit, `KiB`..`YiB` in powers of 1024 or `B`,
/// `kB`..`YB` in powers of 1000 (any case: `"10 MiB"` = 10,485,760, `"2 mb"` = 2,000,000),
/// the product truncated.
pub fn filesize(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if let Some(n) = ruby_integer(t) {
        return u64::try_from(n).map_err(|_| format!("{text:?} is not a size in bytes"));
    }
    let lower = t.to_ascii_lowercase();
    let bad = || {
        format!("unparseable size {text:?} (expected bytes, or a number with a unit such as \"10 MiB\" or \"2 mb\")")
    };
    let body = lower.strip_suffix('b').ok_or_else(bad)?;
    let (body, base) = match body.strip_suffix('i') {
        Some(b) => (b, 1024f64),
        None => (body, 1000f64),
    };
    let (number, power) = match body.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => {
            let power = "kmgtpezy".find(c).ok_or_else(bad)? as i32 + 1;
            (&body[..body.len() - 1], power)
        }
        _ if base == 1024.0 => return Err(bad()),
        _ => (body, 0),
    };
    let number = number.strip_suffix(' ').unwrap_or(number);
    if number.is_empty()
        || !number
            .bytes()
            .all(|c| c.is_ascii_digit() || c == b',' || c == b'.')
    {
        return Err(bad());
    }
    // Ruby's `to_f`: the longest leading decimal number ("1,5" reads as 1).
    let end = number
        .char_indices()
        .scan(false, |seen_point, (i, c)| match c {
            '0'..='9' => Some(i + 1),
            '.' if !*seen_point => {
                *seen_point = true;
                Some(i)
            }
            _ => None,
        })
        .last()
        .unwrap_or(0);
    let value: f64 = number[..end].parse().unwrap_or(0.0);
    Ok((value * base.powi(power)) as u64)
}

/// Ruby's `Integer(text)`: an optional sign, then decimal digits, or `0x`, `0b`, `0o` or a
/// leading `0` (octal) and their digits, `_` only between two digits.
pub fn ruby_integer(text: &str) -> Option<i128> {
    let (negative, body) = split_sign(text);
    let lower = body.to_ascii_lowercase();
    let (digits, radix) = if let Some(d) = lower.strip_prefix("0x") {
        (d, 16)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (d, 2)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (d, 8)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (&lower[1..], 8)
    } else {
        (lower.as_str(), 10)
    };
    if digits.is_empty() || !underscores_between(digits) {
        return None;
    }
    let n = i128::from_str_radix(&digits.replace('_', ""), radix).ok()?;
    Some(if negative { -n } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(text: &str, syntax: Syntax) -> Option<Value> {
        Decimal::parse(text, syntax)?.to_integer()
    }

    #[test]
    fn big_decimal_integers_are_exact() {
        assert_eq!(int("123", Syntax::Java), Some(Value::Int(123)));
        assert_eq!(int("-12.9", Syntax::Java), Some(Value::Int(-12)));
        assert_eq!(int("1.230000e+02", Syntax::Java), Some(Value::Int(123)));
        assert_eq!(int("1234567.8", Syntax::Java), Some(Value::Int(1234567)));
        assert_eq!(int(".5", Syntax::Java), Some(Value::Int(0)));
        assert_eq!(int("5.", Syntax::Java), Some(Value::Int(5)));
        assert_eq!(int("0.000", Syntax::Java), Some(Value::Int(0)));
        assert_eq!(
            int("123456789012345678901234567890", Syntax::Java),
            Value::parse_integer("123456789012345678901234567890")
        );
        assert_eq!(
            int("1e20", Syntax::Java),
            Value::parse_integer("100000000000000000000")
        );
        // Past 128 bits: the digits, exactly (Ruby's Bignum); past MAX_DIGITS, refused.
        assert_eq!(
            int("1e400", Syntax::Java),
            Value::decimal(&format!("1{}", "0".repeat(400)))
        );
        assert_eq!(int("1e5000", Syntax::Java), None);
        assert_eq!(int("1_000", Syntax::Ruby), Some(Value::Int(1000)));
        assert_eq!(int("1d3", Syntax::Ruby), Some(Value::Int(1000)));
        for bad in [
            "", "-", ".", "1_000", "1e", "1e+", "abc", "1.2.3", "0x10", " 1", "1 ",
        ] {
            assert_eq!(Decimal::parse(bad, Syntax::Java), None, "{bad:?}");
        }
        for bad in ["_1", "1_", "1__0", "1d"] {
            assert_eq!(Decimal::parse(bad, Syntax::Ruby), None, "{bad:?}");
        }
        assert_eq!(
            Decimal::parse("-1.5e-3", Syntax::Java).unwrap().to_f64(),
            -0.0015
        );
    }

    #[test]
    fn ruby_float_is_strict() {
        assert_eq!(ruby_float("1.5"), Some(1.5));
        assert_eq!(ruby_float("-1_000.25e1"), Some(-10002.5));
        assert_eq!(ruby_float(".5"), Some(0.5));
        assert_eq!(ruby_float("7"), Some(7.0));
        for bad in [
            "", "5.", "1e", "abc", "1.5x", "1__0", "_1", "infinity", "nan",
        ] {
            assert_eq!(ruby_float(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn hexadecimal() {
        assert_eq!(ruby_hex_integer("0x7b"), Some(Value::Int(123)));
        assert_eq!(ruby_hex_integer("-0x1A"), Some(Value::Int(-26)));
        assert_eq!(
            ruby_hex_integer("0xffffffffffffffff"),
            Some(Value::integer(u64::MAX as i128))
        );
        assert_eq!(ruby_hex_integer("0x"), None);
        assert_eq!(ruby_hex_integer("0x1p3"), None);
        assert_eq!(ruby_hex_float("0x1.8p1"), Some(3.0));
        assert_eq!(ruby_hex_float("-0x7b"), Some(-123.0));
        assert_eq!(ruby_hex_float("0x1p-2"), Some(0.25));
        assert_eq!(ruby_hex_float("0xzz"), None);
    }

    #[test]
    fn filesize_as_logstash_reads_bytes() {
        for (text, bytes) in [
            ("100", 100),
            ("0x10", 16),
            ("010", 8),
            ("1_000", 1000),
            ("10 MiB", 10 * 1024 * 1024),
            ("10MiB", 10 * 1024 * 1024),
            ("1.5 kib", 1536),
            ("2 mb", 2_000_000),
            ("10 KB", 10_000),
            ("10 B", 10),
            ("1,5 kb", 1000),
        ] {
            assert_eq!(filesize(text), Ok(bytes), "{text}");
        }
        for bad in ["", "ten", "10 MiBs", "10 xb", "-5", "10 ib", "mb"] {
            assert!(filesize(bad).is_err(), "{bad}");
        }
    }
}
