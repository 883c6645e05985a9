# What a worker process that serialized a session configuration's modules
# sends its parent, and the parent sends the workers that rebuild programs
# over them (replayer/ir_modules.h, SerializedSession). It lives only for the
# length of one compile, between processes of the same spreplay build, so it
# is never evolved.

@0xd2a4e7c19b3f5a61;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("spreplay::schema");

using Trace = import "/schema/trace.capnp";

struct SerializedSession {
  modules @0 :List(SerializedModule);   # in the order Slang loaded them
  uses @1 :List(ProgramUses);           # per program
  layouts @2 :List(Data);               # per program: JSON
  entryPointCodes @3 :List(List(Data)); # per program
}

struct SerializedModule {
  description @0 :Trace.Component;      # unset: the hooks could not describe it
  ir @1 :Data;
  imports @2 :List(UInt32);
  sourceOnly @3 :Text;
}

struct ProgramUses {
  union {
    modules @0 :List(UInt32);
    error @1 :Error;
  }
}

struct Error {
  code @0 :UInt8;                       # absl::StatusCode
  message @1 :Text;
}
