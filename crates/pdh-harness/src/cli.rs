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

/// Parses the arguments after the program name. Accepts `--name value` and `--name=value`.
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Command, String> {
    let mut options = Options::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(Command::Help);
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        if !name.starts_with("--") {
            return Err(format!("unexpected argument {arg:?}"));
        }
        let value = match inline {
            Some(v) => v,
            None => args.next().ok_or_else(|| format!("{name} needs a value"))?,
        };
        let number = |min: u64| -> Result<u64, String> {
            let n: u64 = value.parse().map_err(|_| format!("{name}: {value:?} is not a number"))?;
            if n < min { Err(format!("{name} must be at least {min}")) } else { Ok(n) }
        };
        let ms = |min| number(min).map(Duration::from_millis);
        let c = &mut options.config;
        match name.as_str() {
            "--threads" => c.threads = usize::try_from(number(1)?).map_err(|e| e.to_string())?,
            "--cycles" => c.cycles = u32::try_from(number(0)?).map_err(|e| format!("--cycles: {e}"))?,
            "--interval-ms" => c.interval = ms(1)?,
            "--running-ms" => c.running_for = ms(0)?,
            "--stopped-ms" => c.stopped_for = ms(0)?,
            "--settle-ms" => c.settle = ms(0)?,
            "--min-iterations" => c.min_iterations = number(1)?,
            "--timeout-ms" => options.timeout = ms(1)?,
            "--service" if !value.is_empty() => options.service = value,
            "--csv" if !value.is_empty() => options.csv = PathBuf::from(value),
            "--service" | "--csv" => return Err(format!("{name} needs a value")),
            _ => return Err(format!("unknown option {name}")),
        }
    }
    Ok(Command::Run(options))
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
            ("stray", "unexpected argument \"stray\""),
            ("--csv=", "--csv needs a value"),
            ("--cycles 99999999999", "--cycles: out of range integral type conversion attempted"),
        ] {
            assert_eq!(parse(args(line)), Err(message.to_owned()), "{line}");
        }
    }
}
