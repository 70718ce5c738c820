//! Notification of system sleep and resume through the system-defined `\Callback\PowerState` callback
//! object ("Using a System-Defined Callback Object", ExCreateCallback and ExRegisterCallback on
//! Microsoft Learn): with Argument1 = PO_CB_SYSTEM_STATE_LOCK, Argument2 is 0 before the system
//! leaves S0 and 1 once it is back. Registered routines run at IRQL <= DISPATCH_LEVEL and must be
//! nonpageable (this module's code is in .text).

use super::NtStatus;
use super::pool::PoolBox;
use crate::text::ascii_to_utf16;
use core::ffi::c_void;
use windows_sys::Wdk::Foundation::{OBJECT_ATTRIBUTES, PCALLBACK_OBJECT};
use windows_sys::Wdk::System::SystemServices::{
    ExCreateCallback, ExRegisterCallback, ExUnregisterCallback, ObfDereferenceObject,
};
use windows_sys::Win32::Foundation::{STATUS_INSUFFICIENT_RESOURCES, STATUS_UNSUCCESSFUL, UNICODE_STRING};

/// PO_CB_SYSTEM_STATE_LOCK (wdm.h).
const PO_CB_SYSTEM_STATE_LOCK: usize = 3;
/// OBJ_CASE_INSENSITIVE (wdm.h).
const OBJ_CASE_INSENSITIVE: u32 = 0x40;
/// `\Callback\PowerState` in UTF-16.
const POWER_STATE: [u16; 20] = ascii_to_utf16(b"\\Callback\\PowerState");

/// What a power transition tells the driver.
pub trait PowerListener: Sync {
    /// The system is about to leave S0 (`false`) or is back in S0 (`true`). IRQL <= DISPATCH_LEVEL.
    fn power_transition(&self, back_in_s0: bool);
}

/// A registration on `\Callback\PowerState`. Dropping it unregisters (no routine runs after
/// ExUnregisterCallback returns) and releases the callback object.
pub struct PowerCallback<L: PowerListener + 'static> {
    object: PCALLBACK_OBJECT,
    registration: *mut c_void,
    _listener: PoolBox<L>,
}

// SAFETY: the object and registration are kernel pointers usable from any thread; L is Sync.
unsafe impl<L: PowerListener + Send> Send for PowerCallback<L> {}
// SAFETY: as above; no &self method touches them.
unsafe impl<L: PowerListener> Sync for PowerCallback<L> {}

impl<L: PowerListener + 'static> PowerCallback<L> {
    /// Registers `listener` for power transitions. PASSIVE_LEVEL.
    pub fn register(listener: L) -> Result<Self, NtStatus> {
        let listener = PoolBox::new(listener).map_err(|_| STATUS_INSUFFICIENT_RESOURCES)?;
        let name = UNICODE_STRING {
            Length: (POWER_STATE.len() * 2) as u16,
            MaximumLength: (POWER_STATE.len() * 2) as u16,
            Buffer: POWER_STATE.as_ptr().cast_mut(),
        };
        // SAFETY: a zeroed OBJECT_ATTRIBUTES is valid once Length, ObjectName and Attributes are set
        // (InitializeObjectAttributes with a name and no root or security descriptor).
        let mut attributes: OBJECT_ATTRIBUTES = unsafe { core::mem::zeroed() };
        attributes.Length = core::mem::size_of::<OBJECT_ATTRIBUTES>() as u32;
        attributes.ObjectName = &name;
        attributes.Attributes = OBJ_CASE_INSENSITIVE;
        let mut object: PCALLBACK_OBJECT = 0;
        // SAFETY: valid out-pointer and attributes for the call; the system defines the object, so it
        // is opened, not created.
        let status = unsafe { ExCreateCallback(&mut object, &attributes, false, true) };
        if status < 0 {
            return Err(status);
        }
        let context = (&*listener as *const L).cast::<c_void>();
        let routine: unsafe extern "system" fn(*const c_void, *const c_void, *const c_void) =
            power_state::<L>;
        // SAFETY: windows-sys declares PCALLBACK_FUNCTION without its three parameters; the transmute
        // restores the documented signature (same ABI).
        let routine = unsafe {
            core::mem::transmute::<
                unsafe extern "system" fn(*const c_void, *const c_void, *const c_void),
                unsafe extern "system" fn(),
            >(routine)
        };
        // SAFETY: the object was just opened; the routine is nonpageable code of this image and its
        // context is pool memory that this value owns until after ExUnregisterCallback.
        let registration = unsafe { ExRegisterCallback(object, Some(routine), context) };
        if registration.is_null() {
            // SAFETY: the reference ExCreateCallback took, released once.
            unsafe { ObfDereferenceObject(object as *const c_void) };
            return Err(STATUS_UNSUCCESSFUL);
        }
        Ok(PowerCallback { object, registration, _listener: listener })
    }
}

impl<L: PowerListener + 'static> Drop for PowerCallback<L> {
    fn drop(&mut self) {
        // SAFETY: the registration is ours and released once; after ExUnregisterCallback no call of
        // the routine uses the listener.
        unsafe { ExUnregisterCallback(self.registration) };
        // SAFETY: the reference ExCreateCallback took, released once, after the registration.
        unsafe { ObfDereferenceObject(self.object as *const c_void) };
    }
}

/// PCALLBACK_FUNCTION for `\Callback\PowerState`.
unsafe extern "system" fn power_state<L: PowerListener>(
    context: *const c_void,
    argument1: *const c_void,
    argument2: *const c_void,
) {
    if argument1 as usize != PO_CB_SYSTEM_STATE_LOCK {
        return;
    }
    // SAFETY: the context is the listener this registration owns, alive until it is unregistered.
    let listener = unsafe { &*context.cast::<L>() };
    listener.power_transition(argument2 as usize != 0);
}

/// A shared listener: the registration holds one reference.
impl<L: PowerListener + Send> PowerListener for super::pool::PoolArc<L> {
    fn power_transition(&self, back_in_s0: bool) {
        (**self).power_transition(back_in_s0);
    }
}
