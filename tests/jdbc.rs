//! The jdbc input and the jdbc_streaming and jdbc_static filters through the real binary,
//! against a PostgreSQL and a MariaDB server started here from the Debian packages (their data
//! directories under the test's temp dir, on free 127.0.0.1 ports, gone when the test binary
//! ends) and SQLite files: rows as events with Logstash's types, paging, a schedule with
//! `:sql_last_value` that reads only new rows and survives a SIGKILL without losing or
//! re-reading what it recorded, lookups with a cache and defaults, local tables loaded and
//! reloaded, a database that is down, and option errors. A missing server fails the tests
//! under CI=true and skips them otherwise.

mod net_support;
mod run_support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use run_support::{temp_dir, Run};
use serde_json::{json, Value as Json};

// ---------------------------------------------------------------------------------------
// The servers: one PostgreSQL and one MariaDB for the whole test binary.

/// Servers and directories to remove when the test binary exits.
static CLEANUP: Mutex<Vec<(u32, PathBuf)>> = Mutex::new(Vec::new());

extern "C" fn cleanup() {
    if let Ok(list) = CLEANUP.lock() {
        for (pid, dir) in list.iter() {
            unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
            let mut status = 0;
            unsafe { libc::waitpid(*pid as i32, &mut status, 0) };
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    let _ = std::fs::remove_dir(base_dir_path());
}

fn register_cleanup(pid: u32, dir: PathBuf) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| unsafe {
        libc::atexit(cleanup);
    });
    CLEANUP.lock().unwrap().push((pid, dir));
}

/// Starts a server on a thread that lives as long as the test binary, the server dying with
/// it (PR_SET_PDEATHSIG) even when the binary is killed.
fn keep(start: impl FnOnce() -> Result<Child, String> + Send + 'static) -> Result<u32, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let child = start();
        let _ = tx.send(child.as_ref().map(Child::id).map_err(Clone::clone));
        let _child = child;
        loop {
            std::thread::park();
        }
    });
    rx.recv().unwrap()
}

fn die_with_parent(cmd: &mut Command) -> &mut Command {
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        })
    }
}

fn base_dir_path() -> PathBuf {
    std::env::temp_dir().join(format!("sluice-jdbc-servers-{}", std::process::id()))
}

