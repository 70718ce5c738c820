//! The PMU client: owns the hardware counters while consumers are active, programs them on every
//! processor, extends them to exact 64-bit counts and hands per-processor snapshots to the collect
//! callback. Driver-only (it calls the kernel boundary); the logic it runs is in the pure modules
//! next to it (model, events, program, fold, poll).
//!
//! Concurrency:
//! * Ownership changes (acquire, release) happen at PASSIVE_LEVEL under the write side of `session`;
//!   collects take the read side with `try_read` and never wait: during a change they report the last
//!   snapshots.
//! * The overflow handler reaches the per-processor counters through [`PMI_TARGET`], published before
//!   the counters are owned with an interrupt and withdrawn after they are freed.
//! * Each processor's counters are read and written only on that processor, inside the all-processor
//!   call (IPI_LEVEL, which the PMI at PROFILE_LEVEL can interrupt: the read protocol retries) or by
//!   its overflow handler.

use super::events::{CounterPlan, Event, plan_with_pmi};
use super::fold::{DEFAULT_MAX_ATTEMPTS, OwnedMask, Placement, ProcessorCounters};
use super::model::Vendor;
use super::model::{Detection, PmuModel, Unusable};
use super::poll::{DEFAULT_SAFETY, MAX_EVENT_HZ, PollCounters, poll_period_100ns};
use super::program::{self, Msrs};
use crate::kernel::all_processors::run_on_every_processor;
use crate::kernel::hal_counters::{AcquireError, OverflowHandler, Ownership, Request};
use crate::kernel::pool::{PoolSlice, Zeroable};
use crate::kernel::power::PowerListener;
use crate::kernel::system_thread::{Periodic, Waker};
use crate::kernel::{clock, msr, pmi};
use crate::pcw::driver_status::{DriverStatus, PmuState};
use crate::pcw::hardware_counters::{CountSource, EventCounts};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// How long the counters stay owned with no query activity (CollectData or AddCounter), at least, in
/// 100 ns units (2 s): a consumer that restarts its query (perfmon changing views, typeperf in a
/// loop) does not make the driver give the PMU up and take it back.
const RELEASE_HYSTERESIS_100NS: u64 = 20_000_000;
/// A consumer that collects every N seconds keeps the counters for 3 N without a collect (at least
/// the hysteresis, at most [`MAX_IDLE_100NS`]), so that an agent sampling every 15 or 60 s sees real
/// counts, not a PMU taken back at each sample.
const IDLE_INTERVALS: u64 = 3;
/// The longest the counters stay owned without a collect: 10 minutes.
const MAX_IDLE_100NS: u64 = 6_000_000_000;
/// How often a busy or failed PMU is asked for again, at most (1 s), on the next query activity.
const RETRY_100NS: u64 = 10_000_000;

/// One processor's state: the overflow counts and reported values, and the polling state used when
/// there is no overflow interrupt. Cache-line aligned so processors never share a line.
#[repr(C, align(64))]
pub struct PerProcessor {
    counters: ProcessorCounters,
    poll: PollCounters,
}

// SAFETY: atomics only; all zero is "nothing counted yet", the state `new` builds.
unsafe impl Zeroable for PerProcessor {}

const _: () = assert!(core::mem::size_of::<PerProcessor>() <= 512, "at most 512 bytes per processor");

/// rdmsr/wrmsr on the current processor; only made while the counters are owned.
struct OwnedMsrs;

impl Msrs for OwnedMsrs {
    fn read(&mut self, register: u32) -> u64 {
        // SAFETY: the plan names only MSRs CPUID reported; made only inside an owned session.
        unsafe { msr::read(register) }
    }
    fn write(&mut self, register: u32, value: u64) {
        // SAFETY: as above, and the counters are owned (HalAllocateHardwareCounters succeeded).
        unsafe { msr::write(register, value) }
    }
}

/// An owned session: the HAL handle and how the counters run.
struct Session {
    ownership: Ownership,
    plan: CounterPlan,
    owned: OwnedMask,
}

