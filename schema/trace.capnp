# The trace: everything needed to rebuild every wrapper kernel a slangpy app
# compiled, on another machine, with no GPU and none of the app's files.
#
# A trace file is an append-only log of frames (recorder/trace_log.h), each
# holding one TraceRecord. Several processes may append to one file; a process
# killed mid-write loses at most the record it was writing. Records refer to
# each other by content digest (SHA-256), never by position, so logs from many
# processes and machines merge by concatenation plus de-duplication.
#
# Evolution: fields are only ever added, with new ordinals; none is removed or
# renumbered. Readers ignore fields and union members they do not know, and a
# record whose union member is unknown to a reader is skipped and counted.
# `Process.formatVersion` changes only if old readers would misread new data.

@0xddcfc7e709f44509;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("spreplay::trace_schema");

struct TraceRecord {
  union {
    process @0 :Process;
    device @1 :Device;
    session @2 :Session;
    sourceFile @3 :SourceFile;
    component @4 :Component;
    kernel @5 :Kernel;
    callSite @6 :CallSite;
    moduleVariant @7 :Component;
    # A module loaded from a string under another name than the `component` record of its
    # digest names: slangpy derives a wrapper's name from more than the text the digest keys
    # (a call's type conformances), and sgl writes that name into the text. Kernel records'
    # `moduleNames` say which name each kernel's program had. Written once per (digest, name).
    moduleLoad @8 :ModuleLoad;
  }
}

# A module the app asked a session for (ISession::loadModule, loadModuleFromSourceString),
# whether or not it later built a kernel from it: the compile archives the modules no kernel
# used by what they are on their own (schema/archive.capnp ModuleEntry.verifiedBy). Modules
# Slang loaded for an import are not asked for. Written once per (session location, digest,
# name), after the module's `component` (or `moduleVariant`) record.
struct ModuleLoad {
  sessionDigest @0 :Data;          # Session.digest
  sessionLocationDigest @1 :Data;  # the Session to replay (Session.locationDigest)
  moduleDigest @2 :Data;           # the module's Component digest
  name @3 :Text;                   # its name in Slang (a string module's digest covers no name)
  toolchain @4 :Text;              # as in Kernel.toolchain
  loadSeconds @5 :Float64;
  # What the app's load call took: Slang's front end for the module and every module it
  # imported that the session did not hold yet (slangpy's library, on a session's first load).
  # With `Kernel.compileSeconds`, the JIT the app spent; 0 in traces older than this field.
}

# Written first by every recording process.
struct Process {
  formatVersion @0 :UInt32;      # trace format; readers refuse newer majors
  spreplayVersion @1 :Text;
  slangpyVersion @2 :Text;
  slangBuildTag @3 :Text;        # IGlobalSession::getBuildTagString
  toolchain @4 :Text;            # exactly the string kernel keys were made with
  pythonVersion @5 :Text;
  platform @6 :Text;             # e.g. "Linux-6.8 x86_64 glibc 2.39"
  processId @7 :UInt32;
  startedAtUnixMs @8 :Int64;     # provenance only; never part of any key
  commandLine @9 :List(Text);
}

# A GPU (or other device) slangpy created, as slangpy's Device.info reports it.
struct Device {
  type @0 :Text;                 # "cuda", "vulkan", "cpu", ...
  name @1 :Text;                 # adapter name, e.g. "NVIDIA H200"
  smArch @2 :UInt32;             # compute capability * 10 (90 for sm_90); 0 if not CUDA
  driverVersion @3 :Text;
  apiVersion @4 :Text;
  limits @5 :List(NamedValue);   # Device.info.limits, by name
  processId @6 :UInt32;
}

struct NamedValue {
  name @0 :Text;
  value @1 :Text;
}

# A Slang compiler option, held by value (slang::CompilerOptionEntry).
struct CompilerOption {
  name @0 :Int32;                # slang::CompilerOptionName
  kind @1 :Int32;                # slang::CompilerOptionValueKind
  int0 @2 :Int32;
  int1 @3 :Int32;
  string0 @4 :Text;
  string1 @5 :Text;
}

# One slang::SessionDesc, every field, exactly as sgl passed it.
struct Session {
  digest @0 :Data;               # content key: all fields but search locations
  targets @1 :List(Target);
  flags @2 :UInt32;
  defaultMatrixLayoutMode @3 :Int32;
  searchPaths @4 :List(Text);
  macros @5 :List(Macro);
  hasCustomFileSystem @6 :Bool;
  enableEffectAnnotations @7 :Bool;
  allowGlslSyntax @8 :Bool;
  skipSpirvValidation @9 :Bool;
  options @10 :List(CompilerOption);   # in order: Include entries, defines, warnings, ...
  locationDigest @11 :Data;      # `digest` plus the search locations: identifies the
                                 # session to replay, where `digest` identifies its output
  slangpyDirectory @12 :Text;    # where slangpy was installed; named "<slangpy>" in keys
  workingDirectory @13 :Text;    # the process's, as NVRTC saw it: relative paths and debug
                                 # info name it (replay only; part of locationDigest if set)

