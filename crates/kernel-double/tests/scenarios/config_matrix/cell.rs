//! One cell of the matrix: the real driver loaded on the chosen model and processor count with one
//! Parameters setting, counting a workload, and the properties every cell must have.

use super::cases::Case;
use super::ratios;
use crate::common::{self, HARDWARE_COUNTERS};

use kernel_double::consumer::{self, Counterset, Sample};
use kernel_double::control::{hal, pcw};
use kernel_double::cpu::cpuid::{self, PmuKind};
use kernel_double::cpu::{frequency, msr, pmu, topology};
use kernel_double::status::STATUS_SUCCESS;
use std::cell::RefCell;

/// Status counterset positions: PMU State, Top-down Source, Active Profile, Rejected Custom Events.
const PMU_STATE: usize = 0;
const TOPDOWN_SOURCE: usize = 9;
const ACTIVE_PROFILE: usize = 10;
const REJECTED: usize = 11;
const EVENTS_WITHOUT_COUNTER: usize = 13;
const EVENTS_NOT_SUPPORTED: usize = 14;
/// The status bit of custom line 0 (docs/internals.md: bits 11-18 are custom events 0-7).
const CUSTOM_STATUS_BIT0: usize = 11;
const ACTIVE: u64 = 1;
/// Manifest id of the status counterset's PMU Ownership, and its values.
const PMU_OWNERSHIP_ID: u16 = 30;
const RESOURCE_LISTS: u64 = 1;
const WHOLE_PMU: u64 = 2;

/// The position of the status counter with manifest id `id` among the status values.
fn status_position(id: u16) -> usize {
    let descriptors = pcw::descriptors(common::DRIVER_STATUS).expect("the status counterset is registered");
    descriptors.iter().position(|descriptor| descriptor.id == id).expect("a status counter with that id")
}

/// Hardware Counters fields holding an event's count, with the workload event (index into
/// `pmu::RATES`) they count; `CustomEvent<n>` fields hold custom line n's.
const EVENT_FIELDS: [(&str, usize); 7] = [
    ("InstructionsRetired", pmu::INSTRUCTIONS),
    ("CoreCycles", pmu::CORE_CYCLES),
    ("ReferenceCycles", pmu::REFERENCE_CYCLES),
    ("LlcReferences", 3),
    ("LlcMisses", 4),
    ("Branches", 5),
    ("BranchMispredicts", 6),
];
/// The events every profile publishes with the custom profile: instructions and both cycle counts.
const CUSTOM_PROFILE_EVENTS: usize = 3;

/// What the model leads to expect, beyond what the double's tables say.
#[derive(Clone, Copy)]
pub struct Expect {
    /// Issue slots per cycle when the topdown profile's input events give top-down level 1 (Intel's
    /// 4-wide cores: 4; Zen 4: 6; Zen 5: 8); `None` where the profile has no inputs to count.
    pub topdown_inputs_width: Option<u64>,
}

/// Each processor's counts of every workload event.
type Counts = Vec<[u64; pmu::EVENTS]>;

/// The virtual PMU's counts, and on an AMD processor with MPERF (CPUID.06H:ECX\[0\]) its reference
/// cycles as MPERF counts them: at the P0 frequency while the core is in C0 (AMD APM Vol. 2, "Effective
/// Frequency Interface"), where no core counter counts them.
fn counts() -> Counts {
    (0..topology::processor_count())
        .map(|vp| {
            let mut counts: [u64; pmu::EVENTS] = std::array::from_fn(|event| pmu::counted(vp, event));
            if matches!(cpuid::model_of(vp).pmu, PmuKind::Amd { .. }) && frequency::present(vp) {
                counts[pmu::REFERENCE_CYCLES] = frequency::counted(vp).1;
            }
            counts
        })
        .collect()
}

