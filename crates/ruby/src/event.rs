//! `LogStash::Event` and `LogStash::Timestamp` for Ruby code, backed by sluice's own types.
//!
//! An `RbEvent` owns its sluice event while Ruby holds it; the VM thread takes it back after
//! the batch, and the Ruby object is then detached (a script that kept it gets an error, not
//! stale data). Values cross by copy, as Logstash's Rubyfier/Javafier: `get` of a hash gives
//! a new Hash, changing it changes nothing until it is `set`.

use std::cell::RefCell;

use magnus::value::ReprValue;
use magnus::{
    function, method, prelude::*, scan_args, Error, Float, Integer, RArray, RClass, RHash, RModule,
    RString, Ruby, Symbol, Value,
};
use sluice_event::{Event, FieldRef, Map, Template, Timestamp, Value as V};

#[magnus::wrap(class = "LogStash::Event", free_immediately, size)]
pub(crate) struct RbEvent(RefCell<Option<Event>>);

#[magnus::wrap(class = "LogStash::Timestamp", free_immediately, size)]
pub(crate) struct RbTimestamp(Timestamp);

impl RbEvent {
    pub fn new(e: Event) -> RbEvent {
        RbEvent(RefCell::new(Some(e)))
    }
}

/// Takes the sluice event out of a `LogStash::Event` value.
pub(crate) fn take(v: Value) -> Option<Event> {
    let obj = <&RbEvent>::try_convert(v).ok()?;
    obj.0.try_borrow_mut().ok()?.take()
}

fn detached(ruby: &Ruby) -> Error {
    Error::new(
        ruby.exception_runtime_error(),
        "this event has left the filter (events cannot be kept between batches)",
    )
}

fn field(ruby: &Ruby, name: RString) -> Result<FieldRef, Error> {
    // SAFETY: the text is only read before anything else runs on the Ruby heap.
    let text = unsafe { name.as_str() }?;
    FieldRef::parse(text).map_err(|e| {
        Error::new(
            ruby.exception_runtime_error(),
            format!("Invalid FieldReference: `{text}`: {e}"),
        )
    })
}

fn is_timestamp(r: &FieldRef) -> bool {
    matches!(r.segments(), [k] if k.as_str() == "@timestamp")
}

impl RbEvent {
    fn with<T>(
        ruby: &Ruby,
        rb_self: &Self,
        f: impl FnOnce(&mut Event) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let mut slot = rb_self
            .0
            .try_borrow_mut()
            .map_err(|_| Error::new(ruby.exception_runtime_error(), "event is in use"))?;
        match slot.as_mut() {
            Some(e) => f(e),
            None => Err(detached(ruby)),
        }
    }

    fn rb_new(ruby: &Ruby, args: &[Value]) -> Result<RbEvent, Error> {
        let args = scan_args::scan_args::<(), (Option<Value>,), (), (), (), ()>(args)?;
        let event = match args.optional.0 {
            None => Event::new(),
            Some(v) if v.is_nil() => Event::new(),
            Some(v) => match to_rust(ruby, v)? {
                V::Object(m) => Event::from_map(m),
                _ => {
                    return Err(Error::new(
                        ruby.exception_arg_error(),
                        "LogStash::Event.new takes a Hash",
                    ))
                }
            },
        };
        Ok(RbEvent::new(event))
    }

    fn get(ruby: &Ruby, rb_self: &Self, name: RString) -> Result<Value, Error> {
        let r = field(ruby, name)?;
        Self::with(ruby, rb_self, |e| match e.get(&r) {
            Some(v) => to_ruby(ruby, v),
            None => Ok(ruby.qnil().as_value()),
        })
    }

    fn set(ruby: &Ruby, rb_self: &Self, name: RString, value: Value) -> Result<Value, Error> {
        let r = field(ruby, name)?;
        let v = to_rust(ruby, value)?;
        if is_timestamp(&r) && !matches!(v, V::Timestamp(_)) {
            return Err(Error::new(
                ruby.exception_type_error(),
                "wrong argument type (expected LogStash::Timestamp)",
            ));
        }
        Self::with(ruby, rb_self, |e| {
            e.set(&r, v);
            Ok(value)
        })
    }

