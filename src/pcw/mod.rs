//! The PCW provider: what the countersets report and how a consumer's request is answered.
//!
//! Pure logic, no FFI: the kernel boundary (kernel/pcw.rs) registers the countersets and turns PCW's
//! callbacks into calls on [`CountersetCallback`], so everything here is unit tested on the host.
#![deny(unsafe_code)]

pub mod core_types;
pub mod driver_status;
pub mod hardware_counters;
pub mod memory_controller;
pub mod processor_instances;
pub mod query;
pub mod wildcard;

pub use query::{AddInstanceFailed, CountersetCallback, InstanceSink, Query};

/// What the generated counter code names as `crate::pcw::...`: PCW_COUNTER_DESCRIPTOR
/// ([`CounterDescriptor`], whose generated tables PcwRegister takes as they are), the
/// [`CounterBlock`] contract and each counterset's binding ([`Counterset`], [`CountersetBlock`],
/// [`InstanceKind`]). Declared in crate::counters (counter-manifest's contract).
pub use crate::counters::{Cell, CounterBlock, CounterDescriptor, Counterset, CountersetBlock, InstanceKind};
