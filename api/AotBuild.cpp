// AotBuild.cpp -- `netc build` and `--emit=llvm` through the LLVM plugin
// (AotBuild.h, include/netc/Training.h's buildLibrary). The weights come from
// Model::load, so a library is refused for exactly the checkpoints `netc
// predict` refuses. The files are made in a staging folder and moved into
// the output as one set only once all of them exist (LibraryFolder.h): a
// failure leaves nothing, and a folder netc did not make is not touched
// without --overwrite.
#include "api/AotBuild.h"
#include "api/LibraryFolder.h"
#include "api/ModelImpl.h"
#include "support/Plugins.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace netc {

namespace fs = std::filesystem;

namespace {

struct LlvmPlugin {
  aot::LlvmEmitIrFunction emitIr = nullptr;
  aot::LlvmCompileObjectFunction compileObject = nullptr;
  aot::LlvmArchiveFunction archive = nullptr;
};

/// libnetc-llvm.so, opened once and kept for the process.
Expected<LlvmPlugin> openLlvmPlugin() {
  static std::mutex mutex;
  static std::optional<LlvmPlugin> opened;
  std::lock_guard lock(mutex);
  if (opened)
    return *opened;
  const std::string file = findPlugin(aot::kLlvmPluginName);
  if (file.empty())
    return fail(
        fmt::format("this needs netc's LLVM code generator {}, which is in none of {}: this netc was built "
                    "without LLVM 19 (install llvm-19-dev, e.g. with scripts/setup.sh, and build again) "
                    "or its package netc-llvm is not installed",
                    aot::kLlvmPluginName, fmt::join(pluginDirectories(), ", ")));
  ::dlerror();
  void *handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = ::dlerror();
    return fail(
        fmt::format("netc's LLVM code generator {} could not be loaded: {}. It needs LLVM 19's shared "
                    "library (Debian: apt install libllvm19)",
                    file, why ? why : "unknown dlopen error"));
  }
  auto abi = reinterpret_cast<aot::LlvmPluginAbiFunction>(::dlsym(handle, aot::kLlvmAbiSymbol));
  LlvmPlugin plugin;
  plugin.emitIr = reinterpret_cast<aot::LlvmEmitIrFunction>(::dlsym(handle, aot::kLlvmEmitIrSymbol));
  plugin.compileObject =
      reinterpret_cast<aot::LlvmCompileObjectFunction>(::dlsym(handle, aot::kLlvmCompileObjectSymbol));
  plugin.archive = reinterpret_cast<aot::LlvmArchiveFunction>(::dlsym(handle, aot::kLlvmArchiveSymbol));
  if (!abi || !plugin.emitIr || !plugin.compileObject || !plugin.archive || abi() != aot::kLlvmPluginAbi) {
    ::dlclose(handle);
    return fail(
        fmt::format("{} is not the LLVM code generator of this netc (ABI {}, this netc needs {}); rebuild "
                    "and install netc and its plugin together",
                    file, abi ? std::to_string(abi()) : std::string("unknown"), aot::kLlvmPluginAbi));
  }
  opened = plugin;
  return plugin;
}

/// Runs `argv` (found on PATH), its output into `log`; the message quotes
/// the end of the log when it fails.
Status runTool(const std::vector<std::string> &argv, const fs::path &log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t child = 0;
  const int spawned = posix_spawnp(&child, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    return fail(fmt::format("cannot run {}: {}", argv[0], std::strerror(spawned)));
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR)
      return fail(fmt::format("waiting for {}: {}", argv[0], std::strerror(errno)));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return Status::success();
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > 2000)
    text = "..." + text.substr(text.size() - 2000);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  return fail(fmt::format("{} failed ({}){}{}", fmt::join(argv, " "),
                          WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                            : fmt::format("signal {}", WTERMSIG(status)),
                          text.empty() ? "" : ":\n", text));
}

