//! Properties every plan has, over every processor of the detection table and every profile, and
//! over arbitrary PMU shapes (any counter counts and widths CPUID could report) and arbitrary wanted
//! sets: planning never panics, never names a counter the processor lacks or the driver cannot
//! address, never gives two events one counter, and accounts for every wanted event.

use super::*;
use crate::pmu::encoding::{EVTSEL_INT, FIXED_CTRL_PMI};
use crate::pmu::model::tests::TABLE;
use crate::pmu::model::{ArchEvents, Detection};
use crate::pmu::profile::Selection;
use proptest::prelude::*;

/// The general-purpose counters a plan may use on `model`: what CPUID reports, within the registers
/// the vendor's layout has (Intel IA32_PMC0-7; AMD up to 8 with PerfMonV2, PerfCtr0-5 with
/// PerfCtrExtCore, else PerfCtr0-3).
fn usable_general_purpose(model: &PmuModel) -> u8 {
    let layout = match model.vendor {
        Vendor::Intel => 8,
        Vendor::Amd if model.amd_perfmon_v2 => 8,
        Vendor::Amd if model.amd_core_extended => 6,
        Vendor::Amd => 4,
    };
    model.gp_counters.min(layout)
}

/// The counter and event-select MSRs of general-purpose counter `i` on `model`.
fn general_purpose_msrs(model: &PmuModel, i: u8) -> (u32, u32) {
    let i = u32::from(i);
    match model.vendor {
        Vendor::Intel => (0xC1 + i, 0x186 + i),
        Vendor::Amd if model.amd_core_extended || model.amd_perfmon_v2 => {
            (0xC001_0201 + 2 * i, 0xC001_0200 + 2 * i)
        }
        Vendor::Amd => (0xC001_0004 + i, 0xC001_0000 + i),
    }
}

/// Every property of the plan for `wanted` on `model`; the first that fails, described.
fn check(model: &PmuModel, wanted: &Wanted, pmi: bool) -> Result<(), String> {
    let plan = plan_for(model, wanted, pmi);
    let all: Vec<Assignment> = plan.iter().copied().collect();
    let general = usable_general_purpose(model);
    let fixed = if model.vendor == Vendor::Intel { model.fixed_counters.min(3) } else { 0 };
    if all.len() > usize::from(general + fixed).min(MAX_ASSIGNMENTS) {
        return Err(format!(
            "{} assignments for {general} general-purpose and {fixed} fixed counters",
            all.len()
        ));
    }
    for (i, x) in all.iter().enumerate() {
        for y in &all[i + 1..] {
            if x.hardware == y.hardware
                || x.event == y.event
                || x.counter_msr == y.counter_msr
                || x.hal_index == y.hal_index
            {
                return Err(format!("{x:?} and {y:?} share a counter or an event"));
            }
        }
        let interrupt = match x.hardware {
            HardwareCounter::Fixed(j) if j >= fixed => return Err(format!("{x:?}: no such fixed counter")),
            HardwareCounter::Fixed(j) => {
                if x.counter_msr != 0x309 + u32::from(j) || x.control_msr != 0x38D {
                    return Err(format!("{x:?}: not fixed counter {j}'s registers"));
                }
                x.control & FIXED_CTRL_PMI << (4 * j) != 0
            }
            HardwareCounter::General(i) if i >= general => {
                return Err(format!("{x:?}: no such general-purpose counter"));
            }
            HardwareCounter::General(i) => {
                if (x.counter_msr, x.control_msr) != general_purpose_msrs(model, i) {
                    return Err(format!("{x:?}: not general-purpose counter {i}'s registers"));
                }
                if let Some(index) = x.event.custom_index()
                    && let Some(custom) = wanted.custom[index]
                    && custom.counters & (1 << i) == 0
                {
                    return Err(format!("{x:?}: a counter its counters= key does not allow"));
                }
                x.control & EVTSEL_INT != 0
            }
        };
        if interrupt != pmi {
            return Err(format!("{x:?}: interrupt bit {interrupt}, wanted {pmi}"));
        }
    }
    let bits: Vec<u8> = all.iter().filter_map(|x| x.global_bit).collect();
    if !bits.windows(2).all(|pair| pair[0] < pair[1]) {
        return Err(format!("counters not in status bit order: {bits:?}"));
    }
    for event in wanted.events.iter() {
        let states =
            [plan.counted(), plan.unavailable(), plan.dropped()].iter().filter(|s| s.contains(event)).count();
        if states != 1 {
            return Err(format!("{event:?} is in {states} of counted, unavailable and dropped"));
        }
    }
    if !(plan.counted().iter().all(|event| wanted.events.contains(event))) {
        return Err("an event nobody wanted is counted".into());
    }
    Ok(())
}

/// A custom event of `event`, allowed on the counters of `counters`.
fn custom(event: u16, counters: u8) -> Encoding {
    Encoding { counters, ..Encoding::new(event, 0x01) }
}

