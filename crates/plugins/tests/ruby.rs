//! The ruby filter: Logstash's Event API in Ruby, method by method (cases from
//! logstash-filter-ruby's spec and Logstash's event specs), exceptions, new_event_block,
//! init, and option errors.
#![cfg(feature = "ruby")]

mod common;

use common::{chain, events, get, one, run_filters, tags, v};

use serde_json::json;
use sluice_event::Value;

/// A ruby filter with `code` (single quotes in the code are fine: it is written in a
/// double-quoted config string with `"` escaped away).
fn ruby(code: &str) -> String {
    format!(
        "filter {{ ruby {{ code => \"{}\" }} }}",
        code.replace('"', "\\\"")
    )
}

#[test]
fn get_and_set_convert_values_both_ways() {
    let e = one(
        &ruby(
            "event.set('up', event.get('message').upcase); \
             event.set('[nested][copy]', event.get('obj')); \
             event.set('classes', [event.get('i'), event.get('f'), event.get('big'), event.get('obj'), event.get('list'), event.get('t'), event.get('nothing'), event.get('@timestamp')].map { |x| x.class.name }); \
             event.set('sum', event.get('i') + 1); \
             event.set('big2', event.get('big') * 2); \
             event.set('half', event.get('f') / 2); \
             event.set('sym', :abc); \
             event.set('when', Time.at(0).utc)",
        ),
        json!({"message": "hello", "i": 41, "f": 3.0, "big": 12345678901234567890u64, "obj": {"a": [1, {"b": null}]}, "list": ["x", 2], "t": true}),
    );
    assert_eq!(get(&e, "up"), v(json!("HELLO")));
    assert_eq!(get(&e, "[nested][copy]"), v(json!({"a": [1, {"b": null}]})));
    assert_eq!(
        get(&e, "classes"),
        v(json!([
            "Integer",
            "Float",
            "Integer",
            "Hash",
            "Array",
            "TrueClass",
            "NilClass",
            "LogStash::Timestamp"
        ]))
    );
    assert_eq!(get(&e, "sum"), v(json!(42)));
    assert_eq!(get(&e, "big2"), Some(Value::integer(24691357802469135780)));
    assert_eq!(get(&e, "half"), v(json!(1.5)));
    assert_eq!(get(&e, "sym"), v(json!("abc")));
    assert_eq!(
        get(&e, "when"),
        Some(Value::Timestamp(sluice_event::Timestamp::from_millis(0)))
    );
}

/// A Bignum past 128 bits crosses both ways exactly (it was a RangeError).
#[test]
fn bignums_past_128_bits_cross_both_ways() {
    let e = one(
        &ruby("event.set('p', 2**200); event.set('back', event.get('p') + 1); event.set('cls', event.get('p').class.name)"),
        json!({}),
    );
    let p = "1606938044258990275541962092341162602522202993782792835301376";
    assert_eq!(get(&e, "p"), Value::decimal(p));
    assert_eq!(
        get(&e, "back"),
        Value::decimal("1606938044258990275541962092341162602522202993782792835301377")
    );
    assert_eq!(get(&e, "cls"), v(json!("Integer")));
}

#[test]
fn get_returns_a_copy() {
    let e = one(
        &ruby("h = event.get('obj'); h['added'] = 1; event.get('list') << 3"),
        json!({"obj": {"a": 1}, "list": [1]}),
    );
    assert_eq!(get(&e, "obj"), v(json!({"a": 1})));
    assert_eq!(get(&e, "list"), v(json!([1])));
}

#[test]
fn remove_include_tag_and_cancel() {
    let out = run_filters(
        &ruby(
            "event.set('had_a', event.include?('a')); \
             event.set('removed', event.remove('a')); \
             event.set('has_a', event.include?('a')); \
             event.tag('one'); event.tag('one'); \
             event.cancel if event.get('drop')",
        ),
        &[json!({"a": 5}), json!({"a": 6, "drop": true})],
    )
    .unwrap();
    // The cancelled event is gone.
    assert_eq!(out.len(), 1);
    let e = &out[0];
    assert_eq!(get(e, "had_a"), v(json!(true)));
    assert_eq!(get(e, "removed"), v(json!(5)));
    assert_eq!(get(e, "has_a"), v(json!(false)));
    assert_eq!(tags(e), vec!["one"]);
    assert_eq!(get(e, "drop"), None);
}

