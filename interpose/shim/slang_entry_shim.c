/*
 * The only symbol spreplay interposes in the dynamic linker's global scope.
 *
 * Python loads this tiny library with RTLD_GLOBAL before slangpy is imported, so
 * libsgl's reference to slang_createGlobalSession2 binds here instead of to
 * libslang-compiler. Everything else in spreplay stays RTLD_LOCAL, which keeps
 * our Cap'n Proto, Abseil and fmt out of the process's global namespace. The
 * shim has no dependencies besides libc and libdl for the same reason.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef int (*CreateGlobalSession2Fn)(const void* desc, void** out_global_session);
typedef void (*GlobalSessionCallback)(void* global_session, void* context);

#define SPREPLAY_EXPORT __attribute__((visibility("default")))

/* Hook state: process-wide by nature, written once before slangpy loads. */
static CreateGlobalSession2Fn g_real_create;
static GlobalSessionCallback g_on_global_session;
static void* g_on_global_session_context;
static char g_error[512];

SPREPLAY_EXPORT int slang_createGlobalSession2(const void* desc, void** out_global_session);

SPREPLAY_EXPORT const char* spreplay_shim_error(void) { return g_error; }

/* Binds the shim to the exact libslang-compiler that slangpy ships and names
 * the callback that receives every global session created through it. */
SPREPLAY_EXPORT int spreplay_shim_configure(const char* slang_library_path,
                                            GlobalSessionCallback callback, void* context) {
  void* handle = dlopen(slang_library_path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    snprintf(g_error, sizeof g_error, "cannot load %s: %s", slang_library_path, dlerror());
    return -1;
  }
  CreateGlobalSession2Fn real = (CreateGlobalSession2Fn)dlsym(handle, "slang_createGlobalSession2");
  if (!real) {
    snprintf(g_error, sizeof g_error, "%s has no slang_createGlobalSession2", slang_library_path);
    return -1;
  }
  g_real_create = real;
  g_on_global_session = callback;
  g_on_global_session_context = context;
  return 0;
}

/* Finds slang_createGlobalSession2 in whichever loaded library defines it,
 * other than this one. Used only if the shim was loaded but never configured:
 * the app must then behave exactly as if spreplay were absent. */
static int find_real_create(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  (void)data;
  if (!info->dlpi_name || !info->dlpi_name[0]) return 0;
  void* handle = dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD);
  if (!handle) return 0;
  void* symbol = dlsym(handle, "slang_createGlobalSession2");
  dlclose(handle);
  if (!symbol || symbol == (void*)&slang_createGlobalSession2) return 0;
  g_real_create = (CreateGlobalSession2Fn)symbol;
  return 1;
}

SPREPLAY_EXPORT int slang_createGlobalSession2(const void* desc, void** out_global_session) {
  if (!g_real_create) dl_iterate_phdr(find_real_create, NULL);
  if (!g_real_create) return (int)0x80004005; /* SLANG_FAIL: no Slang in the process */
  int result = g_real_create(desc, out_global_session);
  if (result >= 0 && out_global_session && *out_global_session && g_on_global_session)
    g_on_global_session(*out_global_session, g_on_global_session_context);
  return result;
}
