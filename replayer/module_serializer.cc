#include "replayer/module_serializer.h"

#include "fmt/format.h"
#include "interpose/blobs.h"
#include "replayer/com_ptr.h"

namespace spreplay {
namespace {

std::string ModuleName(slang::IModule* module) {
  const char* name = module->getName();
  return name ? name : "";
}

// IModule::serialize writes no source locations. Slang 2026.12 writes them
// only into the module container of a compile request in a session with
// debug information (EndToEndCompileRequest::writeContainerToStream), so the
// module is compiled once more, in the same session, as the one translation
// unit of such a request. Its imports resolve to the modules the session
// holds; the container holds this module alone, which loadModuleFromIRBlob
// reads with its source locations. Compile proves the result kernel by kernel.
absl::StatusOr<std::string> SerializeWithSourceLocations(slang::ISession* session,
                                                         slang::IModule* module,
                                                         const Component& description) {
  const std::string name = ModuleName(module);
  const char* path = module->getFilePath();
  if (!description.source && !path) {
    return absl::FailedPreconditionError(
        fmt::format("module '{}' has neither a file nor a text to compile it from", name));
  }
  ComPtr<slang::ICompileRequest> request;
  if (SLANG_FAILED(session->createCompileRequest(request.WriteRef())) || !request) {
    return absl::InternalError("Slang could not create a compile request");
  }
  // An empty command line is what makes the request emit IR (m_emitIr): no
  // API call sets it.
  const char* no_arguments[] = {""};
  if (SLANG_FAILED(request->processCommandLineArguments(no_arguments, 0))) {
    return absl::InternalError(
        fmt::format("Slang could not set up a compile request for module '{}'", name));
  }
  request->setCompileFlags(SLANG_COMPILE_FLAG_NO_CODEGEN);
  request->setOutputContainerFormat(SLANG_CONTAINER_FORMAT_SLANG_MODULE);
  const int unit = request->addTranslationUnit(SLANG_SOURCE_LANGUAGE_SLANG, name.c_str());
  if (description.source) {
    request->addTranslationUnitSourceString(unit, description.path.c_str(),
                                            description.source->c_str());
  } else {
    request->addTranslationUnitSourceFile(unit, path);
  }
  ComPtr<ISlangBlob> container;
  if (SLANG_FAILED(request->compile()) ||
      SLANG_FAILED(request->getContainerCode(container.WriteRef())) || !container) {
    const char* diagnostics = request->getDiagnosticOutput();
    return absl::InternalError(
        fmt::format("Slang could not serialize module '{}' with its source locations: {}", name,
                    diagnostics ? diagnostics : ""));
  }
  return BlobToString(container.get());
}

}  // namespace

absl::StatusOr<std::string> SerializeModule(slang::ISession* session, slang::IModule* module,
                                            const Component& description,
                                            bool with_source_locations) {
  if (with_source_locations) return SerializeWithSourceLocations(session, module, description);
  ComPtr<ISlangBlob> ir;
  if (SLANG_FAILED(module->serialize(ir.WriteRef())) || !ir) {
    return absl::InternalError(
        fmt::format("Slang could not serialize module '{}'", ModuleName(module)));
  }
  return BlobToString(ir.get());
}

}  // namespace spreplay
