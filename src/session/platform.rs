//! What the ownership session needs from the machine, as one small trait: the driver implements it
//! over the kernel (src/kernel/platform.rs), the host tests over a fake.

use super::core_pmu::overflow_target::OverflowTarget;
use super::core_pmu::processor_state::ProcessorState;
use crate::imc::detect::HostBridge;
use crate::imc::models::ControllerPage;
use crate::pmu::program::Msrs;
use crate::settings::Setting;
use core::fmt;
use core::ops::{Deref, DerefMut};

/// One resource list of a [`Form::Listed`] request: HAL counter indexes, for the processors of one
/// core type (`Some`, a GroupAffinity of exactly those) or every processor (`None`, no GroupAffinity).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct List<'a> {
    pub core_type: Option<u8>,
    pub counters: &'a [u32],
}

/// The two forms of a HalAllocateHardwareCounters request (ntddk.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form<'a> {
    /// One allocation per list, each with an Overflow descriptor if `overflow_interrupt`: all
    /// granted, or none held.
    Listed { lists: &'a [List<'a>], overflow_interrupt: bool },
    /// The whole PMU: no group affinity, no list, no overflow handler.
    WholePmu,
}

/// A read-only mapping of one memory controller's counter page ([`Platform::map_counter_page`]):
/// it reads only the counters it was mapped for. Dropping it unmaps the page.
pub trait CounterPage: Send + Sync {
    /// Counter `index` of the [`ControllerPage`]'s list, read with one load of its width; `None` for
    /// an index the list does not fill.
    fn load(&self, index: usize) -> Option<u64>;
}

/// The machine the session runs on.
pub trait Platform: Sync + Sized + 'static {
    /// Counters owned through the HAL. Dropping it frees them (HalFreeHardwareCounters) and, if the
    /// request had an Overflow descriptor, stops the overflow handler from reaching the client.
    type Ownership: Send + Sync;
    /// MSR access on the processor a [`Platform::on_every_processor`] call runs on, lent only
    /// there, under an [`Platform::Ownership`].
    type Msrs: Msrs;
    /// The per-processor state, one entry per processor index.
    type Processors: Deref<Target = [ProcessorState]> + Send + Sync;
    /// A table of one entry per core type the machine has (all `None`), allocated once with the
    /// client (the core types' sessions, the last plans): a machine of one core type holds one entry,
    /// not one per core type a machine could have (`docs/hybrid.md`).
    type Table<T: Send + Sync + 'static>: DerefMut<Target = [Option<T>]> + Send + Sync;
    /// One memory controller's counter page, mapped.
    type CounterPage: CounterPage;

    /// Asks the HAL for the counters in `form`, each list's call made from a processor of that list's
    /// core type (the HAL checks a list against the calling processor's counter table). With an
    /// Overflow descriptor the overflow handler
    /// folds into `target` until the ownership is dropped. On failure returns the NTSTATUS; a success
    /// with a NULL handle (an older HAL's answer to a list it does not take) is a failure.
    /// PASSIVE_LEVEL.
    fn allocate(
        &self,
        form: Form<'_>,
        target: &OverflowTarget<Self::Processors>,
    ) -> Result<Self::Ownership, i32>;

    /// Runs `work` on every processor at once, with the processor's index and its MSRs, and returns
    /// when all have finished. `work` runs above DISPATCH_LEVEL: it must not wait or allocate.
    fn on_every_processor<F: Fn(u32, &mut Self::Msrs) + Sync>(&self, ownership: &Self::Ownership, work: &F);

    /// A monotonic clock in 100 ns units.
    fn now_100ns(&self) -> u64;

    /// Whether the caller runs at PASSIVE_LEVEL, where the HAL may be asked for counters.
    fn at_passive_level(&self) -> bool;

    /// Makes the housekeeping thread re-read its schedule now. IRQL <= DISPATCH_LEVEL.
    fn wake_housekeeping(&self);

    /// Writes a line of diagnostic output (the debugger in the driver). Any IRQL.
    fn log(&self, line: fmt::Arguments<'_>);

    /// Reads value `name` of the service's `Parameters` key into `buffer`, whose first
    /// [`HEADER_UNITS`](crate::settings::HEADER_UNITS) units the platform may use for the value's
    /// header. PASSIVE_LEVEL.
    fn read_setting<'b>(&self, name: &str, buffer: &'b mut [u16]) -> Setting<'b>;

    /// Sets (`true`: REG_DWORD [`MARKER_SET`](super::boot_guard::MARKER_SET)) or deletes the boot
    /// guard's marker, value [`MARKER`](super::boot_guard::MARKER) of the service's `Parameters` key,
    /// and flushes it to disk: whether both succeeded (deleting a marker that is not there succeeds).
    /// PASSIVE_LEVEL.
    fn write_guard_marker(&self, set: bool) -> bool;

    /// The configuration DWORDs of PCI bus 0, device 0, function 0 that memory controller detection
    /// reads (`crate::imc::detect`); all ones for a DWORD that could not be read. PASSIVE_LEVEL.
    fn read_host_bridge(&self) -> HostBridge;

    /// Maps `page` read-only and uncached, for its counters only; `None` if the mapping failed.
    /// PASSIVE_LEVEL.
    fn map_counter_page(&self, page: &ControllerPage) -> Option<Self::CounterPage>;
}
