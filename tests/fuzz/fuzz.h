/*
 * fuzz.h — the libFuzzer entry point every harness in tests/fuzz defines.
 * Built two ways (tests/fuzz/meson.build): with clang's -fsanitize=fuzzer as
 * a fuzzer (-Dfuzz=enabled), and always with replay.c's main as a program
 * that runs the committed corpus through the same entry point, so the
 * normal build replays every input the fuzzers were seeded with or found.
 */
#ifndef REMAT_TESTS_FUZZ_H
#define REMAT_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The bytes as a file the readers can open by path: a memfd seen through
 * /proc/self/fd (no disk, no clean-up), rewritten on each call. NULL when
 * it cannot be made. */
const char *fuzz_as_file(const uint8_t *data, size_t size);

#endif
