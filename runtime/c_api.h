#pragma once
// The C interface the Python package loads with ctypes. A C ABI keeps the
// native library independent of the Python version and free of any binding
// framework; every function returns 0 on success or writes a message that
// spreplay_last_error returns on the same thread (each thread has its own,
// valid until that thread's next call).

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPREPLAY_API __attribute__((visibility("default")))

SPREPLAY_API const char* spreplay_last_error(void);

// Configures the Slang hooks. `toolchain` names what generates code besides
// Slang itself (the slangpy version); `slang_library` is the path of the
// libslang-compiler slangpy loads.
SPREPLAY_API int spreplay_configure(const char* slang_library, const char* toolchain, int verbose);

// The vtable slots the hooks patch, one "INTERFACE METHOD SLOT" line each, as
// the slang.h this library was built against lays them out. Valid for the
// life of the process.
SPREPLAY_API const char* spreplay_patched_slots(void);

// The shim calls this for every Slang global session; pass its address to
// spreplay_shim_configure.
SPREPLAY_API void spreplay_on_global_session(void* global_session, void* context);

// Serves `size` bytes (a cubin, fatbin or PTX image) for the kernel whose key is
// the 64-character hex digest `key_hex`. The bytes are copied.
SPREPLAY_API int spreplay_add_kernel(const char* key_hex, const void* data, size_t size);

// Called after every compile that went through Slang, with the kernel key (empty
// when the program could not be keyed), the code and the compile time.
typedef void (*spreplay_compile_callback)(const char* key_hex, const char* entry_point,
                                          const void* code, size_t size, double seconds);
SPREPLAY_API void spreplay_on_compile(spreplay_compile_callback callback);

// Serves kernels, and Slang modules as IR, from the archive at `path`. With
// `strict`, a kernel that is not in the archive fails instead of compiling;
// with `strict_modules`, so does a module that would load from source.
SPREPLAY_API int spreplay_serve_archive(const char* path, int strict, int strict_modules);

// Fails every kernel request with `reason`: strict mode with an archive that
// cannot be used at all.
SPREPLAY_API void spreplay_refuse_all(const char* reason);

// Names a call site in messages: slangpy's hash (the wrapper module's name),
// the slangpy module, the function and the kind ("call", "bwds", ...).
SPREPLAY_API void spreplay_name_call_site(const char* wrapper_module, const char* module,
                                          const char* function, const char* kind);

// Writes a JSON summary of this process's kernel requests into `buffer` and
// returns its length (excluding the NUL); call again with a larger buffer if
// that is not less than `size`.
SPREPLAY_API size_t spreplay_summary_json(char* buffer, size_t size);

// Starts recording every compiled kernel, with the sessions and sources it
// depends on, to the trace at `path` (appending if it exists). `process_json`
// describes this process (schema/trace.capnp Process, as JSON).
SPREPLAY_API int spreplay_record_open(const char* path, const char* process_json);

// Appends a `callSite` or `device` record described as JSON.
SPREPLAY_API int spreplay_record_json(const char* record_kind, const char* json);

#ifdef __cplusplus
}
#endif