pub struct PmuClient {
    detection: Detection,
    processors: PoolSlice<PerProcessor>,
    session: spin::RwLock<Option<Session>>,
    /// The session's OwnedMask bits for the overflow handler, which may not take even a read lock:
    /// set before the counters are enabled, cleared after they are stopped.
    pmi_owned: AtomicU64,
    /// Performance-counter time (clock::performance_counter) of the last CollectData or AddCounter:
    /// PCW promises no pairing of AddCounter and RemoveCounter, and registry consumers
    /// (HKEY_PERFORMANCE_DATA, WMI's raw classes) only collect, so activity, not a query count, keeps
    /// the counters owned.
    last_activity: AtomicU64,
    /// Performance-counter time of the last collect, and the interval before it (100 ns units).
    last_collect: AtomicU64,
    collect_interval: AtomicU64,
    /// Performance-counter time of the last acquisition attempt (rate-limits retries).
    last_attempt: AtomicU64,
    /// An acquisition handed to the housekeeping thread (activity above PASSIVE_LEVEL).
    deferred_acquire: AtomicBool,
    /// Wakes the housekeeping thread when its schedule changes (a session opened, the last query went
    /// away), so that it can sleep without a timeout while nothing is owned.
    waker: spin::RwLock<Option<Waker>>,
    status: &'static DriverStatus,
}

/// The client the overflow handler folds into, while a session with an interrupt is open.
static PMI_TARGET: pmi::Target<PmuClient> = pmi::Target::new();

/// PHYSICAL_COUNTER_OVERFLOW_HANDLER. Resident, lock-free, no calls: see kernel/pmi.rs.
#[unsafe(link_section = ".pmi")]
unsafe extern "system" fn overflow_handler(
    overflow_bits: u64,
    _owning_handle: windows_sys::Win32::Foundation::HANDLE,
) {
    let Some(client) = PMI_TARGET.get() else { return };
    let owned = client.pmi_owned_mask();
    if let Some(processor) = client.processors.get(pmi::current_processor_index() as usize) {
        processor.counters.fold(overflow_bits, owned);
    }
}

impl PmuClient {
    /// Detects the PMU (CPUID on this processor: hybrid processors report the same architectural
    /// leaf on every core) and allocates per-processor state. No MSR is touched.
    pub fn new(processor_count: usize, status: &'static DriverStatus) -> Option<Self> {
        let detection = super::model::detect(raw_cpuid::CpuIdReaderNative);
        let processors = PoolSlice::zeroed(processor_count)?;
        status.set_pmu_state(match detection {
            Detection::Usable(_) => PmuState::Idle,
            Detection::Unusable(Unusable::HypervisorWithoutPmu) => PmuState::UnsupportedHypervisor,
            Detection::Unusable(Unusable::NoArchitecturalPerfmon | Unusable::PerfmonVersionTooOld) => {
                PmuState::UnsupportedNoArchitecturalPerfmon
            }
            Detection::Unusable(Unusable::UnknownVendor) => PmuState::UnsupportedVendor,
            Detection::Unusable(Unusable::TooFewCounters) => PmuState::UnsupportedTooFewCounters,
        });
        Some(PmuClient {
            detection,
            processors,
            session: spin::RwLock::new(None),
            pmi_owned: AtomicU64::new(0),
            last_activity: AtomicU64::new(0),
            last_collect: AtomicU64::new(0),
            collect_interval: AtomicU64::new(0),
            last_attempt: AtomicU64::new(0),
            deferred_acquire: AtomicBool::new(false),
            waker: spin::RwLock::new(None),
            status,
        })
    }

    pub fn detection(&self) -> Detection {
        self.detection
    }

    fn model(&self) -> Option<PmuModel> {
        match self.detection {
            Detection::Usable(model) => Some(model),
            Detection::Unusable(_) => None,
        }
    }

    /// The owned mask the handler folds with: one atomic load.
    #[inline(always)]
    fn pmi_owned_mask(&self) -> OwnedMask {
        OwnedMask::new(self.pmi_owned.load(Ordering::Acquire)).unwrap_or(OwnedMask::EMPTY)
    }