    fn remove(ruby: &Ruby, rb_self: &Self, name: RString) -> Result<Value, Error> {
        let r = field(ruby, name)?;
        Self::with(ruby, rb_self, |e| match e.remove(&r) {
            Some(v) => to_ruby(ruby, &v),
            None => Ok(ruby.qnil().as_value()),
        })
    }

    fn include(ruby: &Ruby, rb_self: &Self, name: RString) -> Result<bool, Error> {
        let r = field(ruby, name)?;
        Self::with(ruby, rb_self, |e| Ok(e.contains(&r)))
    }

    fn tag(ruby: &Ruby, rb_self: &Self, tag: RString) -> Result<(), Error> {
        let tag = tag.to_string()?;
        Self::with(ruby, rb_self, |e| {
            e.add_tag(&tag);
            Ok(())
        })
    }

    fn cancel(ruby: &Ruby, rb_self: &Self) -> Result<bool, Error> {
        Self::with(ruby, rb_self, |e| {
            e.cancel();
            Ok(true)
        })
    }

    fn uncancel(ruby: &Ruby, rb_self: &Self) -> Result<bool, Error> {
        Self::with(ruby, rb_self, |e| {
            e.uncancel();
            Ok(false)
        })
    }

    fn is_cancelled(ruby: &Ruby, rb_self: &Self) -> Result<bool, Error> {
        Self::with(ruby, rb_self, |e| Ok(e.is_cancelled()))
    }

    fn clone_event(ruby: &Ruby, rb_self: &Self) -> Result<RbEvent, Error> {
        Self::with(ruby, rb_self, |e| {
            let mut c = e.clone();
            c.uncancel();
            Ok(RbEvent::new(c))
        })
    }

    fn to_hash(ruby: &Ruby, rb_self: &Self) -> Result<RHash, Error> {
        Self::with(ruby, rb_self, |e| map_to_ruby(ruby, e.fields()))
    }

    fn to_hash_with_metadata(ruby: &Ruby, rb_self: &Self) -> Result<RHash, Error> {
        Self::with(ruby, rb_self, |e| {
            let h = map_to_ruby(ruby, e.fields())?;
            if !e.metadata().is_empty() {
                h.aset("@metadata", map_to_ruby(ruby, e.metadata())?)?;
            }
            Ok(h)
        })
    }

    fn to_json(ruby: &Ruby, rb_self: &Self, _args: &[Value]) -> Result<String, Error> {
        Self::with(ruby, rb_self, |e| {
            Ok(sluice_event::json::event_to_string(e))
        })
    }

    fn timestamp(ruby: &Ruby, rb_self: &Self) -> Result<Value, Error> {
        Self::with(ruby, rb_self, |e| match e.timestamp() {
            Some(t) => Ok(ruby.obj_wrap(RbTimestamp(t)).as_value()),
            None => Ok(ruby.qnil().as_value()),
        })
    }

    fn set_timestamp(ruby: &Ruby, rb_self: &Self, t: Value) -> Result<Value, Error> {
        let ts = match to_rust(ruby, t)? {
            V::Timestamp(ts) => ts,
            _ => {
                return Err(Error::new(
                    ruby.exception_type_error(),
                    "wrong argument type (expected LogStash::Timestamp)",
                ))
            }
        };
        Self::with(ruby, rb_self, |e| {
            e.set_timestamp(ts);
            Ok(t)
        })
    }

    fn sprintf(ruby: &Ruby, rb_self: &Self, format: RString) -> Result<String, Error> {
        let template = Template::parse(&format.to_string()?);
        Self::with(ruby, rb_self, |e| Ok(template.render(e)))
    }

    fn to_s(ruby: &Ruby, rb_self: &Self) -> Result<String, Error> {
        let template = Template::parse("%{@timestamp} %{host} %{message}");
        Self::with(ruby, rb_self, |e| Ok(template.render(e)))
    }

    /// Logstash's `Event#append`: the other event's fields merged in, as `Util.mergeHashes`.
    fn append(ruby: &Ruby, rb_self: &Self, other: &RbEvent) -> Result<(), Error> {
        let fields = {
            let other = other.0.try_borrow().map_err(|_| detached(ruby))?;
            match other.as_ref() {
                Some(o) => o.fields().clone(),
                None => return Err(detached(ruby)),
            }
        };
        Self::with(ruby, rb_self, |e| {
            merge_maps(e.fields_mut(), fields);
            Ok(())
        })
    }

