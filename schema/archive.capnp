# The index of a spreplay kernel archive: the one Cap'n Proto message at the end of an archive
# file, describing every kernel the file holds and where its binaries lie.
#
# The archive's fixed binary header (see archive/archive_format.h) locates this message and
# guards it with a CRC; the kernel binaries themselves live outside it, between the header and
# the index, so the runtime can hand them to the driver straight from the memory-mapped file.
#
# Evolution rules, because archives outlive the spreplay that wrote them:
#   - Never renumber, retype or reuse a field ordinal or an enumerant; only append new ones.
#   - A new field must be optional in meaning: its zero/empty default must read as "absent",
#     since older writers never set it and older readers never look at it.
#   - Anything an older reader cannot safely ignore needs a new archive format version in the
#     file header, which older readers refuse with a clear message, rather than a new field.

@0xe1b1866c8a0a9261;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("spreplay::schema");

struct ArchiveIndex {
  formatVersion @0 :UInt32;
  # The archive format version, equal to the one in the file header. Repeated here so the index
  # describes itself when it is extracted or dumped on its own.

  toolchain @1 :Text;
  # The compilers every kernel in this archive was built with, e.g.
  # "slangpy 0.43.1 slang 2026.12". A runtime built against a different toolchain must not serve
  # these kernels, because the wrappers slangpy generates differ between versions.

  spreplayVersion @2 :Text;
  # The spreplay release that wrote the archive, e.g. "0.1.0". Provenance for bug reports.

  creation @3 :CreationInfo;
  # Where and when the archive was made. Provenance only: nothing here takes part in any key,
  # so two builds of the same inputs serve identical kernels.

  entries @4 :List(KernelEntry);
  # Every kernel, SORTED BY `key` (bytewise, ascending, no duplicates). Readers rely on the order
  # to binary-search the mapped index without building a table at open time.

  unbuilt @5 :List(UnbuiltKernel);
  # Kernels the traces recorded but `spreplay compile` could not build, with why. The runtime
  # reads it only on a miss, to say why that kernel is not served.

  sessions @6 :List(SessionSettings);
  # The keyed settings of every session the kernels were compiled in, one per `sessionDigest`,
  # so that a miss caused by another setting can name it.

  modules @7 :List(ModuleEntry);
  # Slang modules serialized as IR (IModule::serialize), each proven at compile time to stand in
  # for its source, as its `verifiedBy` says. The runtime loads them in place of Slang's front
  # end. In no particular order: the runtime indexes them at open time.

  unservedModules @8 :List(UnservedModule);
  # Recorded modules compile could not archive as IR, with why, for the runtime's messages.
}

struct ModuleEntry {
  key @0 :Data;
  # 32-byte content key: toolchain, session content digest and the module's content digest
  # (the `Component` digest kernel keys are built from). Imports name modules by it.

  sessionDigest @1 :Data;
  # The content digest of the session configuration the module was loaded in.

  name @2 :Text;
  # The module's name in Slang, which the IR must be loaded under: imports and mangled names
  # refer to it.

  requestedName @3 :Text;
  # What ISession::loadModule was asked for; empty for a module only ever imported, or loaded
  # from a string.

  sourceLookup @4 :Data;
  # A module loaded from a string: SHA-256 over toolchain, session digest, name, path and the
  # text exactly as Slang received it, which the runtime computes before the load. Empty for
  # a file module.

  path @5 :Text;
  # A module loaded from a string: the path Slang gave it (the SHA-1 of its text, when the
  # caller passed none). Empty for a file module (see `filePath`).

  files @6 :List(ModuleFile);
  # Every file the module depends on (its own first), which must hold the same bytes locally.

  imports @7 :List(Data);
  # Keys of the modules this one imports, directly or not, in the order they must be loaded.

  blob @8 :Blob;
  # The serialized module (kind `slangModule`).

  filePath @9 :ModuleFile;
  # A file module: the path Slang found it under, which may name a file of `files` through a
  # symbolic link (its digest is unset).

  contentDigest @10 :Data;
  # The module's content digest (part of `key`), which the runtime's description of the loaded
  # module must reproduce.

  requestedFile @11 :ModuleFile;
  # A module requested by absolute path: that path below its root, by which a request from
  # another location finds it (its digest is unset).

  verifiedBy @12 :ModuleVerification;
  # How compile proved the IR stands in for the source. Older writers archived modules by
  # `kernels` alone, the default. The runtime serves both alike: at run time every file's
  # digest is checked, whichever way the module was verified.
}

enum ModuleVerification {
  kernels @0;
  # Every recorded kernel built with the module was rebuilt over its IR, in a fresh session,
  # with byte-identical PTX and the layout the source gave.
  layout @1;
  # No recorded kernel was built with it (an app that loaded it without dispatching, e.g. sgl's
  # load_module or load_program without a pipeline): loaded from IR in a fresh session, it has
  # the layout the source gave, and each entry point it defines, linked alone with it, gets
  # byte-identical code from IR and from source. A module that a recorded kernel's program
  # names is never verified so, even if that kernel failed to compile.
}

struct ModuleFile {
  digest @0 :Data;
  # 32-byte SHA-256 of the file's bytes.

  root @1 :PathRoot;
  rootIndex @2 :UInt32;
  # Which search path, for `root` = searchPath, counted from the last one Slang searches (slangpy
  # puts its module cache's directories ahead of the others).

  relativePath @3 :Text;
  # The path below the root; the absolute recorded path for `root` = absolute.

  recordedPath @4 :Text;
  # Where the file was when it was recorded. A module served from IR is described as it was
  # recorded (its name and any path in it included), so that kernel keys and the text slangpy
  # generates from it stay what they were.
}

