//! The registry as a driver uses its service key: ZwOpenKey, ZwQueryValueKey and (through ZwClose)
//! closing key handles here, the writes in [`mod@write`] (with the hive on disk a flush writes), over
//! an in-memory tree that tests fill with [`set_value`].
//!
//! Semantics, from Microsoft Learn ("ZwOpenKey function", "ZwQueryValueKey function",
//! "KEY_VALUE_PARTIAL_INFORMATION structure", "OBJECT_ATTRIBUTES structure"):
//! * both at PASSIVE_LEVEL;
//! * OBJECT_ATTRIBUTES must have its Length, an ObjectName and no RootDirectory here (the driver
//!   opens by full path); without OBJ_KERNEL_HANDLE a driver that may run in a user process's
//!   context (a PCW callback does) gets a handle that process can use: a violation, as Driver
//!   Verifier's "kernel handle" check reports it;
//! * a key or value that does not exist: STATUS_OBJECT_NAME_NOT_FOUND (the names compare
//!   case-insensitively, OBJ_CASE_INSENSITIVE or not: the registry's names are case-insensitive);
//! * KeyValuePartialInformation: TitleIndex, Type, DataLength, then the data. A buffer smaller than
//!   the 12-byte header: STATUS_BUFFER_TOO_SMALL; one that holds the header but not all the data:
//!   STATUS_BUFFER_OVERFLOW with the header written. *ResultLength is the size needed, either way;
//! * other information classes are not modelled (the driver does not use them): a violation;
//! * handles left open at unload are counted in the report.
//!
//! [`set_value`]: control::set_value

use super::call::{UnicodeString, enter, units_of};
use crate::cpu::PASSIVE_LEVEL;
use crate::poison::IgnorePoison;
use crate::status::*;
use std::collections::HashMap;
use std::sync::Mutex;

/// What tests and tools use to steer and inspect this part of the double; the driver never calls it.
pub mod control;
/// The writing exports and the hive on disk.
pub mod write;

/// The driver's service key, as the double's DriverEntry passes it.
pub const SERVICE_KEY: &str = "\\REGISTRY\\MACHINE\\SYSTEM\\CurrentControlSet\\Services\\pmupcw";
/// Its Parameters subkey.
pub const PARAMETERS_KEY: &str =
    "\\REGISTRY\\MACHINE\\SYSTEM\\CurrentControlSet\\Services\\pmupcw\\Parameters";

/// REG_SZ, REG_DWORD, REG_MULTI_SZ (winnt.h).
pub const REG_SZ: u32 = 1;
pub const REG_DWORD: u32 = 4;
pub const REG_MULTI_SZ: u32 = 7;

const OBJ_KERNEL_HANDLE: u32 = 0x200;
const KEY_VALUE_PARTIAL_INFORMATION: i32 = 2;
const PARTIAL_HEADER: usize = 12;

/// Keys by lower-case path, each with its values by lower-case name: (type, data).
type Keys = HashMap<String, HashMap<String, (u32, Vec<u8>)>>;

#[derive(Default)]
struct Tree {
    /// The registry in memory, as every caller sees it.
    keys: Keys,
    /// The hive on disk: what the last flush (or a test's own value) left there, what a reboot reads.
    disk: Keys,
    /// Where the hive on disk is kept across processes, if a test asked ([`control::persist_hive`]).
    hive_file: Option<std::path::PathBuf>,
    /// Open handles: handle -> (lower-case key path, granted access).
    handles: HashMap<usize, (String, u32)>,
    next_handle: usize,
}

static TREE: Mutex<Option<Tree>> = Mutex::new(None);

fn with_tree<R>(f: impl FnOnce(&mut Tree) -> R) -> R {
    let mut tree = TREE.lock().ignore_poison();
    let tree = tree.get_or_insert_with(|| {
        let mut tree = Tree { next_handle: 0xFFFF_D000_0000_0000, ..Tree::default() };
        tree.keys.insert(SERVICE_KEY.to_lowercase(), HashMap::new());
        tree.disk = tree.keys.clone();
        tree
    });
    f(tree)
}

/// Closes `handle` if it is a key handle (ZwClose's registry half). Whether it was one.
pub(crate) fn close_key(handle: usize) -> bool {
    with_tree(|tree| tree.handles.remove(&handle).is_some())
}

/// The OBJECT_ATTRIBUTES of wdm.h.
#[repr(C)]
pub struct ObjectAttributes {
    pub length: u32,
    pub root_directory: usize,
    pub object_name: *const UnicodeString,
    pub attributes: u32,
    pub security_descriptor: usize,
    pub security_quality_of_service: usize,
}

