//! The Performance Counter Library (PCW, kernel Perflib v2) boundary: registration, instances, and
//! the callback shim that turns PCW's raw callback information into a safe [`Query`].

use super::pool::PoolBox;
use super::unicode_string;
use crate::pcw::{
    AddInstanceFailed, CounterBlock, CounterDescriptor, Counterset, CountersetBlock, CountersetCallback,
    InstanceKind, InstanceSink, Query,
};
use core::ffi::c_void;
use windows_sys::Wdk::Foundation::{PPCW_BUFFER, PPCW_INSTANCE, PPCW_REGISTRATION};
use windows_sys::Wdk::System::SystemServices::{
    PCW_CALLBACK, PCW_CALLBACK_INFORMATION, PCW_CALLBACK_TYPE, PCW_COUNTER_DESCRIPTOR, PCW_DATA,
    PCW_MASK_INFORMATION, PCW_VERSION_1, PcwAddInstance, PcwCallbackAddCounter, PcwCallbackCollectData,
    PcwCallbackEnumerateInstances, PcwCallbackRemoveCounter, PcwCloseInstance, PcwCreateInstance,
    PcwRegister, PcwUnregister,
};
use windows_sys::Win32::Foundation::{NTSTATUS, STATUS_SUCCESS, UNICODE_STRING};

/// PCW_REGISTRATION_INFORMATION as PCW_VERSION_1 defines it: without the version-2 `Flags` field
/// (0x30 bytes on x64). Windows builds before 10.0.19645 reject any version but 1, so the driver
/// registers as version 1 and passes exactly the version-1 structure.
#[repr(C)]
struct RegistrationInformationV1 {
    version: u32,
    name: *const UNICODE_STRING,
    counter_count: u32,
    counters: *const CounterDescriptor,
    callback: PCW_CALLBACK,
    callback_context: *const c_void,
}
const _: () = assert!(core::mem::size_of::<RegistrationInformationV1>() == 0x30);
// The generated descriptor tables are handed to PCW as they are.
const _: () = {
    assert!(core::mem::size_of::<CounterDescriptor>() == core::mem::size_of::<PCW_COUNTER_DESCRIPTOR>());
    assert!(
        core::mem::offset_of!(CounterDescriptor, id) == core::mem::offset_of!(PCW_COUNTER_DESCRIPTOR, Id)
    );
    assert!(
        core::mem::offset_of!(CounterDescriptor, struct_index)
            == core::mem::offset_of!(PCW_COUNTER_DESCRIPTOR, StructIndex)
    );
    assert!(
        core::mem::offset_of!(CounterDescriptor, offset)
            == core::mem::offset_of!(PCW_COUNTER_DESCRIPTOR, Offset)
    );
    assert!(
        core::mem::offset_of!(CounterDescriptor, size) == core::mem::offset_of!(PCW_COUNTER_DESCRIPTOR, Size)
    );
};

/// A counterset answered by callback, owning the callback object: PcwUnregister (which waits for
/// running callbacks) returns before the object is freed, because fields drop in declaration order.
pub struct CallbackCounterset<C: CountersetCallback> {
    _registration: Registration,
    _callback: PoolBox<C>,
}

impl<C: CountersetCallback> CallbackCounterset<C> {
    /// Registers `C`'s counterset (its manifest name and descriptors, from its generated binding),
    /// answered by `callback`, which lives in pool memory at a fixed address until this value is
    /// dropped.
    pub fn register(callback: PoolBox<C>) -> Result<Self, NTSTATUS> {
        let context: *const c_void = (&*callback as *const C).cast();
        // SAFETY: the shim is `C`'s and the context a `&C`. The callback is owned by the returned value
        // and dropped only after the registration (field order); until then its pool address does not
        // change.
        let registration =
            unsafe { Registration::register::<C::Counterset>(Some(callback_shim::<C>), context) }?;
        Ok(CallbackCounterset { _registration: registration, _callback: callback })
    }
}

/// A counterset with one instance, made with PcwCreateInstance over a static block that PCW reads
/// directly, with no callback. The instance is closed before the counterset is unregistered.
pub struct SingleInstanceCounterset {
    _instance: Instance,
    _registration: Registration,
}

