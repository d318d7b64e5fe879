//! [`Value`]: the JSON-like tree an event is made of, plus a timestamp variant so that
//! `@timestamp` keeps millisecond precision and its type through filters and the queue, and a
//! [`BigInt`] variant so that integers past 64 bits (Ruby's Bignums, Java's BigIntegers in
//! Logstash) stay exact instead of turning into rounded floats, and a `Decimal` variant for
//! the numbers beyond both (a Bignum past 128 bits, dissect's BigDecimal), kept as their text.

use std::fmt::Write as _;

use crate::timestamp::Timestamp;

pub use crate::key::Key;

/// A string value: up to 24 bytes inline (status codes, verbs, IP addresses, names), longer
/// ones on the heap. Derefs to `&str`.
pub type Str = compact_str::CompactString;

/// An object's fields, ordered by key so that output (rubydebug, JSON) is deterministic: a
/// sorted vector (litemap). Events have tens of fields, where one allocation per object and a
/// binary search beat a B-tree; building from sorted input (our JSON, the queue's format)
/// appends, and bulk inserts (`extend`, `collect`) sort once.
pub type Map = litemap::LiteMap<Key, Value>;

#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Int(i64),
    /// An integer outside `i64`'s range. Build it with [`Value::integer`].
    BigInt(BigInt),
    Float(f64),
    /// A number that neither [`Value::BigInt`] nor [`Value::Float`] holds exactly (a Bignum
    /// past 128 bits, a BigDecimal such as dissect's `->float` of `43947404257507186289.3`),
    /// kept as its decimal text: written as that number, compared by value. Build it with
    /// [`Value::decimal`].
    Decimal(Str),
    String(Str),
    Timestamp(Timestamp),
    Array(Vec<Value>),
    Object(Map),
}

/// Writes `v` into `slot`, which holds `Null`, without dropping what was there: the
/// decoders' way of filling the places they made. Assigned, a value was built on the stack
/// around the call that drops the old one and then copied in whole, reloading bytes just
/// stored in narrower pieces, which the processor cannot forward from its store buffer (a
/// stall that cost more than the decoding around it); written without the drop, it is
/// stored straight into its slot.
#[inline(always)]
pub(crate) fn put(slot: &mut Value, v: Value) {
    debug_assert!(matches!(slot, Value::Null));
    // SAFETY: `slot` is a valid, aligned, exclusive place for a `Value`; not dropping what it
    // held could only leak, and it holds a `Null`, which owns nothing.
    unsafe { std::ptr::write(slot, v) }
}

/// `v` again, taken apart and put back together so that it is passed on one word at a
/// time: a vector filled in a loop lives on the stack, and moving it whole loaded its
/// pointer, length and capacity in 16-byte pieces from the 8-byte stores that had just made
/// them (the stall [`put`] describes).
#[inline(always)]
pub(crate) fn by_parts<T>(v: Vec<T>) -> Vec<T> {
    let mut v = std::mem::ManuallyDrop::new(v);
    let (ptr, len, cap) = (v.as_mut_ptr(), v.len(), v.capacity());
    // SAFETY: the parts of a vector that is never dropped, made into one vector again.
    unsafe { Vec::from_raw_parts(ptr, len, cap) }
}

/// Appends `(key, Null)` to `entries` and returns the place of its value, for a decoder to
/// fill: the two halves are written where they stay, where a pair built on the stack and
/// pushed was reloaded in wider pieces than it was stored in (the stall [`put`] describes).
#[inline(always)]
pub(crate) fn push_entry(entries: &mut Vec<(Key, Value)>, key: Key) -> &mut Value {
    entries.reserve(1);
    let len = entries.len();
    // SAFETY: `reserve` made room for one more entry past `len`; both halves are written
    // before the length covers them, and the place returned borrows `entries`.
    unsafe {
        let entry = entries.as_mut_ptr().add(len);
        std::ptr::addr_of_mut!((*entry).0).write(key);
        std::ptr::addr_of_mut!((*entry).1).write(Value::Null);
        entries.set_len(len + 1);
        &mut (*entry).1
    }
}

