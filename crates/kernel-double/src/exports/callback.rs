//! Callback objects: the system-defined `\Callback\PowerState`, opened with ExCreateCallback, notified
//! through the routines registered with ExRegisterCallback, and a suspend/resume that notifies them
//! around a power-on reset of the virtual PMU.
//!
//! Sources: "Using a System-Defined Callback Object" and the ExCreateCallback, ExRegisterCallback
//! and ExUnregisterCallback pages on Microsoft Learn (wdm.h). The system defines the object, so a
//! driver opens it (Create FALSE); each successful ExCreateCallback returns a referenced object that
//! the driver releases with ObDereferenceObject once it has unregistered. Registered routines are
//! called at IRQL <= DISPATCH_LEVEL: the double calls them at DISPATCH_LEVEL, the highest the driver
//! must cope with. For `\Callback\PowerState`, Argument1 is a PO_CB_XXX constant; with
//! PO_CB_SYSTEM_STATE_LOCK, Argument2 is 0 before the system leaves S0 and 1 once it is back in S0.
//!
//! A registration or a reference still held when the driver has unloaded is a leak ([`outstanding`],
//! part of the end-of-run report).
//!
//! [`outstanding`]: control::outstanding

use super::call::{UnicodeString, enter, units_of};
use crate::cpu::{self, DISPATCH_LEVEL, PASSIVE_LEVEL, pmu};
use crate::poison::IgnorePoison;
use crate::status::*;
use std::sync::Mutex;

/// What tests and tools use to steer and inspect this part of the double; the driver never calls it.
pub mod control;

/// PO_CB_SYSTEM_STATE_LOCK (wdm.h): the system power state is about to change, or has changed back.
pub const PO_CB_SYSTEM_STATE_LOCK: usize = 3;
/// OBJ_CASE_INSENSITIVE (wdm.h).
const OBJ_CASE_INSENSITIVE: u32 = 0x40;
const POWER_STATE: &str = "\\Callback\\PowerState";
const STATUS_OBJECT_NAME_NOT_FOUND: NtStatus = 0xC000_0034_u32 as i32;

/// OBJECT_ATTRIBUTES (wdm.h), as the driver passes it.
#[repr(C)]
pub struct ObjectAttributes {
    length: u32,
    root_directory: usize,
    object_name: *const UnicodeString,
    attributes: u32,
    security_descriptor: usize,
    security_quality_of_service: usize,
}

/// The `\Callback\PowerState` object: its address is what the driver holds.
static POWER_STATE_OBJECT: u64 = 0;

fn power_state_object() -> usize {
    &POWER_STATE_OBJECT as *const u64 as usize
}

struct Registration {
    handle: usize,
    function: usize,
    context: usize,
}

#[derive(Default)]
struct State {
    /// References the driver holds on the object (one per successful ExCreateCallback).
    references: usize,
    registrations: Vec<Registration>,
    next_handle: usize,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fn with_state<R>(f: impl FnOnce(&mut State) -> R) -> R {
    f(STATE.lock().ignore_poison().get_or_insert_with(State::default))
}

/// `NTSTATUS ExCreateCallback(PCALLBACK_OBJECT *CallbackObject, POBJECT_ATTRIBUTES ObjectAttributes,
/// BOOLEAN Create, BOOLEAN AllowMultipleCallbacks)`: PASSIVE_LEVEL. Opens `\Callback\PowerState`
/// (case-insensitively with OBJ_CASE_INSENSITIVE); any other name is STATUS_OBJECT_NAME_NOT_FOUND,
/// since the double defines no other callback object and a driver-defined one is not modelled.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ex_create_callback(
    object_out: *mut usize,
    attributes: *const ObjectAttributes,
    create: u8,
    _allow_multiple: u8,
) -> i32 {
    let call = enter("ExCreateCallback", PASSIVE_LEVEL);
    // SAFETY: null or the driver's OBJECT_ATTRIBUTES.
    let Some(attributes) = (unsafe { attributes.as_ref() }) else {
        call.violation("NULL ObjectAttributes".into());
        return STATUS_INVALID_PARAMETER;
    };
    if object_out.is_null() || attributes.length as usize != std::mem::size_of::<ObjectAttributes>() {
        call.violation(format!("NULL CallbackObject or OBJECT_ATTRIBUTES.Length {}", attributes.length));
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: the ObjectName of a valid OBJECT_ATTRIBUTES is null or a UNICODE_STRING.
    let name = match unsafe { units_of(attributes.object_name) } {
        Ok(units) => String::from_utf16_lossy(&units),
        Err(why) => {
            call.violation(format!("ObjectName: {why}"));
            return STATUS_INVALID_PARAMETER;
        }
    };
    let matches = if attributes.attributes & OBJ_CASE_INSENSITIVE != 0 {
        name.eq_ignore_ascii_case(POWER_STATE)
    } else {
        name == POWER_STATE
    };
    if !matches {
        if create != 0 {
            call.violation(format!("creating callback object {name:?}, which the double does not model"));
        }
        return STATUS_OBJECT_NAME_NOT_FOUND;
    }
    with_state(|state| state.references += 1);
    // SAFETY: checked non-null; the driver's PCALLBACK_OBJECT output.
    unsafe { object_out.write(power_state_object()) };
    STATUS_SUCCESS
}

/// `PVOID ExRegisterCallback(PCALLBACK_OBJECT, PCALLBACK_FUNCTION, PVOID CallbackContext)`: IRQL <=
/// DISPATCH_LEVEL. NULL for an object the driver holds no reference on, or a NULL routine.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ex_register_callback(object: usize, function: usize, context: usize) -> usize {
    let call = enter("ExRegisterCallback", DISPATCH_LEVEL);
    with_state(|state| {
        if object != power_state_object() || state.references == 0 || function == 0 {
            call.violation(format!(
                "register on object {object:#x} (referenced: {}) of routine {function:#x}",
                state.references
            ));
            return 0;
        }
        state.next_handle += 1;
        let handle = 0x4342_0000 + state.next_handle * 16;
        state.registrations.push(Registration { handle, function, context });
        handle
    })
}

