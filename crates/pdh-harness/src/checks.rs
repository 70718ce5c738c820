//! The harness's verdicts, independent of Windows: PDH status classification inside and outside the
//! service's stop windows, monotonic raw totals per instance and service session, and instance-set
//! stability.

use crate::catalogue::InstanceKind;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

/// PDH status codes the harness names (pdhmsg.h; the same values as the `windows` crate's constants,
/// repeated here so that this module builds on any host).
pub mod status {
    pub const PDH_CSTATUS_VALID_DATA: u32 = 0x0000_0000;
    pub const PDH_CSTATUS_NEW_DATA: u32 = 0x0000_0001;
    pub const PDH_CSTATUS_NO_INSTANCE: u32 = 0x8000_07D1;
    pub const PDH_MORE_DATA: u32 = 0x8000_07D2;
    pub const PDH_NO_DATA: u32 = 0x8000_07D5;
    pub const PDH_CALC_NEGATIVE_VALUE: u32 = 0x8000_07D8;
    pub const PDH_CSTATUS_NO_OBJECT: u32 = 0xC000_0BB8;
    pub const PDH_CSTATUS_NO_COUNTER: u32 = 0xC000_0BB9;
    pub const PDH_CSTATUS_INVALID_DATA: u32 = 0xC000_0BBA;
    pub const PDH_INVALID_ARGUMENT: u32 = 0xC000_0BBD;
    pub const PDH_INVALID_DATA: u32 = 0xC000_0BC6;

    /// A readable name for the codes above, the hex value for others.
    pub fn name(status: u32) -> String {
        match status {
            PDH_CSTATUS_VALID_DATA => "PDH_CSTATUS_VALID_DATA".into(),
            PDH_CSTATUS_NEW_DATA => "PDH_CSTATUS_NEW_DATA".into(),
            PDH_CSTATUS_NO_INSTANCE => "PDH_CSTATUS_NO_INSTANCE".into(),
            PDH_MORE_DATA => "PDH_MORE_DATA".into(),
            PDH_NO_DATA => "PDH_NO_DATA".into(),
            PDH_CALC_NEGATIVE_VALUE => "PDH_CALC_NEGATIVE_VALUE".into(),
            PDH_CSTATUS_NO_OBJECT => "PDH_CSTATUS_NO_OBJECT".into(),
            PDH_CSTATUS_NO_COUNTER => "PDH_CSTATUS_NO_COUNTER".into(),
            PDH_CSTATUS_INVALID_DATA => "PDH_CSTATUS_INVALID_DATA".into(),
            PDH_INVALID_ARGUMENT => "PDH_INVALID_ARGUMENT".into(),
            PDH_INVALID_DATA => "PDH_INVALID_DATA".into(),
            other => format!("0x{other:08X}"),
        }
    }
}

/// The statuses PDH returns while the provider is not registered (the service is stopped or
/// starting): the object or its instances are gone, or a collect found no data. A rate whose interval
/// straddles a restart can also come out negative, because the new session counts from a new base.
pub const TRANSIENT_WHILE_STOPPED: [u32; 4] = [
    status::PDH_CSTATUS_NO_OBJECT,
    status::PDH_NO_DATA,
    status::PDH_CSTATUS_NO_INSTANCE,
    status::PDH_CALC_NEGATIVE_VALUE,
];

/// What one check concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verdict {
    Ok,
    /// The first value of a counter instance in a service session: the reference for the next ones.
    Baseline,
    /// A documented transient PDH error inside a stop window: allowed, counted.
    Transient,
    Violation,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Baseline => "baseline",
            Verdict::Transient => "transient",
            Verdict::Violation => "violation",
        }
    }
}

/// Classifies a PDH status (a call's result or an item's CStatus). Success codes are `Ok`; the
/// transient codes are allowed only inside a stop window; everything else is a violation.
pub fn classify_status(status: u32, in_stop_window: bool) -> Verdict {
    if status == status::PDH_CSTATUS_VALID_DATA || status == status::PDH_CSTATUS_NEW_DATA {
        Verdict::Ok
    } else if in_stop_window && TRANSIENT_WHILE_STOPPED.contains(&status) {
        Verdict::Transient
    } else {
        Verdict::Violation
    }
}

