//! `email`: one email per event over SMTP, as Logstash's email output sends them.
//!
//! `to`, `from`, `replyto`, `cc`, `bcc` (comma-separated address lists), `subject`, `body` and
//! `htmlbody` may hold references. A literal `\n` in the body becomes a line break. Without
//! `htmlbody` the email is one text/plain part; with it, multipart/alternative with the text
//! and the HTML (`contenttype`). `attachments` are files attached to every email.
//!
//! SMTP: `address`:`port` (localhost:25), EHLO as `domain`, `username`/`password` with
//! `authentication` (`plain` or `login`; either when not given), and STARTTLS when the server
//! offers it with `use_tls` (the server's certificate checked against the system's authorities,
//! so `SSL_CERT_FILE` can name another). A server that cannot be reached or answers with a
//! temporary (4xx) refusal gets the batch again; a permanent (5xx) refusal or an address that
//! is not one drops that email, logged. `via => sendmail` and `template_file` (Mustache) are
//! refused: not supported.

use std::sync::Mutex;
use std::time::Duration;

use lettre::message::header::{ContentTransferEncoding, ContentType};
use lettre::message::{Attachment, Body, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::{Message, SmtpTransport, Transport};
use sluice_event::{Event, Template};
use sluice_pipeline::{ConfigError, Options, Output, OutputError, WriteContext};

pub struct EmailOutput {
    to: Template,
    from: Template,
    replyto: Option<Template>,
    cc: Option<Template>,
    bcc: Option<Template>,
    subject: Template,
    body: Template,
    htmlbody: Option<Template>,
    contenttype: ContentType,
    /// File name, content type and bytes, read once.
    attachments: Vec<(String, ContentType, Vec<u8>)>,
    smtp: Mutex<SmtpTransport>,
    server: String,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let via = opts.string_or("via", "smtp")?;
    if via != "smtp" {
        return Err(opts.error(
            "via",
            format!("{via:?} is not supported (only \"smtp\" is)"),
        ));
    }
    if opts.has("template_file") {
        opts.take("template_file");
        return Err(opts.error(
            "template_file",
            "Mustache templates are not supported; use htmlbody with %{field} references",
        ));
    }
    let template = |opts: &mut Options, name: &str| -> Result<Option<Template>, ConfigError> {
        Ok(opts.string(name)?.map(|t| Template::parse(&t)))
    };
    let to = Template::parse(&opts.required_string("to")?);
    let from = Template::parse(&opts.string_or("from", "logstash.alert@example.com")?);
    let replyto = template(opts, "replyto")?;
    let cc = template(opts, "cc")?;
    let bcc = template(opts, "bcc")?;
    let subject = Template::parse(&opts.string_or("subject", "")?);
    let body = Template::parse(&opts.string_or("body", "")?);
    let htmlbody = template(opts, "htmlbody")?.filter(|t| t.constant() != Some(""));
    let contenttype_text = opts.string_or("contenttype", "text/html; charset=UTF-8")?;
    let contenttype = ContentType::parse(&contenttype_text)
        .map_err(|e| opts.error("contenttype", format!("not a content type: {e}")))?;
    let mut attachments = Vec::new();
    for path in opts.string_list("attachments")?.unwrap_or_default() {
        let bytes = std::fs::read(&path)
            .map_err(|e| opts.error("attachments", format!("cannot read {path:?}: {e}")))?;
        let name = std::path::Path::new(&path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.clone());
        attachments.push((name, guess_type(&path), bytes));
    }
    let address = opts.string_or("address", "localhost")?;
    let port = crate::net::port(opts, "port", Some(25))?;
    let domain = opts.string_or("domain", "localhost")?;
    let username = opts.string("username")?;
    let password = opts.string("password")?;
    let mechanisms = match opts.string("authentication")?.as_deref() {
        None => vec![Mechanism::Plain, Mechanism::Login],
        Some("plain") => vec![Mechanism::Plain],
        Some("login") => vec![Mechanism::Login],
        Some(other) => {
            return Err(opts.error(
                "authentication",
                format!("{other:?} is not supported (plain or login are)"),
            ))
        }
    };
    let use_tls = opts.boolean_or("use_tls", false)?;
    opts.boolean_or("debug", false)?;
    let mut smtp = SmtpTransport::builder_dangerous(address.clone())
        .port(port)
        .hello_name(ClientId::Domain(domain))
        .timeout(Some(Duration::from_secs(30)));
    if use_tls {
        let params = TlsParameters::new(address.clone())
            .map_err(|e| opts.error("use_tls", format!("cannot set up TLS: {e}")))?;
        smtp = smtp.tls(Tls::Opportunistic(params));
    }
    match (username, password) {
        (Some(u), Some(p)) => {
            smtp = smtp
                .credentials(Credentials::new(u, p))
                .authentication(mechanisms)
        }
        (None, None) => {}
        (Some(_), None) => return Err(opts.error("username", "requires password as well")),
        (None, Some(_)) => return Err(opts.error("password", "requires username as well")),
    }
    Ok(Box::new(EmailOutput {
        to,
        from,
        replyto,
        cc,
        bcc,
        subject,
        body,
        htmlbody,
        contenttype,
        attachments,
        smtp: Mutex::new(smtp.build()),
        server: crate::net::address(&address, port),
    }))
}

/// A content type for an attachment, by its extension.
fn guess_type(path: &str) -> ContentType {
    let ext = path.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    let t = match ext.as_str() {
        "txt" | "log" => "text/plain",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "json" => "application/json",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gz" => "application/gzip",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    };
    ContentType::parse(t).expect("a valid content type")
}

impl EmailOutput {
    /// The email of one event, or why it cannot be one.
    fn message(&self, e: &Event) -> Result<Message, String> {
        let mut m = Message::builder()
            .from(mailbox(&self.from.render(e))?)
            .subject(self.subject.render(e));
        for a in mailboxes(&self.to.render(e))? {
            m = m.to(a);
        }
        if let Some(t) = &self.replyto {
            m = m.reply_to(mailbox(&t.render(e))?);
        }
        if let Some(t) = &self.cc {
            for a in mailboxes(&t.render(e))? {
                m = m.cc(a);
            }
        }
        if let Some(t) = &self.bcc {
            for a in mailboxes(&t.render(e))? {
                m = m.bcc(a);
            }
        }
        let text = self.body.render(e).replace("\\n", "\n");
        let text_part = SinglePart::builder()
            .header(ContentType::TEXT_PLAIN)
            .body(text);
        let content = match &self.htmlbody {
            None => Content::Single(text_part),
            Some(html) => Content::Multi(
                MultiPart::alternative().singlepart(text_part).singlepart(
                    SinglePart::builder()
                        .header(self.contenttype.clone())
                        .body(html.render(e)),
                ),
            ),
        };
        let built = if self.attachments.is_empty() {
            match content {
                Content::Single(p) => m.singlepart(p),
                Content::Multi(p) => m.multipart(p),
            }
        } else {
            let mut mixed = match content {
                Content::Single(p) => MultiPart::mixed().singlepart(p),
                Content::Multi(p) => MultiPart::mixed().multipart(p),
            };
            for (name, kind, bytes) in &self.attachments {
                // Base64 always: a text file sent as it is would carry its bare line feeds,
                // which SMTP servers may refuse.
                let body = Body::new_with_encoding(bytes.clone(), ContentTransferEncoding::Base64)
                    .map_err(|_| "cannot encode an attachment".to_owned())?;
                mixed = mixed.singlepart(Attachment::new(name.clone()).body(body, kind.clone()));
            }
            m.multipart(mixed)
        };
        built.map_err(|e| e.to_string())
    }
}

enum Content {
    Single(SinglePart),
    Multi(MultiPart),
}

fn mailbox(text: &str) -> Result<Mailbox, String> {
    text.trim()
        .parse::<Mailbox>()
        .map_err(|e| format!("{text:?} is not an email address: {e}"))
}

/// A comma-separated list of addresses.
fn mailboxes(text: &str) -> Result<Vec<Mailbox>, String> {
    text.split(',')
        .filter(|a| !a.trim().is_empty())
        .map(mailbox)
        .collect()
}

impl Output for EmailOutput {
    fn write(&self, events: &[&Event], _ctx: &WriteContext) -> Result<(), OutputError> {
        let smtp = self.smtp.lock().unwrap_or_else(|p| p.into_inner());
        for e in events {
            let message = match self.message(e) {
                Ok(m) => m,
                Err(why) => {
                    tracing::warn!("email output: an email dropped: {why}");
                    continue;
                }
            };
            if let Err(err) = smtp.send(&message) {
                if err.is_permanent() {
                    tracing::warn!(
                        "email output: an email dropped: {} refused it: {err}",
                        self.server
                    );
                    continue;
                }
                // Unreachable, or a temporary refusal: the batch goes again (the emails
                // before this one in it may be sent twice).
                return Err(OutputError::retryable(format!(
                    "email output: sending through {}: {err}",
                    self.server
                )));
            }
        }
        Ok(())
    }
}
