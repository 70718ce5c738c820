//! Owning hardware counters through the HAL, so that pmupcw coexists with every other PMU user (WPR,
//! VTune, Hyper-V's own profiling): only one owner at a time, and only while it holds a handle.
//!
//! Two forms (ntddk.h, HalAllocateHardwareCounters): a resource list naming exactly the counters the
//! plan uses, plus one Overflow descriptor whose handler the HAL calls at PROFILE_LEVEL when one of
//! them wraps, on the processors a GroupAffinity array names (none: every processor); or the whole
//! PMU (no group affinity, no list), with no handler. Which form to ask for,
//! and what a refusal means, is the session's decision (src/session/client.rs); this module only
//! makes the call and owns the handle.

use windows_sys::Wdk::System::SystemServices::{
    HalAllocateHardwareCounters, HalFreeHardwareCounters, PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR,
    PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR_0, PHYSICAL_COUNTER_RESOURCE_LIST, ResourceTypeOverflow,
    ResourceTypeSingle,
};
use windows_sys::Win32::Foundation::{
    HANDLE, NTSTATUS, STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_PARAMETER,
};
use windows_sys::Win32::System::SystemInformation::GROUP_AFFINITY;

/// Most descriptors the driver sends: the plan's assignments, fixed counter 3 where IA32_PERF_METRICS
/// counts top-down (not an assignment), and the Overflow descriptor.
const MAX_DESCRIPTORS: usize = crate::pmu::placement::MAX_ASSIGNMENTS + 2;

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

/// Owned hardware counters. Dropping frees them; the owner must have stopped and cleared every
/// counter first (the HAL does not).
pub struct Ownership {
    handle: HANDLE,
}

// SAFETY: the handle is an opaque HAL object usable from any thread.
unsafe impl Send for Ownership {}
// SAFETY: as above; Ownership has no &self methods that mutate.
unsafe impl Sync for Ownership {}

impl Ownership {
    /// HalAllocateHardwareCounters with a resource list of `counters` plus, if `handler` is given, an
    /// Overflow descriptor naming it, on the processors of `affinity` (empty: every processor); or,
    /// for `None`, the whole PMU. Returns the failure's NTSTATUS;
    /// a success with a NULL handle (an older HAL's answer to a list it does not take) is
    /// STATUS_INSUFFICIENT_RESOURCES. PASSIVE_LEVEL.
    ///
    /// # Safety
    /// `handler`, if given, must stay callable (resident code, and whatever it reads alive) until the
    /// returned ownership is dropped: the HAL may call it until HalFreeHardwareCounters returns.
    pub unsafe fn allocate(
        affinity: &[GROUP_AFFINITY],
        request: Option<(&[u32], Option<OverflowHandler>)>,
    ) -> Result<Self, NTSTATUS> {
        // SAFETY: the caller keeps the handler valid for the ownership's lifetime.
        unsafe { allocate(affinity, request) }.map(|handle| Ownership { handle })
    }
}

impl Drop for Ownership {
    fn drop(&mut self) {
        // SAFETY: the handle came from a successful HalAllocateHardwareCounters and is freed once.
        unsafe { HalFreeHardwareCounters(self.handle) };
    }
}

/// HalAllocateHardwareCounters with a resource list (`Some`) or for the whole PMU (`None`).
///
/// # Safety
/// As [`Ownership::allocate`].
unsafe fn allocate(
    affinity: &[GROUP_AFFINITY],
    request: Option<(&[u32], Option<OverflowHandler>)>,
) -> Result<HANDLE, NTSTATUS> {
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
    let (affinity_pointer, groups) =
        if affinity.is_empty() { (core::ptr::null(), 0) } else { (affinity.as_ptr(), affinity.len() as u32) };
    // SAFETY: the affinity array (or NULL: every processor) and the list (or NULL for the whole PMU)
    // are valid for the call, and the caller keeps the handler it names valid until the handle is freed.
    let status = unsafe { HalAllocateHardwareCounters(affinity_pointer, groups, list_pointer, &mut handle) };
    if status < 0 || handle.is_null() {
        return Err(if status < 0 { status } else { STATUS_INSUFFICIENT_RESOURCES });
    }
    Ok(handle)
}
