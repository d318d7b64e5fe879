//! The `email` output through the real binary, into aiosmtpd (Python's SMTP server) as a sink:
//! addresses, headers and bodies as Logstash builds them, AUTH PLAIN and LOGIN, HTML with an
//! attachment, a busy server's 451 sent again, a 550 recipient dropped.

mod net_support;
mod run_support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use run_support::{pipe_through, temp_dir};
use serde_json::Value;

struct Sink {
    child: Child,
    port: u16,
    out: PathBuf,
}

impl Sink {
    fn start(python: &Path, dir: &Path, args: &[&str]) -> Sink {
        let port = net_support::free_port();
        let out = dir.join("mail.jsonl");
        let mut child = Command::new(python)
            .arg(format!(
                "{}/tests/email/sink.py",
                env!("CARGO_MANIFEST_DIR")
            ))
            .arg(port.to_string())
            .arg(&out)
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut ready = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut ready)
            .unwrap();
        assert_eq!(ready.trim(), "ready");
        Sink { child, port, out }
    }

    fn mails(&self, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = std::fs::read_to_string(&self.out).unwrap_or_default();
            let mails: Vec<Value> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            if mails.len() >= n || Instant::now() > deadline {
                return mails;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A header's value in a raw message (unfolded).
fn header<'a>(data: &'a str, name: &str) -> Option<&'a str> {
    let head = data.split("\r\n\r\n").next().unwrap_or(data);
    head.split("\r\n")
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
}