fn base_dir() -> PathBuf {
    let d = base_dir_path();
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn wait_port(port: u16, secs: u64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn run_ok(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

struct Postgres {
    port: u16,
    bin: PathBuf,
}

const PASSWORD: &str = "s3cret'pw";

fn postgres_bin() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|r| {
            r.filter_map(|e| e.ok())
                .map(|e| e.path().join("bin"))
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs.into_iter().rev().find(|d| d.join("initdb").is_file())
}

fn user_ids(name: &str) -> Option<(u32, u32)> {
    let id = |flag: &str| {
        Command::new("id")
            .args([flag, name])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
    };
    Some((id("-u")?, id("-g")?))
}

fn postgres() -> Option<&'static Postgres> {
    static PG: OnceLock<Result<Postgres, String>> = OnceLock::new();
    let pg = PG.get_or_init(|| {
        let bin =
            postgres_bin().ok_or("PostgreSQL is not installed (apt-get install postgresql)")?;
        let dir = base_dir().join("postgres");
        std::fs::create_dir_all(&dir).unwrap();
        // PostgreSQL does not run as root: as the postgres user, then.
        let ids = if unsafe { libc::geteuid() } == 0 {
            Some(user_ids("postgres").ok_or("no postgres user to run PostgreSQL as")?)
        } else {
            None
        };
        let pwfile = dir.join("pw");
        std::fs::write(&pwfile, PASSWORD).unwrap();
        if let Some((uid, gid)) = ids {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).unwrap();
            std::os::unix::fs::chown(&pwfile, Some(uid), Some(gid)).unwrap();
        }
        let as_owner = |c: &mut Command| {
            if let Some((uid, gid)) = ids {
                c.uid(uid).gid(gid);
            }
        };
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(dir.join("data"))
            .args([
                "-U",
                "sluice",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ])
            .arg(format!("--pwfile={}", pwfile.display()));
        as_owner(&mut initdb);
        run_ok(&mut initdb)?;
        let port = net_support::free_port();
        let (postgres, data) = (bin.join("postgres"), dir.join("data"));
        let log = std::fs::File::create(dir.join("log")).unwrap();
        if let Some((uid, gid)) = ids {
            std::os::unix::fs::chown(dir.join("log"), Some(uid), Some(gid)).unwrap();
        }
        let pid = keep(move || {
            let mut c = Command::new(postgres);
            c.arg("-D")
                .arg(&data)
                .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
                .args(["-c", "fsync=off", "-c", "full_page_writes=off", "-k"])
                .arg(&data)
                .stdout(log.try_clone().unwrap())
                .stderr(log);
            if let Some((uid, gid)) = ids {
                c.uid(uid).gid(gid);
            }
            die_with_parent(&mut c).spawn().map_err(|e| e.to_string())
        })?;
        register_cleanup(pid, dir.clone());
        if !wait_port(port, 30) {
            return Err(format!(
                "PostgreSQL did not start: {}",
                std::fs::read_to_string(dir.join("log")).unwrap_or_default()
            ));
        }
        Ok(Postgres { port, bin })
    });
    match pg {
        Ok(pg) => Some(pg),
        Err(e) => {
            net_support::missing(e);
            None
        }
    }
}

impl Postgres {
    fn url(&self) -> String {
        format!("jdbc:postgresql://127.0.0.1:{}/postgres", self.port)
    }

    /// Runs SQL through psql.
    fn sql(&self, sql: &str) -> String {
        run_ok(
            Command::new(self.bin.join("psql"))
                .args(["-q", "-v", "ON_ERROR_STOP=1", "-At", "-c", sql])
                .arg(format!(
                    "host=127.0.0.1 port={} user=sluice dbname=postgres",
                    self.port
                ))
                .env("PGPASSWORD", PASSWORD),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The connection options of a plugin.
    fn options(&self) -> String {
        format!(
            r#"jdbc_connection_string => "{}" jdbc_user => "sluice" jdbc_password => "{}" jdbc_driver_class => "org.postgresql.Driver""#,
            self.url(),
            PASSWORD
        )
    }
}

struct Mariadb {
    port: u16,
    socket: PathBuf,
}

fn mariadb() -> Option<&'static Mariadb> {
    static DB: OnceLock<Result<Mariadb, String>> = OnceLock::new();
    let db = DB.get_or_init(|| {
        let found = |c: &str| Command::new(c).arg("--version").output().is_ok();
        if !found("mariadbd") && !Path::new("/usr/sbin/mariadbd").is_file() {
            return Err("MariaDB is not installed (apt-get install mariadb-server)".to_owned());
        }
        let server = if found("mariadbd") { "mariadbd" } else { "/usr/sbin/mariadbd" };
        let dir = base_dir().join("mariadb");
        std::fs::create_dir_all(&dir).unwrap();
        let root = unsafe { libc::geteuid() } == 0;
        let mut install = Command::new("mariadb-install-db");
        install
            .arg("--no-defaults")
            .arg(format!("--datadir={}", dir.join("data").display()))
            .args(["--auth-root-authentication-method=socket", "--skip-test-db"]);
        if root {
            install.arg("--user=root");
        }
        run_ok(&mut install)?;
        let port = net_support::free_port();
        let socket = dir.join("sock");
        let (data, sock, d) = (dir.join("data"), socket.clone(), dir.clone());
        let pid = keep(move || {
            let mut c = Command::new(server);
            c.arg("--no-defaults")
                .arg(format!("--datadir={}", data.display()))
                .arg(format!("--port={port}"))
                .arg("--bind-address=127.0.0.1")
                .arg(format!("--socket={}", sock.display()))
                .arg(format!("--pid-file={}", d.join("pid").display()))
                .arg(format!("--log-error={}", d.join("err.log").display()))
                .args(["--skip-log-bin", "--innodb-buffer-pool-size=32M", "--innodb-flush-log-at-trx-commit=0"])
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if root {
                c.arg("--user=root");
            }
            die_with_parent(&mut c).spawn().map_err(|e| e.to_string())
        })?;
        register_cleanup(pid, dir.clone());
        if !wait_port(port, 30) {
            return Err(format!(
                "MariaDB did not start: {}",
                std::fs::read_to_string(dir.join("err.log")).unwrap_or_default()
            ));
        }
        let db = Mariadb { port, socket };
        db.root_sql(&format!(
            "CREATE USER 'sluice'@'%' IDENTIFIED BY '{}'; GRANT ALL ON *.* TO 'sluice'@'%'; CREATE DATABASE t;",
            PASSWORD.replace('\'', "''")
        ))?;
        Ok(db)
    });
    match db {
        Ok(db) => Some(db),
        Err(e) => {
            net_support::missing(e);
            None
        }
    }
}

impl Mariadb {
    fn root_sql(&self, sql: &str) -> Result<String, String> {
        run_ok(
            Command::new("mariadb")
                .arg("--no-defaults")
                .arg(format!("--socket={}", self.socket.display()))
                .args(["-u", "root", "-N", "-B", "-e", sql]),
        )
    }

    fn sql(&self, sql: &str) -> String {
        self.root_sql(&format!("USE t; {sql}"))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The connection options of a plugin, the password from a file.
    fn options(&self, pwfile: &Path) -> String {
        std::fs::write(pwfile, format!("{PASSWORD}\n")).unwrap();
        format!(
            r#"jdbc_connection_string => "jdbc:mariadb://127.0.0.1:{}/t" jdbc_user => "sluice" jdbc_password_filepath => "{}""#,
            self.port,
            pwfile.display()
        )
    }
}

// ---------------------------------------------------------------------------------------
// Running sluice.

fn lines(text: &str) -> Vec<Json> {
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Runs a config whose inputs end by themselves: its events and log.
fn run_to_end(name: &str, sluice_yml: &str, config: &str) -> (Vec<Json>, String) {
    let (out, log) = run_to_end_raw(name, sluice_yml, config);
    (lines(&out), log)
}

/// [`run_to_end`], the output as it was written.
fn run_to_end_raw(name: &str, sluice_yml: &str, config: &str) -> (String, String) {
    let dir = temp_dir("jdbc", name);
    let yml = format!("path.data: {}\n{sluice_yml}", dir.join("data").display());
    let mut run = Run::start(
        &dir,
        &yml,
        &["-w", "1"],
        config,
        Stdio::null(),
        Stdio::piped(),
    );
    let out = run.read_stdout();
    assert!(run.exit(120).success(), "{}", run.log());
    (out.join().unwrap(), run.log())
}

/// `input { jdbc { ... } } output { stdout { codec => json_lines } }`.
fn input_config(options: &str) -> String {
    format!("input {{ jdbc {{ {options} }} }} output {{ stdout {{ codec => json_lines }} }}")
}

/// A sluice fed events on stdin one at a time, its output read as it comes.
struct Interactive {
    run: Run,
    stdin: ChildStdin,
    out: mpsc::Receiver<Json>,
}

impl Interactive {
    fn start(name: &str, filters: &str) -> Interactive {
        let dir = temp_dir("jdbc", name);
        let config = format!(
            "input {{ stdin {{ codec => json_lines }} }} filter {{ {filters} }} output {{ stdout {{ codec => json_lines }} }}"
        );
        let mut run = Run::start(
            &dir,
            &format!(
                "path.data: {}\npipeline.batch.delay: 5\n",
                dir.join("data").display()
            ),
            &["-w", "1"],
            &config,
            Stdio::piped(),
            Stdio::piped(),
        );
        let stdin = run.child.stdin.take().unwrap();
        let stdout = run.child.stdout.take().unwrap();
        let (tx, out) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str(&line) {
                    if tx.send(v).is_err() {
                        return;
                    }
                }
            }
        });
        Interactive { run, stdin, out }
    }

    /// Sends one event and waits for it to come out.
    fn send(&mut self, event: Json) -> Json {
        writeln!(self.stdin, "{event}").unwrap();
        self.stdin.flush().unwrap();
        self.out
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no output for {event}:\n{}", self.run.log()))
    }

    fn finish(mut self) -> String {
        drop(self.stdin);
        assert!(self.run.exit(60).success(), "{}", self.run.log());
        self.run.log()
    }
}

fn tags(e: &Json) -> Vec<String> {
    e["tags"]
        .as_array()
        .map(|a| a.iter().map(|t| t.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

fn ids(events: &[Json]) -> BTreeMap<i64, usize> {
    let mut seen = BTreeMap::new();
    for e in events {
        *seen.entry(e["id"].as_i64().unwrap()).or_insert(0) += 1;
    }
    seen
}

/// The number a last-run file holds (`--- 42`).
fn last_run_number(path: &Path) -> Option<i64> {
    std::fs::read_to_string(path)
        .ok()?
        .trim()
        .strip_prefix("---")?
        .trim()
        .parse()
        .ok()
}

// ---------------------------------------------------------------------------------------
// The tests.

#[test]
fn postgres_rows_become_events_with_logstash_types_and_pages() {
    let Some(pg) = postgres() else { return };
    pg.sql(
        "CREATE TABLE kinds (id serial primary key, i2 smallint, i8 bigint, f8 double precision,
           n numeric(16,6), b boolean, t text, d date, ts timestamp, tz timestamptz, tm time,
           j jsonb, u uuid, arr int[], nul text, \"MixedCase\" int);
         INSERT INTO kinds (i2, i8, f8, n, b, t, d, ts, tz, tm, j, u, arr, \"MixedCase\") VALUES
           (1, 9000000000, 2.25, 95.67, true, 'it''s', '1999-12-31', '1999-12-31 23:59:59.123456',
            '2015-01-01 12:00:00+02', '10:11:12', '{\"a\": 1}',
            'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{1,2,3}', 7);
         CREATE TABLE many (id int primary key, v text);
         INSERT INTO many SELECT g, 'v' || g FROM generate_series(1, 250) g;",
    );
    // One run, no schedule: the input ends, and the last run's time is in path.data.
    let (raw, log) = run_to_end_raw(
        "pg-types",
        "",
        &input_config(&format!(
            r#"{} statement => "SELECT * FROM kinds WHERE t = :t AND ts > :sql_last_value"
               parameters => {{ "t" => "it's" }}"#,
            pg.options()
        )),
    );
    let events = lines(&raw);
    assert_eq!(events.len(), 1, "{log}");
    let e = &events[0];
    assert_eq!(e["i2"], 1);
    assert_eq!(e["i8"], 9_000_000_000i64);
    assert_eq!(e["f8"], 2.25);
    assert!(
        raw.contains(r#""n":95.670000"#),
        "a decimal stays exact: {raw}"
    );
    assert_eq!(e["b"], true);
    assert_eq!(e["t"], "it's");
    assert_eq!(e["d"], "1999-12-31T00:00:00.000Z");
    assert_eq!(e["ts"], "1999-12-31T23:59:59.123Z");
    assert_eq!(e["tz"], "2015-01-01T10:00:00.000Z");
    assert_eq!(e["tm"], "10:11:12");
    assert_eq!(e["j"], "{\"a\": 1}");
    assert_eq!(e["u"], "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
    assert_eq!(e["arr"], json!([1, 2, 3]));
    assert!(e.as_object().unwrap().contains_key("nul") && e["nul"].is_null());
    assert_eq!(e["mixedcase"], 7, "column names are lowercased");
    assert!(log.contains("the Java driver options are ignored"), "{log}");
    let last = temp_dir_path("pg-types").join("data/plugins/inputs/jdbc/logstash_jdbc_last_run");
    let text = std::fs::read_to_string(&last).unwrap();
    assert!(
        text.starts_with("--- 20") && text.trim_end().ends_with(" Z"),
        "{text:?}"
    );

    // target, and the names as the database gives them.
    let (events, log) = run_to_end(
        "pg-target",
        "",
        &input_config(&format!(
            r#"{} statement => 'SELECT "MixedCase" FROM kinds' target => "[row]"
               lowercase_column_names => false record_last_run => false"#,
            pg.options()
        )),
    );
    assert_eq!(events.len(), 1, "{log}");
    assert_eq!(events[0]["row"]["MixedCase"], 7);

    // Paging as Sequel does it (counted, then LIMIT/OFFSET), a cursor (fetch size), explicit
    // paging, and a prepared statement: every row once.
    for (name, extra, want) in [
        (
            "pg-paged",
            "jdbc_paging_enabled => true jdbc_page_size => 60",
            250,
        ),
        ("pg-fetch", "jdbc_fetch_size => 7", 250),
        (
            "pg-explicit",
            r#"jdbc_paging_enabled => true jdbc_paging_mode => "explicit" jdbc_page_size => 40
               statement => "SELECT id FROM many ORDER BY id LIMIT :size OFFSET :offset""#,
            250,
        ),
        (
            "pg-prepared",
            r#"use_prepared_statements => true prepared_statement_name => "some"
               prepared_statement_bind_values => [":sql_last_value", 5]
               statement => "SELECT id FROM many WHERE id > ? AND id <= ?"
               use_column_value => true tracking_column => "id""#,
            5,
        ),
    ] {
        let statement = if extra.contains("statement =>") {
            String::new()
        } else {
            r#"statement => "SELECT id, v FROM many""#.to_owned()
        };
        let (events, log) = run_to_end(
            name,
            "",
            &input_config(&format!(
                "{} {statement} {extra} record_last_run => false",
                pg.options()
            )),
        );
        let seen = ids(&events);
        assert_eq!(seen.len(), want, "{name}: {log}");
        assert!(seen.values().all(|n| *n == 1), "{name}: duplicates");
        if name == "pg-paged" {
            assert!(log.contains("LIMIT 60 OFFSET 240"), "{log}");
        }
    }
}

fn temp_dir_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("sluice-jdbc-{name}-{}", std::process::id()))
}

#[test]
fn mariadb_rows_become_events_with_logstash_types() {
    let Some(db) = mariadb() else { return };
    db.sql(
        "CREATE TABLE kinds (id int unsigned auto_increment primary key, flag tinyint(1),
           small tinyint, big bigint unsigned, dec1 decimal(10,3), d double, dt datetime(6),
           dd date, tm time, y year, s varchar(20), e enum('a','b'), nul int,
           zero datetime);
         INSERT INTO kinds (flag, small, big, dec1, d, dt, dd, tm, y, s, e, zero) VALUES
           (1, -5, 18446744073709551615, 12.5, 2.5, '2015-01-01 12:00:00.123456', '1999-12-31',
            '10:11:12', 2024, 'a\\\\b''c', 'b', '0000-00-00 00:00:00');",
    );
    let dir = temp_dir("jdbc", "maria-files");
    let statement = dir.join("statement.sql");
    std::fs::write(
        &statement,
        "SELECT * FROM kinds WHERE s = :s AND dt > :sql_last_value;\n",
    )
    .unwrap();
    let (raw, log) = run_to_end_raw(
        "maria-types",
        "",
        &input_config(&format!(
            r#"{} statement_filepath => "{}" parameters => {{ "s" => "a\b'c" }}
               record_last_run => false jdbc_default_timezone => "UTC""#,
            db.options(&dir.join("pw")),
            statement.display()
        )),
    );
    let events = lines(&raw);
    assert_eq!(events.len(), 1, "{log}");
    let e = &events[0];
    assert_eq!(
        e["flag"], true,
        "TINYINT(1) is a boolean, as Connector/J reads it"
    );
    assert_eq!(e["small"], -5);
    assert!(raw.contains(r#""big":18446744073709551615"#), "{raw}");
    assert!(raw.contains(r#""dec1":12.500"#), "{raw}");
    assert_eq!(e["d"], 2.5);
    assert_eq!(e["dt"], "2015-01-01T12:00:00.123Z");
    assert_eq!(e["dd"], "1999-12-31T00:00:00.000Z");
    assert_eq!(e["tm"], "10:11:12");
    assert_eq!(e["y"], 2024);
    assert_eq!(e["s"], "a\\b'c");
    assert_eq!(e["e"], "b");
    assert!(e["nul"].is_null() && e["zero"].is_null(), "{e}");
}

#[test]
fn sqlite_files_are_read_with_their_declared_types() {
    let dir = temp_dir("jdbc", "sqlite");
    let file = dir.join("db.sqlite");
    let conn = rusqlite::Connection::open(&file).unwrap();
    conn.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL, ok BOOLEAN, at DATETIME, raw BLOB);
         INSERT INTO t VALUES (1, 'one', 1.5, 1, '2020-02-03 04:05:06', x'6869');
         INSERT INTO t VALUES (2, 'two', NULL, 0, NULL, NULL);",
    )
    .unwrap();
    drop(conn);
    let (events, log) = run_to_end(
        "sqlite-run",
        "",
        &input_config(&format!(
            r#"jdbc_connection_string => "jdbc:sqlite:{}" jdbc_user => "" statement => "SELECT * FROM t WHERE id >= :min ORDER BY id"
               parameters => {{ "min" => 1 }} record_last_run => false jdbc_default_timezone => "UTC""#,
            file.display()
        )),
    );
    assert_eq!(events.len(), 2, "{log}");
    let one = &events[0];
    assert_eq!(one["name"], "one");
    assert_eq!(one["score"], 1.5);
    assert_eq!(one["ok"], true);
    assert_eq!(one["at"], "2020-02-03T04:05:06.000Z");
    assert_eq!(one["raw"], "hi");
    assert_eq!(events[1]["ok"], false);
    assert!(events[1]["at"].is_null());
}

#[test]
fn a_schedule_reads_only_new_rows_and_keeps_its_place_across_restarts() {
    let Some(pg) = postgres() else { return };
    pg.sql(
        "CREATE TABLE ticks (id serial primary key, note text);
         INSERT INTO ticks (note) SELECT 'n' || g FROM generate_series(1, 100) g;",
    );
    let dir = temp_dir("jdbc", "schedule");
    let last_run = dir.join("last_run");
    let config = input_config(&format!(
        r#"{} schedule => "* * * * * *" use_column_value => true tracking_column => "id"
           statement => "SELECT id, note FROM ticks WHERE id > :sql_last_value ORDER BY id"
           last_run_metadata_path => "{}""#,
        pg.options(),
        last_run.display()
    ));
    let start = |name: &str| {
        let d = temp_dir("jdbc", name);
        Run::start(&d, "", &["-w", "1"], &config, Stdio::null(), Stdio::piped())
    };
    let mut run = start("schedule-1");
    let (out, count) = run.read_stdout_counting();
    let wait = |run: &Run, n: usize| {
        run.wait_until(&format!("{n} events"), 60, || {
            count.load(std::sync::atomic::Ordering::Relaxed) >= n
        })
    };
    wait(&run, 100);
    run.wait_until("the last run file at 100", 30, || {
        last_run_number(&last_run) == Some(100)
    });
    pg.sql("INSERT INTO ticks (note) SELECT 'm' || g FROM generate_series(1, 50) g;");
    wait(&run, 150);
    run.wait_until("the last run file at 150", 30, || {
        last_run_number(&last_run) == Some(150)
    });
    // A run more, with nothing new.
    let runs = run.log().matches("jdbc input: executing").count();
    run.wait_until("another run", 30, || {
        run.log().matches("jdbc input: executing").count() > runs
    });
    run.signal("-TERM");
    assert!(run.exit(60).success(), "{}", run.log());
    let events = lines(&out.join().unwrap());
    let seen = ids(&events);
    assert_eq!(seen.len(), 150, "{}", run.log());
    assert!(seen.values().all(|n| *n == 1), "read twice: {seen:?}");
    assert!(
        run.log().contains("WHERE id > 100 ORDER BY id"),
        "{}",
        run.log()
    );

    // A restart starts where the file says: only rows added since.
    pg.sql("INSERT INTO ticks (note) SELECT 'r' || g FROM generate_series(1, 5) g;");
    let mut run = start("schedule-2");
    let (out, count) = run.read_stdout_counting();
    run.wait_until("5 events", 60, || {
        count.load(std::sync::atomic::Ordering::Relaxed) >= 5
    });
    run.wait_until("the last run file at 155", 30, || {
        last_run_number(&last_run) == Some(155)
    });
    run.signal("-TERM");
    assert!(run.exit(60).success(), "{}", run.log());
    let seen = ids(&lines(&out.join().unwrap()));
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        (151..=155).collect::<Vec<_>>()
    );
}

#[test]
fn a_stop_cancels_a_statement_that_is_still_running() {
    let Some(pg) = postgres() else { return };
    let dir = temp_dir("jdbc", "cancel");
    let config = input_config(&format!(
        r#"{} statement => "SELECT pg_sleep(600) AS slept" record_last_run => false"#,
        pg.options()
    ));
    let mut run = Run::start(
        &dir,
        "",
        &["-w", "1"],
        &config,
        Stdio::null(),
        Stdio::null(),
    );
    run.wait_log("jdbc input: executing", 30);
    // The statement is running on the server.
    run.wait_until("pg_sleep on the server", 30, || {
        pg.sql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(600)%'")
            .trim()
            == "1"
    });
    run.signal("-TERM");
    assert!(run.exit(30).success(), "{}", run.log());
}

#[test]
fn a_sigkill_mid_schedule_loses_nothing_and_rereads_nothing_recorded() {
    let Some(pg) = postgres() else { return };
    pg.sql(
        "CREATE TABLE kills (id serial primary key, note text);
         INSERT INTO kills (note) SELECT 'n' || g FROM generate_series(1, 200) g;",
    );
    let dir = temp_dir("jdbc", "sigkill");
    let last_run = dir.join("last_run");
    let out = |run: u32| dir.join(format!("out{run}.jsonl"));
    // A persisted queue that takes few events, and slow workers: the input spends its runs
    // waiting in push, where the kill finds it.
    let yml = format!(
        "path.data: {}\nqueue.type: persisted\nqueue.max_events: 30\nqueue.checkpoint.writes: 1\npipeline.batch.size: 10\n",
        dir.join("data").display()
    );
    let config = |run: u32| {
        format!(
            r#"input {{ jdbc {{ {} schedule => "* * * * * *" use_column_value => true tracking_column => "id"
                 statement => "SELECT id, note FROM kills WHERE id > :sql_last_value ORDER BY id"
                 last_run_metadata_path => "{}" add_field => {{ "run" => "{run}" }} }} }}
               filter {{ sleep {{ time => "0.005" }} }}
               output {{ file {{ path => "{}" codec => json_lines }} }}"#,
            pg.options(),
            last_run.display(),
            out(run).display()
        )
    };
    let mut first = Run::start(
        &dir,
        &yml,
        &["-w", "1"],
        &config(1),
        Stdio::null(),
        Stdio::null(),
    );
    first.wait_until("a recorded run", 60, || {
        last_run_number(&last_run).is_some_and(|n| n >= 200)
    });
    // 300 more rows: the next run reads them, waiting in push for the slow workers, and is
    // killed there, its rows partly queued and its value not yet recorded.
    pg.sql("INSERT INTO kills (note) SELECT 'm' || g FROM generate_series(1, 300) g;");
    first.wait_until("the run that reads them", 60, || {
        first.log().contains("WHERE id > 200 ORDER BY id")
    });
    first.signal("-KILL");
    let _ = first.exit(30);
    let committed = last_run_number(&last_run).unwrap();
    let total = 500;

    let mut second = Run::start(
        &dir,
        &yml,
        &["-w", "1"],
        &config(2),
        Stdio::null(),
        Stdio::null(),
    );
    let outputs = || {
        let mut all = lines(&run_support::complete_text(&out(1)));
        all.extend(lines(&run_support::complete_text(&out(2))));
        all
    };
    second.wait_until("every row in the output", 90, || {
        ids(&outputs()).len() == total
    });
    second.signal("-TERM");
    assert!(second.exit(60).success(), "{}", second.log());
    let events = outputs();
    let all = ids(&events);
    assert_eq!(all.len(), total, "nothing lost: {}", second.log());
    let reread: Vec<i64> = events
        .iter()
        .filter(|e| e["run"] == "2")
        .map(|e| e["id"].as_i64().unwrap())
        .collect();
    assert!(
        reread.iter().all(|id| *id > committed),
        "rows at or below the recorded {committed} were read again: {reread:?}"
    );
    let mut unique = reread.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(
        unique.len(),
        reread.len(),
        "the second run read a row twice"
    );
    assert_eq!(last_run_number(&last_run), Some(total as i64));
    let first_run_ids = events.iter().filter(|e| e["run"] == "1").count();
    eprintln!(
        "recorded at the kill: {committed}; events of the first run: {first_run_ids}; rows read again: {}",
        reread.len()
    );
}

#[test]
fn jdbc_streaming_looks_rows_up_with_a_cache_and_defaults() {
    let Some(pg) = postgres() else { return };
    pg.sql(
        "CREATE TABLE users (id int primary key, name text, since date);
         INSERT INTO users VALUES (1, 'ada', '2020-01-01'), (2, 'bob', NULL);",
    );
    let common = format!(
        r#"{} statement => "SELECT name FROM users WHERE id = :id" parameters => {{ "id" => "[uid]" }}
           target => "user" default_hash => {{ "name" => "nobody" }}"#,
        pg.options()
    );
    let filters = format!(
        r#"if [op] == "cached" {{ jdbc_streaming {{ {common} use_cache => true cache_expiration => 600 }} }}
           if [op] == "fresh" {{ jdbc_streaming {{ {common} use_cache => false add_tag => ["looked"] }} }}
           if [op] == "prepared" {{ jdbc_streaming {{ {opts} use_prepared_statements => true
               prepared_statement_name => "by_id" prepared_statement_bind_values => ["[uid]"]
               statement => "SELECT name, since FROM users WHERE id = ?" target => "[found][user]" }} }}
           if [op] == "bad" {{ jdbc_streaming {{ {opts} statement => "SELECT name FROM nowhere WHERE id = :id"
               parameters => {{ "id" => "uid" }} target => "user" }} }}"#,
        opts = pg.options()
    );
    let mut s = Interactive::start("streaming", &filters);
    let e = s.send(json!({"op": "cached", "uid": 1}));
    assert_eq!(e["user"], json!([{"name": "ada"}]), "{e}");
    let e = s.send(json!({"op": "fresh", "uid": 1}));
    assert_eq!(e["user"], json!([{"name": "ada"}]));
    assert_eq!(tags(&e), ["looked"]);
    pg.sql("UPDATE users SET name = 'ada lovelace' WHERE id = 1;");
    let e = s.send(json!({"op": "cached", "uid": 1}));
    assert_eq!(e["user"], json!([{"name": "ada"}]), "a cache hit: {e}");
    let e = s.send(json!({"op": "fresh", "uid": 1}));
    assert_eq!(
        e["user"],
        json!([{"name": "ada lovelace"}]),
        "no cache: {e}"
    );
    let e = s.send(json!({"op": "cached", "uid": 99}));
    assert_eq!(e["user"], json!([{"name": "nobody"}]));
    assert_eq!(tags(&e), ["_jdbcstreamingdefaultsused"]);
    let e = s.send(json!({"op": "prepared", "uid": 1}));
    assert_eq!(
        e["found"]["user"],
        json!([{"name": "ada lovelace", "since": "2020-01-01T00:00:00.000Z"}]),
        "{e}"
    );
    let e = s.send(json!({"op": "prepared", "uid": 2}));
    assert_eq!(e["found"]["user"], json!([{"name": "bob", "since": null}]));
    let e = s.send(json!({"op": "bad", "uid": 1}));
    assert_eq!(
        tags(&e),
        ["_jdbcstreamingfailure", "_jdbcstreamingdefaultsused"]
    );
    assert_eq!(e["user"], json!([{}]));
    let log = s.finish();
    assert!(
        log.contains("relation \\\"nowhere\\\" does not exist") || log.contains("nowhere"),
        "{log}"
    );
}

#[test]
fn jdbc_static_loads_local_tables_looks_them_up_and_reloads() {
    let Some(db) = mariadb() else { return };
    db.sql(
        "CREATE TABLE servers (ip varchar(64), name varchar(64), rack int, seen datetime);
         INSERT INTO servers VALUES ('10.0.0.1', 'alpha', 1, '2021-05-06 07:08:09'),
                                    ('10.0.0.2', 'beta', 2, NULL);",
    );
    let dir = temp_dir("jdbc", "static-files");
    let filters = format!(
        r#"jdbc_static {{
             {}
             loader_schedule => "* * * * * *"
             loaders => [ {{ id => "remote-servers" query => "SELECT ip, name, rack, seen FROM servers" local_table => "servers" }} ]
             local_db_objects => [ {{ name => "servers" index_columns => ["ip"]
                 columns => [["ip", "varchar(64)"], ["name", "varchar(64)"], ["rack", "INTEGER"], ["seen", "TIMESTAMP"]] }} ]
             local_lookups => [
               {{ id => "by-ip" query => "SELECT name, rack, seen FROM servers WHERE ip = :ip"
                  parameters => {{ "ip" => "[src][ip]" }} target => "server" default_hash => {{ "name" => "unknown" }} }},
               {{ id => "rack" query => "SELECT name FROM servers WHERE rack = ? ORDER BY name"
                  prepared_parameters => ["%{{rack}}"] target => "rack_members" }}
             ]
             add_tag => ["enriched"]
           }}"#,
        db.options(&dir.join("pw"))
    );
    let mut s = Interactive::start("static", &filters);
    let e = s.send(json!({"src": {"ip": "10.0.0.1"}, "rack": 2}));
    assert_eq!(
        e["server"],
        json!([{"name": "alpha", "rack": 1, "seen": "2021-05-06T07:08:09.000Z"}]),
        "{e}"
    );
    assert_eq!(e["rack_members"], json!([{"name": "beta"}]));
    assert_eq!(tags(&e), ["enriched"]);
    let e = s.send(json!({"src": {"ip": "10.9.9.9"}, "rack": 7}));
    assert_eq!(e["server"], json!([{"name": "unknown"}]));
    assert_eq!(e["rack_members"], json!([]));
    assert_eq!(tags(&e), ["_jdbcstaticdefaultsused", "enriched"]);
    // No ip: that lookup is invalid (tagged, skipped), so the filter does not match.
    let e = s.send(json!({"rack": 1}));
    assert!(e.get("server").is_none(), "{e}");
    assert_eq!(e["rack_members"], json!([{"name": "alpha"}]));
    assert_eq!(tags(&e), ["_jdbcstaticfailure"]);
    // The remote table changes; a scheduled load brings it in.
    db.sql("UPDATE servers SET name = 'alpha-2' WHERE ip = '10.0.0.1'; INSERT INTO servers VALUES ('10.0.0.3', 'gamma', 3, NULL);");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let e = s.send(json!({"src": {"ip": "10.0.0.3"}, "rack": 1}));
        if e["server"] == json!([{"name": "gamma", "rack": 3, "seen": null}]) {
            assert_eq!(e["rack_members"], json!([{"name": "alpha-2"}]));
            break;
        }
        assert!(Instant::now() < deadline, "no reload: {e}\n{}", s.run.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    let log = s.finish();
    assert!(
        log.contains("loader remote-servers, fetched 2 records"),
        "{log}"
    );
}