  struct Target {
    format @0 :Int32;            # SlangCompileTarget (SLANG_PTX for CUDA)
    profile @1 :Int32;
    flags @2 :UInt32;
    floatingPointMode @3 :Int32;
    lineDirectiveMode @4 :Int32;
    forceGlslScalarBufferLayout @5 :Bool;
    options @6 :List(CompilerOption);
  }

  struct Macro {
    name @0 :Text;
    value @1 :Text;
  }
}

# The bytes of one file Slang read. Content-addressed: written once per digest.
struct SourceFile {
  digest @0 :Data;               # SHA-256 of bytes
  bytes @1 :Data;
}

# A node of a program's component tree (interpose/component.h).
struct Component {
  digest @0 :Data;               # content identity; recomputed and checked on read
  kind @1 :Kind;
  name @2 :Text;                 # module / function / new name / conforming type
  path @3 :Text;                 # module: where Slang found it (replay only)
  requestedName @4 :Text;        # module: the name passed to ISession::loadModule
  hasSource @5 :Bool;            # module: loaded from a string
  source @6 :Text;               # module: the string, exactly as Slang received it
  dependencies @7 :List(Dependency);
  stage @8 :Int32 = -1;          # entry point: -1 = found by name, else SlangStage
  interfaceName @9 :Text;        # type conformance
  conformanceId @10 :Int64 = -1;
  linkOptions @11 :List(CompilerOption);
  children @12 :List(Data);      # digests of child components, in order
  specializationArgs @13 :List(Text);  # specialized: "type <full name>" or "expr <text>"

  enum Kind {
    module @0;
    entryPoint @1;
    typeConformance @2;
    composite @3;
    linked @4;
    renamed @5;
    specialized @6;
    opaque @7;
  }

  struct Dependency {
    path @0 :Text;               # as Slang reported it
    digest @1 :Data;             # SourceFile digest, or a string module's digest
  }
}

# Target code Slang produced for one entry point of a linked program.
struct Kernel {
  key @0 :Data;                  # kernel key (interpose/component.h KernelKey)
  sessionDigest @1 :Data;
  programDigest @2 :Data;        # the linked program's Component digest
  entryPointIndex @3 :Int64;
  targetIndex @4 :Int64;
  code @5 :Data;                 # PTX as Slang returned it (NUL-terminated)
  compileSeconds @6 :Float64;    # observed getEntryPointCode time
  moduleNames @7 :List(Text);    # names of the program's modules, to join call sites
  entryPointName @8 :Text;
  toolchain @9 :Text;            # the toolchain part of `key` (Slang + slangpy)
  sessionLocationDigest @10 :Data;  # the Session to replay (Session.locationDigest)
}

# A slangpy call site, as slangpy's Python layer described it.
struct CallSite {
  slangpyHash @0 :Text;          # slangpy's hash = the wrapper module's name
  kind @1 :Kind;
  module @2 :Text;               # the user's slangpy Module name
  function @3 :Text;             # function name, with generic arguments if any
  callMode @4 :Text;             # "prim", "bwds", "fwds"
  arguments @5 :List(Argument);
  typeConformances @6 :List(Text);
  linkedModules @7 :List(Text);  # composition order, first to last
  entryPoints @8 :List(Text);
  deferTargetCompilation @9 :Bool;
  useEntrypointArgs @10 :Bool;
  deviceType @11 :Text;
  wrapperSourceDigest @12 :Data; # SHA-256 of the generated code slangpy hashed
  buildSeconds @13 :Float64;     # whole CallData build, Python included
  threadName @14 :Text;
  callDataMode @15 :Text;        # slangpy's CallDataMode

  enum Kind {
    call @0;
    backwardCall @1;
    rawDispatch @2;
    rayTracing @3;
  }

  struct Argument {
    name @0 :Text;
    pythonType @1 :Text;
    slangType @2 :Text;
    vectorType @3 :Text;
    dimensionality @4 :Int32 = -1;
    access @5 :Text;
    differentiable @6 :Bool;
    children @7 :List(Argument);
    paramIndex @8 :Int32 = -1;
  }
}