/// What each profile can ask for: default, topdown, and custom with 0 to 8 events (some restricted
/// to a few counters, as perfmon's event lists restrict some events).
fn every_profile() -> Vec<Wanted> {
    let mut wanted = vec![
        Wanted::of(&Selection::default()),
        Wanted::of(&Selection { profile: Profile::Topdown, ..Selection::default() }),
    ];
    for count in 0..=CUSTOM_EVENTS {
        for restricted in [0xFF, 0x0F, 0x01] {
            let mut selection = Selection { profile: Profile::Custom, ..Selection::default() };
            for (n, place) in selection.custom.iter_mut().take(count).enumerate() {
                *place = Some(custom(0x10 + n as u16, if n % 2 == 0 { restricted } else { 0xFF }));
            }
            wanted.push(Wanted::of(&selection));
        }
    }
    wanted
}

#[test]
fn every_processor_of_the_table_with_every_profile() {
    for (cpu, detection) in TABLE {
        let Detection::Usable(model) = detection else { continue };
        // The same processor with hyper-threading off or a wider PMU: up to 8 general-purpose counters.
        for gp_counters in [model.gp_counters, 8, 16] {
            let model = PmuModel { gp_counters, ..model };
            for wanted in every_profile() {
                for pmi in [false, true] {
                    if let Err(why) = check(&model, &wanted, pmi) {
                        panic!("{} with {gp_counters} counters, {:?}: {why}", cpu.name, wanted.events);
                    }
                }
            }
        }
    }
}

fn arbitrary_model() -> impl Strategy<Value = PmuModel> {
    let usable: Vec<PmuModel> = TABLE
        .iter()
        .filter_map(|(_, detection)| match detection {
            Detection::Usable(model) => Some(*model),
            Detection::Unusable(_) => None,
        })
        .collect();
    (prop::sample::select(usable), any::<u8>(), 0u8..=16, any::<u8>(), any::<[bool; 4]>()).prop_map(
        |(model, gp_counters, fixed_counters, unavailable, [extended, v2, slots, metrics])| {
            let unavailable = [
                ArchEvents::CORE_CYCLES,
                ArchEvents::INSTRUCTIONS,
                ArchEvents::REFERENCE_CYCLES,
                ArchEvents::LLC_REFERENCES,
                ArchEvents::LLC_MISSES,
                ArchEvents::BRANCHES,
                ArchEvents::BRANCH_MISPREDICTS,
            ]
            .into_iter()
            .enumerate()
            .filter(|(bit, _)| unavailable & (1 << bit) != 0)
            .fold(ArchEvents::NONE, |set, (_, event)| set.union(event));
            let amd = model.vendor == Vendor::Amd;
            PmuModel {
                gp_counters,
                fixed_counters: if amd { 0 } else { fixed_counters },
                unavailable: if amd { ArchEvents::NONE } else { unavailable },
                amd_core_extended: amd && extended,
                amd_perfmon_v2: amd && v2,
                topdown_slots: !amd && slots,
                perf_metrics: !amd && metrics,
                ..model
            }
        },
    )
}

fn arbitrary_wanted() -> impl Strategy<Value = Wanted> {
    let encoding = (any::<u16>(), any::<u8>(), any::<u8>())
        .prop_map(|(event, umask, counters)| Encoding { counters, ..Encoding::new(event & 0xFFF, umask) });
    (any::<u32>(), prop::array::uniform8(prop::option::of(encoding))).prop_map(|(bits, custom)| {
        let events = Event::ALL
            .into_iter()
            .filter(|event| bits & (1 << event.index()) != 0)
            .filter(|event| event.custom_index().is_none_or(|index| custom[index].is_some()))
            .fold(EventSet::EMPTY, EventSet::with);
        Wanted { events, custom }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn any_pmu_and_any_wanted_set(model in arbitrary_model(), wanted in arbitrary_wanted(), pmi in any::<bool>()) {
        if let Err(why) = check(&model, &wanted, pmi) {
            prop_assert!(false, "{model:?}, {wanted:?}: {why}");
        }
    }
}

/// Whether `masks` can each have a distinct counter: a search over the counters used so far.
fn matchable(masks: &[u8], used: u8) -> bool {
    let Some((&first, rest)) = masks.split_first() else { return true };
    (0..8).any(|counter| first & !used & (1 << counter) != 0 && matchable(rest, used | (1 << counter)))
}

proptest! {
    #[test]
    fn counters_are_matched_whenever_a_matching_exists(masks in prop::collection::vec(any::<u8>(), 0..=8)) {
        let candidates: Vec<_> = masks.iter().map(|&mask| (Event::Instructions, Encoding::new(0, 0), mask)).collect();
        let counters = assign_counters(&candidates);
        prop_assert_eq!(counters.is_some(), matchable(&masks, 0));
        if let Some(counters) = counters {
            for (i, &mask) in masks.iter().enumerate() {
                prop_assert!(mask & (1 << counters[i]) != 0);
                prop_assert!(!counters[..i].contains(&counters[i]));
            }
        }
    }
}