/// Runs `case` on a fresh load of the driver: collects `rounds` times after work, then once more
/// after every counter of the first and last processors has wrapped, and checks every property
/// (panicking on the first that fails).
pub fn run(case: &Case, expect: Expect, rounds: u32) {
    let processors = topology::processor_count();
    let usable = (0..processors).all(|vp| cpuid::model_of(vp).pmu != PmuKind::None);
    case.apply();
    let before = counts();
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS, "DriverEntry");
    let set = Counterset::open(&consumer::manifest(), HARDWARE_COUNTERS).unwrap();
    assert_eq!(pcw::add_counter(&set.name, set.full_mask()), Some(STATUS_SUCCESS), "AddCounter");
    // The sample the first interval's ratios start from.
    let previous = RefCell::new(consumer::sample(&set).expect("collect"));
    let cell = Cell { case, expect, usable, before, previous };
    let status = common::driver_status();
    let intel = (0..processors).all(|vp| matches!(cpuid::model_of(vp).pmu, PmuKind::Intel { .. }));
    if usable {
        assert_eq!(status[PMU_STATE], ACTIVE, "PMU State");
        // Intel's HAL takes resource lists (one per core type, each from a processor of that type,
        // fixed counter 3 left out where its table lacks it): never the whole PMU there, which would
        // lock WPR/xperf out; AMD's takes none.
        let ownership = status[status_position(PMU_OWNERSHIP_ID)];
        assert_eq!(ownership, if intel { RESOURCE_LISTS } else { WHOLE_PMU }, "PMU Ownership");
        assert_eq!(
            (status[ACTIVE_PROFILE], status[REJECTED]),
            (case.active_profile, case.rejected),
            "Active Profile and Rejected Custom Events"
        );
    } else {
        assert_ne!(status[PMU_STATE], ACTIVE, "PMU State without a PMU");
    }
    let work = |round: u64| {
        for vp in 0..processors {
            pmu::step(vp, 1_000 * round * (1 + u64::from(vp % 7)));
        }
    };
    for round in 1..=u64::from(rounds) {
        work(round);
        cell.collect_and_check(&set, true);
    }
    // Each counter of the first and last processors one event short of its wrap, and a collect (a
    // poller must see a counter between its last value and the wrap, as it would a real one, which
    // counts that far only over many poll periods); then work that wraps every one of them.
    for vp in [0, processors - 1] {
        for (msr, event) in pmu::programmed_counters(vp) {
            // Fixed counter 3 is zeroed at every read, with IA32_PERF_METRICS: it never wraps.
            if event != pmu::TOPDOWN_SLOTS {
                pmu::preload(vp, msr, u64::MAX);
            }
        }
    }
    // The jumps to the wrap are no workload: a miss count may jump further than the references.
    cell.collect_and_check(&set, false);
    let interrupts = pmu::delivered();
    work(1);
    // On Intel the HAL takes a resource list with an Overflow descriptor (and the double's does), so
    // the wraps arrive by interrupt, whatever the plan's size; a refused list would leave them to
    // polling, which the counts alone do not show.
    if intel {
        assert!(
            pmu::delivered() > interrupts,
            "no overflow interrupt: the counters are not owned with an Overflow descriptor"
        );
    }
    cell.collect_and_check(&set, true);
    assert_eq!(pcw::remove_counter(&set.name, set.full_mask()), Some(STATUS_SUCCESS), "RemoveCounter");
    assert!(driver.unload(), "DriverUnload");
    check_msr_accesses(usable);
    common::assert_clean();
}

/// A cell being run.
struct Cell<'a> {
    case: &'a Case,
    expect: Expect,
    /// Every processor has a PMU.
    usable: bool,
    /// The virtual PMU's counts when the cell began.
    before: Counts,
    /// The last sample: where the next interval's ratios start.
    previous: RefCell<Sample>,
}