/// An integer that does not fit in an `i64` but does in an `i128` (38 digits). Two words
/// rather than an `i128` so that a [`Value`] keeps 8-byte alignment and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BigInt {
    hi: i64,
    lo: u64,
}

impl BigInt {
    pub fn get(self) -> i128 {
        ((self.hi as i128) << 64) | self.lo as i128
    }
}

impl Value {
    /// An integer value: [`Value::Int`] when it fits in an `i64`, else [`Value::BigInt`].
    pub fn integer(i: i128) -> Value {
        match i64::try_from(i) {
            Ok(small) => Value::Int(small),
            Err(_) => Value::BigInt(BigInt {
                hi: (i >> 64) as i64,
                lo: i as u64,
            }),
        }
    }

    /// Parses an integer written in decimal (optional sign, digits only): `None` when the text
    /// is not one or is beyond 128 bits.
    pub fn parse_integer(text: &str) -> Option<Value> {
        if let Ok(i) = text.parse::<i64>() {
            return Some(Value::Int(i));
        }
        text.parse::<i128>().ok().map(Value::integer)
    }

    /// A number written in decimal (`-12`, `0.5`, `1.25E+30`), kept exactly: digits alone
    /// (no point, no exponent) that fit in 128 bits make an integer; anything else a
    /// [`Value::Decimal`] of its canonical text (a leading `+` and leading zeros dropped, `0`
    /// before a bare point, `E` for the exponent marker). `None` when the text is not such a
    /// number.
    pub fn decimal(text: &str) -> Option<Value> {
        let (negative, body) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let (mantissa, exponent) = match body.find(['e', 'E']) {
            Some(i) => (&body[..i], Some(&body[i + 1..])),
            None => (body, None),
        };
        let (int, frac) = match mantissa.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (mantissa, None),
        };
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        let int_ok = digits(int) || (int.is_empty() && frac.is_some());
        let frac_ok = frac.is_none_or(digits);
        let exp_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
        if !(int_ok && frac_ok && exp_ok) {
            return None;
        }
        if frac.is_none() && exponent.is_none() {
            if let Ok(i) = text.trim_start_matches('+').parse::<i128>() {
                return Some(Value::integer(i));
            }
        }
        let int = int.trim_start_matches('0');
        let mut out = Str::with_capacity(text.len() + 1);
        if negative {
            out.push('-');
        }
        out.push_str(if int.is_empty() { "0" } else { int });
        if let Some(f) = frac {
            out.push('.');
            out.push_str(f);
        }
        if let Some(e) = exponent {
            out.push('E');
            out.push_str(e);
        }
        Some(Value::Decimal(out))
    }

    /// The exact order of two numbers when one is a [`Value::Decimal`] and the other an
    /// integer or a decimal (the floats' order is no exact one); `None` otherwise.
    pub fn exact_order(&self, other: &Value) -> Option<std::cmp::Ordering> {
        if !matches!(self, Value::Decimal(_)) && !matches!(other, Value::Decimal(_)) {
            return None;
        }
        let (a, b) = (exact_parts(self)?, exact_parts(other)?);
        Some(compare_exact(&a, &b))
    }

    /// The integer this value holds, if it is one.
    pub fn as_i128(&self) -> Option<i128> {
        match self {
            Value::Int(i) => Some(*i as i128),
            Value::BigInt(b) => Some(b.get()),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The number this value holds, if it is an integer or a float.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::BigInt(b) => Some(b.get() as f64),
            Value::Float(f) => Some(*f),
            Value::Decimal(d) => d.parse().ok(),
            _ => None,
        }
    }

    /// Logstash truthiness in conditionals: present, not null and not `false`.
    pub fn is_truthy(&self) -> bool {
        !matches!(self, Value::Null | Value::Bool(false))
    }

    /// The name of this value's type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) | Value::BigInt(_) => "integer",
            Value::Float(_) => "float",
            Value::Decimal(d) if d.contains(['.', 'E']) => "float",
            Value::Decimal(_) => "integer",
            Value::String(_) => "string",
            Value::Timestamp(_) => "timestamp",
            Value::Array(_) => "array",
            Value::Object(_) => "hash",
        }
    }

    /// Bytes this value holds by Logstash's estimate (`ConvertedMap.estimateMemory`, used for
    /// the `batch` byte sizes of `/_node/stats`): a string's UTF-8 length, 8 for an integer
    /// or float, 1 for a boolean, 12 for a timestamp or null, an integer beyond 64 bits its
    /// magnitude's bytes plus 4, and an array or hash the sum of its values (keys are not
    /// counted).
    pub fn estimate_memory(&self) -> u64 {
        match self {
            Value::Null => 12,
            Value::Bool(_) => 1,
            Value::Int(_) | Value::Float(_) => 8,
            Value::BigInt(b) => {
                let i = b.get();
                let bits = 128 - if i < 0 { !i } else { i }.leading_zeros() as u64;
                bits.div_ceil(8) + 4
            }
            Value::String(s) => s.len() as u64,
            // As a BigInteger or BigDecimal: its digits' bytes, about, plus 4.
            Value::Decimal(d) => (d.len() as u64 * 415).div_ceil(1000) + 4,
            Value::Timestamp(_) => 12,
            Value::Array(items) => items.iter().map(Value::estimate_memory).sum(),
            Value::Object(m) => estimate_map_memory(m),
        }
    }

    /// Appends the string form Logstash's sprintf uses: strings as-is, numbers in Ruby's
    /// notation, arrays joined with `,`, hashes as JSON, null as nothing.
    pub fn write_display(&self, out: &mut String) {
        match self {
            Value::Null => {}
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Value::BigInt(b) => {
                let _ = write!(out, "{}", b.get());
            }
            Value::Float(f) => write_float(*f, out),
            Value::Decimal(d) => out.push_str(d),
            Value::String(s) => out.push_str(s),
            Value::Timestamp(t) => t.write_iso8601(out),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write_display(out);
                }
            }
            Value::Object(_) => out.push_str(&crate::json::to_string(self)),
        }
    }

    /// The string form of [`Value::write_display`], allocated.
    pub fn to_display_string(&self) -> String {
        match self {
            Value::String(s) => s.to_string(),
            _ => {
                let mut s = String::new();
                self.write_display(&mut s);
                s
            }
        }
    }
}

