//! Running one test-case file through the harness, in-process and synchronously: its lines are
//! decoded by the tapped input's codec, numbered (`[@metadata][__lfv_id]`) and given their
//! fields, then the input's `type`/`tags`/`add_field`; the pipeline's filters run on them as
//! one batch; each event goes to the outputs its conditionals lead to; events reaching a
//! `pipeline` output go on, as copies, to the pipelines listening on its addresses. At the end
//! the filters' final flush (aggregate and the like) goes the same way.

use sluice_event::{Event, FieldRef, Template, Value};
use sluice_pipeline::graph::{self, FilterChain};
use sluice_pipeline::plugin::add_fields;

use super::cases::{bracket_parts, expand, Format, TestFile, DUMMY_LINE};
use super::setup::{Harness, Listen, Sink, Tap};

/// An event that reached a collector, with that output's id.
pub struct Collected {
    pub event: Event,
    pub output: String,
}

/// How many `pipeline` hops an event may take, and how many copies `pipeline` outputs may
/// make for one file, before a loop between pipelines is reported.
const MAX_HOPS: usize = 32;
const MAX_FORWARDED: usize = 1_000_000;

pub struct Run<'h> {
    h: &'h Harness,
    /// Per pipeline: its filters and its output tree, compiled for this file alone.
    stages: Vec<(FilterChain, Vec<graph::Node>)>,
    out: Vec<Collected>,
    forwarded: usize,
    /// Collect an event once however many outputs it reaches (what came out of the
    /// pipelines), rather than once per output.
    once: bool,
}

impl<'h> Run<'h> {
    /// Every pipeline compiled afresh, so that no filter state (aggregate maps, ruby's
    /// `init`, caches, a final flush already done) comes from another file.
    pub fn new(h: &'h Harness) -> Result<Self, String> {
        let mut stages = Vec::with_capacity(h.stages.len());
        for st in &h.stages {
            let compiled = graph::compile(&st.config, &st.registry).map_err(|e| e.to_string())?;
            let mut chain = compiled.filter_chain();
            // As the test tools run Logstash (one worker): events keep their order.
            chain.set_ordered(true);
            if st.lineage {
                chain.set_lineage(&st.id, &compiled.plugin_list().filters);
            }
            stages.push((chain, compiled.output_tree));
        }
        Ok(Run {
            h,
            stages,
            out: Vec::new(),
            forwarded: 0,
            once: false,
        })
    }

    /// Feeds the file's lines through `tap` and returns what the collectors got.
    pub fn feed(mut self, tap: &Tap, file: &TestFile) -> Result<Vec<Collected>, String> {
        // LFV 1.x makes the input itself, with the file's codec.
        let codec_ast = match file.format {
            Format::Lfv1 => v1_codec(&file.codec)?,
            _ => tap.codec.clone(),
        };
        let mut codec = self.h.stages[tap.stage]
            .registry
            .build_codec(&codec_ast.source, &codec_ast)
            .map_err(|e| format!("input {:?}: {e}", tap.id))?;
        let mut events = Vec::new();
        let mut fields = Vec::new();
        for case in &file.cases {
            for line in &case.lines {
                let line = match file.format {
                    Format::Lfv => lfv_line(line, &file.codec),
                    Format::Lfv1 => v1_line(line, &file.codec)?,
                    Format::Sluice => line.clone(),
                };
                // Logstash's plain codec makes an event of an empty chunk too; sluice's
                // does so for a line (a stream's empty read is no event).
                if line.is_empty() && codec_ast.name == "plain" {
                    codec.decode_line(b"", &mut events);
                } else {
                    codec.decode(line.as_bytes(), &mut events);
                }
                fields.push(&case.fields);
            }
        }
        // LFV 1.x's input is Logstash's stdin (or unix), which does not flush its codec at
        // the end; LFV 2's generator does.
        if file.format != Format::Lfv1 {
            codec.flush(&mut events);
        }
        let id_ref = FieldRef::parse("[@metadata][__lfv_id]").expect("a valid reference");
        if file.format == Format::Lfv1 {
            // LFV 1.x's input: `fields` as its `add_field`, then what the input sets unless
            // the event has it: stdin the host; a unix input (`--sockets`) the host and the
            // socket's path.
            let add: Vec<(Template, Template)> = file
                .add_field
                .iter()
                .map(|(k, v)| (Template::parse(k), Template::parse(v)))
                .collect();
            let ecs = self.h.stages[tap.stage].registry.ecs_compatibility() != Some("disabled");
            let input = if self.h.sockets { "unix" } else { "stdin" };
            let sets = input_fields(input, ecs);
            for (i, e) in events.iter_mut().enumerate() {
                e.set(&id_ref, Value::String(i.to_string().into()));
                add_fields(e, &add);
                set_input_fields(e, &sets);
            }
            self.deliver(tap.stage, events, 0)?;
            return self.final_flush();
        }
        for (i, e) in events.iter_mut().enumerate() {
            e.set(&id_ref, Value::String(i.to_string().into()));
            match fields.get(i) {
                Some(f) => {
                    for (k, v) in f.iter() {
                        set_top(e, k, v);
                    }
                }
                None => e.append_tag("lfv_fields_not_found"),
            }
            if e.get_field("message")
                .is_some_and(|m| matches!(m, Value::String(s) if s.as_str() == DUMMY_LINE))
            {
                e.remove(&FieldRef::parse("message").expect("a valid reference"));
            }
            tap.decoration.apply(e);
            self.lineage_of_input(tap, e);
        }
        self.deliver(tap.stage, events, 0)?;
        self.final_flush()
    }

