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
use core::ffi::c_void;
use libmimalloc_sys as mi;

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
