//! The harness's threads, written against two small traits so that the whole run (query threads,
//! stopper, checks, report) is exercised on any host with fakes; `win.rs` implements the traits with
//! PDH and the service control manager.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use crate::catalogue::{COUNTER_SETS, CounterSetSpec, counter_name_of_path};
use crate::checks::{
    InstanceStability, MonotonicTracker, StopWindows, Verdict, classify_status, duplicate_names,
    formatted_value_ok, instance_shape, status,
};
use crate::report::{Check, Report, Row};

/// One item of `PdhGetRawCounterArrayW` / `PdhGetFormattedCounterArrayW`.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayItem<T> {
    pub instance: String,
    /// The item's CStatus.
    pub status: u32,
    pub value: T,
}

/// The PDH calls the harness makes. Errors are PDH status codes.
pub trait Pdh: Sync {
    type Query: PdhQuery;
    /// `PdhOpenQueryW` on the real-time data source. The query closes when dropped.
    fn open_query(&self) -> Result<Self::Query, u32>;
    /// `PdhExpandWildCardPathW(NULL, wildcard, PDH_NOEXPANDINSTANCES)`: one path per counter.
    fn expand_counters(&self, wildcard: &str) -> Result<Vec<String>, u32>;
}

pub trait PdhQuery {
    type Counter: Copy;
    /// `PdhAddEnglishCounterW`.
    fn add_english(&mut self, path: &str) -> Result<Self::Counter, u32>;
    /// `PdhCollectQueryData`.
    fn collect(&mut self) -> Result<(), u32>;
    /// `PdhGetRawCounterArrayW`: FirstValue of each instance.
    fn raw_array(&mut self, counter: Self::Counter) -> Result<Vec<ArrayItem<i64>>, u32>;
    /// `PdhGetFormattedCounterArrayW` with `PDH_FMT_DOUBLE | PDH_FMT_NOCAP100`.
    fn formatted_array(&mut self, counter: Self::Counter) -> Result<Vec<ArrayItem<f64>>, u32>;
}

/// Stops and starts the driver's service, each waiting (with a timeout) for the target state.
pub trait ServiceControl: Send {
    fn stop(&mut self) -> Result<(), String>;
    fn start(&mut self) -> Result<(), String>;
}

/// How the harness runs (see `cli.rs` for the options that set it).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub threads: usize,
    /// Stop/start cycles; 0 leaves the service alone.
    pub cycles: u32,
    /// Between the two collects of one query.
    pub interval: Duration,
    /// How long the service runs before each stop, and after the last start.
    pub running_for: Duration,
    /// How long the service stays stopped.
    pub stopped_for: Duration,
    /// After a start, how long before samples count as a new stable session again.
    pub settle: Duration,
    /// Each query thread does at least this many iterations.
    pub min_iterations: u64,
    /// Active logical processors, if known: the processor instances of `Hardware Counters` must number
    /// them.
    pub active_processors: Option<usize>,
}

/// Runs the query threads and the stopper, writing every row into `report`. Returns once the stopper
/// has done its cycles and every query thread its last iteration.
pub fn run<P: Pdh, S: ServiceControl, W: Write>(
    pdh: &P,
    service: S,
    config: &Config,
    report: &mut Report<W>,
) -> io::Result<()> {
    let windows = StopWindows::new();
    let done = AtomicBool::new(false);
    let started = Instant::now();
    let (tx, rx) = mpsc::channel::<Row>();
    thread::scope(|scope| {
        for index in 0..config.threads {
            let tx = tx.clone();
            let (windows, done) = (&windows, &done);
            scope.spawn(move || query_thread(pdh, index, config, windows, done, started, &tx));
        }
        {
            let tx = tx.clone();
            let (windows, done) = (&windows, &done);
            scope.spawn(move || stopper_thread(service, config, windows, done, started, &tx));
        }
        drop(tx);
        let mut result = Ok(());
        for row in rx {
            if result.is_ok() {
                result = report.write(&row);
            }
        }
        result
    })
}

