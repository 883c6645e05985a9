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