    fn direct_access(ruby: &Ruby, _rb_self: &Self, _args: &[Value]) -> Result<Value, Error> {
        Err(Error::new(
            ruby.exception_no_method_error(),
            "Direct event field references (i.e. event['field']) have been disabled in favor of using event get and set methods (e.g. event.get('field')). Please consult the Logstash 5.0 breaking changes documentation for more details.",
        ))
    }
}

/// `Util.mergeHashes`: a key only in `from` is copied; two hashes merge; otherwise the target
/// becomes a list holding what it had and each new value not already in it.
fn merge_maps(into: &mut Map, from: Map) {
    for (k, v) in from {
        match into.get_mut(k.as_str()) {
            None => {
                into.insert(k, v);
            }
            Some(V::Object(target)) if matches!(v, V::Object(_)) => {
                let V::Object(m) = v else { unreachable!() };
                merge_maps(target, m);
            }
            Some(target) => {
                let mut items = match std::mem::take(target) {
                    V::Array(a) => a,
                    other => vec![other],
                };
                let new = match v {
                    V::Array(a) => a,
                    other => vec![other],
                };
                for n in new {
                    if !items.contains(&n) {
                        items.push(n);
                    }
                }
                *target = V::Array(items);
            }
        }
    }
}

impl RbTimestamp {
    fn rb_new(ruby: &Ruby, args: &[Value]) -> Result<RbTimestamp, Error> {
        let args = scan_args::scan_args::<(), (Option<Value>,), (), (), (), ()>(args)?;
        match args.optional.0 {
            None => Ok(RbTimestamp(Timestamp::now())),
            Some(v) if v.is_nil() => Ok(RbTimestamp(Timestamp::now())),
            Some(v) => match to_rust(ruby, v)? {
                V::Timestamp(t) => Ok(RbTimestamp(t)),
                V::String(s) => Timestamp::parse_iso8601(&s)
                    .map(RbTimestamp)
                    .ok_or_else(|| {
                        Error::new(
                            ruby.exception_arg_error(),
                            format!("invalid timestamp string format {s}"),
                        )
                    }),
                _ => Err(Error::new(
                    ruby.exception_type_error(),
                    "LogStash::Timestamp.new takes a Time or an ISO8601 string",
                )),
            },
        }
    }

    fn now() -> RbTimestamp {
        RbTimestamp(Timestamp::now())
    }

    fn at(ruby: &Ruby, args: &[Value]) -> Result<RbTimestamp, Error> {
        let args = scan_args::scan_args::<(f64,), (Option<f64>,), (), (), (), ()>(args)?;
        let (secs,) = args.required;
        let usec = args.optional.0.unwrap_or(0.0);
        let millis = secs * 1000.0 + usec / 1000.0;
        if !millis.is_finite() {
            return Err(Error::new(
                ruby.exception_range_error(),
                "time out of range",
            ));
        }
        Ok(RbTimestamp(Timestamp::from_millis(millis.floor() as i64)))
    }

    fn parse_iso8601(ruby: &Ruby, text: RString) -> Result<RbTimestamp, Error> {
        let text = text.to_string()?;
        Timestamp::parse_iso8601(&text)
            .map(RbTimestamp)
            .ok_or_else(|| {
                Error::new(
                    ruby.exception_arg_error(),
                    format!("invalid timestamp string format {text}"),
                )
            })
    }

    fn to_s(&self) -> String {
        self.0.to_iso8601()
    }

    fn to_i(&self) -> i64 {
        self.0.millis().div_euclid(1000)
    }

    fn to_f(&self) -> f64 {
        self.0.millis() as f64 / 1000.0
    }

    fn usec(&self) -> i64 {
        self.0.millis().rem_euclid(1000) * 1000
    }

    fn nsec(&self) -> i64 {
        self.0.millis().rem_euclid(1000) * 1_000_000
    }

    fn millis(&self) -> i64 {
        self.0.millis()
    }

    fn cmp(&self, other: Value) -> Option<i64> {
        let other = <&RbTimestamp>::try_convert(other).ok()?;
        Some(self.0.cmp(&other.0) as i64)
    }

