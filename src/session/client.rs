//! The PMU client: owns the hardware counters while consumers are active, programs them on every
//! processor, extends them to exact 64-bit counts and keeps each processor's counter block current for
//! the collect callback (`crate::block::publish`). The logic it runs is in `crate::pmu` (model, events,
//! program, fold, poll); the machine is a [`Platform`].
//!
//! Concurrency:
//! * Ownership changes (acquire, release) happen at PASSIVE_LEVEL under the write side of `session`;
//!   collects take the read side with `try_read` and never wait: during a change they report the
//!   blocks as the last read left them.
//! * The overflow handler reaches the per-processor counters through [`OverflowTarget::fold`], a
//!   part of the client the platform hands to the HAL while an ownership with an Overflow
//!   descriptor is held.
//! * Each processor's counters are read and written only on that processor, inside the all-processor
//!   call (IPI_LEVEL, with interrupts held off for the read, so the PMI at PROFILE_LEVEL waits until
//!   it ends) or by its overflow handler.

use super::boot_guard::{BootGuard, Source};
use super::core_pmu::core_type_session::{CoreTypeSession, Session};
use super::core_pmu::overflow_target::OverflowTarget;
use super::core_pmu::processor_state::ProcessorState;
use super::core_pmu::read::{TopdownReading, counts_under};
use super::core_pmu::repair::repair;
use super::core_pmu::request::Requester;
use super::core_pmu::start::{carry_over, start_counting};
use super::core_pmu::topdown_source;
use super::memory_controller::MemoryController;
use super::platform::Platform;
use super::schedule::Schedule;
use super::throttle::{self, DEFAULT_INTERVAL_MS, Throttle};
use crate::block::fields::EventCounts;
use crate::block::publish;
use crate::counters::hardware_counters::AtomicCells;
use crate::counters::hardware_counters_by_core_type;
use crate::counters::memory_controller;
use crate::imc::detect::{CpuIdValues, detect};
use crate::imc::status::Status;
use crate::pcw::driver_status::{DriverStatus, PmuOwnership, PmuState, TopdownSource};
use crate::pcw::hardware_counters::CountSource;
use crate::pcw::memory_controller::MemorySource;
use crate::pmu::events::{Event, EventSet};
use crate::pmu::fold::OwnedMask;
use crate::pmu::frequency::{self, mperf_advance};
use crate::pmu::hybrid::{CORE_TYPES, Machine, PerCoreType};
use crate::pmu::model::{Detection, PmuModel, Unusable, Vendor};
use crate::pmu::placement::{CounterPlan, Wanted, plan_for};
use crate::pmu::profile::{self, MAX_CUSTOM_EVENTS_BYTES, MAX_PROFILE_BYTES, Selection};
use crate::pmu::program::{self, Msrs};
use crate::settings::HEADER_UNITS;
use crate::sync::Ordering;
use crate::sync::SessionLock;
use crate::sync::unmodelled::AtomicU32;

mod guarded;
mod housekeeping;

/// Why the counters could not be had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcquireError {
    /// Another client owns them (STATUS_INSUFFICIENT_RESOURCES for the whole PMU) or the HAL's PMU
    /// arbiter has another actor (STATUS_DEVICE_BUSY): try again later.
    Busy,
    /// Any other failure, with its status.
    Failed(i32),
}

/// What [`PmuClient::open`] opened, for the status counters and the debug output.
struct Opened {
    counters: u32,
    ownership: PmuOwnership,
    interrupt: bool,
    topdown: TopdownSource,
    dropped: EventSet,
    unavailable: EventSet,
}

pub struct PmuClient<P: Platform> {
    platform: P,
    /// What every processor has, and what only some have.
    machine: Machine,
    /// Each processor's state and each core type's overflow bits, which the overflow handler reads.
    target: OverflowTarget<P::Processors>,
    session: SessionLock<Session<P>>,
    /// Each core type's plan of the last session (open or closed): which counter holds which event,
    /// so that counts keep their places between sessions. Written at each acquisition.
    last_plan: SessionLock<PerCoreType<P::Table<CounterPlan>>>,
    schedule: Schedule,
    /// Which collects read every processor afresh, and which are served from the last read.
    throttle: Throttle,
    status: &'static DriverStatus,
    /// The second counter source, driven by the same policy with its own demand.
    memory: MemoryController<P>,
    /// The marker around each source's first touch of its hardware in this load.
    guard: BootGuard,
}

