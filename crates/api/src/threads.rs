//! `GET /_node/hot_threads`: the process's threads by the CPU they used over an interval
//! (`?interval=500ms`, as Elasticsearch's hot threads; Logstash averages over its uptime),
//! busiest first, `?threads=N` of them (default 10), as Logstash's JSON or, with `?human`,
//! its text. Read from `/proc/self/task`: each thread's name, state and CPU time; a pipeline
//! worker also says which plugin it is in (from its activity, as the shutdown reports do).
//! There are no stack traces (a native thread's would need a debugger): `traces` is empty.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::stats::Context;

/// One thread, read once.
#[derive(Debug, Clone)]
pub struct ThreadSample {
    pub tid: u64,
    pub name: String,
    /// `runnable`, `waiting` ... (Java's names, as Logstash prints them).
    pub state: &'static str,
    /// User and system CPU time, in clock ticks.
    pub ticks: u64,
}

fn state_name(code: char) -> &'static str {
    match code {
        'R' => "runnable",
        'S' | 'I' => "waiting",
        'D' => "blocked",
        'T' | 't' => "timed_waiting",
        'Z' | 'X' => "terminated",
        _ => "new",
    }
}

/// Every thread of this process now.
pub fn sample() -> Vec<ThreadSample> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let Some(tid) = entry.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "tid (name) S ..." — the name may hold spaces and parentheses: split at the last ')'.
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let name = stat[stat.find('(').map_or(0, |o| o + 1)..close].to_owned();
        let rest: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let field = |i: usize| rest.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        let state = rest
            .first()
            .and_then(|s| s.chars().next())
            .map_or("new", state_name);
        // After the state: utime is the 12th field, stime the 13th.
        out.push(ThreadSample {
            tid,
            name,
            state,
            ticks: field(11) + field(12),
        });
    }
    out
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`; 100 on Linux everywhere that matters).
const TICKS_PER_SECOND: f64 = 100.0;

/// The report: Logstash's text (`?human`) or its JSON.
pub enum HotThreads {
    Text(String),
    Json(Value),
}

/// Options of the request.
pub struct HotThreadsOptions {
    pub threads: usize,
    pub interval: Duration,
    pub ignore_idle: bool,
}

impl Context {
    /// What each pipeline worker thread is doing, by OS thread id: (name, what).
    fn worker_threads(&self) -> BTreeMap<u64, (String, String)> {
        let mut m = BTreeMap::new();
        for t in self.registry.pipelines() {
            let plugins = &t.view.metrics.plugins;
            for (w, worker) in t.view.metrics.workers.iter().enumerate() {
                let tid = worker.activity.thread();
                if tid == 0 {
                    continue;
                }
                let doing = match worker.activity.get().0 {
                    sluice_pipeline::metrics::Doing::Idle => "idle".to_owned(),
                    sluice_pipeline::metrics::Doing::Filters => "filters".to_owned(),
                    sluice_pipeline::metrics::Doing::Output(k) => plugins
                        .outputs
                        .get(k)
                        .map_or_else(|| format!("output {k}"), |p| format!("output {}", p.id)),
                };
                m.insert(tid, (format!("[{}]>worker{w}", t.view.id), doing));
            }
        }
        m
    }

    /// `GET /_node/hot_threads`, given two samples `interval` apart.
    pub fn hot_threads(
        &self,
        before: &[ThreadSample],
        after: &[ThreadSample],
        opts: &HotThreadsOptions,
        human: bool,
    ) -> HotThreads {
        let secs = opts.interval.as_secs_f64().max(0.001);
        let workers = self.worker_threads();
        // (percent of one CPU, CPU milliseconds, the thread, the worker it is: name, plugin)
        type Row<'a> = (f64, f64, &'a ThreadSample, Option<&'a (String, String)>);
        let mut rows: Vec<Row> = after
            .iter()
            .map(|a| {
                let used = before
                    .iter()
                    .find(|b| b.tid == a.tid)
                    .map_or(a.ticks, |b| a.ticks.saturating_sub(b.ticks));
                let cpu_ms = used as f64 * 1000.0 / TICKS_PER_SECOND;
                let percent = (cpu_ms / 1000.0 / secs * 100.0 * 100.0).trunc() / 100.0;
                (percent, cpu_ms, a, workers.get(&a.tid))
            })
            .filter(|(percent, _, a, _)| {
                !opts.ignore_idle || *percent > 0.0 || a.state == "runnable"
            })
            .collect();
        rows.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.2.tid.cmp(&b.2.tid)));
        rows.truncate(opts.threads);
        let time = chrono::Local::now()
            .format("%Y-%m-%dT%H:%M:%S%:z")
            .to_string();
        if human {
            let mut s = format!(
                "::: {{{}}}\nHot threads at {time}, busiestThreads={}: \n",
                self.node.name, opts.threads
            );
            s.push_str(&"=".repeat(80));
            s.push('\n');
            for (percent, _, t, worker) in &rows {
                let name = worker.map_or(t.name.as_str(), |w| w.0.as_str());
                s.push_str(&format!(
                    "{percent} % of cpu usage, state: {}, thread name: '{name}', thread id: {} \n",
                    t.state, t.tid
                ));
                if let Some((_, doing)) = worker {
                    s.push_str(&format!("\tin {doing}\n"));
                }
                s.push_str(&"-".repeat(80));
                s.push('\n');
            }
            return HotThreads::Text(s);
        }
        let threads: Vec<Value> = rows
            .iter()
            .map(|(percent, cpu_ms, t, worker)| {
                let mut v = json!({
                    "name": worker.map_or(t.name.as_str(), |w| w.0.as_str()),
                    "thread_id": t.tid,
                    "percent_of_cpu_time": percent,
                    "cpu_time_in_millis": *cpu_ms as u64,
                    "state": t.state,
                    "traces": [],
                });
                if let (Some((_, doing)), Some(m)) = (worker, v.as_object_mut()) {
                    m.insert("plugin".into(), doing.clone().into());
                }
                v
            })
            .collect();
        let mut m = self.base();
        m.insert(
            "hot_threads".into(),
            json!({
                "time": time,
                "busiest_threads": opts.threads,
                "interval_in_millis": opts.interval.as_millis() as u64,
                "threads": threads,
            }),
        );
        HotThreads::Json(Value::Object(m))
    }
}

/// Sleeps `interval` between two samples, without holding the API's thread.
pub async fn sample_over(interval: Duration) -> (Vec<ThreadSample>, Vec<ThreadSample>) {
    let before = sample();
    let until = Instant::now() + interval;
    tokio::time::sleep_until(until.into()).await;
    (before, sample())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_threads_are_read() {
        let spinning = std::thread::Builder::new()
            .name("spinner".into())
            .spawn(|| {
                let end = Instant::now() + Duration::from_millis(300);
                let mut x = 0u64;
                while Instant::now() < end {
                    x = x.wrapping_add(1);
                }
                x
            })
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let threads = sample();
        assert!(threads.iter().any(|t| t.name == "spinner"), "{threads:?}");
        spinning.join().unwrap();
    }
}
