//! The kernel Performance Counter Library: registrations, instances made with PcwCreateInstance, and
//! the callback, which a test (standing in for perflib) calls from any number of threads through
//! [`control::add_counter`], [`control::remove_counter`], [`control::enumerate`] and
//! [`control::collect`].
//!
//! PcwRegister validates and copies the registration (version, name, descriptors); instances and
//! PcwAddInstance validate their data blocks against the descriptors, ids and names (unique ignoring
//! case); PcwUnregister waits for running callbacks and refuses new ones.
//!
//! Fault injection: [`control::fail_register`] and [`control::fail_create_instance`] make the call
//! with a given sequence number ([`control::register_calls`], [`control::create_instance_calls`]) fail
//! with a chosen status, after the arguments are validated and with nothing registered or created.
//! PCW's own failures are STATUS_INSUFFICIENT_RESOURCES (no memory for the copy of the registration or
//! the instance) and STATUS_INVALID_PARAMETER_n (an argument it refuses); a driver must undo its setup
//! on either.

use super::call::{UnicodeString, enter, units_of};
use super::faults::FaultPlan;
use super::rtl;
use crate::cpu::{self, APC_LEVEL, PASSIVE_LEVEL};
use crate::poison::IgnorePoison;
use crate::status::*;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// What tests and tools use to steer and inspect this part of the double; the driver never calls it.
pub mod control;

pub const PCW_VERSION_1: u32 = 0x100;
pub const PCW_VERSION_2: u32 = 0x200;
pub const PCW_ANY_INSTANCE_ID: u32 = 0xFFFF_FFFF;
const CALLBACK_ADD_COUNTER: u32 = 0;
const CALLBACK_REMOVE_COUNTER: u32 = 1;
const CALLBACK_ENUMERATE_INSTANCES: u32 = 2;
const CALLBACK_COLLECT_DATA: u32 = 3;

/// PCW_REGISTRATION_INFORMATION (version 1 part; Flags follows at 0x30 in version 2).
#[repr(C)]
pub struct RegistrationInformation {
    version: u32,
    name: *const UnicodeString,
    counter_count: u32,
    counters: *const Descriptor,
    callback: usize,
    callback_context: usize,
}

/// PCW_COUNTER_DESCRIPTOR.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    pub id: u16,
    pub struct_index: u16,
    pub offset: u16,
    pub size: u16,
}

/// PCW_DATA.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Data {
    data: *const u8,
    size: u32,
}

/// PCW_MASK_INFORMATION, the largest member of PCW_CALLBACK_INFORMATION (AddCounter/RemoveCounter use
/// its first two fields, as PCW_COUNTER_INFORMATION).
#[repr(C)]
struct MaskInformation {
    counter_mask: u64,
    instance_mask: *const UnicodeString,
    instance_id: u32,
    collect_multiple: u8,
    buffer: usize,
    cancel_event: usize,
}
const _: () = assert!(std::mem::size_of::<MaskInformation>() == 40);

/// One instance as a consumer sees it: name, id and each counter's value (in descriptor order; `None`
/// when the provider added it without data, as EnumerateInstances may).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceRecord {
    pub name: String,
    pub id: u32,
    pub values: Option<Vec<u64>>,
}

struct Registration {
    name: String,
    descriptors: Vec<Descriptor>,
    callback: usize,
    context: usize,
    /// Callbacks running, and whether PcwUnregister has started.
    state: Mutex<(usize, bool)>,
    idle: Condvar,
}

struct CreatedInstance {
    registration: usize,
    name: Vec<u16>,
    id: u32,
    blocks: Vec<(usize, u32)>,
}

/// One Enumerate/Collect request in progress: what PcwAddInstance has added.
struct Collection {
    registration: Arc<Registration>,
    records: Vec<InstanceRecord>,
    ids: HashSet<u32>,
    names: HashSet<Vec<u16>>,
    with_data: bool,
}

#[derive(Default)]
struct Tables {
    registrations: HashMap<usize, Arc<Registration>>,
    instances: HashMap<usize, CreatedInstance>,
    collections: HashMap<usize, Arc<Mutex<Collection>>>,
    next_handle: usize,
    next_instance_id: u32,
}