    /// Owns and starts the counters on every processor, if there is a usable PMU and no session yet.
    /// PASSIVE_LEVEL.
    pub fn acquire(&self) {
        let Some(model) = self.model() else { return };
        let mut session = self.session.write();
        if session.is_some() {
            return;
        }
        let wanted = plan_with_pmi(&model, model.overflow_interrupt);
        let mut hal_indexes = [0u32; super::events::MAX_ASSIGNMENTS];
        for (index, assignment) in hal_indexes.iter_mut().zip(wanted.iter()) {
            *index = assignment.hal_index;
        }
        let handler: Option<OverflowHandler> = model.overflow_interrupt.then_some(overflow_handler);
        if handler.is_some() {
            PMI_TARGET.publish(self);
        }
        // Only the Intel HAL takes a resource list; elsewhere ask for the whole PMU at once.
        let request = match model.vendor {
            Vendor::Intel => Request::Listed { counters: &hal_indexes[..wanted.len()], handler },
            _ => Request::WholePmu,
        };
        self.last_attempt.store(clock::performance_counter(), Ordering::Release);
        let ownership = match Ownership::acquire(request) {
            Ok(ownership) => ownership,
            Err(error) => {
                PMI_TARGET.withdraw();
                self.status.record_ownership_failure();
                self.status.set_pmu_state(if error == AcquireError::Busy {
                    PmuState::Busy
                } else {
                    PmuState::Failed
                });
                log_error!("HalAllocateHardwareCounters refused the counters: {error:?}");
                return;
            }
        };
        // Without an interrupt (whole-PMU fallback, or no PMI on this model) the counters are polled.
        let plan = if ownership.has_overflow_interrupt() { wanted } else { plan_with_pmi(&model, false) };
        if !ownership.has_overflow_interrupt() {
            PMI_TARGET.withdraw();
        }
        let owned = if ownership.has_overflow_interrupt() {
            OwnedMask::new(plan.global_ctrl()).unwrap_or(OwnedMask::EMPTY)
        } else {
            OwnedMask::EMPTY
        };
        self.pmi_owned.store(owned.bits(), Ordering::Release);
        let vendor = model.vendor;
        run_on_every_processor(&|| {
            if let Some(processor) = self.processors.get(pmi::current_processor_index() as usize) {
                processor.counters.acquire();
                for (slot, assignment) in plan.iter().enumerate() {
                    let _ = processor.poll.start(slot, 0, assignment.width);
                }
            }
            program::start(vendor, &plan, &mut OwnedMsrs);
        });
        self.status.set_counters_owned(plan.len() as u32);
        self.status.set_pmu_state(PmuState::Active);
        if ownership.has_overflow_interrupt() {
            log_info!("PMU owned: {} counters, overflow interrupt", plan.len());
        } else {
            log_info!("PMU owned: {} counters, no overflow interrupt: polled", plan.len());
        }
        *session = Some(Session { ownership, plan, owned });
        drop(session);
        // The housekeeping thread may be sleeping without a timeout: it now has a release to schedule
        // (and polling to do, without an interrupt).
        self.wake_housekeeping();
    }

    fn wake_housekeeping(&self) {
        if let Some(waker) = self.waker.read().as_ref() {
            waker.wake();
        }
    }

    /// Stops, clears and frees the counters, keeping every count as the base of the next session.
    /// PASSIVE_LEVEL.
    pub fn release(&self) {
        let Some(model) = self.model() else { return };
        let mut session = self.session.write();
        let Some(open) = session.take() else { return };
        run_on_every_processor(&|| {
            self.read_this_processor(&open);
            if let Some(processor) = self.processors.get(pmi::current_processor_index() as usize) {
                processor.counters.release();
            }
            program::stop_and_clear(model.vendor, &open.plan, &mut OwnedMsrs);
        });
        self.pmi_owned.store(0, Ordering::Release);
        drop(open.ownership);
        PMI_TARGET.withdraw();
        self.status.set_counters_owned(0);
        self.status.set_pmu_state(PmuState::Idle);
        log_info!("PMU released");
    }

