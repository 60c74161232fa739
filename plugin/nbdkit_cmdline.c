/* SPDX-License-Identifier: BSD-3-Clause */
/* Did nbdkit get -r?  Read from the server's own command line.
 *
 * nbdkit (1.32, and 1.42 still) tells a plugin that it serves read-only
 * only per connection (.open's readonly argument), but the plugin must
 * know before any connection: at after_fork it resyncs an unclean md
 * array, resumes a half-done rebuild and starts clearing the bitmap, and
 * at shutdown it marks the array clean, all of which write the members.
 * Nothing in nbdkit's ABI says -r (`nm -D nbdkit` exports only nbdkit_*
 * calls; its read_only variable is not among them), so the plugin parses
 * nbdkit's arguments as nbdkit's main() does: glibc getopt_long over
 * nbdkit's own tables (the options nbdkit documents in nbdkit(1) and
 * lists with --short-options and --long-options), transcribed below.
 *
 * Which nbdkit.  The tables are those of nbdkit 1.32 (Debian 12) and
 * 1.42 (what scripts/install-deps.sh builds) together.  1.42 added long
 * options only (--keepalive, --no-mc, --no-structured-replies,
 * --print-uri, --timeout and their aliases); without them a 1.42 command
 * line such as "-r --timeout=30" was one getopt would refuse, so the
 * plugin served it as writable.  Merging is exact for both: an option
 * only one of them has makes the other's getopt refuse the command line,
 * and no prefix that either accepts reads otherwise in the merged table,
 * but --sh and --sho (1.32's --short-options, which prints and exits
 * before any plugin is loaded; ambiguous in 1.42).  The test of this
 * file has cases of both.
 *
 * Which arguments.  Not /proc/self/cmdline, which this file read first:
 * that is what execve got, and when nbdkit is started by the dynamic
 * loader ("ld.so --preload LIB /usr/bin/nbdkit -r ...", as make
 * check-asan does) it begins with the loader's own options, which are
 * not nbdkit's and would need the loader's tables too.  The arguments
 * main() got are main()'s argv, after the loader took its own, and glibc
 * hands exactly that array to every ELF constructor of a shared object,
 * one that dlopen loads included (dlopen passes __libc_argc and
 * __libc_argv on to the object's init functions).  nbdkit dlopens the
 * plugin after its getopt loop, so the array is then permuted (options
 * first, "--" after them, non-options last), which changes nothing for
 * the parse below.  Elsewhere than glibc the constructor gets nothing and
 * the answer is "cannot tell" (readonly=true says it).
 *
 * getopt_long's rules, as they apply to those tables: arguments are
 * permuted, so an option may come after the plugin name and its
 * parameters (unless POSIXLY_CORRECT is set: then the first non-option
 * ends the options); "--" ends them; "-" alone is no option; short
 * options cluster ("-fr"), and one that takes an argument takes the rest
 * of its word or else the next word ("-U -" is -U with argument "-", so
 * the "-" is not read as anything else); a long option may be shortened
 * to any prefix that names one option, or several that all mean the same
 * ("--read" is --read-only or --readonly, both -r), and takes its argument
 * after "=" or as the next word.  An argument is never an option: the -r
 * in --run 'nbdsh -r ...' is not nbdkit's.
 *
 * A command line that getopt would refuse cannot have started this
 * nbdkit; if one is met anyway the answer is "not read-only", and
 * readonly=true is there to say it explicitly.
 *
 * If nbdkit's options change, the tables must follow; the test
 * test-md-readonly.sh runs the spellings that matter, with nbdkit
 * started both directly and by the loader.
 */

#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "nbdkit_cmdline.h"

/* nbdkit's short_options (the same in 1.32 and 1.42), and its
 * long_options, 1.32's and 1.42's: name, whether it takes an argument,
 * and what it means (the short letter, or a private code for long-only
 * options: only 'r' matters here, the rest tell two prefixes apart).
 */
static const char short_options[] = "46D:e:fg:i:nop:P:rst:u:U:vV";

struct long_option {
  const char *name;
  bool has_arg;
  int val;
};

enum {
  O_HELP = 256, O_DUMP_CONFIG, O_DUMP_PLUGIN, O_EXIT_WITH_PARENT, O_FILTER,
  O_LOG, O_LONG_OPTIONS, O_MASK_HANDSHAKE, O_NO_SR, O_RUN, O_SELINUX_LABEL,
  O_SHORT_OPTIONS, O_SWAP, O_TLS, O_TLS_CERTIFICATES, O_TLS_PSK,
  O_TLS_VERIFY_PEER, O_VSOCK,
  /* 1.42's */
  O_KEEPALIVE, O_NO_MC, O_PRINT_URI, O_TIMEOUT,
};

