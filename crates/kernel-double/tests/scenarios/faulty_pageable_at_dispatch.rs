//! Force IRQL Checking catches a purpose-built faulty driver (tests/faulty-drivers/pageable-at-dispatch):
//! DriverEntry calls a function of its PAGE section at PASSIVE_LEVEL (fine), raises to DISPATCH_LEVEL
//! with `mov cr8` and calls it again. The double trims pageable sections while any processor is at
//! DISPATCH_LEVEL or above, so the call faults, and the double reports pageable code touched at IRQL 2
//! with the RVA in PAGE and aborts (Windows: bug check 0xD1). The scenario runs in a child process.
//! A second test checks the trimming itself: PAGE is inaccessible exactly while a processor is raised,
//! and a touch below DISPATCH_LEVEL is paged back in instead of reported.

use crate::faulty_support;

use crate::common::readable;
use faulty_support::*;
use kernel_double::cpu::{self, DISPATCH_LEVEL, IPI_LEVEL, PASSIVE_LEVEL};
use kernel_double::image_map;

const TEST: &str = concat!(module_path!(), "::", "faulty_pageable_code_at_dispatch_level_is_fatal_and_named");

#[test]
fn faulty_pageable_code_at_dispatch_level_is_fatal_and_named() {
    if is_child() {
        let mut driver = load(PAGEABLE_AT_DISPATCH);
        let page = section(&driver, "PAGE");
        eprintln!("child: PAGE at RVA {:#x}, {:#x} bytes", page.rva, page.length);
        driver.driver_entry();
        unreachable!("pageable code ran at DISPATCH_LEVEL unnoticed");
    }
    let (_, stderr) = run_child(TEST);
    assert!(stderr.contains("kernel-double: VIOLATION Force IRQL Checking (called from RVA 0x"), "{stderr}");
    assert!(
        stderr.contains("kernel-double: FATAL FAULT: pageable code/data touched at IRQL 2: RIP"),
        "{stderr}"
    );
    let page_rva = hex_after(&stderr, "child: PAGE at RVA ").expect("PAGE's RVA");
    let rip_rva = hex_after(&stderr, "(image RVA ").expect("the faulting RIP as an RVA");
    assert_eq!(rip_rva, page_rva, "the fault is the call's first instruction, PAGE's first byte\n{stderr}");
    assert!(stderr.contains(&format!("(image RVA {rip_rva:#x} in PAGE)")), "{stderr}");
    assert_eq!(hex_after(&stderr, "VIOLATION Force IRQL Checking (called from RVA "), Some(rip_rva));
    // The first call, at PASSIVE_LEVEL, ran: only one violation.
    assert_eq!(stderr.matches("kernel-double: VIOLATION").count(), 1, "{stderr}");
}

#[test]
fn faulty_pageable_sections_are_trimmed_only_at_dispatch_level() {
    if is_child() {
        return;
    }
    let driver = load(PAGEABLE_AT_DISPATCH);
    let page = driver.image().base() + section(&driver, "PAGE").rva;
    let text = driver.image().base() + section(&driver, ".text").rva;
    let kpcr = cpu::enter(0);
    assert!(readable(page));
    kpcr.set_irql(DISPATCH_LEVEL);
    assert!(!readable(page), "trimmed at DISPATCH_LEVEL");
    assert!(readable(text), "only PAGE sections");
    kpcr.set_irql(IPI_LEVEL);
    assert!(!readable(page));
    kpcr.set_irql(PASSIVE_LEVEL);
    assert!(readable(page), "paged in when no processor is raised");

    // Another processor at DISPATCH_LEVEL trims; a touch from PASSIVE_LEVEL pages back in.
    let (raised, lower) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let other = cpu::enter(1);
            other.set_irql(DISPATCH_LEVEL);
            raised.wait();
            lower.wait();
            other.set_irql(PASSIVE_LEVEL);
        });
        raised.wait();
        assert!(!readable(page));
        let (_, page_ins) = image_map::pageable_statistics();
        // SAFETY: PAGE is part of the mapped image; the trap handler pages it back in on the fault.
        let first = unsafe { std::ptr::read_volatile(page as *const u8) };
        assert_ne!(first, 0, "PAGE's code");
        assert_eq!(image_map::pageable_statistics().1, page_ins + 1, "paged back in once");
        lower.wait();
    });
    assert!(readable(page));
    assert_eq!(kernel_double::violations::all(), []);
}
