//! The extension's allocator: mimalloc, asked through its plain entry
//! points wherever they already give the alignment.
//!
//! The mimalloc crate's `GlobalAlloc` passes every request to
//! `mi_malloc_aligned`.  That is cheap only while the size class has a free
//! block at hand; otherwise mimalloc checks whether the size is "naturally
//! aligned" (a power of two), and for any other size, a 280-byte event
//! among them, over-allocates.  Every mimalloc block is a whole number of
//! machine words from a word-aligned page start, so `mi_malloc` already
//! gives word alignment: requests aligned to a word or less go there, the
//! rest to the aligned entry points.

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::{c_int, c_long, c_void};
use libmimalloc_sys as mi;

unsafe extern "C" {
    fn mi_option_set(option: c_int, value: c_long);
}

/// `mi_option_purge_delay` in the mimalloc v2 that libmimalloc-sys 0.1.49
/// builds (its `mi_option_t`, counted from 0; the crate names only some).
/// No unit test can tell one option from another (a set and a get of any
/// index agree); the figures below (minor faults with and without) are
/// what show this is the purge delay.
const PURGE_DELAY: c_int = 15;

/// Milliseconds mimalloc waits before giving freed pages back to the OS.
///
/// Under `--jobs`, a batch's events are made on a parse worker and freed
/// on the main thread.  This build's mimalloc gave the pages back at once
/// (`MIMALLOC_VERBOSE=1` shows `purge_delay: 0` in the extension), and
/// the next batches faulted them in again: 228,000 minor faults and
/// 0.66 s of system time on a 2M-line strace log, so `--jobs 2` (1.63 s)
/// was slower than `--jobs 1`.  At 1 ms: 10,500 faults, 0.16 s, 1.20 s
/// wall; peak RSS +6 MB (strace) and +7 MB (preload, `--jobs 2`).
/// Memory still goes back as soon as it stays free for a millisecond.
const PURGE_DELAY_MS: c_long = 1;

/// Sets the allocator options above; called once when the module loads.
pub fn tune() {
    unsafe { mi_option_set(PURGE_DELAY, PURGE_DELAY_MS) }
}

/// What every mimalloc block is aligned to (MI_INTPTR_SIZE).
const WORD: usize = core::mem::size_of::<usize>();

pub struct MiMalloc;

unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe {
            if layout.align() <= WORD {
                mi::mi_malloc(layout.size()) as *mut u8
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe {
            if layout.align() <= WORD {
                mi::mi_zalloc(layout.size()) as *mut u8
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        unsafe { mi::mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe {
            if layout.align() <= WORD {
                mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
            } else {
                mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size and alignment up to a few pages comes back aligned,
    /// zeroed where asked, and keeps its bytes through a realloc.
    #[test]
    fn blocks_are_aligned_and_keep_their_bytes() {
        let a = MiMalloc;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in (1..600).chain([4095, 4096, 70_000]) {
                let l = Layout::from_size_align(size, align).unwrap();
                unsafe {
                    let p = a.alloc(l);
                    assert!(
                        !p.is_null() && (p as usize).is_multiple_of(align),
                        "{size} {align}"
                    );
                    p.write_bytes(0xA5, size);
                    let q = a.realloc(p, l, size * 2 + 1);
                    assert!(
                        !q.is_null() && (q as usize).is_multiple_of(align),
                        "{size} {align}"
                    );
                    assert!((0..size).all(|i| *q.add(i) == 0xA5), "{size} {align}");
                    a.dealloc(q, Layout::from_size_align(size * 2 + 1, align).unwrap());
                    let z = a.alloc_zeroed(l);
                    assert!(
                        (z as usize).is_multiple_of(align) && (0..size).all(|i| *z.add(i) == 0)
                    );
                    a.dealloc(z, l);
                }
            }
        }
    }
}
