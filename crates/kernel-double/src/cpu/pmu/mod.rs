//! The virtual PMU: one per virtual processor, behind the MSR map, for the chosen CPU model's layout,
//! in four jobs, each its own module, layered so that none imports one above it:
//!
//! * `workload`: what one unit of work makes of each event, which tests change (IPC, frequency,
//!   top-down mix), and which event an event select counts;
//! * `registers`: the registers and their architectural semantics (Intel IA32_PERFEVTSELx, fixed
//!   counters, the global control and status registers, IA32_PERF_METRICS; AMD PerfCtl/PerfCtr and the
//!   PerfMonV2 global registers), read, written and reset;
//! * `counting`: how counters advance under the workload when a test steps a processor ([`step`]),
//!   and [`counted`], the exact totals the driver must report;
//! * `delivery`: overflow interrupts, delivered to the HAL's handler between instructions of whoever
//!   occupies the processor.
//!
//! This module only names what the rest of the double and the tests use; the modules below it import
//! each other directly.

mod counting;
mod delivery;
mod registers;
pub(super) mod workload;

pub use counting::READER_SLOTS_UNITS;
pub(crate) use counting::reader_executes;
pub use counting::{counted, counter_of, preload, programmed_counters, topdown_counted};
pub use delivery::{delivered, delivered_to_occupant, overflow_between_instructions, pending, step};
pub(crate) use delivery::{interruptible_point, occupy, set_overflow_handler};
pub use registers::{
    at_power_on, atom_width, foreign_read, foreign_write, is_pmu_msr, pmc_reads, power_on_enables_cleared,
    power_on_reset,
};
pub(crate) use registers::{read, read_pmc, write};
pub use workload::{
    ATOM_BACKEND_BOUND, ATOM_BAD_SPECULATION, ATOM_FRONTEND_BOUND, ATOM_RETIRING, CORE_CYCLES, EVENTS,
    FREQUENCY_RANGE, INSTRUCTIONS, IPC_RANGE, RATES, RECOVERY_CYCLES, REFERENCE_CYCLES, SLOTS_ISSUED,
    SLOTS_NOT_DELIVERED, SLOTS_RETIRED, TOPDOWN_RATES, TOPDOWN_SLOTS, rate, set_topdown_mix, set_workload,
};