impl<P: Platform> PmuClient<P> {
    /// A client for the PMU `detection` found, with one `processors` entry per processor (all zero)
    /// and one `sessions` and `plans` entry per core type the machine has (all `None`). No MSR is
    /// touched.
    pub fn new(
        platform: P,
        machine: impl Into<Machine>,
        processors: P::Processors,
        sessions: P::Table<CoreTypeSession>,
        plans: P::Table<CounterPlan>,
        status: &'static DriverStatus,
    ) -> Self {
        let machine: Machine = machine.into();
        let detection = machine.detection;
        status.set_pmu_state(match detection {
            Detection::Usable(_) => PmuState::Idle,
            Detection::Unusable(Unusable::HypervisorWithoutPmu) => PmuState::UnsupportedHypervisor,
            Detection::Unusable(Unusable::NoArchitecturalPerfmon | Unusable::PerfmonVersionTooOld) => {
                PmuState::UnsupportedNoArchitecturalPerfmon
            }
            Detection::Unusable(Unusable::UnknownVendor) => PmuState::UnsupportedVendor,
            Detection::Unusable(Unusable::TooFewCounters) => PmuState::UnsupportedTooFewCounters,
        });
        status.set_topdown_source(match detection {
            Detection::Usable(_) => topdown_source::of_machine(machine, |_| None),
            Detection::Unusable(_) => TopdownSource::NoPmu,
        });
        for processor in processors.iter() {
            publish::publish_all(&processor.published, &counts_under(processor, None, &machine));
        }
        status.set_minimum_collect_interval(DEFAULT_INTERVAL_MS);
        PmuClient {
            machine,
            platform,
            target: OverflowTarget::new(&machine, processors),
            session: SessionLock::new(Session::closed(&machine, sessions)),
            last_plan: SessionLock::new(PerCoreType::new(&machine, plans)),
            schedule: Schedule::new(),
            throttle: Throttle::new(),
            status,
            memory: MemoryController::new(Err(Status::UnsupportedModel), status),
            guard: BootGuard::new(),
        }
    }

    /// Detects the memory controller from `cpu` (this processor's CPUID values) and, only for a
    /// listed model on bare metal or the Hyper-V root, device 00:00.0's configuration. Once, before
    /// the client is shared. PASSIVE_LEVEL.
    pub fn detect_memory_controller(&mut self, cpu: &CpuIdValues) {
        let detected = detect(cpu, || self.platform.read_host_bridge());
        match detected {
            Ok(found) => self.platform.log(format_args!(
                "memory controller: {} ({} controllers), MCHBAR {:#x}",
                found.model.name, found.model.layout.controllers, found.mchbar
            )),
            Err(why) => self.platform.log(format_args!("memory controller not counted: {}", why.text())),
        }
        self.memory = MemoryController::new(detected, self.status);
    }

    pub fn platform(&self) -> &P {
        &self.platform
    }

    fn model(&self) -> Option<PmuModel> {
        match self.machine.detection {
            Detection::Usable(model) => Some(model),
            Detection::Unusable(_) => None,
        }
    }

    /// What the overflow handler folds into, which the platform hands to the HAL's handler.
    pub fn overflow_target(&self) -> &OverflowTarget<P::Processors> {
        &self.target
    }

