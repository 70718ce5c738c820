//! An overflow interrupt between *any* two instructions of the read path, not only at the points where
//! the double regains control (tests/pmi_at_every_instruction*.rs): the real driver on one virtual
//! processor of a model, counters owned, each collect's broadcast worker (the per-processor read, at
//! IPI_LEVEL) single-stepped, and before its driver instruction k (for every k) a unit of work wraps
//! the instructions-retired counter and the PMI lands right there (PROFILE_LEVEL interrupts
//! IPI_LEVEL), unless the worker holds interrupts off there (the read does, with `cli`): then it lands
//! at the `sti`. Each collect must report, for every event, either the count before that work or the
//! count after it; the next collect must be exact; totals never go backwards; every PMI reaches the
//! handler exactly once.

use super::single_step::{install, workers_stepped_with_hook};
use super::*;
use kernel_double::control::pcw;
use kernel_double::cpu::cpuid::{self, CpuModel};
use kernel_double::cpu::{self, pmu, topology};
use kernel_double::status::STATUS_SUCCESS;
use std::sync::atomic::{AtomicBool, Ordering};

/// One unit of work is 16 instructions (pmu::RATES[INSTRUCTIONS]), so a 48-bit counter 8 below its wrap
/// wraps in it.
const NEAR_WRAP: u64 = (1 << 48) - 8;

static LANDED_HERE: AtomicBool = AtomicBool::new(false);
static INJECTED: AtomicBool = AtomicBool::new(false);
/// The worker had interrupts held off (cli) where the PMI was raised: it waits for the `sti`.
static HELD_OFF: AtomicBool = AtomicBool::new(false);

fn overflow_now() {
    INJECTED.store(true, Ordering::SeqCst);
    HELD_OFF.store(!cpu::current().interrupts_enabled(), Ordering::SeqCst);
    LANDED_HERE.store(pmu::overflow_between_instructions(0, 1), Ordering::SeqCst);
}

/// Runs the sweep on one virtual processor of `model` (a PMU with 48-bit counters and overflow
/// interrupts).
pub fn run(model: &'static CpuModel) {
    topology::configure(1, 64);
    cpuid::set_model(model);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    cpu::enter(0);
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    let instructions = pmu::counter_of(0, pmu::INSTRUCTIONS).expect("a counter counts instructions retired");
    install(&driver);

    let boundaries = workers_stepped_with_hook(|| drop(collect_totals()), None);
    assert!(boundaries > 100, "a collect runs {boundaries} driver instructions");
    let mut previous = collect_totals()[0].0;
    let mut held_off_points = 0u64;
    for at in 0..boundaries {
        pmu::preload(0, instructions, NEAR_WRAP);
        let before: [u64; 7] = true_totals(1)[0];
        let delivered = pmu::delivered();
        INJECTED.store(false, Ordering::SeqCst);
        LANDED_HERE.store(false, Ordering::SeqCst);

        let mut reported = [0u64; 7];
        workers_stepped_with_hook(|| reported = collect_totals()[0].0, Some((at, overflow_now)));
        assert!(INJECTED.load(Ordering::SeqCst), "the collect ran fewer than {at} driver instructions");
        let held_off = HELD_OFF.load(Ordering::SeqCst);
        assert!(
            LANDED_HERE.load(Ordering::SeqCst) != held_off,
            "the PMI raised before instruction {at} (interrupts held off: {held_off}) was taken there: {}",
            LANDED_HERE.load(Ordering::SeqCst)
        );
        held_off_points += u64::from(held_off);
        let after = true_totals(1)[0];
        assert_eq!(after[pmu::INSTRUCTIONS], before[pmu::INSTRUCTIONS] + 16, "the work wrapped the counter");
        for event in 0..7 {
            assert!(
                reported[event] == before[event] || reported[event] == after[event],
                "PMI before driver instruction {at}: event {event} reported {}, before {} after {}",
                reported[event],
                before[event],
                after[event]
            );
            assert!(reported[event] >= previous[event], "event {event} went backwards at instruction {at}");
        }

        let exact = collect_totals()[0].0;
        assert_eq!(exact, after, "the collect after the PMI at instruction {at} is exact");
        assert_eq!(pmu::delivered() - delivered, 1, "one PMI, delivered once (instruction {at})");
        previous = exact;
    }
    assert!(
        held_off_points > 0 && held_off_points < boundaries,
        "the read holds interrupts off, only the read"
    );
    println!(
        "{}: {boundaries} instruction boundaries of the read worker: the PMI landed at each of them, or \
         (at {held_off_points} inside the read, interrupts held off) right after it",
        model.name
    );

    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    assert_clean();
}
