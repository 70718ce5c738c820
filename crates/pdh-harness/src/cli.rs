//! Command-line options.

use std::path::PathBuf;
use std::time::Duration;

use crate::harness::Config;

pub const USAGE: &str = "\
usage: pdh-harness [options]

Queries every counter of \\Hardware Counters(*)\\* and \\Hardware Counters Driver\\* through PDH from
several threads while stopping and starting the driver's service, and checks that raw totals are
monotonic within each service session, that instance names and ids are stable, and that PDH reports no
error outside the stop windows. Writes a CSV report, prints a summary and exits 1 on any violation.
Run it elevated (the service control manager needs it to stop and start a driver).

options:
  --threads N          query threads (default 8)
  --cycles N           service stop/start cycles; 0 leaves the service alone (default 10)
  --service NAME       the driver's service (default pmupcw)
  --interval-ms N      between the two collects of one query (default 1000)
  --running-ms N       how long the service runs before each stop and after the last start (default 5000)
  --stopped-ms N       how long the service stays stopped (default 2000)
  --settle-ms N        after a start, before samples count as a stable session again (default 500)
  --timeout-ms N       wait for each stop or start to complete (default 30000)
  --min-iterations N   iterations each query thread does at least (default 3)
  --csv PATH           the report (default pdh-harness-report.csv)
  -h, --help           this text";

#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub config: Config,
    pub service: String,
    pub timeout: Duration,
    pub csv: PathBuf,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            config: Config {
                threads: 8,
                cycles: 10,
                interval: Duration::from_millis(1000),
                running_for: Duration::from_millis(5000),
                stopped_for: Duration::from_millis(2000),
                settle: Duration::from_millis(500),
                min_iterations: 3,
                active_processors: None,
            },
            service: "pmupcw".into(),
            timeout: Duration::from_millis(30_000),
            csv: PathBuf::from("pdh-harness-report.csv"),
        }
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq)]
pub enum Command {
    Run(Options),
    Help,
}

/// The options as clap parses them: each one given overrides [`Options::default`]. `-h`/`--help` is
/// clap's own help flag, whose text is [`USAGE`].
#[derive(clap::Parser)]
#[command(no_binary_name = true, override_help = USAGE, args_override_self = true, disable_version_flag = true)]
struct Arguments {
    #[arg(long, value_name = "N", value_parser = number::<usize, 1>)]
    threads: Option<usize>,
    #[arg(long, value_name = "N", value_parser = number::<u32, 0>)]
    cycles: Option<u32>,
    #[arg(long, value_name = "NAME", value_parser = non_empty)]
    service: Option<String>,
    #[arg(long, value_name = "N", value_parser = number::<u64, 1>)]
    interval_ms: Option<u64>,
    #[arg(long, value_name = "N", value_parser = number::<u64, 0>)]
    running_ms: Option<u64>,
    #[arg(long, value_name = "N", value_parser = number::<u64, 0>)]
    stopped_ms: Option<u64>,
    #[arg(long, value_name = "N", value_parser = number::<u64, 0>)]
    settle_ms: Option<u64>,
    #[arg(long, value_name = "N", value_parser = number::<u64, 1>)]
    timeout_ms: Option<u64>,
    #[arg(long, value_name = "N", value_parser = number::<u64, 1>)]
    min_iterations: Option<u64>,
    #[arg(long, value_name = "PATH", value_parser = non_empty)]
    csv: Option<String>,
}

/// Why a value is refused; [`message`] puts the option's name in front.
#[derive(Debug)]
enum Refusal {
    NotANumber(String),
    Below(u64),
    OutOfRange(String),
    Empty,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotANumber(value) => write!(f, ": {value:?} is not a number"),
            Refusal::Below(min) => write!(f, " must be at least {min}"),
            Refusal::OutOfRange(why) => write!(f, ": {why}"),
            Refusal::Empty => write!(f, " needs a value"),
        }
    }
}

impl std::error::Error for Refusal {}

/// A decimal number of at least `MIN` that fits `T`.
fn number<T: TryFrom<u64>, const MIN: u64>(value: &str) -> Result<T, Refusal>
where
    T::Error: std::fmt::Display,
{
    let n: u64 = value.parse().map_err(|_| Refusal::NotANumber(value.to_owned()))?;
    if n < MIN {
        return Err(Refusal::Below(MIN));
    }
    T::try_from(n).map_err(|e| Refusal::OutOfRange(e.to_string()))
}

fn non_empty(value: &str) -> Result<String, Refusal> {
    if value.is_empty() { Err(Refusal::Empty) } else { Ok(value.to_owned()) }
}

