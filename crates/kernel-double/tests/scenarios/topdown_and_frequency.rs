//! Top-down level 1 (fixed counter 3 with IA32_PERF_METRICS) and Relative Frequency (APERF/MPERF),
//! from the real pmupcw.sys through the PDH consumer, against the virtual PMU's ground truth.
//!
//! PERF_SAMPLE_FRACTION shows 100 (X1 - X0) / (B1 - B0)
//! (https://learn.microsoft.com/windows/win32/wmisdk/counter-algorithm-counter-types): the four
//! top-down percentages share one base (all slots), so they sum to 100 up to IA32_PERF_METRICS' 1/255
//! resolution and the scaling's rounding.

use crate::common;

use kernel_double::consumer::pdh::Value;
use kernel_double::consumer::{self, Column, Counterset, Sample, TOTAL};
use kernel_double::control::pcw;
use kernel_double::cpu::{cpuid, frequency, pmu, topology};
use kernel_double::status::STATUS_SUCCESS;

/// Manifest ids: the four top-down percentages, the slot totals (all slots, then the four
/// categories), Relative Frequency, APERF and MPERF Cycles, and the status counterset's Top-down
/// Source.
const TOPDOWN_PERCENTS: [u32; 4] = [21, 23, 25, 27];
const SLOTS_TOTAL: u32 = 29;
const CATEGORY_TOTALS: [u32; 4] = [30, 31, 32, 33];
const RELATIVE_FREQUENCY: u32 = 62;
const APERF_CYCLES: u32 = 34;
const MPERF_CYCLES: u32 = 35;
const TOPDOWN_SOURCE: usize = 9;

struct Run {
    hardware: Counterset,
    first: Sample,
    second: Sample,
}

impl Run {
    /// Loads the driver on `model`, samples, runs a different amount of work on each processor,
    /// samples again.
    fn new(model: &'static cpuid::CpuModel) -> (kernel_double::driver::Driver, Run) {
        let (driver, hardware) = common::query_hardware_counters(model);
        for vp in 0..topology::processor_count() {
            pmu::step(vp, 1_000); // counted before the first sample: not in the interval
        }
        let first = consumer::sample(&hardware).unwrap();
        for vp in 0..topology::processor_count() {
            pmu::step(vp, 2_000_000 * u64::from(vp + 1));
        }
        let second = consumer::sample(&hardware).unwrap();
        (driver, Run { hardware, first, second })
    }

    fn shown(&self, instance: &str, id: u32) -> Value {
        let column =
            Column { instance: Some(instance.to_string()), counter: self.hardware.index_of(id).unwrap() };
        consumer::values(
            &self.hardware,
            &[column],
            Some(&self.first),
            &self.second,
            consumer::Formatter::Uncapped,
        )[0]
    }

    fn percent(&self, instance: &str, id: u32) -> f64 {
        match self.shown(instance, id) {
            Value::Value(value) => value,
            other => panic!("{instance}: counter {id} is {other:?}"),
        }
    }

    fn raw(&self, instance: &str, id: u32) -> u64 {
        let values = self.second.values_of(&self.hardware, instance).expect("instance sampled");
        values[self.hardware.index_of(id).unwrap()].expect("value")
    }

    fn finish(self, mut driver: kernel_double::driver::Driver) {
        assert_eq!(pcw::remove_counter(&self.hardware.name, self.hardware.full_mask()), Some(STATUS_SUCCESS));
        assert!(driver.unload());
        common::assert_clean();
    }
}

fn status(position: usize) -> u64 {
    common::driver_status()[position]
}

