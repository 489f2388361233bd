//! Which Landlock ABI the running kernel offers, and the test-only switch that pretends it
//! offers none.

use std::sync::OnceLock;

/// Set to `1`, the runner behaves as on a kernel without Landlock. For tests only: it
/// exists so `required: true` can be checked on a machine that has Landlock.
pub const PRETEND_MISSING_ENV: &str = "RUNNER_SANDBOX_PRETEND_NO_LANDLOCK";

/// The Landlock ABI version of the kernel (0: none), or why there is none.
pub fn kernel_abi() -> Result<i32, String> {
    if std::env::var_os(PRETEND_MISSING_ENV).is_some_and(|value| value == "1") {
        return Err(format!(
            "Landlock is treated as missing ({PRETEND_MISSING_ENV}=1, a switch for tests)"
        ));
    }
    static ABI: OnceLock<Result<i32, String>> = OnceLock::new();
    ABI.get_or_init(query).clone()
}

fn query() -> Result<i32, String> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute and size 0 the call only returns the ABI version.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if version < 1 {
        let error = std::io::Error::last_os_error();
        return Err(match error.raw_os_error() {
            Some(libc::ENOSYS) => "the kernel has no Landlock (built without it)".to_string(),
            Some(libc::EOPNOTSUPP) => {
                "Landlock is not enabled (add `landlock` to the kernel's `lsm=` list)".to_string()
            }
            _ => format!("cannot query Landlock: {error}"),
        });
    }
    Ok(version as i32)
}

/// The crate's name for a kernel version (the newest it knows when the kernel is newer).
pub fn crate_abi(version: i32) -> landlock::ABI {
    use landlock::ABI;
    match version {
        i32::MIN..=0 => ABI::Unsupported,
        1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        6 => ABI::V6,
        _ => ABI::V7,
    }
}
