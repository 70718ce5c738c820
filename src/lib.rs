//! pmupcw: a Windows kernel-mode WDM driver that publishes the processor's hardware performance
//! counters (the PMU) as Windows performance counters (PCW).
//!
//! Built for `x86_64-pc-windows-msvc` this crate is the driver image, `pmupcw.sys`; the kernel-facing
//! parts (`kernel`, the entry points) exist only there. Built for the host it is an ordinary library
//! whose pure logic (text formatting today; the wildcard matcher, CPUID decoding and counter arithmetic
//! as they arrive) is unit tested without any kernel.
#![cfg_attr(target_os = "windows", no_std)]

pub mod text;

#[cfg(target_os = "windows")]
#[macro_use]
mod kernel;

/// Pool tag for every allocation the driver makes ('Pmuc' read as a little-endian ULONG, the way
/// poolmon and `!poolused` show it).
pub const POOL_TAG: u32 = u32::from_le_bytes(*b"Pmuc");

/// Driver-wide initialisation, called once from DriverEntry at PASSIVE_LEVEL.
///
/// Returning an error makes DriverEntry fail; everything set up before the failure must already have
/// been undone by then, because the I/O manager will not call DriverUnload for a failed load.
#[cfg(target_os = "windows")]
fn driver_load() -> Result<(), kernel::NtStatus> {
    log_info!("pmupcw {} loaded", env!("CARGO_PKG_VERSION"));
    Ok(())
}

/// Driver-wide teardown, called once from DriverUnload at PASSIVE_LEVEL.
#[cfg(target_os = "windows")]
fn driver_unload() {
    log_info!("pmupcw unloading");
}
