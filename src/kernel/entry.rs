//! DriverEntry and DriverUnload: thin shims between the I/O manager's calling convention and the safe
//! `driver_load` / `driver_unload` in the crate root.

use windows_sys::Wdk::Foundation::DRIVER_OBJECT;
use windows_sys::Win32::Foundation::{NTSTATUS, STATUS_SUCCESS, UNICODE_STRING};

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
    _registry_path: *const UNICODE_STRING,
) -> NTSTATUS {
    // SAFETY: the I/O manager passes a valid driver object that this routine owns until it returns.
    let driver = unsafe { &mut *driver };
    match crate::driver_load() {
        Ok(()) => {
            // Set only after a successful load: the I/O manager never calls DriverUnload for a failed
            // DriverEntry, so a failing load must already have undone its own work.
            driver.DriverUnload = Some(driver_unload);
            STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// # Safety
/// Called only by the I/O manager, at PASSIVE_LEVEL, after a successful DriverEntry.
unsafe extern "system" fn driver_unload(_driver: *const DRIVER_OBJECT) {
    crate::driver_unload();
}
