//! The `syslog` and `csv` outputs through the real binary: syslog lines to a UDP and a TCP
//! listener of the test's own and to openssl's TLS server, RFC 3164 and 5424 framing checked
//! byte for byte; csv rows in files, with `csv_options` and `spreadsheet_safe`.

mod net_support;
mod run_support;

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, UdpSocket};
use std::process::Stdio;
use std::time::Duration;

use run_support::{pipe_through, temp_dir, Run};

/// Three events with fixed times and fields, as stdin JSON lines. (Their host is `src`: the
/// stdin input sets `host` itself.)
fn events() -> String {
    [
        r#"{"@timestamp":"2026-03-05T07:08:09.123Z","message":"disk full","src":"web1","sev":"error","app":"df"}"#,
        r#"{"@timestamp":"2026-11-28T23:59:59.000Z","message":"two\nlines \r\nhere  ","src":"web2","sev":"warning","app":"cron"}"#,
        r#"{"@timestamp":"2026-01-15T00:00:00.007Z","message":"no severity","src":"web3","app":"x"}"#,
    ]
    .join("\n")
        + "\n"
}

#[test]
fn syslog_over_udp_in_rfc3164() {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let port = sock.local_addr().unwrap().port();
    let config = format!(
        r#"input {{ stdin {{ codec => json_lines }} }}
           output {{ syslog {{ host => "127.0.0.1" port => {port} facility => "local3"
                              severity => "%{{sev}}" appname => "%{{app}}" procid => "42" sourcehost => "%{{src}}" }} }}"#
    );
    let (ok, _, log) = pipe_through(&config, &events());
    assert!(ok, "{log}");
    let mut got = Vec::new();
    let mut buf = [0u8; 2048];
    for _ in 0..3 {
        let n = sock.recv(&mut buf).unwrap();
        got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    got.sort();
    // local3 is facility 19: 19 * 8 + 3 (error), + 4 (warning), + 5 (an unknown label: notice).
    assert_eq!(
        got,
        [
            "<155>Mar 05 07:08:09 web1 df[42]: disk full\n",
            "<156>Nov 28 23:59:59 web2 cron[42]: two\\nlines \\nhere\n",
            "<157>Jan 15 00:00:00 web3 x[42]: no severity\n",
        ]
    );
}

/// RFC 5424 over TCP to a listener that comes up late: the batch waits, then every line
/// arrives once; `use_labels => false` takes `priority`.
#[test]
fn syslog_over_tcp_in_rfc5424_waits_for_the_listener() {
    let dir = temp_dir("syslog-out", "tcp");
    let port = net_support::free_port();
    let config = format!(
        r#"input {{ stdin {{ codec => json_lines }} }}
           filter {{ if [sev] == "error" {{ mutate {{ add_field => {{ "pri" => "11" }} }} }} }}
           output {{ syslog {{ host => "127.0.0.1" port => {port} protocol => "tcp" rfc => "rfc5424"
                              use_labels => false priority => "%{{pri}}" msgid => "M%{{app}}"
                              sourcehost => "%{{src}}" structured_data => '[origin ip="%{{src}}"]' }} }}"#
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::piped(), Stdio::null());
    {
        use std::io::Write;
        let mut stdin = r.child.stdin.take().unwrap();
        stdin.write_all(events().as_bytes()).unwrap();
    }
    std::thread::sleep(Duration::from_secs(3));
    let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
    let (conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let lines: Vec<String> = BufReader::new(conn)
        .lines()
        .take(3)
        .map(Result::unwrap)
        .collect();
    assert!(r.exit(30).success(), "{}", r.log());
    assert_eq!(
        lines,
        [
            r#"<11>1 2026-03-05T07:08:09.123+00:00 web1 LOGSTASH - Mdf [origin ip="web1"] disk full"#,
            r#"<13>1 2026-11-28T23:59:59.000+00:00 web2 LOGSTASH - Mcron [origin ip="web2"] two\nlines \nhere"#,
            r#"<13>1 2026-01-15T00:00:00.007+00:00 web3 LOGSTASH - Mx [origin ip="web3"] no severity"#,
        ]
    );
    assert!(
        r.log().contains("syslog output: cannot connect"),
        "{}",
        r.log()
    );
}

/// `ssl-tcp` to openssl's s_server, the server checked against our authority.
#[test]
fn syslog_over_tls() {
    let dir = temp_dir("syslog-out", "tls");
    let Some(c) = net_support::certs(&dir.join("certs")) else {
        return;
    };
    let port = net_support::free_port();
    let mut server = c.s_server(port);
    let config = format!(
        r#"input {{ stdin {{ codec => json_lines }} }}
           output {{ syslog {{ host => "127.0.0.1" port => {port} protocol => "ssl-tcp"
                              ssl_verify => true ssl_cacert => "{}" sourcehost => "%{{src}}" }} }}"#,
        c.ca.display()
    );
    let (ok, _, log) = pipe_through(&config, &events());
    assert!(ok, "{log}");
    let lines: Vec<String> = BufReader::new(server.stdout.take().unwrap())
        .lines()
        .take(3)
        .map(Result::unwrap)
        .collect();
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(lines[0], "<13>Mar 05 07:08:09 web1 LOGSTASH[-]: disk full");
    assert_eq!(lines.len(), 3);
}

/// A server whose certificate our authority did not sign is refused with ssl_verify, and
/// nothing is sent to it.
#[test]
fn syslog_tls_refuses_an_unknown_server() {
    let dir = temp_dir("syslog-out", "tls-bad");
    let Some(c) = net_support::certs(&dir.join("certs")) else {
        return;
    };
    let port = net_support::free_port();
    let mut server = c.s_server(port);
    let config = format!(
        r#"input {{ stdin {{ codec => json_lines }} }}
           output {{ syslog {{ host => "127.0.0.1" port => {port} protocol => "ssl-tcp"
                              ssl_verify => true ssl_cacert => "{}" }} }}"#,
        c.stranger_cert.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::piped(), Stdio::null());
    {
        use std::io::Write;
        let mut stdin = r.child.stdin.take().unwrap();
        stdin.write_all(events().as_bytes()).unwrap();
    }
    r.wait_log("syslog output: writing to", 30);
    r.signal("-TERM");
    let _ = r.exit(30);
    let _ = server.kill();
    let out = server.wait_with_output().unwrap();
    assert!(
        out.stdout.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn csv_rows_as_ruby_writes_them() {
    let dir = temp_dir("csv-out", "rows");
    let out = dir.join("%{app}.csv");
    let config = format!(
        r#"input {{ stdin {{ codec => json_lines }} }}
           output {{ csv {{ path => "{}" fields => ["message", "[geo][city]", "geo", "n", "missing", "empty"] }}
                    csv {{ path => "{}" fields => ["message", "n"] spreadsheet_safe => false
                           csv_options => {{ "col_sep" => ";" "force_quotes" => "true" "row_sep" => "|" }} }} }}"#,
        out.display(),
        dir.join("forced.csv").display()
    );
    let input = [
        r#"{"app":"a","message":"plain","geo":{"city":"Oslo","lat":59.9},"n":3,"empty":""}"#,
        r#"{"app":"a","message":"has, comma and \"quotes\"","n":-1.5}"#,
        r#"{"app":"b","message":"=SUM(A1:A2)","n":"@x"}"#,
        r#"{"app":"b","message":"two\nlines","n":[1,"a"]}"#,
    ]
    .join("\n")
        + "\n";
    let (ok, _, log) = pipe_through(&config, &input);
    assert!(ok, "{log}");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    assert_eq!(
        read("a.csv"),
        "plain,Oslo,\"{\"\"city\"\":\"\"Oslo\"\",\"\"lat\"\":59.9}\",3,,\"\"\n\
         \"has, comma and \"\"quotes\"\"\",,,-1.5,,\n"
    );
    // A formula is made harmless with a leading quote; so is a text starting with @.
    let b = read("b.csv");
    assert!(b.starts_with("'=SUM(A1:A2),,,'@x,,\n"), "{b}");
    assert!(b.contains("\"two\nlines\""), "{b}");
    assert_eq!(
        read("forced.csv"),
        "\"plain\";\"3\"|\"has, comma and \"\"quotes\"\"\";\"-1.5\"|\"=SUM(A1:A2)\";\"@x\"|\"two\nlines\";\"[1, \"\"a\"\"]\"|"
    );
}

#[test]
fn csv_refuses_options_it_does_not_know() {
    let config = r#"input { stdin { } } output { csv { path => "/tmp/x.csv" fields => ["a"] csv_options => { "headers" => "true" } } }"#;
    let (ok, _, log) = pipe_through(config, "");
    assert!(!ok);
    assert!(log.contains("\"headers\" is not supported"), "{log}");
}
