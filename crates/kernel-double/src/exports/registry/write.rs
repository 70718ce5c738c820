//! Writing the registry: ZwCreateKey, ZwSetValueKey, ZwDeleteValueKey and ZwFlushKey, and the hive on
//! disk that only a flush writes.
//!
//! Semantics, from Microsoft Learn (each function's page):
//! * all four at PASSIVE_LEVEL;
//! * ZwCreateKey opens the key or creates it (non-volatile; a volatile key is not modelled: a
//!   violation), reporting REG_CREATED_NEW_KEY or REG_OPENED_EXISTING_KEY through the optional
//!   Disposition; its parent must exist (STATUS_OBJECT_NAME_NOT_FOUND);
//! * ZwSetValueKey and ZwDeleteValueKey need a handle opened with KEY_SET_VALUE (else
//!   STATUS_ACCESS_DENIED); deleting a missing value is STATUS_OBJECT_NAME_NOT_FOUND;
//! * changes stay in memory until the hive is written: "ZwFlushKey forces a registry key to be
//!   committed to disk" (the whole hive: ReactOS ntoskrnl/config/cmapi.c, CmFlushKey). Windows'
//!   lazy writer flushes seconds later on its own; the double has none, so what the driver did not
//!   flush is lost at a crash ([`control::reboot`]). The boot-phase rule (flushes ignored until the
//!   session manager initialises the registry) is not modelled: `docs/kernel-double.md`, "Registry".
//!
//! [`control::reboot`]: crate::control::registry::reboot

use super::{Keys, ObjectAttributes, Tree, key_path, open_handle, with_tree};
use crate::cpu::PASSIVE_LEVEL;
use crate::exports::call::{UnicodeString, enter, units_of};
use crate::status::*;

/// KEY_SET_VALUE (winnt.h).
pub const KEY_SET_VALUE: u32 = 0x2;
/// REG_OPTION_VOLATILE (wdm.h): not modelled.
const REG_OPTION_VOLATILE: u32 = 0x1;
/// ZwCreateKey's dispositions (wdm.h).
pub const REG_CREATED_NEW_KEY: u32 = 1;
pub const REG_OPENED_EXISTING_KEY: u32 = 2;

/// `NTSTATUS ZwCreateKey(PHANDLE KeyHandle, ACCESS_MASK DesiredAccess, POBJECT_ATTRIBUTES
/// ObjectAttributes, ULONG TitleIndex, PUNICODE_STRING Class, ULONG CreateOptions, PULONG
/// Disposition)`: PASSIVE_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn zw_create_key(
    handle: *mut usize,
    access: u32,
    attributes: *const ObjectAttributes,
    _title_index: u32,
    _class: *const UnicodeString,
    options: u32,
    disposition: *mut u32,
) -> i32 {
    let call = enter("ZwCreateKey", PASSIVE_LEVEL);
    let path = match key_path(&call, attributes, handle) {
        Ok(path) => path,
        Err(status) => return status,
    };
    if options & REG_OPTION_VOLATILE != 0 {
        call.violation(format!("CreateOptions {options:#x}: a volatile key is not modelled"));
        return STATUS_INVALID_PARAMETER;
    }
    let created = with_tree(|tree| {
        let parent = path.rsplit_once('\\').map_or("", |(parent, _)| parent);
        let existed = tree.keys.contains_key(&path);
        if !existed && !tree.keys.contains_key(parent) {
            return None;
        }
        tree.keys.entry(path.clone()).or_default();
        Some((open_handle(tree, path, access), existed))
    });
    let Some((opened, existed)) = created else { return STATUS_OBJECT_NAME_NOT_FOUND };
    // SAFETY: checked non-null; the driver's HANDLE.
    unsafe { handle.write(opened) };
    if !disposition.is_null() {
        let value = if existed { REG_OPENED_EXISTING_KEY } else { REG_CREATED_NEW_KEY };
        // SAFETY: the optional ULONG the driver passed.
        unsafe { disposition.write(value) };
    }
    STATUS_SUCCESS
}

/// The key a handle opened with KEY_SET_VALUE names, and the value name, or the status to return.
fn writable(
    call: &crate::exports::call::Call,
    handle: usize,
    name: *const UnicodeString,
) -> Result<(String, String), i32> {
    // SAFETY: ValueName is a UNICODE_STRING the driver owns.
    let name = match unsafe { units_of(name) } {
        Ok(units) => String::from_utf16_lossy(&units).to_lowercase(),
        Err(why) => {
            call.violation(format!("ValueName: {why}"));
            return Err(STATUS_INVALID_PARAMETER);
        }
    };
    let Some((path, access)) = with_tree(|tree| tree.handles.get(&handle).cloned()) else {
        call.violation(format!("{handle:#x} is not an open key handle"));
        return Err(STATUS_INVALID_HANDLE);
    };
    if access & KEY_SET_VALUE == 0 {
        return Err(STATUS_ACCESS_DENIED);
    }
    Ok((path, name))
}

