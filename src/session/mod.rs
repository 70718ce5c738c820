//! The ownership session: when the driver owns the PMU, how it asks the HAL, how it programs, reads,
//! polls, repairs and releases the counters, and what it reports. Generic over a [`Platform`] (the
//! kernel in the driver, a fake in the host tests), so the whole state machine is tested on the host.
//!
//! Policy and mechanics are apart: `client` decides when to own (demand, hysteresis, retries,
//! deferral, the housekeeping tick), how often to read (`throttle`, `schedule`) and what the status
//! says; the core PMU's mechanics are its siblings: the HAL request (`request`), the session of each
//! core type (`core_type_session`) with its counters' read recipe (`count_table`), starting, reading
//! and repairing one processor (`start`, `read`, `repair`) and the Top-down Source rule
//! (`topdown_source`).
#![deny(unsafe_code)]

mod client;
mod core_type_session;
mod count_table;
mod overflow_target;
pub mod platform;
mod processor_state;
mod read;
mod repair;
mod request;
mod schedule;
mod start;
mod throttle;
mod topdown_source;

pub use client::PmuClient;
pub use core_type_session::CoreTypeSession;
pub use overflow_target::OverflowTarget;
pub use platform::{Form, Platform};
pub use processor_state::ProcessorState;
