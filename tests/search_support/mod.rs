//! Real Elasticsearch and OpenSearch nodes for the tests: the shared ones that
//! `scripts/search-nodes/run start` leaves running (URLs in `target/search-nodes/env` or the
//! environment), and private ones a test starts, stops and restarts itself (same Java, runner
//! jars and launcher). Without nodes the tests say so and skip, except under `CI=true`, where
//! that is a failure.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `target/search-nodes/env`, overridden by the environment.
fn env() -> HashMap<String, String> {
    let mut vars = HashMap::new();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/search-nodes/env");
    for line in std::fs::read_to_string(file).unwrap_or_default().lines() {
        if let Some((k, v)) = line.split_once('=') {
            vars.insert(k.to_owned(), v.to_owned());
        }
    }
    for (k, v) in std::env::vars() {
        if k.starts_with("SLUICE_ES_")
            || k.starts_with("SLUICE_OPENSEARCH_")
            || k == "SLUICE_SEARCH_NODES_DIR"
        {
            vars.insert(k, v);
        }
    }
    vars
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Elasticsearch,
    OpenSearch,
}

impl Kind {
    /// The output plugin that talks to it.
    pub fn plugin(self) -> &'static str {
        match self {
            Kind::Elasticsearch => "elasticsearch",
            Kind::OpenSearch => "opensearch",
        }
    }
    fn prefix(self) -> &'static str {
        match self {
            Kind::Elasticsearch => "SLUICE_ES",
            Kind::OpenSearch => "SLUICE_OPENSEARCH",
        }
    }
    fn dir(self) -> &'static str {
        match self {
            Kind::Elasticsearch => "es7",
            Kind::OpenSearch => "os3",
        }
    }
}

fn missing(what: &str) {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{what}: no search node (scripts/search-nodes/run start failed or was not run; see its output)");
    }
    eprintln!("SKIP {what}: no search node; run scripts/search-nodes/run start");
}

/// The shared nodes that are running: (kind, base URL).
pub fn shared(test: &str) -> Vec<(Kind, String)> {
    let vars = env();
    let mut out = Vec::new();
    for kind in [Kind::Elasticsearch, Kind::OpenSearch] {
        match vars.get(&format!("{}_URL", kind.prefix())) {
            Some(url) if get(&format!("{url}/")).is_ok() => out.push((kind, url.clone())),
            _ => missing(&format!("{test} ({kind:?})")),
        }
    }
    out
}

fn agent() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build(),
    )
}

/// GET → (status, body as JSON or Null).
pub fn get(url: &str) -> Result<(u16, serde_json::Value), String> {
    let mut r = agent().get(url).call().map_err(|e| e.to_string())?;
    let status = r.status().as_u16();
    let body = r.body_mut().read_to_string().map_err(|e| e.to_string())?;
    Ok((
        status,
        serde_json::from_str(&body).unwrap_or(serde_json::Value::Null),
    ))
}

/// Sends a request with a JSON body; → (status, body).
pub fn send(method: &str, url: &str, body: &str) -> (u16, serde_json::Value) {
    let req = ureq::http::Request::builder()
        .method(method)
        .uri(url)
        .header("Content-Type", "application/json")
        .body(body.to_owned())
        .unwrap();
    let mut r = agent()
        .run(req)
        .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let status = r.status().as_u16();
    let text = r.body_mut().read_to_string().unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(serde_json::Value::Null),
    )
}

/// Documents in `index` after a refresh.
pub fn count(url: &str, index: &str) -> u64 {
    send("POST", &format!("{url}/{index}/_refresh"), "");
    let (status, body) = get(&format!("{url}/{index}/_count")).unwrap();
    assert_eq!(status, 200, "count {index}: {body}");
    body["count"].as_u64().unwrap()
}

pub fn delete_index(url: &str, index: &str) {
    send("DELETE", &format!("{url}/{index}"), "");
}

/// A node of the test's own, killed on drop.
pub struct PrivateNode {
    pub kind: Kind,
    pub url: String,
    java: String,
    nodes_dir: PathBuf,
    data: PathBuf,
    http: u16,
    transport: u16,
    settings: Vec<String>,
    child: Option<Child>,
}

impl PrivateNode {
    /// Starts one (`settings`: extra `key=value` node settings); `None` (skipped) when the
    /// runners are not installed.
    pub fn start(kind: Kind, test: &str, settings: &[&str]) -> Option<PrivateNode> {
        let vars = env();
        let (Some(java), Some(dir)) = (
            vars.get(&format!("{}_JAVA", kind.prefix())),
            vars.get("SLUICE_SEARCH_NODES_DIR"),
        ) else {
            missing(&format!("{test} ({kind:?}, private node)"));
            return None;
        };
        let data = std::env::temp_dir().join(format!("sluice-node-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data);
        let http = crate::net_support::free_port();
        let mut node = PrivateNode {
            kind,
            url: format!("http://127.0.0.1:{http}"),
            java: java.clone(),
            nodes_dir: PathBuf::from(dir),
            data,
            http,
            transport: crate::net_support::free_port(),
            settings: settings.iter().map(|s| s.to_string()).collect(),
            child: None,
        };
        node.restart();
        Some(node)
    }

    /// (Re)starts the process on the same ports and data, and waits until it answers.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "node still running");
        let log = std::fs::File::create(self.data.with_extension("log")).unwrap();
        let cp = format!(
            "{}:{}",
            self.nodes_dir.join("classes").display(),
            self.nodes_dir.join(self.kind.dir()).join("lib/*").display()
        );
        let child = Command::new(&self.java)
            .args(["-Xms384m", "-Xmx384m", "-cp", &cp, "Launcher"])
            .arg(&self.data)
            .arg(self.http.to_string())
            .arg(self.transport.to_string())
            .args(&self.settings)
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            if matches!(
                get(&format!(
                    "{}/_cluster/health?wait_for_status=yellow&timeout=1s",
                    self.url
                )),
                Ok((200, _))
            ) {
                return;
            }
            if let Some(c) = &mut self.child {
                if let Ok(Some(status)) = c.try_wait() {
                    panic!(
                        "{:?} node exited ({status}) while starting:\n{}",
                        self.kind,
                        self.log()
                    );
                }
            }
            assert!(
                Instant::now() < deadline,
                "{:?} node did not start in 180 s:\n{}",
                self.kind,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    pub fn log(&self) -> String {
        let text = std::fs::read_to_string(self.data.with_extension("log")).unwrap_or_default();
        text.lines()
            .rev()
            .take(30)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// SIGKILLs the node.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for PrivateNode {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.data);
        let _ = std::fs::remove_file(self.data.with_extension("log"));
    }
}