static TABLES: Mutex<Option<Tables>> = Mutex::new(None);
static REGISTER_FAULTS: FaultPlan = FaultPlan::new();
static CREATE_INSTANCE_FAULTS: FaultPlan = FaultPlan::new();

/// The IRQL callbacks run at: PASSIVE_LEVEL as perflib does, or higher to provoke IRQL checks.
static CALLBACK_IRQL: AtomicU8 = AtomicU8::new(PASSIVE_LEVEL);

fn with_tables<R>(f: impl FnOnce(&mut Tables) -> R) -> R {
    f(TABLES.lock().ignore_poison().get_or_insert_with(Tables::default))
}

fn new_handle(tables: &mut Tables) -> usize {
    tables.next_handle += 16;
    0xFFFF_C000_0000_0000 | tables.next_handle
}

fn upcased(units: &[u16]) -> Vec<u16> {
    units.iter().map(|&unit| rtl::upcase(unit)).collect()
}

/// A registered counterset as a test sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountersetInfo {
    pub name: String,
    pub counter_count: usize,
    pub has_callback: bool,
    /// Instances made with PcwCreateInstance and not closed.
    pub created_instances: usize,
}

/// Validates data blocks against the descriptors.
fn check_blocks(descriptors: &[Descriptor], blocks: &[(usize, u32)]) -> Result<(), i32> {
    for descriptor in descriptors {
        let Some(&(data, size)) = blocks.get(usize::from(descriptor.struct_index)) else {
            return Err(STATUS_INVALID_PARAMETER_4);
        };
        if data == 0 || u32::from(descriptor.offset) + u32::from(descriptor.size) > size {
            return Err(STATUS_INVALID_BUFFER_SIZE);
        }
    }
    Ok(())
}

/// Reads every counter's value from validated blocks.
fn read_values(descriptors: &[Descriptor], blocks: &[(usize, u32)]) -> Vec<u64> {
    descriptors
        .iter()
        .map(|descriptor| {
            let address = blocks[usize::from(descriptor.struct_index)].0 + usize::from(descriptor.offset);
            // SAFETY: check_blocks verified offset + size lies inside the block, which the driver keeps
            // valid for the call (PcwAddInstance) or until PcwCloseInstance (created instances).
            unsafe {
                if descriptor.size == 8 {
                    std::ptr::read_unaligned(address as *const u64)
                } else {
                    u64::from(std::ptr::read_unaligned(address as *const u32))
                }
            }
        })
        .collect()
}

/// # Safety
/// `count` PCW_DATA entries at `data` (or none if `count` is 0).
unsafe fn blocks_of(count: u32, data: *const Data) -> Result<Vec<(usize, u32)>, i32> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if data.is_null() || count > 64 {
        return Err(STATUS_INVALID_PARAMETER_4);
    }
    // SAFETY: `count` entries by the contract.
    let blocks = unsafe { std::slice::from_raw_parts(data, count as usize) };
    Ok(blocks.iter().map(|block| (block.data as usize, block.size)).collect())
}

