//! A kernel build refuses an image that imports a routine it does not export, as Windows' loader does:
//! the purpose-built pool-leak driver (tests/faulty-drivers/pool-leak) imports ExAllocatePool2
//! statically, which Windows 10 1903 (build 18362) lacks; there the load fails naming that import, and
//! MmGetSystemRoutineAddress would not find it either. On Windows 10 2004 (build 19041) the same image
//! loads.

use crate::faulty_support;

use faulty_support::{POOL_LEAK, image};
use kernel_double::driver::Driver;
use kernel_double::exports::Registry;
use kernel_double::kernel_build::{self, WINDOWS_10_1903, WINDOWS_10_2004};
use kernel_double::loader::LoadError;

#[test]
fn an_image_importing_exallocatepool2_does_not_load_on_1903() {
    kernel_build::set(WINDOWS_10_1903);
    let path = image(POOL_LEAK);
    let error = Driver::load(&path).err().expect("an image importing ExAllocatePool2 loaded on 1903");
    assert_eq!(error, LoadError::UnresolvedImports(vec!["ntoskrnl.exe!ExAllocatePool2".into()]));

    let bytes = std::fs::read(&path).expect("reading the pool-leak driver");
    assert!(Driver::load_bytes(&bytes, &Registry::of_build(WINDOWS_10_2004)).is_ok());
}
