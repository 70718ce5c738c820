//! The model-specific registers of every virtual processor. For now only storage: no architectural
//! PMU semantics yet. A write while the driver does not own the PMU (HalAllocateHardwareCounters) is a
//! violation.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static REGISTERS: Mutex<Option<HashMap<(u32, u32), u64>>> = Mutex::new(None);
static WRITES: Mutex<Vec<MsrWrite>> = Mutex::new(Vec::new());
static PMU_OWNED: AtomicBool = AtomicBool::new(false);

/// One wrmsr the driver executed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsrWrite {
    pub processor: u32,
    pub msr: u32,
    pub value: u64,
    pub pmu_owned: bool,
}

/// Set by the HAL double while the driver holds the counters.
pub fn set_pmu_owned(owned: bool) {
    PMU_OWNED.store(owned, Ordering::SeqCst);
}

pub fn pmu_owned() -> bool {
    PMU_OWNED.load(Ordering::SeqCst)
}

/// rdmsr on `processor`: the last value written, 0 if never written.
pub fn read(processor: u32, msr: u32) -> u64 {
    let registers = REGISTERS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    registers.as_ref().and_then(|map| map.get(&(processor, msr)).copied()).unwrap_or(0)
}

/// wrmsr on `processor`. Returns whether the PMU was owned (the caller records a violation if not).
pub fn write(processor: u32, msr: u32, value: u64) -> bool {
    let pmu_owned = pmu_owned();
    REGISTERS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert((processor, msr), value);
    WRITES.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(MsrWrite {
        processor,
        msr,
        value,
        pmu_owned,
    });
    pmu_owned
}

/// Every wrmsr so far.
pub fn writes() -> Vec<MsrWrite> {
    WRITES.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
}
