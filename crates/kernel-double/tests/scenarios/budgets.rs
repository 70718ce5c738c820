//! The bench's figures held under their ceilings: the real driver on the double's Skylake model (7
//! counters), in the bench's configurations (common/measure.rs, which benches/double.rs prints from),
//! counted, never timed. A figure over its ceiling fails with the figure, the ceiling and where to
//! look; `cargo make bench` prints every figure, docs/internals.md ("Benchmark") what each one buys.
//!
//! Each ceiling is the project's target for that figure, not today's figure plus slack: a change that
//! needs more raises the constant here and says why in docs/internals.md.

use crate::common::death::{is_child, run_child_with};
use crate::common::measure::{self, SKYLAKE_COUNTERS};
use crate::common::{self};

/// Driver instructions per processor per fresh collect on 64 processors (the collect's whole cost
/// over 64): the read path's target since the interrupts-off rdpmc read (docs/internals.md,
/// "Benchmark"; 1,480 before it). 398 when this test was written (25,477 per collect).
const FRESH_COLLECT_INSTRUCTIONS_PER_PROCESSOR: u64 = 400;

/// Driver instructions per processor for a collect served from the last read on 64 processors: a
/// tenth of a fresh collect's ceiling, the rate bound's promise that a served collect reads no
/// processor and costs "far less" (docs/security.md). 38 when this test was written (2,462 per
/// collect: PcwAddInstance for each block and the collect time summed in nanoseconds).
const SERVED_COLLECT_INSTRUCTIONS_PER_PROCESSOR: u64 = FRESH_COLLECT_INSTRUCTIONS_PER_PROCESSOR / 10;

/// Reads per processor per fresh collect: one rdpmc per counter, and 4 rdmsr (global status, one
/// programming check, APERF, MPERF) (docs/internals.md, "Exact 64-bit counts"; 29 rdmsr before).
const RDPMC_PER_PROCESSOR: u64 = SKYLAKE_COUNTERS;
const RDMSR_PER_PROCESSOR: u64 = 4;

/// Non-paged pool per processor with counters owned (the slope from 4 to 64 processors), and the
/// fixed part (at 4 processors, less 4 times the slope): the memory targets (docs/internals.md,
/// "Benchmark"; src/session/core_pmu/processor_state.rs bounds the per-processor state to the same 640 at
/// compile time). 612 and 2,306 when this test was written.
const POOL_BYTES_PER_PROCESSOR: u64 = 640;
const POOL_BYTES_FIXED: u64 = 8192;

/// The overflow handler's driver instructions per set bit of the overflow mask, and per interrupt
/// whatever the bits: the project's budget for the handler, which tests/binary_checks.rs holds
/// statically on the image's `.pmi` section (40 per set bit, 64 outside the loop). 24 and 29 when
/// this test was written (53 for one bit, 197 for seven).
const PMI_INSTRUCTIONS_PER_BIT: f64 = 40.0;
const PMI_INSTRUCTIONS_FIXED: f64 = 64.0;

/// The processor counts of the bench's two configurations.
const FEW: u32 = 4;
const MANY: u32 = 64;

/// Where a read-path figure's cost comes from.
const READ_PATH: &str = "the per-processor read worker (rdpmc, status, the programming check) and \
                         what it stores into the processor's published block";

#[test]
fn a_fresh_collect_stays_within_its_instruction_and_read_budget() {
    let driver = measure::start(MANY, common::load);
    // One single-stepped collect (the bench averages two): a 64-processor collect traps on every one
    // of some 400,000 instructions, the driver's and the double's.
    let stepped = measure::fresh_collect_instructions(&driver, 1);
    let counts = measure::counted(|| (0..10).for_each(|_| measure::collect()));
    measure::stop(driver);
    let per_processor = stepped.driver as f64 / f64::from(MANY);
    println!(
        "fresh collect on {MANY} processors: {} driver instructions ({per_processor:.1} per processor)",
        stepped.driver
    );
    assert!(
        stepped.driver <= FRESH_COLLECT_INSTRUCTIONS_PER_PROCESSOR * u64::from(MANY),
        "a fresh collect on {MANY} Skylake processors ran {} driver instructions, {per_processor:.1} per \
         processor, over FRESH_COLLECT_INSTRUCTIONS_PER_PROCESSOR ({FRESH_COLLECT_INSTRUCTIONS_PER_PROCESSOR}): \
         look at {READ_PATH}; `cargo make bench` prints the figures",
        stepped.driver
    );
    let reads = 10 * u64::from(MANY);
    for (what, count, name, ceiling) in [
        ("rdpmc", counts.rdpmc, "RDPMC_PER_PROCESSOR", RDPMC_PER_PROCESSOR),
        ("rdmsr", counts.rdmsr, "RDMSR_PER_PROCESSOR", RDMSR_PER_PROCESSOR),
    ] {
        assert!(
            count <= ceiling * reads,
            "10 fresh collects on {MANY} Skylake processors ran {count} {what}, {:.2} per processor per \
             collect, over {name} ({ceiling}): look at {READ_PATH}",
            count as f64 / reads as f64
        );
    }
    assert_eq!(
        counts.allocations, 0,
        "10 fresh collects allocated pool {} times: a collect allocates nothing",
        counts.allocations
    );
    assert_eq!(
        counts.ipis, 10,
        "10 fresh collects made {} KeIpiGenericCall calls, not one each",
        counts.ipis
    );
}

