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

# What one part of a configuration, the programs one session serialized,
# proved of its modules (compiler/module_parts.h, PartEvidence): the modules
# its session loaded, and what each program's rebuild over IR said of those
# it used. A compile decides the part's verdict from it again, under the
# configuration's kernel modules of the day.
struct ModulePartEvidence {
  modules @0 :List(PartModule);
  programs @1 :List(PartProgramEvidence);
}

struct PartModule {
  metadata @0 :Archive.ModuleEntry;
  # As archived, but for its IR (the cache holds that under the module's key,
  # spreplay.verified-ir) and its verification, which the decision sets.

  node @1 :ModuleNode;
  refusal @2 :Text;
  # Its own reason not to be archived, or empty.

  imports @3 :List(UInt32);
  # Indices into ModulePartEvidence.modules.
}

struct PartProgramEvidence {
  kernel @0 :Bool;
  failure @1 :Text;
  # Why it does not stand for its modules, or empty.

  modules @2 :List(UInt32);
  # Those it used: indices into ModulePartEvidence.modules.
}

# A module by its Component digest and name (ModuleNodeKey).
struct ModuleNode {
  digest @0 :Data;
  name @1 :Text;
}

# The parts a configuration's programs were last verified in, each its
# programs in order: a compile that finds one of them whole again verifies it
# no more, and decides it from its ModulePartEvidence.
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