/// `VOID ExUnregisterCallback(PVOID CallbackRegistration)`: IRQL <= DISPATCH_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ex_unregister_callback(registration: usize) {
    let call = enter("ExUnregisterCallback", DISPATCH_LEVEL);
    let removed = with_state(|state| {
        let position = state.registrations.iter().position(|r| r.handle == registration)?;
        Some(state.registrations.remove(position))
    });
    if removed.is_none() {
        call.violation(format!("unregister of {registration:#x}, which is not registered"));
    }
}

/// ObDereferenceObject of `object` if it is a callback object: `None` if it is not one, else the
/// references left, or `Err` if the driver held none.
pub(crate) fn dereference(object: usize) -> Option<Result<usize, ()>> {
    (object == power_state_object()).then(|| {
        with_state(|state| {
            state.references = state.references.checked_sub(1).ok_or(())?;
            Ok(state.references)
        })
    })
}

/// Calls every routine registered on `\Callback\PowerState` with (PO_CB_SYSTEM_STATE_LOCK, `back_in_s0`)
/// on this thread at DISPATCH_LEVEL.
fn notify(back_in_s0: bool) {
    let routines: Vec<(usize, usize)> =
        with_state(|state| state.registrations.iter().map(|r| (r.function, r.context)).collect());
    let kpcr = cpu::current();
    for (function, context) in routines {
        let previous = kpcr.raise_irql(DISPATCH_LEVEL);
        // SAFETY: the driver registered a PCALLBACK_FUNCTION, `VOID (*)(PVOID CallbackContext, PVOID
        // Argument1, PVOID Argument2)`, valid until ExUnregisterCallback.
        let routine: extern "win64" fn(usize, usize, usize) = unsafe { std::mem::transmute(function) };
        routine(context, PO_CB_SYSTEM_STATE_LOCK, usize::from(back_in_s0));
        if kpcr.irql() != DISPATCH_LEVEL {
            crate::violations::record("power callback", None, format!("returned at IRQL {}", kpcr.irql()));
        }
        kpcr.set_irql(previous);
    }
}

#[cfg(test)]
mod tests {
    use super::control::*;
    use super::*;

    fn attributes(name: &UnicodeString, case_insensitive: bool) -> ObjectAttributes {
        ObjectAttributes {
            length: std::mem::size_of::<ObjectAttributes>() as u32,
            root_directory: 0,
            object_name: name,
            attributes: if case_insensitive { OBJ_CASE_INSENSITIVE } else { 0 },
            security_descriptor: 0,
            security_quality_of_service: 0,
        }
    }

    extern "win64" fn routine(_context: usize, _argument1: usize, _argument2: usize) {}

    #[test]
    fn the_power_state_object_is_opened_referenced_registered_and_released() {
        crate::cpu::enter(0);
        let units: Vec<u16> = "\\callback\\powerstate".encode_utf16().collect();
        let name = UnicodeString::from_units(&units);
        let other: Vec<u16> = "\\Callback\\Nothing".encode_utf16().collect();
        let other = UnicodeString::from_units(&other);
        let mut object = 0usize;
        // SAFETY: valid attributes, names and output for each call.
        unsafe {
            assert_eq!(
                ex_create_callback(&mut object, &attributes(&other, true), 0, 1),
                STATUS_OBJECT_NAME_NOT_FOUND
            );
            assert_eq!(
                ex_create_callback(&mut object, &attributes(&name, false), 0, 1),
                STATUS_OBJECT_NAME_NOT_FOUND
            );
            assert_eq!(
                ex_register_callback(power_state_object(), routine as *const () as usize, 0),
                0,
                "no reference held"
            );
            assert_eq!(ex_create_callback(&mut object, &attributes(&name, true), 0, 1), STATUS_SUCCESS);
            assert_eq!(object, power_state_object());
            let registration = ex_register_callback(object, routine as *const () as usize, 7);
            assert_ne!(registration, 0);
            // Left registered and referenced at unload: the report's leak check sees both.
            assert_eq!(outstanding(), 2);
            assert!(!crate::report::Report::now().is_clean());
            ex_unregister_callback(registration);
            assert_eq!(dereference(object), Some(Ok(0)));
            assert_eq!(outstanding(), 0);
            assert_eq!(dereference(object), Some(Err(())), "a reference released twice");
            ex_unregister_callback(registration);
        }
        let found = crate::violations::take();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].message.contains("referenced: 0"), "{}", found[0]);
        assert!(found[1].message.contains("not registered"), "{}", found[1]);
    }
}
