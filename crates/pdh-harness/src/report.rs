//! The CSV report (one row per check) and the summary printed at the end.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::checks::Verdict;

/// The report's columns, in order.
pub const HEADER: &str = "timestamp_utc,elapsed_ms,thread,iteration,session,in_stop_window,check,counter_path,instance,value,verdict,detail";

/// The checks a row can report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Check {
    /// A PDH call's return status.
    PdhCall,
    /// One array item's CStatus.
    ItemStatus,
    /// A raw total against the previous value of the same instance in the same session.
    Monotonic,
    /// A counterset's instance set: shape and stability within a session.
    Instances,
    /// A formatted value is finite and non-negative.
    FormattedValue,
    /// The counters `PdhExpandWildCardPathW` lists for a counterset are the catalogue's.
    Catalogue,
    /// A service stop or start, and its wait for the target state.
    ServiceControl,
}

impl Check {
    pub fn as_str(self) -> &'static str {
        match self {
            Check::PdhCall => "pdh-call",
            Check::ItemStatus => "item-status",
            Check::Monotonic => "monotonic",
            Check::Instances => "instances",
            Check::FormattedValue => "formatted-value",
            Check::Catalogue => "catalogue",
            Check::ServiceControl => "service-control",
        }
    }
}

/// One row of the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub time: SystemTime,
    /// Since the harness started.
    pub elapsed: Duration,
    /// Query thread index, or `None` for the stopper thread.
    pub thread: Option<usize>,
    pub iteration: u64,
    /// The service session of a stable sample; `None` when the sample overlapped a stop window.
    pub session: Option<u64>,
    pub check: Check,
    pub counter_path: String,
    pub instance: String,
    pub value: String,
    pub verdict: Verdict,
    pub detail: String,
}

impl Row {
    /// The row's fields, in [`HEADER`]'s order.
    fn fields(&self) -> [String; 12] {
        let thread = self.thread.map_or_else(|| "stopper".to_owned(), |t| t.to_string());
        let session = self.session.map_or_else(String::new, |s| s.to_string());
        [
            format_utc(self.time),
            self.elapsed.as_millis().to_string(),
            thread,
            self.iteration.to_string(),
            session,
            (self.session.is_none()).to_string(),
            self.check.as_str().to_owned(),
            self.counter_path.clone(),
            self.instance.clone(),
            self.value.clone(),
            self.verdict.as_str().to_owned(),
            self.detail.clone(),
        ]
    }

    /// The row as one CSV line, without the line ending: the `csv` crate's RFC 4180 quoting (a field
    /// holding a comma, a quote or a line break is quoted, as instance names such as `0,1` are).
    pub fn to_csv(&self) -> String {
        let mut writer = csv_writer(Vec::new());
        writer.write_record(self.fields()).expect("writing CSV to memory does not fail");
        let mut line = writer.into_inner().expect("flushing CSV to memory does not fail");
        line.pop(); // the terminator
        String::from_utf8(line).expect("fields written from strings are UTF-8")
    }
}

