//! The memory controller source as the client drives it, on the fake platform: detection's status,
//! the mapping on the source's own demand and its release, the 64-bit extension of Skylake's 32-bit
//! counters across a wrap, and a failed mapping that leaves nothing mapped.

use super::fake::*;
use super::*;
use crate::counters::memory_controller::Values;
use crate::imc::detect::HostBridge;
use crate::pcw::memory_controller::MemorySource;
use crate::session::schedule::MAX_IDLE_100NS;
use std::sync::atomic::Ordering as StdOrdering;

fn memory_state(client: &PmuClient<FakePlatform>) -> u32 {
    client.status.memory_controller_state()
}

fn mapped(client: &PmuClient<FakePlatform>) -> usize {
    client.platform.io.mapped.load(StdOrdering::SeqCst)
}

#[test]
fn detection_says_idle_and_maps_nothing_until_a_query_of_its_counterset() {
    let client = skylake_with_memory();
    assert_eq!(memory_state(&client), Status::Idle.value());
    assert_eq!((client.memory_controllers(), mapped(&client)), (1, 0));
    // A query of the core counters maps nothing.
    client.query_added();
    client.collect();
    assert_eq!(mapped(&client), 0);
    client.memory_query_added();
    assert_eq!((mapped(&client), memory_state(&client)), (1, Status::Counting.value()));
}

#[test]
fn no_bridge_reads_for_an_unlisted_processor_and_the_status_says_why() {
    let mut client = skylake(&[]);
    let cpu = CpuIdValues { leaf1_eax: 0x0005_0654, ..skylake_cpu() }; // Skylake-SP, a server
    client.detect_memory_controller(&cpu);
    assert_eq!(memory_state(&client), Status::UnsupportedModel.value());
    assert_eq!(client.platform.io.bridge_reads.load(StdOrdering::SeqCst), 0);
    client.memory_query_added();
    client.memory_refresh();
    assert_eq!((client.memory_controllers(), mapped(&client)), (0, 0));
    // A listed processor whose 00:00.0 answers nothing (all ones): no device.
    let mut client = skylake(&[]);
    client.detect_memory_controller(&skylake_cpu());
    assert_eq!(memory_state(&client), Status::NoDevice.value());
}

#[test]
fn thirty_two_bit_counters_are_extended_across_a_wrap_and_published_in_bytes() {
    let client = skylake_with_memory();
    client.platform.io.set(PAGE, 0x50, 0xFFFF_FF00);
    client.platform.io.set(PAGE, 0x54, 7);
    client.memory_query_added();
    // The reads counter wraps: 0x100 + 0x10 lines later it reads 0x10.
    client.platform.io.set(PAGE, 0x50, 0x10);
    client.platform.io.set(PAGE, 0x54, 9);
    client.advance(SECOND);
    client.memory_refresh();
    client.memory_collect_done();
    let expected =
        Values { read_bytes: 0x110 * 64, write_bytes: 2 * 64, total_bytes: 0x112 * 64, ..Values::default() };
    assert_eq!(client.memory_values(0), expected);
}

#[test]
fn idle_release_unmaps_and_the_totals_carry_on_from_the_next_mapping() {
    let client = skylake_with_memory();
    client.memory_query_added();
    client.platform.io.set(PAGE, 0x50, 100);
    client.advance(SECOND);
    client.memory_refresh();
    client.memory_collect_done();
    // Idle past the core counters' release hysteresis: the read-only mapping stays (the first
    // interval of a consumer sampling every 10 minutes is counted whole).
    client.advance(10 * SECOND);
    client.tick();
    assert_eq!(mapped(&client), 1);
    // No activity for the longest idle limit: the housekeeping thread unmaps.
    client.advance(MAX_IDLE_100NS);
    client.tick();
    assert_eq!((mapped(&client), memory_state(&client)), (0, Status::Idle.value()));
    assert_eq!(client.memory_values(0).read_bytes, 100 * 64);
    // A 32-bit counter may have wrapped unseen while unmapped: the next mapping takes the raw value as
    // its base.
    client.platform.io.set(PAGE, 0x50, 5_000);
    client.memory_query_added();
    client.platform.io.set(PAGE, 0x50, 5_010);
    client.advance(SECOND);
    client.memory_refresh();
    assert_eq!(client.memory_values(0).read_bytes, 110 * 64);
}

#[test]
fn sixty_four_bit_counters_count_what_moved_while_unmapped() {
    // Alder Lake-S (family 6 model 0x97, bridge 8086:4660): two controllers, 64-bit counters at
    // 0xD858 (reads) and 0xD8A0 (writes), 0x10000 apart.
    let mut client = skylake(&[]);
    *client.platform.io.bridge.lock().unwrap() =
        HostBridge { id: 0x4660_8086, mchbar_low: MCHBAR as u32 | 1, mchbar_high: 0 };
    client.detect_memory_controller(&CpuIdValues { leaf1_eax: 0x0009_0672, ..skylake_cpu() });
    assert_eq!(client.memory_controllers(), 2);
    let page = MCHBAR + 0xD000;
    client.platform.io.set(page, 0x858, 1 << 40);
    client.memory_query_added();
    client.advance(MAX_IDLE_100NS + SECOND);
    client.tick();
    assert_eq!(mapped(&client), 0);
    // Moved while unmapped, then while mapped again: every line is counted.
    client.platform.io.set(page, 0x858, (1 << 40) + 5_000);
    client.memory_query_added();
    client.platform.io.set(page, 0x858, (1 << 40) + 5_010);
    client.advance(SECOND);
    client.memory_refresh();
    assert_eq!(client.memory_values(0).read_bytes, 5_010 * 64);
}

#[test]
fn a_failed_mapping_says_so_leaves_nothing_mapped_and_is_retried() {
    let client = skylake_with_memory();
    client.platform.io.fail_maps.store(true, StdOrdering::SeqCst);
    client.memory_query_added();
    assert_eq!((mapped(&client), memory_state(&client)), (0, Status::MapFailed.value()));
    client.platform.io.fail_maps.store(false, StdOrdering::SeqCst);
    client.memory_query_added();
    assert_eq!((mapped(&client), memory_state(&client)), (1, Status::Counting.value()));
    drop(client);
}

#[test]
fn the_first_mapping_is_guarded_and_a_held_off_start_maps_nothing() {
    let client = skylake_with_memory();
    client.platform.marker_fails.store(true, StdOrdering::SeqCst);
    client.memory_query_added();
    assert_eq!(mapped(&client), 0, "mapped without the boot guard's marker");
    client.platform.marker_fails.store(false, StdOrdering::SeqCst);
    client.memory_query_added();
    // Set before the mapping, deleted once the mapping read every controller's counters.
    assert_eq!((mapped(&client), memory_state(&client)), (1, Status::Counting.value()));
    assert!(matches!(*client.platform.marker.lock().unwrap(), Some((false, _))), "the marker stayed");

    let mut client = skylake_with_memory();
    client.hold_off(crate::pcw::driver_status::HardwareGuard::HeldOff);
    client.memory_query_added();
    client.memory_refresh();
    assert_eq!((mapped(&client), memory_state(&client)), (0, Status::HeldOff.value()));
    assert_eq!(client.memory_controllers(), 0);
    assert_eq!(*client.platform.marker.lock().unwrap(), None);
}