#[test]
fn a_served_collect_stays_within_its_instruction_budget() {
    measure::longest_collect_interval();
    let driver = measure::start(MANY, common::load);
    let instructions = measure::served_collect_instructions(&driver);
    measure::stop(driver);
    let per_processor = instructions as f64 / f64::from(MANY);
    println!(
        "served collect on {MANY} processors: {instructions} driver instructions ({per_processor:.1} per processor)"
    );
    assert!(
        instructions <= SERVED_COLLECT_INSTRUCTIONS_PER_PROCESSOR * u64::from(MANY),
        "a collect served from the last read on {MANY} Skylake processors ran {instructions} driver \
         instructions, {per_processor:.1} per processor, over SERVED_COLLECT_INSTRUCTIONS_PER_PROCESSOR \
         ({SERVED_COLLECT_INSTRUCTIONS_PER_PROCESSOR}): look at what a served collect does for each \
         instance (PcwAddInstance of the published block) and once (the clock, the collect time)"
    );
}

#[test]
fn the_overflow_handler_stays_within_its_instruction_budget() {
    let driver = measure::start(FEW, common::load);
    let pmi = measure::pmi_instructions(&driver);
    measure::stop(driver);
    println!("overflow handler: {:.1} + {:.1} per set bit ({:?})", pmi.fixed, pmi.per_bit, pmi.points);
    let look = "look at the handler in the .pmi section (`cargo make bench` prints its disassembly)";
    assert!(
        pmi.per_bit <= PMI_INSTRUCTIONS_PER_BIT,
        "the overflow handler runs {:.1} driver instructions per set bit, over PMI_INSTRUCTIONS_PER_BIT \
         ({PMI_INSTRUCTIONS_PER_BIT}) (instructions per set bits: {:?}): {look}",
        pmi.per_bit,
        pmi.points
    );
    assert!(
        pmi.fixed <= PMI_INSTRUCTIONS_FIXED,
        "the overflow handler runs {:.1} driver instructions per interrupt whatever the bits, over \
         PMI_INSTRUCTIONS_FIXED ({PMI_INSTRUCTIONS_FIXED}) (instructions per set bits: {:?}): {look}",
        pmi.fixed,
        pmi.points
    );
}

/// The child's processor count, for [`non_paged_pool_stays_within_its_budget`].
const PROCESSORS_ENVIRONMENT: &str = "KERNEL_DOUBLE_BUDGET_PROCESSORS";

#[test]
fn non_paged_pool_stays_within_its_budget() {
    if is_child() {
        let processors = std::env::var(PROCESSORS_ENVIRONMENT).unwrap().parse().unwrap();
        let driver = measure::start(processors, common::load);
        measure::report("pool_bytes", measure::memory(&driver).pool_bytes as f64);
        measure::stop(driver);
        return;
    }
    let pool = |processors: u32| {
        let path = concat!(module_path!(), "::non_paged_pool_stays_within_its_budget");
        let (output, stderr) = run_child_with(path, &[(PROCESSORS_ENVIRONMENT, processors.to_string())]);
        assert!(output.status.success(), "the child on {processors} processors failed:\n{stderr}");
        let results = measure::results(&String::from_utf8_lossy(&output.stdout));
        results.iter().find(|(key, _)| key == "pool_bytes").expect("the child reports its pool").1 as u64
    };
    let (few, many) = (pool(FEW), pool(MANY));
    let per_processor = (many - few) as f64 / f64::from(MANY - FEW);
    let fixed = few as f64 - f64::from(FEW) * per_processor;
    println!(
        "non-paged pool: {few} bytes on {FEW} processors, {many} on {MANY}: {per_processor:.1} per processor + {fixed:.0}"
    );
    assert!(
        per_processor <= POOL_BYTES_PER_PROCESSOR as f64,
        "the driver holds {per_processor:.1} bytes of non-paged pool per processor with counters owned \
         ({few} on {FEW} processors, {many} on {MANY}), over POOL_BYTES_PER_PROCESSOR \
         ({POOL_BYTES_PER_PROCESSOR}): look at the per-processor state and block the session allocates \
         (the overflow table, the counters' bases and values, the published block)"
    );
    assert!(
        fixed <= POOL_BYTES_FIXED as f64,
        "the driver holds {fixed:.0} bytes of non-paged pool besides its per-processor state ({few} on {FEW} \
         processors, {many} on {MANY}), over POOL_BYTES_FIXED ({POOL_BYTES_FIXED}): look at what \
         DriverEntry and the acquisition allocate once (the session's parts and plans per core type)"
    );
}
