//! A panic bug-checks the machine.
//!
//! wdk-panic 0.4 spins forever instead (`loop {}`). In a kernel that is worse than a crash: at
//! DISPATCH_LEVEL or above a spinning processor stalls DPCs and IPIs until the DPC watchdog or a
//! freeze takes the whole machine down with no hint of the cause, and at PASSIVE_LEVEL a thread
//! silently wedges holding whatever it held, while the rest of the system keeps running on state the
//! panic said was broken. KeBugCheckEx stops everything at once and leaves a dump whose parameters
//! name the panic's source location. Both build modes use this handler.

use super::debug::{self, Level};
use super::irql;
use core::panic::PanicInfo;
use windows_sys::Wdk::System::SystemServices::KeBugCheckEx;

/// Bug check code raised on a Rust panic ("PMUP" in ASCII). Parameters:
/// 1. address of the panicking source file's name (UTF-8, not NUL-terminated),
/// 2. that name's length in bytes,
/// 3. line,
/// 4. column.
pub const PANIC_BUGCHECK_CODE: u32 = u32::from_be_bytes(*b"PMUP");

#[panic_handler]
fn panic(info: &PanicInfo<'_>) -> ! {
    // DbgPrint is only allowed up to device IRQL; above that (the overflow handler runs at
    // PROFILE_LEVEL) go straight to the bug check.
    if irql::current() <= irql::MAX_DEVICE_LEVEL {
        debug::print(Level::Error, format_args!("panic: {info}"));
    }
    let (file, line, column) = match info.location() {
        Some(location) => (location.file(), location.line(), location.column()),
        None => ("", 0, 0),
    };
    // SAFETY: KeBugCheckEx may be called at any IRQL; its parameters are plain numbers to it.
    unsafe {
        KeBugCheckEx(PANIC_BUGCHECK_CODE, file.as_ptr() as usize, file.len(), line as usize, column as usize)
    };
    // SAFETY: KeBugCheckEx is DECLSPEC_NORETURN in wdm.h; windows-sys merely declares it as returning.
    unsafe { core::hint::unreachable_unchecked() }
}