#[test]
fn hashes_json_timestamps_sprintf_clone_and_append() {
    let e = one(
        &ruby(
            "event.set('keys', event.to_hash.keys.sort); \
             event.set('meta_keys', event.to_hash_with_metadata.keys.sort); \
             event.set('json', JSON.parse(event.to_json)['message']); \
             event.set('ts', event.timestamp.to_s); \
             event.set('ts_i', event.timestamp.to_i); \
             event.set('ts_year', event.timestamp.time.year); \
             event.set('later', (event.timestamp + 60).to_s); \
             event.set('parsed', LogStash::Timestamp.new('2020-01-01T00:00:00Z').to_i); \
             event.set('line', event.sprintf('%{message} at %{+YYYY}')); \
             c = event.clone; c.set('message', 'changed'); event.set('clone_said', c.get('message')); \
             other = LogStash::Event.new('extra' => 1, 'message' => 'more'); event.append(other)",
        ),
        json!({"message": "hi", "@timestamp": "2026-11-24T10:00:00.000Z", "@metadata": {"m": 1}}),
    );
    assert_eq!(
        get(&e, "keys"),
        v(json!(["@timestamp", "@version", "message"]))
    );
    assert_eq!(
        get(&e, "meta_keys"),
        v(json!([
            "@metadata",
            "@timestamp",
            "@version",
            "keys",
            "message"
        ]))
    );
    assert_eq!(get(&e, "json"), v(json!("hi")));
    assert_eq!(get(&e, "ts"), v(json!("2026-11-24T10:00:00.000Z")));
    assert_eq!(get(&e, "ts_i"), v(json!(1795514400)));
    assert_eq!(get(&e, "ts_year"), v(json!(2026)));
    assert_eq!(get(&e, "later"), v(json!("2026-11-24T10:01:00.000Z")));
    assert_eq!(get(&e, "parsed"), v(json!(1577836800)));
    assert_eq!(get(&e, "line"), v(json!("hi at 2026")));
    assert_eq!(get(&e, "clone_said"), v(json!("changed")));
    assert_eq!(get(&e, "extra"), v(json!(1)));
    assert_eq!(get(&e, "message"), v(json!(["hi", "more"])));
}

#[test]
fn exceptions_tag_the_event_and_the_pipeline_goes_on() {
    let out = run_filters(
        "filter { ruby { code => \"raise ArgumentError, 'bad value' if event.get('n') == 2; event.set('ok', true)\" add_tag => ['matched'] } }",
        &[json!({"n": 1}), json!({"n": 2}), json!({"n": 3})],
    )
    .unwrap();
    assert_eq!(tags(&out[0]), vec!["matched"]);
    assert_eq!(tags(&out[1]), vec!["_rubyexception"]);
    assert_eq!(get(&out[1], "ok"), None);
    assert_eq!(tags(&out[2]), vec!["matched"]);

    let e = one(
        "filter { ruby { code => \"event.get('x').nope\" tag_on_exception => '_custom' tag_with_exception_message => true } }",
        json!({"x": 1}),
    );
    let t = tags(&e);
    assert_eq!(t.len(), 2, "{t:?}");
    assert!(
        t[0].starts_with("_custom: undefined method `nope'"),
        "{t:?}"
    );
    assert_eq!(t[1], "_custom");

    // Direct field access is refused as in Logstash 5+.
    let e = one(&ruby("event['message']"), json!({"message": "m"}));
    assert_eq!(tags(&e), vec!["_rubyexception"]);
}

