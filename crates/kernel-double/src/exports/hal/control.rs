//! Test control of the fake hal exports: what tests and tools call to steer and inspect them.
//! A child of the exports module, so it reaches its state; the driver calls none of it.

pub use super::takes_resource_lists;
use super::*;

/// Makes the PMU arbiter report another actor (`true`: STATUS_DEVICE_BUSY for every allocation) or
/// none.
pub fn set_arbiter_busy(busy: bool) {
    ARBITER_BUSY.store(busy, Ordering::SeqCst);
}

/// Chooses how a HAL without resource lists refuses one.
pub fn set_list_refusal(refusal: ListRefusal) {
    *LIST_REFUSAL.lock().ignore_poison() = refusal;
}

/// HalAllocateHardwareCounters calls made so far (valid or not): the sequence numbers
/// [`fail_allocation`] takes.
pub fn allocation_calls() -> u64 {
    ALLOCATIONS.calls()
}

/// Makes HalAllocateHardwareCounters call number `index` (0-based, see [`allocation_calls`]) fail with
/// `status` and a NULL handle. Several calls may be set to fail; each failure is used once.
pub fn fail_allocation(index: u64, status: i32) {
    ALLOCATIONS.fail(index, status);
}

/// Forgets the HalAllocateHardwareCounters failures not yet injected.
pub fn clear_allocation_failures() {
    ALLOCATIONS.clear();
}

/// The owner of the first allocation held (the only one, unless the driver allocates per core type).
pub fn owner() -> Option<Owner> {
    HELD.lock().ignore_poison().first().map(|allocation| allocation.owner)
}

/// Every allocation held now.
pub fn allocations() -> Vec<Allocation> {
    HELD.lock().ignore_poison().clone()
}

/// Every allocation granted since the process started, in order: the double's HAL log.
pub fn allocation_log() -> Vec<Allocation> {
    LOG.lock().ignore_poison().clone()
}

/// Another HAL client's resource list (WPR/xperf PMC sampling, VTune, a second driver): `counters`
/// (IA32_PERF_GLOBAL_CTRL bit numbers) on `processors` (`None`: every processor), asked from
/// processor `caller`, through the same checks as the driver's (the arbiter, the vendor's interface,
/// the caller's counter table, per-processor reservation). Returns its handle, or the status
/// HalAllocateHardwareCounters would return.
pub fn allocate_for_another_client(
    caller: u32,
    processors: Option<BTreeSet<u32>>,
    counters: u64,
) -> Result<usize, i32> {
    if ARBITER_BUSY.load(Ordering::SeqCst) {
        return Err(STATUS_DEVICE_BUSY);
    }
    if !takes_resource_lists() {
        return Err(STATUS_INSUFFICIENT_RESOURCES);
    }
    let mut held = HELD.lock().ignore_poison();
    let allocation =
        reserve(&mut held, caller, processors, Some(counters), |handle| Owner::AnotherList { handle })?;
    match allocation.owner {
        Owner::AnotherList { handle } => Ok(handle),
        owner => unreachable!("another client's allocation, not {owner:?}"),
    }
}

/// Frees another client's allocation ([`allocate_for_another_client`]). Panics if `handle` holds none.
pub fn free_for_another_client(handle: usize) {
    let mut held = HELD.lock().ignore_poison();
    let position = held
        .iter()
        .position(|allocation| allocation.owner == Owner::AnotherList { handle })
        .unwrap_or_else(|| panic!("{handle:#x} holds no counters"));
    held.remove(position);
}

pub use super::table::{Interface, set_interface};

/// The counters a resource list may name when HalAllocateHardwareCounters runs on processor
/// `caller`, on the Windows build in effect (IA32_PERF_GLOBAL_CTRL bit numbers; see the module docs).
pub fn counter_table(caller: u32) -> u64 {
    super::table::allowed(caller)
}