    /// The tapped input's `pipeline/id` in an event's lineage, when its pipeline keeps one.
    fn lineage_of_input(&self, tap: &Tap, e: &mut Event) {
        let st = &self.h.stages[tap.stage];
        if st.lineage {
            sluice_pipeline::lineage::append(e, &format!("{}/{}", st.id, tap.id));
        }
    }

    /// Feeds `bytes` through `tap` as its input reads them, and returns each event that came
    /// out of the pipelines once, in order. A stream input (`stdin`, `tcp`, `unix`) decodes
    /// the bytes as a stream, reading `plain` as `line` and `json` as `json_lines`; other
    /// inputs (`file` and the like) decode line by line. As in Logstash, `stdin` does not
    /// flush its codec at the end (a multiline event still open, or a last line without its
    /// newline, is no event); the others do. `stdin` sets its host unless the event has one.
    pub fn feed_input(mut self, tap: &Tap, bytes: &[u8]) -> Result<Vec<Collected>, String> {
        self.once = true;
        let stream = matches!(tap.input.as_str(), "stdin" | "tcp" | "unix");
        let codec_ast = if stream {
            streaming_codec(&tap.codec)
        } else {
            tap.codec.clone()
        };
        let registry = &self.h.stages[tap.stage].registry;
        let mut codec = registry
            .build_codec(&codec_ast.source, &codec_ast)
            .map_err(|e| format!("input {:?}: {e}", tap.id))?;
        let mut events = Vec::new();
        if stream {
            codec.decode(bytes, &mut events);
        } else {
            let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
            for line in body.split(|b| *b == b'\n') {
                codec.decode_line(line, &mut events);
            }
        }
        if tap.input != "stdin" {
            codec.flush(&mut events);
        } else if codec.pending_bytes() > 0 {
            eprintln!(
                "note: the input ends inside an event ({} bytes not made into one): like Logstash's stdin, it is not emitted",
                codec.pending_bytes()
            );
        }
        let ecs = tap
            .ecs
            .unwrap_or_else(|| registry.ecs_compatibility() != Some("disabled"));
        let sets = input_fields(&tap.input, ecs);
        for e in &mut events {
            tap.decoration.apply(e);
            set_input_fields(e, &sets);
            self.lineage_of_input(tap, e);
        }
        self.deliver(tap.stage, events, 0)?;
        self.final_flush()
    }

    /// The final flush, then what the collectors got.
    fn final_flush(mut self) -> Result<Vec<Collected>, String> {
        // The final flush, senders before receivers (what a sender's flush releases meets the
        // receiver's filters before they flush), again while anything is released.
        for _ in 0..=MAX_HOPS {
            let mut released = false;
            for &s in &self.h.flush_order {
                let flushed = self.stages[s].0.flush();
                if !flushed.is_empty() {
                    released = true;
                    self.route(s, flushed, 0)?;
                }
            }
            if !released {
                return Ok(self.out);
            }
        }
        Err("the filters' final flush kept releasing events: a loop between pipelines?".to_owned())
    }

    fn deliver(&mut self, stage: usize, mut events: Vec<Event>, hops: usize) -> Result<(), String> {
        if hops > MAX_HOPS {
            return Err(format!(
                "events went through more than {MAX_HOPS} pipeline outputs: a loop between pipelines?"
            ));
        }
        self.stages[stage].0.run(&mut events);
        self.route(stage, events, hops)
    }

