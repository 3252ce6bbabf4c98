//! The parser as a wasm module: no imports, two exports, one command per
//! instance. The host writes the command into memory it asks for with
//! [`toolhost_shell_alloc`], calls [`toolhost_shell_parse`] and reads the
//! answer ([`Parsed::to_guest`]) from where the returned pointer and length
//! say. The instance ends after one command, so its allocator only ever
//! hands out memory ([`Bump`]).

use crate::Parsed;
use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

/// A bump allocator: memory is taken in order from the end of the module's
/// data up, the initial memory first (the standard allocator would grow the
/// memory at its first allocation, and every growth of a pooled memory is
/// a system call for the host), growing only past it. Freeing the latest
/// allocation, or growing it, happens in place; other frees are dropped:
/// an instance parses one command and ends.
struct Bump {
    next: Cell<usize>,
}

// SAFETY: wasm32-unknown-unknown without threads: one thread only.
unsafe impl Sync for Bump {}

#[global_allocator]
static ALLOC: Bump = Bump { next: Cell::new(0) };

unsafe extern "C" {
    static __heap_base: u8;
}

const PAGE: usize = 64 * 1024;

impl Bump {
    fn start(&self) -> usize {
        match self.next.get() {
            // SAFETY: the linker defines `__heap_base`; only its address is used.
            0 => unsafe { std::ptr::addr_of!(__heap_base) as usize },
            next => next,
        }
    }
}

unsafe impl GlobalAlloc for Bump {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(at) = self.start().checked_next_multiple_of(layout.align()) else { return std::ptr::null_mut() };
        let Some(end) = at.checked_add(layout.size()) else { return std::ptr::null_mut() };
        let size = core::arch::wasm32::memory_size(0) * PAGE;
        if end > size {
            let pages = (end - size).div_ceil(PAGE);
            if core::arch::wasm32::memory_grow(0, pages) == usize::MAX {
                return std::ptr::null_mut();
            }
        }
        self.next.set(end);
        at as *mut u8
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ptr as usize + layout.size() == self.next.get() {
            self.next.set(ptr as usize);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if ptr as usize + layout.size() == self.next.get() {
            // The latest allocation: grow or shrink it where it is.
            let end = ptr as usize + new_size;
            let size = core::arch::wasm32::memory_size(0) * PAGE;
            if end > size && core::arch::wasm32::memory_grow(0, (end - size).div_ceil(PAGE)) == usize::MAX {
                return std::ptr::null_mut();
            }
            self.next.set(end);
            return ptr;
        }
        // SAFETY: as `GlobalAlloc::realloc` requires of its caller.
        let new = unsafe { self.alloc(Layout::from_size_align_unchecked(new_size, layout.align())) };
        if !new.is_null() {
            // SAFETY: both are valid for the smaller size, and distinct.
            unsafe { std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size)) };
        }
        new
    }
}

/// `len` bytes of memory for the host to write the command into.
#[unsafe(no_mangle)]
pub extern "C" fn toolhost_shell_alloc(len: u32) -> *mut u8 {
    Vec::<u8>::with_capacity(len as usize).leak().as_mut_ptr()
}

/// Parses the `len` bytes at `ptr` (UTF-8, written by the host) and returns
/// where the answer is: its address in the high 32 bits, its length in the
/// low 32.
///
/// # Safety
/// `ptr` is what [`toolhost_shell_alloc`] returned for at least `len` bytes,
/// all of them written.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn toolhost_shell_parse(ptr: *const u8, len: u32) -> u64 {
    // SAFETY: the caller's contract above.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len as usize) };
    let parsed = match std::str::from_utf8(bytes) {
        Ok(source) => crate::parse_unguarded(source),
        Err(_) => Parsed { parse_error: true, ..Parsed::default() },
    };
    let answer = parsed.to_guest().leak();
    ((answer.as_ptr() as u64) << 32) | answer.len() as u64
}