static const struct long_option long_options[] = {
  { "ipv4-only", false, '4' },
  { "ipv6-only", false, '6' },
  { "debug", true, 'D' },
  { "dump-config", false, O_DUMP_CONFIG },
  { "dump-plugin", false, O_DUMP_PLUGIN },
  { "exit-with-parent", false, O_EXIT_WITH_PARENT },
  { "export", true, 'e' },
  { "export-name", true, 'e' },
  { "exportname", true, 'e' },
  { "filter", true, O_FILTER },
  { "foreground", false, 'f' },
  { "no-fork", false, 'f' },
  { "group", true, 'g' },
  { "help", false, O_HELP },
  { "ip-addr", true, 'i' },
  { "ipaddr", true, 'i' },
  { "keepalive", false, O_KEEPALIVE },          /* 1.42 */
  { "keep-alive", false, O_KEEPALIVE },         /* 1.42 */
  { "log", true, O_LOG },
  { "long-options", false, O_LONG_OPTIONS },
  { "mask-handshake", true, O_MASK_HANDSHAKE },
  { "new-style", false, 'n' },
  { "newstyle", false, 'n' },
  { "no-mc", false, O_NO_MC },                  /* 1.42 */
  { "no-meta-contexts", false, O_NO_MC },       /* 1.42 */
  { "no-sr", false, O_NO_SR },
  { "no-structured-replies", false, O_NO_SR },  /* 1.42 */
  { "old-style", false, 'o' },
  { "oldstyle", false, 'o' },
  { "pid-file", true, 'P' },
  { "pidfile", true, 'P' },
  { "print-uri", false, O_PRINT_URI },          /* 1.42 */
  { "print-url", false, O_PRINT_URI },          /* 1.42 */
  { "port", true, 'p' },
  { "read-only", false, 'r' },
  { "readonly", false, 'r' },
  { "run", true, O_RUN },
  { "selinux-label", true, O_SELINUX_LABEL },
  { "short-options", false, O_SHORT_OPTIONS },
  { "show-uri", false, O_PRINT_URI },           /* 1.42 */
  { "show-url", false, O_PRINT_URI },           /* 1.42 */
  { "single", false, 's' },
  { "stdin", false, 's' },
  { "swap", false, O_SWAP },
  { "threads", true, 't' },
  { "timeout", true, O_TIMEOUT },               /* 1.42 */
  { "time-out", true, O_TIMEOUT },              /* 1.42 */
  { "tls", true, O_TLS },
  { "tls-certificates", true, O_TLS_CERTIFICATES },
  { "tls-psk", true, O_TLS_PSK },
  { "tls-verify-peer", false, O_TLS_VERIFY_PEER },
  { "unix", true, 'U' },
  { "user", true, 'u' },
  { "verbose", false, 'v' },
  { "version", false, 'V' },
  { "vsock", false, O_VSOCK },
};

/* The option "--WORD" names (WORD up to any '='): an exact match, else
 * the only prefix match, or several that agree (as glibc decides
 * ambiguity).  NULL if none or ambiguous.
 */
static const struct long_option *
find_long (const char *word)
{
  size_t len = strcspn (word, "=");
  const struct long_option *found = NULL;

  for (size_t i = 0; i < sizeof long_options / sizeof long_options[0]; i++) {
    const struct long_option *o = &long_options[i];

    if (strncmp (o->name, word, len) != 0)
      continue;
    if (strlen (o->name) == len)
      return o;                 /* exact */
    if (found && (found->has_arg != o->has_arg || found->val != o->val))
      return NULL;              /* ambiguous */
    found = o;
  }
  return found;
}

int
nbdkit_cmdline_read_only (int argc, char *const *argv, bool posixly_correct)
{
  bool ro = false;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];

    if (strcmp (a, "--") == 0)
      break;
    if (a[0] != '-' || a[1] == '\0') {  /* not an option: permuted past */
      if (posixly_correct)
        break;
      continue;
    }
    if (a[1] == '-') {
      const struct long_option *o = find_long (a + 2);

      if (o == NULL || (!o->has_arg && strchr (a, '=')))
        return -1;              /* getopt refuses it */
      ro |= o->val == 'r';
      if (o->has_arg && !strchr (a, '=') && ++i >= argc)
        return -1;
      continue;
    }
    for (const char *p = a + 1; *p; p++) {
      const char *s = *p == ':' ? NULL : strchr (short_options, *p);

      if (s == NULL)
        return -1;
      ro |= *p == 'r';
      if (s[1] == ':') {        /* its argument: the rest, or the next word */
        if (p[1] == '\0' && ++i >= argc)
          return -1;
        break;
      }
    }
  }
  return ro;
}

/* main()'s argc and argv, as glibc gives them to constructors. */
static int main_argc;
static char *const *main_argv;

#ifdef __GLIBC__
static void __attribute__ ((constructor))
nbdkit_cmdline_capture (int argc, char **argv, char **envp)
{
  (void) envp;
  main_argc = argc;
  main_argv = argv;
}
#endif

int
nbdkit_cmdline_read_only_self (void)
{
  if (main_argv == NULL || main_argc < 1)
    return -1;
  return nbdkit_cmdline_read_only (main_argc, main_argv,
                                   getenv ("POSIXLY_CORRECT") != NULL);
}
