//! Property tests of the queue's binary event format (`sluice_event::binary`).

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use sluice_event::binary::{decode, encode, encoded_len, DecodeError, Decoder};
use sluice_event::{Event, Key, Map, Timestamp, Value};

/// Equality that compares floats by their bits, so NaN payloads and -0.0 count.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        (Value::Object(x), Value::Object(y)) => same_map(x, y),
        _ => a == b,
    }
}

fn same_map(a: &Map, b: &Map) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ka, va), (kb, vb))| ka == kb && same_value(va, vb))
}

fn key() -> impl Strategy<Value = Key> {
    prop_oneof![
        3 => "[a-c@_\\[\\]]{0,4}",
        1 => any::<String>(),
    ]
    .prop_map(Key::from)
}

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => any::<u64>().prop_map(f64::from_bits),
        1 => prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(f64::NAN),
            Just(-f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::MIN_POSITIVE),
            Just(1.5),
        ],
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        (-1000i64..1000).prop_map(Value::Int),
        // Mostly outside i64's range: Value::integer picks Int for the rest.
        any::<i128>().prop_map(Value::integer),
        float().prop_map(Value::Float),
        // Numbers past what the others hold: Bignums' digits, BigDecimals' text.
        "-?[1-9][0-9]{39,60}".prop_map(|t| Value::decimal(&t).unwrap()),
        "-?[0-9]{1,20}\\.[0-9]{16,30}(E[+-][0-9]{1,3})?".prop_map(|t| Value::decimal(&t).unwrap()),
        any::<String>().prop_map(Value::from),
        any::<i64>().prop_map(|m| Value::Timestamp(Timestamp::from_millis(m))),
        (0i64..4_000_000_000_000).prop_map(|m| Value::Timestamp(Timestamp::from_millis(m))),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 96, 8, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..8).prop_map(Value::Array),
            btree_map(key(), inner, 0..8).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn event() -> impl Strategy<Value = Event> {
    (
        btree_map(key(), value(), 0..8),
        btree_map(key(), value(), 0..4),
    )
        .prop_map(|(fields, metadata)| {
            Event::from_parts(fields.into_iter().collect(), metadata.into_iter().collect())
        })
}

fn enc(e: &Event) -> Vec<u8> {
    let mut out = Vec::new();
    encode(e, &mut out);
    out
}

/// Decodes without panicking; whatever decodes must re-encode to the very same bytes
/// (the format is canonical).
fn check_decode(bytes: &[u8]) -> Result<Event, DecodeError> {
    let result = decode(bytes);
    if let Ok(e) = &result {
        assert_eq!(enc(e), bytes, "a decodable input is canonical");
    }
    result
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn round_trip(e in event()) {
        let bytes = enc(&e);
        prop_assert_eq!(bytes.len(), encoded_len(&e));
        let back = decode(&bytes).unwrap();
        prop_assert!(same_map(back.fields(), e.fields()));
        prop_assert!(same_map(back.metadata(), e.metadata()));
        prop_assert_eq!(enc(&back), bytes);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..512)) {
        let _ = check_decode(&bytes);
    }

    /// Random bytes after a valid version byte, drawn mostly from the tags and small
    /// lengths, so that decoding gets past the first few bytes.
    #[test]
    fn plausible_bytes_never_panic(
        body in vec(prop_oneof![4 => 0u8..12, 1 => Just(b'a'), 1 => Just(0x80u8), 1 => any::<u8>()], 0..256)
    ) {
        let mut bytes = vec![1u8];
        bytes.extend(body);
        let _ = check_decode(&bytes);
    }

    #[test]
    fn every_truncation_is_an_error(e in event()) {
        let bytes = enc(&e);
        for len in 0..bytes.len() {
            prop_assert!(check_decode(&bytes[..len]).is_err(), "prefix of {} bytes decoded", len);
        }
        let mut longer = bytes.clone();
        longer.push(0);
        let is_trailing = matches!(
            decode(&longer),
            Err(DecodeError::TrailingBytes { count: 1, .. })
        );
        prop_assert!(is_trailing);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn flipping_any_byte_never_panics(e in event(), mask in 1u8..=255) {
        let bytes = enc(&e);
        let mut copy = bytes.clone();
        for i in 0..bytes.len() {
            for m in [mask, 0x01, 0x80, 0xff] {
                copy[i] ^= m;
                let _ = check_decode(&copy);
                copy[i] = bytes[i];
            }
        }
    }
}

/// `e` without its first field (so that every later key moves one place up).
fn without_first_field(e: &Event) -> Event {
    let mut fields = e.fields().clone();
    if let Some(first) = fields.iter().next().map(|(k, _)| k.clone()) {
        fields.remove(&first);
    }
    Event::from_parts(fields, e.metadata().clone())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// One decoder for many records (it reuses the last record's keys) decodes each exactly as
    /// a fresh one does, returned or onto the end of a vector: records of the same keys, of
    /// keys moved one place, of other keys, and damaged ones in between.
    #[test]
    fn one_decoder_decodes_each_record_as_a_fresh_one(
        events in vec(event(), 1..6),
        damaged in vec((vec(any::<u8>(), 0..48), any::<usize>(), 1u8..=255), 0..4),
    ) {
        let mut records = Vec::new();
        for e in &events {
            records.push(enc(e));
            records.push(enc(&without_first_field(e)));
            records.push(enc(e));
        }
        let good = records.clone();
        for (i, (bytes, at, mask)) in damaged.into_iter().enumerate() {
            // Random bytes, and a good record (never empty) with one byte flipped.
            let mut flipped = good[i % good.len()].clone();
            let n = flipped.len();
            flipped[at % n] ^= mask;
            let place = at % records.len();
            records.insert(place, bytes);
            records.insert(place, flipped);
        }
        let mut decoder = Decoder::new();
        // Another, decoding onto the end of one vector: what fails leaves it as it was.
        let (mut onto, mut decoded) = (Decoder::new(), Vec::new());
        for bytes in &records {
            let fresh = decode(bytes);
            let reused = decoder.decode(bytes);
            let before = decoded.len();
            let into = onto.decode_into(bytes, &mut decoded);
            match (&fresh, &reused) {
                (Ok(a), Ok(b)) => {
                    prop_assert!(same_map(a.fields(), b.fields()));
                    prop_assert!(same_map(a.metadata(), b.metadata()));
                    prop_assert_eq!(&enc(b), bytes);
                    prop_assert!(into.is_ok());
                    prop_assert_eq!(decoded.len(), before + 1);
                    prop_assert_eq!(&enc(&decoded[before]), bytes);
                }
                (Err(a), Err(b)) => {
                    prop_assert_eq!(a, b);
                    prop_assert_eq!(into.as_ref().err(), Some(a));
                    prop_assert_eq!(decoded.len(), before);
                }
                _ => prop_assert!(false, "fresh {:?}, reused {:?}", fresh, reused),
            }
        }
    }
}