#[test]
fn a_database_that_is_down_is_retried_and_reported() {
    let port = net_support::free_port();
    let url = format!("jdbc:postgresql://127.0.0.1:{port}/postgres");
    let (events, log) = run_to_end(
        "down-input",
        "",
        &input_config(&format!(
            r#"jdbc_connection_string => "{url}" jdbc_user => "x" statement => "SELECT 1"
               connection_retry_attempts => 3 connection_retry_attempts_wait_time => 0.1
               statement_retry_attempts => 2 statement_retry_attempts_wait_time => 0.1
               record_last_run => false"#
        )),
    );
    assert!(events.is_empty());
    assert_eq!(
        log.matches("Unable to connect to database. Trying again")
            .count(),
        4,
        "{log}"
    );
    assert!(
        log.contains("Unable to connect to database. Tried 3 times"),
        "{log}"
    );
    assert!(
        log.contains("Unable to execute statement. Tried 2 times."),
        "{log}"
    );
    assert!(log.contains(&format!("cannot connect to {url}")), "{log}");

    let filters = format!(
        r#"jdbc_streaming {{ jdbc_connection_string => "{url}" statement => "SELECT 1 AS one" target => "t" }}
           jdbc_static {{ jdbc_connection_string => "{url}"
             loaders => [ {{ query => "SELECT 1" local_table => "t" }} ]
             local_db_objects => [ {{ name => "t" columns => [["one", "INTEGER"]] }} ]
             local_lookups => [ {{ query => "SELECT one FROM t" target => "local" default_hash => {{ "one" => 0 }} }} ] }}"#
    );
    let mut s = Interactive::start("down-filters", &filters);
    let e = s.send(json!({"n": 1}));
    assert_eq!(
        tags(&e),
        [
            "_jdbcstreamingfailure",
            "_jdbcstreamingdefaultsused",
            "_jdbcstaticdefaultsused"
        ],
        "{e}"
    );
    assert_eq!(e["local"], json!([{"one": 0}]));
    let log = s.finish();
    assert!(
        log.contains("jdbc_static: loading the local tables failed"),
        "{log}"
    );
    assert!(log.contains("Exception when executing JDBC query"), "{log}");
}

