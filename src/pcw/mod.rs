//! The PCW provider: what the countersets report and how a consumer's request is answered.
//!
//! Pure logic, no FFI: the kernel boundary (kernel/pcw.rs) registers the countersets and turns PCW's
//! callbacks into calls on [`CountersetCallback`], so everything here is unit tested on the host.
#![deny(unsafe_code)]

pub mod core_types;
pub mod driver_status;
pub mod hardware_counters;
pub mod processor_instances;
pub mod query;
pub mod wildcard;

pub use query::{AddInstanceFailed, CounterBlock, CountersetCallback, InstanceSink, Query};

/// A PCW_COUNTER_DESCRIPTOR: counter `id` is `size` bytes at `offset` in data block `struct_index`.
/// The generated tables (crate::counters) are arrays of these, handed to PcwRegister as they are.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterDescriptor {
    pub id: u16,
    pub struct_index: u16,
    pub offset: u16,
    pub size: u16,
}