#[test]
fn topdown_from_perf_metrics_on_alder_lake() {
    let (driver, run) = Run::new(&cpuid::ALDER_LAKE_P);
    assert_eq!(status(TOPDOWN_SOURCE), 1, "Top-down Source: fixed counter 3 and IA32_PERF_METRICS");
    let slots: u64 = pmu::TOPDOWN_RATES.iter().sum();
    let expected: Vec<f64> =
        pmu::TOPDOWN_RATES.iter().map(|&rate| 100.0 * rate as f64 / slots as f64).collect();
    let instances: Vec<String> = (0..topology::processor_count()).map(|vp| format!("0,{vp}")).collect();
    for instance in instances.iter().map(String::as_str).chain([TOTAL]) {
        let percents = TOPDOWN_PERCENTS.map(|id| run.percent(instance, id));
        let sum: f64 = percents.iter().sum();
        assert!((sum - 100.0).abs() <= 1.0, "{instance}: {percents:?} sum to {sum}");
        for (shown, expected) in percents.iter().zip(&expected) {
            // One 1/255 step of IA32_PERF_METRICS is 0.4 percentage points.
            assert!((shown - expected).abs() <= 0.5, "{instance}: {percents:?}, expected {expected:?}");
        }
    }
    for (vp, instance) in instances.iter().enumerate() {
        let vp = vp as u32;
        assert_eq!(run.raw(instance, SLOTS_TOTAL), pmu::counted(vp, pmu::TOPDOWN_SLOTS), "{instance}: slots");
        let truth = pmu::topdown_counted(vp);
        let categories = CATEGORY_TOTALS.map(|id| run.raw(instance, id));
        for (total, truth) in categories.iter().zip(truth) {
            // Each read splits its slots in 1/255ths: within half a step of the truth per read.
            let tolerance = pmu::counted(vp, pmu::TOPDOWN_SLOTS) / 255;
            assert!(total.abs_diff(truth) <= tolerance, "{instance}: {categories:?} vs {truth:?}");
        }
    }
    run.finish(driver);
}

#[test]
fn relative_frequency_and_no_topdown_on_skylake() {
    let (driver, run) = Run::new(&cpuid::SKYLAKE);
    assert_eq!(status(TOPDOWN_SOURCE), 0, "Top-down Source: unavailable without IA32_PERF_METRICS");
    // A ratio, as PCM's FREQ: 20 core cycles per 18 reference cycles is 1.111.
    let expected = pmu::RATES[pmu::CORE_CYCLES] as f64 / pmu::RATES[pmu::REFERENCE_CYCLES] as f64;
    for instance in ["0,0", "0,1", TOTAL] {
        let shown = run.percent(instance, RELATIVE_FREQUENCY);
        // APERF over 100 x MPERF (64-bit) as a PERF_PRECISION_TIMESTAMP base: exact, within 1e-4.
        assert!(
            (shown - expected).abs() <= 1e-4 * expected,
            "{instance}: Relative Frequency {shown}, expected {expected}"
        );
        // Above 1, yet no consumer caps it: what windows_exporter's PDH calls show.
        let capping = Column {
            instance: Some(instance.to_string()),
            counter: run.hardware.index_of(RELATIVE_FREQUENCY).unwrap(),
        };
        let shown_capped = consumer::values(
            &run.hardware,
            &[capping],
            Some(&run.first),
            &run.second,
            consumer::Formatter::WindowsExporter,
        )[0];
        assert_eq!(shown_capped, Value::Value(shown), "{instance}: capped");
        assert_eq!(
            run.raw(instance, SLOTS_TOTAL),
            0,
            "{instance}: no top-down slots without fixed counter 3"
        );
    }
    // The raw APERF and MPERF, for an agent computing frequency from totals.
    for vp in 0..topology::processor_count() {
        let (aperf, mperf) = frequency::counted(vp);
        let instance = format!("0,{vp}");
        assert_eq!((run.raw(&instance, APERF_CYCLES), run.raw(&instance, MPERF_CYCLES)), (aperf, mperf));
    }
    // The driver only reads APERF and MPERF; the double counts any write as a violation (assert_clean).
    assert!(frequency::counted(0).0 > 0);
    run.finish(driver);
}

#[test]
fn no_relative_frequency_without_cpuid_leaf_6() {
    // A KVM guest given the PMU but not APERF/MPERF (no leaf 6): touching them would #GP.
    let (driver, run) = Run::new(&cpuid::KVM_GUEST_ZEN2_PMU_WITHOUT_MPERF);
    assert!(!frequency::present(0));
    assert_eq!(run.raw("0,0", RELATIVE_FREQUENCY), 0);
    run.finish(driver);
}