    /// Owns and starts the counters on every processor, if there is a usable PMU and no session yet.
    /// PASSIVE_LEVEL.
    pub fn acquire(&self) {
        let Some(model) = self.model() else { return };
        if self.guard.held_off() {
            return;
        }
        if self.session.try_read().is_some_and(|session| session.ownership.is_some()) {
            return;
        }
        // Read before taking the lock: registry reads may wait.
        let selection = self.read_selection(model.vendor);
        let interval = throttle::read_interval_ms(&self.platform);
        self.throttle.set_interval_ms(interval);
        self.status.set_minimum_collect_interval(interval);
        let wanted_events = Wanted::of(&selection);
        let mut session = self.session.write();
        if session.ownership.is_some() {
            return;
        }
        self.schedule.attempted(self.platform.now_100ns());
        self.status.set_profile(selection.profile as u32, selection.rejected);
        self.status.set_custom_event_selects(selection.custom_selects(model.vendor));
        if !self.guard.before_touch(Source::CorePmu, |set| self.platform.write_guard_marker(set), self.status)
        {
            self.status.set_pmu_state(PmuState::Failed);
            self.platform
                .log(format_args!("Parameters\\HardwareGuard not written: the PMU stays unprogrammed"));
            return;
        }
        let Some(opened) = self.open(&mut session, &model, &wanted_events) else { return };
        drop(session);
        // Active once a collect can read the session.
        self.status.set_topdown_source(opened.topdown);
        self.status.set_counters_owned(opened.counters);
        self.status.set_pmu_ownership(opened.ownership);
        self.status.set_pmu_state(PmuState::Active);
        let how = if opened.interrupt { "overflow interrupt" } else { "no overflow interrupt: polled" };
        self.platform.log(format_args!("PMU owned: {} counters, {how}", opened.counters));
        self.status.set_events_not_counted(opened.dropped.status_bits(), opened.unavailable.status_bits());
        if !opened.dropped.is_empty() {
            self.platform.log(format_args!("no counter left for {:?}: they read 0", opened.dropped));
        }
        if !opened.unavailable.is_empty() {
            self.platform
                .log(format_args!("this processor cannot count {:?}: they read 0", opened.unavailable));
        }
        // The housekeeping thread may be sleeping without a timeout: it now has a release to schedule
        // (and polling to do, without an interrupt).
        self.platform.wake_housekeeping();
    }

    /// [`Self::acquire`]'s work under the session lock: plan each core type, own, program every
    /// processor and open the session in `session`. Out of line, with [`Self::read_selection`], so
    /// that the plans and the session built here and the registry buffers read there are never on
    /// the consumer's stack at once (acquire runs in the consumer's thread, whose kernel stack is 24
    /// KiB).
    #[inline(never)]
    fn open(&self, session: &mut Session<P>, model: &PmuModel, wanted_events: &Wanted) -> Option<Opened> {
        let plans_with = |pmi: bool| {
            let mut plans = [None; CORE_TYPES];
            for (core_type, model) in self.machine.models() {
                let wanted = wanted_events.for_core_type(core_type);
                plans[core_type] = Some(plan_for(&model, &wanted, pmi && model.overflow_interrupt));
            }
            plans
        };
        let wanted = plans_with(model.overflow_interrupt);
        let requester = Requester { platform: &self.platform, machine: &self.machine, client: self };
        let (ownership, held) = match requester.request(model, &wanted) {
            Ok(owned) => owned,
            Err(error) => {
                self.status.record_ownership_failure();
                let state = if error == AcquireError::Busy { PmuState::Busy } else { PmuState::Failed };
                self.status.set_pmu_state(state);
                self.platform
                    .log(format_args!("HalAllocateHardwareCounters refused the counters: {error:?}"));
                return None;
            }
        };
        // Without an interrupt (the whole PMU, or no PMI on this model) the counters are polled.
        let interrupt = held.interrupt;
        let plans = if interrupt { wanted } else { plans_with(false) };
        // The last plans become `plans`, and `previous` the plans they were: swapped in place, not
        // replaced by value. A swap's two places are never the same, which core::mem::swap states to
        // the compiler whatever it inlines (ptr::swap_nonoverlapping: copies that LLVM must treat as
        // non-overlapping, memcpy); a replace by value let the optimiser copy from `plans` straight
        // into the table with memmove where it could not prove the two apart, and the driver imports
        // no memmove. `previous` and `plans` are this frame's own, so copying between them is memcpy.
        let mut previous = [None; CORE_TYPES];
        let mut last_plan = self.last_plan.write();
        for (core_type, previous) in previous.iter_mut().enumerate() {
            if let Some(last) = last_plan.get_mut(core_type as u8) {
                *previous = plans[core_type];
                core::mem::swap(last, previous);
            }
        }
        drop(last_plan);
        for (core_type, owned) in self.target.pmi_owned.iter() {
            let mask = match plans[core_type] {
                Some(plan) if interrupt => OwnedMask::new(plan.overflow_bits()).unwrap_or(OwnedMask::EMPTY),
                _ => OwnedMask::EMPTY,
            };
            owned.store(mask.bits(), Ordering::Release);
        }
        // A processor added after load (the broadcast reaches every active processor) has no instance
        // and no state here: it is left alone, and counted.
        let not_monitored = AtomicU32::new(0);
        self.platform.on_every_processor(&ownership, &|index, msrs| {
            let Some(processor) = self.target.processors.get(index as usize) else {
                not_monitored.fetch_add(1, Ordering::Relaxed);
                return;
            };
            let core_type = usize::from(processor.pmu.core_type());
            let Some(plan) = plans.get(core_type).copied().flatten() else { return };
            let previous = previous.get(core_type).copied().flatten();
            carry_over(&processor.pmu, previous.as_ref(), &plan);
            publish::publish_all(&processor.published, &counts_under(processor, Some(&plan), &self.machine));
            start_counting(processor, model.vendor, &plan, msrs);
        });
        self.status.set_processors_not_monitored(not_monitored.load(Ordering::Relaxed));
        let owned = |core_type: u8| {
            let bits = self.target.pmi_owned.get(core_type).map_or(0, |owned| owned.load(Ordering::Relaxed));
            OwnedMask::from_bits(bits)
        };
        session.install(ownership, &plans, owned, self.machine);
        // Counting from zero: for the gap between reads (crate::pmu::topdown), as good as a read.
        self.schedule.read_at(self.platform.now_100ns());
        let mut opened = Opened {
            counters: held.counters,
            ownership: held.ownership,
            interrupt,
            topdown: topdown_source::of_machine(self.machine, |core_type| plans[core_type].as_ref()),
            dropped: EventSet::EMPTY,
            unavailable: EventSet::EMPTY,
        };
        for plan in plans.iter().flatten() {
            opened.dropped = opened.dropped.union(plan.dropped());
            opened.unavailable = opened.unavailable.union(plan.unavailable());
        }
        Some(opened)
    }

