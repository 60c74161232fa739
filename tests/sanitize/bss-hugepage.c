/* SPDX-License-Identifier: BSD-3-Clause */
/* Huge pages for nbdkit's BSS, so that a leak check at exit costs little.
 * Preloaded with the ASan or TSan runtime into the nbdkit that loads the
 * raid plugin (tests/sanitize/nbdkit), in the same shim as
 * swift-demangle.c.
 *
 * Why.  nbdkit 1.32 has a 192 MiB BSS (`size /usr/bin/nbdkit`), almost
 * all of it never touched.  LeakSanitizer scans every global for pointers
 * when nbdkit exits, and reading an untouched page maps the zero page one
 * 4 KiB fault at a time: 49152 faults, 1.6 s of a 2-core machine for
 * every nbdkit under make check-asan (nbdkit -U - raid level=6 ... --run
 * true: 1.62 s; 0.44 to 0.68 s with this shim), two thirds of
 * test-md-refused.sh's time there.  Marked MADV_HUGEPAGE, the same
 * read maps the huge zero page, 2 MiB per fault, when the kernel's
 * transparent huge pages are "madvise" or "always" (Debian's default is
 * madvise); where they are "never" this changes nothing.  Only the part
 * of the segment past its file contents (the BSS) is marked, in whole
 * pages; nbdkit's behaviour does not change, only the size of the pages
 * behind that memory.
 *
 * Built without any sanitizer flags (tests/Makefile.am).
 */

#define _GNU_SOURCE
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

/* Smaller BSS segments are not worth a call. */
#define MIN_BSS (4u << 20)

static int
mark_program_bss (struct dl_phdr_info *info, size_t size, void *data)
{
  (void) size;
  (void) data;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo, hi;

    if (ph->p_type != PT_LOAD || ph->p_memsz < ph->p_filesz + MIN_BSS)
      continue;
    lo = info->dlpi_addr + ph->p_vaddr + ph->p_filesz;
    hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    lo = (lo + 4095) & ~(uintptr_t) 4095;
    hi &= ~(uintptr_t) 4095;
    madvise ((void *) lo, hi - lo, MADV_HUGEPAGE);
  }
  return 1;                     /* the first entry is the program itself */
}

__attribute__ ((constructor)) static void
bss_hugepage_init (void)
{
  dl_iterate_phdr (mark_program_bss, NULL);
}
