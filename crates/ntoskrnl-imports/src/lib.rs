//! Kernel exports that windows-sys binds to the wrong module, bound here to `ntoskrnl.exe`: windows-sys
//! 0.61 declares `DbgPrintEx` (and most `Rtl*` helpers) as imports from `ntdll.dll`, the user-mode
//! library, which a driver cannot import (the kernel loader would refuse the image).
//!
//! Why a separate crate: raw-dylib imports of one symbol from two modules do not conflict at link time;
//! the linker takes the first definition it meets. windows-sys's rlib carries its ntdll import members
//! and comes before the driver crate's own import library on the link line, so a declaration in the
//! driver crate loses; rustc places every crate before the crates it depends on, so this crate, which
//! depends on windows-sys, comes first and its bindings win. The driver's binary check
//! (tests/binary_checks.rs) fails if an import ever names ntdll.dll again.
//!
//! ```text
//! ULONG  DbgPrintEx(ULONG ComponentId, ULONG Level, PCSTR Format, ...)   any IRQL <= DIRQL
//! WCHAR  RtlUpcaseUnicodeChar(WCHAR SourceCharacter)                     any IRQL
//! NTSTATUS ZwClose(HANDLE Handle)                                         PASSIVE_LEVEL
//! NTSTATUS ZwWaitForSingleObject(HANDLE, BOOLEAN, PLARGE_INTEGER)         PASSIVE_LEVEL
//! NTSTATUS ZwOpenKey(PHANDLE, ACCESS_MASK, POBJECT_ATTRIBUTES)               PASSIVE_LEVEL
//! ZwQueryValueKey, ZwCreateKey, ZwSetValueKey, ZwDeleteValueKey, ZwFlushKey     PASSIVE_LEVEL
//! ```
#![no_std]

use core::ffi::{c_char, c_int, c_void};

// On non-Windows hosts the declarations exist but are never linked.
#[cfg_attr(windows, link(name = "ntoskrnl.exe", kind = "raw-dylib", modifiers = "+verbatim"))]
unsafe extern "C" {
    /// `ULONG DbgPrintEx(ULONG ComponentId, ULONG Level, PCSTR Format, ...)`: callable up to DIRQL when
    /// the format has no Unicode conversions.
    pub fn DbgPrintEx(component_id: u32, level: u32, format: *const c_char, ...) -> u32;

    // The C memory functions that core's code calls. The WDK build gets them from ntoskrnl.lib; the
    // WDK-free build imports the same exports by name instead of compiling its own: the kernel's
    // versions are tuned, resident and callable at any IRQL, and a hand-written Rust memcpy risks the
    // optimiser turning its loop back into a call to memcpy.
    pub fn memcpy(dest: *mut c_void, src: *const c_void, count: usize) -> *mut c_void;
    pub fn memmove(dest: *mut c_void, src: *const c_void, count: usize) -> *mut c_void;
    pub fn memset(dest: *mut c_void, value: c_int, count: usize) -> *mut c_void;
    pub fn memcmp(left: *const c_void, right: *const c_void, count: usize) -> c_int;
}

#[cfg_attr(windows, link(name = "ntoskrnl.exe", kind = "raw-dylib", modifiers = "+verbatim"))]
unsafe extern "system" {
    /// The kernel's Unicode upcase (the table perflib's own name comparisons use).
    pub fn RtlUpcaseUnicodeChar(source: u16) -> u16;

    /// `NTSTATUS ZwClose(HANDLE Handle)`: closes a kernel handle. PASSIVE_LEVEL.
    pub fn ZwClose(handle: *mut core::ffi::c_void) -> i32;

    /// `NTSTATUS ZwWaitForSingleObject(HANDLE Handle, BOOLEAN Alertable, PLARGE_INTEGER Timeout)`:
    /// waits on the object behind a kernel handle. PASSIVE_LEVEL.
    pub fn ZwWaitForSingleObject(handle: *mut core::ffi::c_void, alertable: u8, timeout: *const i64) -> i32;

    /// `NTSTATUS ZwOpenKey(PHANDLE KeyHandle, ACCESS_MASK DesiredAccess, POBJECT_ATTRIBUTES
    /// ObjectAttributes)`: opens a registry key. PASSIVE_LEVEL. (windows-sys binds it to ntdll.dll.)
    pub fn ZwOpenKey(
        key_handle: *mut *mut core::ffi::c_void,
        desired_access: u32,
        object_attributes: *const c_void,
    ) -> i32;

    /// `NTSTATUS ZwQueryValueKey(HANDLE KeyHandle, PUNICODE_STRING ValueName,
    /// KEY_VALUE_INFORMATION_CLASS KeyValueInformationClass, PVOID KeyValueInformation, ULONG Length,
    /// PULONG ResultLength)`: reads a registry value. PASSIVE_LEVEL. (windows-sys binds it to ntdll.dll.)
    pub fn ZwQueryValueKey(
        key_handle: *mut core::ffi::c_void,
        value_name: *const c_void,
        information_class: i32,
        information: *mut c_void,
        length: u32,
        result_length: *mut u32,
    ) -> i32;

    /// `NTSTATUS ZwCreateKey(PHANDLE KeyHandle, ACCESS_MASK DesiredAccess, POBJECT_ATTRIBUTES
    /// ObjectAttributes, ULONG TitleIndex, PUNICODE_STRING Class, ULONG CreateOptions, PULONG
    /// Disposition)`: opens a registry key, creating it if missing. PASSIVE_LEVEL.
    pub fn ZwCreateKey(
        key_handle: *mut *mut core::ffi::c_void,
        desired_access: u32,
        object_attributes: *const c_void,
        title_index: u32,
        class: *const c_void,
        create_options: u32,
        disposition: *mut u32,
    ) -> i32;

    /// `NTSTATUS ZwSetValueKey(HANDLE KeyHandle, PUNICODE_STRING ValueName, ULONG TitleIndex, ULONG
    /// Type, PVOID Data, ULONG DataSize)`: writes a registry value. PASSIVE_LEVEL.
    pub fn ZwSetValueKey(
        key_handle: *mut core::ffi::c_void,
        value_name: *const c_void,
        title_index: u32,
        value_type: u32,
        data: *const c_void,
        data_size: u32,
    ) -> i32;

    /// `NTSTATUS ZwDeleteValueKey(HANDLE KeyHandle, PUNICODE_STRING ValueName)`: deletes a registry
    /// value. PASSIVE_LEVEL.
    pub fn ZwDeleteValueKey(key_handle: *mut core::ffi::c_void, value_name: *const c_void) -> i32;

    /// `NTSTATUS ZwFlushKey(HANDLE KeyHandle)`: commits the key's changes to disk. PASSIVE_LEVEL.
    pub fn ZwFlushKey(key_handle: *mut core::ffi::c_void) -> i32;
}

/// DPFLTR_IHVDRIVER_ID: the debug-print component for third-party drivers.
pub const DPFLTR_IHVDRIVER_ID: u32 = 77;
