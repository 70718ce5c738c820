//! What a session asks of the HAL, core type by core type: one resource list per core type (on
//! that type's processors), asked again without fixed counter 3, then the whole PMU
//! (`docs/hybrid.md`). Mechanics of the core PMU's ownership, apart from the client's policy of
//! when to own.

use crate::pcw::driver_status::PmuOwnership;
use crate::pmu::hybrid::{CORE_TYPES, Machine};
use crate::pmu::model::{PmuModel, Vendor};
use crate::pmu::placement::{CounterPlan, MAX_ASSIGNMENTS};
use crate::session::client::{AcquireError, PmuClient};
use crate::session::platform::{Form, List, Platform};
use windows_sys::Win32::Foundation::{STATUS_DEVICE_BUSY, STATUS_INSUFFICIENT_RESOURCES};

/// What a granted request holds, for the status counters and the debug output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::session) struct Held {
    /// The overflow handler is wired (an Overflow descriptor was granted).
    pub interrupt: bool,
    pub ownership: PmuOwnership,
    /// The counters the HAL gave: those the resource lists name, summed over the lists; or, for the
    /// whole PMU, every counter of each core type's processors, summed over the core types.
    pub counters: u32,
}

/// Who asks: the platform, the machine, and the client the overflow handler folds into.
pub(in crate::session) struct Requester<'a, P: Platform> {
    pub platform: &'a P,
    pub machine: &'a Machine,
    pub client: &'a PmuClient<P>,
}

impl<P: Platform> Requester<'_, P> {
    /// Asks the HAL for the plans' counters: on Intel one resource list per core type (with an
    /// Overflow descriptor if the model interrupts), each on that type's processors (no GroupAffinity
    /// on a machine with one core type), the whole PMU elsewhere. Only the Intel HAL implements
    /// resource lists (observed in decompiled Windows 10/11 HAL builds): elsewhere a list fails with
    /// STATUS_INSUFFICIENT_RESOURCES, or succeeds with a NULL handle in an older build.
    ///
    /// The Intel HAL takes a list only if every counter it names is in its own counter table
    /// (STATUS_INVALID_PARAMETER otherwise): on Windows 11 24H2 the table of the processor the call
    /// runs on, from CPUID leaf 0x23 where CPUID.(7,1):EAX\[8\] enumerates it, else from leaf 0xA;
    /// on older builds counts read from leaf 0xA on processor 0 (`EmonReserveProfileResourcesEnhanced`
    /// and `EmonReserveProfileResources`, decompiled in the public repository
    /// nohuto/decompiled-pseudocode, `11-24H2/ntoskrnl` and `11-22H2/ntoskrnl`). The platform makes
    /// each list's call from a processor of its core type; still, Alder and Raptor Lake's leaf 0xA
    /// reports no fixed counter 3 on any core (Linux commit ee72a94ea4a6), so no table there has
    /// it. A refused list is therefore asked again without fixed counter 3, which the plan programs
    /// all the same (as it programs EN_PERF_METRICS, which no list names): a counter outside every
    /// table is one the HAL can give no client. Nor does the HAL touch it: a release writes
    /// IA32_PERF_GLOBAL_OVF_CTRL with the released reservation's mask alone
    /// (`EmonReleaseReservedCounters`), and the overflow handler reprograms or flags only counters of
    /// the interrupted processor's table (`EmonOverflowHandlerInternalV2Enhanced`); it does write
    /// back every status bit of its mask, which on 24H2 includes fixed counter 3's and PERF_METRICS'
    /// (`EmonInitializeProfilingBSP`), harmless since fixed counter 3 has no PMI and is zeroed at
    /// every read (`docs/pmu.md`). Only when that is refused too does the request fall back to the
    /// whole PMU, whose STATUS_INSUFFICIENT_RESOURCES does mean another owner.
    pub(in crate::session) fn request(
        &self,
        model: &PmuModel,
        plans: &[Option<CounterPlan>; CORE_TYPES],
    ) -> Result<(P::Ownership, Held), AcquireError> {
        if model.vendor != Vendor::Intel {
            return self.whole_pmu();
        }
        let fixed_counter_3 = plans.iter().flatten().any(CounterPlan::topdown_metrics);
        for with_fixed_counter_3 in [true, false] {
            if !with_fixed_counter_3 && !fixed_counter_3 {
                break;
            }
            match self.request_lists(model, plans, with_fixed_counter_3) {
                Ok(held) => return Ok(held),
                Err(STATUS_DEVICE_BUSY) => return Err(AcquireError::Busy),
                Err(status) => self.platform.log(format_args!(
                    "HalAllocateHardwareCounters refused the resource lists ({}fixed counter 3): {status:#x}",
                    if with_fixed_counter_3 { "with " } else { "without " }
                )),
            }
        }
        self.whole_pmu()
    }

    /// One resource list per plan, with fixed counter 3 where its plan counts top-down from it and
    /// `with_fixed_counter_3`; the refusal's status.
    fn request_lists(
        &self,
        model: &PmuModel,
        plans: &[Option<CounterPlan>; CORE_TYPES],
        with_fixed_counter_3: bool,
    ) -> Result<(P::Ownership, Held), i32> {
        let mut indexes = [[0u32; MAX_ASSIGNMENTS + 1]; CORE_TYPES];
        let mut lists = [List { core_type: None, counters: &[] }; CORE_TYPES];
        let mut len = 0;
        let mut counters = 0;
        let hybrid = self.machine.hybrid();
        for (core_type, (plan, indexes)) in plans.iter().zip(indexes.iter_mut()).enumerate() {
            let Some(plan) = plan else { continue };
            let mut count = 0;
            for (index, hal_index) in indexes.iter_mut().zip(plan.hal_indexes(with_fixed_counter_3)) {
                *index = hal_index;
                count += 1;
            }
            lists[len] = List { core_type: hybrid.then_some(core_type as u8), counters: &indexes[..count] };
            len += 1;
            counters += count as u32;
        }
        let form = Form::Listed { lists: &lists[..len], overflow_interrupt: model.overflow_interrupt };
        let ownership = self.platform.allocate(form, self.client.overflow_target())?;
        let interrupt = model.overflow_interrupt;
        Ok((ownership, Held { interrupt, ownership: PmuOwnership::ResourceLists, counters }))
    }

    /// The whole PMU, polled: every counter of every processor.
    fn whole_pmu(&self) -> Result<(P::Ownership, Held), AcquireError> {
        match self.platform.allocate(Form::WholePmu, self.client.overflow_target()) {
            Ok(ownership) => {
                let counters = self
                    .machine
                    .models()
                    .map(|(_, model)| u32::from(model.gp_counters) + u32::from(model.fixed_counters))
                    .sum();
                Ok((ownership, Held { interrupt: false, ownership: PmuOwnership::WholePmu, counters }))
            }
            Err(STATUS_INSUFFICIENT_RESOURCES | STATUS_DEVICE_BUSY) => Err(AcquireError::Busy),
            Err(status) => Err(AcquireError::Failed(status)),
        }
    }
}
