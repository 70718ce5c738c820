//! The ownership session's platform in the driver: HalAllocateHardwareCounters, KeIpiGenericCall,
//! rdmsr/wrmsr, the performance counter, the IRQL, the housekeeping thread and DbgPrintEx.

use super::all_processors::run_on_every_processor;
use super::hal_counters::{OverflowHandler, Ownership};
use super::mmio::{self, MappedPage};
use super::pmi::{OverflowSink, Target, current_processor_index, overflow_handler};
use super::pool::{PoolSlice, Zeroable};
use super::power::PowerListener;
use super::registry::ParametersKey;
use super::system_thread::{Periodic, Waker};
use super::{clock, irql, msr, processors};
use crate::imc::detect::HostBridge;
use crate::imc::models::ControllerPage;
use crate::pmu::hybrid::CORE_TYPES;
use crate::pmu::program::Msrs;
/// One core type's session, as the client's core type table holds it (the driver allocates the table).
pub use crate::session::CoreTypeSession;
/// One processor's state, as the client's `Processors` table holds it (the driver allocates the table).
pub use crate::session::ProcessorState;
use crate::session::{CounterPage, Form, OverflowTarget, Platform, PmuClient};
use crate::settings::Setting;
use core::fmt;
use windows_sys::Win32::System::SystemInformation::GROUP_AFFINITY;

/// The driver's PMU client.
pub type Client = PmuClient<KernelPlatform>;

/// What the overflow handler folds into: the client's processors and overflow bits.
pub type ClientTarget = OverflowTarget<PoolSlice<ProcessorState>>;

/// The client's overflow target, while counters are owned with an interrupt.
static PMI_TARGET: Target<ClientTarget> = Target::new();

impl OverflowSink for ClientTarget {
    fn target() -> &'static Target<Self> {
        &PMI_TARGET
    }

    #[inline(always)]
    fn fold(&self, processor: u32, overflow_bits: u64) {
        OverflowTarget::fold(self, processor, overflow_bits);
    }
}

// SAFETY: atomics only; all zero is "nothing counted yet", the state `Default` builds (the client
// publishes each processor's block, its core type included, before any collect).
unsafe impl Zeroable for ProcessorState {}

/// The kernel as the session sees it.
pub struct KernelPlatform {
    /// Wakes the housekeeping thread when its schedule changes; set while the thread runs.
    waker: spin::RwLock<Option<Waker>>,
    /// The service's Parameters key, read at each acquisition.
    parameters: ParametersKey,
}

impl KernelPlatform {
    pub const fn new(parameters: ParametersKey) -> Self {
        KernelPlatform { waker: spin::RwLock::new(None), parameters }
    }
}

/// Counters owned through the HAL: one allocation, or one per core type. Dropping frees them, then
/// stops the overflow handler from reaching the client (the HAL calls no handler after
/// HalFreeHardwareCounters returns).
pub struct KernelOwnership {
    hal: [Option<Ownership>; CORE_TYPES],
    overflow_interrupt: bool,
}

impl Drop for KernelOwnership {
    fn drop(&mut self) {
        for hal in &mut self.hal {
            drop(hal.take());
        }
        if self.overflow_interrupt {
            PMI_TARGET.withdraw();
        }
    }
}

/// rdmsr/wrmsr on the current processor, lent only inside [`Platform::on_every_processor`], under a
/// [`KernelOwnership`]: the field is private, so nothing else can make one.
pub struct OwnedMsrs {
    _lent: (),
}

impl Msrs for OwnedMsrs {
    #[inline(always)]
    fn read(&self, register: u32) -> u64 {
        // SAFETY: the plan names only MSRs CPUID reported; lent only while the counters are owned.
        unsafe { msr::read(register) }
    }

    #[inline(always)]
    fn write(&mut self, register: u32, value: u64) {
        // SAFETY: as above, and the counters are owned (HalAllocateHardwareCounters succeeded).
        unsafe { msr::write(register, value) }
    }

    #[inline(always)]
    fn read_counter(&self, register: u32, rdpmc: Option<u32>) -> u64 {
        match rdpmc {
            // SAFETY: the plan gives an RDPMC index only for a counter CPUID reported.
            Some(index) => unsafe { msr::read_pmc(index) },
            None => self.read(register),
        }
    }

    #[inline(always)]
    fn with_interrupts_held<R>(&mut self, work: impl FnOnce(&mut Self) -> R) -> R {
        irql::with_interrupts_disabled(|| work(self))
    }
}

impl Platform for KernelPlatform {
    type Ownership = KernelOwnership;
    type Msrs = OwnedMsrs;
    type Processors = PoolSlice<ProcessorState>;
    type Table<T: Send + Sync + 'static> = PoolSlice<Option<T>>;
    type CounterPage = MappedPage;