/// `NTSTATUS PcwRegister(PPCW_REGISTRATION *Registration, PCPCW_REGISTRATION_INFORMATION Info)`:
/// IRQL <= APC_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn pcw_register(
    handle_out: *mut usize,
    info: *const RegistrationInformation,
) -> i32 {
    let call = enter("PcwRegister", APC_LEVEL);
    let injected = REGISTER_FAULTS.next();
    if handle_out.is_null() || info.is_null() {
        call.violation("NULL Registration or Info".into());
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: the driver's registration information, valid for the call.
    let info = unsafe { &*info };
    if info.version != PCW_VERSION_1 && info.version != PCW_VERSION_2 {
        call.violation(format!("Version {:#x}", info.version));
        return STATUS_INVALID_PARAMETER_2;
    }
    // SAFETY: the driver's UNICODE_STRING.
    let name = match unsafe { units_of(info.name) } {
        Ok(name) if !name.is_empty() => name,
        Ok(_) => {
            call.violation("empty counterset name".into());
            return STATUS_INVALID_PARAMETER_2;
        }
        Err(why) => {
            call.violation(format!("counterset name: {why}"));
            return STATUS_INVALID_PARAMETER_2;
        }
    };
    let count = info.counter_count as usize;
    if count > 0 && info.counters.is_null() {
        call.violation("NULL Counters".into());
        return STATUS_INVALID_PARAMETER_2;
    }
    let descriptors = if count == 0 {
        Vec::new()
    } else {
        // SAFETY: CounterCount descriptors by the contract.
        unsafe { std::slice::from_raw_parts(info.counters, count) }.to_vec()
    };
    let mut ids = HashSet::new();
    for descriptor in &descriptors {
        if descriptor.size != 4 && descriptor.size != 8 {
            call.violation(format!("counter {} has Size {}", descriptor.id, descriptor.size));
            return STATUS_INVALID_PARAMETER_2;
        }
        if descriptor.offset % descriptor.size != 0 {
            call.violation(format!("counter {} at unaligned offset {}", descriptor.id, descriptor.offset));
        }
        if !ids.insert(descriptor.id) {
            call.violation(format!("counter id {} twice", descriptor.id));
            return STATUS_INVALID_PARAMETER_2;
        }
    }
    if let Some(status) = injected {
        return status;
    }
    let name_text = String::from_utf16_lossy(&name);
    let key = upcased(&name);
    let registration = Arc::new(Registration {
        name: name_text.clone(),
        descriptors,
        callback: info.callback,
        context: info.callback_context,
        state: Mutex::new((0, false)),
        idle: Condvar::new(),
    });
    let handle = with_tables(|tables| {
        let duplicate = tables
            .registrations
            .values()
            .any(|other| upcased(&other.name.encode_utf16().collect::<Vec<_>>()) == key);
        if duplicate {
            return None;
        }
        let handle = new_handle(tables);
        tables.registrations.insert(handle, registration);
        Some(handle)
    });
    match handle {
        Some(handle) => {
            // SAFETY: checked non-null.
            unsafe { handle_out.write(handle) };
            STATUS_SUCCESS
        }
        None => {
            call.violation(format!("counterset {name_text:?} registered twice"));
            STATUS_OBJECT_NAME_COLLISION
        }
    }
}

/// `VOID PcwUnregister(PPCW_REGISTRATION Registration)`: IRQL <= APC_LEVEL. Waits for running
/// callbacks; instances still open are a violation (the provider must close them first).
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn pcw_unregister(handle: usize) {
    let call = enter("PcwUnregister", APC_LEVEL);
    let Some(registration) = with_tables(|tables| tables.registrations.get(&handle).cloned()) else {
        call.violation(format!("unregister of {handle:#x}, which is not registered"));
        return;
    };
    {
        let mut state = registration.state.lock().ignore_poison();
        state.1 = true;
        while state.0 > 0 {
            state = registration.idle.wait(state).ignore_poison();
        }
    }
    let open = with_tables(|tables| {
        tables.registrations.remove(&handle);
        let open: Vec<usize> =
            tables.instances.iter().filter(|(_, i)| i.registration == handle).map(|(&h, _)| h).collect();
        for instance in &open {
            tables.instances.remove(instance);
        }
        open.len()
    });
    if open > 0 {
        call.violation(format!("{:?} unregistered with {open} instances still open", registration.name));
    }
}

/// `NTSTATUS PcwCreateInstance(PPCW_INSTANCE *Instance, PPCW_REGISTRATION Registration,
/// PCUNICODE_STRING Name, ULONG Count, PPCW_DATA Data)`: IRQL <= APC_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn pcw_create_instance(
    instance_out: *mut usize,
    registration: usize,
    name: *const UnicodeString,
    count: u32,
    data: *const Data,
) -> i32 {
    let call = enter("PcwCreateInstance", APC_LEVEL);
    let injected = CREATE_INSTANCE_FAULTS.next();
    if instance_out.is_null() {
        call.violation("NULL Instance".into());
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: the driver's UNICODE_STRING.
    let name = match unsafe { units_of(name) } {
        Ok(name) => name,
        Err(why) => {
            call.violation(format!("instance name: {why}"));
            return STATUS_INVALID_PARAMETER_3;
        }
    };
    // SAFETY: the driver's PCW_DATA array of `count` entries.
    let blocks = match unsafe { blocks_of(count, data) } {
        Ok(blocks) => blocks,
        Err(status) => return status,
    };
    if let Some(status) = injected {
        return status;
    }
    let result = with_tables(|tables| {
        let Some(owner) = tables.registrations.get(&registration) else { return Err(STATUS_INVALID_HANDLE) };
        check_blocks(&owner.descriptors, &blocks)?;
        let key = upcased(&name);
        let clash = tables
            .instances
            .values()
            .any(|other| other.registration == registration && upcased(&other.name) == key);
        if clash {
            return Err(STATUS_OBJECT_NAME_COLLISION);
        }
        let handle = new_handle(tables);
        let id = tables.next_instance_id;
        tables.next_instance_id += 1;
        tables.instances.insert(handle, CreatedInstance { registration, name, id, blocks });
        Ok(handle)
    });
    match result {
        Ok(handle) => {
            // SAFETY: checked non-null.
            unsafe { instance_out.write(handle) };
            STATUS_SUCCESS
        }
        Err(status) => {
            call.violation(format!("rejected with {status:#x}"));
            status
        }
    }
}

/// `VOID PcwCloseInstance(PPCW_INSTANCE Instance)`: IRQL <= APC_LEVEL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn pcw_close_instance(instance: usize) {
    let call = enter("PcwCloseInstance", APC_LEVEL);
    if with_tables(|tables| tables.instances.remove(&instance)).is_none() {
        call.violation(format!("close of {instance:#x}, which is not an open instance"));
    }
}