impl SingleInstanceCounterset {
    /// Registers the counterset `block` belongs to (its manifest name and descriptors, from the
    /// generated binding) and its one, unnamed instance over `block`. A multi-instance counterset does
    /// not compile here: its instances need names.
    pub fn register<B: CountersetBlock>(block: &'static B) -> Result<Self, NTSTATUS> {
        const {
            assert!(
                matches!(<B::Counterset as Counterset>::INSTANCES, InstanceKind::Single),
                "a SingleInstanceCounterset registers a single-instance counterset"
            );
        }
        // SAFETY: no callback is registered.
        let registration = unsafe { Registration::register::<B::Counterset>(None, core::ptr::null()) }?;
        // SAFETY: the block is static; the instance is dropped before the registration (field order).
        let instance = unsafe { Instance::create(&registration, &[], block) }?;
        Ok(SingleInstanceCounterset { _instance: instance, _registration: registration })
    }
}

/// A registered counterset. Dropping it unregisters, which waits for running callbacks to return.
struct Registration {
    handle: PPCW_REGISTRATION,
}

// SAFETY: the handle is an opaque kernel object usable from any thread.
unsafe impl Send for Registration {}
// SAFETY: as above; Registration has no &self methods that mutate.
unsafe impl Sync for Registration {}

impl Registration {
    /// Registers counterset `S` (its name and descriptors) served by `callback` with `context`, or by
    /// instances made with [`Instance::create`] when `callback` is `None`.
    ///
    /// # Safety
    /// `callback` must be a shim that accepts `context`, and `context` must stay valid until the
    /// returned registration is dropped: PCW calls the shim with it, from any thread, until
    /// PcwUnregister returns.
    unsafe fn register<S: Counterset>(
        callback: PCW_CALLBACK,
        context: *const c_void,
    ) -> Result<Self, NTSTATUS> {
        let name = unicode_string(S::NAME_UTF16);
        let counters: &'static [CounterDescriptor] = S::DESCRIPTORS;
        let information = RegistrationInformationV1 {
            version: PCW_VERSION_1,
            name: &name,
            counter_count: counters.len() as u32,
            counters: counters.as_ptr(),
            callback,
            callback_context: context,
        };
        let mut handle: PPCW_REGISTRATION = 0;
        // SAFETY: PcwRegister copies the name and descriptors; `information` is a valid version-1
        // structure (the cast only drops the version-2 field it does not read); the callback context
        // outlives the registration by this function's contract.
        let status =
            unsafe { PcwRegister(&mut handle, (&information as *const RegistrationInformationV1).cast()) };
        if status < 0 {
            return Err(status);
        }
        Ok(Registration { handle })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: the handle came from a successful PcwRegister and is unregistered once.
        unsafe { PcwUnregister(self.handle) };
    }
}

/// An instance created with PcwCreateInstance: PCW reads its data block directly whenever a consumer
/// collects, with no callback. Dropping it closes the instance.
struct Instance {
    handle: PPCW_INSTANCE,
}

// SAFETY: an opaque kernel handle usable from any thread.
unsafe impl Send for Instance {}
// SAFETY: as above.
unsafe impl Sync for Instance {}

impl Instance {
    /// Creates instance `name` of `registration` over `data`.
    ///
    /// # Safety
    /// `data` must stay valid and resident until the instance is dropped (and the instance must be
    /// dropped before `registration`): PCW reads it whenever a consumer collects.
    unsafe fn create<T: CounterBlock>(
        registration: &Registration,
        name: &[u16],
        data: &T,
    ) -> Result<Self, NTSTATUS> {
        let name = unicode_string(name);
        let block = PCW_DATA { Data: (data as *const T).cast(), Size: core::mem::size_of::<T>() as u32 };
        let mut handle: PPCW_INSTANCE = 0;
        // SAFETY: name and block descriptor are valid for the call (PCW copies the name); the data
        // block's lifetime is the caller's contract.
        let status = unsafe { PcwCreateInstance(&mut handle, registration.handle, &name, 1, &block) };
        if status < 0 {
            return Err(status);
        }
        Ok(Instance { handle })
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: the handle came from a successful PcwCreateInstance and is closed once.
        unsafe { PcwCloseInstance(self.handle) };
    }
}