/// The report's CSV writer: quotes only where needed, lines ended by `\n`.
fn csv_writer<W: Write>(out: W) -> csv::Writer<W> {
    csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(out)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`. Times before 1970 print as the epoch.
pub fn format_utc(time: SystemTime) -> String {
    let time = time::OffsetDateTime::from(time.max(UNIX_EPOCH));
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        time.year(),
        u8::from(time.month()),
        time.day(),
        time.hour(),
        time.minute(),
        time.second(),
        time.millisecond()
    )
}

/// Writes rows as CSV and counts them per check and verdict.
pub struct Report<W: Write> {
    out: csv::Writer<W>,
    counts: BTreeMap<(Check, Verdict), u64>,
    first_violations: Vec<String>,
}

/// How many violations the summary quotes in full.
const QUOTED_VIOLATIONS: usize = 20;

impl<W: Write> Report<W> {
    pub fn new(out: W) -> io::Result<Self> {
        let mut out = csv_writer(out);
        out.write_record(HEADER.split(','))?;
        Ok(Self { out, counts: BTreeMap::new(), first_violations: Vec::new() })
    }

    pub fn write(&mut self, row: &Row) -> io::Result<()> {
        *self.counts.entry((row.check, row.verdict)).or_default() += 1;
        if row.verdict == Verdict::Violation && self.first_violations.len() < QUOTED_VIOLATIONS {
            self.first_violations.push(row.to_csv());
        }
        Ok(self.out.write_record(row.fields())?)
    }

    pub fn violations(&self) -> u64 {
        self.counts.iter().filter(|((_, v), _)| *v == Verdict::Violation).map(|(_, n)| n).sum()
    }

    pub fn count(&self, check: Check, verdict: Verdict) -> u64 {
        self.counts.get(&(check, verdict)).copied().unwrap_or(0)
    }

    /// Flushes the CSV and returns the summary text.
    pub fn finish(self) -> io::Result<(W, String)> {
        let summary = self.summary();
        let out = self.out.into_inner().map_err(csv::IntoInnerError::into_error)?;
        Ok((out, summary))
    }

    pub fn summary(&self) -> String {
        let mut s = String::from("check              ok  baseline transient violation\n");
        let mut checks: Vec<Check> = self.counts.keys().map(|(c, _)| *c).collect();
        checks.dedup();
        for check in checks {
            let n = |v| self.count(check, v);
            s += &format!(
                "{:<16}{:>6}{:>10}{:>10}{:>10}\n",
                check.as_str(),
                n(Verdict::Ok),
                n(Verdict::Baseline),
                n(Verdict::Transient),
                n(Verdict::Violation)
            );
        }
        let violations = self.violations();
        if violations == 0 {
            s += "result: PASS (no violations)\n";
        } else {
            s += &format!("result: FAIL ({violations} violations); the first ones:\n");
            for line in &self.first_violations {
                s += &format!("  {line}\n");
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> Row {
        Row {
            time: UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
            elapsed: Duration::from_millis(1500),
            thread: Some(3),
            iteration: 7,
            session: Some(2),
            check: Check::Monotonic,
            counter_path: "\\Hardware Counters(*)\\Instructions Retired".into(),
            instance: "0,1".into(),
            value: "42".into(),
            verdict: Verdict::Ok,
            detail: String::new(),
        }
    }

    #[test]
    fn csv_quoting() {
        let row = Row {
            counter_path: "say \"hi\"".into(),
            value: String::new(),
            detail: "two\nlines".into(),
            ..row()
        };
        assert_eq!(
            row.to_csv(),
            "2023-11-14T22:13:20.123Z,1500,3,7,2,false,monotonic,\"say \"\"hi\"\"\",\"0,1\",,ok,\"two\nlines\""
        );
        let mut report = Report::new(Vec::new()).unwrap();
        report.write(&row).unwrap();
        let (csv, _) = report.finish().unwrap();
        assert_eq!(String::from_utf8(csv).unwrap(), format!("{HEADER}\n{}\n", row.to_csv()));
    }

    #[test]
    fn row_to_csv() {
        assert_eq!(
            row().to_csv(),
            "2023-11-14T22:13:20.123Z,1500,3,7,2,false,monotonic,\\Hardware Counters(*)\\Instructions Retired,\"0,1\",42,ok,"
        );
        let stopper = Row { thread: None, session: None, check: Check::ServiceControl, ..row() };
        let csv = stopper.to_csv();
        assert!(csv.contains(",stopper,7,,true,service-control,"), "{csv}");
        assert_eq!(csv.split(',').count(), HEADER.split(',').count() + 1, "one quoted comma in 0,1");
    }

    #[test]
    fn utc_dates() {
        assert_eq!(format_utc(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_utc(UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29T00:00:00.000Z");
        assert_eq!(format_utc(UNIX_EPOCH + Duration::from_secs(4_107_542_399)), "2100-02-28T23:59:59.000Z");
        assert_eq!(format_utc(UNIX_EPOCH + Duration::from_secs(1_798_761_599)), "2026-12-31T23:59:59.000Z");
        assert_eq!(format_utc(UNIX_EPOCH - Duration::from_secs(10)), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn report_counts_and_summary() {
        let mut report = Report::new(Vec::new()).unwrap();
        report.write(&row()).unwrap();
        report.write(&Row { verdict: Verdict::Baseline, ..row() }).unwrap();
        assert_eq!(report.violations(), 0);
        assert!(report.summary().contains("result: PASS"));
        report.write(&Row { verdict: Verdict::Violation, detail: "went down".into(), ..row() }).unwrap();
        report.write(&Row { check: Check::PdhCall, verdict: Verdict::Transient, ..row() }).unwrap();
        assert_eq!(report.violations(), 1);
        assert_eq!(report.count(Check::Monotonic, Verdict::Ok), 1);
        assert_eq!(report.count(Check::PdhCall, Verdict::Transient), 1);
        let (csv, summary) = report.finish().unwrap();
        let csv = String::from_utf8(csv).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 5);
        assert_eq!(lines[0], HEADER);
        assert!(lines[3].ends_with(",violation,went down"));
        assert!(summary.contains("result: FAIL (1 violations)"), "{summary}");
        assert!(summary.contains("went down"));
        assert!(summary.contains("monotonic            1         1         0         1"), "{summary}");
        assert!(summary.contains("pdh-call             0         0         1         0"), "{summary}");
    }
}
