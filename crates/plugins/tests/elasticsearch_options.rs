//! The `elasticsearch` and `opensearch` outputs' options: what builds, and the clear errors
//! (file, line, column, what is wrong) for what cannot be honoured. No server needed: nothing
//! connects until the first batch.

fn build(output: &str) -> Result<(), String> {
    let config = format!("input {{ stdin {{ }} }}\noutput {{\n  {output}\n}}\n");
    let parsed = sluice_config::parse("test.conf", &config).map_err(|e| e.to_string())?;
    sluice_pipeline::graph::compile(&parsed, &sluice_plugins::registry())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn error(output: &str) -> String {
    match build(output) {
        Ok(()) => panic!("expected an error for: {output}"),
        Err(e) => e,
    }
}

#[test]
fn a_config_using_the_common_options_builds() {
    build(
        r#"elasticsearch {
            hosts => ["http://127.0.0.1:9200", "es2:9201"]
            index => "logs-%{type}-%{+YYYY.MM.dd}"
            document_id => "%{[@metadata][id]}"
            routing => "%{user}"
            action => "%{[@metadata][action]}"
            user => "elastic" password => "changeme"
            manage_template => false
            template_overwrite => true
            retry_initial_interval => 1 retry_max_interval => 30
            http_compression => true
            silence_errors_in_log => ["version_conflict_engine_exception"]
            dlq_custom_codes => [403]
            ecs_compatibility => disabled
        }"#,
    )
    .unwrap();
    build(r#"opensearch { hosts => ["https://127.0.0.1:9200"] ssl_certificate_verification => false user => "admin" password => "x" }"#).unwrap();
    build(r#"elasticsearch { cloud_id => "label:ZXhhbXBsZS5jb20kZXNpZCRrYmlk" cloud_auth => "elastic:pw" }"#).unwrap();
    build(r#"elasticsearch { hosts => ["https://es:9200"] api_key => "id:key" }"#).unwrap();
    build(r#"elasticsearch { hosts => ["es"] action => "update" document_id => "%{id}" doc_as_upsert => true }"#).unwrap();
    build(r#"elasticsearch { hosts => ["es"] action => "update" document_id => "%{id}" script => "ctx._source.n += params.event.n" scripted_upsert => true }"#).unwrap();
    build(r#"elasticsearch { data_stream => true data_stream_dataset => "nginx" data_stream_namespace => "prod" }"#).unwrap();
}

#[test]
fn what_cannot_be_honoured_is_an_error_with_its_position() {
    let cases: &[(&str, &str)] = &[
        (
            r#"elasticsearch { data_stream => true index => "x" }"#,
            "do not apply to data streams: index",
        ),
        (
            r#"elasticsearch { action => "update" }"#,
            "update needs document_id",
        ),
        (r#"elasticsearch { action => "upsert" }"#, "expected one of"),
        (
            r#"elasticsearch { ssl => true }"#,
            "obsolete; use ssl_enabled",
        ),
        (r#"elasticsearch { api_key => "id:key" }"#, "requires TLS"),
        (
            r#"elasticsearch { hosts => ["es"] cloud_id => "a:b" }"#,
            "and hosts are both set",
        ),
        (
            r#"elasticsearch { cloud_id => "label:not base64!" }"#,
            "not valid base64",
        ),
        (
            r#"elasticsearch { cloud_auth => "x:y" user => "u" password => "p" }"#,
            "use one",
        ),
        (r#"elasticsearch { user => "u" }"#, "requires password"),
        (r#"elasticsearch { flush_size => 500 }"#, "obsolete"),
        (r#"elasticsearch { sniffing => true }"#, "not supported"),
        (
            r#"elasticsearch { dlq_custom_codes => [404] }"#,
            "handled already",
        ),
        (
            r#"elasticsearch { compression_level => 12 }"#,
            "between 0 and 9",
        ),
        (
            r#"elasticsearch { hosts => ["ftp://es"] }"#,
            "only http and https",
        ),
        (
            r#"elasticsearch { ilm_enabled => true }"#,
            "not supported yet",
        ),
        (
            r#"elasticsearch { data_stream => true data_stream_dataset => "my-set" }"#,
            "cannot contain '-'",
        ),
        (
            r#"elasticsearch { doc_as_upsert => true scripted_upsert => true }"#,
            "choose one",
        ),
        (r#"elasticsearch { no_such_option => 1 }"#, "no_such_option"),
        (r#"opensearch { ssl_enabled => true }"#, "ssl_enabled"),
        (r#"opensearch { truststore => "/x.jks" }"#, "Java keystores"),
    ];
    for (config, want) in cases {
        let e = error(config);
        assert!(e.contains(want), "{config}\n  wanted {want:?} in: {e}");
        assert!(
            e.contains("test.conf") && e.contains(":3:"),
            "no position in: {e}"
        );
    }
}
