//! Command-line flags, named as Logstash names them (`-f`, `-e`, `-w`, `-b`, `-u`, `-t`,
//! `--pipeline.workers`, `--log.level`, ...).

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "sluice", version, about = "Runs Logstash pipelines, fast")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub source: ConfigSource,

    /// Number of worker threads running filters and outputs (default: number of cores).
    #[arg(short = 'w', long = "pipeline.workers", value_name = "COUNT")]
    pub workers: Option<usize>,

    /// Maximum number of events a worker takes from the queue at once (default 125).
    #[arg(short = 'b', long = "pipeline.batch.size", value_name = "SIZE")]
    pub batch_size: Option<usize>,

    /// Milliseconds a worker waits for a batch to fill before processing it (default 50).
    #[arg(short = 'u', long = "pipeline.batch.delay", value_name = "MILLIS")]
    pub batch_delay: Option<u64>,

    /// When a stop stalls on an output that does not return, exit after the stall reports
    /// even if events in a memory queue are lost (pipeline.unsafe_shutdown).
    #[arg(long = "pipeline.unsafe_shutdown")]
    pub unsafe_shutdown: bool,

    /// Directory holding sluice.yml (or logstash.yml).
    #[arg(long = "path.settings", value_name = "DIR")]
    pub path_settings: Option<std::path::PathBuf>,

    /// Directory for data sluice keeps, such as persisted queues (default: ./data).
    #[arg(long = "path.data", value_name = "DIR")]
    pub path_data: Option<std::path::PathBuf>,

    /// Pipeline id (default: main); a persisted queue lives in <path.queue>/<id>.
    #[arg(long = "pipeline.id", value_name = "ID")]
    pub pipeline_id: Option<String>,

    /// Check the configuration (syntax, plugins and their options) and exit.
    #[arg(short = 't', long = "config.test_and_exit")]
    pub test_and_exit: bool,

    /// Process escape sequences (\n, \t, \", ...) in quoted config strings.
    #[arg(long = "config.support_escapes")]
    pub support_escapes: bool,

    /// Log level: fatal, error, warn, info, debug or trace.
    #[arg(long = "log.level", value_name = "LEVEL", global = true)]
    pub log_level: Option<String>,

    /// Log format: plain or json (Logstash's JSON log lines).
    #[arg(long = "log.format", value_name = "FORMAT")]
    pub log_format: Option<String>,

    /// Also write the log to a rolled file in this directory (logstash-plain.log).
    #[arg(long = "path.logs", value_name = "DIR")]
    pub path_logs: Option<std::path::PathBuf>,
}

#[derive(Debug, Args, Clone, Default)]
pub struct ConfigSource {
    /// Config file, directory (files read in lexical order) or glob.
    #[arg(
        short = 'f',
        long = "path.config",
        value_name = "PATH",
        conflicts_with = "config_string"
    )]
    pub path: Option<String>,

    /// Config given as a string. Without an input section, stdin is used; without an output
    /// section, stdout with rubydebug.
    #[arg(short = 'e', long = "config.string", value_name = "CONFIG")]
    pub config_string: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Work with config files.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Look into or fix a persisted queue directory (<path.data>/queue/<pipeline id>).
    Queue {
        #[command(subcommand)]
        action: QueueAction,
    },
    /// Run pipeline unit tests: logstash-filter-verifier's test-case files (JSON or YAML),
    /// in-process. Exits 1 when a test fails.
    Test(TestArgs),
    /// Watch the events leaving plugins of a running sluice, live, from its monitoring API.
    /// PLUGIN is an id (`PIPELINE/ID`, or an id alone when one pipeline has it), or
    /// `PIPELINE/*` for all of a pipeline's plugins.
    Tap(TapArgs),
}

#[derive(Debug, Args)]
pub struct TapArgs {
    /// The plugins to watch.
    #[arg(value_name = "PLUGIN", required = true)]
    pub plugins: Vec<String>,

    /// The monitoring API (`http[s]://[user:password@]host:port`).
    #[arg(
        long = "api",
        value_name = "URL",
        default_value = "http://127.0.0.1:9600"
    )]
    pub api: String,

    /// Only events for which this Logstash condition holds (`[status] >= 500`).
    #[arg(long = "when", value_name = "CONDITION")]
    pub when: Option<String>,

    /// Stop after this many events.
    #[arg(long = "limit", value_name = "N")]
    pub limit: Option<u64>,

    /// At most this many events a second (`100` or `100/s`).
    #[arg(long = "rate", value_name = "N/s")]
    pub rate: Option<String>,

    /// How events are printed: `json` (one line each, as the API sends them) or `rubydebug`.
    #[arg(long = "format", value_name = "FORMAT", default_value = "json", value_parser = ["json", "rubydebug"])]
    pub format: String,

    /// The API's Basic auth (`user:password`; without `:password`, SLUICE_API_PASSWORD).
    #[arg(long = "user", value_name = "USER[:PASSWORD]")]
    pub user: Option<String>,

    /// A PEM file of the authorities that signed the API's certificate.
    #[arg(long = "cacert", value_name = "FILE")]
    pub cacert: Option<String>,

    /// Do not verify the API's certificate.
    #[arg(long = "insecure")]
    pub insecure: bool,

    /// Give up when the API says nothing for this many seconds (it sends a heartbeat every
    /// 15 s while no event comes).
    #[arg(long = "timeout", value_name = "SECONDS", default_value_t = 45)]
    pub timeout: u64,
}

