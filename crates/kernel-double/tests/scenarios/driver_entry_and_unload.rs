//! The real pmupcw.sys on 4 virtual processors: DriverEntry registers both countersets with the
//! manifest's counters, a collect through the registered callback returns one instance per processor,
//! the status counterset has its one instance, DbgPrintEx captured the driver's lines, and DriverUnload
//! leaves nothing behind.

use crate::common;

use kernel_double::control::{dbg, pcw, ps};
use kernel_double::status::STATUS_SUCCESS;
use kernel_double::violations;

use common::{BY_CORE_TYPE, DRIVER_STATUS, HARDWARE_COUNTERS, MEMORY_CONTROLLER};

#[test]
fn driver_entry_registers_collects_and_unloads_clean() {
    let mut driver = common::load();
    let image = driver.image();
    assert_ne!(image.base() as u64, image.preferred_base(), "mapped at its preferred base");
    assert!(image.sections().iter().any(|section| section.name == "INIT"), "no INIT section");

    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    assert!(driver.unload_routine().is_some(), "DriverEntry set no DriverUnload");
    assert!(driver.image().sections().iter().any(|section| section.name == "INIT" && section.discarded));

    let registrations = pcw::registrations();
    let summary: Vec<_> =
        registrations.iter().map(|r| (r.name.as_str(), r.counter_count, r.has_callback)).collect();
    let manifest = kernel_double::consumer::manifest();
    let counters = |name| manifest.counter_sets.iter().find(|set| set.name == name).unwrap().counters.len();
    assert_eq!(
        summary,
        [
            (HARDWARE_COUNTERS, counters(HARDWARE_COUNTERS), true),
            (DRIVER_STATUS, counters(DRIVER_STATUS), false),
            (BY_CORE_TYPE, counters(BY_CORE_TYPE), true),
            (MEMORY_CONTROLLER, counters(MEMORY_CONTROLLER), true)
        ]
    );
    assert_eq!(ps::live_system_threads(), 1, "the housekeeping thread is not running");

    let (status, instances) = pcw::collect(HARDWARE_COUNTERS, &pcw::Query::default()).expect("registered");
    assert_eq!(status, STATUS_SUCCESS);
    let named: Vec<_> = instances.iter().map(|instance| (instance.name.clone(), instance.id)).collect();
    assert_eq!(named, common::expected_processor_instances(&[4]));
    for instance in &instances {
        assert_eq!(instance.values.as_ref().map(Vec::len), Some(counters(HARDWARE_COUNTERS)), "{instance:?}");
    }

    let (status, enumerated) = pcw::enumerate(HARDWARE_COUNTERS, &pcw::Query::default()).expect("registered");
    assert_eq!(status, STATUS_SUCCESS);
    assert_eq!(enumerated.len(), 4);

    let one = pcw::Query { instance_id: 2, ..pcw::Query::default() };
    let (_, only) = pcw::collect(HARDWARE_COUNTERS, &one).expect("registered");
    assert_eq!(only.iter().map(|instance| instance.id).collect::<Vec<_>>(), [2]);

    let (status, status_instances) = pcw::collect(DRIVER_STATUS, &pcw::Query::default()).expect("registered");
    assert_eq!(status, STATUS_SUCCESS);
    assert_eq!(status_instances.len(), 1, "{status_instances:?}");
    assert_eq!(status_instances[0].name, "");
    assert_eq!(status_instances[0].values.as_ref().map(Vec::len), Some(counters(DRIVER_STATUS)));

    let lines = dbg::lines();
    assert!(
        lines.iter().any(|line| line.text.starts_with("pmupcw: pmupcw ") && line.text.contains("loading"))
    );
    assert!(
        lines.iter().any(|line| line.text.contains("countersets registered for 4 processors")),
        "{lines:?}"
    );

    assert!(driver.unload());
    assert!(dbg::lines().iter().any(|line| line.text.contains("pmupcw unloaded")));
    assert!(pcw::registrations().is_empty());
    assert_eq!(ps::live_system_threads(), 0, "the housekeeping thread did not end");
    assert_eq!(violations::all(), []);
    common::assert_clean();
}
