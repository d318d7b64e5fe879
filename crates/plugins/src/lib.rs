//! Sluice's plugins, one file each, and [`registry`], the one table that names them.
//!
//! Inputs produce batches of events through their codec; filters change events one at a time
//! inside a worker; outputs receive whole batches; codecs turn bytes into events and back.
//! Each plugin reads its options through `sluice_pipeline::Options`, so an unknown option or a
//! wrong type is a config error with its file, line and column.

pub mod aws;
pub mod codecs;
pub mod csv;
pub mod dead_letter;
pub mod ecs;
pub mod es;
pub mod field;
pub mod filters;
pub mod gelf;
pub mod http;
pub mod http_server;
pub mod inputs;
pub mod jdbc;
#[cfg(feature = "kafka")]
pub mod kafka;
pub mod net;
pub mod numbers;
pub mod otlp;
pub mod outputs;
pub mod rabbitmq_conn;
pub mod redis_conn;
pub mod retry;
pub mod s3;
pub mod schedule;
pub mod tls;

#[cfg(not(feature = "kafka"))]
const NO_KAFKA: &str = "this sluice was built without the `kafka` feature, so the kafka plugins are not compiled in (build with default features, after scripts/install-kafka)";

use sluice_pipeline::Registry;

/// Every plugin sluice ships, by name. Adding a plugin is one file and one line here.
pub fn registry() -> Registry {
    let mut r = Registry::new();
    r.add_input("stdin", inputs::stdin::build);
    r.add_input("generator", inputs::generator::build);
    r.add_input("gelf", inputs::gelf::build);
    r.add_input("logstash", inputs::http::build_logstash);
    r.add_input("heartbeat", inputs::heartbeat::build);
    r.add_input("exec", inputs::exec::build);
    r.add_input("file", inputs::file::build);
    r.add_input("redis", inputs::redis::build);
    r.add_input("pipeline", inputs::pipeline::build);
    r.add_input("pipe", inputs::pipe::build);
    r.add_input("dead_letter_queue", inputs::dead_letter_queue::build);
    r.add_input("beats", inputs::beats::build);
    // Logstash's alias registry: Fleet's documented `elastic_agent { port => 5044 }` is the
    // beats input under its own name (which the metrics show).
    r.add_input("elastic_agent", inputs::beats::build);
    r.add_input("tcp", inputs::tcp::build);
    r.add_input("relp", inputs::relp::build);
    r.add_input("snmp", inputs::snmp::build);
    r.add_input("snmptrap", inputs::snmptrap::build);
    r.add_input("udp", inputs::udp::build);
    r.add_input("unix", inputs::unix::build);
    r.add_input("syslog", inputs::syslog::build);
    r.add_input("http", inputs::http::build);
    r.add_input("http_poller", inputs::http_poller::build);
    r.add_input("opentelemetry", inputs::opentelemetry::build);
    r.add_input("elasticsearch", inputs::elasticsearch::build);
    r.add_input("jdbc", jdbc::build_input);
    r.add_input("s3", inputs::s3::build);
    r.add_input("sqs", inputs::sqs::build);
    r.add_input("rabbitmq", inputs::rabbitmq::build);
    #[cfg(feature = "kafka")]
    r.add_input("kafka", kafka::input::build);
    #[cfg(not(feature = "kafka"))]
    r.add_input("kafka", |opts| Err(opts.plugin_error(NO_KAFKA)));

    r.add_filter("mutate", filters::mutate::build);
    r.add_filter("drop", filters::drop::build);
    r.add_filter("clone", filters::clone::build);
    r.add_filter("date", filters::date::build);
    r.add_filter("json", filters::json::build);
    r.add_filter("kv", filters::kv::build);
    r.add_filter("dissect", filters::dissect::build);
    r.add_filter("geoip", filters::geoip::build);
    r.add_filter("grok", filters::grok::build);
    r.add_filter("useragent", filters::useragent::build);
    r.add_filter("syslog_pri", filters::syslog_pri::build);
    r.add_filter("csv", filters::csv::build);
    r.add_filter("split", filters::split::build);
    r.add_filter("fingerprint", filters::fingerprint::build);
    r.add_filter("anonymize", filters::anonymize::build);
    r.add_filter("logfmt", filters::logfmt::build);
    r.add_filter("http", filters::http::build);
    r.add_filter("elasticsearch", filters::elasticsearch::build);
    r.add_filter("memcached", filters::memcached::build);
    r.add_filter("jdbc_streaming", jdbc::build_streaming);
    r.add_filter("jdbc_static", jdbc::build_static);
    r.add_filter("urldecode", filters::urldecode::build);
    r.add_filter("json_encode", filters::json_encode::build);
    r.add_filter("uuid", filters::uuid::build);
    r.add_filter("truncate", filters::truncate::build);
    r.add_filter("de_dot", filters::de_dot::build);
    r.add_filter("rest", filters::rest::build);
    r.add_filter("prune", filters::prune::build);
    r.add_filter("translate", filters::translate::build);
    r.add_filter("bytes", filters::bytes::build);
    r.add_filter("age", filters::age::build);
    r.add_filter("environment", filters::environment::build);
    r.add_filter("sleep", filters::sleep::build);
    r.add_filter("cidr", filters::cidr::build);
    r.add_filter("tld", filters::tld::build);
    r.add_filter("xml", filters::xml::build);
    r.add_filter("dns", filters::dns::build);
    r.add_filter("metrics", filters::metrics::build);
    r.add_filter("elapsed", filters::elapsed::build);
    r.add_filter("throttle", filters::throttle::build);
    r.add_filter("aggregate", filters::aggregate::build);
    r.add_filter("ruby", filters::ruby::build);

    r.add_output("stdout", outputs::stdout::build);
    r.add_output("file", outputs::file::build);
    r.add_output("null", outputs::null::build);
    r.add_output("redis", outputs::redis::build);
    r.add_output("rabbitmq", outputs::rabbitmq::build);
    r.add_output("pipeline", outputs::pipeline::build);
    r.add_output("csv", outputs::csv::build);
    r.add_output("email", outputs::email::build);
    r.add_output("logstash", outputs::logstash::build);
    r.add_output("lumberjack", outputs::lumberjack::build);
    r.add_output("gelf", outputs::gelf::build);
    r.add_output("pipe", outputs::pipe::build);
    r.add_output("http", outputs::http::build);
    r.add_output("opentelemetry", outputs::opentelemetry::build);
    r.add_output("s3", outputs::s3::build);
    r.add_output("tcp", outputs::tcp::build);
    r.add_output("syslog", outputs::syslog::build);
    r.add_output("udp", outputs::udp::build);
    r.add_output("elasticsearch", outputs::elasticsearch::build);
    r.add_output("opensearch", outputs::elasticsearch::build_opensearch);
    #[cfg(feature = "kafka")]
    r.add_output("kafka", kafka::output::build);
    #[cfg(not(feature = "kafka"))]
    r.add_output("kafka", |opts| Err(opts.plugin_error(NO_KAFKA)));

    r.add_codec("line", codecs::line::build);
    r.add_codec("plain", codecs::plain::build);
    r.add_codec("json", codecs::json::build);
    r.add_codec("json_lines", codecs::json_lines::build);
    r.add_codec("rubydebug", codecs::rubydebug::build);
    r.add_codec("dots", codecs::dots::build);
    r.add_codec("multiline", codecs::multiline::build);
    r.add_codec("csv", codecs::csv::build);
    r.add_codec("es_bulk", codecs::es_bulk::build);
    r.add_codec("msgpack", codecs::msgpack::build);
    r.add_codec("netflow", codecs::netflow::build);
    r.add_codec("fluent", codecs::fluent::build);
    r.add_codec("cef", codecs::cef::build);
    r
}
