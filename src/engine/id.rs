//! Ids without a system call each: one generator per process, seeded once from the
//! operating system, gives every run, step, message and checkpoint id.
//!
//! `uuid::Uuid::new_v4` asks the kernel for 16 random bytes per id (`getrandom`), ten of
//! them per step. Here the kernel is asked once for a 256-bit key, and the ids are read off
//! the ChaCha20 keystream under that key, 16 bytes each, with the UUIDv4 version and variant
//! bits set: the generator of Linux's `getrandom` and OpenBSD's `arc4random`. Without the
//! key the ids cannot be told from random, so they keep UUIDv4's 122 random bits and its
//! odds of a collision, between processes too (each has its own key). One ChaCha20 block
//! gives four ids; SHA-256 of the key and a counter, the generator before it, cost a
//! sixteenth of a step's instructions on a machine without SHA instructions. Each thread
//! keeps a keystream of its own, so no id waits for a lock.
//!
//! A forked child would otherwise go on with its parent's key and position and repeat its
//! parent's next ids; a handler registered with `pthread_atfork` marks the key stale in the
//! child, which draws a new one before its next id. (A child that `exec`s at once, as every
//! program the runner starts does, never gets that far.)

use std::cell::RefCell;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use chacha20::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};

thread_local! {
    /// The keystream this thread reads ids from: `None` until its first id.
    static KEYSTREAM: RefCell<Option<ChaCha20Rng>> = const { RefCell::new(None) };
}
/// The `pthread_atfork` handler is registered at the first id.
static REGISTERED: Once = Once::new();
/// Set in a forked child: its inherited key must not be used again.
static STALE: AtomicBool = AtomicBool::new(false);

/// A fresh UUIDv4.
pub fn uuid_v4() -> uuid::Uuid {
    REGISTERED.call_once(|| {
        #[cfg(unix)]
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe, as a
        // handler run in a child after fork must be.
        unsafe {
            libc::pthread_atfork(None, None, Some(after_fork_in_child));
        }
    });
    let mut bytes = [0u8; 16];
    KEYSTREAM.with_borrow_mut(|keystream| {
        // Only a forked child's one thread can see the flag set.
        if STALE.swap(false, Ordering::Relaxed) {
            *keystream = None;
        }
        keystream.get_or_insert_with(drawn).fill_bytes(&mut bytes);
    });
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// A keystream under a new key from the operating system (two UUIDv4s of `getrandom`'s
/// bytes: 244 random bits), read from its start.
fn drawn() -> ChaCha20Rng {
    let mut key = [0u8; 32];
    key[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    key[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    ChaCha20Rng::from_seed(key)
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
