# What `spreplay compile` keeps in its cache (compiler/compile_cache.h) besides
# plain bytes. Entries are named by a digest of their inputs, so a format
# change needs a new name domain (a new version in the KeyHasher's label), not
# an evolved struct: an older entry is then never read.

@0xc3f6a1d0e87b5a24;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("spreplay::schema");

using Archive = import "/schema/archive.capnp";

# What the modules stage concluded for one session configuration: the modules
# it archived, each without its IR (the cache holds that under the module's
# key, spreplay.verified-ir), and those it refused, with why.
struct ModuleStageOutcome {
  archived @0 :List(Archive.ModuleEntry);
  refused @1 :List(Archive.UnservedModule);
}

# What the modules stage concluded for one part of a configuration, the
# programs one session serialized (compiler/module_parts.h, PartitionOutcome):
# as ModuleStageOutcome, with each refused module's key, by which the parts'
# verdicts are combined.
struct ModulePartOutcome {
  archived @0 :List(Archive.ModuleEntry);
  refused @1 :List(RefusedModule);
  leftToKernels @2 :List(ModuleNode);
  # The modules its modules that no kernel used use, which the outcome left
  # to the configuration's kernels (ModulesLeftToKernels): it holds only
  # while each is still a recorded kernel's.
}

struct RefusedModule {
  key @0 :Data;
  module @1 :Archive.UnservedModule;
}

# A module by its Component digest and name (ModuleNodeKey).
struct ModuleNode {
  digest @0 :Data;
  name @1 :Text;
}

# The parts a configuration's programs were last verified in, each its
# programs in order: a compile that finds one of them whole again verifies it
# no more, and takes its ModulePartOutcome.
struct ModuleStageParts {
  parts @0 :List(List(PartProgram));
}

struct PartProgram {
  identity @0 :Data;
  # ModuleProgramIdentity.

  unusedModule @1 :ModuleNode;
  # For a module no kernel was built with: the module. Once a kernel is built
  # with it, the kernel's part decides it, and the part is whole without it.
}