    fn eq(&self, other: Value) -> bool {
        <&RbTimestamp>::try_convert(other).is_ok_and(|o| o.0 == self.0)
    }

    fn hash(&self) -> i64 {
        self.0.millis()
    }
}

/// Defines `LogStash::Event` and `LogStash::Timestamp` (the prelude adds the Ruby-side
/// helpers).
pub(crate) fn define(ruby: &Ruby) -> Result<(), Error> {
    let ls: RModule = ruby.define_module("LogStash")?;
    let ev: RClass = ls.define_class("Event", ruby.class_object())?;
    ev.undef_default_alloc_func();
    ev.define_singleton_method("new", function!(RbEvent::rb_new, -1))?;
    ev.define_method("get", method!(RbEvent::get, 1))?;
    ev.define_method("set", method!(RbEvent::set, 2))?;
    ev.define_method("remove", method!(RbEvent::remove, 1))?;
    ev.define_method("include?", method!(RbEvent::include, 1))?;
    ev.define_method("tag", method!(RbEvent::tag, 1))?;
    ev.define_method("cancel", method!(RbEvent::cancel, 0))?;
    ev.define_method("uncancel", method!(RbEvent::uncancel, 0))?;
    ev.define_method("cancelled?", method!(RbEvent::is_cancelled, 0))?;
    ev.define_method("clone", method!(RbEvent::clone_event, 0))?;
    ev.define_method("to_hash", method!(RbEvent::to_hash, 0))?;
    ev.define_method(
        "to_hash_with_metadata",
        method!(RbEvent::to_hash_with_metadata, 0),
    )?;
    ev.define_method("to_json", method!(RbEvent::to_json, -1))?;
    ev.define_method("timestamp", method!(RbEvent::timestamp, 0))?;
    ev.define_method("timestamp=", method!(RbEvent::set_timestamp, 1))?;
    ev.define_method("sprintf", method!(RbEvent::sprintf, 1))?;
    ev.define_method("to_s", method!(RbEvent::to_s, 0))?;
    ev.define_method("append", method!(RbEvent::append, 1))?;
    ev.define_method("[]", method!(RbEvent::direct_access, -1))?;
    ev.define_method("[]=", method!(RbEvent::direct_access, -1))?;

    let ts: RClass = ls.define_class("Timestamp", ruby.class_object())?;
    ts.undef_default_alloc_func();
    ts.define_singleton_method("new", function!(RbTimestamp::rb_new, -1))?;
    ts.define_singleton_method("now", function!(RbTimestamp::now, 0))?;
    ts.define_singleton_method("at", function!(RbTimestamp::at, -1))?;
    ts.define_singleton_method("parse_iso8601", function!(RbTimestamp::parse_iso8601, 1))?;
    ts.define_method("to_s", method!(RbTimestamp::to_s, 0))?;
    ts.define_method("to_iso8601", method!(RbTimestamp::to_s, 0))?;
    ts.define_method("to_i", method!(RbTimestamp::to_i, 0))?;
    ts.define_method("to_f", method!(RbTimestamp::to_f, 0))?;
    ts.define_method("usec", method!(RbTimestamp::usec, 0))?;
    ts.define_method("nsec", method!(RbTimestamp::nsec, 0))?;
    ts.define_method("__millis", method!(RbTimestamp::millis, 0))?;
    ts.define_method("<=>", method!(RbTimestamp::cmp, 1))?;
    ts.define_method("==", method!(RbTimestamp::eq, 1))?;
    ts.define_method("eql?", method!(RbTimestamp::eq, 1))?;
    ts.define_method("hash", method!(RbTimestamp::hash, 0))?;
    Ok(())
}

fn map_to_ruby(ruby: &Ruby, m: &Map) -> Result<RHash, Error> {
    let h = ruby.hash_new();
    for (k, v) in m {
        h.aset(ruby.str_new(k.as_str()), to_ruby(ruby, v)?)?;
    }
    Ok(h)
}