    /// Reads this processor's counters into its reported values, or programs them again if they lost
    /// their programming. Runs inside the all-processor call.
    fn read_this_processor(&self, session: &Session) {
        let Some(processor) = self.processors.get(pmi::current_processor_index() as usize) else { return };
        let Some(vendor) = self.model().map(|model| model.vendor) else { return };
        if !program::intact(vendor, &session.plan, &mut OwnedMsrs) {
            Self::reprogram(processor, vendor, &session.plan);
            self.status.record_reprogram();
            return;
        }
        // With an overflow interrupt, counters are read through the fold protocol against the global
        // status register; without one they are polled.
        let interrupt = session.owned != OwnedMask::EMPTY;
        let status_register = self
            .model()
            .and_then(|model| program::global_status_register(model.vendor, &session.plan))
            .filter(|_| interrupt);
        for (slot, assignment) in session.plan.iter().enumerate() {
            let read_raw = || OwnedMsrs.read(assignment.counter_msr);
            if let (Some(status_register), Some(bit)) = (status_register, assignment.global_bit) {
                let at = Placement { owned: session.owned, bit, width: assignment.width };
                let read_status = || OwnedMsrs.read(status_register);
                let _ =
                    processor.counters.read_counter(slot, at, DEFAULT_MAX_ATTEMPTS, read_status, read_raw);
            } else if let Some(extended) = processor.poll.poll(slot, assignment.width, read_raw) {
                let _ = processor.counters.report(slot, extended);
            }
        }
        processor.counters.publish();
    }

    /// Programs this processor's counters again after they lost their programming (a resume reset
    /// them, or a foreign tool rewrote them): their values are no longer the driver's, so a reset
    /// must not read as a wrap. Each counter's last reported value becomes its base, as at a release,
    /// and counting starts again from 0: nothing is double-counted and nothing goes backwards; the
    /// events between the loss and this repair are not counted.
    fn reprogram(processor: &PerProcessor, vendor: Vendor, plan: &CounterPlan) {
        program::stop_and_clear(vendor, plan, &mut OwnedMsrs);
        processor.counters.release();
        processor.counters.acquire();
        for (slot, assignment) in plan.iter().enumerate() {
            let _ = processor.poll.start(slot, 0, assignment.width);
        }
        program::start(vendor, plan, &mut OwnedMsrs);
        processor.counters.publish();
    }

    fn polling(&self) -> bool {
        self.session
            .try_read()
            .is_some_and(|session| session.as_ref().is_some_and(|s| s.owned == OwnedMask::EMPTY))
    }

    fn plan(&self) -> Option<CounterPlan> {
        self.session.try_read().and_then(|session| session.as_ref().map(|session| session.plan))
    }
}

impl CountSource for PmuClient {
    fn refresh(&self) {
        let now = clock::performance_counter();
        let previous = self.last_collect.swap(now, Ordering::AcqRel);
        if previous != 0 {
            self.collect_interval.store(clock::ticks_to_100ns(now.wrapping_sub(previous)), Ordering::Release);
        }
        self.demand(now, false);
        self.read_all();
    }

    fn counts(&self, processor_index: u32) -> EventCounts {
        let Some(processor) = self.processors.get(processor_index as usize) else {
            return EventCounts::default();
        };
        let snapshot = processor.counters.snapshot();
        let mut counts =
            EventCounts { overflow_interrupts: snapshot.overflow_interrupts, ..EventCounts::default() };
        // A plan's slots depend only on the model (the PMI bits change control values, not placement):
        // between sessions, and while one is being opened or closed, report the last values, so counts
        // never drop back to 0 while the counters are released.
        let plan = self.plan().or_else(|| self.model().map(|model| plan_with_pmi(&model, false)));
        let Some(plan) = plan else { return counts };
        for (slot, assignment) in plan.iter().enumerate() {
            let value = snapshot.values[slot];
            match assignment.event {
                Event::Instructions => counts.instructions_retired = value,
                Event::CoreCycles => counts.core_cycles = value,
                Event::ReferenceCycles => counts.reference_cycles = value,
                Event::LlcReferences => counts.llc_references = value,
                Event::LlcMisses => counts.llc_misses = value,
                Event::Branches => counts.branches = value,
                Event::BranchMispredicts => counts.branch_mispredicts = value,
            }
        }
        counts
    }

    fn query_added(&self) {
        // A RemoveCounter changes nothing: ownership ends when activity stops. A new query asks the
        // HAL again at once, even if the last attempt found the PMU busy.
        self.demand(clock::performance_counter(), true);
    }
}

