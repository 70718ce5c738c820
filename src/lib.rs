//! pmupcw: a Windows kernel-mode WDM driver that publishes the processor's hardware performance
//! counters (the PMU) as Windows performance counters (PCW).
//!
//! Built for `x86_64-pc-windows-msvc` this crate is the driver image, `pmupcw.sys`. Built for the host
//! it is an ordinary library whose pure logic is unit tested without any kernel: everything but
//! `kernel` (the FFI boundary) and `driver` (the wiring) is such logic.
#![cfg_attr(target_os = "windows", no_std)]

pub mod counters;
pub mod pcw;
pub mod text;

#[cfg(target_os = "windows")]
#[macro_use]
mod kernel;

pub mod pmu;
pub mod session;

#[cfg(target_os = "windows")]
mod driver;

/// Pool tag for every allocation the driver makes ('Pmuc' read as a little-endian ULONG, the way
/// poolmon and `!poolused` show it).
pub const POOL_TAG: u32 = u32::from_le_bytes(*b"Pmuc");