/// Makes another client own the whole PMU (`true`) or releases it (`false`).
pub fn set_other_client_owns(owns: bool) {
    let mut held = HELD.lock().ignore_poison();
    match (owns, held.as_slice()) {
        (true, []) => held.push(Allocation { owner: Owner::OtherClient, processors: None, counters: None }),
        (false, [Allocation { owner: Owner::OtherClient, .. }]) => held.clear(),
        (_, current) => panic!("cannot change ownership from {current:?}"),
    }
}

/// The HAL's own use of a general-purpose counter, as its profile interface serves WPR/xperf PMC
/// sampling while no client holds counters: it zeroes counter `counter` of processor `vp`, writes its
/// event select to count unhalted core cycles in both rings (Intel IA32_PERFEVTSELx 0x3C with USR,
/// OS and EN; AMD PerfCtl 0x76 likewise), never touching the global control (it relies on the
/// power-on enables, observed in decompiled Windows 10/11 HAL builds), runs `units` of work there,
/// reads the counter, then clears the select and the counter again. Returns what the counter
/// counted: `units` times the core-cycle rate where the processor's PMU was given back as the HAL
/// expects, 0 where a client left the counter's global enable clear. Panics while a client owns the
/// counters (the HAL's arbiter would not let the profile interface have them) or if the model has no
/// such counter.
pub fn hal_profile(vp: u32, counter: u32, units: u64) -> u64 {
    const USR_OS_EN: u64 = (1 << 16) | (1 << 17) | (1 << 22);
    assert_eq!(owner(), None, "the HAL profiles only while no client owns the counters");
    let (select, count, event) = match crate::cpu::cpuid::model_of(vp).pmu {
        cpuid::PmuKind::Intel { .. } => (0x186 + counter, 0xC1 + counter, 0x3C),
        cpuid::PmuKind::Amd { .. } => (0xC001_0200 + 2 * counter, 0xC001_0201 + 2 * counter, 0x76),
        cpuid::PmuKind::None => panic!("processor {vp} has no counters"),
    };
    let write = |msr: u32, value: u64| {
        pmu::write(vp, msr, value)
            .unwrap_or_else(|| panic!("MSR {msr:#x} is not a counter register of processor {vp}"))
            .unwrap_or_else(|why| panic!("the HAL's own write faulted: {why}"));
    };
    write(select, 0);
    write(count, 0);
    write(select, event | USR_OS_EN);
    pmu::step(vp, units);
    let counted = pmu::read(vp, count).expect("a counter register");
    write(select, 0);
    write(count, 0);
    counted
}

/// Moves KeQueryPerformanceCounter forward by `ticks` (of [`PERFORMANCE_FREQUENCY`]) at once, as if
/// that much time had passed: the clock stays monotonic, and keeps running with the host's time
/// unless [`stop_host_clock`] stopped that.
pub fn advance_clock(ticks: i64) {
    assert!(ticks >= 0, "the performance counter never goes back");
    // The counter runs at 10 MHz: a tick is the kernel clock's 100 ns unit.
    crate::exports::ke::advance_time(ticks as u64);
}

/// Moves KeQueryPerformanceCounter forward by `ticks`, at most a second at a time, and after each step
/// waits until the driver's system threads have done what came due in it
/// (`ke::settle_system_threads`): what a driver does every second (the memory controller's poll of its
/// 32-bit counters) happens every second, as on a real clock, instead of once for a minutes-long jump.
pub fn advance_clock_by_seconds(ticks: i64) {
    let mut left = ticks;
    while left > 0 {
        let step = left.min(PERFORMANCE_FREQUENCY);
        advance_clock(step);
        crate::exports::ke::control::settle_system_threads();
        left -= step;
    }
}

/// Stops the host's time from moving KeQueryPerformanceCounter (and the system time and every timed
/// wait) for the rest of the process: from now on only [`advance_clock`] moves them, so a test decides
/// when a driver's timer fires, whatever the machine's load.
pub fn stop_host_clock() {
    crate::exports::ke::stop_host_time();
}

/// KeQueryPerformanceCounter now, as the driver would read it (ticks of [`PERFORMANCE_FREQUENCY`]).
pub fn clock() -> i64 {
    crate::exports::ke::interrupt_time()
}