/// The service's stop windows, shared by the stopper thread and the query threads.
///
/// An epoch counter: even while the service runs undisturbed, odd from the moment the stopper asks it to
/// stop until it runs again (and has settled). A sample is stable, belonging to the service session
/// `epoch`, when the epoch was the same even value before and after it; any other sample overlapped a
/// stop window.
#[derive(Debug, Default)]
pub struct StopWindows {
    epoch: AtomicU64,
}

impl StopWindows {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn current(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// Called before the stopper asks the service to stop.
    pub fn begin_stop(&self) {
        let previous = self.epoch.fetch_add(1, Ordering::SeqCst);
        debug_assert!(previous.is_multiple_of(2), "begin_stop inside a stop window");
    }

    /// Called once the service runs again (after the settle delay).
    pub fn end_stop(&self) {
        let previous = self.epoch.fetch_add(1, Ordering::SeqCst);
        debug_assert!(!previous.is_multiple_of(2), "end_stop outside a stop window");
    }

    /// The session a sample taken between the epochs `before` and `after` belongs to, or `None` if it
    /// overlapped a stop window.
    pub fn session(before: u64, after: u64) -> Option<u64> {
        (before == after && before.is_multiple_of(2)).then_some(before / 2)
    }
}

/// The outcome of one monotonicity observation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MonotonicOutcome {
    pub verdict: Verdict,
    /// The previous value in this session, if any.
    pub previous: Option<i64>,
}

/// Per (counter path, instance) last raw value and the session it was read in. Values must not decrease
/// within a session; a new session starts a new baseline.
#[derive(Debug, Default)]
pub struct MonotonicTracker {
    last: HashMap<(String, String), (u64, i64)>,
}

impl MonotonicTracker {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn observe(&mut self, session: u64, counter: &str, instance: &str, value: i64) -> MonotonicOutcome {
        let key = (counter.to_owned(), instance.to_owned());
        let outcome = match self.last.get(&key) {
            Some(&(s, previous)) if s == session => MonotonicOutcome {
                verdict: if value >= previous { Verdict::Ok } else { Verdict::Violation },
                previous: Some(previous),
            },
            _ => MonotonicOutcome { verdict: Verdict::Baseline, previous: None },
        };
        // After a violation the new (lower) value becomes the reference, so one glitch is reported once.
        self.last.insert(key, (session, value));
        outcome
    }
}

/// A finding about the instances of one counterset in one stable sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstanceFinding {
    /// The counters of one sample did not all report the same instances.
    CountersDisagree { counter: String, instances: BTreeSet<String> },
    /// The set differs from the first one seen in the same session.
    ChangedInSession { expected: BTreeSet<String>, actual: BTreeSet<String> },
    /// `_Total` is missing from a multi-instance set.
    NoTotal,
    /// A multi-instance set has a name other than `_Total` that is not `group,number` with number < 64.
    BadName(String),
    /// Two names (e.g. `0,1` and `00,1`) map to the same instance id.
    DuplicateId { id: u32, names: [String; 2] },
    /// A name appears twice in one counter's array.
    DuplicateName(String),
    /// The processor instances do not number the active processors.
    WrongCount { expected: usize, actual: usize },
    /// A single-instance set reported a number of instances other than one.
    NotSingle(usize),
    /// A set of named instances reported `_Total`, which its manifest does not ask for.
    UnexpectedTotal,
    /// The set is empty outside a stop window.
    Empty,
}

impl std::fmt::Display for InstanceFinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(" ");
        match self {
            InstanceFinding::CountersDisagree { counter, instances } => {
                write!(f, "counter {counter} reported other instances: {}", list(instances))
            }
            InstanceFinding::ChangedInSession { expected, actual } => {
                write!(
                    f,
                    "instances changed within a session: expected [{}], got [{}]",
                    list(expected),
                    list(actual)
                )
            }
            InstanceFinding::NoTotal => write!(f, "no _Total instance"),
            InstanceFinding::BadName(n) => write!(f, "instance name {n:?} is not group,number"),
            InstanceFinding::DuplicateId { id, names } => {
                write!(f, "instances {:?} and {:?} share id {id}", names[0], names[1])
            }
            InstanceFinding::DuplicateName(n) => write!(f, "instance {n:?} listed twice"),
            InstanceFinding::WrongCount { expected, actual } => {
                write!(f, "{actual} processor instances, {expected} active processors")
            }
            InstanceFinding::NotSingle(n) => write!(f, "single-instance counterset reported {n} instances"),
            InstanceFinding::UnexpectedTotal => write!(f, "a _Total instance in a counterset without one"),
            InstanceFinding::Empty => write!(f, "no instances while the service runs"),
        }
    }
}

