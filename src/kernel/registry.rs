//! The service's `Parameters` key: its path, copied at DriverEntry (the RegistryPath string is not
//! valid after DriverEntry returns), and reading a value with ZwOpenKey / ZwQueryValueKey at
//! PASSIVE_LEVEL (Microsoft Learn, "ZwOpenKey function" and "ZwQueryValueKey function").

use super::pool::PoolSlice;
use crate::settings::{self, DATA_LENGTH_UNIT, HEADER_UNITS, Setting, TYPE_UNIT};
use core::ffi::c_void;
use core::mem::offset_of;
use core::ptr;
use windows_sys::Wdk::Foundation::OBJECT_ATTRIBUTES;
use windows_sys::Wdk::System::SystemServices::KEY_VALUE_PARTIAL_INFORMATION;
use windows_sys::Win32::Foundation::{STATUS_BUFFER_OVERFLOW, STATUS_OBJECT_NAME_NOT_FOUND, UNICODE_STRING};

/// KEY_READ (winnt.h).
const KEY_READ: u32 = 0x2_0019;
/// OBJ_CASE_INSENSITIVE | OBJ_KERNEL_HANDLE: a handle only the kernel can use, which a driver needs
/// when it may run in a user process's context (a PCW collect does).
const ATTRIBUTES: u32 = 0x40 | 0x200;
/// KeyValuePartialInformation (wdm.h KEY_VALUE_INFORMATION_CLASS).
const KEY_VALUE_PARTIAL_INFORMATION: i32 = 2;
// The settings room reads the header ZwQueryValueKey writes by these offsets, in UTF-16 units: they
// are wdm.h's KEY_VALUE_PARTIAL_INFORMATION's, or the driver does not build.
const _: () = assert!(offset_of!(KEY_VALUE_PARTIAL_INFORMATION, Type) == TYPE_UNIT * 2);
const _: () = assert!(offset_of!(KEY_VALUE_PARTIAL_INFORMATION, DataLength) == DATA_LENGTH_UNIT * 2);
const _: () = assert!(offset_of!(KEY_VALUE_PARTIAL_INFORMATION, Data) == HEADER_UNITS * 2);
const SUFFIX: &str = "\\Parameters";

/// `<RegistryPath>\Parameters`, in pool memory.
pub struct ParametersKey {
    path: PoolSlice<u16>,
}

impl ParametersKey {
    /// Copies `registry_path` (the driver's service key, as DriverEntry received it) and appends
    /// `\Parameters`. `None` when out of pool.
    pub fn new(registry_path: &[u16]) -> Option<Self> {
        let mut path = PoolSlice::zeroed(registry_path.len() + SUFFIX.len())?;
        for (unit, source) in path.iter_mut().zip(registry_path.iter().copied().chain(SUFFIX.encode_utf16()))
        {
            *unit = source;
        }
        Some(ParametersKey { path })
    }

    /// Reads value `name` into `buffer`, whose first [`HEADER_UNITS`] units hold the value's header
    /// (KEY_VALUE_PARTIAL_INFORMATION up to its data).
    /// PASSIVE_LEVEL.
    pub fn read<'b>(&self, name: &str, buffer: &'b mut [u16]) -> Setting<'b> {
        let mut name_units = [0u16; 32];
        let mut name_len = 0;
        for (unit, source) in name_units.iter_mut().zip(name.encode_utf16()) {
            *unit = source;
            name_len += 1;
        }
        let Some(key) = self.open() else { return Setting::Missing };
        let value_name = unicode_string(&name_units[..name_len]);
        let mut result_length = 0u32;
        let bytes = u32::try_from(buffer.len() * 2).unwrap_or(u32::MAX);
        // SAFETY: `key` is an open key handle; the name and the buffer outlive the call, and `bytes` is
        // the buffer's size; ZwQueryValueKey writes at most that many bytes.
        let status = unsafe {
            ntoskrnl_imports::ZwQueryValueKey(
                key.0,
                (&raw const value_name).cast(),
                KEY_VALUE_PARTIAL_INFORMATION,
                buffer.as_mut_ptr().cast(),
                bytes,
                &mut result_length,
            )
        };
        drop(key);
        match status {
            0 => {}
            STATUS_OBJECT_NAME_NOT_FOUND => return Setting::Missing,
            STATUS_BUFFER_OVERFLOW | windows_sys::Win32::Foundation::STATUS_BUFFER_TOO_SMALL => {
                return Setting::TooLong;
            }
            failed => return Setting::Failed(failed),
        }
        settings::received(buffer)
    }

    fn open(&self) -> Option<KeyHandle> {
        let path = unicode_string(&self.path);
        let attributes = OBJECT_ATTRIBUTES {
            Length: size_of::<OBJECT_ATTRIBUTES>() as u32,
            RootDirectory: ptr::null_mut(),
            ObjectName: &path,
            Attributes: ATTRIBUTES,
            SecurityDescriptor: ptr::null(),
            SecurityQualityOfService: ptr::null(),
        };
        let mut handle: *mut c_void = ptr::null_mut();
        // SAFETY: the attributes and the path they name outlive the call; the handle is closed by
        // KeyHandle's Drop.
        let status =
            unsafe { ntoskrnl_imports::ZwOpenKey(&mut handle, KEY_READ, (&raw const attributes).cast()) };
        // Not `then_some`: that would build (and drop, closing) a KeyHandle for a failed open too.
        if status >= 0 { Some(KeyHandle(handle)) } else { None }
    }
}

/// An open key, closed on drop.
struct KeyHandle(*mut c_void);

impl Drop for KeyHandle {
    fn drop(&mut self) {
        // SAFETY: a handle ZwOpenKey returned, closed once.
        unsafe { ntoskrnl_imports::ZwClose(self.0) };
    }
}

fn unicode_string(units: &[u16]) -> UNICODE_STRING {
    let bytes = (units.len() * 2).min(usize::from(u16::MAX - 1)) as u16;
    UNICODE_STRING { Length: bytes, MaximumLength: bytes, Buffer: units.as_ptr().cast_mut() }
}
