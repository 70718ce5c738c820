//! The whole harness against a fake driver and service: clean runs pass, and each kind of driver bug
//! the harness exists to catch makes it fail.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use super::*;
use crate::catalogue::InstanceKind;
use crate::checks::status::*;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum Bug {
    #[default]
    None,
    /// Every 7th collect while running sets the totals a million lower.
    Decrease,
    /// Every 5th collect fails with PDH_CSTATUS_NO_OBJECT even while the service runs.
    ErrorWhileRunning,
    /// Every 3rd collect loses the last processor instance.
    DropInstance,
    /// `_Total` is never reported.
    NoTotal,
    /// The service never starts again after its first stop.
    StartFails,
}

#[derive(Default)]
struct State {
    running: AtomicBool,
    value: AtomicI64,
    collects: AtomicU64,
    processors: usize,
    bug: Bug,
}

#[derive(Clone)]
struct FakePdh(Arc<State>);

struct FakeService(Arc<State>);

impl ServiceControl for FakeService {
    fn stop(&mut self) -> Result<(), String> {
        self.0.running.store(false, Ordering::SeqCst);
        Ok(())
    }
    fn start(&mut self) -> Result<(), String> {
        if self.0.bug == Bug::StartFails {
            return Err("StartServiceW: the driver failed to load (fake)".into());
        }
        // A new session counts from a new, lower base.
        self.0.value.store(0, Ordering::SeqCst);
        self.0.running.store(true, Ordering::SeqCst);
        Ok(())
    }
}

struct FakeQuery {
    state: Arc<State>,
    /// Multi-instance flag of each added counter.
    /// Each added counter's counterset instance kind.
    counters: Vec<InstanceKind>,
    /// The last collect's value and processor count, `None` if it found the driver stopped.
    snapshot: Option<(i64, usize)>,
}

impl Pdh for FakePdh {
    type Query = FakeQuery;
    fn open_query(&self) -> Result<FakeQuery, u32> {
        Ok(FakeQuery { state: self.0.clone(), counters: Vec::new(), snapshot: None })
    }
    fn expand_counters(&self, wildcard: &str) -> Result<Vec<String>, u32> {
        let set = COUNTER_SETS.iter().find(|s| s.wildcard_path() == wildcard).ok_or(PDH_CSTATUS_NO_OBJECT)?;
        Ok(set.counters.iter().map(|c| set.counter_path(c.name)).collect())
    }
}

impl PdhQuery for FakeQuery {
    type Counter = usize;
    fn add_english(&mut self, path: &str) -> Result<usize, u32> {
        let set = COUNTER_SETS
            .iter()
            .find(|set| path.starts_with(&set.counter_path("")))
            .ok_or(PDH_CSTATUS_NO_OBJECT)?;
        self.counters.push(set.instances);
        Ok(self.counters.len() - 1)
    }
    fn collect(&mut self) -> Result<(), u32> {
        let s = &self.state;
        let n = s.collects.fetch_add(1, Ordering::SeqCst) + 1;
        if !s.running.load(Ordering::SeqCst) {
            self.snapshot = None;
            return Err(PDH_NO_DATA);
        }
        if s.bug == Bug::ErrorWhileRunning && n.is_multiple_of(5) {
            return Err(PDH_CSTATUS_NO_OBJECT);
        }
        let mut value = s.value.fetch_add(1000, Ordering::SeqCst) + 1000;
        if s.bug == Bug::Decrease && n.is_multiple_of(7) {
            value = s.value.fetch_sub(1_000_000, Ordering::SeqCst) - 1_000_000;
        }
        let processors =
            if s.bug == Bug::DropInstance && n.is_multiple_of(3) { s.processors - 1 } else { s.processors };
        self.snapshot = Some((value, processors));
        Ok(())
    }
    fn raw_array(&mut self, counter: usize) -> Result<Vec<ArrayItem<i64>>, u32> {
        let (value, processors) = self.snapshot.ok_or(PDH_NO_DATA)?;
        let item = |instance: String| ArrayItem { instance, status: PDH_CSTATUS_VALID_DATA, value };
        match self.counters[counter] {
            InstanceKind::Single => return Ok(vec![item(String::new())]),
            InstanceKind::Named => return Ok(vec![item("Performance".into()), item("Efficient".into())]),
            InstanceKind::Controllers => return Ok(vec![item("0,0".into()), item("_Total".into())]),
            InstanceKind::PerProcessor => {}
        }
        let mut items: Vec<_> = (0..processors).map(|p| item(format!("0,{p}"))).collect();
        if self.state.bug != Bug::NoTotal {
            items.push(item("_Total".into()));
        }
        Ok(items)
    }
    fn formatted_array(&mut self, counter: usize) -> Result<Vec<ArrayItem<f64>>, u32> {
        Ok(self
            .raw_array(counter)?
            .into_iter()
            .map(|i| ArrayItem { instance: i.instance, status: i.status, value: 1.5 })
            .collect())
    }
}