#[test]
fn init_state_and_new_event_block() {
    let out = run_filters(
        "filter { ruby { init => \"@count = 0\" code => \"@count += 1; event.set('count', @count); new_event_block.call(LogStash::Event.new('child_of' => @count)) if @count.odd?\" add_tag => ['seen'] } }",
        &[json!({}), json!({}), json!({})],
    )
    .unwrap();
    let counts: Vec<_> = out.iter().map(|e| get(e, "count")).collect();
    assert_eq!(
        counts,
        vec![v(json!(1)), v(json!(2)), v(json!(3)), None, None]
    );
    assert_eq!(get(&out[3], "child_of"), v(json!(1)));
    assert_eq!(get(&out[4], "child_of"), v(json!(3)));
    // New events are not decorated, as Logstash yields them.
    assert_eq!(tags(&out[0]), vec!["seen"]);
    assert!(tags(&out[3]).is_empty());
}

#[test]
fn logger_and_errors_at_load() {
    let e = one(
        &ruby("@logger.info('from ruby', :n => 1); logger.warn('again') if @logger.debug? || true; event.set('logged', true)"),
        json!({}),
    );
    assert_eq!(get(&e, "logged"), v(json!(true)));

    let err = run_filters(&ruby("event.set('a'"), &[]).unwrap_err();
    assert!(err.contains("does not compile"), "{err}");
    assert!(err.contains("SyntaxError"), "{err}");
    let err = run_filters(
        "filter { ruby { init => \"raise 'no init'\" code => \"1\" } }",
        &[],
    )
    .unwrap_err();
    assert!(err.contains("no init"), "{err}");
    let err = run_filters("filter { ruby { } }", &[]).unwrap_err();
    assert!(
        err.contains("You must either use an inline script"),
        "{err}"
    );
    let err = run_filters("filter { ruby { path => \"/nonexistent/x.rb\" } }", &[]).unwrap_err();
    assert!(err.contains("cannot read /nonexistent/x.rb"), "{err}");
}