/// A sluice value as Ruby sees it (a copy).
pub(crate) fn to_ruby(ruby: &Ruby, v: &V) -> Result<Value, Error> {
    Ok(match v {
        V::Null => ruby.qnil().as_value(),
        V::Bool(true) => ruby.qtrue().as_value(),
        V::Bool(false) => ruby.qfalse().as_value(),
        V::Int(i) => ruby.integer_from_i64(*i).as_value(),
        V::BigInt(b) => ruby.integer_from_i128(b.get()).as_value(),
        V::Float(f) => ruby.float_from_f64(*f).as_value(),
        // A Bignum past 128 bits is one again; a decimal fraction is the nearest Float.
        V::Decimal(d) if !d.contains(['.', 'E']) => {
            ruby.module_kernel().funcall("Integer", (d.as_str(),))?
        }
        V::Decimal(d) => ruby
            .float_from_f64(d.parse().unwrap_or(f64::NAN))
            .as_value(),
        V::String(s) => ruby.str_new(s.as_str()).as_value(),
        V::Timestamp(t) => ruby.obj_wrap(RbTimestamp(*t)).as_value(),
        V::Array(items) => {
            let a = ruby.ary_new_capa(items.len());
            for i in items {
                a.push(to_ruby(ruby, i)?)?;
            }
            a.as_value()
        }
        V::Object(m) => map_to_ruby(ruby, m)?.as_value(),
    })
}

/// A Ruby value as a sluice value; what has no event form is a TypeError, as Logstash's
/// "Missing Converter handling".
pub(crate) fn to_rust(ruby: &Ruby, v: Value) -> Result<V, Error> {
    if v.is_nil() {
        return Ok(V::Null);
    }
    if let Some(s) = RString::from_value(v) {
        // Text that is not valid UTF-8 keeps its characters as Latin-1 would read them.
        return Ok(V::String(match s.to_string() {
            Ok(s) => s.into(),
            Err(_) => unsafe { s.as_slice() }
                .iter()
                .map(|&b| b as char)
                .collect::<String>()
                .into(),
        }));
    }
    if let Some(i) = Integer::from_value(v) {
        if let Ok(i) = i.to_i64() {
            return Ok(V::Int(i));
        }
        return match i.to_i128() {
            Ok(i) => Ok(V::integer(i)),
            // Past 128 bits: kept exactly, as its digits.
            Err(_) => {
                let digits: String = i.funcall("to_s", ())?;
                V::decimal(&digits).ok_or_else(|| {
                    Error::new(ruby.exception_range_error(), "an integer with no digits")
                })
            }
        };
    }
    if let Some(f) = Float::from_value(v) {
        return Ok(V::Float(f.to_f64()));
    }
    if v.is_kind_of(ruby.class_true_class()) {
        return Ok(V::Bool(true));
    }
    if v.is_kind_of(ruby.class_false_class()) {
        return Ok(V::Bool(false));
    }
    if let Some(s) = Symbol::from_value(v) {
        return Ok(V::String(s.name()?.as_ref().into()));
    }
    if let Ok(t) = <&RbTimestamp>::try_convert(v) {
        return Ok(V::Timestamp(t.0));
    }
    if let Some(a) = RArray::from_value(v) {
        let mut items = Vec::with_capacity(a.len());
        for i in a.into_iter() {
            items.push(to_rust(ruby, i)?);
        }
        return Ok(V::Array(items));
    }
    if let Some(h) = RHash::from_value(v) {
        let mut m = Map::new();
        h.foreach(|k: Value, val: Value| {
            let key: String = if let Some(s) = RString::from_value(k) {
                s.to_string()?
            } else {
                k.funcall::<_, _, RString>("to_s", ())?.to_string()?
            };
            m.insert(key.as_str().into(), to_rust(ruby, val)?);
            Ok(magnus::r_hash::ForEach::Continue)
        })?;
        return Ok(V::Object(m));
    }
    if v.is_kind_of(ruby.class_time()) {
        let secs: i64 = v.funcall("to_i", ())?;
        let usec: i64 = v.funcall("usec", ())?;
        return Ok(V::Timestamp(Timestamp::from_millis(
            secs * 1000 + usec / 1000,
        )));
    }
    if v.respond_to("to_f", false)? && v.class().inspect() == "BigDecimal" {
        let f: f64 = v.funcall("to_f", ())?;
        return Ok(V::Float(f));
    }
    let class = v.class().inspect();
    let simple = class.rsplit("::").next().unwrap_or(&class).to_owned();
    Err(Error::new(
        ruby.exception_type_error(),
        format!("Missing Converter handling for full class name={class}, simple name={simple}"),
    ))
}
