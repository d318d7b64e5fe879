//! The name table's bound (`sluice_event::key::MAX_INTERNED`), in a process of its own: once
//! the table is full, new names get keys of their own that still compare, order and find
//! fields exactly as interned ones do, and names interned before stay interned.

use sluice_event::key::MAX_INTERNED;
use sluice_event::{Key, Map, Value};

#[test]
fn a_full_table_gives_new_names_keys_of_their_own() {
    let early = Key::from("early_name");
    assert!(early.is_interned());
    // Fill the table (a few names may already be in it).
    for i in 0..MAX_INTERNED {
        let _ = Key::from(format!("filler_{i}"));
    }
    let late = Key::from("late_name");
    assert!(
        !late.is_interned(),
        "a new name past the bound is not interned"
    );
    assert!(
        Key::from("early_name").is_interned(),
        "an interned name stays so"
    );
    assert!(Key::from("filler_7").is_interned());

    // Keys of their own behave as interned ones: equality, order, lookups in a map.
    let again = Key::from(String::from("late_name"));
    assert_eq!(late, again);
    assert!(early < late);
    let later = Key::from("zzz_also_late");
    assert!(!later.is_interned());
    assert!(late < later);
    let mut m = Map::new();
    m.insert(late.clone(), Value::Int(1));
    m.insert(early.clone(), Value::Int(2));
    m.insert(again, Value::Int(3));
    assert_eq!(m.len(), 2);
    assert_eq!(m.get("late_name"), Some(&Value::Int(3)));
    assert_eq!(m.get(&Key::from("late_name")), Some(&Value::Int(3)));
    assert_eq!(m.get(&early), Some(&Value::Int(2)));
    let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["early_name", "late_name"]);
}