/// A number as sign, significant digits (no leading or trailing zeros; empty for zero) and
/// the power of ten they are multiplied by.
struct Exact {
    negative: bool,
    digits: String,
    exp: i128,
}

fn exact_parts(v: &Value) -> Option<Exact> {
    let text = match v {
        Value::Int(_) | Value::BigInt(_) => v.to_display_string(),
        Value::Decimal(d) => d.to_string(),
        _ => return None,
    };
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.as_str()),
    };
    let (mantissa, exp) = match body.split_once('E') {
        Some((m, e)) => (m, e.parse::<i128>().ok()?),
        None => (body, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits: String = int.chars().chain(frac.chars()).collect();
    let mut exp = exp - frac.len() as i128;
    let trimmed = digits.trim_end_matches('0').len();
    exp += (digits.len() - trimmed) as i128;
    digits.truncate(trimmed);
    let digits = digits.trim_start_matches('0').to_owned();
    Some(Exact {
        negative: negative && !digits.is_empty(),
        digits,
        exp,
    })
}

fn compare_exact(a: &Exact, b: &Exact) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let sign = |x: &Exact| match (x.digits.is_empty(), x.negative) {
        (true, _) => 0,
        (false, true) => -1,
        (false, false) => 1,
    };
    let by_sign = sign(a).cmp(&sign(b));
    if by_sign != Ordering::Equal || sign(a) == 0 {
        return by_sign;
    }
    // Same sign, both non-zero: the magnitude, by the place of the first digit, then digits.
    let top = |x: &Exact| x.digits.len() as i128 + x.exp;
    let magnitude = top(a).cmp(&top(b)).then_with(|| {
        let (x, y) = (a.digits.as_bytes(), b.digits.as_bytes());
        let n = x.len().max(y.len());
        (0..n)
            .map(|i| {
                (
                    x.get(i).copied().unwrap_or(b'0'),
                    y.get(i).copied().unwrap_or(b'0'),
                )
            })
            .find(|(p, q)| p != q)
            .map_or(Ordering::Equal, |(p, q)| p.cmp(&q))
    });
    if a.negative {
        magnitude.reverse()
    } else {
        magnitude
    }
}