#[test]
fn text_emails_with_auth_addresses_and_refusals() {
    let Some(python) = net_support::peers_python() else {
        return;
    };
    let dir = temp_dir("email", "text");
    let sink = Sink::start(&python, &dir, &["--auth", "alert:s3cret"]);
    let config = format!(
        r#"input {{ stdin {{ codec => json_lines }} }}
           output {{ email {{ address => "127.0.0.1" port => {} username => "alert" password => "s3cret"
               to => "%{{owner}}@example.com, oncall@example.com" cc => "boss@example.com" bcc => "audit@example.com"
               replyto => "noreply@example.com" from => "Sluice <sluice@example.com>"
               subject => "Alert on %{{src}}" body => "Host: %{{src}}\n\nMessage: %{{message}}" }} }}"#,
        sink.port
    );
    let input = concat!(
        r#"{"owner":"ann","src":"web1","message":"disk full"}"#,
        "\n",
        r#"{"owner":"nobody@reject.example, bob","src":"web2","message":"refused"}"#,
        "\n",
        r#"{"owner":"bob","src":"web3","message":"cpu hot"}"#,
        "\n",
    );
    let (ok, _, log) = pipe_through(&config, input);
    assert!(ok, "{log}");
    let mails = sink.mails(2);
    assert_eq!(mails.len(), 2, "{mails:?}");
    // The refused recipient's email was dropped, logged; the others went.
    assert!(log.contains("refused it"), "{log}");
    for (m, (owner, src, message)) in mails
        .iter()
        .zip([("ann", "web1", "disk full"), ("bob", "web3", "cpu hot")])
    {
        assert_eq!(m["login"], "alert");
        assert_eq!(m["from"], "sluice@example.com");
        let to: Vec<&str> = m["to"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let owner = format!("{owner}@example.com");
        assert_eq!(
            to,
            [
                owner.as_str(),
                "oncall@example.com",
                "boss@example.com",
                "audit@example.com"
            ]
        );
        let data = m["data"].as_str().unwrap();
        assert_eq!(
            header(data, "Subject"),
            Some(format!("Alert on {src}").as_str())
        );
        assert_eq!(header(data, "Cc"), Some("boss@example.com"));
        assert_eq!(header(data, "Reply-To"), Some("noreply@example.com"));
        assert_eq!(header(data, "Bcc"), None, "Bcc is not sent: {data}");
        assert!(header(data, "From").unwrap().contains("sluice@example.com"));
        assert!(header(data, "Content-Type")
            .unwrap()
            .starts_with("text/plain"));
        // The literal \n of the body became line breaks.
        let body = data
            .split("\r\n\r\n")
            .skip(1)
            .collect::<Vec<_>>()
            .join("\r\n\r\n");
        assert_eq!(
            body.trim_end(),
            format!("Host: {src}\r\n\r\nMessage: {message}"),
            "{data}"
        );
    }
}

#[test]
fn html_with_an_attachment_and_login() {
    let Some(python) = net_support::peers_python() else {
        return;
    };
    let dir = temp_dir("email", "html");
    let report = dir.join("report.csv");
    std::fs::write(&report, "host,count\nweb1,3\n").unwrap();
    let blob = dir.join("blob.bin");
    std::fs::write(&blob, b"\x00\xffsluice").unwrap();
    let sink = Sink::start(&python, &dir, &["--auth", "u:p"]);
    let config = format!(
        r#"input {{ stdin {{ codec => json_lines }} }}
           output {{ email {{ address => "127.0.0.1" port => {} username => "u" password => "p" authentication => "login"
               to => "ops@example.com" subject => "%{{n}} errors" body => "plain %{{n}}"
               htmlbody => "<b>%{{n}}</b> errors" attachments => ["{}", "{}"] }} }}"#,
        sink.port,
        report.display(),
        blob.display()
    );
    let (ok, _, log) = pipe_through(&config, "{\"n\":7}\n");
    assert!(ok, "{log}");
    let mails = sink.mails(1);
    assert_eq!(mails.len(), 1, "{log}");
    let data = mails[0]["data"].as_str().unwrap();
    assert!(
        header(data, "Content-Type")
            .unwrap()
            .starts_with("multipart/mixed"),
        "{data}"
    );
    assert!(data.contains("multipart/alternative"), "{data}");
    assert!(data.contains("plain 7"), "{data}");
    assert!(data.contains("<b>7</b> errors"), "{data}");
    assert!(
        data.contains("text/html; charset=UTF-8") || data.contains("text/html; charset=utf-8"),
        "{data}"
    );
    assert!(data.contains("filename=\"report.csv\""), "{data}");
    // Attachments in base64: "host,count\nweb1,3\n", and the binary one.
    assert!(data.contains("aG9zdCxjb3VudAp3ZWIxLDMK"), "{data}");
    assert!(data.contains("filename=\"blob.bin\""), "{data}");
    assert!(data.contains("AP9zbHVpY2U="), "{data}");
}

/// A server that answers 451 to the first two emails gets them again: every email arrives, once.
#[test]
fn a_busy_server_gets_the_batch_again() {
    let Some(python) = net_support::peers_python() else {
        return;
    };
    let dir = temp_dir("email", "busy");
    let sink = Sink::start(&python, &dir, &["--busy", "2"]);
    let config = format!(
        r#"input {{ stdin {{ codec => json_lines }} }}
           output {{ email {{ address => "127.0.0.1" port => {} to => "ops@example.com" subject => "n=%{{n}}" }} }}"#,
        sink.port
    );
    let input: String = (0..5).map(|i| format!("{{\"n\":{i}}}\n")).collect();
    let (ok, _, log) = pipe_through(&config, &input);
    assert!(ok, "{log}");
    let mails = sink.mails(5);
    let mut subjects: Vec<String> = mails
        .iter()
        .map(|m| {
            header(m["data"].as_str().unwrap(), "Subject")
                .unwrap()
                .to_owned()
        })
        .collect();
    subjects.sort();
    assert_eq!(subjects, ["n=0", "n=1", "n=2", "n=3", "n=4"]);
    assert!(log.contains("451"), "{log}");
}

#[test]
fn unsupported_options_are_refused() {
    for (option, says) in [
        (r#"via => "sendmail""#, "is not supported"),
        (
            r#"template_file => "/tmp/t.mustache""#,
            "Mustache templates are not supported",
        ),
        (r#"authentication => "cram_md5""#, "is not supported"),
    ] {
        let config = format!(
            r#"input {{ stdin {{ }} }} output {{ email {{ to => "a@example.com" {option} }} }}"#
        );
        let (ok, _, log) = pipe_through(&config, "");
        assert!(!ok, "{option}");
        assert!(log.contains(says), "{option}: {log}");
    }
}
