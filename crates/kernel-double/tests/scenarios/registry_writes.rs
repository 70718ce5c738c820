//! The fake registry's writing exports as a driver calls them (from virtual processor 0, at
//! PASSIVE_LEVEL): a value set but never flushed is gone after a reboot, a flushed one stays; a
//! handle without KEY_SET_VALUE cannot write; ZwCreateKey needs the parent key; deleting a missing
//! value is STATUS_OBJECT_NAME_NOT_FOUND.

use kernel_double::control::registry::{self, PARAMETERS_KEY, REG_DWORD, SERVICE_KEY};
use kernel_double::cpu;
use kernel_double::exports::UnicodeString;
use kernel_double::exports::registry::write::{
    KEY_SET_VALUE, REG_CREATED_NEW_KEY, REG_OPENED_EXISTING_KEY, zw_create_key, zw_delete_value_key,
    zw_flush_key, zw_set_value_key,
};
use kernel_double::exports::registry::{ObjectAttributes, zw_open_key};
use kernel_double::status::*;

const OBJ_CASE_INSENSITIVE_KERNEL_HANDLE: u32 = 0x40 | 0x200;

fn units(text: &str) -> Vec<u16> {
    text.encode_utf16().collect()
}

/// A driver's OBJECT_ATTRIBUTES for the key `name` names.
fn attributes(name: &UnicodeString) -> ObjectAttributes {
    ObjectAttributes {
        length: size_of::<ObjectAttributes>() as u32,
        root_directory: 0,
        object_name: name,
        attributes: OBJ_CASE_INSENSITIVE_KERNEL_HANDLE,
        security_descriptor: 0,
        security_quality_of_service: 0,
    }
}

/// ZwCreateKey of `path` with `access`: the status, the handle and the disposition.
fn create(path: &str, access: u32) -> (i32, usize, u32) {
    let path = units(path);
    let name = UnicodeString::from_units(&path);
    let attributes = attributes(&name);
    let (mut handle, mut disposition) = (0usize, 0u32);
    // SAFETY: the attributes, the name and the outputs outlive the call.
    let status =
        unsafe { zw_create_key(&mut handle, access, &attributes, 0, std::ptr::null(), 0, &mut disposition) };
    (status, handle, disposition)
}

fn open(path: &str, access: u32) -> usize {
    let path = units(path);
    let name = UnicodeString::from_units(&path);
    let attributes = attributes(&name);
    let mut handle = 0usize;
    // SAFETY: as for `create`.
    assert_eq!(unsafe { zw_open_key(&mut handle, access, &attributes) }, STATUS_SUCCESS);
    handle
}

fn set(handle: usize, name: &str, value: u32) -> i32 {
    let name = units(name);
    let name = UnicodeString::from_units(&name);
    let data = value.to_le_bytes();
    // SAFETY: the name and the 4 bytes outlive the call.
    unsafe { zw_set_value_key(handle, &name, 0, REG_DWORD, data.as_ptr(), 4) }
}

fn delete(handle: usize, name: &str) -> i32 {
    let name = units(name);
    let name = UnicodeString::from_units(&name);
    // SAFETY: the name outlives the call.
    unsafe { zw_delete_value_key(handle, &name) }
}

fn close(handle: usize) {
    // SAFETY: a handle one of the calls above returned, closed once.
    assert_eq!(unsafe { kernel_double::exports::ps::zw_close(handle) }, STATUS_SUCCESS);
}

#[test]
fn only_flushed_writes_survive_a_reboot() {
    cpu::enter(0);
    let (status, parameters, disposition) = create(PARAMETERS_KEY, KEY_SET_VALUE);
    assert_eq!((status, disposition), (STATUS_SUCCESS, REG_CREATED_NEW_KEY));
    assert_eq!(set(parameters, "Flushed", 1), STATUS_SUCCESS);
    // SAFETY: an open key handle.
    assert_eq!(unsafe { zw_flush_key(parameters) }, STATUS_SUCCESS);
    assert_eq!(set(parameters, "Unflushed", 2), STATUS_SUCCESS);
    assert_eq!(delete(parameters, "Missing"), STATUS_OBJECT_NAME_NOT_FOUND);
    close(parameters);
    let dword = |value: u32| Some((REG_DWORD, value.to_le_bytes().to_vec()));
    assert_eq!(registry::value(PARAMETERS_KEY, "Unflushed"), dword(2));
    registry::reboot(None);
    assert_eq!(registry::value(PARAMETERS_KEY, "Flushed"), dword(1));
    assert_eq!(registry::value(PARAMETERS_KEY, "Unflushed"), None, "an unflushed write survived the crash");

    let (status, parameters, disposition) = create(PARAMETERS_KEY, KEY_SET_VALUE);
    assert_eq!((status, disposition), (STATUS_SUCCESS, REG_OPENED_EXISTING_KEY));
    assert_eq!(delete(parameters, "Flushed"), STATUS_SUCCESS);
    close(parameters);
    registry::reboot(None);
    assert_eq!(
        registry::value(PARAMETERS_KEY, "Flushed"),
        dword(1),
        "an unflushed delete survived the crash"
    );
    assert_eq!(registry::open_handles(), 0);
}

#[test]
fn writing_needs_key_set_value_and_creating_needs_the_parent() {
    cpu::enter(0);
    let read_only = open(SERVICE_KEY, 0x2_0019);
    assert_eq!(set(read_only, "Value", 1), STATUS_ACCESS_DENIED);
    assert_eq!(delete(read_only, "Value"), STATUS_ACCESS_DENIED);
    close(read_only);
    let (status, _, _) = create(&format!("{PARAMETERS_KEY}\\Deeper\\Still"), KEY_SET_VALUE);
    assert_eq!(status, STATUS_OBJECT_NAME_NOT_FOUND, "created a key whose parent does not exist");
    assert_eq!(registry::open_handles(), 0);
    assert!(kernel_double::report::Report::now().is_clean(), "{}", kernel_double::report::Report::now());
}