/// Checks the instance names one counter reported: no duplicates.
pub fn duplicate_names(names: &[String]) -> Vec<InstanceFinding> {
    let mut seen = BTreeSet::new();
    let mut findings = Vec::new();
    for name in names {
        if !seen.insert(name.as_str()) {
            findings.push(InstanceFinding::DuplicateName(name.clone()));
        }
    }
    findings
}

/// Checks the shape of one counterset's instance set: `_Total` and well-formed, distinct processor ids
/// for a per-processor set (and, if known, one per active processor); exactly one instance for a
/// single-instance set; no `_Total` among named instances.
pub fn instance_shape(
    instances: &BTreeSet<String>,
    kind: InstanceKind,
    active_processors: Option<usize>,
) -> Vec<InstanceFinding> {
    let mut findings = Vec::new();
    if instances.is_empty() && kind == InstanceKind::Controllers {
        // No memory controller counts on this machine (Memory Controller State says why).
        return findings;
    }
    if instances.is_empty() {
        findings.push(InstanceFinding::Empty);
        return findings;
    }
    match kind {
        InstanceKind::Single if instances.len() != 1 => {
            findings.push(InstanceFinding::NotSingle(instances.len()))
        }
        InstanceKind::Named if instances.contains(crate::catalogue::TOTAL_INSTANCE) => {
            findings.push(InstanceFinding::UnexpectedTotal);
        }
        InstanceKind::PerProcessor => findings.extend(processor_instance_shape(instances, active_processors)),
        InstanceKind::Controllers => findings.extend(processor_instance_shape(instances, None)),
        InstanceKind::Single | InstanceKind::Named => {}
    }
    findings
}

fn processor_instance_shape(
    instances: &BTreeSet<String>,
    active_processors: Option<usize>,
) -> Vec<InstanceFinding> {
    let mut findings = Vec::new();
    if !instances.contains(crate::catalogue::TOTAL_INSTANCE) {
        findings.push(InstanceFinding::NoTotal);
    }
    let mut ids: HashMap<u32, &String> = HashMap::new();
    let mut processors = 0;
    for name in instances.iter().filter(|n| *n != crate::catalogue::TOTAL_INSTANCE) {
        processors += 1;
        match crate::catalogue::processor_instance_id(name) {
            None => findings.push(InstanceFinding::BadName(name.clone())),
            Some(id) => {
                if let Some(other) = ids.insert(id, name) {
                    findings.push(InstanceFinding::DuplicateId { id, names: [other.clone(), name.clone()] });
                }
            }
        }
    }
    if let Some(expected) = active_processors
        && expected != processors
    {
        findings.push(InstanceFinding::WrongCount { expected, actual: processors });
    }
    findings
}

/// Remembers, per counterset, the instance set first seen in a session, and reports any other set seen
/// in the same session.
#[derive(Debug, Default)]
pub struct InstanceStability {
    reference: HashMap<String, (u64, BTreeSet<String>)>,
}

impl InstanceStability {
    pub fn new() -> Self {
        Self::default()
    }

    /// `per_counter`: each counter's instance set in one stable sample of counterset `set`.
    pub fn observe(
        &mut self,
        session: u64,
        set: &str,
        per_counter: &[(String, BTreeSet<String>)],
    ) -> Vec<InstanceFinding> {
        let mut findings = Vec::new();
        let Some((_, first)) = per_counter.first() else { return findings };
        for (counter, instances) in &per_counter[1..] {
            if instances != first {
                findings.push(InstanceFinding::CountersDisagree {
                    counter: counter.clone(),
                    instances: instances.clone(),
                });
            }
        }
        match self.reference.get(set) {
            Some((s, expected)) if *s == session => {
                if expected != first {
                    findings.push(InstanceFinding::ChangedInSession {
                        expected: expected.clone(),
                        actual: first.clone(),
                    });
                }
            }
            _ => {
                self.reference.insert(set.to_owned(), (session, first.clone()));
            }
        }
        findings
    }
}

/// A formatted value must be a finite, non-negative number (every counter of both sets is a count, a
/// rate, a time or a ratio of counts).
pub fn formatted_value_ok(value: f64) -> bool {
    value.is_finite() && value >= 0.0
}

