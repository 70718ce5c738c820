//! The service's `Parameters` key: its path, copied at DriverEntry (the RegistryPath string is not
//! valid after DriverEntry returns), reading a value with ZwOpenKey / ZwQueryValueKey, and writing or
//! deleting a REG_DWORD with ZwCreateKey / ZwSetValueKey / ZwDeleteValueKey, then ZwFlushKey, so
//! that the change is on disk before the caller goes on; all at PASSIVE_LEVEL (Microsoft Learn, the
//! functions' pages).

use super::pool::PoolSlice;
use crate::settings::{self, DATA_LENGTH_UNIT, HEADER_UNITS, Setting, TYPE_UNIT};
use core::ffi::c_void;
use core::mem::offset_of;
use core::ptr;
use windows_sys::Wdk::Foundation::OBJECT_ATTRIBUTES;
use windows_sys::Wdk::System::SystemServices::KEY_VALUE_PARTIAL_INFORMATION;
use windows_sys::Win32::Foundation::{STATUS_BUFFER_OVERFLOW, STATUS_OBJECT_NAME_NOT_FOUND, UNICODE_STRING};

/// KEY_READ, KEY_SET_VALUE (winnt.h).
const KEY_READ: u32 = 0x2_0019;
const KEY_SET_VALUE: u32 = 0x2;
/// REG_OPTION_NON_VOLATILE (wdm.h): the key is kept in the hive on disk.
const REG_OPTION_NON_VOLATILE: u32 = 0;
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
        let (name_units, name_len) = value_name_units(name);
        let Some(key) = self.open(KEY_READ) else { return Setting::Missing };
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

    /// Writes REG_DWORD `value` as value `name` (`Some`, creating the key if missing) or deletes it
    /// (`None`; a value or key that is not there is already deleted), then flushes the key's hive, so
    /// that a crash right after does not lose the change (the configuration manager's lazy flush
    /// comes seconds later; Microsoft Learn, "ZwFlushKey function"). The NTSTATUS of the first call
    /// that failed. PASSIVE_LEVEL.
    pub fn write_dword(&self, name: &str, value: Option<u32>) -> Result<(), i32> {
        let (name_units, name_len) = value_name_units(name);
        let value_name = unicode_string(&name_units[..name_len]);
        let key = match value {
            Some(_) => self.create()?,
            None => match self.open(KEY_SET_VALUE) {
                Some(key) => key,
                None => return Ok(()),
            },
        };
        let status = match value {
            Some(data) => {
                // SAFETY: `key` is open with KEY_SET_VALUE; the name and the 4 bytes of data outlive
                // the call.
                unsafe {
                    ntoskrnl_imports::ZwSetValueKey(
                        key.0,
                        (&raw const value_name).cast(),
                        0,
                        crate::settings::REG_DWORD,
                        (&raw const data).cast(),
                        4,
                    )
                }
            }
            None => {
                // SAFETY: `key` is open with KEY_SET_VALUE; the name outlives the call.
                let status =
                    unsafe { ntoskrnl_imports::ZwDeleteValueKey(key.0, (&raw const value_name).cast()) };
                if status == STATUS_OBJECT_NAME_NOT_FOUND { 0 } else { status }
            }
        };
        if status < 0 {
            return Err(status);
        }
        // SAFETY: `key` is an open key handle.
        let status = unsafe { ntoskrnl_imports::ZwFlushKey(key.0) };
        if status < 0 { Err(status) } else { Ok(()) }
    }

    /// Opens the key for setting values, creating it (non-volatile) if missing.
    fn create(&self) -> Result<KeyHandle, i32> {
        let path = unicode_string(&self.path);
        let attributes = object_attributes(&path);
        let mut handle: *mut c_void = ptr::null_mut();
        // SAFETY: the attributes and the path they name outlive the call; no class, no disposition;
        // the handle is closed by KeyHandle's Drop.
        let status = unsafe {
            ntoskrnl_imports::ZwCreateKey(
                &mut handle,
                KEY_SET_VALUE,
                (&raw const attributes).cast(),
                0,
                ptr::null(),
                REG_OPTION_NON_VOLATILE,
                ptr::null_mut(),
            )
        };
        if status >= 0 { Ok(KeyHandle(handle)) } else { Err(status) }
    }

    fn open(&self, access: u32) -> Option<KeyHandle> {
        let path = unicode_string(&self.path);
        let attributes = object_attributes(&path);
        let mut handle: *mut c_void = ptr::null_mut();
        // SAFETY: the attributes and the path they name outlive the call; the handle is closed by
        // KeyHandle's Drop.
        let status =
            unsafe { ntoskrnl_imports::ZwOpenKey(&mut handle, access, (&raw const attributes).cast()) };
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

/// The key's OBJECT_ATTRIBUTES: its full path, a kernel handle, names compared case-insensitively.
fn object_attributes(path: &UNICODE_STRING) -> OBJECT_ATTRIBUTES {
    OBJECT_ATTRIBUTES {
        Length: size_of::<OBJECT_ATTRIBUTES>() as u32,
        RootDirectory: ptr::null_mut(),
        ObjectName: path,
        Attributes: ATTRIBUTES,
        SecurityDescriptor: ptr::null(),
        SecurityQualityOfService: ptr::null(),
    }
}

/// A value name as UTF-16 (up to 32 units) and its length.
fn value_name_units(name: &str) -> ([u16; 32], usize) {
    let mut units = [0u16; 32];
    let mut len = 0;
    for (unit, source) in units.iter_mut().zip(name.encode_utf16()) {
        *unit = source;
        len += 1;
    }
    (units, len)
}

fn unicode_string(units: &[u16]) -> UNICODE_STRING {
    let bytes = (units.len() * 2).min(usize::from(u16::MAX - 1)) as u16;
    UNICODE_STRING { Length: bytes, MaximumLength: bytes, Buffer: units.as_ptr().cast_mut() }
}