fn script_file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("sluice-ruby-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// A script file as logstash-filter-ruby's spec uses them: register(params), filter(event)
/// returning the events to keep, and test blocks run when the config loads.
const SCALER: &str = r#"
def register(params)
  @field = params['field']
  @factor = params['factor']
end

def filter(event)
  value = event.get(@field)
  return [] if value.nil?
  extra = LogStash::Event.new('copy_of' => value)
  raise 'negative' if value < 0
  [event.tap { |e| e.set(@field, value * @factor) }, extra]
end

test 'scales the field' do
  parameters { { 'field' => 'n', 'factor' => 3 } }
  in_event { { 'n' => 5 } }
  expect('two events') { |events| events.size == 2 }
  expect('fifteen') { |events| events.first.get('n') == 15 }
end
"#;

#[test]
fn script_files_register_filter_and_test() {
    let path = script_file("scaler.rb", SCALER);
    let config = format!(
        "filter {{ ruby {{ path => \"{path}\" script_params => {{ \"field\" => \"n\" \"factor\" => 2 }} add_tag => ['scaled'] }} }}"
    );
    let out = run_filters(
        &config,
        &[json!({"n": 4}), json!({"other": 1}), json!({"n": -1})],
    )
    .unwrap();
    // 4 → 8 plus a new event; the event without n is dropped (nothing returned); -1 raises.
    assert_eq!(out.len(), 3, "{out:?}");
    assert_eq!(get(&out[0], "n"), v(json!(8)));
    assert_eq!(tags(&out[0]), vec!["scaled"]);
    assert_eq!(get(&out[1], "n"), v(json!(-1)));
    assert_eq!(tags(&out[1]), vec!["_rubyexception"]);
    assert_eq!(get(&out[2], "copy_of"), v(json!(4)));
    assert!(tags(&out[2]).is_empty());

    // A failing test fails the config.
    let broken = script_file(
        "broken.rb",
        "def filter(event)\n  event.set('foo', 'bar')\n  [event]\nend\ntest 'sets foo' do\n  in_event { { 'x' => 1 } }\n  expect('foo is baz') { |events| events.first.get('foo') == 'baz' }\nend\n",
    );
    let err = run_filters(
        &format!("filter {{ ruby {{ path => \"{broken}\" }} }}"),
        &[],
    )
    .unwrap_err();
    assert!(err.contains("had 1 failing tests"), "{err}");
    // A script without filter, and one whose filter does not return an array.
    let empty = script_file("empty.rb", "def register(params)\nend\n");
    let err =
        run_filters(&format!("filter {{ ruby {{ path => \"{empty}\" }} }}"), &[]).unwrap_err();
    assert!(err.contains("Script does not define a filter"), "{err}");
    let scalar = script_file("scalar.rb", "def filter(event)\n  event\nend\n");
    let e = one(
        &format!("filter {{ ruby {{ path => \"{scalar}\" }} }}"),
        json!({}),
    );
    assert_eq!(tags(&e), vec!["_rubyexception"]);
}

/// The ruby filter of `file` (under realconfigs) whose `code` option is on `line`, alone in
/// a filter section, with its own options (`init` too).
fn snippet(shared: &std::path::Path, file: &str, line: u32) -> sluice_config::Config {
    use sluice_config::{Plugin, Statement};
    fn find(body: &[Statement], line: u32) -> Option<Plugin> {
        body.iter().find_map(|s| match s {
            Statement::Plugin(p) => (p.name == "ruby"
                && p.attributes
                    .iter()
                    .any(|a| a.name == "code" && a.span.line == line))
            .then(|| p.clone()),
            Statement::If(i) => i
                .branches
                .iter()
                .find_map(|b| find(&b.body, line))
                .or_else(|| i.else_body.as_deref().and_then(|e| find(e, line))),
        })
    }
    let path = shared.join("compat/realconfigs").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut config = sluice_config::parse(file, &text).unwrap_or_else(|e| panic!("{e}"));
    let mut section = config
        .sections
        .iter()
        .find(|s| s.kind == sluice_config::SectionKind::Filter)
        .cloned()
        .unwrap_or_else(|| panic!("{file}: no filter section"));
    let plugin = config
        .sections
        .iter()
        .find_map(|s| find(&s.body, line))
        .unwrap_or_else(|| panic!("{file}: no ruby filter with code on line {line}"));
    section.body = vec![Statement::Plugin(plugin)];
    config.sections = vec![section];
    config
}

/// 30 `ruby { code => … }` blocks of the public configs in `../shared/compat/realconfigs`
/// (read there at run time, by file and line of `code`), each with a sample event and what
/// Logstash 8 makes of it, worked out by reading the Ruby. Old `event['field']` access is
/// an error since Logstash 5, so those events are tagged `_rubyexception`.
#[test]
fn snippets_of_real_configs() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    // (file, line of `code`, input event, expected events: field → value, null for absent)
    let cases: &[(&str, u32, serde_json::Value, serde_json::Value)] = &[
        ("Cyb3rWard0g+HELK/docker/helk-logstash/pipeline/1524-winevent-logon-ids-conversions-filter.conf", 10,
            json!({"SubjectLogonId": "0x3e7"}), json!([{"SubjectLogonId": 999}])),
        ("Cyb3rWard0g+HELK/docker/helk-logstash/pipeline/1592-winevent-conversions-catchall-process-ids-filter.conf", 11,
            json!({"process_id": "0x1a4"}), json!([{"process_id_orig": "0x1a4", "process_id": 420}])),
        ("Cyb3rWard0g+HELK/docker/helk-logstash/pipeline/1010-winevent-winlogbeats-filter.conf", 11,
            json!({"event_data": {"LogonType": "3", "User": "bob"}}),
            json!([{"LogonType": "3", "User": "bob", "event_data": null}])),
        ("DHTC-Tools+logstash-confs/job-records/logstash/joblog.conf", 156,
            json!({"PILOTTIMING": "1|2|3|4|5"}),
            json!([{"get_job_consumption": null, "tags": ["_rubyexception"]}])),
        ("DHTC-Tools+logstash-confs/job-records/logstash/joblog.conf", 219,
            json!({"ENDTIME": "100", "STARTTIME": "40"}),
            json!([{"job_duration": null, "tags": ["_rubyexception"]}])),
        ("alanfx+logstash-configs/rg_logs.conf", 30,
            json!({}), json!([{"datestamp": null, "tags": ["_rubyexception"]}])),
        ("erickrr-bd+Logstash-configurations/etc/logstash/conf.d/f5.conf", 25,
            json!({"a": "\" quoted \"", "n": 5}), json!([{"a": "quoted", "n": 5}])),
        ("erickrr-bd+Logstash-configurations/etc/logstash/conf.d/dbf.conf", 42,
            json!({"@metadata": {"input": {"tcp": {"source": {"name": "fw1"}}}}}), json!([{"host": "fw1"}])),
        ("philhagen+sof-elk/configfiles/2050-netflow.conf", 158,
            json!({"source": {"bytes": 1500}, "raw": {"avg_in_packet_size": 100}}), json!([{"source.packets": 15}])),
        ("philhagen+sof-elk/configfiles/2050-netflow.conf", 211,
            json!({"netflow": {"flow_duration_microseconds": "7500000"}}), json!([{"netflow.flow_duration": 7}])),
        ("philhagen+sof-elk/configfiles/6503-kape_lecmd.conf", 157,
            json!({"file": {"target": {"inode_string": "0x1F"}}}), json!([{"file.target.inode": 31}])),
        ("philhagen+sof-elk/configfiles/8051-postprocess-ip_addresses.conf", 674,
            json!({"related": {"ip": ["10.0.0.1", "10.0.0.2", "10.0.0.1"]}}),
            json!([{"related.ip": ["10.0.0.1", "10.0.0.2"], "related": {}}])),
        ("philhagen+sof-elk/configfiles/8999-postprocess-all.conf", 11,
            json!({"tags": ["a", "b", "a"]}), json!([{"tags": ["a", "b"]}])),
        ("HASecuritySolutions+Logstash/configfiles-5.x/1116_preprocess_bro_ssl.conf", 91,
            json!({"certificate_chain_fuids": "F1,F2,F3"}), json!([{"certificate_chain_count": 3}])),
        ("HASecuritySolutions+Logstash/configfiles-5.x/1123_preprocess_bro_x509.conf", 108,
            json!({"certificate_not_valid_before": 0, "certificate_not_valid_after": 864001}),
            json!([{"certificate_number_days_valid": 10}])),
        ("HASecuritySolutions+Logstash/configfiles/1116_preprocess_bro_ssl.conf", 68,
            json!({"certificate_common_name": "example.org"}),
            json!([{"certificate_common_name_length": null, "tags": ["_rubyexception"]}])),
        ("HASecuritySolutions+Logstash/configfiles-5.x/6000_bro.conf", 129,
            json!({"original_bytes": 10, "respond_bytes": 32}), json!([{"total_bytes": 42}])),
        ("Cargill+OpenSIEM-Logstash-Parsing/config/enrichments/17_dns.conf", 272,
            json!({"source": {"ip": ["1.1.1.1", "1.1.1.1", "2.2.2.2", "3.3.3.3"]}}),
            json!([{"[source][address]": ["1.1.1.1", "2.2.2.2"]}])),
        ("Cargill+OpenSIEM-Logstash-Parsing/config/enrichments/17_dns.conf", 297,
            json!({"source": {"address": ["a.test", "1.1.1.1", "b.test"], "ip": ["1.1.1.1", "1.1.1.1"]}}),
            json!([{"[source][address]": ["a.test", "b.test"]}])),
        ("Cargill+OpenSIEM-Logstash-Parsing/config/enrichments/93_mitre.conf", 18,
            json!({"threat": {"tactic": {"id": ["TA1", "TA2", "TA1"]}}}), json!([{"[threat][tactic][id]": ["TA1", "TA2"]}])),
        ("Cargill+OpenSIEM-Logstash-Parsing/config/processors/api_security_azure.graph_api.conf", 54,
            json!({"az": {"fileStates": [{"path": "/a"}, {"path": ""}, {"path": "/b"}]}}), json!([{"[file][path]": ["/a", "/b"]}])),
        ("Cargill+OpenSIEM-Logstash-Parsing/config/processors/event_hub_audit_azure.event_hub_audit.conf", 78,
            json!({"azaudit": {"properties": {"additionalDetails": [{"key": "other", "value": "x"}, {"key": "additionalinfo", "value": "Role granted for user alice@example. Done"}]}}}),
            json!([{"[user][id]": "alice@example"}])),
        ("Cargill+OpenSIEM-Logstash-Parsing/config/processors/flat_file_atlassian_jira_audit.conf", 22,
            json!({"tmp_msg": {"changedValues": [{"key": "email", "to": "a@b"}, {"key": "name", "to": "A"}]}}),
            json!([{"user_dct": {"email": "a@b", "name": "A"}}])),
        ("Cargill+OpenSIEM-Logstash-Parsing/config/processors/syslog_audit_linux_rsyslog.conf", 219,
            json!({"tmp_data": "6c73202d6c61"}), json!([{"[process][command_line]": "ls -la"}])),
        ("Cargill+OpenSIEM-Logstash-Parsing/config/processors/syslog_audit_trellix.epo.conf", 70,
            json!({"tmp": {"timezone": "-300"}}), json!([{"[tmp][offset][hr]": "-5"}])),
        ("Cargill+OpenSIEM-Logstash-Parsing/config/inputs/kafka/1_kafka_input_template.conf", 38,
            json!({"host": "h1"}), json!([{"[agent][name]": "h1"}])),
        ("elastic+examples/Exploring Public Datasets/nyc_traffic_accidents/nyc_collision_logstash.conf", 19,
            json!({"on_street_name": "MAIN ST", "cross_street_name": "ELM AVE"}), json!([{"intersection": "ELM AVE--MAIN ST"}])),
        ("elastic+examples/Miscellaneous/gdpr/pseudonymization/logstash_fingerprint.conf", 43,
            json!({"identities": [{"name": "x"}, {"name": "y"}]}),
            json!([{"tags": null}, {"name": "x", "tags": ["identities"]}, {"name": "y", "tags": ["identities"]}])),
        ("idaholab+Malcolm/logstash/pipelines/suricata/11_suricata_logs.conf", 243,
            json!({"network": {"protocol": "tcp"}}), json!([{"[network][protocol]": ["rdp", "tcp"]}])),
        ("idaholab+Malcolm/logstash/pipelines/zeek/1300_zeek_normalize.conf", 701,
            json!({"event": {"action": "read"}, "zeek": {"roc_plus": {"opcode": "17", "command": "login"}}}),
            json!([{"[event][action]": ["read", "17:login"]}])),
        ("idaholab+Malcolm/logstash/pipelines/filescan/11_parse.conf", 238,
            json!({"id": 7, "results": {"strelka": {"results": ["r1", "r2"]}}}),
            json!([{"id": 7, "[results][strelka][result]": "r1"}, {"id": 7, "[results][strelka][result]": "r2"}])),
        ("idaholab+Malcolm/logstash/pipelines/zeek/1016_zeek_dce_rpc.conf", 28,
            json!({"message": ["1.5", "C1", "10.0.0.1", "49152", "10.0.0.2", "135", "0.1", "pipe", "ep", "op"]}),
            json!([{"[zeek_cols][uid]": "C1", "[zeek_cols][operation]": "op", "[zeek_cols][resp_p]": "135"}])),
        ("philhagen+sof-elk/configfiles-UNSUPPORTED/6400-suricata.conf", 13,
            json!({"event_type": "fileinfo"}), json!([{"tags": ["_rubyexception"]}])),
    ];
    assert!(cases.len() >= 30);
    let registry = sluice_plugins::registry();
    for (file, line, input, expected) in cases {
        let config = snippet(&shared, file, *line);
        let compiled = sluice_pipeline::graph::compile(&config, &registry)
            .unwrap_or_else(|e| panic!("{file}:{line}: {e}"));
        let mut chain = compiled.filter_chain();
        let mut events = match Value::from(input.clone()) {
            Value::Object(m) => vec![sluice_event::Event::from_map(m)],
            _ => unreachable!(),
        };
        chain.run(&mut events);
        events.retain(|e| !e.is_cancelled());
        let expected = expected.as_array().unwrap();
        assert_eq!(events.len(), expected.len(), "{file}:{line}: {events:?}");
        for (k, (e, want)) in events.iter().zip(expected).enumerate() {
            for (field, value) in want.as_object().unwrap() {
                let r = if field.starts_with('[') {
                    field.clone()
                } else {
                    format!("[{field}]")
                };
                let got = e.get(&sluice_event::FieldRef::parse(&r).unwrap()).cloned();
                let want = (!value.is_null()).then(|| Value::from(value.clone()));
                assert_eq!(got, want, "{file}:{line}: event {k}, field {field}: {e:?}");
            }
        }
    }
}