/// A string whose clones cost no allocation, for a constant many events get (an input's
/// tag): the text is kept once for the process, in the names' table ([`Key`]), and the
/// string points at it. A text the table does not take (longer than
/// [`crate::key::MAX_INTERNED_LEN`], or the table full) makes an ordinary string.
pub fn constant_str(text: &str) -> Str {
    match Key::new(text).static_str() {
        Some(kept) => Str::const_new(kept),
        None => Str::from(text),
    }
}

/// [`Value::estimate_memory`] of a hash: the sum of its values.
pub fn estimate_map_memory(m: &Map) -> u64 {
    m.values().map(Value::estimate_memory).sum()
}

/// Writes a float the way Ruby's `Float#to_s` does for ordinary values: always with a
/// fractional part (`1.0`, `0.5`, `12345.678`).
pub fn write_float(f: f64, out: &mut String) {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e16 {
        let _ = write!(out, "{f:.1}");
    } else {
        let _ = write!(out, "{f}");
    }
}

/// Ruby's `Float#to_s`: the shortest digits that read back, fixed notation for exponents
/// from -4 to 15 (`100.0`, `0.0001`), else scientific (`1.0e+16`, `1.0e-05`).
pub fn ruby_float_to_s(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').expect("{:e} writes an exponent");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let decpt: i32 = exp.parse::<i32>().expect("a decimal exponent") + 1;
    let sign = if f < 0.0 { "-" } else { "" };
    if 0 < decpt && decpt <= 16 {
        let d = decpt as usize;
        let (int, frac) = if digits.len() > d {
            (digits[..d].to_owned(), digits[d..].to_owned())
        } else {
            (
                format!("{digits}{}", "0".repeat(d - digits.len())),
                "0".to_owned(),
            )
        };
        format!("{sign}{int}.{frac}")
    } else if -4 < decpt && decpt <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat((-decpt) as usize))
    } else {
        let frac = if digits.len() > 1 { &digits[1..] } else { "0" };
        format!("{sign}{}.{frac}e{:+03}", &digits[..1], decpt - 1)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(Str::from(s))
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(Str::from(s))
    }
}

impl From<Str> for Value {
    fn from(s: Str) -> Self {
        Value::String(s)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Int(i)
    }
}

