//! pmupcw: a Windows kernel-mode WDM driver that publishes the processor's hardware performance
//! counters (the PMU) as Windows performance counters (PCW).
//!
//! Built for `x86_64-pc-windows-msvc` this crate is the driver image, `pmupcw.sys`. Built for the host
//! it is an ordinary library whose pure logic is unit tested without any kernel: everything but
//! `kernel` (the FFI boundary) and `driver` (the wiring) is such logic.
#![cfg_attr(target_os = "windows", no_std)]
// The modules are crate-private so that the dead-code lint sees what nothing uses. On the host only
// the pure modules and their tests exist (no kernel layer, no driver), so there everything the kernel
// layer uses looks unused: the lint is meaningful on the driver target, where it runs in `cargo make lint`.
#![cfg_attr(not(target_os = "windows"), allow(dead_code, unused_imports))]

pub(crate) mod block;
pub(crate) mod counters;
// Public, unlike the rest: the driver calls most of it (src/session/memory_controller/), but some items
// serve only its host tests (`extend::Extended`, the poll bound), and a public module's items are not
// dead code on the driver target.
pub mod imc;
pub(crate) mod pcw;
pub(crate) mod text;

#[cfg(target_os = "windows")]
#[macro_use]
mod kernel;

pub(crate) mod pmu;
pub(crate) mod session;
pub(crate) mod settings;
pub(crate) mod sync;

#[cfg(target_os = "windows")]
mod driver;

/// Pool tag for every allocation the driver makes ('Pmuc' read as a little-endian ULONG, the way
/// poolmon and `!poolused` show it).
pub const POOL_TAG: u32 = u32::from_le_bytes(*b"Pmuc");