/// The first of `names` found on PATH (or as an absolute path); empty when none is.
std::string findTool(std::initializer_list<const char *> names) {
  const char *pathVariable = std::getenv("PATH");
  std::string path = pathVariable ? pathVariable : "/usr/bin:/bin";
  for (const char *name : names) {
    if (name[0] == '/') {
      if (::access(name, X_OK) == 0)
        return name;
      continue;
    }
    size_t start = 0;
    while (start <= path.size()) {
      size_t end = path.find(':', start);
      if (end == std::string::npos)
        end = path.size();
      fs::path candidate = fs::path(path.substr(start, end - start)) / name;
      if (!candidate.empty() && ::access(candidate.c_str(), X_OK) == 0)
        return candidate.string();
      start = end + 1;
    }
  }
  return {};
}

Status writeFile(const fs::path &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())) && out.flush())
    return Status::success();
  return fail(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
}

/// Whether code for `triple` runs on this machine (the same architecture).
bool runsHere(const std::string &triple) {
  struct utsname name {};
  if (::uname(&name) != 0)
    return false;
  return triple.substr(0, triple.find('-')) == name.machine;
}

aot::InputNormalizer inputNormalizer(const data::Normalizer &n) {
  aot::InputNormalizer out;
  out.description = data::normalizerText(n.spec());
  switch (n.kind()) {
  case data::NormalizerKind::None: out.kind = aot::InputNormalizer::Kind::None; break;
  case data::NormalizerKind::Scale:
    out.kind = aot::InputNormalizer::Kind::Divide;
    out.divisor = n.spec().divisor;
    break;
  default:
    out.kind = aot::InputNormalizer::Kind::Affine;
    out.offset = n.offset();
    out.scale = n.scale();
  }
  return out;
}

} // namespace

aot::Request aotRequest(const ir::Network &network, const plan::Plan &plan) {
  aot::Request request;
  request.plan = &plan;
  request.network = network.name;
  request.prefix = aot::cIdentifier(network.name);
  if (request.prefix.empty())
    request.prefix = "net";
  int64_t offset = 0;
  for (int i : network.inputs) {
    const ir::Layer &layer = network.layers[static_cast<size_t>(i)];
    request.inputs.push_back({layer.name, offset, layer.nodes, layer.shape});
    offset += layer.nodes;
  }
  if (network.output >= 0) {
    request.outputName = network.layers[static_cast<size_t>(network.output)].name;
    request.outputShape = network.layers[static_cast<size_t>(network.output)].shape;
  }
  return request;
}

Expected<std::string> emitLlvmIr(const ir::Network &network, const plan::Plan &plan) {
  auto plugin = openLlvmPlugin();
  if (!plugin)
    return plugin.error();
  aot::Request request = aotRequest(network, plan);
  aot::Output output;
  if (!plugin->emitIr(&request, &output))
    return fail(output.error);
  return std::move(output.bytes);
}