    /// Stops, clears and frees the counters, keeping every count as the base of the next session.
    /// PASSIVE_LEVEL.
    pub fn release(&self) {
        self.release_if(|| true);
    }

    /// [`Self::release`], if `still_due` holds once no collect is reading any more (a collect that
    /// was running when the release was decided counts as activity).
    fn release_if(&self, still_due: impl Fn() -> bool) {
        let Some(model) = self.model() else { return };
        let mut session = self.session.write();
        if !still_due() {
            return;
        }
        let Some(ownership) = session.ownership.take() else { return };
        let open = &*session;
        self.platform.on_every_processor(&ownership, &|index, msrs| {
            self.read_processor::<true>(open, None, model.vendor, index, msrs);
            // A processor added after load was never programmed: left alone.
            if let Some(processor) = self.target.processors.get(index as usize) {
                let Some(core_type) = open.of_core_type(processor.pmu.core_type()) else { return };
                processor.pmu.counters.release();
                program::release(model.vendor, &core_type.plan, msrs);
            }
        });
        for (_, owned) in self.target.pmi_owned.iter() {
            owned.store(0, Ordering::Release);
        }
        // The release read every processor back: the boot guard's known-good point as a collect's is.
        self.guard.after_clean_read(
            Source::CorePmu,
            |set| self.platform.write_guard_marker(set),
            self.status,
        );
        drop(ownership);
        session.clear();
        self.status.set_counters_owned(0);
        self.status.set_pmu_ownership(PmuOwnership::None);
        self.status.set_pmu_state(PmuState::Idle);
        self.platform.log(format_args!("PMU released"));
    }

