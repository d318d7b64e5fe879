//! Shared test support: finding `../shared` (Logstash's behaviour as data) at run time.

use std::path::PathBuf;

/// The shared corpus directory: `$SLUICE_SHARED`, else `../shared` beside the project root.
/// Returns `None` (after saying so) when it is absent; under `CI=true` absence is a failure.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("SLUICE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    if dir.join("compat").is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "shared corpus not found at {} (set SLUICE_SHARED); required under CI=true",
            dir.display()
        );
    }
    eprintln!(
        "SKIP: shared corpus not found at {}; set SLUICE_SHARED to run these tests",
        dir.display()
    );
    None
}
