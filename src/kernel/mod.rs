//! The kernel boundary: the only place that talks to ntoskrnl/HAL, executes privileged instructions or
//! handles raw pointers from the kernel. Everything above it is safe Rust.
//!
//! Bindings come from `windows-sys` (its `Wdk` features). windows-sys declares every function with
//! `windows_link::link!`, which for Windows targets is `#[link(kind = "raw-dylib", modifiers =
//! "+verbatim")]` naming the exporting module (`ntoskrnl.exe`, `hal.dll`), so the image imports by name
//! from those modules and no import library is needed. The few it binds to the wrong module come from
//! crates/ntoskrnl-imports.

#[macro_use]
pub mod debug;
mod bugcheck;
mod build_mode;
pub mod clock;
mod entry;
pub mod irql;
pub mod pcw;
pub mod platform;
pub mod pool;
pub mod power;
pub mod processors;
pub mod registry;

/// An NTSTATUS value.
pub type NtStatus = windows_sys::Win32::Foundation::NTSTATUS;
pub mod all_processors;
pub mod hal_counters;
pub mod mmio;
pub mod msr;
pub mod pmi;
pub mod system_thread;

/// A UNICODE_STRING viewing `units`, for a call that reads the name only while it runs (PCW copies
/// names; MmGetSystemRoutineAddress compares it).
fn unicode_string(units: &[u16]) -> windows_sys::Win32::Foundation::UNICODE_STRING {
    let bytes = (units.len() * 2) as u16;
    windows_sys::Win32::Foundation::UNICODE_STRING {
        Length: bytes,
        MaximumLength: bytes,
        Buffer: units.as_ptr().cast_mut(),
    }
}