#[test]
fn option_errors_are_named() {
    let pg = r#"jdbc_connection_string => "jdbc:postgresql://127.0.0.1:1/x""#;
    let dir = temp_dir("jdbc", "options");
    let both = dir.join("pw");
    std::fs::write(&both, "pw").unwrap();
    for (config, want) in [
        (format!("input {{ jdbc {{ {pg} }} }}"), "statement_filepath"),
        (
            format!(r#"input {{ jdbc {{ {pg} statement => "x" statement_filepath => "/nope" }} }}"#),
            "only one may be set",
        ),
        (
            r#"input { jdbc { jdbc_connection_string => "jdbc:oracle:thin:@h:1521:o" statement => "x" } }"#.to_owned(),
            "jdbc_connection_string",
        ),
        (
            r#"input { jdbc { jdbc_connection_string => "jdbc:postgresql://h/d?sslmode=require" statement => "x" } }"#.to_owned(),
            "TLS",
        ),
        (format!(r#"input {{ jdbc {{ {pg} statement => "x" use_column_value => true }} }}"#), "tracking_column"),
        (
            format!(r#"input {{ jdbc {{ {pg} statement => "x" schedule => "* * * * *" interval => "1m" }} }}"#),
            "use only one of",
        ),
        (format!(r#"input {{ jdbc {{ {pg} statement => "x" schedule => "every day" }} }}"#), "schedule"),
        (
            format!(r#"input {{ jdbc {{ {pg} statement => "x" last_run_metadata_path => "{}" }} }}"#, dir.display()),
            "last_run_metadata_path",
        ),
        (
            format!(r#"input {{ jdbc {{ {pg} statement => "x" jdbc_password => "a" jdbc_password_filepath => "{}" }} }}"#, both.display()),
            "jdbc_password_filepath",
        ),
        (
            format!(r#"input {{ jdbc {{ {pg} statement => "SELECT ?" use_prepared_statements => true }} }}"#),
            "Prepared Statement Mode validation errors",
        ),
        (format!(r#"input {{ jdbc {{ {pg} statement => "x" jdbc_default_timezone => "Mars/Base" }} }}"#), "jdbc_default_timezone"),
        (format!(r#"input {{ jdbc {{ {pg} statement => "x" bogus => 1 }} }}"#), "bogus"),
        (format!("filter {{ jdbc_streaming {{ {pg} target => \"t\" }} }}"), "statement"),
        (format!("filter {{ jdbc_streaming {{ {pg} statement => \"x\" }} }}"), "target"),
        (format!("filter {{ jdbc_streaming {{ {pg} statement => \"x\" target => \"t\" cache_size => 0 }} }}"), "cache_size"),
        (format!("filter {{ jdbc_static {{ {pg} }} }}"), "local_lookups"),
        (
            format!(r#"filter {{ jdbc_static {{ {pg} loaders => [{{ query => "x" }}] local_lookups => [{{ query => "SELECT 1" }}] }} }}"#),
            "local_table",
        ),
        (
            format!(r#"filter {{ jdbc_static {{ {pg} local_lookups => [{{ query => "SELECT * FROM missing" }}] }} }}"#),
            "no such table",
        ),
        (
            format!(r#"filter {{ jdbc_static {{ {pg} local_lookups => [{{ query => "SELECT ?" prepared_parameters => ["a", "b"] }}] }} }}"#),
            "prepared_parameters",
        ),
        (
            format!(r#"filter {{ jdbc_static {{ {pg} loader_schedule => "nope" local_lookups => [{{ query => "SELECT 1" }}] }} }}"#),
            "loader_schedule",
        ),
        (
            format!(r#"filter {{ jdbc_static {{ {pg} local_db_objects => [{{ name => "t" columns => [["a"]] }}] local_lookups => [{{ query => "SELECT 1" }}] }} }}"#),
            "columns array",
        ),
    ] {
        let config = if config.starts_with("input") {
            format!("{config} output {{ null {{}} }}")
        } else {
            format!("input {{ stdin {{}} }} {config} output {{ null {{}} }}")
        };
        let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["-t", "-e", &config])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{config}: {err}");
        assert!(err.contains(want), "{config}: wanted {want:?} in {err}");
    }
}
