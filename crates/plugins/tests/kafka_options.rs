//! The kafka plugins' options: what maps to librdkafka builds, what cannot is refused with
//! the reason (no broker needed: nothing connects until events flow).
#![cfg(feature = "kafka")]

fn check(config: &str) -> Result<(), String> {
    let parsed = sluice_config::parse("test", config).map_err(|e| e.to_string())?;
    sluice_pipeline::graph::compile(&parsed, &sluice_plugins::registry())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[test]
fn options_map_or_are_refused() {
    check(
        r#"input { kafka { bootstrap_servers => "127.0.0.1:1" topics => ["a", "b"] group_id => "g" consumer_threads => 2
             auto_offset_reset => "earliest" decorate_events => "extended" isolation_level => "read_committed"
             fetch_max_wait_ms => 100 session_timeout_ms => 6000 partition_assignment_strategy => "cooperative_sticky"
             security_protocol => "SASL_SSL" sasl_mechanism => "SCRAM-SHA-512"
             sasl_jaas_config => "org.apache.kafka.common.security.scram.ScramLoginModule required username='u' password='p';"
             ssl_truststore_location => "/etc/ssl/certs/ca-certificates.crt" ssl_truststore_type => "PEM" } }
           output { kafka { bootstrap_servers => "127.0.0.1:1" topic_id => "logs-%{type}" acks => "all" compression_type => "zstd"
             linger_ms => 20 batch_size => 65536 message_key => "%{host}" message_headers => { "source" => "%{type}" } retries => 3 } }"#,
    )
    .unwrap();
    let refused = |config: &str, why: &str| {
        let e = check(config).unwrap_err();
        assert!(e.contains(why), "{config}: {e}");
    };
    refused(
        r#"input { kafka { security_protocol => "SASL_PLAINTEXT" } }"#,
        "GSSAPI (Kerberos) is not built",
    );
    refused(
        r#"input { kafka { security_protocol => "SASL_PLAINTEXT" sasl_mechanism => "PLAIN" } }"#,
        "needs sasl_jaas_config",
    );
    refused(
        r#"input { kafka { ssl_truststore_location => "/x.jks" } }"#,
        "a JKS trust store cannot be read",
    );
    refused(
        r#"input { kafka { jaas_path => "/x.conf" } }"#,
        "Java client",
    );
    refused(
        r#"input { kafka { decorate_events => "all" } }"#,
        "expected one of none, basic, extended",
    );
    refused(
        r#"input { kafka { partition_assignment_strategy => "sticky" } }"#,
        "not available in librdkafka",
    );
    refused(
        r#"input { kafka { value_deserializer_class => "io.confluent.kafka.serializers.KafkaAvroDeserializer" } }"#,
        "StringDeserializer",
    );
    refused(
        r#"output { kafka { topic_id => "t" partitioner => "round_robin" } }"#,
        "not available in librdkafka",
    );
    refused(
        r#"output { kafka { topic_id => "t" acks => "2" } }"#,
        "acks",
    );
    refused(r#"output { kafka { } }"#, "topic_id");
}
