//! The ownership session: when the driver owns the PMU, how it asks the HAL, how it programs, reads,
//! polls, repairs and releases the counters, and what it reports. Generic over a [`Platform`] (the
//! kernel in the driver, a fake in the host tests), so the whole state machine is tested on the host.
#![deny(unsafe_code)]

mod client;
pub mod platform;
mod processor_state;
mod read;
mod repair;
mod schedule;
mod throttle;

pub use client::{Part, PmuClient};
pub use platform::{Form, Platform};
pub use processor_state::ProcessorState;