fn config() -> Config {
    Config {
        threads: 4,
        cycles: 3,
        interval: Duration::from_millis(1),
        running_for: Duration::from_millis(25),
        stopped_for: Duration::from_millis(40),
        settle: Duration::from_millis(2),
        min_iterations: 3,
        active_processors: Some(4),
    }
}

fn run_fake(bug: Bug, config: &Config) -> (Report<Vec<u8>>, Arc<State>) {
    let state = Arc::new(State { processors: 4, bug, ..State::default() });
    state.running.store(true, Ordering::SeqCst);
    let mut report = Report::new(Vec::new()).unwrap();
    run(&FakePdh(state.clone()), FakeService(state.clone()), config, &mut report).unwrap();
    (report, state)
}

#[test]
fn clean_run_passes_with_transients_inside_stop_windows() {
    let (report, _) = run_fake(Bug::None, &config());
    assert_eq!(report.violations(), 0, "{}", report.summary());
    assert_eq!(report.count(Check::ServiceControl, Verdict::Ok), 6, "3 stops and 3 starts");
    assert!(report.count(Check::PdhCall, Verdict::Transient) > 0, "{}", report.summary());
    assert!(report.count(Check::Monotonic, Verdict::Ok) > 0);
    // every thread starts a baseline in the first session and again after restarts
    assert!(report.count(Check::Monotonic, Verdict::Baseline) >= 4 * 9);
    assert!(report.count(Check::Instances, Verdict::Ok) > 0);
    assert!(report.count(Check::Catalogue, Verdict::Ok) > 0);
    assert!(report.count(Check::FormattedValue, Verdict::Ok) > 0);
    let (csv, summary) = report.finish().unwrap();
    assert!(summary.contains("result: PASS"));
    let csv = String::from_utf8(csv).unwrap();
    assert!(csv.contains(",service-control,"));
    assert!(csv.contains(",stopper,"));
}

#[test]
fn no_cycles_leaves_the_service_alone() {
    let config = Config { cycles: 0, threads: 2, ..config() };
    let (report, state) = run_fake(Bug::None, &config);
    assert_eq!(report.violations(), 0, "{}", report.summary());
    assert_eq!(report.count(Check::ServiceControl, Verdict::Ok), 0);
    assert_eq!(report.count(Check::PdhCall, Verdict::Transient), 0);
    assert!(state.running.load(Ordering::SeqCst));
}

#[test]
fn a_decreasing_total_is_a_violation() {
    let (report, _) = run_fake(Bug::Decrease, &config());
    assert!(report.count(Check::Monotonic, Verdict::Violation) > 0, "{}", report.summary());
}

#[test]
fn an_error_while_running_is_a_violation() {
    let (report, _) = run_fake(Bug::ErrorWhileRunning, &config());
    assert!(report.count(Check::PdhCall, Verdict::Violation) > 0, "{}", report.summary());
}

#[test]
fn a_changing_instance_set_is_a_violation() {
    let (report, _) = run_fake(Bug::DropInstance, &config());
    assert!(report.count(Check::Instances, Verdict::Violation) > 0, "{}", report.summary());
}

#[test]
fn a_missing_total_is_a_violation() {
    let (report, _) = run_fake(Bug::NoTotal, &Config { cycles: 0, ..config() });
    assert!(report.count(Check::Instances, Verdict::Violation) > 0, "{}", report.summary());
    assert!(report.summary().contains("no _Total instance"));
}

#[test]
fn a_failed_start_ends_the_run_as_a_violation() {
    let (report, _) = run_fake(Bug::StartFails, &config());
    assert_eq!(report.count(Check::ServiceControl, Verdict::Violation), 2, "two attempts");
    assert_eq!(report.count(Check::ServiceControl, Verdict::Ok), 1, "the stop");
    // the queries after it are inside the still-open stop window
    assert_eq!(report.count(Check::PdhCall, Verdict::Violation), 0, "{}", report.summary());
}