/// `NTSTATUS ZwSetValueKey(HANDLE KeyHandle, PUNICODE_STRING ValueName, ULONG TitleIndex, ULONG Type,
/// PVOID Data, ULONG DataSize)`: PASSIVE_LEVEL. In memory until flushed.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn zw_set_value_key(
    handle: usize,
    name: *const UnicodeString,
    _title_index: u32,
    kind: u32,
    data: *const u8,
    size: u32,
) -> i32 {
    let call = enter("ZwSetValueKey", PASSIVE_LEVEL);
    let (path, name) = match writable(&call, handle, name) {
        Ok(target) => target,
        Err(status) => return status,
    };
    if data.is_null() && size != 0 {
        call.violation("NULL Data with a non-zero DataSize".into());
        return STATUS_INVALID_PARAMETER;
    }
    let bytes = if size == 0 {
        Vec::new()
    } else {
        // SAFETY: the driver's buffer of `size` bytes, checked non-null.
        unsafe { std::slice::from_raw_parts(data, size as usize) }.to_vec()
    };
    with_tree(|tree| tree.keys.entry(path).or_default().insert(name, (kind, bytes)));
    STATUS_SUCCESS
}

/// `NTSTATUS ZwDeleteValueKey(HANDLE KeyHandle, PUNICODE_STRING ValueName)`: PASSIVE_LEVEL. In memory
/// until flushed.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn zw_delete_value_key(handle: usize, name: *const UnicodeString) -> i32 {
    let call = enter("ZwDeleteValueKey", PASSIVE_LEVEL);
    let (path, name) = match writable(&call, handle, name) {
        Ok(target) => target,
        Err(status) => return status,
    };
    let removed = with_tree(|tree| tree.keys.get_mut(&path).and_then(|values| values.remove(&name)));
    if removed.is_some() { STATUS_SUCCESS } else { STATUS_OBJECT_NAME_NOT_FOUND }
}

/// `NTSTATUS ZwFlushKey(HANDLE KeyHandle)`: PASSIVE_LEVEL. Writes the hive (the whole tree here: the
/// double models one hive) to disk, and to the hive file if a test keeps one.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn zw_flush_key(handle: usize) -> i32 {
    let call = enter("ZwFlushKey", PASSIVE_LEVEL);
    let flushed = with_tree(|tree| {
        tree.handles.get(&handle)?;
        tree.disk = tree.keys.clone();
        Some(save(tree))
    });
    match flushed {
        Some(Ok(())) => STATUS_SUCCESS,
        Some(Err(why)) => panic!("kernel-double: writing the hive file: {why}"),
        None => {
            call.violation(format!("{handle:#x} is not an open key handle"));
            STATUS_INVALID_HANDLE
        }
    }
}

/// Writes the hive on disk to the hive file, if a test keeps one: a line per key (its path), then a
/// line per value (tab, name, tab, type, tab, data in hex).
pub(super) fn save(tree: &Tree) -> std::io::Result<()> {
    let Some(file) = &tree.hive_file else { return Ok(()) };
    let mut text = String::new();
    let mut keys: Vec<_> = tree.disk.iter().collect();
    keys.sort_by(|a, b| a.0.cmp(b.0));
    for (path, values) in keys {
        text += &format!("{path}\n");
        for (name, (kind, data)) in values {
            let hex: String = data.iter().map(|byte| format!("{byte:02x}")).collect();
            text += &format!("\t{name}\t{kind}\t{hex}\n");
        }
    }
    std::fs::write(file, text)
}

/// Reads a hive file [`save`] wrote; `None` if there is none.
pub(super) fn load(file: &std::path::Path) -> Option<Keys> {
    let text = std::fs::read_to_string(file).ok()?;
    let mut keys = Keys::new();
    let mut current = String::new();
    for line in text.lines() {
        match line.strip_prefix('\t') {
            None => {
                current = line.to_owned();
                keys.entry(current.clone()).or_default();
            }
            Some(value) => {
                let mut fields = value.split('\t');
                let (Some(name), Some(kind), Some(hex)) = (fields.next(), fields.next(), fields.next())
                else {
                    panic!("kernel-double: malformed hive file line {line:?}")
                };
                let data = (0..hex.len() / 2)
                    .map(|at| u8::from_str_radix(&hex[2 * at..2 * at + 2], 16).expect("hex in the hive file"))
                    .collect();
                let kind = kind.parse().expect("a registry type in the hive file");
                keys.entry(current.clone()).or_default().insert(name.to_owned(), (kind, data));
            }
        }
    }
    Some(keys)
}