    /// Hands each event to the outputs it reaches, one event at a time (so that collected
    /// events keep the order they arrived in).
    fn route(&mut self, stage: usize, events: Vec<Event>, hops: usize) -> Result<(), String> {
        let st = &self.h.stages[stage];
        let tree = &self.stages[stage].1;
        let mut per_output: Vec<Vec<&Event>> = vec![Vec::new(); st.sinks.len()];
        // (target pipeline, its input, event), in order.
        let mut forward: Vec<(usize, &Listen, Event)> = Vec::new();
        for e in &events {
            if e.is_cancelled() {
                continue;
            }
            per_output.iter_mut().for_each(Vec::clear);
            graph::route(tree, std::slice::from_ref(e), &mut per_output);
            let mut collected = false;
            for (i, hits) in per_output.iter().enumerate() {
                for _ in hits {
                    match &st.sinks[i] {
                        Sink::Collect(_) if self.once && collected => {}
                        Sink::Collect(id) => {
                            collected = true;
                            self.out.push(Collected {
                                event: e.clone(),
                                output: id.clone(),
                            })
                        }
                        Sink::Send { id, to: addresses } => {
                            for a in addresses {
                                for (t, target) in self.h.stages.iter().enumerate() {
                                    for listen in target.listens.iter().filter(|l| &l.address == a)
                                    {
                                        let mut copy = e.clone();
                                        if st.lineage {
                                            let label = format!("{}/{id}", st.id);
                                            sluice_pipeline::lineage::append(&mut copy, &label);
                                        }
                                        forward.push((t, listen, copy));
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        drop(per_output);
        self.forwarded += forward.len();
        if self.forwarded > MAX_FORWARDED {
            return Err(format!(
                "pipeline outputs made more than {MAX_FORWARDED} copies of events: a loop between pipelines?"
            ));
        }
        while !forward.is_empty() {
            let target = forward[0].0;
            let (now, later): (Vec<_>, Vec<_>) =
                forward.into_iter().partition(|(t, _, _)| *t == target);
            forward = later;
            let batch = now
                .into_iter()
                .map(|(t, l, mut e)| {
                    l.decoration.apply(&mut e);
                    let st = &self.h.stages[t];
                    if st.lineage {
                        let label = format!("{}/{}", st.id, l.id);
                        sluice_pipeline::lineage::append(&mut e, &label);
                    }
                    e
                })
                .collect();
            self.deliver(target, batch, hops + 1)?;
        }
        Ok(())
    }
}

/// Sets a top-level field from a test case's `fields` (nested objects as given).
fn set_top(e: &mut Event, key: &str, v: &serde_json::Value) {
    let value = Value::from(v.clone());
    match FieldRef::parse(&format!("[{key}]")) {
        Ok(r) if !key.contains(['[', ']']) => e.set(&r, value),
        _ => e.set_field(key, value),
    }
}

/// A test line as LFV's generator hands it to the codec. LFV writes each line into a Logstash
/// config string: single-quoted when it holds an unescaped `"`, with every unescaped `'`
/// then escaped, and Logstash keeps that backslash (it does not process escapes); LFV's tests
/// expect it. With the test file's `codec: json_lines`, field references in a JSON line's keys
/// become nested objects.
fn lfv_line(line: &str, codec: &str) -> String {
    let mut line = line.to_owned();
    if codec == "json_lines" {
        if let Ok(serde_json::Value::Object(m)) = serde_json::from_str(line.trim_end()) {
            if m.keys().any(|k| bracket_parts(k).is_some()) {
                line = serde_json::Value::Object(expand(&m)).to_string();
            }
        }
    }
    let unescaped = |b: &[u8], q: u8| {
        b.iter()
            .enumerate()
            .any(|(i, &c)| c == q && (i == 0 || b[i - 1] != b'\\'))
    };
    if !unescaped(line.as_bytes(), b'"') {
        return line;
    }
    let mut out = String::with_capacity(line.len() + 4);
    let mut prev = None;
    for c in line.chars() {
        if c == '\'' && prev != Some('\\') {
            out.push('\\');
        }
        out.push(c);
        prev = Some(c);
    }
    out
}

/// The codec LFV 1.x writes into its input (`codec => <the file's codec>`), as a plugin.
fn v1_codec(codec: &str) -> Result<sluice_config::Plugin, String> {
    let text = format!("input {{ stdin {{ codec => {codec} }} }}");
    let config = sluice_config::parse("the test file's codec", &text)
        .map_err(|e| format!("codec {codec:?}: {e}"))?;
    config
        .sections
        .first()
        .and_then(|s| s.body.first())
        .and_then(|st| match st {
            sluice_config::Statement::Plugin(p) => p.attributes.first(),
            _ => None,
        })
        .and_then(|a| match &a.value {
            sluice_config::Value::Plugin(p) => Some(p.clone()),
            sluice_config::Value::String(s) | sluice_config::Value::Bareword(s) => {
                Some(sluice_config::Plugin {
                    name: s.clone(),
                    span: a.span,
                    attributes: Vec::new(),
                    source: "the test file's codec".to_owned(),
                })
            }
            _ => None,
        })
        .map(|p| streaming_codec(&p))
        .ok_or_else(|| format!("codec {codec:?} is not a codec"))
}

/// A stream input's codec, as Logstash's `fix_streaming_codecs` makes it: `plain` is read as
/// `line`, `json` as `json_lines`, their options kept.
fn streaming_codec(codec: &sluice_config::Plugin) -> sluice_config::Plugin {
    let mut c = codec.clone();
    match c.name.as_str() {
        "plain" => c.name = "line".to_owned(),
        "json" => c.name = "json_lines".to_owned(),
        _ => {}
    }
    c
}

/// What an input sets on its events unless they have it: stdin its host; a unix input (LFV
/// 1.x's `--sockets`) its host and its socket's path; the names by ECS mode, as Logstash's
/// plugins choose them.
fn input_fields(input: &str, ecs: bool) -> Vec<(FieldRef, Value)> {
    let host = Value::String(sluice_pipeline::hostname().into());
    let socket = Value::String(super::setup::SOCKET_PATH.into());
    let fields: Vec<(&str, Value)> = match (input, ecs) {
        ("stdin", false) => vec![("host", host)],
        ("stdin", true) => vec![("[host][hostname]", host)],
        ("unix", false) => vec![("host", host), ("path", socket)],
        ("unix", true) => vec![("[host][name]", host), ("[file][path]", socket)],
        _ => Vec::new(),
    };
    fields
        .into_iter()
        .map(|(f, v)| (FieldRef::parse(f).expect("a valid reference"), v))
        .collect()
}

/// Sets each of `fields` the event lacks, not through a parent that is no hash.
fn set_input_fields(e: &mut Event, fields: &[(FieldRef, Value)]) {
    for (field, value) in fields {
        let parent_ok = match field.segments() {
            [first, _, ..] => matches!(
                e.get(&FieldRef::top_level(first)),
                None | Some(Value::Object(_))
            ),
            _ => true,
        };
        if parent_ok && e.get(field).is_none() {
            e.set(field, value.clone());
        }
    }
}

/// A test line as LFV 1.x sends it: with the `json_lines` codec, parsed and written again as
/// Go writes JSON (one compact line; numbers through a float64, so `1.0` goes as `1`; field
/// references in keys made nested); any other codec gets the line as it is. Each line ends
/// with a newline, as LFV writes it to the input.
fn v1_line(line: &str, codec: &str) -> Result<String, String> {
    if codec != "json_lines" {
        return Ok(format!("{line}\n"));
    }
    match serde_json::from_str::<serde_json::Value>(line) {
        Ok(serde_json::Value::Object(m)) => Ok(go_json(&serde_json::Value::Object(expand(&m))) + "\n"),
        _ => Err(format!(
            "an input line is not a JSON object, which LFV 1.x needs with codec json_lines: {line:?}"
        )),
    }
}

/// `v` as Go's encoding/json writes a value decoded into `interface{}`: numbers are float64
/// (integral ones below 1e21 written as integers).
fn go_json(v: &serde_json::Value) -> String {
    fn norm(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Number(n) => {
                let f = n.as_f64().unwrap_or(0.0);
                // Integral and within i64 (Go writes any below 1e21 without an exponent;
                // larger ones stay floats here, equal in value).
                if f.fract() == 0.0 && f.abs() < 9.2e18 {
                    serde_json::json!(f as i64)
                } else {
                    serde_json::json!(f)
                }
            }
            serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(norm).collect()),
            serde_json::Value::Object(m) => {
                serde_json::Value::Object(m.iter().map(|(k, v)| (k.clone(), norm(v))).collect())
            }
            other => other.clone(),
        }
    }
    norm(v).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_with_a_double_quote_get_their_single_quotes_escaped_as_lfv_does() {
        assert_eq!(lfv_line("a ' b", "line"), "a ' b");
        assert_eq!(lfv_line("a \" and ' b", "line"), "a \" and \\' b");
        assert_eq!(lfv_line("a \" and \\' b", "line"), "a \" and \\' b");
        assert_eq!(lfv_line("a \\\" and ' b", "line"), "a \\\" and ' b");
    }
}