fn stopper_thread<S: ServiceControl>(
    mut service: S,
    config: &Config,
    windows: &StopWindows,
    done: &AtomicBool,
    started: Instant,
    tx: &mpsc::Sender<Row>,
) {
    let row = |cycle: u32, what: &str, result: &Result<(), String>, took: Duration| Row {
        time: SystemTime::now(),
        elapsed: started.elapsed(),
        thread: None,
        iteration: u64::from(cycle),
        session: None,
        check: Check::ServiceControl,
        counter_path: String::new(),
        instance: String::new(),
        value: format!("{}ms", took.as_millis()),
        verdict: if result.is_ok() { Verdict::Ok } else { Verdict::Violation },
        detail: match result {
            Ok(()) => what.to_owned(),
            Err(e) => format!("{what}: {e}"),
        },
    };
    let timed = |f: &mut dyn FnMut() -> Result<(), String>| {
        let t = Instant::now();
        let r = f();
        (r, t.elapsed())
    };
    for cycle in 1..=config.cycles {
        thread::sleep(config.running_for);
        windows.begin_stop();
        let (stopped, took) = timed(&mut || service.stop());
        let _ = tx.send(row(cycle, "stop", &stopped, took));
        thread::sleep(config.stopped_for);
        let (mut started_ok, mut took) = timed(&mut || service.start());
        if started_ok.is_err() {
            let _ = tx.send(row(cycle, "start", &started_ok, took));
            (started_ok, took) = timed(&mut || service.start());
        }
        let _ = tx.send(row(cycle, "start", &started_ok, took));
        if started_ok.is_err() {
            // The service does not run: leave the stop window open (the query threads' errors are then
            // expected) and end the run; the failed start is the violation.
            done.store(true, Ordering::SeqCst);
            return;
        }
        thread::sleep(config.settle);
        windows.end_stop();
    }
    thread::sleep(config.running_for);
    done.store(true, Ordering::SeqCst);
}

