//! The real pmupcw.sys on 72 virtual processors in two groups of 36: instances are named `group,number`
//! with id group*64+number, so "1,35" has id 99.

use crate::common;

use kernel_double::control::pcw;
use kernel_double::cpu::topology;
use kernel_double::status::STATUS_SUCCESS;

#[test]
fn seventy_two_processors_in_two_groups() {
    topology::configure(72, 36);
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);

    let (status, instances) = pcw::collect("Hardware Counters", &pcw::Query::default()).expect("registered");
    assert_eq!(status, STATUS_SUCCESS);
    let named: Vec<_> = instances.iter().map(|instance| (instance.name.clone(), instance.id)).collect();
    assert_eq!(named, common::expected_processor_instances(&[36, 36]));
    assert!(named.contains(&("1,35".to_string(), 64 + 35)));

    let masked = pcw::Query { instance_mask: Some("1,3?".into()), ..pcw::Query::default() };
    let (_, matched) = pcw::collect("Hardware Counters", &masked).expect("registered");
    let names: Vec<_> = matched.iter().map(|instance| instance.name.as_str()).collect();
    assert_eq!(names, ["1,30", "1,31", "1,32", "1,33", "1,34", "1,35"]);

    assert!(driver.unload());
    common::assert_clean();
}
