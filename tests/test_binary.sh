#!/usr/bin/env bash
# The zinc binary runs where it is copied: its only shared libraries are the
# ones every Debian/Ubuntu base system has (libc and friends, and what apt
# itself depends on: gnutls; zlib, Priority: required) plus libcurl/libcrypto; PCRE2, libmicrohttpd and
# jansson are linked in. The Vulkan loader is dlopen'ed, never linked.
# $1: the build directory. Last line "N passed, N failed, N skipped".
build=${1:-build}
. "$(dirname "$0")/lib.sh"
z=$build/zinc
allowed=" linux-vdso libc libm libdl libpthread /lib64/ld-linux-x86-64 ld-linux-x86-64 libgnutls libz libcurl libcrypto "
# Only the direct dependencies matter (those are the binary's choice):
direct=$(readelf -d "$z" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | sed 's/\.so.*//' | sort -u | tr '\n' ' ')
# The ASan+UBSan build links the sanitizers' runtimes too.
case " $direct " in *" libasan "*) allowed="$allowed libasan libubsan libstdc++ libgcc_s ";; esac
bad=""
for l in $direct; do case "$allowed" in *" $l "*) ;; *) bad="$bad $l";; esac; done
expect "direct shared libraries are only base-system ones (got: $direct)" "" "$bad"
for l in pcre2-8 microhttpd jansson vulkan; do
  case " $direct " in *"lib$l "*) bad "zinc links lib$l dynamically";; *) ok;; esac
done
finish binary
