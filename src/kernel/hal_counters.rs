//! Owning hardware counters through the HAL, so that pmupcw coexists with every other PMU user (WPR,
//! VTune, Hyper-V's own profiling): only one owner at a time, and only while it holds a handle.
//!
//! Two forms (ntddk.h, HalAllocateHardwareCounters): a resource list naming exactly the counters the
//! plan uses, plus one Overflow descriptor whose handler the HAL calls at PROFILE_LEVEL when one of
//! them wraps; or the whole PMU (no group affinity, no list), with no handler. Windows before 10 1903
//! knows only the whole-PMU form. Decompiled Windows 10/11 HAL builds show that only the Intel
//! profile interface implements the list form: elsewhere it fails with STATUS_INSUFFICIENT_RESOURCES
//! (an older build returns STATUS_SUCCESS with a NULL handle), so that status from a list is a
//! refusal, not proof of another owner. Any list refusal therefore falls back to the whole PMU, whose
//! STATUS_INSUFFICIENT_RESOURCES does mean another owner. The HAL's PMU arbiter answers
//! STATUS_DEVICE_BUSY while another actor holds the PMU: busy too, to be retried.

use windows_sys::Wdk::System::SystemServices::{
    HalAllocateHardwareCounters, HalFreeHardwareCounters, PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR,
    PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR_0, PHYSICAL_COUNTER_RESOURCE_LIST, ResourceTypeOverflow,
    ResourceTypeSingle,
};
use windows_sys::Win32::Foundation::{
    HANDLE, NTSTATUS, STATUS_DEVICE_BUSY, STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_PARAMETER,
};

/// Most counters the driver asks for (the plan's assignments), plus the Overflow descriptor.
const MAX_DESCRIPTORS: usize = 9;

/// PHYSICAL_COUNTER_RESOURCE_LIST with room for [`MAX_DESCRIPTORS`] descriptors (the C type declares
/// an ANYSIZE_ARRAY); the same layout for the first `count` entries.
#[repr(C)]
struct ResourceList {
    count: u32,
    descriptors: [PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR; MAX_DESCRIPTORS],
}
const _: () = {
    assert!(core::mem::size_of::<PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR>() == 24);
    assert!(
        core::mem::offset_of!(ResourceList, descriptors)
            == core::mem::offset_of!(PHYSICAL_COUNTER_RESOURCE_LIST, Descriptors)
    );
};

/// The overflow handler's signature (PHYSICAL_COUNTER_OVERFLOW_HANDLER).
pub type OverflowHandler = unsafe extern "system" fn(overflow_bits: u64, owning_handle: HANDLE);

/// Why the counters could not be had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcquireError {
    /// Another client owns them (STATUS_INSUFFICIENT_RESOURCES for the whole PMU) or the arbiter has
    /// another actor (STATUS_DEVICE_BUSY): try again later.
    Busy,
    /// Any other failure, with its status.
    Failed(NTSTATUS),
}

/// Owned hardware counters. Dropping frees them; the owner must have stopped and cleared every
/// counter first (the HAL does not).
pub struct Ownership {
    handle: HANDLE,
    overflow_interrupt: bool,
}

// SAFETY: the handle is an opaque HAL object usable from any thread.
unsafe impl Send for Ownership {}
// SAFETY: as above; Ownership has no &self methods that mutate.
unsafe impl Sync for Ownership {}

/// What to ask the HAL for.
#[derive(Clone, Copy)]
pub enum Request<'a> {
    /// The counters with these HAL indexes and, if given, an overflow interrupt delivered to the
    /// handler; the whole PMU without an interrupt where the HAL refuses the list.
    Listed { counters: &'a [u32], handler: Option<OverflowHandler> },
    /// The whole PMU, without an overflow interrupt (the only form some HALs implement).
    WholePmu,
}

impl Ownership {
    /// Asks for the counters. Call at PASSIVE_LEVEL.
    pub fn acquire(request: Request<'_>) -> Result<Self, AcquireError> {
        let whole_pmu = || match allocate(None) {
            Ok(handle) => Ok(Ownership { handle, overflow_interrupt: false }),
            Err(status) => Err(classify(status)),
        };
        match request {
            Request::WholePmu => whole_pmu(),
            Request::Listed { counters, handler } => match allocate(Some((counters, handler))) {
                Ok(handle) => Ok(Ownership { handle, overflow_interrupt: handler.is_some() }),
                Err(STATUS_DEVICE_BUSY) => Err(AcquireError::Busy),
                Err(_) => whole_pmu(),
            },
        }
    }

    /// Whether the HAL will deliver overflow interrupts to the handler; if not, counters must be
    /// extended by polling.
    pub fn has_overflow_interrupt(&self) -> bool {
        self.overflow_interrupt
    }
}

impl Drop for Ownership {
    fn drop(&mut self) {
        // SAFETY: the handle came from a successful HalAllocateHardwareCounters and is freed once.
        unsafe { HalFreeHardwareCounters(self.handle) };
    }
}

fn classify(status: NTSTATUS) -> AcquireError {
    match status {
        STATUS_INSUFFICIENT_RESOURCES | STATUS_DEVICE_BUSY => AcquireError::Busy,
        _ => AcquireError::Failed(status),
    }
}

/// HalAllocateHardwareCounters with a resource list (`Some`) or for the whole PMU (`None`).
fn allocate(request: Option<(&[u32], Option<OverflowHandler>)>) -> Result<HANDLE, NTSTATUS> {
    let mut list = ResourceList {
        count: 0,
        descriptors: [PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR::default(); MAX_DESCRIPTORS],
    };
    let list_pointer = match request {
        None => core::ptr::null(),
        Some((counters, handler)) => {
            let handler_slots = usize::from(handler.is_some());
            if counters.len() + handler_slots > MAX_DESCRIPTORS {
                return Err(STATUS_INVALID_PARAMETER);
            }
            for (descriptor, &index) in list.descriptors.iter_mut().zip(counters) {
                descriptor.Type = ResourceTypeSingle;
                descriptor.u = PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR_0 { CounterIndex: index };
            }
            if let Some(handler) = handler {
                let descriptor = &mut list.descriptors[counters.len()];
                descriptor.Type = ResourceTypeOverflow;
                descriptor.u = PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR_0 { OverflowHandler: Some(handler) };
            }
            list.count = (counters.len() + handler_slots) as u32;
            (&list as *const ResourceList).cast::<PHYSICAL_COUNTER_RESOURCE_LIST>()
        }
    };
    let mut handle: HANDLE = core::ptr::null_mut();
    // SAFETY: the list (or NULL for the whole PMU) is valid for the call, and the handler it names is
    // resident code that stays loaded until the handle is freed (Ownership is dropped before unload
    // completes). No group affinity: every processor.
    let status = unsafe { HalAllocateHardwareCounters(core::ptr::null(), 0, list_pointer, &mut handle) };
    if status < 0 || handle.is_null() {
        return Err(if status < 0 { status } else { STATUS_INSUFFICIENT_RESOURCES });
    }
    Ok(handle)
}
