//! `sluice_event::json::parse` (sonic-rs) must read back exactly what was written (every
//! number to the bit: serde_json's own reader, without its `float_roundtrip` feature, is off by
//! an ulp on some floats), and judge documents as serde_json does: an error for every document
//! serde_json rejects, the same values for those it accepts.

use proptest::prelude::*;
use sluice_event::json::parse;
use sluice_event::Value;

fn reference(bytes: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Value>(bytes).ok()
}

/// Random JSON documents: objects, arrays, any strings, integers across the i64/u64 range,
/// floats, literals.
fn json_doc() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<u64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        any::<String>().prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..6)
                .prop_map(|kv| serde_json::Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn reads_back_what_serde_json_wrote(doc in json_doc()) {
        let text = doc.to_string();
        prop_assert_eq!(parse(text.as_bytes()).ok(), Some(Value::from(doc)), "{}", text);
    }

    #[test]
    fn keys_in_any_order_and_repeated_keep_the_last_value(
        pairs in prop::collection::vec(("[a-e]{0,2}", any::<i64>()), 0..40)
    ) {
        let body: Vec<String> = pairs
            .iter()
            .map(|(k, v)| format!("{}:{v}", serde_json::to_string(k).unwrap()))
            .collect();
        let text = format!("{{{}}}", body.join(","));
        let mut expected = std::collections::BTreeMap::new();
        for (k, v) in &pairs {
            expected.insert(k.clone(), *v);
        }
        let Some(Value::Object(m)) = parse(text.as_bytes()).ok() else {
            panic!("not an object: {text}");
        };
        let got: Vec<(String, i64)> = m
            .iter()
            .map(|(k, v)| (k.to_string(), match v { Value::Int(i) => *i, other => panic!("{other:?}") }))
            .collect();
        let want: Vec<(String, i64)> = expected.into_iter().collect();
        prop_assert_eq!(got, want, "{}", text);
    }

    #[test]
    fn same_verdict_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..40)) {
        let ours = parse(&bytes).ok();
        prop_assert_eq!(ours, reference(&bytes), "input {:?}", String::from_utf8_lossy(&bytes));
    }
}

/// Where we deliberately differ from serde_json: integers past 64 bits stay exact (Logstash's
/// BigIntegers) instead of becoming floats; past 128 bits they are kept as their digits.
#[test]
fn big_integers_are_exact() {
    for (text, want) in [
        ("18446744073709551616", Value::integer(1 << 64)),
        ("-9223372036854775809", Value::integer(i64::MIN as i128 - 1)),
        (
            "170141183460469231731687303715884105727",
            Value::integer(i128::MAX),
        ),
        (
            "1701411834604692317316873037158841057270",
            Value::decimal("1701411834604692317316873037158841057270").unwrap(),
        ),
    ] {
        assert_eq!(parse(text.as_bytes()).unwrap(), want, "{text}");
        assert_eq!(
            parse(format!("[{text}]").as_bytes()).unwrap(),
            Value::Array(vec![want])
        );
    }
    // A long run of digits inside a string takes the exact path and reads the same.
    let doc = br#"{"id":"12345678901234567890123","n":1.5,"s":"\u00e9","e":[]}"#;
    assert_eq!(parse(doc).ok(), reference(doc));
    for bad in [
        &b"[12345678901234567890123,]"[..],
        b"{\"a\":\"\\ud800\"} 1234567890123456789012",
    ] {
        assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn same_verdict_on_edge_cases() {
    let cases: &[&[u8]] = &[
        br#"{"a":1}"#,
        br#"{"a":1} "#,
        br#"{"a":1} x"#,
        br#"{"a":1}{"b":2}"#,
        br#"{"a":1,}"#,
        br#"{"a":1,"a":2}"#,
        br#"[1,2,]"#,
        br#"{"a":"\ud800"}"#,
        br#"{"a":"\ud83d\ude00"}"#,
        br#"{"a":"\u00e9t\u00e9"}"#,
        b"{\"a\":\"\xff\"}",
        b"{\"a\":\"tab\there\"}",
        br#"{"a":18446744073709551615}"#,
        br#"{"a":-9223372036854775808}"#,
        br#"{"a":1e400}"#,
        br#"{"a":-0}"#,
        br#"{"a":-0.0}"#,
        br#"{"a":1.0}"#,
        br#"{"a":0.1e1}"#,
        br#"{"a":01}"#,
        br#"{"a":.5}"#,
        br#"{"a":NaN}"#,
        br#"{"a":true,"b":false,"c":null}"#,
        br#"{"a":tru}"#,
        br#"  {"nested":{"deeper":[{"x":[]}]}}  "#,
        br#""just a string""#,
        b"",
        b"   ",
    ];
    for c in cases {
        assert_eq!(
            parse(c).ok(),
            reference(c),
            "{:?}",
            String::from_utf8_lossy(c)
        );
    }
}

/// Objects nested in arrays and objects, with keys in any order and repeated (often in short
/// runs that ascend but for a repeat, where the parser's in-order check must still see the
/// repeat): keys sorted, a repeated key's last value kept, as serde_json's own tree says.
#[test]
fn nested_objects_in_any_key_order() {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "[a-z ]{0,30}".prop_map(serde_json::Value::from),
    ];
    // An object is carried as its text (pairs in the order generated), marked by a leading
    // \u{1}, and spliced in by `text`.
    let tree = leaf.prop_recursive(3, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::from),
            prop::collection::vec(("[a-e]{1,2}", inner), 0..8).prop_map(|pairs| {
                let body: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| format!("{}:{}", serde_json::Value::from(k.as_str()), text(v)))
                    .collect();
                serde_json::Value::String(format!("\u{1}{{{}}}", body.join(",")))
            }),
        ]
    });
    fn text(v: &serde_json::Value) -> String {
        match v {
            serde_json::Value::String(s) if s.starts_with('\u{1}') => s[1..].to_owned(),
            serde_json::Value::Array(a) => {
                format!("[{}]", a.iter().map(text).collect::<Vec<_>>().join(","))
            }
            other => other.to_string(),
        }
    }
    proptest!(|(v in tree)| {
        let json = text(&v);
        let theirs: serde_json::Value = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(parse(json.as_bytes()).ok(), Some(Value::from(theirs)), "{}", json);
    });
}