/// `NTSTATUS PcwAddInstance(PPCW_BUFFER Buffer, PCUNICODE_STRING Name, ULONG Id, ULONG Count,
/// PPCW_DATA Data)`: IRQL <= APC_LEVEL, only inside an Enumerate/Collect callback.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn pcw_add_instance(
    buffer: usize,
    name: *const UnicodeString,
    id: u32,
    count: u32,
    data: *const Data,
) -> i32 {
    let call = enter("PcwAddInstance", APC_LEVEL);
    let Some(collection) = with_tables(|tables| tables.collections.get(&buffer).cloned()) else {
        call.violation(format!("{buffer:#x} is not the buffer of a running callback"));
        return STATUS_INVALID_PARAMETER_1;
    };
    // SAFETY: the driver's UNICODE_STRING.
    let name = match unsafe { units_of(name) } {
        Ok(name) => name,
        Err(why) => {
            call.violation(format!("instance name: {why}"));
            return STATUS_INVALID_PARAMETER_2;
        }
    };
    if id >= 0xFFFF_FFFE {
        call.violation(format!("instance id {id:#x} is reserved"));
        return STATUS_INVALID_PARAMETER_3;
    }
    // SAFETY: the driver's PCW_DATA array of `count` entries.
    let blocks = match unsafe { blocks_of(count, data) } {
        Ok(blocks) => blocks,
        Err(status) => return status,
    };
    let mut collection = collection.lock().ignore_poison();
    let values = if count == 0 {
        if collection.with_data {
            call.violation("instance added without data to a CollectData request".into());
        }
        None
    } else {
        if let Err(status) = check_blocks(&collection.registration.descriptors, &blocks) {
            call.violation(format!("data blocks rejected with {status:#x}"));
            return status;
        }
        Some(read_values(&collection.registration.descriptors, &blocks))
    };
    if !collection.ids.insert(id) {
        call.violation(format!("instance id {id} added twice"));
        return STATUS_DUPLICATE_OBJECTID;
    }
    if !collection.names.insert(upcased(&name)) {
        call.violation(format!(
            "instance name {:?} added twice (ignoring case)",
            String::from_utf16_lossy(&name)
        ));
        return STATUS_OBJECT_NAME_COLLISION;
    }
    collection.records.push(InstanceRecord { name: String::from_utf16_lossy(&name), id, values });
    STATUS_SUCCESS
}

/// A consumer's request, as perflib passes it to the provider.
#[derive(Clone, Debug)]
pub struct Query {
    pub counter_mask: u64,
    /// None: every instance (NULL mask).
    pub instance_mask: Option<String>,
    pub instance_id: u32,
}

impl Default for Query {
    fn default() -> Self {
        Query { counter_mask: u64::MAX, instance_mask: None, instance_id: PCW_ANY_INSTANCE_ID }
    }
}

