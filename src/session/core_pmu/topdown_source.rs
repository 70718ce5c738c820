//! The Top-down Source rule, in one place: what one core type's processors count top-down from
//! (their plan's source; before any session, what their PMU promises), and what the machine
//! reports, the same source on every core type or "per core type" (`docs/hybrid.md`).

use super::read::TopdownReading;
use crate::pcw::driver_status::TopdownSource;
use crate::pmu::hybrid::Machine;
use crate::pmu::model::PmuModel;
use crate::pmu::placement::CounterPlan;

/// The Top-down Source of the processors of one core type, whose PMU is `model` (`None`: not usable):
/// what `plan`, their session's or last session's, counts; before any session, what the PMU has.
pub(in crate::session) fn of_core_type(model: Option<PmuModel>, plan: Option<&CounterPlan>) -> TopdownSource {
    let Some(model) = model else { return TopdownSource::NoPmu };
    if let Some(source) = plan.and_then(|plan| TopdownReading::of(plan).source()) {
        return source;
    }
    match plan {
        None if model.topdown_metrics() => TopdownSource::PerfMetrics,
        _ if model.perf_metrics_withheld() => TopdownSource::NotUnderHypervisor,
        _ => TopdownSource::Unavailable,
    }
}

/// The Top-down Source of a machine with a usable PMU whose core type `core_type` has plan
/// `plan_of(core_type)` (`None` before any session): its core types' source where they agree;
/// where they differ and one of them counts top-down, per core type; else unavailable.
pub(in crate::session) fn of_machine<'a>(
    machine: Machine,
    plan_of: impl Fn(usize) -> Option<&'a CounterPlan>,
) -> TopdownSource {
    let mut sources =
        machine.models().map(|(core_type, model)| of_core_type(Some(model), plan_of(core_type)));
    let first = sources.next().unwrap_or(TopdownSource::Unavailable);
    let (mut agree, mut counts) = (true, counts_top_down(first));
    for source in sources {
        agree &= source == first;
        counts |= counts_top_down(source);
    }
    match (agree, counts) {
        (true, _) => first,
        (false, true) => TopdownSource::PerCoreType,
        (false, false) => TopdownSource::Unavailable,
    }
}

/// Whether processors with this source count top-down.
fn counts_top_down(source: TopdownSource) -> bool {
    matches!(source, TopdownSource::PerfMetrics | TopdownSource::ProfileEvents)
}