fn base() -> Row {
    Row {
        time: UNIX_EPOCH,
        elapsed: Duration::ZERO,
        thread: Some(0),
        iteration: 1,
        session: Some(0),
        check: Check::PdhCall,
        counter_path: String::new(),
        instance: String::new(),
        value: String::new(),
        verdict: Verdict::Ok,
        detail: String::new(),
    }
}

fn verdicts(rows: &[Row], check: Check) -> Vec<Verdict> {
    rows.iter().filter(|r| r.check == check).map(|r| r.verdict).collect()
}

#[test]
fn item_statuses_are_classified_by_stop_window() {
    let sample = Sample {
        raw: vec![(
            1,
            0,
            vec![ArrayItem { instance: String::new(), status: PDH_CSTATUS_NO_INSTANCE, value: 0 }],
        )],
        ..Sample::default()
    };
    let rows = check_sample(&sample, None, None, &mut ThreadChecks::default(), &base());
    assert_eq!(verdicts(&rows, Check::ItemStatus), [Verdict::Transient]);
    let rows = check_sample(&sample, Some(0), None, &mut ThreadChecks::default(), &base());
    assert_eq!(verdicts(&rows, Check::ItemStatus), [Verdict::Violation]);
    let row = rows.iter().find(|r| r.check == Check::ItemStatus).unwrap();
    assert_eq!((row.value.as_str(), row.detail.as_str()), ("PDH_CSTATUS_NO_INSTANCE", "raw"));
}

#[test]
fn a_catalogue_mismatch_is_a_violation() {
    let set = &COUNTER_SETS[1];
    let mut paths: Vec<String> = set.counters.iter().map(|c| set.counter_path(c.name)).collect();
    let last = set.counters.last().unwrap().name;
    paths.pop();
    paths.push(set.counter_path("Surprise"));
    let sample = Sample { expanded: vec![(1, paths)], ..Sample::default() };
    let rows = check_sample(&sample, Some(0), None, &mut ThreadChecks::default(), &base());
    assert_eq!(verdicts(&rows, Check::Catalogue), [Verdict::Violation]);
    let detail = &rows.iter().find(|r| r.check == Check::Catalogue).unwrap().detail;
    assert!(detail.contains(last) && detail.contains("Surprise"), "{detail}");
    // not checked inside a stop window
    let rows = check_sample(&sample, None, None, &mut ThreadChecks::default(), &base());
    assert!(verdicts(&rows, Check::Catalogue).is_empty());
}

#[test]
fn monotonic_rows_only_for_totals_in_stable_samples() {
    let item = |value| vec![ArrayItem { instance: "_Total".to_string(), status: 0, value }];
    // counter 0 of Hardware Counters is a rate, counter 7 a total
    let sample = |v| Sample { raw: vec![(0, 0, item(v)), (0, 7, item(v))], ..Sample::default() };
    let mut checks = ThreadChecks::default();
    let rows = check_sample(&sample(10), Some(0), None, &mut checks, &base());
    assert_eq!(verdicts(&rows, Check::Monotonic), [Verdict::Baseline]);
    assert_eq!(
        rows.iter().find(|r| r.check == Check::Monotonic).unwrap().counter_path,
        "\\Hardware Counters(*)\\Instructions Retired"
    );
    assert!(
        verdicts(&check_sample(&sample(5), None, None, &mut checks, &base()), Check::Monotonic).is_empty()
    );
    assert_eq!(
        verdicts(&check_sample(&sample(9), Some(0), None, &mut checks, &base()), Check::Monotonic),
        [Verdict::Violation]
    );
    assert_eq!(
        verdicts(&check_sample(&sample(1), Some(1), None, &mut checks, &base()), Check::Monotonic),
        [Verdict::Baseline]
    );
}

#[test]
fn bad_formatted_values_are_violations_only_outside_stop_windows() {
    let sample = Sample {
        formatted: vec![(1, 0, vec![ArrayItem { instance: String::new(), status: 0, value: -3.0 }])],
        ..Sample::default()
    };
    let rows = check_sample(&sample, Some(0), None, &mut ThreadChecks::default(), &base());
    assert_eq!(verdicts(&rows, Check::FormattedValue), [Verdict::Violation]);
    let rows = check_sample(&sample, None, None, &mut ThreadChecks::default(), &base());
    assert_eq!(verdicts(&rows, Check::FormattedValue), [Verdict::Transient]);
}
