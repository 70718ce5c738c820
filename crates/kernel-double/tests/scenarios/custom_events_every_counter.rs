//! Every counter a core has: on a core with 8 general-purpose counters beside its fixed ones
//! (Sapphire Rapids: 8 GP + 4 fixed, CPUID.0AH 08300805/../8604; Skylake without Hyper-Threading:
//! 8 GP + 3 fixed), the custom profile with 8 `CustomEvents` lines counts all 8, each exactly, while
//! instructions and both cycle counts stay on fixed counters 0-2 (and, on Sapphire Rapids, fixed
//! counter 3 counts top-down slots).

use crate::common;

use kernel_double::consumer::{self, Counterset};
use kernel_double::control::pcw;
use kernel_double::control::registry::{self, PARAMETERS_KEY, REG_MULTI_SZ, REG_SZ};
use kernel_double::cpu::{cpuid, pmu, topology};
use kernel_double::status::STATUS_SUCCESS;

/// Custom Event n's 64-bit total.
const fn custom_total(n: u32) -> u32 {
    37 + 2 * n
}
/// Status counterset position of Rejected Custom Events.
const REJECTED: usize = 11;
/// Custom Event n Select's counter id in the status counterset.
const fn select_id(n: u32) -> u32 {
    40 + n
}
/// IA32_PERFEVTSELx's USR (16), OS (17) and EN (22) bits: what every line here sets beside its event
/// and unit mask (Intel SDM Vol. 3B, "Architectural Performance Monitoring Version 1").
const USR_OS_EN: u64 = 1 << 16 | 1 << 17 | 1 << 22;

/// The event and unit mask a line names (`event=0xEE,umask=0xUU,...`).
fn event_and_umask(line: &str) -> (u64, u64) {
    let field = |key: &str| {
        let value = line.split(',').find_map(|part| part.strip_prefix(key)).expect("the line names it");
        u64::from_str_radix(value.trim_start_matches("0x"), 16).expect("hexadecimal")
    };
    (field("event="), field("umask="))
}

/// The Custom Event n Select values the status counterset shows now.
fn selects_shown() -> Vec<u64> {
    let status = Counterset::open(&consumer::manifest(), "Hardware Counters Driver").unwrap();
    let values = common::driver_status();
    (0..8).map(|n| values[status.index_of(select_id(n)).expect("registered")]).collect()
}

/// Eight lines, each an event the virtual PMU's workload makes and no fixed counter counts, with the
/// event (index into `pmu::RATES`) it counts.
const LINES: [(&str, usize); 8] = [
    ("event=0x2E,umask=0x4F,name=llc-references", 3),
    ("event=0x2E,umask=0x41,name=llc-misses", 4),
    ("event=0xC4,umask=0x00,name=branches", 5),
    ("event=0xC5,umask=0x00,name=branch-misses", 6),
    ("event=0x9C,umask=0x01,name=idq-uops-not-delivered", pmu::SLOTS_NOT_DELIVERED),
    ("event=0x0E,umask=0x01,name=uops-issued", pmu::SLOTS_ISSUED),
    ("event=0xC2,umask=0x02,name=retire-slots", pmu::SLOTS_RETIRED),
    ("event=0x0D,umask=0x01,name=recovery-cycles", pmu::RECOVERY_CYCLES),
];

fn eight_custom_lines(model: &'static cpuid::CpuModel) {
    cpuid::set_model(model);
    registry::set_value(PARAMETERS_KEY, "Profile", REG_SZ, registry::sz("custom"));
    let lines: Vec<&str> = LINES.iter().map(|(line, _)| *line).collect();
    registry::set_value(PARAMETERS_KEY, "CustomEvents", REG_MULTI_SZ, registry::multi_sz(&lines));
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let set = Counterset::open(&consumer::manifest(), "Hardware Counters").unwrap();
    assert_eq!(pcw::add_counter(&set.name, set.full_mask()), Some(STATUS_SUCCESS));
    assert_eq!(common::driver_status()[REJECTED], 0, "no line rejected");
    // Each line's encoding reads back as the select value the driver programs (no INT bit), so that
    // an agent can label the Custom Event n series with it.
    let expected: Vec<u64> = LINES
        .iter()
        .map(|(line, _)| {
            let (event, umask) = event_and_umask(line);
            event | umask << 8 | USR_OS_EN
        })
        .collect();
    assert_eq!(selects_shown(), expected, "Custom Event 0-7 Select");
    for round in 1..=3 {
        for vp in 0..topology::processor_count() {
            pmu::step(vp, 1_000 * round + u64::from(vp));
        }
        let sample = consumer::sample(&set).unwrap();
        let mut wrong = Vec::new();
        for vp in 0..topology::processor_count() {
            let values = sample.values_of(&set, &format!("0,{vp}")).expect("instance sampled");
            for (n, &(line, event)) in LINES.iter().enumerate() {
                let shown = values[set.index_of(custom_total(n as u32)).unwrap()].expect("value");
                let counted = pmu::counted(vp, event);
                if shown != counted || counted == 0 {
                    wrong.push(format!(
                        "processor {vp}, Custom Event {n} ({line}): {shown}, counted {counted}"
                    ));
                }
            }
        }
        assert!(
            wrong.is_empty(),
            "round {round}: {} of 8 custom lines wrong:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }
    assert_eq!(pcw::remove_counter(&set.name, set.full_mask()), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    common::assert_clean();
}

#[test]
fn eight_custom_lines_count_on_sapphire_rapids() {
    eight_custom_lines(&cpuid::SAPPHIRE_RAPIDS);
}

#[test]
fn eight_custom_lines_count_on_skylake_without_hyper_threading() {
    eight_custom_lines(&cpuid::SKYLAKE_NO_HT);
}

/// A rejected line reads 0 in its Custom Event n Select, the lines after it keep their numbers and
/// values (outside the custom profile every select reads 0: `src/pmu/profile/tests.rs`).
#[test]
fn a_rejected_lines_select_reads_zero_and_the_others_keep_theirs() {
    cpuid::set_model(&cpuid::SKYLAKE_NO_HT);
    registry::set_value(PARAMETERS_KEY, "Profile", REG_SZ, registry::sz("custom"));
    let lines = ["event=0x2E,umask=0x41", "event=0x1FF,umask=0x01", "event=0xC5,umask=0x00,cmask=2,inv=1"];
    registry::set_value(PARAMETERS_KEY, "CustomEvents", REG_MULTI_SZ, registry::multi_sz(&lines));
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let set = Counterset::open(&consumer::manifest(), "Hardware Counters").unwrap();
    assert_eq!(pcw::add_counter(&set.name, set.full_mask()), Some(STATUS_SUCCESS));
    assert_eq!(common::driver_status()[REJECTED], 1, "the 9-bit Intel event is rejected");
    let cmask_inv = 2 << 24 | 1 << 23;
    assert_eq!(selects_shown(), [0x412E | USR_OS_EN, 0, 0xC5 | cmask_inv | USR_OS_EN, 0, 0, 0, 0, 0]);
    assert_eq!(pcw::remove_counter(&set.name, set.full_mask()), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    common::assert_clean();
}
