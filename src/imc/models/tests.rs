//! The model table as properties over every entry: the offsets Linux lists, one page per controller,
//! no ID on two models' lists with different layouts, and the request counters only where Linux has them.

use super::*;

fn layouts() -> [&'static Layout; 3] {
    [&SNB_IMC, &TGL_L_IMC, &TGL_IMC]
}

#[test]
fn every_layout_reads_and_writes_in_one_aligned_page_per_controller() {
    for layout in layouts() {
        assert!(layout.controllers >= 1 && usize::from(layout.controllers) <= MAX_CONTROLLERS);
        assert!(!layout.counters.is_empty() && layout.counters.len() <= MAX_COUNTERS);
        let kinds: Vec<_> = layout.counters.iter().map(|c| c.kind).collect();
        assert!(kinds.contains(&CounterKind::DataReads) && kinds.contains(&CounterKind::DataWrites));
        // A stride of at least a page: two controllers never share (or overlap) a mapping.
        assert!(
            layout.controllers == 1
                || (layout.stride >= PAGE_SIZE && layout.stride.is_multiple_of(PAGE_SIZE))
        );
        for (i, a) in layout.counters.iter().enumerate() {
            assert!(a.width == 32 || a.width == 64, "{a:?}");
            let bytes = u64::from(a.width / 8);
            assert!(a.offset.is_multiple_of(bytes), "{a:?} is not naturally aligned");
            for b in &layout.counters[i + 1..] {
                let b_bytes = u64::from(b.width / 8);
                assert!(
                    a.offset + bytes <= b.offset || b.offset + b_bytes <= a.offset,
                    "{a:?} overlaps {b:?}"
                );
                assert_ne!(a.kind, b.kind);
            }
        }
        // Every counter's page is the first counter's, for any page-aligned MCHBAR.
        for mchbar in [0xFED1_0000u64, 0x1_0000_0000, 0xFE00_0000] {
            for index in 0..layout.controllers {
                let page = layout.page(mchbar, index).expect("a page");
                assert!(page.physical.is_multiple_of(PAGE_SIZE));
                let listed: Vec<_> = page.counters.iter().flatten().collect();
                assert_eq!(listed.len(), layout.counters.len());
                for (counter, mapped) in layout.counters.iter().zip(&listed) {
                    let address = mchbar + u64::from(index) * layout.stride + counter.offset;
                    assert_eq!(page.physical + u64::from(mapped.offset_in_page), address);
                    assert!(u64::from(mapped.offset_in_page) + u64::from(mapped.width / 8) <= PAGE_SIZE);
                    assert_eq!((mapped.kind, mapped.width), (counter.kind, counter.width));
                }
            }
            assert_eq!(layout.page(mchbar, layout.controllers), None);
        }
    }
}

#[test]
fn pages_are_linux_offsets() {
    // Linux: snb_uncore_imc maps MCHBAR & ~(PAGE_SIZE - 1) and reads +0x5050/+0x5054; the TGL/ADL
    // boxes map MCHBAR + i * 0x10000 (+ 0xd800 for ADL) and read +0x5058/+0x50A0 or +0xd858/+0xd8A0.
    let snb = SNB_IMC.page(0xFED1_0000, 0).unwrap();
    assert_eq!(snb.physical, 0xFED1_5000);
    assert_eq!(
        snb.counters[0],
        Some(PageCounter { kind: CounterKind::DataReads, offset_in_page: 0x50, width: 32 })
    );
    assert_eq!(
        snb.counters[1],
        Some(PageCounter { kind: CounterKind::DataWrites, offset_in_page: 0x54, width: 32 })
    );
    let tgl_l = TGL_L_IMC.page(0xFEDC_0000, 1).unwrap();
    assert_eq!(tgl_l.physical, 0xFEDD_5000);
    assert_eq!(tgl_l.counters[0].unwrap().offset_in_page, 0x58);
    assert_eq!(tgl_l.counters[1].unwrap().offset_in_page, 0xA0);
    let adl = TGL_IMC.page(0xFEDC_0000, 1).unwrap();
    assert_eq!(adl.physical, 0xFEDD_D000);
    assert_eq!(adl.counters[0].unwrap().offset_in_page, 0x858);
    assert_eq!(adl.counters[1].unwrap().offset_in_page, 0x8A0);
    assert_eq!(adl.counters[2], None);
}

#[test]
fn an_address_that_overflows_has_no_page() {
    assert_eq!(TGL_IMC.page(!(PAGE_SIZE - 1), 0), None);
    assert_eq!(TGL_IMC.page(u64::MAX - 0x1_0000 - 0xFFF, 1), None);
}

#[test]
fn request_counters_only_on_the_32_bit_layout() {
    // Linux publishes gt/ia/io_requests only in snb_uncore_imc_events (the 32-bit models).
    for model in MODELS {
        let has_requests = model.layout.counters.iter().any(|c| {
            matches!(c.kind, CounterKind::GtRequests | CounterKind::IaRequests | CounterKind::IoRequests)
        });
        assert_eq!(has_requests, !model.layout.all_64_bit(), "{}", model.linux_name);
        assert_eq!(model.layout.controllers == 2, model.layout.all_64_bit(), "{}", model.linux_name);
    }
}

#[test]
fn every_model_once_and_every_id_on_one_layout() {
    for (i, a) in MODELS.iter().enumerate() {
        assert_eq!(find(a.model).map(|m| m.linux_name), Some(a.linux_name));
        assert!(a.peak.bytes_per_second() > 0);
        for b in &MODELS[i + 1..] {
            assert_ne!(a.model, b.model, "{} and {}", a.linux_name, b.linux_name);
            // A device ID both models list means the same hardware: it must mean the same layout.
            if a.devices.iter().any(|id| b.devices.contains(id)) {
                assert!(core::ptr::eq(a.layout, b.layout), "{} and {}", a.linux_name, b.linux_name);
            }
        }
        for (j, id) in a.devices.iter().enumerate() {
            assert!(!a.devices[j + 1..].contains(id), "{}: {id:#06x} twice", a.linux_name);
        }
    }
    assert!(find(0x55).is_none(), "Skylake-SP is a server: not in this table");
}

#[test]
fn id_lists_are_linuxs() {
    // Counts of Linux's tables, duplicates removed: skl_uncore_pci_ids 44 entries (2 repeats),
    // icl_uncore_pci_ids 4, tgl_uncore_pci_ids 4 TGL-U, 1 TGL-H, 21 ADL, 25 RPL (2 repeats), 13 MTL.
    assert_eq!(SKL_IDS.len(), 42);
    assert_eq!(ICL_IDS.len(), 4);
    assert_eq!((TGL_U_IDS.len(), TGL_H_IDS.len()), (4, 1));
    assert_eq!(ADL_RPL_IDS.len(), 21 + 23);
    assert_eq!(MTL_IDS.len(), 13);
    assert!(LNL_IDS.is_empty());
    // Spot checks against the PCI_DEVICE_ID_INTEL_*_IMC defines.
    assert!(SKL_IDS.contains(&0x191F) && SKL_IDS.contains(&0x3E30) && SKL_IDS.contains(&0x9B73));
    assert!(ADL_RPL_IDS.contains(&0x4660) && ADL_RPL_IDS.contains(&0xA72A));
}
