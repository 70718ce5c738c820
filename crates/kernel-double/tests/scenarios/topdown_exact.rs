//! Top-down level 1 exact over many collects, on each model with fixed counter 3 and
//! IA32_PERF_METRICS: the workload's top-down mix changes between and within collects (a program's
//! phases), fixed counter 3 counts the reader's own instructions while it counts
//! (`pmu::READER_SLOTS_UNITS`), and after every collect each processor's published totals must hold:
//!
//! * the four category slot totals sum to the published slot total exactly (each read's slots fully
//!   split, none lost or invented by rounding);
//! * the published slot total is every slot fixed counter 3 counted (none lost between the read and
//!   the zeroing);
//! * no category total goes backwards;
//! * after the first collects, each category's share of the slots is within 0.1 percentage point of
//!   the virtual PMU's truth (IA32_PERF_METRICS is one 1/255 step, 0.39 point, coarse per read: only
//!   carrying each read's remainder and a mix that moves keeps the totals this close).

use crate::common;

use kernel_double::consumer::{self, Counterset, Sample};
use kernel_double::control::pcw;
use kernel_double::cpu::{cpuid, pmu, topology};
use kernel_double::status::STATUS_SUCCESS;

/// Manifest ids of the slot totals: all slots, then the four categories.
const SLOTS_TOTAL: u32 = 29;
const CATEGORY_TOTALS: [u32; 4] = [30, 31, 32, 33];
const COLLECTS: usize = 300;
/// Collects before the shares are checked against 0.1 point (each read's 1/255 step averages out).
const WARM_UP: usize = 20;
const TOLERANCE_POINTS: f64 = 0.1;

/// A small deterministic generator (a 64-bit LCG, Knuth's MMIX constants).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound
    }

    /// A mix of one unit's slots among the four categories.
    fn mix(&mut self) -> [u64; 4] {
        let slots = pmu::RATES[pmu::TOPDOWN_SLOTS];
        let retiring = self.below(slots + 1);
        let bad_speculation = self.below(slots - retiring + 1);
        let frontend = self.below(slots - retiring - bad_speculation + 1);
        [retiring, bad_speculation, frontend, slots - retiring - bad_speculation - frontend]
    }
}

fn published(hardware: &Counterset, sample: &Sample, instance: &str) -> (u64, [u64; 4]) {
    let values = sample.values_of(hardware, instance).expect("instance sampled");
    let value = |id: u32| values[hardware.index_of(id).unwrap()].expect("value");
    (value(SLOTS_TOTAL), CATEGORY_TOTALS.map(value))
}

fn scenario(model: &'static cpuid::CpuModel) {
    cpuid::set_model(model);
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let hardware = Counterset::open(&consumer::manifest(), "Hardware Counters").unwrap();
    assert_eq!(pcw::add_counter(&hardware.name, hardware.full_mask()), Some(STATUS_SUCCESS));
    let processors = topology::processor_count();
    let mut random = Lcg(0x7D0E_5EED);
    let mut previous = vec![[0u64; 4]; processors as usize];
    let mut failures = Vec::new();
    let mut largest_error = 0f64;
    for collect in 0..COLLECTS {
        for vp in 0..processors {
            for _phase in 0..=random.below(3) {
                pmu::set_topdown_mix(random.mix());
                // Processor 0 does little work between collects (a few hundred slots, as an idle
                // processor's), where each read's rounding weighs most.
                let units = if vp == 0 { 1 + random.below(4) } else { 1 + random.below(20_000) };
                pmu::step(vp, units);
            }
        }
        let sample = consumer::sample(&hardware).unwrap();
        for vp in 0..processors {
            let instance = format!("0,{vp}");
            let (slots, categories) = published(&hardware, &sample, &instance);
            let at = format!("collect {collect}, {instance}");
            let sum: u64 = categories.iter().sum();
            if sum != slots {
                failures.push(format!("{at}: categories {categories:?} sum to {sum}, slots {slots}"));
            }
            let counted = pmu::counted(vp, pmu::TOPDOWN_SLOTS);
            if slots != counted {
                failures.push(format!("{at}: {slots} slots published, {counted} counted"));
            }
            let before = &previous[vp as usize];
            if categories.iter().zip(before).any(|(now, before)| now < before) {
                failures.push(format!("{at}: categories {categories:?} went back from {before:?}"));
            }
            previous[vp as usize] = categories;
            let truth = pmu::topdown_counted(vp);
            let truth_slots: u64 = truth.iter().sum();
            if collect >= WARM_UP && slots > 0 {
                for (category, (&total, &truth)) in categories.iter().zip(&truth).enumerate() {
                    let shown = 100.0 * total as f64 / slots as f64;
                    let expected = 100.0 * truth as f64 / truth_slots as f64;
                    largest_error = largest_error.max((shown - expected).abs());
                    if (shown - expected).abs() > TOLERANCE_POINTS {
                        failures.push(format!(
                            "{at}: category {category} is {shown:.4}% of the slots, truth {expected:.4}%"
                        ));
                    }
                }
            }
        }
    }
    eprintln!("largest share error after {WARM_UP} collects: {largest_error:.4} point");
    // How many of each kind, and the first and last of each.
    let kinds = ["sum to", "counted", "went back", "% of the slots"].map(|kind| {
        let of_kind: Vec<&String> = failures.iter().filter(|failure| failure.contains(kind)).collect();
        (of_kind.len(), of_kind.first().copied(), of_kind.last().copied())
    });
    assert!(
        failures.is_empty(),
        "{} failures (count, first, last of each kind):\n{kinds:#?}",
        failures.len()
    );
    assert_eq!(pcw::remove_counter(&hardware.name, hardware.full_mask()), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    common::assert_clean();
}

#[test]
fn topdown_exact_on_alder_lake() {
    scenario(&cpuid::ALDER_LAKE_P);
}

#[test]
fn topdown_exact_on_ice_lake() {
    scenario(&cpuid::ICE_LAKE);
}

#[test]
fn topdown_exact_on_sapphire_rapids() {
    scenario(&cpuid::SAPPHIRE_RAPIDS);
}