/// What one iteration of a query thread read, before it knows whether it overlapped a stop window.
#[derive(Default)]
struct Sample {
    /// (call, path, status) of every PDH call.
    calls: Vec<(&'static str, String, u32)>,
    /// Per counterset: the counter paths `expand_counters` returned.
    expanded: Vec<(usize, Vec<String>)>,
    /// (set, counter index, items) of every raw array read.
    raw: Vec<(usize, usize, Vec<ArrayItem<i64>>)>,
    formatted: Vec<(usize, usize, Vec<ArrayItem<f64>>)>,
}

impl Sample {
    fn call<T>(&mut self, call: &'static str, path: &str, result: Result<T, u32>) -> Option<T> {
        let status = result.as_ref().err().copied().unwrap_or(status::PDH_CSTATUS_VALID_DATA);
        self.calls.push((call, path.to_owned(), status));
        result.ok()
    }
}

fn take_sample<P: Pdh>(pdh: &P, interval: Duration) -> Sample {
    let mut sample = Sample::default();
    for (set_index, set) in COUNTER_SETS.iter().enumerate() {
        let wildcard = set.wildcard_path();
        if let Some(paths) = sample.call("PdhExpandWildCardPathW", &wildcard, pdh.expand_counters(&wildcard))
        {
            sample.expanded.push((set_index, paths));
        }
    }
    let Some(mut query) = sample.call("PdhOpenQueryW", "", pdh.open_query()) else { return sample };
    let mut counters = Vec::new();
    for (set_index, set) in COUNTER_SETS.iter().enumerate() {
        for (counter_index, counter) in set.counters.iter().enumerate() {
            let path = set.counter_path(counter.name);
            if let Some(handle) = sample.call("PdhAddEnglishCounterW", &path, query.add_english(&path)) {
                counters.push((set_index, counter_index, path, handle));
            }
        }
    }
    sample.call("PdhCollectQueryData", "", query.collect());
    thread::sleep(interval);
    if sample.call("PdhCollectQueryData", "", query.collect()).is_none() {
        return sample;
    }
    for (set_index, counter_index, path, handle) in counters {
        if let Some(items) = sample.call("PdhGetRawCounterArrayW", &path, query.raw_array(handle)) {
            sample.raw.push((set_index, counter_index, items));
        }
        if let Some(items) = sample.call("PdhGetFormattedCounterArrayW", &path, query.formatted_array(handle))
        {
            sample.formatted.push((set_index, counter_index, items));
        }
    }
    sample
}

/// Per query thread state carried across iterations.
#[derive(Default)]
struct ThreadChecks {
    monotonic: MonotonicTracker,
    instances: InstanceStability,
}

fn query_thread<P: Pdh>(
    pdh: &P,
    index: usize,
    config: &Config,
    windows: &StopWindows,
    done: &AtomicBool,
    started: Instant,
    tx: &mpsc::Sender<Row>,
) {
    let mut checks = ThreadChecks::default();
    let mut iteration = 0u64;
    while iteration < config.min_iterations || !done.load(Ordering::SeqCst) {
        iteration += 1;
        let before = windows.current();
        let sample = take_sample(pdh, config.interval);
        let session = StopWindows::session(before, windows.current());
        let base = Row {
            time: SystemTime::now(),
            elapsed: started.elapsed(),
            thread: Some(index),
            iteration,
            session,
            check: Check::PdhCall,
            counter_path: String::new(),
            instance: String::new(),
            value: String::new(),
            verdict: Verdict::Ok,
            detail: String::new(),
        };
        for row in check_sample(&sample, session, config.active_processors, &mut checks, &base) {
            if tx.send(row).is_err() {
                return;
            }
        }
    }
}

/// Turns one sample into report rows, updating the thread's monotonic and instance state.
fn check_sample(
    sample: &Sample,
    session: Option<u64>,
    active_processors: Option<usize>,
    checks: &mut ThreadChecks,
    base: &Row,
) -> Vec<Row> {
    let mut rows = Rows { rows: Vec::new(), base, in_stop_window: session.is_none() };
    for (call, path, code) in &sample.calls {
        let verdict = classify_status(*code, rows.in_stop_window);
        rows.push(Check::PdhCall, path, "", status::name(*code), verdict, (*call).to_owned());
    }
    if let Some(session) = session {
        check_catalogue(sample, &mut rows);
        check_instances(sample, session, active_processors, checks, &mut rows);
    }
    check_raw(sample, session, checks, &mut rows);
    check_formatted(sample, &mut rows);
    rows.rows
}

/// The rows of one sample, all sharing `base`.
struct Rows<'b> {
    rows: Vec<Row>,
    base: &'b Row,
    in_stop_window: bool,
}

impl Rows<'_> {
    fn push(
        &mut self,
        check: Check,
        path: &str,
        instance: &str,
        value: String,
        verdict: Verdict,
        detail: String,
    ) {
        self.rows.push(Row {
            check,
            counter_path: path.to_owned(),
            instance: instance.to_owned(),
            value,
            verdict,
            detail,
            ..self.base.clone()
        })
    }
}

fn counter_path(set: usize, counter: usize) -> String {
    let spec: &CounterSetSpec = &COUNTER_SETS[set];
    spec.counter_path(spec.counters[counter].name)
}

/// Every counterset's expanded wildcard lists exactly the catalogue's counters.
fn check_catalogue(sample: &Sample, rows: &mut Rows<'_>) {
    for (set_index, paths) in &sample.expanded {
        let spec = &COUNTER_SETS[*set_index];
        let found: BTreeSet<&str> = paths.iter().map(|p| counter_name_of_path(p)).collect();
        let expected: BTreeSet<&str> = spec.counters.iter().map(|c| c.name).collect();
        let (verdict, detail) = if found == expected {
            (Verdict::Ok, String::new())
        } else {
            let missing: Vec<&str> = expected.difference(&found).copied().collect();
            let extra: Vec<&str> = found.difference(&expected).copied().collect();
            (Verdict::Violation, format!("missing {missing:?}, unexpected {extra:?}"))
        };
        rows.push(Check::Catalogue, &spec.wildcard_path(), "", found.len().to_string(), verdict, detail);
    }
}