#[cfg(test)]
mod tests {
    use super::status::*;
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn success_codes_are_ok_everywhere() {
        for s in [PDH_CSTATUS_VALID_DATA, PDH_CSTATUS_NEW_DATA] {
            assert_eq!(classify_status(s, false), Verdict::Ok);
            assert_eq!(classify_status(s, true), Verdict::Ok);
        }
    }

    #[test]
    fn transient_codes_only_inside_stop_windows() {
        for s in [PDH_CSTATUS_NO_OBJECT, PDH_NO_DATA, PDH_CSTATUS_NO_INSTANCE, PDH_CALC_NEGATIVE_VALUE] {
            assert_eq!(classify_status(s, true), Verdict::Transient, "{}", name(s));
            assert_eq!(classify_status(s, false), Verdict::Violation, "{}", name(s));
        }
    }

    #[test]
    fn other_errors_are_always_violations() {
        for s in [PDH_CSTATUS_NO_COUNTER, PDH_CSTATUS_INVALID_DATA, PDH_INVALID_ARGUMENT, PDH_INVALID_DATA, 5]
        {
            assert_eq!(classify_status(s, true), Verdict::Violation, "{}", name(s));
            assert_eq!(classify_status(s, false), Verdict::Violation, "{}", name(s));
        }
    }

    #[test]
    fn status_names() {
        assert_eq!(name(PDH_CSTATUS_NO_OBJECT), "PDH_CSTATUS_NO_OBJECT");
        assert_eq!(name(0xC000_0BBE), "0xC0000BBE");
    }

    #[test]
    fn stop_windows_sessions() {
        let w = StopWindows::new();
        let a = w.current();
        assert_eq!(StopWindows::session(a, w.current()), Some(0));
        w.begin_stop();
        let inside = w.current();
        assert_eq!(StopWindows::session(inside, inside), None, "inside a stop window");
        assert_eq!(StopWindows::session(a, inside), None, "straddles the start of a window");
        w.end_stop();
        let after = w.current();
        assert_eq!(StopWindows::session(inside, after), None, "straddles the end of a window");
        assert_eq!(StopWindows::session(after, after), Some(1));
        w.begin_stop();
        w.end_stop();
        assert_eq!(StopWindows::session(after, w.current()), None, "a whole window in between");
        assert_eq!(StopWindows::session(w.current(), w.current()), Some(2));
    }

    #[test]
    fn monotonic_within_a_session() {
        let mut t = MonotonicTracker::new();
        assert_eq!(t.observe(0, "c", "0,0", 10).verdict, Verdict::Baseline);
        assert_eq!(
            t.observe(0, "c", "0,0", 10),
            MonotonicOutcome { verdict: Verdict::Ok, previous: Some(10) }
        );
        assert_eq!(t.observe(0, "c", "0,0", 11).verdict, Verdict::Ok);
        let v = t.observe(0, "c", "0,0", 9);
        assert_eq!(v, MonotonicOutcome { verdict: Verdict::Violation, previous: Some(11) });
        // reported once: 9 is the new reference
        assert_eq!(t.observe(0, "c", "0,0", 9).verdict, Verdict::Ok);
    }

    #[test]
    fn a_new_session_is_a_reset_point() {
        let mut t = MonotonicTracker::new();
        t.observe(0, "c", "0,0", 1_000_000);
        assert_eq!(t.observe(1, "c", "0,0", 5).verdict, Verdict::Baseline);
        assert_eq!(t.observe(1, "c", "0,0", 6).verdict, Verdict::Ok);
        assert_eq!(t.observe(1, "c", "0,0", 4).verdict, Verdict::Violation);
    }

    #[test]
    fn monotonic_keys_are_counter_and_instance() {
        let mut t = MonotonicTracker::new();
        t.observe(0, "a", "0,0", 100);
        assert_eq!(t.observe(0, "b", "0,0", 1).verdict, Verdict::Baseline);
        assert_eq!(t.observe(0, "a", "0,1", 1).verdict, Verdict::Baseline);
        assert_eq!(t.observe(0, "a", "0,0", 99).verdict, Verdict::Violation);
    }

    #[test]
    fn shape_of_a_good_multi_instance_set() {
        let s = set(&["0,0", "0,1", "1,0", "_Total"]);
        assert!(instance_shape(&s, InstanceKind::PerProcessor, Some(3)).is_empty());
        assert!(instance_shape(&s, InstanceKind::PerProcessor, None).is_empty());
    }