/// The PCW_BUFFER of one Enumerate or Collect request. The callback it is handed to adds only its own
/// counterset's blocks ([`CountersetCallback`] takes an `InstanceSink` of that counterset).
struct PcwBuffer(PPCW_BUFFER);

impl<S: Counterset> InstanceSink<S> for PcwBuffer {
    fn add(&mut self, name: &[u16], id: u32, data: Option<&S::Values>) -> Result<(), AddInstanceFailed> {
        let name = unicode_string(name);
        let block = data.map(|data| PCW_DATA {
            Data: (data as *const S::Values).cast(),
            Size: core::mem::size_of::<S::Values>() as u32,
        });
        let (count, blocks) = match &block {
            Some(block) => (1, block as *const PCW_DATA),
            None => (0, core::ptr::null()),
        };
        // SAFETY: the buffer handle is the one PCW passed to this callback; PCW copies the name and the
        // data before returning.
        let status = unsafe { PcwAddInstance(self.0, &name, id, count, blocks) };
        if status < 0 { Err(AddInstanceFailed(status)) } else { Ok(()) }
    }

    fn add_block<B: CountersetBlock<Counterset = S>>(
        &mut self,
        name: &[u16],
        id: u32,
        block: &B,
    ) -> Result<(), AddInstanceFailed> {
        let name = unicode_string(name);
        let data = PCW_DATA { Data: (block as *const B).cast(), Size: core::mem::size_of::<B>() as u32 };
        // SAFETY: as in `add`. The block may be atomic cells another processor stores into meanwhile,
        // as PcwCreateInstance blocks are updated in place while PCW copies them: integers only, so
        // any bytes PCW's copy takes are a valid block (CounterBlock's contract), and the driver's
        // stores are single aligned 8- and 4-byte ones.
        let status = unsafe { PcwAddInstance(self.0, &name, id, 1, &data) };
        if status < 0 { Err(AddInstanceFailed(status)) } else { Ok(()) }
    }
}

/// The kernel's Unicode upcase, which is what perflib's own name matching uses.
pub fn upcase(unit: u16) -> u16 {
    // SAFETY: a pure table lookup, callable at any IRQL.
    unsafe { ntoskrnl_imports::RtlUpcaseUnicodeChar(unit) }
}

/// The mask's code units, or `None` for "every instance": no mask at all, or an empty one (perflib
/// asks for everything with "*"; an empty mask would select nothing, so it is read as a missing one
/// rather than risk reporting no instance).
///
/// # Safety
/// `mask`, when non-null, must point to a UNICODE_STRING whose Buffer holds Length bytes.
unsafe fn instance_mask<'a>(mask: *const UNICODE_STRING) -> Option<&'a [u16]> {
    // SAFETY: non-null by the check; valid by the function's contract.
    let mask = unsafe { mask.as_ref()? };
    let units = crate::pcw::wildcard::code_units_from_byte_length(mask.Length);
    if units == 0 || mask.Buffer.is_null() {
        return None;
    }
    // SAFETY: Buffer holds Length bytes, of which the first `units` UTF-16 units are read; an odd
    // trailing byte is ignored.
    Some(unsafe { core::slice::from_raw_parts(mask.Buffer, units) })
}

/// The query described by Enumerate/Collect callback information.
///
/// # Safety
/// `info` must be the PCW_MASK_INFORMATION PCW passed to the callback.
unsafe fn query<'a>(info: &'a PCW_MASK_INFORMATION) -> Query<'a> {
    Query {
        counter_mask: info.CounterMask,
        // SAFETY: PCW passes a valid (or null) UNICODE_STRING for the duration of the callback.
        instance_mask: unsafe { instance_mask(info.InstanceMask) },
        instance_id: info.InstanceId,
    }
}