// ------------------------------------------------------------------------------- aggregate

/// logstash-filter-aggregate's first example: a task's start, SQL and end events, with
/// three aggregate filters sharing the task's map.
#[test]
fn aggregate_start_update_end() {
    let mut c = chain(
        r#"filter {
          if [logger] == "TASK_START" { aggregate { task_id => "%{taskid}" code => "map['sql_duration'] = 0" map_action => "create" } }
          if [logger] == "SQL" { aggregate { task_id => "%{taskid}" code => "map['sql_duration'] += event.get('duration')" map_action => "update" add_tag => ["counted"] } }
          if [logger] == "TASK_END" { aggregate { task_id => "%{taskid}" code => "event.set('sql_duration', map['sql_duration'])" map_action => "update" end_of_task => true timeout => 120 } }
        }"#,
    );
    let mut batch = events(&[
        json!({"n": 0, "logger": "TASK_START", "taskid": "t1"}),
        json!({"n": 1, "logger": "SQL", "taskid": "t1", "duration": 2}),
        json!({"n": 2, "logger": "SQL", "taskid": "t2", "duration": 9}),
        json!({"n": 3, "logger": "SQL", "taskid": "t1", "duration": 3}),
        json!({"n": 4, "logger": "TASK_END", "taskid": "t1"}),
        json!({"n": 5, "logger": "TASK_END", "taskid": "t1"}),
        json!({"n": 6, "logger": "SQL", "duration": 1}),
    ]);
    c.run(&mut batch);
    // Conditionals regroup a batch: put it back in order.
    batch.sort_by_key(|e| match get(e, "n") {
        Some(Value::Int(n)) => n,
        _ => -1,
    });
    assert_eq!(tags(&batch[1]), vec!["counted"]);
    // No map for t2 and map_action update: the filter does not apply.
    assert!(tags(&batch[2]).is_empty());
    assert_eq!(get(&batch[4], "sql_duration"), v(json!(5)));
    // The task ended: its map is gone.
    assert_eq!(get(&batch[5], "sql_duration"), None);
    // No task id: left alone.
    assert!(tags(&batch[6]).is_empty());

    // An exception in the code tags the event.
    let mut c = chain(r#"filter { aggregate { task_id => "%{id}" code => "fail 'Test'" } }"#);
    let mut batch = events(&[json!({"id": 1})]);
    c.run(&mut batch);
    assert_eq!(tags(&batch[0]), vec!["_aggregateexception"]);
}