    /// Reads processor `index`'s counters into its reported values, or repairs their programming if
    /// it was lost (`super::repair`, which keeps what can be known exactly). Runs inside the
    /// all-processor call, on that processor, with interrupts held off for the whole read (so the
    /// overflow handler runs before or after it, never inside).
    /// `CHECK_ALL` picks how much of the programming to verify: all of it ([`Check::All`]), or one
    /// register in turn ([`Check::OneInTurn`]: one rdmsr per collect; the turns go round every
    /// register). A constant, so that a collect's read tests nothing for it.
    /// `uniform`: the one core type session every processor uses (not a hybrid machine), found once
    /// per read instead of on every processor ([`Session::uniform`]).
    #[inline(always)]
    fn read_processor<const CHECK_ALL: bool>(
        &self,
        session: &Session<P>,
        uniform: Option<&CoreTypeSession>,
        vendor: Vendor,
        index: u32,
        msrs: &mut P::Msrs,
    ) {
        let Some(ProcessorState { pmu: processor, published }) = self.target.processors.get(index as usize)
        else {
            return;
        };
        let Some(session) = uniform.or_else(|| session.of_core_type(processor.core_type())) else { return };
        msrs.with_interrupts_held(|msrs| {
            if session.aperf_mperf {
                let (aperf, mperf) = frequency::read(msrs);
                let (_, before) = publish::last_frequency(published);
                publish::frequency(published, aperf, mperf);
                if session.plan.reference_from_mperf() {
                    publish::add_to_event(published, Event::ReferenceCycles, mperf_advance(before, mperf));
                }
            }
            publish::overflow_interrupts(published, processor.counters.overflow_interrupts());
            let intact = if CHECK_ALL {
                session.programming.intact(msrs)
            } else {
                session.programming.intact_in_turn(&processor.check_turn, msrs)
            };
            // A polled read confirms each wrap against the whole programming: a counter a resume
            // zeroed is not a wrap, even where the register this turn checks looks as programmed.
            if !intact
                || !session.reading.read(processor, published, &session.counters, &session.programming, msrs)
            {
                repair(processor, published, vendor, session, msrs);
                self.status.record_reprogram();
            }
            if session.topdown != TopdownReading::None {
                session.topdown.read(processor, published, &session.plan, msrs);
            }
        });
    }

    /// Reads every processor's counters, if a session is open (and not being opened or closed):
    /// returns whether it did. Inlined into each caller, whose `check` is a constant there.
    #[inline(always)]
    fn read_all(&self, check: Check) -> bool {
        let Some(vendor) = self.model().map(|model| model.vendor) else { return false };
        let Some(session) = self.session.try_read() else { return false };
        let Some((open, ownership)) = session.open() else { return false };
        // One worker per kind of check, so that a collect's worker tests none (`move`: it gets
        // `vendor` itself, not a reference to it).
        // On a machine of one core type, every processor's core type session is found once, here.
        let uniform = open.uniform();
        match check {
            Check::All => self.platform.on_every_processor(ownership, &move |index, msrs| {
                self.read_processor::<true>(open, uniform, vendor, index, msrs)
            }),
            Check::OneInTurn => self.platform.on_every_processor(ownership, &move |index, msrs| {
                self.read_processor::<false>(open, uniform, vendor, index, msrs)
            }),
        }
        let interrupts =
            self.target.processors.iter().map(|processor| processor.pmu.counters.overflow_interrupts()).sum();
        self.status.set_overflow_interrupts(interrupts);
        true
    }

    /// The profile the service's Parameters key selects now, with every rejection explained in the
    /// debug output. PASSIVE_LEVEL. Out of line: its buffers (2 KiB) leave the stack before the
    /// session is opened.
    #[inline(never)]
    fn read_selection(&self, vendor: Vendor) -> Selection {
        let mut profile = [0u16; HEADER_UNITS + MAX_PROFILE_BYTES / 2];
        let mut custom_events = [0u16; HEADER_UNITS + MAX_CUSTOM_EVENTS_BYTES / 2];
        let profile = self.platform.read_setting("Profile", &mut profile);
        let custom_events = self.platform.read_setting("CustomEvents", &mut custom_events);
        profile::select(vendor, self.machine.hybrid(), profile, custom_events, |value, line, why| {
            self.platform
                .log(format_args!("Parameters\\{value} rejected (line {line}, 0: the whole value): {why:?}"));
        })
    }

    /// Whether a session is open (a read of the lock that does not wait: `false` while one is being
    /// opened or closed).
    fn is_open(&self) -> bool {
        self.session.try_read().is_some_and(|session| session.ownership.is_some())
    }