/// Parses the arguments after the program name. Accepts `--name value` and `--name=value`; a later
/// `--name` overrides an earlier one.
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Command, String> {
    use clap::Parser;
    let arguments = match Arguments::try_parse_from(args) {
        Ok(arguments) => arguments,
        Err(error) if error.kind() == clap::error::ErrorKind::DisplayHelp => return Ok(Command::Help),
        Err(error) => return Err(message(&error)),
    };
    let mut options = Options::default();
    let c = &mut options.config;
    let ms = Duration::from_millis;
    c.threads = arguments.threads.unwrap_or(c.threads);
    c.cycles = arguments.cycles.unwrap_or(c.cycles);
    c.interval = arguments.interval_ms.map_or(c.interval, ms);
    c.running_for = arguments.running_ms.map_or(c.running_for, ms);
    c.stopped_for = arguments.stopped_ms.map_or(c.stopped_for, ms);
    c.settle = arguments.settle_ms.map_or(c.settle, ms);
    c.min_iterations = arguments.min_iterations.unwrap_or(c.min_iterations);
    options.timeout = arguments.timeout_ms.map_or(options.timeout, ms);
    options.service = arguments.service.unwrap_or(options.service);
    options.csv = arguments.csv.map_or(options.csv, PathBuf::from);
    Ok(Command::Run(options))
}

/// One line for a refused command line, naming the option (`--threads must be at least 1`).
fn message(error: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    // clap names the argument as `--threads <N>` (or `--bogus=1`, or a stray word as given).
    let argument = match error.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(argument)) => argument.as_str(),
        _ => "",
    };
    let name = argument.split([' ', '=']).next().unwrap_or_default();
    let refusal = std::error::Error::source(error).and_then(|source| source.downcast_ref::<Refusal>());
    match (error.kind(), refusal) {
        (ErrorKind::ValueValidation, Some(refusal)) => format!("{name}{refusal}"),
        (ErrorKind::InvalidValue, _) => format!("{name}{}", Refusal::Empty),
        (ErrorKind::UnknownArgument, _) if name.starts_with('-') => format!("unknown option {name}"),
        (ErrorKind::UnknownArgument, _) => format!("unexpected argument {argument:?}"),
        _ => error.render().to_string().trim_end().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn run(s: &str) -> Options {
        match parse(args(s)) {
            Ok(Command::Run(o)) => o,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn defaults() {
        let o = run("");
        assert_eq!(o, Options::default());
        assert_eq!(o.config.threads, 8);
        assert_eq!(o.config.cycles, 10);
        assert_eq!(o.service, "pmupcw");
        assert_eq!(o.csv, PathBuf::from("pdh-harness-report.csv"));
    }

    #[test]
    fn every_option() {
        let o = run(
            "--threads 16 --cycles=0 --service other --interval-ms 250 --running-ms 100 --stopped-ms 50 \
             --settle-ms=0 --timeout-ms 9000 --min-iterations 5 --csv out/r.csv",
        );
        assert_eq!(o.config.threads, 16);
        assert_eq!(o.config.cycles, 0);
        assert_eq!(o.service, "other");
        assert_eq!(o.config.interval, Duration::from_millis(250));
        assert_eq!(o.config.running_for, Duration::from_millis(100));
        assert_eq!(o.config.stopped_for, Duration::from_millis(50));
        assert_eq!(o.config.settle, Duration::ZERO);
        assert_eq!(o.timeout, Duration::from_secs(9));
        assert_eq!(o.config.min_iterations, 5);
        assert_eq!(o.csv, PathBuf::from("out/r.csv"));
    }

    #[test]
    fn a_later_option_overrides_an_earlier_one() {
        let o = run("--threads 2 --csv a.csv --threads=3");
        assert_eq!(o.config.threads, 3);
        assert_eq!(o.csv, PathBuf::from("a.csv"));
    }

    #[test]
    fn help() {
        assert_eq!(parse(args("--threads 2 --help")), Ok(Command::Help));
        assert_eq!(parse(args("-h")), Ok(Command::Help));
        assert!(USAGE.contains("--stopped-ms"));
    }

    #[test]
    fn errors() {
        for (line, message) in [
            ("--threads", "--threads needs a value"),
            ("--threads 0", "--threads must be at least 1"),
            ("--threads x", "--threads: \"x\" is not a number"),
            ("--interval-ms 0", "--interval-ms must be at least 1"),
            ("--bogus 1", "unknown option --bogus"),
            ("--bogus=1", "unknown option --bogus"),
            ("--service", "--service needs a value"),
            ("stray", "unexpected argument \"stray\""),
            ("--csv=", "--csv needs a value"),
            ("--cycles 99999999999", "--cycles: out of range integral type conversion attempted"),
        ] {
            assert_eq!(parse(args(line)), Err(message.to_owned()), "{line}");
        }
    }
}