impl PmuClient {
    /// Reads every processor's counters, if a session is open (and not being opened or closed).
    fn read_all(&self) {
        let Some(session) = self.session.try_read() else { return };
        let Some(open) = session.as_ref() else { return };
        run_on_every_processor(&|| self.read_this_processor(open));
        let interrupts =
            self.processors.iter().map(|processor| processor.counters.overflow_interrupts()).sum();
        self.status.set_overflow_interrupts(interrupts);
    }

    /// A consumer is reading (CollectData or AddCounter at `now`): own the counters if nothing is
    /// owned and an attempt is due (or `retry_now`). At PASSIVE_LEVEL here; above it (PCW does not
    /// promise PASSIVE) the housekeeping thread does it at once.
    fn demand(&self, now: u64, retry_now: bool) {
        self.last_activity.store(now, Ordering::Release);
        if self.model().is_none() || self.plan().is_some() || !(retry_now || self.attempt_due(now)) {
            return;
        }
        if crate::kernel::irql::current() == 0 {
            self.acquire();
        } else {
            self.deferred_acquire.store(true, Ordering::Release);
            self.wake_housekeeping();
        }
    }

    /// Whether to ask the HAL now: always after a release (Idle), at most every [`RETRY_100NS`] while
    /// the PMU is busy or the last request failed.
    fn attempt_due(&self, now: u64) -> bool {
        self.status.pmu_state() == PmuState::Idle as u32
            || clock::ticks_to_100ns(now.wrapping_sub(self.last_attempt.load(Ordering::Acquire)))
                >= RETRY_100NS
    }

    /// How long the counters stay owned without activity: [`IDLE_INTERVALS`] collect intervals,
    /// within [`RELEASE_HYSTERESIS_100NS`]..=[`MAX_IDLE_100NS`].
    fn idle_limit_100ns(&self) -> u64 {
        let interval = self.collect_interval.load(Ordering::Acquire);
        interval.saturating_mul(IDLE_INTERVALS).clamp(RELEASE_HYSTERESIS_100NS, MAX_IDLE_100NS)
    }

    /// Time since the last activity, in 100 ns units.
    fn idle_100ns(&self, now: u64) -> u64 {
        clock::ticks_to_100ns(now.wrapping_sub(self.last_activity.load(Ordering::Acquire)))
    }
}

impl PowerListener for PmuClient {
    /// Before the system leaves S0: read every counter, so the counts up to the sleep are kept. Back
    /// in S0: the read finds the PMU reset and programs it again at once, instead of at the next
    /// collect. At IRQL <= DISPATCH_LEVEL: the read takes no lock it would wait for.
    fn power_transition(&self, _back_in_s0: bool) {
        self.read_all();
    }
}

impl Periodic for PmuClient {
    fn next_tick(&self) -> Option<u64> {
        let model = self.model()?;
        // An acquisition handed over from above PASSIVE_LEVEL starts at once.
        if self.deferred_acquire.load(Ordering::Acquire) {
            return Some(0);
        }
        // Nothing owned: sleep until woken (cheap when nobody is watching).
        let plan = self.plan()?;
        // Wake for the release; when polling, also often enough that no counter wraps twice between
        // two polls.
        let until_release =
            self.idle_limit_100ns().saturating_sub(self.idle_100ns(clock::performance_counter())).max(1);
        if self.polling() {
            let width = plan.iter().map(|a| a.width).min().unwrap_or(model.gp_width);
            let poll = poll_period_100ns(width, MAX_EVENT_HZ, DEFAULT_SAFETY).max(1) as u64;
            return Some(poll.min(until_release));
        }
        Some(until_release)
    }

    fn attach(&self, waker: Option<Waker>) {
        // The write lock waits for a wake in progress, so after a detach no wake touches the event.
        *self.waker.write() = waker;
    }

    fn tick(&self) {
        if self.deferred_acquire.swap(false, Ordering::AcqRel) && self.plan().is_none() {
            self.acquire();
        }
        if self.polling() {
            self.read_all();
        }
        let now = clock::performance_counter();
        if self.plan().is_some() && self.idle_100ns(now) >= self.idle_limit_100ns() {
            self.release();
        }
    }
}

impl Drop for PmuClient {
    fn drop(&mut self) {
        self.release();
    }
}