    /// A consumer is reading (a collect, or an AddCounter when `retry_now`): own the counters if
    /// nothing is owned and an attempt is due. An AddCounter asks the HAL again at once, even if the
    /// last attempt found the PMU busy; a collect at most every second. At PASSIVE_LEVEL here; above
    /// it (PCW does not promise PASSIVE) the housekeeping thread does it at once.
    fn demand(&self, retry_now: bool) {
        if self.model().is_none() || self.guard.held_off() || self.is_open() {
            return;
        }
        let now = self.platform.now_100ns();
        let idle = self.status.pmu_state() == PmuState::Idle as u32;
        if !(retry_now || idle || self.schedule.retry_due(now)) {
            return;
        }
        if self.platform.at_passive_level() {
            self.acquire();
        } else {
            self.schedule.defer_acquire();
            self.platform.wake_housekeeping();
        }
    }

    /// Before the system leaves S0 (`back_in_s0` false): read every counter, so the counts up to the
    /// sleep are kept. Back in S0: the read finds the PMU reset and programs it again at once,
    /// instead of at the next collect. At IRQL <= DISPATCH_LEVEL: the read waits for no lock.
    pub fn power_transition(&self, _back_in_s0: bool) {
        let _ = self.read_all(Check::All);
    }
}

/// How much of the programming a read verifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    /// Every register: after a power transition, and at release.
    All,
    /// One register, in turn: at a collect.
    OneInTurn,
}

impl<P: Platform> CountSource for PmuClient<P> {
    fn refresh(&self) {
        // A collect is activity for as long as it runs, until collect_done (Schedule::collect_started).
        let now = self.platform.now_100ns();
        self.schedule.collect_started(now);
        self.demand(false);
        // Within the minimum interval of the last fresh read, the blocks as that read (or one running
        // now) left them: no all-processor call.
        if !self.throttle.fresh_due(now) {
            self.status.record_served_collect();
        } else if self.read_all(Check::OneInTurn) {
            self.schedule.read_at(now);
            self.status.record_fresh_collect();
            if self.guard.awaits_read(Source::CorePmu) {
                self.first_read_done();
            }
        } else {
            self.throttle.withdraw(now);
        }
    }

    fn collect_done(&self) {
        self.schedule.collect_ended(self.platform.now_100ns());
    }

    fn block(&self, processor_index: u32) -> Option<&AtomicCells> {
        self.target.processors.get(processor_index as usize).map(|processor| &processor.published)
    }

    fn has_core_type(&self, core_type: u8) -> bool {
        self.target.processors.iter().any(|processor| processor.pmu.core_type() == core_type)
    }

    fn core_type_values(&self, core_type: u8) -> hardware_counters_by_core_type::Values {
        let mut sum = EventCounts { core_type: u64::from(core_type), ..EventCounts::default() };
        let last_plan = self.last_plan.read();
        let plan = last_plan.get(core_type).and_then(Option::as_ref);
        for processor in
            self.target.processors.iter().filter(|processor| processor.pmu.core_type() == core_type)
        {
            sum.accumulate(&counts_under(processor, plan, &self.machine));
        }
        sum.by_core_type_values()
    }

    fn query_added(&self) {
        // A RemoveCounter changes nothing: ownership ends when activity stops.
        self.schedule.active(self.platform.now_100ns());
        self.demand(true);
    }
}

impl<P: Platform> MemorySource for PmuClient<P> {
    fn memory_refresh(&self) {
        self.memory.refresh(&self.platform, &self.guard);
    }

    fn memory_collect_done(&self) {
        self.memory.collect_done(&self.platform);
    }

    fn memory_query_added(&self) {
        self.memory.query_added(&self.platform, &self.guard);
    }

    fn memory_controllers(&self) -> u8 {
        self.memory.controllers()
    }

    fn memory_values(&self, index: usize) -> memory_controller::Values {
        self.memory.values(index)
    }
}

impl<P: Platform> Drop for PmuClient<P> {
    fn drop(&mut self) {
        self.memory.release_if(&self.platform, || true);
        self.release();
    }
}

#[cfg(test)]
mod fake;

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, not(loom)))]
mod memory_tests;

#[cfg(all(test, loom))]
mod loom_tests;