#[test]
fn aggregate_pushes_maps_as_events() {
    // A map whose code sets map_meta.timeout = 0 is pushed at once, with the timeout options.
    let mut c = chain(
        r#"filter { aggregate { task_id => "%{id}" code => "map['n'] ||= 0; map['n'] += 1; map_meta.timeout = 0 if event.get('last')"
             push_map_as_event_on_timeout => true timeout_task_id_field => "tid" timeout_tags => ["done_%{n}"]
             timeout_code => "event.set('closed', true)" add_tag => ["seen"] } }"#,
    );
    let mut batch = events(&[json!({"id": 7}), json!({"id": 7, "last": true})]);
    c.run(&mut batch);
    assert_eq!(batch.len(), 3);
    let pushed = &batch[2];
    assert_eq!(get(pushed, "n"), v(json!(2)));
    assert_eq!(get(pushed, "tid"), v(json!("7")));
    assert_eq!(get(pushed, "closed"), v(json!(true)));
    // Timeout tags (filled in from the pushed map), but not the filter's add_tag (Logstash
    // does not decorate them).
    assert_eq!(tags(pushed), vec!["done_2"]);
    assert_eq!(tags(&batch[0]), vec!["seen"]);

    // push_previous_map_as_event: a new task id pushes the previous map; the final flush
    // pushes the last one, tagged _aggregatefinalflush.
    let parsed = sluice_config::parse(
        "test",
        r#"filter { aggregate { task_id => "%{id}" code => "map['id'] = event.get('id'); (map['lines'] ||= []) << event.get('line'); event.cancel" push_previous_map_as_event => true timeout => 60 } }"#,
    )
    .unwrap();
    let compiled = sluice_pipeline::graph::compile(&parsed, &sluice_plugins::registry()).unwrap();
    // Two workers' copies of the same filters.
    let (mut c, mut other) = (compiled.filter_chain(), compiled.filter_chain());
    let mut batch = events(&[
        json!({"id": "a", "line": 1}),
        json!({"id": "a", "line": 2}),
        json!({"id": "b", "line": 3}),
    ]);
    c.run(&mut batch);
    batch.retain(|e| !e.is_cancelled());
    assert_eq!(batch.len(), 1);
    assert_eq!(get(&batch[0], "lines"), v(json!([1, 2])));
    let last = c.flush();
    assert_eq!(last.len(), 1);
    assert_eq!(get(&last[0], "lines"), v(json!([3])));
    assert_eq!(tags(&last[0]), vec!["_aggregatefinalflush"]);
    // The final flush happens once, however many workers call it.
    assert!(other.flush().is_empty());
}