#[derive(Debug, Args)]
pub struct TestArgs {
    /// The config under test (file, directory or glob); with --pipelines, the directory its
    /// relative path.config entries start from (default: the pipelines file's directory).
    #[arg(long = "config", short = 'f', value_name = "PATH")]
    pub config: Option<String>,

    /// A pipelines.yml: several pipelines, linked by pipeline inputs and outputs.
    #[arg(long = "pipelines", value_name = "FILE")]
    pub pipelines: Option<std::path::PathBuf>,

    /// LFV's plugin mocks: a YAML list of `{id, mock}` (an empty mock removes the plugin).
    #[arg(long = "mock", value_name = "FILE")]
    pub mock: Option<std::path::PathBuf>,

    /// Name plugins that have no `id` (otherwise they are an error, as in LFV).
    #[arg(long = "add-missing-id")]
    pub add_missing_id: bool,

    /// A logstash-tester suite directory (`config/filter`, `config/pattern`, `test/filters`,
    /// `test/patterns`): runs its filter and pattern tests as that tool's rspec runner does.
    #[arg(long = "logstash-tester", value_name = "DIR", conflicts_with_all = ["config", "pipelines", "mock", "testcases"])]
    pub logstash_tester: Option<std::path::PathBuf>,

    /// A file to read through the config's own input (its codec; stdin's end is not a flush,
    /// as in Logstash); with --expected, the events out are compared with that file's.
    #[arg(
        long = "input",
        value_name = "FILE",
        requires = "expected",
        conflicts_with = "testcases"
    )]
    pub input: Option<std::path::PathBuf>,

    /// The events expected out of --input, as JSON lines (other lines are skipped).
    #[arg(long = "expected", value_name = "FILE", requires = "input")]
    pub expected: Option<std::path::PathBuf>,

    /// With --input: keys left out of the comparison at any depth (comma-separated, or the
    /// option repeated), as `-i '@timestamp,timestamp'` of agolo's logstash-test-runner.
    #[arg(
        long = "ignore",
        value_name = "KEYS",
        value_delimiter = ',',
        requires = "input"
    )]
    pub ignore: Vec<String>,

    /// Grok pattern cases (`{pattern, data, results}` files): the pattern files or
    /// directories they test, as grok's `patterns_dir` (repeatable).
    #[arg(long = "patterns", value_name = "PATH")]
    pub patterns: Vec<std::path::PathBuf>,

    /// LFV 1.x files (no `input_plugin`): the events come as LFV's `--sockets` mode sends
    /// them, through a unix input (which sets `host` and `path`; `path` is removed again
    /// when a filter left it as it was), rather than through stdin (which sets `host`).
    #[arg(long = "sockets")]
    pub sockets: bool,

    /// Keep `[@metadata][lineage]` in every pipeline under test (`pipeline.lineage: true`;
    /// a pipelines.yml entry can set it for its pipeline), so that tests can expect it.
    #[arg(long = "lineage")]
    pub lineage: bool,

    /// Keep LFV's bookkeeping in the events: `__lfv_id`, `__lfv_out_passed`, `__lfv_` tags.
    #[arg(long = "debug")]
    pub debug: bool,

    /// Also write the results as JUnit XML to this file.
    #[arg(long = "junit", value_name = "FILE")]
    pub junit: Option<std::path::PathBuf>,

    /// Test-case files, or directories of them (*.json, *.yaml, *.yml); none: the tests in
    /// sluice's format beside the config (`x.conf` → `x.test.yml`).
    #[arg(value_name = "TESTCASES")]
    pub testcases: Vec<std::path::PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum QueueAction {
    /// Pages, sequence ranges, acked counts and bytes of a persisted queue directory.
    Inspect { path: std::path::PathBuf },
    /// Read every record and report damage; exits 1 when the queue needs repair.
    Verify { path: std::path::PathBuf },
    /// Rewrite the queue with every intact unacked record (old files kept in a backup folder).
    Repair {
        path: std::path::PathBuf,
        /// Page size of the rewritten queue (default 64mb).
        #[arg(
            long = "queue.page_capacity",
            value_name = "SIZE",
            default_value = "64mb"
        )]
        page_capacity: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Print a config's syntax tree as JSON (syntax only: plugin names are not checked).
    Parse(ParseArgs),
}

#[derive(Debug, Args)]
pub struct ParseArgs {
    #[command(flatten)]
    pub source: ConfigSource,

    /// Process escape sequences in quoted strings.
    #[arg(long = "config.support_escapes")]
    pub support_escapes: bool,
}