impl Cell<'_> {
    /// Collects every processor's block and checks it against the counts since the cell began, and
    /// the ratios ([`ratios::check`]; what consumers see of them if the interval since the last
    /// collect was `workload` alone).
    fn collect_and_check(&self, set: &Counterset, workload: bool) {
        let sample = consumer::sample(set).expect("collect");
        ratios::check(set, &self.previous.borrow(), &sample, workload);
        let truth: Counts = counts()
            .iter()
            .zip(&self.before)
            .map(|(now, then)| std::array::from_fn(|e| now[e] - then[e]))
            .collect();
        let status = common::driver_status();
        let source = status[TOPDOWN_SOURCE];
        if self.usable {
            assert_eq!(source, expected_topdown_source(self.case, self.expect), "Top-down Source");
        }
        let reading = Reading { set, sample: &sample, case: self.case, expect: self.expect, source };
        for (vp, truth) in (0..).zip(&truth) {
            reading.check_block(vp, truth, self.usable);
        }
        if self.usable {
            check_custom_capacity(self.case, &truth);
            self.check_zeros_say_why(set, &sample, &status);
        }
        *self.previous.borrow_mut() = sample;
    }

    /// Every event the profile asks for that reads 0 on some processor (the workload makes every
    /// event) is in the status counters' Events Without a Counter or Events Not Supported, and no
    /// event that counts on every processor is (a hybrid part's core types have their own plans, so
    /// an event may find a counter on one type and not on another); an event nobody asked for is in
    /// neither. `value_of` is the event's smallest count over the processors.
    fn check_zeros_say_why(&self, set: &Counterset, sample: &Sample, status: &[u64]) {
        let why = status[EVENTS_WITHOUT_COUNTER] | status[EVENTS_NOT_SUPPORTED];
        let processors: Vec<_> = (0..topology::processor_count())
            .map(|vp| {
                let (group, number) = topology::number_from_index(vp).expect("an active processor");
                sample.values_of(set, &format!("{group},{number}")).expect("every processor sampled")
            })
            .collect();
        let value_of = |field: &str| {
            let at = set.counters.iter().position(|counter| counter.field == field).expect("a count field");
            processors.iter().map(|values| values[at].expect("a raw value")).min().unwrap_or(0)
        };
        let case = self.case;
        let mut fields: Vec<(String, usize, bool)> = EVENT_FIELDS
            .iter()
            .enumerate()
            .map(|(bit, &(field, event))| {
                (field.to_string(), bit, case.active_profile != 2 || event < CUSTOM_PROFILE_EVENTS)
            })
            .collect();
        for (line, event) in case.custom.iter().enumerate() {
            // A line whose event the workload makes (the others count 0 by rights).
            fields.push((format!("CustomEvent{line}"), CUSTOM_STATUS_BIT0 + line, event.is_some()));
        }
        for (field, bit, wanted) in fields {
            let flagged = why & (1 << bit) != 0;
            if wanted {
                assert_eq!(
                    value_of(&field) == 0,
                    flagged,
                    "{field} reads {} with status bit {bit} {flagged}",
                    value_of(&field)
                );
            } else if field.starts_with("CustomEvent") {
                continue;
            } else {
                assert!(!flagged, "{field}: status bit {bit} set for an event the profile does not ask for");
            }
        }
    }
}

/// One collect of a cell, with what it is checked against.
struct Reading<'a> {
    set: &'a Counterset,
    sample: &'a Sample,
    case: &'a Case,
    expect: Expect,
    /// The Top-down Source the driver reported.
    source: u64,
}

impl Reading<'_> {
    /// Every count field of processor `vp`'s Hardware Counters block against `truth`, the virtual
    /// PMU's counts since the cell began.
    fn check_block(&self, vp: u32, truth: &[u64; pmu::EVENTS], usable: bool) {
        let set = self.set;
        let (group, number) = topology::number_from_index(vp).unwrap();
        let instance = format!("{group},{number}");
        let values =
            self.sample.values_of(set, &instance).unwrap_or_else(|| panic!("no instance {instance}"));
        let mut compared = 0;
        for (counter, value) in set.counters.iter().zip(values) {
            let value = value.expect("a raw value");
            let Some(expected) = self.expected(vp, &counter.field, truth) else { continue };
            // Every counter reading a count, ratio counters and their bases included, is 64-bit.
            assert_eq!(counter.descriptor.size, 8, "{} (field {})", counter.name, counter.field);
            assert_eq!(value, expected, "processor {instance}: {} (field {})", counter.name, counter.field);
            compared += 1;
        }
        // The seven events and eight custom events, each a total and a rate, and the ratio counters
        // and bases reading them.
        assert!(compared > 2 * (EVENT_FIELDS.len() + 8), "only {compared} count fields found");
        if usable {
            assert!(
                truth[pmu::INSTRUCTIONS] > 0 && truth[pmu::CORE_CYCLES] > 0,
                "{instance}: nothing counted"
            );
        }
    }

    /// The count field `name` must hold; `None` for a field that holds no count.
    fn expected(&self, vp: u32, name: &str, truth: &[u64; pmu::EVENTS]) -> Option<u64> {
        let case = self.case;
        if let Some(&(_, event)) = EVENT_FIELDS.iter().find(|(field, _)| *field == name) {
            let published = case.active_profile != 2 || event < CUSTOM_PROFILE_EVENTS;
            Some(if published { truth[event] } else { 0 })
        } else if let Some(line) = name.strip_prefix("CustomEvent") {
            let line: usize = line.parse().expect("CustomEvent<n>");
            let event = case.custom.get(line).copied().flatten().filter(|_| runs_on(case, line, vp));
            Some(event.map_or(0, |event| truth[event]))
        } else if name == "TopdownSlots" {
            Some(self.topdown_slots(vp, truth))
        } else {
            None
        }
    }

    /// The top-down slots a block must hold for the reported source: fixed counter 3's, or the
    /// issue width times the core cycles when the topdown profile's inputs give them (on an
    /// efficient core of a hybrid part, its own width: `pmu::atom_width`).
    fn topdown_slots(&self, vp: u32, truth: &[u64; pmu::EVENTS]) -> u64 {
        let topdown_profile = self.case.active_profile == 1;
        match (self.source, self.expect.topdown_inputs_width, pmu::atom_width(vp)) {
            (6, _, Some(width)) if topdown_profile => width * truth[pmu::CORE_CYCLES],
            // Per core type (6): fixed counter 3 counts only where it exists, so the truth is 0 elsewhere.
            (1 | 6, _, _) => truth[pmu::TOPDOWN_SLOTS],
            (2, Some(width), _) => width * truth[pmu::CORE_CYCLES],
            _ => 0,
        }
    }
}