/// The key path `attributes` names (lower case), checked as ZwOpenKey and ZwCreateKey check it with
/// the KeyHandle they write; on a violation, the status to return.
fn key_path(
    call: &super::call::Call,
    attributes: *const ObjectAttributes,
    handle: *mut usize,
) -> Result<String, i32> {
    if handle.is_null() {
        call.violation("NULL KeyHandle".into());
        return Err(STATUS_INVALID_PARAMETER);
    }
    // SAFETY: the driver passes a valid OBJECT_ATTRIBUTES, checked below.
    let Some(attributes) = (unsafe { attributes.as_ref() }) else {
        call.violation("NULL ObjectAttributes".into());
        return Err(STATUS_INVALID_PARAMETER);
    };
    if attributes.length as usize != size_of::<ObjectAttributes>() || attributes.root_directory != 0 {
        call.violation(format!(
            "OBJECT_ATTRIBUTES Length {} / RootDirectory {:#x}",
            attributes.length, attributes.root_directory
        ));
        return Err(STATUS_INVALID_PARAMETER);
    }
    if attributes.attributes & OBJ_KERNEL_HANDLE == 0 {
        call.violation("a registry handle opened without OBJ_KERNEL_HANDLE".into());
    }
    // SAFETY: ObjectName is a UNICODE_STRING the driver owns.
    match unsafe { units_of(attributes.object_name) } {
        Ok(units) => Ok(String::from_utf16_lossy(&units).to_lowercase()),
        Err(why) => {
            call.violation(format!("ObjectName: {why}"));
            Err(STATUS_INVALID_PARAMETER)
        }
    }
}

/// A new handle to the key at `path` (which exists), with `access`.
fn open_handle(tree: &mut Tree, path: String, access: u32) -> usize {
    tree.next_handle += 4;
    let opened = tree.next_handle;
    tree.handles.insert(opened, (path, access));
    opened
}

/// `NTSTATUS ZwOpenKey(PHANDLE KeyHandle, ACCESS_MASK DesiredAccess, POBJECT_ATTRIBUTES
/// ObjectAttributes)`: PASSIVE_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn zw_open_key(
    handle: *mut usize,
    access: u32,
    attributes: *const ObjectAttributes,
) -> i32 {
    let call = enter("ZwOpenKey", PASSIVE_LEVEL);
    let path = match key_path(&call, attributes, handle) {
        Ok(path) => path,
        Err(status) => return status,
    };
    let opened = with_tree(|tree| tree.keys.contains_key(&path).then(|| open_handle(tree, path, access)));
    match opened {
        Some(opened) => {
            // SAFETY: checked non-null; the driver's HANDLE.
            unsafe { handle.write(opened) };
            STATUS_SUCCESS
        }
        None => STATUS_OBJECT_NAME_NOT_FOUND,
    }
}

/// `NTSTATUS ZwQueryValueKey(HANDLE KeyHandle, PUNICODE_STRING ValueName, KEY_VALUE_INFORMATION_CLASS
/// KeyValueInformationClass, PVOID KeyValueInformation, ULONG Length, PULONG ResultLength)`:
/// PASSIVE_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn zw_query_value_key(
    handle: usize,
    name: *const UnicodeString,
    class: i32,
    information: *mut u8,
    length: u32,
    result_length: *mut u32,
) -> i32 {
    let call = enter("ZwQueryValueKey", PASSIVE_LEVEL);
    if class != KEY_VALUE_PARTIAL_INFORMATION {
        call.violation(format!("information class {class} is not modelled"));
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: ValueName is a UNICODE_STRING the driver owns.
    let name = match unsafe { units_of(name) } {
        Ok(units) => String::from_utf16_lossy(&units).to_lowercase(),
        Err(why) => {
            call.violation(format!("ValueName: {why}"));
            return STATUS_INVALID_PARAMETER;
        }
    };
    if result_length.is_null() {
        call.violation("NULL ResultLength".into());
        return STATUS_INVALID_PARAMETER;
    }
    let value = with_tree(|tree| {
        let (path, _) = tree.handles.get(&handle)?;
        Some(tree.keys.get(path).and_then(|values| values.get(&name).cloned()))
    });
    let Some(value) = value else {
        call.violation(format!("{handle:#x} is not an open key handle"));
        return STATUS_INVALID_HANDLE;
    };
    let Some((kind, data)) = value else { return STATUS_OBJECT_NAME_NOT_FOUND };
    let needed = PARTIAL_HEADER + data.len();
    // SAFETY: checked non-null.
    unsafe { result_length.write(needed as u32) };
    if (length as usize) < PARTIAL_HEADER {
        return STATUS_BUFFER_TOO_SMALL;
    }
    let mut bytes = Vec::with_capacity(needed);
    bytes.extend(0u32.to_le_bytes());
    bytes.extend(kind.to_le_bytes());
    bytes.extend((data.len() as u32).to_le_bytes());
    bytes.extend(&data);
    let written = bytes.len().min(length as usize);
    // SAFETY: the driver's buffer holds `length` bytes; `written` is at most that.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), information, written) };
    if written < needed { STATUS_BUFFER_OVERFLOW } else { STATUS_SUCCESS }
}