LibraryResult buildLibrary(const std::string &netPath, const std::string &checkpointPath,
                           const LibrarySettings &settings) {
  LibraryResult result;
  auto refuse = [&](FailureKind kind, std::string message) {
    result.failure = kind;
    result.error = std::move(message);
    return std::move(result);
  };
  if (settings.outDir.empty())
    return refuse(FailureKind::Usage, "-o names the folder the library goes to; it is missing");
  if (!settings.name.empty() && !aot::isCIdentifier(settings.name))
    return refuse(FailureKind::Usage,
                  fmt::format("--name {}: the library's symbols start with it, so it must be a C identifier "
                              "(letters, digits and _, not starting with a digit)",
                              settings.name));
  const fs::path out(settings.outDir);
  if (Status s = checkLibraryFolder(out, settings.overwrite); !s)
    return refuse(FailureKind::Usage, s.message());
  auto plugin = openLlvmPlugin();
  if (!plugin)
    return refuse(FailureKind::Input, "netc build: " + plugin.message());

  ModelOptions options;
  options.device = "cpu";
  options.maxSourceBytes = settings.maxSourceBytes;
  options.batch = 1;
  options.threads = 1;
  ModelResult loaded = Model::load(netPath, checkpointPath, options);
  result.diagnostics = loaded.diagnostics;
  if (!loaded.model)
    return refuse(loaded.failure, loaded.error);
  const Model::Impl &model = loaded.model->impl();
  std::vector<float> parameters(static_cast<size_t>(model.plan.arenaElements));
  if (model.plan.parameterArena >= 0 && !parameters.empty())
    model.backend->read(model.plan.parameterArena, parameters);

  aot::Request request = aotRequest(model.network, model.plan);
  request.parameters = parameters;
  request.normalizer = inputNormalizer(model.normalizer);
  if (!settings.name.empty())
    request.prefix = settings.name;
  request.target = {settings.target, settings.cpu};
  result.prefix = request.prefix;

  const auto started = std::chrono::steady_clock::now();
  aot::Output object;
  if (!plugin->compileObject(&request, &object))
    return refuse(object.usage ? FailureKind::Usage : FailureKind::Input, "netc build: " + object.error);
  result.triple = object.triple;
  result.cpu = object.cpu;
  const std::string P = request.prefix;
  const std::string objectFile = P + ".o", archiveFile = "lib" + P + ".a", libraryFile = "lib" + P + ".so",
                    headerFile = P + ".h", readmeFile = "README.md";
  aot::Output archive;
  if (!plugin->archive(&objectFile, &object.bytes, &archive))
    return refuse(FailureKind::Input, "netc build: " + archive.error);

  auto staging = LibraryStaging::create(out);
  if (!staging)
    return refuse(FailureKind::Input, "netc build: " + staging.message());
  const fs::path &dir = staging->path();
  const std::string header = aot::headerText(request),
                    readme = aot::readmeText(request, libraryFile, archiveFile, objectFile, result.triple);
  using FileBytes = std::pair<std::string, const std::string *>;
  for (const auto &[file, bytes] :
       {FileBytes{objectFile, &object.bytes}, FileBytes{archiveFile, &archive.bytes},
        FileBytes{headerFile, &header}, FileBytes{readmeFile, &readme}})
    if (Status s = writeFile(dir / file, *bytes); !s)
      return refuse(FailureKind::Input, "netc build: " + s.message());

  // The shared library: the host's C compiler driver for this machine's
  // target, LLVM's own linker for another (no cross toolchain needed: the
  // library needs libc and libm only at load time).
  const bool cross = !settings.target.empty() && !runsHere(result.triple);
  std::vector<std::string> link;
  if (cross) {
    const std::string lld = findTool({"ld.lld-19", "/usr/lib/llvm-19/bin/ld.lld", "ld.lld"});
    if (lld.empty())
      return refuse(FailureKind::Input,
                    "netc build: linking for another target needs LLVM's linker ld.lld-19, "
                    "which is not installed (Debian: apt install lld-19)");
    link = {lld,
            "-shared",
            "-soname",
            libraryFile,
            "-z",
            "noexecstack",
            "--hash-style=gnu",
            "-o",
            (dir / libraryFile).string(),
            (dir / objectFile).string()};
  } else {
    const std::string cc = findTool({"cc", "gcc", "clang"});
    if (cc.empty())
      return refuse(FailureKind::Input,
                    "netc build: linking the shared library needs a C compiler driver (cc), "
                    "which is not installed (Debian: apt install gcc)");
    link = {cc,
            "-shared",
            "-o",
            (dir / libraryFile).string(),
            (dir / objectFile).string(),
            "-lm",
            "-Wl,-soname," + libraryFile,
            "-Wl,-z,noexecstack"};
  }
  if (Status s = runTool(link, dir / "link.log"); !s)
    return refuse(FailureKind::Input, "netc build: linking " + libraryFile + ": " + s.message());
  std::error_code ec;
  fs::remove(dir / "link.log", ec);
  result.compileSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  // Every file exists: move them into place, as one set.
  const std::vector<std::string> files = {headerFile, libraryFile, archiveFile, objectFile, readmeFile};
  if (Status s = staging->install(out, files, settings.overwrite); !s)
    return refuse(FailureKind::Input, "netc build: " + s.message());
  for (const std::string &file : files)
    result.files.push_back((out / file).string());
  return result;
}

} // namespace netc