enum PathRoot {
  absolute @0;
  # Not below any root: looked up where it was recorded.
  slangpy @1;
  # Below the directory of the slangpy installation.
  searchPath @2;
  # Below one of the session's search paths (include paths), by index.
  workingDirectory @3;
  # Below the working directory of the recording process.
  requestDirectory @4;
  # Below no other root (or the working directory only), but below the directory of a module
  # the app asked for by absolute path (sgl's load_program("/abs/x.slang")), by index among the
  # session's such directories: found below the directory such a request names now. Readers
  # that predate it find no file at `relativePath` and load the module from source.
}

struct UnservedModule {
  sessionDigest @0 :Data;
  name @1 :Text;
  reason @2 :Text;
}

struct SessionSettings {
  digest @0 :Data;
  # A KernelEntry's `sessionDigest`.

  settings @1 :List(Text);
  # One readable line per setting, sorted, e.g. "DebugInformation = 2" (interpose/session_settings.h).
}

struct UnbuiltKernel {
  key @0 :Data;
  # The kernel's content key, as in KernelEntry.

  callSite @1 :CallSite;

  reason @2 :Text;
  # What compile said, e.g. a Slang error or "PTX differs from the recorded PTX at line ...".
}

struct CreationInfo {
  createdUnixSeconds @0 :Int64;
  # Seconds since the Unix epoch when the archive was written; 0 when the writer left it out,
  # e.g. for byte-reproducible builds.

  host @1 :Text;
  # The machine that compiled the kernels; empty if not recorded.

  command @2 :Text;
  # The command line that produced the archive, e.g. "spreplay compile trace.sprt -o app.spra".
}

struct KernelEntry {
  key @0 :Data;
  # The kernel's content key: a 32-byte SHA-256 over everything that determines the compiled
  # code (session options, program and dependency contents). The runtime computes the same key
  # from a live slangpy call and looks it up here.

  callSite @1 :CallSite;
  # Which slangpy call produced the kernel. Informational (inspect, diagnostics); never part of
  # the lookup, since the key already covers everything that matters.

  manifest @2 :List(Dependency);
  # The source files the kernel was compiled from, as content digests. Lets tools explain why a
  # key changed and check whether an archive is stale against a source tree.

  sessionDigest @3 :Data;
  # 32-byte digest of the Slang session configuration (targets, options, search paths).

  programDigest @4 :Data;
  # 32-byte digest of the linked program (modules, entry point, specialisation).

  sassArches @5 :List(UInt32);
  # SM architectures the fatbin carries machine code (SASS) for, as compute capability x 10,
  # ascending, e.g. [75, 80, 86, 89, 90, 100, 120]. A GPU outside this list falls back to the PTX.

  ptxArch @6 :UInt32;
  # The virtual architecture of the embedded PTX (e.g. 75 for compute_75); 0 if there is none.
  # The driver can JIT it for any GPU at least this new.

  blobs @7 :List(Blob);
  # The kernel's binaries. Exactly one FATBIN is what the runtime serves (an OptiX entry has one
  # PTX instead, see `optix`); PTX and CUBIN entries are otherwise optional extras for tools.
  # Readers skip blob kinds they do not know.

  optix @8 :Bool;
  # A ray-tracing program: OptiX compiles its PTX when the pipeline is created, so the runtime
  # serves its one PTX blob (exactly as Slang returned it, trailing NUL included) and the entry
  # has no FATBIN and no SASS.
}

struct CallSite {
  moduleName @0 :Text;
  # The slangpy module the user loaded, as they named it, e.g. "mlp".

  functionName @1 :Text;
  # The Slang function called through that module, e.g. "eval_layer".

  callKind @2 :Text;
  # How it was called: "call", "bwds", "dispatch", ... Text rather than an enum so new slangpy
  # call kinds need no schema change.

  wrapperModuleName @3 :Text;
  # The name slangpy gave the generated wrapper module, which is slangpy's own hash of the call
  # signature. Ties an archive entry to slangpy's kernel cache and logs.

  entryPointName @4 :Text;
  # The compute entry point inside the wrapper module, e.g. "compute_main".
}

struct Dependency {
  digest @0 :Data;
  # 32-byte SHA-256 of the file's contents: the part that matters for the key.

  path @1 :Text;
  # Where the file was when the kernel was recorded. Provenance only: the same content at
  # another path is the same dependency.
}

enum BlobKind {
  unspecified @0;
  # Never written. Zero is the default, so a reader seeing it knows the kind was not set
  # (or was set by a writer with a bug) rather than mistaking it for a fatbin.

  fatbin @1;
  # A CUDA fat binary: SASS for every arch in `sassArches` plus the PTX. What the runtime hands to
  # cuModuleLoadData.

  ptx @2;
  # PTX text, NUL-terminated, for `ptxArch`.

  cubin @3;
  # An ELF cubin holding SASS for one arch.

  slangModule @4;
  # A Slang module serialized by IModule::serialize, for ISession::loadModuleFromIRBlob.
}

struct Blob {
  kind @0 :BlobKind;
  # What the bytes are. A reader that does not know the kind ignores the blob.

  arch @1 :UInt32;
  # The SM architecture the blob targets (compute capability x 10); 0 for a fatbin, which
  # targets several.

  offset @2 :UInt64;
  # Position of the first byte in the archive file, a multiple of 256 so the mapped bytes meet
  # any alignment the driver wants without a copy.

  size @3 :UInt64;
  # Length in bytes. The bytes lie before the index.

  crc32c @4 :UInt32;
  # CRC-32C of the bytes, checked by the runtime the first time it serves the blob: cheap enough
  # to run at load time, and enough to catch disk or copy corruption.

  sha256 @5 :Data;
  # 32-byte SHA-256 of the bytes: the blob's identity (the writer stores identical blobs once),
  # and what offline verification compares against.
}
