//! DriverEntry and DriverUnload: thin shims between the I/O manager's calling convention and the safe
//! [`Driver`] that holds everything the driver set up.

use crate::driver::Driver;
use core::cell::UnsafeCell;
use windows_sys::Wdk::Foundation::DRIVER_OBJECT;
use windows_sys::Win32::Foundation::{NTSTATUS, STATUS_SUCCESS, UNICODE_STRING};

/// The loaded driver, between a successful DriverEntry and DriverUnload.
struct LoadedDriver(UnsafeCell<Option<Driver>>);

// SAFETY: only DriverEntry and DriverUnload touch the cell, and the I/O manager never runs them at
// the same time (DriverUnload only after DriverEntry has returned successfully).
unsafe impl Sync for LoadedDriver {}

static LOADED: LoadedDriver = LoadedDriver(UnsafeCell::new(None));

/// The image entry point (linked with `/ENTRY:DriverEntry`).
///
/// It lives in the discardable `INIT` section: the memory manager frees `INIT` once DriverEntry has
/// returned, so nothing here may be called afterwards. DriverUnload therefore stays in `.text`.
///
/// # Safety
/// Called only by the I/O manager, at PASSIVE_LEVEL, with a valid driver object that no one else
/// touches until DriverEntry returns.
#[unsafe(no_mangle)]
#[unsafe(link_section = "INIT")]
pub unsafe extern "system" fn DriverEntry(
    driver: *mut DRIVER_OBJECT,
    registry_path: *const UNICODE_STRING,
) -> NTSTATUS {
    log_info!("pmupcw {} loading", env!("CARGO_PKG_VERSION"));
    // SAFETY: DriverEntry, at PASSIVE_LEVEL, before anything allocates.
    unsafe { super::pool::find_allocator() };
    // SAFETY: the I/O manager passes the service key's path (or NULL, tolerated), valid until
    // DriverEntry returns.
    let path = unsafe { registry_path.as_ref() };
    let registry_path: &[u16] = match path {
        Some(path) if !path.Buffer.is_null() => {
            // SAFETY: Buffer holds Length bytes (a UNICODE_STRING's contract); the driver copies them
            // before DriverEntry returns.
            unsafe { core::slice::from_raw_parts(path.Buffer, usize::from(path.Length) / 2) }
        }
        _ => &[],
    };
    match Driver::load(registry_path) {
        Ok(loaded) => {
            // SAFETY: DriverEntry runs alone (see LoadedDriver).
            unsafe { *LOADED.0.get() = Some(loaded) };
            // SAFETY: the I/O manager passes a valid driver object that this routine owns until it
            // returns. The unload routine is set only after a successful load: the I/O manager never
            // calls DriverUnload for a failed DriverEntry, so a failing load has undone its own work.
            unsafe { (*driver).DriverUnload = Some(driver_unload) };
            log_info!("pmupcw loaded");
            STATUS_SUCCESS
        }
        Err(status) => {
            log_error!("pmupcw failed to load: {status:#x}");
            status
        }
    }
}

/// # Safety
/// Called only by the I/O manager, at PASSIVE_LEVEL, after a successful DriverEntry.
unsafe extern "system" fn driver_unload(_driver: *const DRIVER_OBJECT) {
    // SAFETY: DriverUnload runs alone (see LoadedDriver).
    let loaded = unsafe { (*LOADED.0.get()).take() };
    // Unregisters every counterset (waiting for running callbacks), then frees what they read.
    drop(loaded);
    log_info!("pmupcw unloaded");
}
