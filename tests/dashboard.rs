//! The dashboard in headless Chromium (Debian's `chromium`, driven by playwright-core from
//! `tests/dashboard`, both installed by `scripts/test`): while a generator runs, the page loads
//! with no console errors, shows a non-zero rate, draws its charts and fits the window; a click
//! on a plugin opens the tap pane, which shows its events live; a screenshot is saved under
//! the test's temporary directory. Skipped (with a message) when
//! node, chromium or playwright-core is missing, except under `CI=true`.

mod api_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use api_support::{temp_dir, Sluice};

fn chromium() -> PathBuf {
    std::env::var_os("CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

/// What is missing to run the browser test, if anything.
fn missing_tools(script_dir: &Path) -> Option<String> {
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !node {
        return Some("node".to_owned());
    }
    if !chromium().exists() {
        return Some(format!("chromium ({})", chromium().display()));
    }
    if !script_dir.join("node_modules/playwright-core").is_dir() {
        return Some(format!(
            "playwright-core (npm install --prefix {})",
            script_dir.display()
        ));
    }
    None
}

#[test]
fn dashboard_shows_live_rates_in_headless_chromium() {
    let script_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/dashboard");
    if let Some(what) = missing_tools(&script_dir) {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "{what} is needed for the dashboard test under CI=true (scripts/test installs it)"
        );
        eprintln!("SKIP: {what} not found; scripts/test installs it");
        return;
    }
    let dir = temp_dir("dashboard");
    // Two pipelines, one on a persisted queue, both busy while the browser looks.
    let pipelines = "- pipeline.id: fast\n  pipeline.workers: 1\n  config.string: 'input { generator { count => 0 } } filter { mutate { id => \"tagger\" add_field => { \"a\" => \"b\" } } } output { null {} }'\n\
- pipeline.id: disk\n  pipeline.workers: 1\n  queue.type: persisted\n  config.string: 'input { generator { count => 0 } } filter { mutate { uppercase => [\"message\"] } } output { null { id => \"n\" lane => { type => persisted } } }'\n";
    let sluice = Sluice::start(&dir, "", pipelines, &[]);
    let screenshot = dir.join("dashboard.png");
    let url = format!("http://127.0.0.1:{}/dashboard", sluice.port);
    let mut child = Command::new("timeout")
        .args(["90", "node"])
        .arg(script_dir.join("check.mjs"))
        .arg(&url)
        .arg(&screenshot)
        .arg(dir.join("chromium-profile"))
        .env("LANE_OF", "disk")
        .env("TAP_PLUGIN", "fast/tagger")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(100),
            "the browser check did not finish"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "dashboard check failed: {report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: serde_json::Value = serde_json::from_str(report.trim()).unwrap();
    assert!(seen["outRate"].as_f64().unwrap() > 0.0, "{seen}");
    assert_eq!(seen["consoleErrors"].as_array().unwrap().len(), 0, "{seen}");
    let texts = |list: &'static str| -> Vec<&str> {
        seen[list]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t.as_str())
            .collect()
    };
    let tabs = texts("tabs");
    assert_eq!(tabs, ["all pipelines", "disk", "fast"], "{seen}");
    // The disk pipeline's page shows its output's lane.
    let info = texts("info");
    assert!(
        info.iter()
            .any(|r| r.starts_with("lane n") && r.contains("persisted")),
        "{seen}"
    );
    // The tap pane showed the filter's events live, with its change, and closed.
    assert_eq!(seen["tap"]["title"], "fast/tagger", "{seen}");
    let first = seen["tap"]["events"][0].as_str().unwrap_or("");
    assert!(
        first.contains("filter tagger") && first.contains(r#""a": "b""#),
        "{seen}"
    );
    assert_eq!(seen["tapClosed"], true, "{seen}");
    let png = std::fs::read(&screenshot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000);
    eprintln!("dashboard screenshot: {}", screenshot.display());
    sluice.stop();
    // The screenshot stays for a person to look at; the queue data goes.
    let _ = std::fs::remove_dir_all(dir.join("data"));
    let _ = std::fs::remove_dir_all(dir.join("chromium-profile"));
}
