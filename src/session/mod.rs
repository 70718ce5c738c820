//! The ownership session: when the driver owns the PMU, how it asks the HAL, how it programs, reads,
//! polls, repairs and releases the counters, and what it reports. Generic over a [`Platform`] (the
//! kernel in the driver, a fake in the host tests), so the whole state machine is tested on the host.
//!
//! Policy and mechanics are apart: `client` decides when to own (demand, hysteresis, retries,
//! deferral, the housekeeping tick), how often to read (`throttle`, `schedule`) and what the status
//! says; `core_pmu/` holds the core PMU's mechanics (the HAL request, each core type's session, the
//! reads), the first counter source. A second source is a sibling folder driven by the same policy
//! (`docs/ARCHITECTURE.md`, "Two counter sources").
#![deny(unsafe_code)]

pub mod boot_guard;
mod client;
mod core_pmu;
#[cfg(test)]
mod fake_io;
mod memory_controller;
pub mod platform;
mod schedule;
mod throttle;

pub use client::PmuClient;
pub use core_pmu::core_type_session::CoreTypeSession;
pub use core_pmu::overflow_target::OverflowTarget;
pub use core_pmu::processor_state::ProcessorState;
pub use platform::{CounterPage, Form, Platform};