    fn allocate(&self, form: Form<'_>, target: &ClientTarget) -> Result<KernelOwnership, i32> {
        let overflow_interrupt = matches!(form, Form::Listed { overflow_interrupt: true, .. });
        if overflow_interrupt {
            // SAFETY: withdrawn below if the HAL refuses, else by the returned ownership's Drop after
            // the counters are freed; the client keeps that ownership, and this target, inside itself (its Drop releases
            // it), so the client outlives the publication.
            unsafe { PMI_TARGET.publish(target) };
        }
        let result = allocate_each(form, target);
        if result.is_err() && overflow_interrupt {
            PMI_TARGET.withdraw();
        }
        result.map(|hal| KernelOwnership { hal, overflow_interrupt })
    }

    #[inline(always)]
    fn on_every_processor<F: Fn(u32, &mut OwnedMsrs) + Sync>(&self, _ownership: &KernelOwnership, work: &F) {
        run_on_every_processor(&|| work(current_processor_index(), &mut OwnedMsrs { _lent: () }));
    }

    fn now_100ns(&self) -> u64 {
        clock::ticks_to_100ns(clock::performance_counter())
    }

    fn at_passive_level(&self) -> bool {
        irql::current() == 0
    }

    fn wake_housekeeping(&self) {
        if let Some(waker) = self.waker.read().as_ref() {
            waker.wake();
        }
    }

    fn log(&self, line: fmt::Arguments<'_>) {
        super::debug::print(super::debug::Level::Info, line);
    }

    fn read_setting<'b>(&self, name: &str, buffer: &'b mut [u16]) -> Setting<'b> {
        self.parameters.read(name, buffer)
    }

    fn write_guard_marker(&self, set: bool) -> bool {
        let value = set.then_some(crate::session::boot_guard::MARKER_SET);
        match self.parameters.write_dword(crate::session::boot_guard::MARKER, value) {
            Ok(()) => true,
            Err(status) => {
                log_error!("writing Parameters\\HardwareGuard failed: {status:#x}");
                false
            }
        }
    }

    fn read_host_bridge(&self) -> HostBridge {
        mmio::read_host_bridge()
    }

    fn map_counter_page(&self, page: &ControllerPage) -> Option<MappedPage> {
        MappedPage::map(page.physical, &page.counters)
    }
}

impl CounterPage for MappedPage {
    #[inline(always)]
    fn load(&self, index: usize) -> Option<u64> {
        MappedPage::load(self, index)
    }
}

/// One HalAllocateHardwareCounters call per list of `form` (each on its core type's processors, and
/// made from the first of them), or one for the whole PMU: all granted, or the first refusal's status
/// with nothing held (the allocations already granted are freed as the array drops).
fn allocate_each(form: Form<'_>, target: &ClientTarget) -> Result<[Option<Ownership>; CORE_TYPES], i32> {
    let mut held: [Option<Ownership>; CORE_TYPES] = [const { None }; CORE_TYPES];
    let (lists, overflow_interrupt) = match form {
        Form::WholePmu => {
            // SAFETY: no handler is named.
            held[0] = Some(unsafe { Ownership::allocate(&[], None) }?);
            return Ok(held);
        }
        Form::Listed { lists, overflow_interrupt } => (lists, overflow_interrupt),
    };
    let handler: Option<OverflowHandler> =
        overflow_interrupt.then_some(overflow_handler::<ClientTarget> as OverflowHandler);
    let count = target.processor_count();
    for (list, granted) in lists.iter().zip(held.iter_mut()) {
        let mut entries = [GROUP_AFFINITY { Mask: 0, Group: 0, Reserved: [0; 3] }; processors::MAX_GROUPS];
        let groups = match list.core_type {
            Some(core_type) => processors::group_affinity(
                count,
                |index| target.core_type_of(index as usize) == Some(core_type),
                &mut entries,
            ),
            None => 0,
        };
        let affinity = &entries[..groups];
        // SAFETY: the handler is resident code of this image that reads only the published client,
        // which stays valid while the ownership lives (Platform::allocate).
        let allocate = || unsafe { Ownership::allocate(affinity, Some((list.counters, handler))) };
        *granted = Some(match affinity.first() {
            // The HAL checks a list against the counter table of the processor the call runs on
            // (Windows 11 24H2, EmonReserveProfileResourcesEnhanced): ask from the list's first
            // processor, at PASSIVE_LEVEL as the call requires.
            Some(first) => processors::on_processor(first.Group, first.Mask.trailing_zeros() as u8, allocate),
            None => allocate(),
        }?);
    }
    Ok(held)
}

impl Periodic for Client {
    fn next_tick(&self) -> Option<u64> {
        PmuClient::next_tick(self)
    }

    fn tick(&self) {
        PmuClient::tick(self);
    }

    fn attach(&self, waker: Option<Waker>) {
        // The write lock waits for a wake in progress, so after a detach no wake touches the event.
        *self.platform().waker.write() = waker;
    }
}

impl PowerListener for Client {
    fn power_transition(&self, back_in_s0: bool) {
        PmuClient::power_transition(self, back_in_s0);
    }
}