impl From<f64> for Value {
    fn from(f: f64) -> Self {
        Value::Float(f)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<Timestamp> for Value {
    fn from(t: Timestamp) -> Self {
        Value::Timestamp(t)
    }
}

impl From<Map> for Value {
    fn from(m: Map) -> Self {
        Value::Object(m)
    }
}

impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Self {
        Value::Array(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A constant string points at the names' table: neither it nor its clones allocate.
    /// What the table does not take is an ordinary string.
    #[test]
    fn constant_strings_are_shared_not_copied() {
        let text = "beats_input_codec_plain_applied";
        let s = constant_str(text);
        assert_eq!(s, text);
        assert!(!s.is_heap_allocated());
        let copy = s.clone();
        assert!(!copy.is_heap_allocated());
        assert_eq!(copy.as_ptr(), s.as_ptr());
        assert_eq!(copy.as_ptr(), constant_str(text).as_ptr());
        let long = "x".repeat(crate::key::MAX_INTERNED_LEN + 1);
        let s = constant_str(&long);
        assert_eq!(s, long);
        assert!(s.is_heap_allocated());
        assert_eq!(Key::new(&long).static_str(), None);
        assert_eq!(Key::new(text).static_str(), Some(text));
    }

    #[test]
    fn decimals_order_exactly() {
        use std::cmp::Ordering::*;
        let d = |t: &str| Value::decimal(t).unwrap();
        let cases = [
            (
                d("43947404257507186289.345324"),
                d("43947404257507186289.345325"),
                Less,
            ),
            (d("1E+400"), d("2E+400"), Less),
            (d("-1E+400"), d("-2E+400"), Greater),
            (d("1.50"), d("1.5"), Equal),
            (d("-0.0"), Value::Int(0), Equal),
            (
                d("123456789012345678901234567890123456789012"),
                Value::Int(-5),
                Greater,
            ),
            (d("1E+40"), Value::integer(i128::MAX), Greater),
            (d("0.001"), d("1E-3"), Equal),
            (d("-0.5"), Value::Int(0), Less),
        ];
        for (a, b, want) in cases {
            assert_eq!(a.exact_order(&b), Some(want), "{a:?} {b:?}");
            assert_eq!(b.exact_order(&a), Some(want.reverse()), "{b:?} {a:?}");
        }
        assert_eq!(Value::Int(1).exact_order(&Value::Int(2)), None);
        assert_eq!(d("1.5").exact_order(&Value::Float(1.5)), None);
    }

    #[test]
    fn floats_as_ruby_writes_them() {
        for (f, s) in [
            (0.001, "0.001"),
            (0.0001, "0.0001"),
            (0.00001, "1.0e-05"),
            (1.5, "1.5"),
            (-2.25, "-2.25"),
            (100.0, "100.0"),
            (1e15, "1000000000000000.0"),
            (1e16, "1.0e+16"),
            (1.25e20, "1.25e+20"),
            (123456.789, "123456.789"),
        ] {
            assert_eq!(ruby_float_to_s(f), s, "{f}");
        }
    }

    #[test]
    fn display_forms_follow_ruby() {
        assert_eq!(Value::Float(1.0).to_display_string(), "1.0");
        assert_eq!(Value::Float(0.25).to_display_string(), "0.25");
        assert_eq!(Value::Int(-3).to_display_string(), "-3");
        let arr = Value::Array(vec!["a".into(), Value::Int(1)]);
        assert_eq!(arr.to_display_string(), "a,1");
        assert_eq!(Value::Null.to_display_string(), "");
    }

    #[test]
    fn truthiness() {
        assert!(!Value::Null.is_truthy());
        assert!(!Value::Bool(false).is_truthy());
        assert!(Value::String(String::new().into()).is_truthy());
        assert!(Value::Int(0).is_truthy());
    }

    #[test]
    fn integers_past_64_bits_stay_exact() {
        assert_eq!(Value::integer(5), Value::Int(5));
        assert_eq!(Value::integer(i64::MIN as i128), Value::Int(i64::MIN));
        let big = Value::parse_integer("123456789012345678901234567890").unwrap();
        assert!(matches!(big, Value::BigInt(_)));
        assert_eq!(big.to_display_string(), "123456789012345678901234567890");
        assert_eq!(big.as_i128(), Some(123456789012345678901234567890));
        let neg = Value::integer(-(1i128 << 100));
        assert_eq!(neg.as_i128(), Some(-(1i128 << 100)));
        assert_eq!(
            Value::parse_integer("9223372036854775808")
                .unwrap()
                .type_name(),
            "integer"
        );
        assert_eq!(Value::parse_integer("1".repeat(40).as_str()), None);
        assert_eq!(std::mem::size_of::<Value>(), 32);
    }
}
