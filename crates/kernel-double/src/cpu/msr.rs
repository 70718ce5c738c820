//! The model-specific registers of every virtual processor. The chosen CPU model's PMU registers are
//! the virtual PMU ([`super::pmu`]); any other MSR is plain storage. A write while the driver does not
//! own the PMU (HalAllocateHardwareCounters) is a violation, and so is a write the hardware would
//! refuse (the read-only global status). A PMU register that some processor has but the chosen model
//! lacks (a counter beyond the model's count, the other vendor's registers, any PMU register of a model
//! without one, such as a Hyper-V guest without passthrough) does not exist: reading or writing it
//! would #GP, so either is a violation, a read returns 0 and a write is dropped.

use crate::poison::IgnorePoison;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

static REGISTERS: Mutex<Option<HashMap<(u32, u32), u64>>> = Mutex::new(None);
static WRITES: Mutex<Vec<MsrWrite>> = Mutex::new(Vec::new());
/// The processors whose PMU the driver holds through the HAL (`None`: every processor).
static PMU_OWNED: Mutex<Option<Option<HashSet<u32>>>> = Mutex::new(None);
static READS: AtomicUsize = AtomicUsize::new(0);
/// The processor whose next write of a PMU register raises #GP ([`fault_next_pmu_write`]).
static FAULTING_PROCESSOR: Mutex<Option<u32>> = Mutex::new(None);

/// One wrmsr the driver executed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsrWrite {
    pub processor: u32,
    pub msr: u32,
    pub value: u64,
    pub pmu_owned: bool,
}

/// Set by the HAL double while the driver holds the counters: on every processor (`Some(None)`), on
/// these processors (an allocation's group affinity), or nowhere (`None`).
pub fn set_pmu_owned(owned: Option<Option<HashSet<u32>>>) {
    *PMU_OWNED.lock().ignore_poison() = owned;
}

/// Whether the driver holds counters on any processor.
pub fn pmu_owned() -> bool {
    PMU_OWNED.lock().ignore_poison().is_some()
}

/// Whether the driver holds counters on `processor`.
pub fn pmu_owned_on(processor: u32) -> bool {
    match &*PMU_OWNED.lock().ignore_poison() {
        None => false,
        Some(None) => true,
        Some(Some(processors)) => processors.contains(&processor),
    }
}

const IA32_PERF_METRICS: u32 = 0x329;

/// Whether `msr` is a performance-monitoring register of any processor the double knows: Intel
/// architectural perfmon with up to 8 general and 4 fixed counters, AMD's core counters (legacy and
/// PerfCtrExtCore) and PerfMonV2's global registers.
fn is_any_pmu_msr(msr: u32) -> bool {
    matches!(
        msr,
        0xC1..=0xC8
            | 0x4C1..=0x4C8
            | 0x186..=0x18D
            | 0x309..=0x30C
            | 0x38D..=0x390
            | 0x329
            | 0x345
            | 0xC001_0000..=0xC001_0007
            | 0xC001_0200..=0xC001_020F
            | 0xC000_0300..=0xC000_0302
    )
}

/// Whether `msr` exists on processor `processor`: `Err(why)` for a PMU register its model lacks (#GP
/// on the real machine).
pub fn check_exists(processor: u32, msr: u32) -> Result<(), String> {
    let model = super::cpuid::model_of(processor).name;
    if super::frequency::is_frequency_msr(msr) && !super::frequency::present(processor) {
        return Err(format!("does not exist without CPUID.06H:ECX[0] on {model} (#GP)"));
    }
    if msr == IA32_PERF_METRICS && super::cpuid::perf_metrics_intercepted(processor) {
        return Err(format!(
            "IA32_PERF_METRICS is intercepted by the Microsoft hypervisor on {model}, which does not \
             implement it (#GP), whatever IA32_PERF_CAPABILITIES[15] says"
        ));
    }
    if is_any_pmu_msr(msr) && !super::pmu::is_pmu_msr(processor, msr) {
        return Err(format!("does not exist on {model} (#GP)"));
    }
    Ok(())
}

/// Makes the next wrmsr of a PMU register on `processor` raise #GP, as on a processor or hypervisor
/// that refuses a register its CPUID leaves promise (an uncovered model): the trap handler turns it
/// into the exception the kernel raises for it, unhandled in the driver (`super::trap`). Once.
pub fn fault_next_pmu_write(processor: u32) {
    *FAULTING_PROCESSOR.lock().ignore_poison() = Some(processor);
}

/// Whether this wrmsr of `msr` on `processor` is the one [`fault_next_pmu_write`] armed (disarming it).
pub(crate) fn write_faults(processor: u32, msr: u32) -> bool {
    let mut armed = FAULTING_PROCESSOR.lock().ignore_poison();
    let hit = *armed == Some(processor) && is_any_pmu_msr(msr);
    if hit {
        *armed = None;
    }
    hit
}

/// rdmsr executed so far (every MSR, any processor).
pub fn reads() -> usize {
    READS.load(Ordering::SeqCst)
}

/// rdmsr on `processor`: the virtual PMU's register, or the last value written, 0 if never written
/// (or if the register does not exist: see [`check_exists`]).
pub fn read(processor: u32, msr: u32) -> u64 {
    READS.fetch_add(1, Ordering::SeqCst);
    if check_exists(processor, msr).is_err() {
        return 0;
    }
    if super::frequency::is_frequency_msr(msr) {
        return super::frequency::read(processor, msr);
    }
    if let Some(value) = super::pmu::read(processor, msr) {
        return value;
    }
    let registers = REGISTERS.lock().ignore_poison();
    registers.as_ref().and_then(|map| map.get(&(processor, msr)).copied()).unwrap_or(0)
}

/// wrmsr on `processor`. Returns why the write breaks a rule (the caller records a violation): made
/// without owning the PMU, or refused by the hardware. The write takes effect either way, except a
/// refused one.
pub fn write(processor: u32, msr: u32, value: u64) -> Result<(), String> {
    let pmu_owned = pmu_owned_on(processor);
    let refused = match check_exists(processor, msr) {
        Err(missing) => Some(missing),
        Ok(()) if super::frequency::is_frequency_msr(msr) => {
            Some("APERF/MPERF belong to the operating system, which reads them too: never written".to_owned())
        }
        Ok(()) => match super::pmu::write(processor, msr, value) {
            Some(result) => result.err(),
            None => {
                REGISTERS
                    .lock()
                    .ignore_poison()
                    .get_or_insert_with(HashMap::new)
                    .insert((processor, msr), value);
                None
            }
        },
    };
    WRITES.lock().ignore_poison().push(MsrWrite { processor, msr, value, pmu_owned });
    match (refused, pmu_owned) {
        (Some(why), _) => Err(format!("MSR {msr:#x} on processor {processor}: {why}")),
        (None, false) => Err(format!("MSR {msr:#x} written on processor {processor} without owning the PMU")),
        (None, true) => Ok(()),
    }
}

/// Every wrmsr so far.
pub fn writes() -> Vec<MsrWrite> {
    WRITES.lock().ignore_poison().clone()
}
