/* SPDX-License-Identifier: BSD-3-Clause */
/* A do-nothing swift_demangle, preloaded with the ASan or TSan runtime
 * into the nbdkit that loads the raid plugin (tests/sanitize/nbdkit), in
 * one shim with bss-hugepage.c.
 *
 * Why.  /usr/bin/nbdkit is not instrumented, so the sanitizer runtime is
 * preloaded into it, and a preloaded library is initialised after the
 * libraries the program itself needs.  One of those, libp11-kit (through
 * GnuTLS), calls newlocale() in its constructor, which takes glibc's
 * locale lock for writing and calls malloc(); the sanitizer's malloc then
 * initialises the runtime, whose symbolizer looks up swift_demangle with
 * dlsym() and, not finding it, clears the error with dlerror(), which
 * translates its message and so takes the same locale lock for reading.
 * The lock ends up corrupted, and the first later user of it hangs: every
 * nbdkit that exits on an error (a refused parameter, a missing member:
 * what tests/test-bad-input.sh does forty times) hung at exit in
 * p11-kit's destructor.  With swift_demangle defined, dlsym() succeeds,
 * dlerror() has nothing to translate, and the lock is never taken twice.
 *
 * The symbolizer calls it for every name it demangles; NULL means "not a
 * Swift name", and it goes on to the C++ demangler.  Built without any
 * sanitizer flags (tests/Makefile.am).
 */

#include <stddef.h>
#include <stdint.h>

char *swift_demangle (const char *mangled, size_t length, char *out,
                      size_t *out_length, uint32_t flags);

char *
swift_demangle (const char *mangled, size_t length, char *out,
                size_t *out_length, uint32_t flags)
{
  return NULL;
}
