//! Ids without a system call each: one generator per process, seeded once from the
//! operating system, gives every run, step, message and checkpoint id.
//!
//! `uuid::Uuid::new_v4` asks the kernel for 16 random bytes per id (`getrandom`), ten of
//! them per step. Here the kernel is asked once for a 256-bit key, and id number `n` is the
//! first 16 bytes of SHA-256(key ‖ n), with the UUIDv4 version and variant bits set. That is
//! a hash-based generator in the manner of NIST SP 800-90A's Hash_DRBG: without the key the
//! ids cannot be told from random, so they keep UUIDv4's 122 random bits and its odds of a
//! collision, between processes too (each has its own key).
//!
//! A forked child would otherwise go on with its parent's key and counter and repeat its
//! parent's next ids; a handler registered with `pthread_atfork` marks the key stale in the
//! child, which draws a new one before its next id. (A child that `exec`s at once, as every
//! program the runner starts does, never gets that far.)

use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use sha2::{Digest, Sha256};

/// The key, four words, written once per process (and once more in a forked child).
static KEY: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];
/// The number of the next id under the current key.
static NEXT: AtomicU64 = AtomicU64::new(0);
/// The key is drawn at the first id.
static SEEDED: Once = Once::new();
/// Set in a forked child: its inherited key must not be used again.
static STALE: AtomicBool = AtomicBool::new(false);

/// A fresh UUIDv4.
pub fn uuid_v4() -> uuid::Uuid {
    SEEDED.call_once(|| {
        draw_key();
        #[cfg(unix)]
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe, as a
        // handler run in a child after fork must be.
        unsafe {
            libc::pthread_atfork(None, None, Some(after_fork_in_child));
        }
    });
    if STALE.swap(false, Ordering::Relaxed) {
        draw_key();
    }
    let number = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut hash = Sha256::new();
    for word in &KEY {
        hash.update(word.load(Ordering::Relaxed).to_le_bytes());
    }
    hash.update(number.to_le_bytes());
    let digest = hash.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// Draws a new key from the operating system (two UUIDv4s of `getrandom`'s bytes: 244
/// random bits) and starts its numbers at zero.
fn draw_key() {
    let a = uuid::Uuid::new_v4().as_u64_pair();
    let b = uuid::Uuid::new_v4().as_u64_pair();
    for (word, value) in KEY.iter().zip([a.0, a.1, b.0, b.1]) {
        word.store(value, Ordering::Relaxed);
    }
    NEXT.store(0, Ordering::Relaxed);
}

#[cfg(unix)]
extern "C" fn after_fork_in_child() {
    STALE.store(true, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_version_4_rfc_variant_and_distinct() {
        let ids: HashSet<uuid::Uuid> = (0..10_000).map(|_| uuid_v4()).collect();
        assert_eq!(ids.len(), 10_000);
        for id in &ids {
            assert_eq!(id.get_version(), Some(uuid::Version::Random));
            assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
        }
    }

    #[test]
    fn each_bit_is_set_about_half_the_time() {
        // 122 random bits: over 4,000 ids each is set 2,000 ± 200 times (more than six
        // standard deviations), or the generator is broken.
        let mut set = [0u32; 128];
        for _ in 0..4_000 {
            let bits = uuid_v4().as_u128();
            for (i, count) in set.iter_mut().enumerate() {
                *count += ((bits >> i) & 1) as u32;
            }
        }
        let fixed = |i: usize| (76..80).contains(&i) || (62..64).contains(&i);
        for (i, count) in set.iter().enumerate().filter(|(i, _)| !fixed(*i)) {
            assert!((1_800..=2_200).contains(count), "bit {i} set {count} times");
        }
    }
}
