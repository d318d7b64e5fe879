//! `sluice tap`: watch the events leaving plugins of a running sluice, from its monitoring API
//! (`GET /_node/tap`, a stream of NDJSON lines): each event printed as it comes (`--format
//! json`: the line as the API wrote it; `rubydebug`: a header naming the plugin and time,
//! then the event with its `@metadata`), notices of events dropped for this client on
//! stderr. Ends after `--limit` events, on Ctrl-C, or (exit 1) when a tapped pipeline stops or
//! is reloaded, or when the API has said nothing for `--timeout` seconds (45; it sends a
//! heartbeat every 15 s).

use std::io::{BufRead, Write};

use sluice_plugins::http::{percent_decode, percent_encode};

use crate::cli::TapArgs;

pub fn tap_command(a: &TapArgs) -> Result<(), String> {
    let (base, url_auth) = split_userinfo(a.api.trim_end_matches('/'));
    let auth = match &a.user {
        Some(u) => Some(match u.split_once(':') {
            Some((n, p)) => (n.to_owned(), p.to_owned()),
            None => (
                u.clone(),
                std::env::var("SLUICE_API_PASSWORD").unwrap_or_default(),
            ),
        }),
        None => url_auth,
    };
    let mut query: Vec<(&str, String)> = a.plugins.iter().map(|p| ("plugin", p.clone())).collect();
    if let Some(w) = &a.when {
        query.push(("when", w.clone()));
    }
    if let Some(n) = a.limit {
        query.push(("limit", n.to_string()));
    }
    if let Some(r) = &a.rate {
        query.push(("rate", r.trim_end_matches("/s").to_owned()));
    }
    let url = format!(
        "{base}/_node/tap?{}",
        query
            .iter()
            .map(|(k, v)| format!("{k}={}", percent_encode(v)))
            .collect::<Vec<_>>()
            .join("&")
    );
    if !base.starts_with("https://") && (a.cacert.is_some() || a.insecure) {
        eprintln!("sluice tap: --cacert and --insecure are for an https:// API; {base} is not");
    }
    let ca = match &a.cacert {
        Some(p) => Some(std::fs::read(p).map_err(|e| format!("sluice tap: --cacert {p}: {e}"))?),
        None => None,
    };
    let tls = sluice_plugins::tls::Tls {
        ca,
        client: None,
        verify: !a.insecure,
    };
    let reader = sluice_plugins::http::stream_get(
        &url,
        auth.as_ref().map(|(u, p)| (u.as_str(), p.as_str())),
        &tls,
    )
    .map_err(|e| format!("sluice tap: {base}: {e}"))?;
    // The API says something at least every 15 s (a heartbeat when quiet): silence for
    // `--timeout` seconds means the server or the network is gone.
    let silence = std::time::Duration::from_secs(a.timeout.max(1));
    let heard = std::sync::Arc::new(std::sync::Mutex::new(std::time::Instant::now()));
    let watch = std::sync::Arc::clone(&heard);
    std::thread::spawn(move || loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
        let last = *watch.lock().unwrap_or_else(|p| p.into_inner());
        if last.elapsed() > silence {
            eprintln!(
                "sluice tap: nothing from the API for {} s (it sends a heartbeat every 15 s): giving up",
                silence.as_secs()
            );
            std::process::exit(1);
        }
    });
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut seen = 0u64;
    for line in std::io::BufReader::new(reader).lines() {
        let line = line.map_err(|e| format!("sluice tap: reading the stream: {e}"))?;
        *heard.lock().unwrap_or_else(|p| p.into_inner()) = std::time::Instant::now();
        if line.is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&line)
            .map_err(|e| format!("sluice tap: a line that is not JSON ({e}): {line}"))?;
        if let Some(t) = v.get("tap") {
            eprintln!("sluice tap: watching {}", t["plugins"]);
            continue;
        }
        if v.get("heartbeat").is_some() {
            continue;
        }
        if let Some(why) = v.get("ended").and_then(|w| w.as_str()) {
            return Err(format!("sluice tap: the tap ended: {why}"));
        }
        if let Some(n) = v.get("dropped") {
            eprintln!(
                "sluice tap: {n} events dropped for this client (it read too slowly; {} in all)",
                v["dropped_total"]
            );
            continue;
        }
        let written = if a.format == "rubydebug" {
            let text = format!(
                "--- {}/{} ({}) {}\n",
                v["pipeline"].as_str().unwrap_or(""),
                v["plugin"].as_str().unwrap_or(""),
                v["kind"].as_str().unwrap_or(""),
                v["time"].as_str().unwrap_or("")
            );
            out.write_all(text.as_bytes())
                .and_then(|_| out.write_all(&rubydebug(&v)))
        } else {
            out.write_all(line.as_bytes())
                .and_then(|_| out.write_all(b"\n"))
        };
        if written.and_then(|_| out.flush()).is_err() {
            // stdout closed (`| head`): done.
            return Ok(());
        }
        seen += 1;
        if a.limit.is_some_and(|l| seen >= l) {
            return Ok(());
        }
    }
    Ok(())
}

/// The event of a tap line (its `metadata` put back) as the rubydebug codec prints it.
fn rubydebug(v: &serde_json::Value) -> Vec<u8> {
    let mut event = v["event"].clone();
    if let (Some(m), Some(obj)) = (v.get("metadata"), event.as_object_mut()) {
        obj.insert("@metadata".into(), m.clone());
    }
    let text = event.to_string();
    match sluice_event::json::parse(text.as_bytes()) {
        Ok(sluice_event::Value::Object(map)) => {
            use sluice_pipeline::Codec as _;
            let mut out = Vec::new();
            sluice_plugins::codecs::rubydebug::RubyDebug::new(true)
                .encode(&sluice_event::Event::from_map(map), &mut out);
            out
        }
        _ => format!("{text}\n").into_bytes(),
    }
}

/// `http://user:pass@host:port` → (`http://host:port`, the user and password).
fn split_userinfo(url: &str) -> (String, Option<(String, String)>) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (url.to_owned(), None);
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((info, host)) => {
            let (u, p) = info.split_once(':').unwrap_or((info, ""));
            (
                format!("{scheme}://{host}{path}"),
                Some((percent_decode(u), percent_decode(p))),
            )
        }
        None => (url.to_owned(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_their_credentials() {
        assert_eq!(
            split_userinfo("https://ops:s%40cret@127.0.0.1:9600"),
            (
                "https://127.0.0.1:9600".to_owned(),
                Some(("ops".to_owned(), "s@cret".to_owned()))
            )
        );
        assert_eq!(
            split_userinfo("http://127.0.0.1:9600"),
            ("http://127.0.0.1:9600".to_owned(), None)
        );
        assert_eq!(
            percent_encode("[status] >= 500"),
            "%5Bstatus%5D%20%3E%3D%20500"
        );
    }
}