/// The Top-down Source the model and profile allow: fixed counter 3 with IA32_PERF_METRICS on every
/// processor (1), the topdown profile's input events (2), some core types of a hybrid part but not
/// all (6, each processor counting with its own core type's), or none (0).
fn expected_topdown_source(case: &Case, expect: Expect) -> u64 {
    let processors = topology::processor_count();
    // What each processor's own PMU has (a hybrid part's core types differ, whatever leaf 0xA says).
    let metrics = |vp: u32| {
        let model = cpuid::model_of(vp);
        let fixed = match model.pmu {
            PmuKind::Intel { fixed, .. } => fixed,
            _ => 0,
        };
        fixed >= 4 && model.perf_capabilities & cpuid::PERF_CAPABILITIES_PERF_METRICS != 0
    };
    let with_metrics = (0..processors).filter(|&vp| metrics(vp)).count() as u32;
    match (with_metrics, expect.topdown_inputs_width) {
        (n, _) if n == processors => 1,
        (0, Some(_)) if case.active_profile == 1 => 2,
        (0, _) => 0,
        _ => 6,
    }
}

/// Custom events take every general-purpose counter the profile's fixed events leave (docs/internals.md,
/// event profiles: a plan may use every counter a core has): Intel: every general-purpose counter, up
/// to IA32_PMC0-7 (instructions and both cycle counts are on fixed counters 0-2); AMD: all but the two
/// for instructions and core cycles. In line order; a line past them finds none and counts nothing.
fn check_custom_capacity(case: &Case, truth: &Counts) {
    /// General-purpose counters the driver names (IA32_PMC0-7, AMD's core counters).
    const GENERAL_PURPOSE: usize = 8;
    if case.active_profile != 2 {
        return;
    }
    // What each processor's own PMU has, of what the HAL's counter table lets a resource list name
    // (asked from a processor of the core type): each core type of a hybrid part gets its own plan.
    let capacity = |vp: u32| match cpuid::model_of(vp).pmu {
        PmuKind::Intel { gp, .. } => {
            let table = (hal::counter_table(vp) as u32).trailing_ones() as usize;
            usize::from(gp).min(table).min(GENERAL_PURPOSE)
        }
        PmuKind::Amd { counters, .. } => usize::from(counters) - 2,
        PmuKind::None => 0,
    };
    for (vp, truth) in truth.iter().enumerate() {
        let vp = vp as u32;
        let capacity = capacity(vp);
        // The lines that run on this processor take its counters in order.
        let mut rank = 0;
        for (line, event) in case.custom.iter().enumerate() {
            if !runs_on(case, line, vp) || case.rejected_lines.get(line) == Some(&true) {
                continue;
            }
            rank += 1;
            let Some(event) = *event else { continue };
            let counted = truth[event] > 0;
            assert_eq!(
                counted,
                rank <= capacity,
                "processor {vp}: custom event {line} counted: {counted}, with {capacity} counters for custom events"
            );
        }
    }
}

/// Whether custom line `line` runs on processor `vp`: every line does, except one naming
/// `core=performance` on an efficient core (leaf 1AH core type 20H).
fn runs_on(case: &Case, line: usize, vp: u32) -> bool {
    let efficient = cpuid::cpuid_on(vp, 0x1A, 0)[0] >> 24 == 0x20;
    !(case.performance_only.get(line).copied().unwrap_or(false) && efficient)
}

/// No PMU register the model lacks was touched (a #GP on hardware; the double also records it as a
/// violation), and without a PMU no MSR at all.
fn check_msr_accesses(usable: bool) {
    let writes = msr::writes();
    if !usable {
        assert_eq!((msr::reads(), writes.len()), (0, 0), "MSR reads and writes without a PMU");
    }
    for write in writes {
        if let Err(why) = msr::check_exists(write.processor, write.msr) {
            panic!("wrmsr {:#x} on processor {}: {why}", write.msr, write.processor);
        }
    }
}