    #[test]
    fn shape_findings() {
        assert_eq!(
            instance_shape(&set(&["0,0"]), InstanceKind::PerProcessor, None),
            [InstanceFinding::NoTotal]
        );
        assert_eq!(
            instance_shape(&set(&["0,0", "cpu1", "_Total"]), InstanceKind::PerProcessor, None),
            [InstanceFinding::BadName("cpu1".into())]
        );
        assert_eq!(
            instance_shape(&set(&["0,1", "00,1", "_Total"]), InstanceKind::PerProcessor, None),
            [InstanceFinding::DuplicateId { id: 1, names: ["0,1".into(), "00,1".into()] }]
        );
        assert_eq!(
            instance_shape(&set(&["0,0", "_Total"]), InstanceKind::PerProcessor, Some(2)),
            [InstanceFinding::WrongCount { expected: 2, actual: 1 }]
        );
        assert_eq!(instance_shape(&set(&[]), InstanceKind::PerProcessor, None), [InstanceFinding::Empty]);
        assert_eq!(instance_shape(&set(&[]), InstanceKind::Single, None), [InstanceFinding::Empty]);
        assert!(instance_shape(&set(&[""]), InstanceKind::Single, None).is_empty());
        assert_eq!(
            instance_shape(&set(&["a", "b"]), InstanceKind::Single, None),
            [InstanceFinding::NotSingle(2)]
        );
        assert!(
            instance_shape(&set(&["Performance", "Efficient"]), InstanceKind::Named, Some(24)).is_empty()
        );
        assert_eq!(
            instance_shape(&set(&["All", "_Total"]), InstanceKind::Named, None),
            [InstanceFinding::UnexpectedTotal]
        );
    }

    #[test]
    fn duplicate_names_in_one_array() {
        let names: Vec<String> = ["0,0", "0,1", "0,0"].iter().map(|s| s.to_string()).collect();
        assert_eq!(duplicate_names(&names), [InstanceFinding::DuplicateName("0,0".into())]);
        assert!(duplicate_names(&names[..2]).is_empty());
    }

    #[test]
    fn instance_sets_stable_within_a_session() {
        let mut s = InstanceStability::new();
        let a = set(&["0,0", "0,1", "_Total"]);
        let b = set(&["0,0", "_Total"]);
        let sample =
            |x: &BTreeSet<String>| vec![("c1".to_string(), x.clone()), ("c2".to_string(), x.clone())];
        assert!(s.observe(0, "HC", &sample(&a)).is_empty());
        assert!(s.observe(0, "HC", &sample(&a)).is_empty());
        assert_eq!(
            s.observe(0, "HC", &sample(&b)),
            [InstanceFinding::ChangedInSession { expected: a.clone(), actual: b.clone() }]
        );
        // another session may have another set (e.g. a processor was added while the driver was stopped)
        assert!(s.observe(1, "HC", &sample(&b)).is_empty());
        assert!(s.observe(1, "HC", &sample(&b)).is_empty());
        // sets are tracked per counterset
        assert!(s.observe(1, "Driver", &[("x".to_string(), set(&[""]))]).is_empty());
        assert!(s.observe(1, "Driver", &[]).is_empty());
    }

    #[test]
    fn counters_of_one_sample_must_agree() {
        let mut s = InstanceStability::new();
        let a = set(&["0,0", "_Total"]);
        let b = set(&["_Total"]);
        let findings = s.observe(0, "HC", &[("c1".into(), a), ("c2".into(), b.clone())]);
        assert_eq!(findings, [InstanceFinding::CountersDisagree { counter: "c2".into(), instances: b }]);
        assert!(findings[0].to_string().contains("c2"));
    }

    #[test]
    fn formatted_values() {
        assert!(formatted_value_ok(0.0));
        assert!(formatted_value_ok(1.5e9));
        assert!(!formatted_value_ok(-1.0));
        assert!(!formatted_value_ok(f64::NAN));
        assert!(!formatted_value_ok(f64::INFINITY));
    }

    #[test]
    fn findings_display() {
        let f = InstanceFinding::ChangedInSession { expected: set(&["a", "b"]), actual: set(&["a"]) };
        assert_eq!(f.to_string(), "instances changed within a session: expected [a b], got [a]");
        assert_eq!(InstanceFinding::NoTotal.to_string(), "no _Total instance");
    }
}