/// PCW_CALLBACK for a counterset served by `C`. PCW calls it at IRQL <= APC_LEVEL, possibly from
/// several threads at once; it only reads its arguments and delegates to the thread-safe `C`.
///
/// # Safety
/// Called only by PCW, with the context [`CallbackCounterset::register`] supplied (a valid `&C`).
unsafe extern "system" fn callback_shim<C: CountersetCallback>(
    kind: PCW_CALLBACK_TYPE,
    info: *const PCW_CALLBACK_INFORMATION,
    context: *const c_void,
) -> NTSTATUS {
    // SAFETY: the context is the &C given at registration, alive until PcwUnregister returns.
    let callback = unsafe { &*context.cast::<C>() };
    // SAFETY: PCW passes valid callback information for the duration of the call.
    let info = unsafe { &*info };
    const ADD_COUNTER: PCW_CALLBACK_TYPE = PcwCallbackAddCounter;
    const REMOVE_COUNTER: PCW_CALLBACK_TYPE = PcwCallbackRemoveCounter;
    const ENUMERATE_INSTANCES: PCW_CALLBACK_TYPE = PcwCallbackEnumerateInstances;
    const COLLECT_DATA: PCW_CALLBACK_TYPE = PcwCallbackCollectData;
    let result = match kind {
        ADD_COUNTER => {
            // SAFETY: for AddCounter PCW fills in the AddCounter member.
            callback.counter_added(unsafe { info.AddCounter }.CounterMask);
            Ok(())
        }
        REMOVE_COUNTER => {
            // SAFETY: for RemoveCounter PCW fills in the RemoveCounter member.
            callback.counter_removed(unsafe { info.RemoveCounter }.CounterMask);
            Ok(())
        }
        ENUMERATE_INSTANCES => {
            // SAFETY: for EnumerateInstances PCW fills in that member, including a valid (or null) mask.
            let (mask, query) = unsafe { (&info.EnumerateInstances, query(&info.EnumerateInstances)) };
            callback.enumerate(&query, &mut PcwBuffer(mask.Buffer))
        }
        COLLECT_DATA => {
            // SAFETY: for CollectData PCW fills in that member, including a valid (or null) mask.
            let (mask, query) = unsafe { (&info.CollectData, query(&info.CollectData)) };
            callback.collect(&query, &mut PcwBuffer(mask.Buffer))
        }
        // A type this driver does not know (a newer PCW): nothing to do.
        _ => Ok(()),
    };
    match result {
        Ok(()) => STATUS_SUCCESS,
        Err(AddInstanceFailed(status)) => status,
    }
}

/// A shared count source: the counterset's provider holds one reference.
impl<S: crate::pcw::hardware_counters::CountSource + Send> crate::pcw::hardware_counters::CountSource
    for super::pool::PoolArc<S>
{
    fn refresh(&self) {
        (**self).refresh();
    }
    fn block(&self, processor_index: u32) -> Option<&crate::counters::hardware_counters::AtomicCells> {
        (**self).block(processor_index)
    }
    fn has_core_type(&self, core_type: u8) -> bool {
        (**self).has_core_type(core_type)
    }
    fn core_type_values(&self, core_type: u8) -> crate::counters::hardware_counters_by_core_type::Values {
        (**self).core_type_values(core_type)
    }
    fn collect_done(&self) {
        (**self).collect_done();
    }
    fn query_added(&self) {
        (**self).query_added();
    }
}

/// A shared memory controller source: the Memory Controller provider holds one reference.
impl<S: crate::pcw::memory_controller::MemorySource + Send> crate::pcw::memory_controller::MemorySource
    for super::pool::PoolArc<S>
{
    fn memory_refresh(&self) {
        (**self).memory_refresh();
    }
    fn memory_collect_done(&self) {
        (**self).memory_collect_done();
    }
    fn memory_query_added(&self) {
        (**self).memory_query_added();
    }
    fn memory_controllers(&self) -> u8 {
        (**self).memory_controllers()
    }
    fn memory_values(&self, index: usize) -> crate::counters::memory_controller::Values {
        (**self).memory_values(index)
    }
}
