//! What a session asks of the HAL and reports, core type by core type, out of
//! [`super::PmuClient`]: one resource list per core type (on that type's processors), and the
//! Top-down Source of a machine whose core types count top-down differently (`docs/hybrid.md`).

use super::{AcquireError, Platform, PmuClient};
use crate::pcw::driver_status::TopdownSource;
use crate::pmu::hybrid::{CORE_TYPES, Machine};
use crate::pmu::model::{Detection, PmuModel, Vendor};
use crate::pmu::placement::{CounterPlan, MAX_ASSIGNMENTS};
use crate::session::platform::{Form, List};
use crate::session::read::TopdownReading;
use windows_sys::Win32::Foundation::{STATUS_DEVICE_BUSY, STATUS_INSUFFICIENT_RESOURCES};

impl<P: Platform> PmuClient<P> {
    /// Asks the HAL for the plans' counters: on Intel one resource list per core type (with an
    /// Overflow descriptor if the model interrupts), each on that type's processors (no GroupAffinity
    /// on a machine with one core type), the whole PMU elsewhere; any refusal of a list falls back to
    /// the whole PMU, whose STATUS_INSUFFICIENT_RESOURCES does mean another owner. Only the Intel
    /// HAL implements resource lists (observed in decompiled Windows 10/11 HAL builds): elsewhere a
    /// list fails with STATUS_INSUFFICIENT_RESOURCES, or succeeds with a NULL handle in an older
    /// build. Returns the ownership and whether the overflow handler is wired.
    pub(super) fn request(
        &self,
        model: &PmuModel,
        plans: &[Option<CounterPlan>; CORE_TYPES],
    ) -> Result<(P::Ownership, bool), AcquireError> {
        let whole_pmu = || match self.platform.allocate(Form::WholePmu, self) {
            Ok(ownership) => Ok((ownership, false)),
            Err(STATUS_INSUFFICIENT_RESOURCES | STATUS_DEVICE_BUSY) => Err(AcquireError::Busy),
            Err(status) => Err(AcquireError::Failed(status)),
        };
        if model.vendor != Vendor::Intel {
            return whole_pmu();
        }
        let mut indexes = [[0u32; MAX_ASSIGNMENTS + 1]; CORE_TYPES];
        let mut lists = [List { core_type: None, counters: &[] }; CORE_TYPES];
        let mut len = 0;
        let hybrid = self.machine.hybrid();
        for (core_type, (plan, indexes)) in plans.iter().zip(indexes.iter_mut()).enumerate() {
            let Some(plan) = plan else { continue };
            let mut count = 0;
            for (index, hal_index) in indexes.iter_mut().zip(plan.hal_indexes()) {
                *index = hal_index;
                count += 1;
            }
            lists[len] = List { core_type: hybrid.then_some(core_type as u8), counters: &indexes[..count] };
            len += 1;
        }
        let form = Form::Listed { lists: &lists[..len], overflow_interrupt: model.overflow_interrupt };
        match self.platform.allocate(form, self) {
            Ok(ownership) => Ok((ownership, model.overflow_interrupt)),
            Err(STATUS_DEVICE_BUSY) => Err(AcquireError::Busy),
            Err(_) => whole_pmu(),
        }
    }
}

/// The Top-down Source of a machine before any session: what its core types' PMUs promise.
pub(super) fn expected_topdown(machine: Machine) -> TopdownSource {
    let with_metrics = machine.models().filter(|(_, model)| model.topdown_metrics()).count();
    match machine.detection {
        _ if with_metrics > 0 && with_metrics == machine.models().count() => TopdownSource::PerfMetrics,
        _ if with_metrics > 0 => TopdownSource::PerCoreType,
        Detection::Usable(model) if model.perf_metrics_withheld() => TopdownSource::NotUnderHypervisor,
        _ => TopdownSource::Unavailable,
    }
}

/// The Top-down Source of a session with `plans`: the same on every core type, or per core type.
pub(super) fn topdown_source(machine: Machine, plans: &[Option<CounterPlan>; CORE_TYPES]) -> TopdownSource {
    let source = |plan: &CounterPlan| TopdownReading::of(plan).source().unwrap_or(TopdownSource::Unavailable);
    let mut sources = plans.iter().flatten().map(source);
    let first = sources.next().unwrap_or(TopdownSource::Unavailable);
    if sources.any(|other| other != first) {
        TopdownSource::PerCoreType
    } else if first == TopdownSource::Unavailable {
        expected_topdown(machine)
    } else {
        first
    }
}