fn find(counterset: &str) -> Option<(usize, Arc<Registration>)> {
    with_tables(|tables| {
        tables
            .registrations
            .iter()
            .find(|(_, registration)| registration.name == counterset)
            .map(|(&handle, registration)| (handle, Arc::clone(registration)))
    })
}

/// Runs the registration's callback on the calling thread at the callback IRQL (PASSIVE_LEVEL); `None` if the counterset
/// is unregistering (perflib stops calling it).
fn invoke(registration: &Registration, kind: u32, info: &mut MaskInformation) -> Option<i32> {
    {
        let mut state = registration.state.lock().ignore_poison();
        if state.1 {
            return None;
        }
        state.0 += 1;
    }
    let kpcr = cpu::current();
    let irql = CALLBACK_IRQL.load(Ordering::SeqCst);
    let previous = kpcr.raise_irql(irql);
    // SAFETY: the driver registered a PCW_CALLBACK, `NTSTATUS (*)(PCW_CALLBACK_TYPE,
    // PPCW_CALLBACK_INFORMATION, PVOID)`, valid until PcwUnregister returns, which waits for this call.
    let callback: extern "win64" fn(u32, *mut MaskInformation, usize) -> i32 =
        unsafe { std::mem::transmute(registration.callback) };
    let status = callback(kind, info, registration.context);
    if kpcr.irql() != irql {
        crate::violations::record(
            "PCW callback",
            None,
            format!("{:?} callback returned at IRQL {}", registration.name, kpcr.irql()),
        );
    }
    kpcr.set_irql(previous);
    let mut state = registration.state.lock().ignore_poison();
    state.0 -= 1;
    if state.0 == 0 {
        registration.idle.notify_all();
    }
    Some(status)
}

fn notify(counterset: &str, kind: u32, counter_mask: u64) -> Option<i32> {
    let (_, registration) = find(counterset)?;
    if registration.callback == 0 {
        return Some(STATUS_SUCCESS);
    }
    let mut info = MaskInformation {
        counter_mask,
        instance_mask: std::ptr::null(),
        instance_id: 0,
        collect_multiple: 0,
        buffer: 0,
        cancel_event: 0,
    };
    invoke(&registration, kind, &mut info)
}

fn request(counterset: &str, query: &Query, kind: u32) -> Option<(i32, Vec<InstanceRecord>)> {
    let (handle, registration) = find(counterset)?;
    if registration.callback == 0 {
        let records = with_tables(|tables| {
            let mut records: Vec<_> = tables
                .instances
                .values()
                .filter(|i| i.registration == handle)
                .filter(|i| query.instance_id == PCW_ANY_INSTANCE_ID || i.id == query.instance_id)
                .map(|i| InstanceRecord {
                    name: String::from_utf16_lossy(&i.name),
                    id: i.id,
                    values: Some(read_values(&registration.descriptors, &i.blocks)),
                })
                .collect();
            records.sort_by_key(|record| record.id);
            records
        });
        return Some((STATUS_SUCCESS, records));
    }
    let collection = Arc::new(Mutex::new(Collection {
        registration: Arc::clone(&registration),
        records: Vec::new(),
        ids: HashSet::new(),
        names: HashSet::new(),
        with_data: kind == CALLBACK_COLLECT_DATA,
    }));
    let buffer = with_tables(|tables| {
        let buffer = new_handle(tables);
        tables.collections.insert(buffer, Arc::clone(&collection));
        buffer
    });
    let mask_units: Option<Vec<u16>> = query.instance_mask.as_ref().map(|mask| mask.encode_utf16().collect());
    let mask_string = mask_units.as_ref().map(|units| UnicodeString::from_units(units));
    let mut info = MaskInformation {
        counter_mask: query.counter_mask,
        instance_mask: mask_string.as_ref().map_or(std::ptr::null(), |mask| mask as *const UnicodeString),
        instance_id: query.instance_id,
        collect_multiple: 1,
        buffer,
        cancel_event: 0,
    };
    let status = invoke(&registration, kind, &mut info);
    with_tables(|tables| tables.collections.remove(&buffer));
    let status = status?;
    let records = std::mem::take(&mut collection.lock().ignore_poison().records);
    Some((status, records))
}
