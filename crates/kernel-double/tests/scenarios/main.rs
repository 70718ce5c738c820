//! The kernel double's scenarios: the real `pmupcw.sys` (or a faulty driver of tests/faulty-drivers/)
//! loaded into the double, one scenario per test.
//!
//! One test binary holds every scenario, so the double and its dependencies are linked once instead of
//! once per scenario. The double's state is per process (the signal handler, GS, the CPU model chosen
//! once, the fake kernel's tables), so each test needs a process of its own: run them with
//! cargo-nextest, which runs every test as its own process
//! (https://nexte.st/docs/design/why-process-per-test/). Plain `cargo test` runs them as threads of one
//! process, where they interfere.

// The double's host-side FFI (signal handlers, ucontext, process_vm_readv, the fake exports' raw
// arguments) groups the calls of one setup in one unsafe block, each block with its SAFETY comment;
// the driver holds itself to one unsafe operation per block.
#![allow(clippy::multiple_unsafe_ops_per_block)]

mod common;
mod faulty_support;

mod boot_guard;
mod budgets;
mod bug_check;
mod coexisting_writers;
mod concurrent_collects;
mod config_matrix;
mod consumer_modes;
mod consumer_properties;
mod consumer_total_ratios;
mod consumer_typeperf;
mod cpu_model_alder_lake;
mod cpu_model_hybrid;
mod cpu_model_hyperv_guest_no_pmu;
mod cpu_model_kvm_cloud_guests;
mod cpu_model_no_pmu;
mod cpu_model_skylake;
mod cpu_model_zen3;
mod cpu_model_zen4;
mod cpu_model_zen5;
mod cr8_emulation;
mod custom_events_every_counter;
mod discarded_init;
mod driver_entry_and_unload;
mod event_profiles;
mod fault_injection_add_counter;
mod fault_injection_driver_entry;
mod fault_injection_hal_fallback;
mod fault_injection_thread_reference;
mod faulty_checks_real_driver_clean;
mod faulty_dpc_pending_at_unload;
mod faulty_mmio_misuse;
mod faulty_msr_without_ownership;
mod faulty_pageable_at_dispatch;
mod faulty_pool_leak;
mod faulty_pool_overrun;
mod faulty_spinlock_in_pmi;
mod fleet_windows_exporter;
mod hal_as_decompiled;
mod hal_profiling_after_release;
mod hostile_consumers;
mod hot_added_processor;
mod hybrid_per_core_type;
mod hyperv_cpuid_claims_pmu;
mod hyperv_guest_without_pmu;
mod hyperv_perf_metrics;
mod idle_without_timers;
mod irql_checks;
mod kernel_build_1903;
mod kernel_build_2004;
mod kernel_build_refuses_newer_imports;
mod kernel_services_probe;
mod late_resume;
mod lazy_ownership;
mod load_unload_cycles;
mod memory_controller;
mod memory_traffic_runs;
mod overflow_storm;
mod perf_metrics_overflow;
mod pmi_at_every_instruction;
mod pmi_masking;
mod pmu_owned_by_another_client;
mod pool_fault_injection;
mod pool_fault_injection_1903;
mod processors_128;
mod ratio_exactness;
mod registry_writes;
mod served_reads_never_fake_a_zero;
mod seventy_two_processors;
mod sleep_and_foreign_writers;
mod topdown_and_frequency;
mod topdown_exact;
mod unload_while_collecting;
mod unresolved_imports;
mod virtual_pmu_semantics;
