//! The Event API as Ruby code sees it, through sluice-ruby's public interface.

use sluice_event::{Event, FieldRef, Value};
use sluice_ruby::{EventResult, Script, Source, Spec};

fn script(code: &str) -> Script {
    Script::compile(Spec {
        label: "ruby@test".into(),
        source: Source::Inline {
            init: None,
            code: code.into(),
        },
    })
    .unwrap()
}

fn get(e: &Event, f: &str) -> Option<Value> {
    e.get(&FieldRef::parse(f).unwrap()).cloned()
}

#[test]
fn get_set_and_errors() {
    let s = script("event.set('up', event.get('message').upcase)");
    let mut batch = vec![Event::with_message("hello"), Event::with_message("x")];
    let out = s.run(&mut batch).unwrap();
    assert_eq!(
        out.results,
        vec![EventResult::Matched, EventResult::Matched]
    );
    assert_eq!(get(&batch[0], "up"), Some(Value::from("HELLO")));
    assert_eq!(get(&batch[1], "up"), Some(Value::from("X")));

    let s = script("raise 'boom' if event.get('message') == 'bad'");
    let mut batch = vec![Event::with_message("bad"), Event::with_message("good")];
    let out = s.run(&mut batch).unwrap();
    assert_eq!(
        out.results,
        vec![EventResult::Failed("boom".to_owned()), EventResult::Matched]
    );
}
