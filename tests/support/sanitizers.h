#pragma once
// FABEMU_ASAN: 1 in a build with AddressSanitizer, by gcc (__SANITIZE_ADDRESS__) or by clang
// (__has_feature(address_sanitizer)), else 0. Tests that cannot run under ASan (an address-space limit, a
// replaced operator new, no descriptor left for the sanitizers' runtime) skip on it and say why.
#if defined(__SANITIZE_ADDRESS__)
#define FABEMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FABEMU_ASAN 1
#endif
#endif
#ifndef FABEMU_ASAN
#define FABEMU_ASAN 0
#endif