/// Instance names: no duplicates, the expected shape, stable within a session.
fn check_instances(
    sample: &Sample,
    session: u64,
    active_processors: Option<usize>,
    checks: &mut ThreadChecks,
    rows: &mut Rows<'_>,
) {
    for (set_index, spec) in COUNTER_SETS.iter().enumerate() {
        let mut per_counter = Vec::new();
        let mut findings = Vec::new();
        for (_, counter_index, items) in sample.raw.iter().filter(|(s, _, _)| *s == set_index) {
            let names: Vec<String> = items.iter().map(|i| i.instance.clone()).collect();
            findings.extend(duplicate_names(&names));
            per_counter.push((spec.counters[*counter_index].name.to_owned(), names.into_iter().collect()));
        }
        let Some((_, first)) = per_counter.first() else { continue };
        findings.extend(instance_shape(first, spec.instances, active_processors));
        findings.extend(checks.instances.observe(session, spec.name, &per_counter));
        let count = first.len().to_string();
        let path = spec.wildcard_path();
        if findings.is_empty() {
            rows.push(Check::Instances, &path, "", count.clone(), Verdict::Ok, String::new());
        }
        for finding in findings {
            rows.push(Check::Instances, &path, "", count.clone(), Verdict::Violation, finding.to_string());
        }
    }
}

/// Raw values: a good status, and monotonic totals within a session.
fn check_raw(sample: &Sample, session: Option<u64>, checks: &mut ThreadChecks, rows: &mut Rows<'_>) {
    for (set_index, counter_index, items) in &sample.raw {
        let path = counter_path(*set_index, *counter_index);
        let monotonic = COUNTER_SETS[*set_index].counters[*counter_index].monotonic;
        for item in items {
            let ok = classify_status(item.status, rows.in_stop_window);
            if ok != Verdict::Ok {
                rows.push(
                    Check::ItemStatus,
                    &path,
                    &item.instance,
                    status::name(item.status),
                    ok,
                    "raw".into(),
                );
            } else if let (true, Some(session)) = (monotonic, session) {
                let outcome = checks.monotonic.observe(session, &path, &item.instance, item.value);
                let detail = match outcome.previous {
                    Some(p) if outcome.verdict == Verdict::Violation => format!("decreased from {p}"),
                    Some(p) => format!("previous {p}"),
                    None => "first value in this session".into(),
                };
                let value = item.value.to_string();
                rows.push(Check::Monotonic, &path, &item.instance, value, outcome.verdict, detail);
            }
        }
    }
}

/// Formatted values: a good status and a sane value (inside a stop window a rate may span two
/// sessions, so only stable samples must be sane).
fn check_formatted(sample: &Sample, rows: &mut Rows<'_>) {
    for (set_index, counter_index, items) in &sample.formatted {
        let path = counter_path(*set_index, *counter_index);
        for item in items {
            let ok = classify_status(item.status, rows.in_stop_window);
            if ok != Verdict::Ok {
                let status = status::name(item.status);
                rows.push(Check::ItemStatus, &path, &item.instance, status, ok, "formatted".into());
            } else {
                let verdict = match (formatted_value_ok(item.value), rows.in_stop_window) {
                    (true, _) => Verdict::Ok,
                    (false, true) => Verdict::Transient,
                    (false, false) => Verdict::Violation,
                };
                rows.push(
                    Check::FormattedValue,
                    &path,
                    &item.instance,
                    item.value.to_string(),
                    verdict,
                    String::new(),
                );
            }
        }
    }
}

#[cfg(test)]
#[path = "harness_tests.rs"]
mod tests;