#[test]
fn aggregate_maps_survive_a_restart_through_aggregate_maps_path() {
    let dir = std::env::temp_dir().join(format!("sluice-aggregate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("maps");
    let _ = std::fs::remove_file(&path);
    let config = format!(
        r#"filter {{
          if [start] {{ aggregate {{ task_id => "%{{id}}" code => "map['total'] = 10" map_action => "create" aggregate_maps_path => "{}" }} }}
          else {{ aggregate {{ task_id => "%{{id}}" code => "event.set('total', map['total'])" map_action => "update" end_of_task => true }} }}
        }}"#,
        path.display()
    );
    {
        let mut c = chain(&config);
        let mut batch = events(&[json!({"id": "x", "start": true})]);
        c.run(&mut batch);
    }
    // The pipeline is gone: its maps were written at close. A new one reads them back.
    let mut c = chain(&config);
    assert!(!path.exists(), "the maps file is deleted once read");
    let mut batch = events(&[json!({"id": "x"})]);
    c.run(&mut batch);
    assert_eq!(get(&batch[0], "total"), v(json!(10)));
}

#[test]
fn aggregate_options_are_checked() {
    let e = run_filters(
        r#"filter { aggregate { task_id => "static" code => "" } }"#,
        &[],
    )
    .unwrap_err();
    assert!(e.contains("must contain a dynamic expression"), "{e}");
    let e = run_filters(
        r#"filter { aggregate { task_id => "%{a}" code => "" timeout => 2 inactivity_timeout => 3 } }"#,
        &[],
    )
    .unwrap_err();
    assert!(e.contains("must be lower than timeout"), "{e}");
    let e = run_filters(
        r#"filter { aggregate { task_id => "%{a}" code => "" timeout => 2 } aggregate { task_id => "%{a}" code => "" timeout => 3 } }"#,
        &[],
    )
    .unwrap_err();
    assert!(
        e.contains("more than one filter which defines timeout options"),
        "{e}"
    );
    let e = run_filters(
        r#"filter { aggregate { task_id => "%{a}" code => "" map_action => "upsert" } }"#,
        &[],
    )
    .unwrap_err();
    assert!(e.contains("map_action"), "{e}");
    let e = run_filters(
        r#"filter { aggregate { task_id => "%{a}" code => "map[" } }"#,
        &[],
    )
    .unwrap_err();
    assert!(e.contains("SyntaxError"), "{e}");
    // The same config compiled twice (a reload) does not meet its first copy.
    let cfg = r#"filter { aggregate { task_id => "%{a}" code => "" timeout => 5 } }"#;
    let _first = chain(cfg);
    let _second = chain(cfg);
}
